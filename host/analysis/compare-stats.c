// SPDX-License-Identifier: GPL-2.0
/*
 * compare-stats.c - the statistics of sbrig compare (compare-stats.h).
 *
 * The model, after the performance CIs this follows (Chromium's Pinpoint,
 * Mozilla's Perfherder): a metric's runs on the base build and on the new
 * build are two samples of noisy figures whose distribution is unknown
 * (bimodal wakeups, outliers), so
 *
 * - the change is the difference of the medians, and its uncertainty a
 *   percentile bootstrap of that difference (each side resampled with
 *   replacement, a fixed seed so that the same runs give the same
 *   interval);
 * - "different" is the rank test Pinpoint uses, Mann-Whitney U, two-sided,
 *   exact for small samples without ties;
 * - a significant difference counts only if it is at least the metric's
 *   threshold (Perfherder's minimum relative change, or an absolute one);
 * - what is neither a significant change nor a change confidently below
 *   the threshold is "inconclusive", with an estimate of the runs a side
 *   that would settle it (Pinpoint's "unknown: run more").
 *
 * The rule itself is cs_decide(), written out in compare-format.md.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare-stats.h"

/* exact U distribution up to this many pairs */
#define EXACT_MAX_PAIRS 2500
/* a runs-needed estimate is capped here */
#define RUNS_CAP 10000u

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

double cs_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * P(U <= u) under H0 for samples of @m and @n without ties: the number of
 * arrangements with U = k is the coefficient of q^k in the Gaussian
 * binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i),
 * built one factor at a time (a multiplication, then a division by
 * (1 - q^i), which is a running sum with stride i).
 */
static double exact_cdf(size_t m, size_t n, double u, double *upper)
{
	size_t top = m * n, k;
	double *c = calloc(top + 1, sizeof(*c)), total = 0, lo = 0, hi = 0;

	*upper = NAN;
	if (!c)
		return NAN;
	c[0] = 1;
	for (size_t i = 1; i <= m; i++) {
		size_t s = n + i;

		for (k = top; k >= s; k--)		/* x (1 - q^s) */
			c[k] -= c[k - s];
		for (k = i; k <= top; k++)		/* / (1 - q^i) */
			c[k] += c[k - i];
	}
	for (k = 0; k <= top; k++) {
		total += c[k];
		if ((double)k <= u + 1e-9)
			lo += c[k];
		if ((double)k >= u - 1e-9)
			hi += c[k];
	}
	free(c);
	*upper = hi / total;
	return lo / total;
}

double cs_mann_whitney(const double *a, size_t na, const double *b,
		       size_t nb, double *u_out)
{
	size_t n = na + nb, i, j;
	double *all, u = 0, ties = 0, mu, var, z, p;
	bool tied = false;

	*u_out = 0;
	if (!na || !nb)
		return 1;
	for (i = 0; i < na; i++)
		for (j = 0; j < nb; j++)
			u += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
	*u_out = u;
	all = malloc(n * sizeof(*all));
	if (!all)
		return NAN;
	memcpy(all, a, na * sizeof(*a));
	memcpy(all + na, b, nb * sizeof(*b));
	qsort(all, n, sizeof(*all), cmp_double);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && all[j] == all[i]; j++)
			;
		if (j - i > 1) {
			double t = (double)(j - i);

			tied = true;
			ties += t * t * t - t;
		}
	}
	free(all);
	if (!tied && na * nb <= EXACT_MAX_PAIRS) {
		double upper, lower = exact_cdf(na, nb, u, &upper);

		p = 2 * fmin(lower, upper);
		return isnan(p) ? NAN : fmin(p, 1);
	}
	mu = (double)na * (double)nb / 2;
	var = (double)na * (double)nb / 12 *
	      ((double)(n + 1) - ties / ((double)n * (double)(n - 1)));
	if (var <= 0)
		return 1;	/* every value equal */
	z = (fabs(u - mu) - 0.5) / sqrt(var);
	if (z < 0)
		z = 0;
	p = erfc(z / M_SQRT2);
	return fmin(p, 1);
}

uint64_t cs_rand64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* a uniform index below @n (n small: the modulo bias is below 2^-50) */
static size_t rand_below(uint64_t *state, size_t n)
{
	return (size_t)(cs_rand64(state) % n);
}

/* the @q quantile of @n sorted values, linear between order statistics */
static double quantile_sorted(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;

	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

int cs_bootstrap_ci(const double *a, size_t na, const double *b, size_t nb,
		    unsigned int resamples, double level, uint64_t seed,
		    double *lo, double *hi)
{
	double *d = malloc(resamples * sizeof(*d));
	double *ra = malloc(na * sizeof(*ra)), *rb = malloc(nb * sizeof(*rb));
	uint64_t st = seed;
	int ret = 0;

	if (!d || !ra || !rb || !resamples) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned int r = 0; r < resamples; r++) {
		for (size_t i = 0; i < na; i++)
			ra[i] = a[rand_below(&st, na)];
		for (size_t i = 0; i < nb; i++)
			rb[i] = b[rand_below(&st, nb)];
		d[r] = cs_median(rb, nb) - cs_median(ra, na);
	}
	qsort(d, resamples, sizeof(*d), cmp_double);
	*lo = quantile_sorted(d, resamples, (1 - level) / 2);
	*hi = quantile_sorted(d, resamples, 1 - (1 - level) / 2);
out:
	free(d);
	free(ra);
	free(rb);
	return ret;
}

double cs_norm_quantile(double p)
{
	static const double a[] = { -3.969683028665376e+01,
		2.209460984245205e+02, -2.759285104469687e+02,
		1.383577518672690e+02, -3.066479806614716e+01,
		2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01,
		1.615858368580409e+02, -1.556989798598866e+02,
		6.680131188771972e+01, -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03,
		-3.223964580411365e-01, -2.400758277161838e+00,
		-2.549732539343734e+00, 4.374664141464968e+00,
		2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03,
		3.224671290700398e-01, 2.445134137142996e+00,
		3.754408661907416e+00 };
	double q, r;

	if (p <= 0 || p >= 1)
		return NAN;
	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q +
			 c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - 0.02425)
		return -cs_norm_quantile(1 - p);
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r +
		a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/* a robust spread of the two samples together: the pooled MAD x 1.4826
 * (the standard deviation for normal data), or their pooled standard
 * deviation when the MAD is 0 (discrete counts) */
static double pooled_sigma(const double *a, size_t na, double ma,
			   const double *b, size_t nb, double mb)
{
	size_t n = na + nb;
	double *dev = malloc(n * sizeof(*dev)), mad, ss = 0;

	if (!dev)
		return NAN;
	for (size_t i = 0; i < na; i++)
		dev[i] = fabs(a[i] - ma);
	for (size_t i = 0; i < nb; i++)
		dev[na + i] = fabs(b[i] - mb);
	for (size_t i = 0; i < n; i++)
		ss += dev[i] * dev[i];
	mad = cs_median(dev, n);
	free(dev);
	if (mad > 0)
		return 1.4826 * mad;
	return n > 2 ? sqrt(ss / (double)(n - 2)) : 0;
}

/*
 * Runs a side for a two-sided test at @alpha to detect a change of
 * @effect with power @power, when the runs spread by @sigma: the normal
 * formula 2 ((z(1 - alpha/2) + z(power)) sigma / effect)^2, divided by
 * the Mann-Whitney test's asymptotic relative efficiency 3/pi.
 */
static unsigned int runs_for(double sigma, double effect, double alpha,
			     double power, unsigned int min_runs)
{
	double z = cs_norm_quantile(1 - alpha / 2) + cs_norm_quantile(power);
	double n;

	if (!(effect > 0) || !(sigma > 0))
		return min_runs;
	n = 2 * (z * sigma / effect) * (z * sigma / effect) * M_PI / 3;
	if (!(n < RUNS_CAP))
		return RUNS_CAP;
	return (unsigned int)ceil(n) > min_runs ? (unsigned int)ceil(n) :
						  min_runs;
}

int cs_decide(double *base, size_t nb, double *next, size_t nn, int worse,
	      const struct sbrig_compare_threshold *thr,
	      const struct sbrig_compare_config *cfg, uint64_t seed,
	      struct cs_outcome *o)
{
	size_t fewer = nb < nn ? nb : nn;
	double alpha = thr->alpha > 0 ? thr->alpha : cfg->alpha;
	double sigma, effect, mag;
	bool matters;

	*o = (struct cs_outcome){ .ci_lo = NAN, .ci_hi = NAN, .p_value = NAN,
				  .change_rel = NAN, .alpha = alpha };
	o->median_base = cs_median(base, nb);
	o->median_new = cs_median(next, nn);
	o->change = o->median_new - o->median_base;
	if (o->median_base != 0)
		o->change_rel = o->change / fabs(o->median_base);
	o->threshold = fmax(thr->min_change * fabs(o->median_base),
			    thr->min_abs);
	if (nb >= 1 && nn >= 1) {
		o->p_value = cs_mann_whitney(next, nn, base, nb, &o->u);
		if (isnan(o->p_value))
			return -ENOMEM;
	}
	if (nb >= 2 && nn >= 2 &&
	    cs_bootstrap_ci(base, nb, next, nn, cfg->resamples,
			    cfg->confidence, seed, &o->ci_lo, &o->ci_hi))
		return -ENOMEM;

	mag = fabs(o->change);
	/* a threshold of 0 (both limits 0): any change matters */
	matters = o->threshold > 0 ? mag >= o->threshold : mag > 0;
	if (fewer < cfg->min_runs) {
		o->verdict = SBRIG_INCONCLUSIVE;
		o->reason = "too few runs";
	} else if (o->p_value <= alpha && matters) {
		o->verdict = (o->change > 0) == (worse > 0) ? SBRIG_REGRESSED :
							      SBRIG_IMPROVED;
		o->reason = "significant, and at least the threshold";
	} else if (o->p_value <= alpha) {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "significant, but below the threshold";
	} else if (o->ci_lo > -o->threshold && o->ci_hi < o->threshold) {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "not significant, and the interval is within "
			    "the threshold";
	} else if (o->threshold == 0 && o->ci_lo == 0 && o->ci_hi == 0) {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "not significant, and no resample changes";
	} else {
		o->verdict = SBRIG_INCONCLUSIVE;
		o->reason = "not significant, but the interval reaches the "
			    "threshold";
	}
	if (o->verdict != SBRIG_INCONCLUSIVE)
		return 0;
	sigma = pooled_sigma(base, nb, o->median_base, next, nn,
			     o->median_new);
	effect = fmax(mag, o->threshold);
	o->runs_needed = runs_for(sigma, effect, alpha, cfg->power,
				  cfg->min_runs);
	if (o->runs_needed <= fewer)	/* the estimate says enough: one more */
		o->runs_needed = (unsigned int)fewer + 1;
	o->more_runs = o->runs_needed - (unsigned int)fewer;
	return 0;
}
