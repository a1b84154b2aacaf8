// SPDX-License-Identifier: GPL-2.0
/*
 * costs.c - what each suspend costs, measured (report-format.md section
 * 6, "What each suspend costs").
 *
 * Suspending is worth it only when the platform stays down long enough:
 * going down (from the last suspend blocker's release to the platform's
 * low level) and coming back (from the power's rise to the first suspend
 * blocker after it) cost energy above the suspended baseline, which a
 * suspend must win back against staying awake idle. So per cycle (a
 * suspended stretch with its enter and exit), the entry's and the exit's
 * duration and energy above the baseline are integrated from the samples
 * (trapezoids cut at the windows' ends by linear interpolation), and the
 * break-even suspend time is
 *
 *	(entry_uJ + exit_uJ) / (idle_uW - baseline_uW)
 *
 * with idle_uW the mean power of the awake time with nothing active (the
 * report's unattributed energy over its time). A cycle suspended for less
 * than that lost energy by suspending: a short_suspend finding.
 *
 * The windows are short: on samples.bin each is sought to (1 s before it,
 * for the sample before its start); samples.tsv is streamed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-results.h"
#include "an-timeline.h"

#define COST_BATCH	2048
#define COST_SEEK_BEFORE_NS	1000000000LL

/* @t - @d, saturated (times come from the capture: anything) */
static int64_t before(int64_t t, int64_t d)
{
	return t < INT64_MIN + d ? INT64_MIN : t - d;
}

/* the suspend blockers' spans (wakeup sources left out), merged, sorted */
static int sb_union(const struct an_timeline *tl, struct an_span **out,
		    size_t *n)
{
	struct an_span *v = NULL;
	size_t cap = 0;

	*n = 0;
	for (size_t i = 0; i < tl->nb; i++) {
		const struct an_blocker *b = &tl->b[i];

		if (b->kind == AN_KIND_WAKEUP_SOURCE)
			continue;
		for (size_t j = 0; j < b->nspans; j++) {
			if (an_grow((void **)&v, &cap, *n + 1, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			v[(*n)++] = b->spans[j];
		}
	}
	an_merge_spans(v, n);
	*out = v;
	return 0;
}

/* The first span of @v (@n, sorted, disjoint) that ends after @t. */
static size_t first_ending_after(const struct an_span *v, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The windows: per cycle an entry and an exit, in time order. */
static int windows(struct an_costs *co, const struct an_timeline *tl)
{
	struct an_span *u;
	size_t nu;
	int ret = sb_union(tl, &u, &nu);

	if (ret)
		return ret;
	for (size_t i = 0; i < tl->nsusp && !ret; i++) {
		const struct an_span *s = &tl->susp[i];
		int64_t prev = i ? tl->susp[i - 1].end : tl->start;
		int64_t next = i + 1 < tl->nsusp ? tl->susp[i + 1].start :
			tl->end;
		size_t k = first_ending_after(u, nu, s->start);
		struct an_cost *c;

		if ((tl->susp_edges[i] & (AN_EDGE_ENTER | AN_EDGE_EXIT)) !=
		    (AN_EDGE_ENTER | AN_EDGE_EXIT))
			continue;	/* not a whole cycle in the capture */
		ret = an_grow((void **)&co->c, &co->cap, co->n + 1,
			      sizeof(*co->c));
		if (ret)
			break;
		c = &co->c[co->n++];
		memset(c, 0, sizeof(*c));
		c->susp = i;
		/* the last release before the enter, after the last wake */
		c->entry.start = c->entry.end = s->start;
		if (k > 0 && u[k - 1].end > prev && u[k - 1].end <= s->start)
			c->entry.start = u[k - 1].end;
		/* the first activation after the power's rise */
		c->exit.start = c->exit.end = s->end;
		k = first_ending_after(u, nu, s->end);
		if (k < nu && u[k].start >= s->end && u[k].start <= next)
			c->exit.end = u[k].start;
		c->has_entry = c->entry.end > c->entry.start;
		c->has_exit = c->exit.end > c->exit.start;
	}
	free(u);
	return ret;
}

/* Add the trapezoid (t0, p0)-(t1, p1) to the windows it overlaps. */
static void add_pair(struct an_costs *co, size_t *wi, int64_t t0, double p0,
		     int64_t t1, double p1)
{
	/* windows in time order: entry of cycle k is 2k, its exit 2k + 1 */
	while (*wi < 2 * co->n) {
		struct an_cost *c = &co->c[*wi / 2];
		struct an_span *w = *wi % 2 ? &c->exit : &c->entry;
		double *e = *wi % 2 ? &c->exit_uJ : &c->entry_uJ;
		int64_t lo, hi;
		double plo, phi;

		if (w->end <= t0) {
			(*wi)++;
			continue;
		}
		if (w->start >= t1)
			return;
		lo = w->start > t0 ? w->start : t0;
		hi = w->end < t1 ? w->end : t1;
		plo = p0 + (p1 - p0) * (double)(lo - t0) / (double)(t1 - t0);
		phi = p0 + (p1 - p0) * (double)(hi - t0) / (double)(t1 - t0);
		*e += (plo + phi) * 0.5 * (double)(hi - lo) * 1e-9;
		if (w->end > t1)
			return;
		(*wi)++;
	}
}

static int integrate(struct an_costs *co, struct sbrig_capread *cr)
{
	struct sbrig_sample *batch = malloc(COST_BATCH * sizeof(*batch));
	int64_t t0 = INT64_MIN;
	double p0 = 0;
	size_t wi = 0;
	bool seek = true;
	ssize_t got;
	int ret = 0;

	if (!batch)
		return -ENOMEM;
	ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	while (!ret && wi < 2 * co->n) {
		const struct an_cost *c = &co->c[wi / 2];
		int64_t a = wi % 2 ? c->exit.start : c->entry.start;

		/* far before the next window: skip there (samples.bin) */
		if (seek && (t0 == INT64_MIN ||
			     t0 < before(a, 2 * COST_SEEK_BEFORE_NS))) {
			ret = sbrig_capread_seek_samples(cr, before(a,
							 COST_SEEK_BEFORE_NS));
			if (ret == -EOPNOTSUPP)
				seek = false;
			else if (ret)
				break;
			ret = 0;
			t0 = INT64_MIN;
		}
		got = sbrig_capread_samples(cr, batch, COST_BATCH);
		if (got <= 0) {
			ret = (int)got;
			break;
		}
		for (ssize_t k = 0; k < got; k++) {
			int64_t t = batch[k].t_ns;
			double p = (double)batch[k].power_uW;

			if (t0 != INT64_MIN && t > t0)
				add_pair(co, &wi, t0, p0, t, p);
			t0 = t;
			p0 = p;
		}
	}
	free(batch);
	if (!ret)
		ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	return ret;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/**
 * an_costs_measure() - what each suspend cost
 * @co: out (zeroed storage)
 * @cr: the capture (its samples are read where the windows are, then
 *	rewound)
 * @tl: the timeline, finished, its stretches refined by the power
 * @en: the integration (baseline, unattributed energy and time)
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the samples' file:line.
 */
int an_costs_measure(struct an_costs *co, struct sbrig_capread *cr,
		     const struct an_timeline *tl, const struct an_energy *en)
{
	int64_t *be = NULL;
	size_t nbe = 0;
	int ret;

	memset(co, 0, sizeof(*co));
	co->median_break_even_ns = -1;
	if (!en->have_baseline || en->unattributed_ns <= 0)
		return 0;	/* no baseline, or never idle: nothing to say */
	co->idle_uW = en->unattributed_uJ * 1e9 / (double)en->unattributed_ns;
	co->have_idle = true;
	ret = windows(co, tl);
	if (!ret && co->n)
		ret = integrate(co, cr);
	if (ret) {
		an_costs_free(co);
		return ret;
	}
	be = malloc((co->n ? co->n : 1) * sizeof(*be));
	if (!be) {
		an_costs_free(co);
		return -ENOMEM;
	}
	for (size_t i = 0; i < co->n; i++) {
		struct an_cost *c = &co->c[i];
		double save = co->idle_uW - en->baseline_uW;

		c->entry_uJ -= en->baseline_uW * (double)(c->entry.end -
							  c->entry.start) * 1e-9;
		c->exit_uJ -= en->baseline_uW * (double)(c->exit.end -
							 c->exit.start) * 1e-9;
		c->suspended_ns = tl->susp[c->susp].end - tl->susp[c->susp].start;
		c->break_even_ns = -1;
		if (save > 0 && c->has_entry && c->has_exit) {
			double ns = (c->entry_uJ + c->exit_uJ) / save * 1e9;

			c->break_even_ns = ns < 0 ? 0 : ns > 1e18 ? INT64_MAX :
				(int64_t)ns;
			be[nbe++] = c->break_even_ns;
		}
	}
	if (nbe) {
		qsort(be, nbe, sizeof(*be), cmp_i64);
		co->median_break_even_ns = nbe % 2 ? be[nbe / 2] :
			be[nbe / 2 - 1] / 2 + be[nbe / 2] / 2;
	}
	free(be);
	return 0;
}

void an_costs_free(struct an_costs *co)
{
	free(co->c);
	memset(co, 0, sizeof(*co));
	co->median_break_even_ns = -1;
}
