// SPDX-License-Identifier: GPL-2.0
/*
 * steps.c - change points over a sequence of commits (pure functions).
 *
 * The rule (history-format.md, "Change points"), Perfherder's windowed
 * t-test over the commits. Builds differ more than runs of one build, so
 * each commit counts once, by the median of its runs. For each commit k
 * after the first, the medians of the @window commits before it
 * (k-window .. k-1) and of the @window commits from it on (k ..
 * k+window-1) are compared with Welch's t (the difference of the means
 * over its standard error; each window needs three commits or more, two
 * when the window is 2). Commit
 * k is a candidate when |t| >= t_threshold and the medians of the two
 * windows differ by at least the metric's threshold, max(min_change x
 * |median before|, min_abs), as in compare. A candidate is a change point
 * when its |t| is a local maximum, as in Perfherder: no less than its
 * neighbours' (the first of equal neighbours), so two steps closer than a
 * window are both found. A change point whose windows are not full (fewer
 * than @window commits on a side: at the start, or the latest commits) is
 * provisional: more commits may move or drop it.
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
 * The commits' medians @med[@lo..@hi) into @buf (sorted); their mean and
 * sample variance.
 */
static void window(const double *med, size_t lo, size_t hi, double *buf,
		   double *mean, double *var)
{
	size_t k = hi - lo;
	double s = 0, ss = 0;

	memcpy(buf, med + lo, k * sizeof(*buf));
	for (size_t i = 0; i < k; i++)
		s += buf[i];
	*mean = k ? s / (double)k : NAN;
	for (size_t i = 0; i < k; i++)
		ss += (buf[i] - *mean) * (buf[i] - *mean);
	*var = k > 1 ? ss / (double)(k - 1) : NAN;
	qsort(buf, k, sizeof(*buf), cmp_double);
}

/*
 * commit @k's windows' t (0 when a window has fewer than HI_MIN_SIDE
 * commits: a t of two commits a side is noise, |t| >= 7 by chance in
 * ~2 % of them)
 */
static struct hi_step at(const double *med, size_t n, size_t k, size_t w,
			 double *bb, double *bf)
{
	struct hi_step c = { .at = k };
	size_t lo = k > w ? k - w : 0, hi = k + w < n ? k + w : n;
	double mb, vb, mf, vf, se;

	c.nbefore = k - lo;
	c.nafter = hi - k;
	if (c.nbefore < HI_MIN_SIDE(w) || c.nafter < HI_MIN_SIDE(w))
		return c;
	window(med, lo, k, bb, &mb, &vb);
	window(med, k, hi, bf, &mf, &vf);
	se = sqrt(vb / (double)c.nbefore + vf / (double)c.nafter);
	c.t = se > 0 ? (mf - mb) / se :
	      mf == mb ? 0 : copysign(INFINITY, mf - mb);
	c.before = hi_median(bb, c.nbefore);
	c.after = hi_median(bf, c.nafter);
	c.provisional = c.nbefore < w || c.nafter < w;
	return c;
}

long hi_find_steps(const struct hi_point *pts, size_t n,
		   const struct hi_step_rule *rule, struct hi_step **out)
{
	size_t nsteps = 0, w = rule->window ? rule->window : 1;
	struct hi_step *c = NULL, *steps = NULL;
	double *med = NULL, *bb = NULL, *bf = NULL;
	long ret;

	*out = NULL;
	if (n < 2)
		return 0;
	med = malloc(n * sizeof(*med));
	bb = malloc((w + 1) * sizeof(*bb));
	bf = malloc((w + 1) * sizeof(*bf));
	c = calloc(n + 1, sizeof(*c));
	if (!med || !bb || !bf || !c) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		med[i] = hi_median(pts[i].values, pts[i].n);
	for (size_t k = 1; k < n; k++)
		c[k] = at(med, n, k, w, bb, bf);
	for (size_t k = 1; k < n; k++) {
		double t = fabs(c[k].t), change, thr;

		change = fabs(c[k].after - c[k].before);
		thr = fmax(rule->min_change * fabs(c[k].before), rule->min_abs);
		if (!(t >= rule->t_threshold) || !(change >= thr) ||
		    !(change > 0))
			continue;
		/* a local maximum of |t| (c[0] and c[n] are 0) */
		if (fabs(c[k - 1].t) > t || fabs(c[k + 1].t) > t)
			continue;
		if (nsteps && steps[nsteps - 1].at == k - 1 &&
		    fabs(c[k - 1].t) == t)
			continue;	/* a plateau: its first commit */
		if (!steps) {
			steps = calloc(n / 2 + 1, sizeof(*steps));
			if (!steps) {
				ret = -ENOMEM;
				goto out;
			}
		}
		steps[nsteps++] = c[k];
	}
	*out = steps;
	steps = NULL;
	ret = (long)nsteps;
out:
	free(med);
	free(bb);
	free(bf);
	free(c);
	free(steps);
	return ret;
}
