// SPDX-License-Identifier: GPL-2.0
/*
 * compare-stats.c - the statistics of sbrig compare (compare-stats.h).
 *
 * The model, after the performance CIs this follows (Chromium's Pinpoint,
 * Mozilla's Perfherder): a metric's runs on the base build and on the new
 * build are two samples of noisy figures whose distribution is unknown
 * (bimodal wakeups, outliers), so
 *
 * - "different" is the rank test Pinpoint uses, Mann-Whitney U,
 *   two-sided, exact for small samples without ties;
 * - the change is the estimate that goes with that test, the
 *   Hodges-Lehmann shift (the median of the pairwise differences), and
 *   its uncertainty Moses' interval, read off the same exact U
 *   distribution (no resampling: the same runs, the same interval);
 * - counts (whole numbers, ties everywhere) are judged on their totals by
 *   the exact conditional Poisson test, and a blocker's leaks by Fisher's
 *   exact test on the number of runs that leak;
 * - the p-values of one comparison are adjusted together
 *   (Benjamini-Hochberg: compare-decide.c), and a change counts only if it is
 *   both significant and beyond the metric's minimum (Perfherder's minimum
 *   relative change, or an absolute one);
 * - what is neither is "inconclusive", with an estimate of the runs a
 *   side that would settle it (Pinpoint's "unknown: run more").
 *
 * The rule itself is cs_judge(), written out in compare-format.md.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
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
 * The null distribution of U for samples of @m and @n without ties, as
 * probabilities P(U = k), k = 0 .. m x n (freed by the caller; NULL when
 * out of memory): the number of arrangements with U = k is the
 * coefficient of q^k in the Gaussian binomial [m+n choose m]_q =
 * prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one factor at a time (a
 * multiplication, then a division by (1 - q^i), which is a running sum
 * with stride i).
 */
static double *u_distribution(size_t m, size_t n)
{
	size_t top = m * n, k;
	double *c = calloc(top + 1, sizeof(*c)), total = 0;

	if (!c)
		return NULL;
	c[0] = 1;
	for (size_t i = 1; i <= m; i++) {
		size_t s = n + i;

		for (k = top; k >= s; k--)		/* x (1 - q^s) */
			c[k] -= c[k - s];
		for (k = i; k <= top; k++)		/* / (1 - q^i) */
			c[k] += c[k - i];
	}
	for (k = 0; k <= top; k++)
		total += c[k];
	for (k = 0; k <= top; k++)
		c[k] /= total;
	return c;
}

/* P(U <= u) under H0 without ties, and P(U >= u) into *@upper */
static double exact_cdf(size_t m, size_t n, double u, double *upper)
{
	double *c = u_distribution(m, n), lo = 0, hi = 0;

	*upper = NAN;
	if (!c)
		return NAN;
	for (size_t k = 0; k <= m * n; k++) {
		if ((double)k <= u + 1e-9)
			lo += c[k];
		if ((double)k >= u - 1e-9)
			hi += c[k];
	}
	free(c);
	*upper = hi;
	return lo;
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

size_t cs_moses_k(size_t m, size_t n, double level)
{
	double tail = (1 - level) / 2, cum = 0, *c;
	size_t k = 0;

	if (!m || !n || !(level > 0 && level < 1))
		return 0;
	if (m * n > EXACT_MAX_PAIRS) {
		double mn = (double)m * (double)n;
		double sd = sqrt(mn * (double)(m + n + 1) / 12);
		double x = floor(mn / 2 - cs_norm_quantile(1 - tail) * sd);

		return x > 0 ? (size_t)x : 0;
	}
	c = u_distribution(m, n);
	if (!c)
		return SIZE_MAX;
	/* the largest k with P(U <= k - 1) <= tail */
	while (k <= m * n && cum + c[k] <= tail * (1 + 1e-12)) {
		cum += c[k];
		k++;
	}
	free(c);
	return k;
}

int cs_hodges_lehmann(const double *a, size_t na, const double *b, size_t nb,
		      double level, double *est, double *lo, double *hi)
{
	size_t mn = na * nb, k = 0;
	double *d;

	*est = *lo = *hi = NAN;
	if (!mn)
		return 0;
	d = malloc(mn * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			d[k++] = b[j] - a[i];
	*est = cs_median(d, mn);	/* sorts d */
	k = cs_moses_k(na, nb, level);
	if (k == SIZE_MAX) {
		free(d);
		return -ENOMEM;
	}
	if (k >= 1 && k <= mn + 1 - k) {
		*lo = d[k - 1];		/* D(k), 1-based */
		*hi = d[mn - k];	/* D(mn + 1 - k) */
	}
	free(d);
	return 0;
}

/* log C(n, k) */
static double log_choose(size_t n, size_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) -
	       lgamma((double)(n - k) + 1);
}

double cs_fisher_greater(size_t kb, size_t nb, size_t kn, size_t nn)
{
	size_t total = kb + kn, hi = total < nn ? total : nn, lo;
	double p = 0, denom;

	if (!nb || !nn || kb > nb || kn > nn)
		return NAN;
	denom = log_choose(nb + nn, total);
	lo = total > nb ? total - nb : 0;
	for (size_t x = kn > lo ? kn : lo; x <= hi; x++)
		p += exp(log_choose(nn, x) + log_choose(nb, total - x) - denom);
	return fmin(p, 1);
}

double cs_min_p(size_t m, size_t n)
{
	if (!m || !n)
		return 1;
	return fmin(1, 2 * exp(-log_choose(m + n, m)));
}

unsigned int cs_smallest_runs(double alpha)
{
	unsigned int n = 1;

	while (n < RUNS_CAP && cs_min_p(n, n) > alpha)
		n++;
	return n;
}

int cs_bh_adjust(const double *p, size_t n, double *adj)
{
	size_t *ix;
	double run = 1;

	if (!n)
		return 0;
	ix = malloc(n * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	/* by p, ascending: an insertion sort (a few dozen metrics) */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && p[ix[j - 1]] > p[ix[j]]; j--) {
			size_t t = ix[j];

			ix[j] = ix[j - 1];
			ix[j - 1] = t;
		}
	/* adj(i) = min over j >= i of p(j) x n / j (1-based ranks) */
	for (size_t r = n; r > 0; r--) {
		double v = p[ix[r - 1]] * (double)n / (double)r;

		run = fmin(run, v);
		adj[ix[r - 1]] = run;
	}
	free(ix);
	return 0;
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

double cs_binom_cdf(size_t k, size_t t, double q)
{
	double p = 0;

	if (q <= 0)
		return 1;
	if (q >= 1)
		return k >= t ? 1 : 0;
	for (size_t x = 0; x <= k && x <= t; x++)
		p += exp(log_choose(t, x) + (double)x * log(q) +
			 (double)(t - x) * log1p(-q));
	return fmin(p, 1);
}

double cs_poisson_test(double sb, size_t nb, double sn, size_t nn)
{
	size_t t = (size_t)(sb + sn), k = (size_t)sn;
	double q = (double)nn / (double)(nb + nn), lo, hi;

	if (!t)
		return 1;
	lo = cs_binom_cdf(k, t, q);
	hi = k ? 1 - cs_binom_cdf(k - 1, t, q) : 1;
	return fmin(1, 2 * fmin(lo, hi));
}

int cs_measure_counts(double *base, size_t nb, double *next, size_t nn,
		      const struct sbrig_compare_threshold *thr,
		      const struct sbrig_compare_config *cfg,
		      struct cs_outcome *o)
{
	double sb = 0, sn = 0, mb, mn, z, se;

	*o = (struct cs_outcome){ .ci_lo = NAN, .ci_hi = NAN, .p_value = NAN,
				  .p_adjusted = NAN, .change_rel = NAN,
				  .alpha = thr->alpha > 0 ? thr->alpha :
							    cfg->alpha };
	o->nb = nb;
	o->nn = nn;
	for (size_t i = 0; i < nb; i++)
		sb += fmax(0, round(base[i]));
	for (size_t i = 0; i < nn; i++)
		sn += fmax(0, round(next[i]));
	if (!nb || !nn)
		return 0;
	o->median_base = cs_median(base, nb);
	o->median_new = cs_median(next, nn);
	mb = sb / (double)nb;
	mn = sn / (double)nn;
	o->change = mn - mb;
	if (mb != 0)
		o->change_rel = o->change / mb;
	o->threshold = fmax(thr->min_change * mb, thr->min_abs);
	o->p_value = cs_poisson_test(sb, nb, sn, nn);
	o->p_adjusted = o->p_value;
	z = cs_norm_quantile(1 - (1 - cfg->confidence) / 2);
	se = sqrt(sn / ((double)nn * (double)nn) + sb / ((double)nb * (double)nb));
	o->ci_lo = o->change - z * se;
	o->ci_hi = o->change + z * se;
	/* the spread of one run's count, for the runs estimate: Poisson */
	o->sigma = sqrt(fmax(mb, mn) > 0 ? fmax(mb, mn) : 1);
	return 0;
}

int cs_measure(double *base, size_t nb, double *next, size_t nn,
	       const struct sbrig_compare_threshold *thr,
	       const struct sbrig_compare_config *cfg, struct cs_outcome *o)
{
	*o = (struct cs_outcome){ .ci_lo = NAN, .ci_hi = NAN, .p_value = NAN,
				  .p_adjusted = NAN, .change_rel = NAN,
				  .alpha = thr->alpha > 0 ? thr->alpha :
							    cfg->alpha };
	o->nb = nb;
	o->nn = nn;
	o->median_base = cs_median(base, nb);
	o->median_new = cs_median(next, nn);
	o->threshold = fmax(thr->min_change * fabs(o->median_base),
			    thr->min_abs);
	if (cs_hodges_lehmann(base, nb, next, nn, cfg->confidence, &o->change,
			      &o->ci_lo, &o->ci_hi))
		return -ENOMEM;
	if (o->median_base != 0)
		o->change_rel = o->change / fabs(o->median_base);
	if (nb >= 1 && nn >= 1) {
		o->p_value = cs_mann_whitney(next, nn, base, nb, &o->u);
		if (isnan(o->p_value))
			return -ENOMEM;
	}
	o->p_adjusted = o->p_value;
	o->sigma = pooled_sigma(base, nb, o->median_base, next, nn,
				o->median_new);
	return 0;
}

void cs_judge(struct cs_outcome *o, int worse,
	      const struct sbrig_compare_config *cfg)
{
	size_t fewer = o->nb < o->nn ? o->nb : o->nn;
	double mag = fabs(o->change), effect, level;
	bool matters, sig, within;

	/* a threshold of 0 (both limits 0): any change matters */
	matters = o->threshold > 0 ? mag >= o->threshold : mag > 0;
	sig = o->p_adjusted <= o->alpha;
	within = o->threshold > 0 ?
		 o->ci_lo > -o->threshold && o->ci_hi < o->threshold :
		 o->ci_lo == 0 && o->ci_hi == 0;
	o->runs_needed = o->more_runs = 0;
	if (fewer < cfg->min_runs) {
		o->verdict = SBRIG_INCONCLUSIVE;
		o->reason = "too few runs";
		effect = fmax(mag, o->threshold);
		level = o->alpha / (double)(o->family ? o->family : 1);
	} else if (sig && matters) {
		o->verdict = (o->change > 0) == (worse > 0) ? SBRIG_REGRESSED :
							      SBRIG_IMPROVED;
		o->reason = "significant, and the change is beyond the minimum";
		return;
	} else if (!sig && !matters) {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "not significant, and the change is within the "
			    "minimum";
		return;
	} else if (sig && within) {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "significant, but the change and its interval are "
			    "within the minimum";
		return;
	} else if (sig) {
		o->verdict = SBRIG_INCONCLUSIVE;
		o->reason = "significant, the change within the minimum, but "
			    "its interval reaches past it";
		/* runs that would bring the interval's half-width within
		 * what separates the change from the minimum */
		effect = o->threshold - mag;
		level = 1 - cfg->confidence;
		o->runs_needed = runs_for(o->sigma, effect, level, 0.5,
					  cfg->min_runs);
		goto more;
	} else {
		o->verdict = SBRIG_INCONCLUSIVE;
		o->reason = "not significant, but the change is beyond the "
			    "minimum";
		effect = mag;
		/* one change among the family: the correction's worst case */
		level = o->alpha / (double)(o->family ? o->family : 1);
	}
	o->runs_needed = runs_for(o->sigma, effect, level, cfg->power,
				  cfg->min_runs);
more:
	if (o->runs_needed <= fewer)	/* the estimate says enough: one more */
		o->runs_needed = (unsigned int)fewer + 1;
	o->more_runs = o->runs_needed - (unsigned int)fewer;
}

void cs_judge_leak(struct cs_outcome *o, size_t kb, size_t nb, size_t kn,
		   size_t nn, const struct sbrig_compare_threshold *thr,
		   const struct sbrig_compare_config *cfg)
{
	double rb = (double)kb / (double)nb, rn = (double)kn / (double)nn;
	double z, var, e;
	size_t fewer = nb < nn ? nb : nn;
	bool matters;

	o->nb = nb;
	o->nn = nn;
	o->change = rn - rb;
	o->change_rel = rb > 0 ? o->change / rb : NAN;
	o->threshold = thr->min_abs;
	matters = fabs(o->change) >= o->threshold && o->change != 0;
	o->runs_needed = o->more_runs = 0;
	if (o->p_adjusted <= o->alpha && matters) {
		o->verdict = o->change > 0 ? SBRIG_REGRESSED : SBRIG_IMPROVED;
		o->reason = o->change > 0 ?
			    "it leaks in significantly more new runs" :
			    "it leaks in significantly fewer new runs";
		return;
	}
	if (!matters) {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "the share of runs that leak changed by less than "
			    "the minimum";
		return;
	}
	o->verdict = SBRIG_INCONCLUSIVE;
	o->reason = "not significant, but the share of runs that leak "
		    "changed by more than the minimum";
	/* the two-proportion normal formula */
	e = fabs(o->change);
	z = cs_norm_quantile(1 - o->alpha) + cs_norm_quantile(cfg->power);
	var = rb * (1 - rb) + rn * (1 - rn);
	if (var <= 0)
		var = 2 * 0.5 * 0.5;
	o->runs_needed = (unsigned int)fmin(RUNS_CAP, ceil(z * z * var / (e * e)));
	if (o->runs_needed < cfg->min_runs)
		o->runs_needed = cfg->min_runs;
	if (o->runs_needed <= fewer)
		o->runs_needed = (unsigned int)fewer + 1;
	o->more_runs = o->runs_needed - (unsigned int)fewer;
}
