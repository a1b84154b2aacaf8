// SPDX-License-Identifier: GPL-2.0
/*
 * timeline.c - events, stats snapshots and stimuli -> who was active when.
 *
 * Events are read in the order the capture has them (per boot, the
 * module's log order), re-mapped onto host time with the offline clock
 * (clockfit.c): after an "enter" the target's clock jumped, so the events
 * that follow it use the segment in effect after that sleep (the one
 * holding the first exchange after the enter), events before any enter of
 * their boot the segment around their online host time.
 *
 * A blocker's state follows its block/unblock records (a repeated one
 * changes nothing, as in the module); the state is tracked over every
 * event, also those stamped before the capture started (the agent resends
 * its backlog), and the spans are clipped to the capture. A new boot ends
 * every activation and a suspended stretch.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis-internal.h"

static int64_t clip(int64_t t, int64_t lo, int64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

static struct an_blocker *blocker_get(struct an_timeline *tl,
				      const char *name)
{
	struct an_blocker *b;

	for (size_t i = 0; i < tl->nb; i++)
		if (!strcmp(tl->b[i].name, name))
			return &tl->b[i];
	if (an_grow((void **)&tl->b, &tl->cap, tl->nb + 1, sizeof(*tl->b)))
		return NULL;
	b = &tl->b[tl->nb++];
	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->kind = !strcmp(name, "main") || !strcmp(name, "unknown_wakeups") ?
		AN_KIND_BUILTIN : AN_KIND_SUSPEND_BLOCKER;
	b->active_since = -1;
	b->snap_active_t = -1;
	return b;
}

static int span_add(struct an_span **v, size_t *n, size_t *cap,
		    int64_t start, int64_t end)
{
	int ret;

	if (end <= start)
		return 0;
	ret = an_grow((void **)v, cap, *n + 1, sizeof(**v));
	if (ret)
		return ret;
	(*v)[(*n)++] = (struct an_span){ start, end };
	return 0;
}

static int block(struct an_timeline *tl, struct an_blocker *b, int64_t t)
{
	if (b->active_since < 0)
		b->active_since = t;
	return 0;
}

static int unblock(struct an_timeline *tl, struct an_blocker *b, int64_t t)
{
	int64_t s = b->active_since;

	if (s < 0 && !b->nspans && !b->activations)
		s = tl->start;	/* active before the capture: no block seen */
	if (s < 0)
		return 0;
	b->active_since = -1;
	b->activations = 1;	/* seen at all (recounted at the end) */
	return span_add(&b->spans, &b->nspans, &b->cap, clip(s, tl->start,
							       tl->end),
			clip(t, tl->start, tl->end));
}

/* ---- suspended stretches ------------------------------------------------ */

struct state {
	int64_t susp_since;	/* -1: awake */
	int64_t susp_unc;
	bool susp_enter;	/* the open stretch began at an enter */
	bool seen_platform;	/* an enter or exit of this boot was seen */
};

static int susp_end(struct an_timeline *tl, struct state *st, int64_t t,
		    int64_t unc, bool at_exit)
{
	int64_t s = st->susp_since;
	int ret;

	if (s < 0)
		return 0;
	st->susp_since = -1;
	s = clip(s, tl->start, tl->end);
	t = clip(t, tl->start, tl->end);
	if (t <= s)
		return 0;
	ret = an_grow((void **)&tl->susp_unc, &tl->susp_unc_cap, tl->nsusp + 1,
		      sizeof(*tl->susp_unc));
	if (!ret)
		ret = an_grow((void **)&tl->susp_edges, &tl->susp_edges_cap,
			      tl->nsusp + 1, sizeof(*tl->susp_edges));
	if (!ret)
		ret = an_grow((void **)&tl->susp, &tl->susp_cap, tl->nsusp + 1,
			      sizeof(*tl->susp));
	if (ret)
		return ret;
	tl->susp[tl->nsusp] = (struct an_span){ s, t };
	tl->susp_edges[tl->nsusp] = (st->susp_enter ? AN_EDGE_ENTER : 0) |
		(at_exit ? AN_EDGE_EXIT : 0);
	tl->susp_unc[tl->nsusp++] = st->susp_unc > unc ? st->susp_unc : unc;
	return 0;
}

/* ---- stats snapshots ------------------------------------------------------ */

/*
 * One pass over stats.tsv: a snapshot is a run of rows in which no name
 * comes twice. The first snapshot tells who is active at the start; each
 * blocker's first and last rows give the module's own deltas.
 */
static int read_stats(struct an_timeline *tl, struct sbrig_capread *cr)
{
	struct sbrig_blocker_stats row;
	char (*seen)[SBRIG_NAME_MAX] = NULL;
	size_t nseen = 0, seen_cap = 0;
	unsigned int snap = 0;
	int64_t t;
	int ret;

	while ((ret = sbrig_capread_next_stats(cr, &t, &row)) == 1) {
		struct an_stats_check *sc;
		struct an_blocker *b;
		bool again = false;

		for (size_t i = 0; i < nseen && !again; i++)
			again = !strcmp(seen[i], row.name);
		if (again || !nseen) {
			snap++;
			nseen = 0;
		}
		ret = an_grow((void **)&seen, &seen_cap, nseen + 1,
			      sizeof(*seen));
		if (ret)
			break;
		snprintf(seen[nseen++], SBRIG_NAME_MAX, "%s", row.name);
		if (!strcmp(row.name, "deleted_suspend_blockers"))
			continue;	/* not a blocker */
		b = blocker_get(tl, row.name);
		if (!b) {
			ret = -ENOMEM;
			break;
		}
		if (snap == 1 && row.active_since_ns > 0) {
			b->active_since = tl->start;
			b->snap_active_t = t;
		}
		sc = &b->stats;
		if (sc->snapshots && sc->last_snap == snap - 1 &&
		    (int64_t)row.count >= sc->last_count &&
		    row.total_time_ns >= sc->last_total_ns && t > sc->last_t) {
			/* the same object in two snapshots in a row */
			ret = span_add(&sc->win, &sc->nwin, &sc->win_cap,
				       sc->last_t, t);
			if (ret)
				break;
			sc->count_delta += (int64_t)row.count - sc->last_count;
			sc->total_delta_ns += row.total_time_ns -
				sc->last_total_ns;
		}
		sc->snapshots++;
		sc->last_snap = snap;
		sc->last_t = t;
		sc->last_count = (int64_t)row.count;
		sc->last_total_ns = row.total_time_ns;
		sc->max_time_ns = row.max_time_ns;
	}
	free(seen);
	return ret < 0 ? ret : 0;
}

/* ---- events --------------------------------------------------------------- */

static int note_skipped(struct an_timeline *tl, const char *type)
{
	for (size_t i = 0; i < tl->nskipped; i++) {
		if (!strcmp(tl->skipped[i].type, type)) {
			tl->skipped[i].n++;
			return 0;
		}
	}
	if (tl->nskipped == AN_ARRAY_SIZE(tl->skipped)) {
		tl->skipped_other++;
		return 0;
	}
	snprintf(tl->skipped[tl->nskipped].type, sizeof(tl->skipped[0].type),
		 "%s", type);
	tl->skipped[tl->nskipped++].n = 1;
	return 0;
}

static int add_event(struct an_event **v, size_t *n, size_t *cap,
		     int64_t t, int64_t unc, const char *arg, const char *who)
{
	int ret = an_grow((void **)v, cap, *n + 1, sizeof(**v));

	if (ret)
		return ret;
	(*v)[*n].t_ns = t;
	(*v)[*n].uncert_ns = unc;
	snprintf((*v)[*n].arg, sizeof((*v)[*n].arg), "%s", arg);
	snprintf((*v)[*n].who, sizeof((*v)[*n].who), "%s", who);
	(*n)++;
	return 0;
}

/* A new boot: every activation and a suspended stretch end at @t. */
static int boot_change(struct an_timeline *tl, struct state *st, int64_t t)
{
	int ret = susp_end(tl, st, t, 0, false);

	for (size_t i = 0; i < tl->nb && !ret; i++)
		if (tl->b[i].active_since >= 0)
			ret = unblock(tl, &tl->b[i], t);
	st->seen_platform = false;
	tl->boots++;
	return ret;
}

static int events_pass(struct an_timeline *tl, struct sbrig_capread *cr,
		       struct an_mapper *mp)
{
	struct state st = { .susp_since = -1 };
	char boot[SBRIG_BOOT_ID_MAX] = "", last_blocked[SBRIG_NAME_MAX] = "";
	struct sbrig_event ev;
	int ret;

	while ((ret = sbrig_capread_next_event(cr, &ev)) == 1) {
		int64_t t, unc;
		int k;

		ret = 0;
		tl->events++;
		if (strcmp(ev.boot_id, boot)) {
			if (boot[0]) {
				ret = boot_change(tl, &st, ev.host_t_ns);
				if (ret)
					return ret;
			} else {
				tl->boots++;
			}
			snprintf(boot, sizeof(boot), "%s", ev.boot_id);
			last_blocked[0] = '\0';
		}
		k = an_mapper_map(mp, &ev, &t, &unc);
		if (k < 0)
			tl->unmapped++;
		sbrig_log(SBRIG_LOG_DEBUG, "event %" PRIu64 " %s %s: segment %d, "
			  "host %" PRId64 " (online %" PRId64 "), +/- %" PRId64
			  " ns", ev.seq, ev.type, ev.arg, k, t, ev.host_t_ns, unc);
		if (unc > tl->max_uncert_ns)
			tl->max_uncert_ns = unc;

		if (!strcmp(ev.type, "block") || !strcmp(ev.type, "unblock")) {
			struct an_blocker *b = blocker_get(tl, ev.arg);

			if (!b)
				return -ENOMEM;
			if (!b->seen_event && b->snap_active_t >= 0 &&
			    t < b->snap_active_t && !b->nspans)
				b->active_since = -1;	/* see @snap_active_t */
			b->seen_event = true;
			if (ev.type[0] == 'b') {
				ret = block(tl, b, t);
				snprintf(last_blocked, sizeof(last_blocked), "%s",
					 ev.arg);
			} else {
				ret = unblock(tl, b, t);
			}
		} else if (!strcmp(ev.type, "enter")) {
			if (st.susp_since < 0) {
				st.susp_since = t;
				st.susp_unc = unc;
				st.susp_enter = true;
			}
			st.seen_platform = true;
		} else if (!strcmp(ev.type, "exit")) {
			if (!st.seen_platform && st.susp_since < 0) {
				/* the capture started with the target asleep */
				st.susp_since = tl->start;
				st.susp_unc = 0;
				st.susp_enter = false;
			}
			st.seen_platform = true;
			ret = susp_end(tl, &st, t, unc, true);
		} else if (!strcmp(ev.type, "resume")) {
			ret = add_event(&tl->resumes, &tl->nresumes,
					&tl->resumes_cap, t, unc, ev.arg, "");
		} else if (!strcmp(ev.type, "abort")) {
			ret = add_event(&tl->aborts, &tl->naborts,
					&tl->aborts_cap, t, unc, ev.arg,
					last_blocked);
		} else if (strcmp(ev.type, "suspend") &&
			   strcmp(ev.type, "policy") &&
			   strcmp(ev.type, "lost")) {
			ret = note_skipped(tl, ev.type);
		}
		if (ret)
			return ret;
	}
	if (ret < 0)
		return ret;
	/* what is still open ends with the capture */
	ret = susp_end(tl, &st, tl->end, 0, false);
	for (size_t i = 0; i < tl->nb && !ret; i++) {
		struct an_blocker *b = &tl->b[i];

		if (b->active_since < 0)
			continue;
		ret = unblock(tl, b, tl->end);
		b->active_at_end = true;
	}
	return ret;
}

static int read_events(struct an_timeline *tl, struct sbrig_capread *cr,
		       const struct an_clock *clk)
{
	struct an_mapper mp;
	int ret = an_mapper_init(&mp, clk, cr);

	if (!ret)
		ret = events_pass(tl, cr, &mp);
	an_mapper_free(&mp);
	return ret;
}

static int read_stimuli(struct an_timeline *tl, struct sbrig_capread *cr)
{
	struct sbrig_stimulus st;
	int ret;

	while ((ret = sbrig_capread_next_stimulus(cr, &st)) == 1) {
		struct an_stimulus *s;

		ret = an_grow((void **)&tl->stimuli, &tl->stimuli_cap,
			      tl->nstimuli + 1, sizeof(*tl->stimuli));
		if (ret)
			return ret;
		s = &tl->stimuli[tl->nstimuli++];
		s->t_ns = st.t_ns;
		snprintf(s->what, sizeof(s->what), "%s", st.what);
		snprintf(s->arg, sizeof(s->arg), "%s", st.arg);
	}
	return ret < 0 ? ret : 0;
}

/* Activations and times from the spans; the stats cross-check. */
static void summarise(struct an_timeline *tl)
{
	for (size_t i = 0; i < tl->nb; i++) {
		struct an_blocker *b = &tl->b[i];
		struct an_stats_check *sc = &b->stats;
		int64_t tol;

		b->activations = b->nspans;
		b->active_ns = 0;
		b->max_active_ns = 0;
		for (size_t j = 0; j < b->nspans; j++) {
			int64_t d = b->spans[j].end - b->spans[j].start;

			b->active_ns += d;
			if (d > b->max_active_ns)
				b->max_active_ns = d;
		}
		sc->events_count = 0;
		sc->events_active_ns = 0;
		for (size_t w = 0; w < sc->nwin; w++) {
			for (size_t j = 0; j < b->nspans; j++) {
				const struct an_span *s = &b->spans[j];
				int64_t lo = s->start > sc->win[w].start ?
					s->start : sc->win[w].start;
				int64_t hi = s->end < sc->win[w].end ? s->end :
					sc->win[w].end;

				if (s->start > sc->win[w].start &&
				    s->start <= sc->win[w].end)
					sc->events_count++;
				if (hi > lo)
					sc->events_active_ns += hi - lo;
			}
		}
		tol = 2000000 * (sc->events_count + (int64_t)sc->nwin) +
			2 * tl->max_uncert_ns;
		sc->agree = !sc->nwin ||
			(sc->count_delta == sc->events_count &&
			 llabs(sc->total_delta_ns - sc->events_active_ns) <= tol);
	}
}

/**
 * an_timeline_build() - who was active when, and the target's states
 * @tl: out (zeroed storage)
 * @cr: the capture
 * @clk: the offline clock model
 * @start: the capture's first instant
 *
 * The capture's end is not known yet (the samples are read after the
 * timeline): what is still open at the last event stays open (ends at
 * AN_OPEN_END) until an_timeline_finish().
 *
 * Return: 0, or -errno with sbrig_errmsg() naming file:line.
 */
int an_timeline_build(struct an_timeline *tl, struct sbrig_capread *cr,
		      const struct an_clock *clk, int64_t start)
{
	int ret;

	memset(tl, 0, sizeof(*tl));
	tl->start = start;
	tl->end = AN_OPEN_END;
	ret = read_stats(tl, cr);	/* first: who is active at the start */
	if (!ret)
		ret = read_events(tl, cr, clk);
	if (!ret)
		ret = read_stimuli(tl, cr);
	if (ret)
		an_timeline_free(tl);
	return ret;
}

static void clip_spans(struct an_span *v, size_t *n, int64_t end)
{
	size_t k = 0;

	for (size_t i = 0; i < *n; i++) {
		if (v[i].end > end)
			v[i].end = end;
		if (v[i].end > v[i].start)
			v[k++] = v[i];
	}
	*n = k;
}

/**
 * an_timeline_finish() - the capture ends at @end: clip, then summarise
 * @tl: the timeline
 * @end: the capture's last instant
 */
void an_timeline_finish(struct an_timeline *tl, int64_t end)
{
	size_t n;

	tl->end = end;
	for (size_t i = 0; i < tl->nb; i++)
		clip_spans(tl->b[i].spans, &tl->b[i].nspans, end);
	n = 0;
	for (size_t i = 0; i < tl->nsusp; i++) {
		if (tl->susp[i].end > end) {
			tl->susp[i].end = end;
			tl->susp_edges[i] &= ~AN_EDGE_EXIT;
		}
		if (tl->susp[i].end > tl->susp[i].start) {
			tl->susp_unc[n] = tl->susp_unc[i];
			tl->susp_edges[n] = tl->susp_edges[i];
			tl->susp[n++] = tl->susp[i];
		}
	}
	tl->nsusp = n;
	summarise(tl);
}

bool an_timeline_suspended(const struct an_timeline *tl, int64_t t)
{
	for (size_t i = 0; i < tl->nsusp; i++)
		if (t >= tl->susp[i].start && t < tl->susp[i].end)
			return true;
	return false;
}

void an_timeline_free(struct an_timeline *tl)
{
	for (size_t i = 0; i < tl->nb; i++) {
		free(tl->b[i].spans);
		free(tl->b[i].stats.win);
	}
	free(tl->b);
	free(tl->susp);
	free(tl->susp_unc);
	free(tl->susp_edges);
	free(tl->resumes);
	free(tl->aborts);
	free(tl->stimuli);
	memset(tl, 0, sizeof(*tl));
}
