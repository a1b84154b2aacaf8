// SPDX-License-Identifier: GPL-2.0
/*
 * analysis.c - sbrig_analysis_run(): the steps of the analysis, in order,
 * over one capture.
 *
 * The analysis is a pipeline over one capture, each step in its own file:
 *
 *	clockfit.c	clock.tsv -> segments, each a fitted offset + drift;
 *			events re-mapped onto host time
 *	markers.c	edges.tsv's marker edges paired again with the events
 *			-> more clock samples; the rising edges for wakeups.c
 *	timeline.c	events + stats + stimuli -> blockers with their active
 *			spans, suspended spans, resumes, aborts, boots
 *	wakeups.c	stimuli + resumes -> wakeup episodes; latency
 *	integrate.c	samples streamed once against the timeline's change
 *			points: energy per state, per blocker, per window;
 *			gaps; the power trace
 *	tail.c		how the capture ends: a last suspend whose records
 *			never came, inferred by the power
 *	findings.c	what went wrong, ranked
 *	analysis.c	runs the steps; report-json.c writes the result
 *
 *	(clockfit.c places the epochs no exchange saw with place.c, which
 *	reads the power with edges.c's trace window; edges.c also refines
 *	the suspended spans' ends; costs.c measures each suspend's cost)
 *
 * The steps call downwards only: analysis.c -> costs.c, findings.c,
 * integrate.c, wakeups.c -> markers.c, timeline.c -> clockfit.c ->
 * place.c -> edges.c, and analysis.c -> tail.c -> edges.c. Their objects
 * are declared by concern, in headers
 * that no step is named after, so that a step low in that order (edges.c)
 * can use the objects of one above it (the timeline) without an include
 * running back up: an-base.h (spans, saturating time, an_grow()),
 * an-clock.h, an-trace.h, an-markers.h, an-timeline.h, an-results.h
 * (wakeups, energies, costs, findings) and an-capture.h (the whole).
 *
 * All times are host CLOCK_MONOTONIC ns. Spans are half-open [start, end).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "an-capture.h"

/* The state times (wall time: gaps included) and the unattributed time. */
static int durations(struct sbrig_analysis *a)
{
	struct an_timeline *tl = &a->tl;
	struct an_energy *en = &a->en;
	struct an_span *u = NULL;
	size_t n = 0, cap = 0, j = 0;
	int64_t busy, busy_susp = 0, span = tl->end - tl->start;

	en->suspended_ns = 0;
	for (size_t i = 0; i < tl->nsusp; i++)
		en->suspended_ns += tl->susp[i].end - tl->susp[i].start;
	en->awake_ns = span > en->suspended_ns ? span - en->suspended_ns : 0;
	for (size_t i = 0; i < tl->nb; i++) {
		for (size_t k = 0; k < tl->b[i].nspans; k++) {
			if (an_grow((void **)&u, &cap, n + 1, sizeof(*u))) {
				free(u);
				return -ENOMEM;
			}
			u[n++] = tl->b[i].spans[k];
		}
	}
	busy = an_merge_spans(u, &n);
	/* the part of the union that is suspended (both sorted, disjoint) */
	for (size_t i = 0; i < n; i++) {
		while (j < tl->nsusp && tl->susp[j].end <= u[i].start)
			j++;
		for (size_t k = j; k < tl->nsusp && tl->susp[k].start < u[i].end;
		     k++) {
			int64_t lo = u[i].start > tl->susp[k].start ? u[i].start :
				tl->susp[k].start;
			int64_t hi = u[i].end < tl->susp[k].end ? u[i].end :
				tl->susp[k].end;

			if (hi > lo)
				busy_susp += hi - lo;
		}
	}
	free(u);
	en->unattributed_ns = en->awake_ns - (busy - busy_susp);
	if (en->unattributed_ns < 0)
		en->unattributed_ns = 0;
	return 0;
}

struct sbrig_analysis *sbrig_analysis_run(const char *capture_dir,
					  const struct sbrig_analysis_opts *opts)
{
	struct sbrig_analysis *a = calloc(1, sizeof(*a));
	struct sbrig_capread *cr = NULL;
	struct sbrig_sample s;
	int64_t start, end;
	int ret;

	if (!a) {
		sbrig_set_error(-ENOMEM, "analysis: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	snprintf(a->dir, sizeof(a->dir), "%s", capture_dir);
	if (opts)
		a->opts = *opts;
	if (a->opts.leak_ns <= 0)
		a->opts.leak_ns = SBRIG_ANALYSIS_DEFAULT_LEAK_NS;
	cr = sbrig_capread_open(capture_dir);
	if (!cr) {
		ret = errno ? -errno : -EIO;
		goto fail;
	}
	a->meta = *sbrig_capread_meta(cr);

	/* the capture starts at its first sample (else when it was made) */
	ret = sbrig_capread_next_sample(cr, &s);
	if (ret < 0)
		goto fail;
	start = ret == 1 ? s.t_ns : a->meta.created_monotonic_ns;
	ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	/*
	 * the clock: the pings, then the marker edges paired again with the
	 * events so mapped; clock.tsv's online marker rows only when
	 * edges.tsv has no marker edge (else they would count twice)
	 */
	if (!ret)
		ret = an_markers_read(&a->mk, cr);
	if (!ret)
		ret = an_clock_fit(&a->clk, cr, !a->mk.edges);
	if (!ret)
		ret = an_markers_pair(&a->mk, &a->clk, cr);
	if (!ret)
		ret = an_timeline_build(&a->tl, cr, &a->clk, start);
	if (!ret)
		ret = an_wakeups_find(&a->wk, &a->tl, &a->mk);
	if (!ret)
		ret = an_edges_refine(&a->tl, cr);
	if (!ret)
		ret = an_tail_infer(&a->tl, &a->clk, cr);
	if (!ret)
		an_wakeups_refine(&a->wk, &a->tl);
	if (!ret)
		ret = an_integrate(&a->en, cr, &a->tl, &a->wk);
	if (ret)
		goto fail;

	/*
	 * ... and ends at its last: without samples it spans nothing (no
	 * time is awake or suspended that nothing measured)
	 */
	end = a->en.samples ? a->en.last_t : start;
	an_timeline_finish(&a->tl, end);
	for (size_t i = 0; i < a->wk.n; i++)
		if (a->wk.w[i].end_ns > end)
			a->wk.w[i].end_ns = end;
	ret = durations(a);
	if (!ret)
		ret = an_costs_measure(&a->co, cr, &a->tl, &a->en);
	if (!ret)
		ret = an_findings_collect(&a->fd, &a->tl, &a->wk, &a->en,
					  &a->co, a->opts.leak_ns);
	if (ret)
		goto fail;
	sbrig_capread_close(cr);
	return a;

fail:
	sbrig_capread_close(cr);
	sbrig_analysis_free(a);
	errno = ret < 0 ? -ret : EIO;
	return NULL;
}

void sbrig_analysis_free(struct sbrig_analysis *a)
{
	if (!a)
		return;
	an_clock_free(&a->clk);
	an_markers_free(&a->mk);
	an_timeline_free(&a->tl);
	an_wakeups_free(&a->wk);
	an_energy_free(&a->en);
	an_costs_free(&a->co);
	an_findings_free(&a->fd);
	free(a);
}

void sbrig_analysis_latency(const struct sbrig_analysis *a,
			    struct sbrig_latency_stats *st)
{
	*st = a->wk.lat;
}

size_t sbrig_analysis_wakeups(const struct sbrig_analysis *a,
			      struct sbrig_wakeup *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < a->wk.n; i++) {
		const struct an_wakeup *w = &a->wk.w[i];

		if (w->cause != AN_CAUSE_STIMULUS)
			continue;	/* no latency to measure */
		if (n >= max) {
			n++;
			continue;
		}
		out[n++] = (struct sbrig_wakeup){
			.t_ns = w->t_ns,
			.resume_t_ns = w->resume_t_ns,
			.marker_t_ns = w->marker_t_ns,
			.latency_ns = w->latency_ns,
			.uncert_ns = w->uncert_ns,
		};
	}
	return n;
}
