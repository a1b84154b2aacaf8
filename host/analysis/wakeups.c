// SPDX-License-Identifier: GPL-2.0
/*
 * wakeups.c - stimuli that woke the target, and how fast it came back.
 *
 * For each resume, what woke the target: the last press/plug/unplug given
 * while the target was in the suspended stretch that ended there (a
 * latency run presses again when a press did not wake the target: the
 * last press counts; the stretch's start is the enter's mapped time, so
 * its uncertainty is allowed for); else the kernel wakeup source that
 * became active first between the platform's exit and the resume (each
 * within its uncertainty); else nothing known. The episode runs from the
 * stimulus (or the exit) to the next enter; its energy is filled in by
 * the integration.
 *
 * The latency runs to the resume, or, when the marker is wired, to the
 * marker's first rising edge after the stimulus that comes no later than
 * the resume can be (its mapped time + its uncertainty): the target is
 * running again when it takes a blocker, and the edge is a host kernel
 * timestamp, with no clock mapping in it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/analysis.h>

#include "an-base.h"
#include "an-clock.h"
#include "an-markers.h"
#include "an-results.h"
#include "an-timeline.h"

/* @a - @b, saturated (times and uncertainties come from the capture) */
static int64_t sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b > 0 ? INT64_MIN : INT64_MAX;
	return r;
}

static bool is_wake_stimulus(const struct an_stimulus *s)
{
	return !strcmp(s->what, "press") || !strcmp(s->what, "plug") ||
		!strcmp(s->what, "unplug");
}

/* The first stretch (in start order) that starts after @x, or nsusp. */
static size_t susp_after(const struct an_timeline *tl, int64_t x, bool eq)
{
	size_t lo = 0, hi = tl->nsusp;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->susp[mid].start < x || (!eq && tl->susp[mid].start == x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The suspended stretch a resume at @t ends (the last to start before it;
 * if none does, the last to start before @t + @unc), or -1. A stretch
 * that starts after the resume's own time is not the one it ends, even
 * within its uncertainty: the resume and the enter after it in its epoch
 * are mapped alike, so their order holds however wide that is.
 */
static long stretch_before(const struct an_timeline *tl, int64_t t,
			   int64_t unc)
{
	long k = (long)susp_after(tl, t, false) - 1;

	if (k >= 0)
		return k;
	return (long)susp_after(tl, an_sat_add(t, unc), false) - 1;
}

/* the stimuli in time order (stimuli.tsv's order, kept for ties) */
static const struct an_stimulus *cmp_base;

static int cmp_stim(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int64_t tx = cmp_base[x].t_ns, ty = cmp_base[y].t_ns;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	return (x > y) - (x < y);
}

/*
 * The wakeup source whose first activation in [@lo, @hi] is the earliest
 * (its index in @tl's blockers), or -1. The objects' spans are sorted by
 * start (an_timeline_build()).
 */
static long first_source(const struct an_timeline *tl, int64_t lo, int64_t hi)
{
	int64_t best_t = INT64_MAX;
	long best = -1;

	for (size_t i = 0; i < tl->nb; i++) {
		const struct an_blocker *b = &tl->b[i];
		size_t a = 0, z = b->nospans;

		if (b->kind != AN_KIND_WAKEUP_SOURCE)
			continue;
		while (a < z) {
			size_t mid = a + (z - a) / 2;

			if (b->ospans[mid].start < lo)
				a = mid + 1;
			else
				z = mid;
		}
		if (a < b->nospans && b->ospans[a].start <= hi &&
		    b->ospans[a].start < best_t) {
			best_t = b->ospans[a].start;
			best = (long)i;
		}
	}
	return best;
}

/* The names active in the episode (an array as long as they are many). */
static int episode_blockers(struct an_wakeup *w, const struct an_timeline *tl)
{
	size_t cap = 0;

	for (size_t i = 0; i < tl->nb; i++) {
		const struct an_blocker *b = &tl->b[i];
		size_t lo = 0, hi = b->nspans;

		/* the first span that ends after the episode starts */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (b->spans[mid].end <= w->t_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == b->nspans || b->spans[lo].start >= w->end_ns)
			continue;
		if (an_grow((void **)&w->blockers, &cap, w->nblockers + 1,
			    sizeof(*w->blockers)))
			return -ENOMEM;
		w->blockers[w->nblockers++] = i;
	}
	return 0;
}

/**
 * an_wakeups_find() - pair stimuli with the resumes they caused
 * @wk: out (zeroed storage)
 * @tl: the timeline
 * @mk: the marker line (no edges: the latencies run to the resumes)
 *
 * Return: 0 or -ENOMEM.
 */
int an_wakeups_find(struct an_wakeups *wk, const struct an_timeline *tl,
		    const struct an_markers *mk)
{
	bool *used = calloc(tl->nstimuli ? tl->nstimuli : 1, sizeof(*used));
	size_t *ord = calloc(tl->nstimuli ? tl->nstimuli : 1, sizeof(*ord));
	int64_t *lat = NULL, *unc = NULL, prev_resume = INT64_MIN;
	int ret = 0;

	memset(wk, 0, sizeof(*wk));
	if (!used || !ord) {
		free(used);
		free(ord);
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	}
	for (size_t s = 0; s < tl->nstimuli; s++)
		ord[s] = s;
	cmp_base = tl->stimuli;
	if (tl->nstimuli > 1)
		qsort(ord, tl->nstimuli, sizeof(*ord), cmp_stim);
	for (size_t r = 0; r < tl->nresumes && !ret; r++) {
		const struct an_event *res = &tl->resumes[r];
		long k = stretch_before(tl, res->t_ns, res->uncert_ns);
		/* the latest the resume can be */
		int64_t late = an_sat_add(res->t_ns, res->uncert_ns);
		int64_t from = k >= 0 ? sat_sub(tl->susp[k].start,
						tl->susp_unc[k]) : prev_resume;
		long pick = -1, src = -1;
		struct an_wakeup *w;

		if (from < prev_resume)
			from = prev_resume;	/* that stretch woke already */
		/* the last unused wake stimulus in [from, resume + unc] */
		{
			size_t lo = 0, hi = tl->nstimuli;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (tl->stimuli[ord[mid]].t_ns <= late)
					lo = mid + 1;
				else
					hi = mid;
			}
			while (lo-- > 0 && pick < 0) {
				const struct an_stimulus *st =
					&tl->stimuli[ord[lo]];

				if (st->t_ns < from)
					break;
				if (!used[ord[lo]] && is_wake_stimulus(st))
					pick = (long)ord[lo];
			}
		}
		if (pick < 0 && k >= 0)
			src = first_source(tl, sat_sub(tl->susp[k].end,
						       tl->susp_unc[k]),
					   late);
		prev_resume = res->t_ns;
		ret = an_grow((void **)&wk->w, &wk->cap, wk->n + 1,
			      sizeof(*wk->w));
		if (ret)
			break;
		w = &wk->w[wk->n++];
		memset(w, 0, sizeof(*w));
		w->resume_t_ns = res->t_ns;
		w->resume_uncert_ns = res->uncert_ns;
		w->resume_from = res->from;
		w->marker_t_ns = -1;
		if (pick >= 0) {
			used[pick] = true;
			wk->stimulus++;
			w->cause = AN_CAUSE_STIMULUS;
			w->stim = (size_t)pick;
			w->t_ns = tl->stimuli[pick].t_ns;
			w->marker_t_ns = an_markers_rise_in(mk, w->t_ns, late);
		} else {
			w->cause = src >= 0 ? AN_CAUSE_WAKEUP_SOURCE :
				AN_CAUSE_UNKNOWN;
			w->source = src >= 0 ? (size_t)src : 0;
			if (src < 0)
				wk->unknown++;
			/* the episode: from the platform's exit */
			w->t_ns = k >= 0 && tl->susp[k].end <= res->t_ns ?
				tl->susp[k].end : res->t_ns;
		}
		if (w->marker_t_ns >= 0) {
			w->latency_ns = an_sat_sub(w->marker_t_ns, w->t_ns);
			w->uncert_ns = AN_MARKER_HALF_NS;
		} else {
			w->latency_ns = an_sat_sub(res->t_ns, w->t_ns);
			w->uncert_ns = res->uncert_ns;
		}
		w->end_ns = tl->end;
		w->end_susp = -1;
		{
			size_t i = susp_after(tl, res->t_ns, true);

			if (i < tl->nsusp) {
				w->end_ns = tl->susp[i].start;
				w->end_susp = (long)i;
			}
		}
		ret = episode_blockers(w, tl);
	}
	free(used);
	free(ord);
	/* the latency statistics: over the stimulus wakeups */
	if (!ret && wk->stimulus) {
		size_t n = 0;

		lat = malloc(wk->stimulus * sizeof(*lat));
		unc = malloc(wk->stimulus * sizeof(*unc));
		if (!lat || !unc) {
			ret = sbrig_set_error(-ENOMEM, "analysis: out of memory");
		} else {
			for (size_t i = 0; i < wk->n; i++) {
				if (wk->w[i].cause != AN_CAUSE_STIMULUS)
					continue;
				lat[n] = wk->w[i].latency_ns;
				unc[n++] = wk->w[i].uncert_ns;
			}
			sbrig_latency_stats(lat, unc, n, &wk->lat);
		}
	}
	free(lat);
	free(unc);
	if (ret)
		an_wakeups_free(wk);
	return ret;
}

/**
 * an_wakeups_refine() - the episodes end where the platform went low
 * @wk: the wakeups
 * @tl: the timeline, its stretches moved by an_edges_refine()
 *
 * The awake time the power shows after an enter is still the episode's:
 * its end (and so its energy and awake time) follows the stretch's start;
 * the last one's ends where the power shows a suspend whose records never
 * came (an_tail_infer()).
 */
void an_wakeups_refine(struct an_wakeups *wk, const struct an_timeline *tl)
{
	for (size_t i = 0; i < wk->n; i++) {
		struct an_wakeup *w = &wk->w[i];

		if (w->end_susp >= 0 && (size_t)w->end_susp < tl->nsusp &&
		    tl->susp[w->end_susp].start > w->resume_t_ns)
			w->end_ns = tl->susp[w->end_susp].start;
		/* the last episode ends at a suspend the power inferred */
		else if (w->end_susp < 0 && tl->inferred_t > w->resume_t_ns &&
			 w->end_ns > tl->inferred_t)
			w->end_ns = tl->inferred_t;
	}
}

void an_wakeups_free(struct an_wakeups *wk)
{
	for (size_t i = 0; i < wk->n; i++)
		free(wk->w[i].blockers);
	free(wk->w);
	memset(wk, 0, sizeof(*wk));
}
