// SPDX-License-Identifier: GPL-2.0
/*
 * tail.c - a capture that ends with the target asleep.
 *
 * The agent sends a suspend's records only when the target wakes again,
 * so a capture that ends while the target sleeps never has its last
 * suspend's records: the log leaves the target awake from its last
 * record to the capture's end, the blockers open then (the agent's own
 * "sbagent report" while it reports) charged with the time, while the
 * supply shows the target asleep. The samples after the last record are
 * evidence of their own: when they fall to the sleep level of the
 * capture's earlier suspended stretches and stay there to the end, the
 * target is suspended from that fall (an inferred suspend), and every
 * blocker still active then was released no later than that (a suspend
 * cannot happen with one held). report-format.md, "The capture's end".
 *
 * The sleep level: twice the median of the means of TAIL_CHUNK
 * consecutive samples inside the last TAIL_REF_SPANS suspended stretches
 * (each read for at most AN_EDGE_WINDOW_NS from its start, which
 * edges.c has moved to where the power is low), plus TAIL_FLOOR_UW: the
 * "suspended level" of edges.c, taken from the capture's own sleeps.
 *
 * A fall, not a level: the target was awake when it last spoke, so the
 * samples after its last word must rise above the sleep level before the
 * run that reaches the end counts as its sleep. Where none does, the
 * power cannot tell its awake from its asleep (a target that draws little
 * awake, or a sleep level that the floor lifts over its awake power): the
 * end stays unknown, never inferred from a level alone.
 *
 * Memory: one window's samples at a time (an_trace, bounded).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-clock.h"
#include "an-timeline.h"
#include "an-trace.h"

#define TAIL_CHUNK	8	/* samples per mean, as edges.c */
#define TAIL_FLOOR_UW	1000.0	/* as edges.c's EDGE_FLOOR_UW */
#define TAIL_REF_SPANS	4	/* earlier suspended stretches read */
#define TAIL_BATCH	2048

/* The samples in [@a, @b] appended to @x. 0, -E2BIG (too many) or -errno. */
static int read_window(struct sbrig_capread *cr, int64_t a, int64_t b,
		       struct an_trace *x)
{
	struct sbrig_sample *batch = malloc(TAIL_BATCH * sizeof(*batch));
	ssize_t got = 0;
	int ret;

	if (!batch)
		return -ENOMEM;
	ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	if (!ret) {
		ret = sbrig_capread_seek_samples(cr, a);
		if (ret == -EOPNOTSUPP)
			ret = 0;
	}
	while (!ret && (got = sbrig_capread_samples(cr, batch,
						    TAIL_BATCH)) > 0) {
		for (ssize_t i = 0; i < got && !ret; i++) {
			if (batch[i].t_ns < a)
				continue;
			if (batch[i].t_ns > b)
				goto out;
			ret = an_trace_add(x, batch[i].t_ns,
					   an_sample_power_uW(&batch[i]));
			if (!ret && x->overflow)
				ret = -E2BIG;
		}
	}
	if (!ret && got < 0)
		ret = (int)got;
out:
	free(batch);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The sleep level from the last suspended stretches before @before, or
 * -1 when there is none with TAIL_CHUNK samples. 0 or -errno in *@ret.
 */
static double sleep_level(const struct an_timeline *tl,
			  struct sbrig_capread *cr, int64_t before, int *ret)
{
	struct an_trace x = { 0 };
	double *m = NULL, level = -1;
	size_t nm = 0, used = 0;

	*ret = 0;
	for (size_t i = tl->nsusp; i-- > 0 && used < TAIL_REF_SPANS;) {
		const struct an_span *s = &tl->susp[i];
		int64_t b = s->end;
		double *nmv;
		size_t k;

		if (s->end > before || s->end <= s->start)
			continue;
		if (b - s->start > AN_EDGE_WINDOW_NS)
			b = s->start + AN_EDGE_WINDOW_NS;
		x.n = 0;
		x.overflow = false;
		*ret = read_window(cr, s->start, b, &x);
		if (*ret == -E2BIG) {
			*ret = 0;	/* the samples it holds are enough */
		} else if (*ret) {
			goto out;
		}
		if (x.n < TAIL_CHUNK)
			continue;
		used++;
		nmv = realloc(m, (nm + x.n / TAIL_CHUNK) * sizeof(*m));
		if (!nmv) {
			*ret = -ENOMEM;
			goto out;
		}
		m = nmv;
		for (k = 0; k + TAIL_CHUNK <= x.n; k += TAIL_CHUNK) {
			double sum = 0;

			for (size_t j = k; j < k + TAIL_CHUNK; j++)
				sum += x.p[j];
			m[nm++] = sum / TAIL_CHUNK;
		}
	}
	if (nm) {
		qsort(m, nm, sizeof(*m), cmp_double);
		level = 2 * (nm % 2 ? m[nm / 2] :
			     (m[nm / 2 - 1] + m[nm / 2]) / 2) + TAIL_FLOOR_UW;
	}
out:
	free(m);
	an_trace_free(&x);
	return level;
}

/* Every span of @b still open at the capture's end ends at @t. */
static void release_at(struct an_blocker *b, int64_t t)
{
	size_t n = 0;

	for (size_t j = 0; j < b->nspans; j++) {
		if (b->spans[j].end > t) {
			b->spans[j].end = t;
			b->tail_released = true;
		}
		if (b->spans[j].end > b->spans[j].start)
			b->spans[n++] = b->spans[j];
	}
	b->nspans = n;
	n = 0;
	for (size_t j = 0; j < b->nospans; j++) {
		if (b->ospans[j].end > t)
			b->ospans[j].end = t;
		if (b->ospans[j].end > b->ospans[j].start)
			b->ospans[n++] = b->ospans[j];
	}
	b->nospans = n;
	b->active_at_end = false;
}

static int add_span(struct an_timeline *tl, int64_t start)
{
	int ret = an_grow((void **)&tl->susp_unc, &tl->susp_unc_cap,
			  tl->nsusp + 1, sizeof(*tl->susp_unc));

	if (!ret)
		ret = an_grow((void **)&tl->susp_edges, &tl->susp_edges_cap,
			      tl->nsusp + 1, sizeof(*tl->susp_edges));
	if (!ret)
		ret = an_grow((void **)&tl->susp, &tl->susp_cap,
			      tl->nsusp + 1, sizeof(*tl->susp));
	if (ret)
		return ret;
	tl->susp[tl->nsusp] = (struct an_span){ start, AN_OPEN_END };
	tl->susp_edges[tl->nsusp] = AN_EDGE_INFERRED;
	tl->susp_unc[tl->nsusp++] = 0;
	return 0;
}

/**
 * an_tail_infer() - how the capture ends; a last suspend by the power
 * @tl: the timeline, its stretches refined (an_edges_refine())
 * @clk: the clock model (its exchanges: the target answered, awake)
 * @cr: the capture; its samples are read and rewound
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the samples' file.
 */
int an_tail_infer(struct an_timeline *tl, const struct an_clock *clk,
		  struct sbrig_capread *cr)
{
	struct an_trace x = { 0 };
	int64_t last = tl->last_record_lo, fall;
	size_t j, low;
	double level;
	int ret = 0;

	tl->end_state = AN_END_UNKNOWN;
	tl->inferred_t = -1;
	if (tl->nsusp && tl->susp[tl->nsusp - 1].end >= AN_OPEN_END) {
		tl->end_state = AN_END_SUSPENDED;	/* the log's enter */
		return 0;
	}
	/*
	 * The target's last word: a record, a snapshot, an answered ping,
	 * each the earliest it can be (the ping's answer came between its
	 * send and its receipt, on a loaded host tens of ms apart: its
	 * midpoint can lie after the fall it preceded).
	 */
	if (tl->nsnap && tl->snap_t[tl->nsnap - 1] > last)
		last = tl->snap_t[tl->nsnap - 1];
	for (size_t i = 0; i < clk->nseg; i++)
		if (clk->seg[i].host_last_lo > last)
			last = clk->seg[i].host_last_lo;
	tl->last_word = last;
	if (last < 0)
		return 0;	/* no record: nothing to judge */
	level = sleep_level(tl, cr, last, &ret);
	tl->sleep_level_uW = level;
	if (ret || level < 0)
		goto out;
	ret = read_window(cr, last + 1, AN_OPEN_END, &x);
	if (ret == -E2BIG) {
		ret = 0;	/* a tail too long to hold: not judged */
		goto out;
	}
	if (ret || x.n < TAIL_CHUNK)
		goto out;
	/* the run at the sleep level that reaches the end */
	for (j = x.n; j > 0 && x.p[j - 1] <= level; j--)
		;
	low = x.n - j;
	if (j == 0) {
		tl->tail_never_above = true;	/* no fall: cannot tell */
		goto out;
	}
	if (low < TAIL_CHUNK) {
		tl->end_state = AN_END_AWAKE;	/* awake at the end */
		goto out;
	}
	fall = x.t[j];
	tl->end_state = AN_END_INFERRED;
	tl->inferred_t = fall;
	ret = add_span(tl, fall);
	for (size_t i = 0; i < tl->nb && !ret; i++)
		release_at(&tl->b[i], fall);
out:
	an_trace_free(&x);
	if (!ret)
		ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	if (ret == -ENOMEM)
		ret = sbrig_set_error(-ENOMEM, "analysis: out of memory");
	return ret;
}
