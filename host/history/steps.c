// SPDX-License-Identifier: GPL-2.0
/*
 * steps.c - change points over a sequence of commits (pure functions).
 *
 * The rule (history-format.md, "Change points"), Perfherder's windowed
 * t-test with repeated runs per commit: for each commit k after the first,
 * the runs of the @window commits before it (k-window .. k-1) and of the
 * @window commits from it on (k .. k+window-1) are compared with Welch's
 * t (the difference of the means over its standard error; both windows
 * need two runs or more). Commit k is a candidate when |t| >= t_threshold
 * and the medians of the two windows differ by at least the metric's
 * threshold, max(min_change x |median before|, min_abs), as in compare.
 * One step makes a run of consecutive candidates around it (each window
 * that straddles it sees part of it): the candidate of the run with the
 * largest |t| (then the largest change, then the earliest) is the change
 * point, and its commit is named.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double hi_median(const double *v, size_t n)
{
	if (!n)
		return NAN;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The runs of @pts[@lo..@hi) into @buf (sorted); their count, mean and
 * sample variance.
 */
static size_t window(const struct hi_point *pts, size_t lo, size_t hi,
		     double *buf, double *mean, double *var)
{
	size_t k = 0;
	double s = 0, ss = 0;

	for (size_t i = lo; i < hi; i++)
		for (size_t j = 0; j < pts[i].n; j++)
			buf[k++] = pts[i].values[j];
	for (size_t i = 0; i < k; i++)
		s += buf[i];
	*mean = k ? s / (double)k : NAN;
	for (size_t i = 0; i < k; i++)
		ss += (buf[i] - *mean) * (buf[i] - *mean);
	*var = k > 1 ? ss / (double)(k - 1) : NAN;
	qsort(buf, k, sizeof(*buf), cmp_double);
	return k;
}

long hi_find_steps(const struct hi_point *pts, size_t n,
		   const struct hi_step_rule *rule, struct hi_step **out)
{
	size_t total = 0, nsteps = 0, w = rule->window ? rule->window : 1;
	struct hi_step *steps = NULL, best = { 0 };
	double *bb = NULL, *bf = NULL;
	bool in_run = false;
	long ret;

	*out = NULL;
	for (size_t i = 0; i < n; i++)
		total += pts[i].n;
	bb = malloc((total + 1) * sizeof(*bb));
	bf = malloc((total + 1) * sizeof(*bf));
	/* at most one change point per two candidates' worth of commits */
	steps = calloc(n / 2 + 1, sizeof(*steps));
	if (!bb || !bf || !steps) {
		ret = -ENOMEM;
		goto fail;
	}
	for (size_t k = 1; k <= n; k++) {
		struct hi_step c = { .at = k };
		bool cand = false;

		if (k < n) {
			size_t lo = k > w ? k - w : 0, hi = k + w < n ? k + w : n;
			double mb, vb, mf, vf, se, thr, change;
			size_t nb = window(pts, lo, k, bb, &mb, &vb);
			size_t nf = window(pts, k, hi, bf, &mf, &vf);

			if (nb >= 2 && nf >= 2) {
				se = sqrt(vb / (double)nb + vf / (double)nf);
				c.t = se > 0 ? (mf - mb) / se :
				      mf == mb ? 0 : copysign(INFINITY, mf - mb);
				c.before = hi_median(bb, nb);
				c.after = hi_median(bf, nf);
				c.nbefore = k - lo;
				c.nafter = hi - k;
				change = fabs(c.after - c.before);
				thr = fmax(rule->min_change * fabs(c.before),
					   rule->min_abs);
				cand = fabs(c.t) >= rule->t_threshold &&
				       change >= thr && change > 0;
			}
		}
		if (cand && (!in_run ||
			     fabs(c.t) > fabs(best.t) ||
			     (fabs(c.t) == fabs(best.t) &&
			      fabs(c.after - c.before) >
			      fabs(best.after - best.before)))) {
			best = c;
		}
		if (!cand && in_run)
			steps[nsteps++] = best;
		in_run = cand;
	}
	free(bb);
	free(bf);
	if (!nsteps) {
		free(steps);
		return 0;
	}
	*out = steps;
	return (long)nsteps;
fail:
	free(bb);
	free(bf);
	free(steps);
	return ret;
}
