// SPDX-License-Identifier: GPL-2.0
/*
 * findings.c - what went wrong, ranked (report-format.md, "Findings").
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-results.h"
#include "an-timeline.h"

/* rank of each kind: the order of the table in report-format.md */
enum {
	R_LEAK, R_ABORT, R_UNKNOWN, R_DOMINANT, R_SHORT, R_INFERRED,
	R_UNKNOWN_END, R_GAP, R_LOST, R_CLOCK, R_STATS, R_SKIPPED,
};

static const char *const kinds[] = {
	[R_LEAK] = "leak", [R_ABORT] = "aborted_suspend",
	[R_UNKNOWN] = "unknown_wakeup", [R_DOMINANT] = "dominant",
	[R_SHORT] = "short_suspend", [R_INFERRED] = "inferred_suspend",
	[R_UNKNOWN_END] = "unknown_end", [R_GAP] = "gap",
	[R_LOST] = "lost_events",
	[R_CLOCK] = "clock_uncertainty",
	[R_STATS] = "stats_mismatch", [R_SKIPPED] = "skipped_events",
};

static int add(struct an_findings *fd, int rank, const char *blocker,
	       int64_t t, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int add(struct an_findings *fd, int rank, const char *blocker,
	       int64_t t, const char *fmt, ...)
{
	struct an_finding *f;
	va_list ap;
	int ret;

	ret = an_grow((void **)&fd->f, &fd->cap, fd->n + 1, sizeof(*fd->f));
	if (ret)
		return ret;
	f = &fd->f[fd->n++];
	f->rank = rank;
	snprintf(f->kind, sizeof(f->kind), "%s", kinds[rank]);
	snprintf(f->blocker, sizeof(f->blocker), "%s", blocker ? blocker : "");
	f->t_ns = t;
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
	return 0;
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct an_finding *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static int leaks(struct an_findings *fd, const struct an_timeline *tl,
		 int64_t leak_ns)
{
	int ret = 0;

	for (size_t i = 0; i < tl->nb && !ret; i++) {
		const struct an_blocker *b = &tl->b[i];
		int64_t held;

		if (!b->active_at_end || !b->nspans ||
		    !strcmp(b->name, "main"))	/* state=on: asked for */
			continue;
		held = b->spans[b->nspans - 1].end - b->spans[b->nspans - 1].start;
		if (held >= leak_ns)
			ret = add(fd, R_LEAK, b->name, tl->end, "still active at "
				  "the end of the capture, held %.1f s (leak_s "
				  "%.0f s)", secs(held), secs(leak_ns));
	}
	return ret;
}

static int unknown_wakeups(struct an_findings *fd,
			   const struct an_timeline *tl,
			   const struct an_wakeups *wk)
{
	uint64_t module = 0;

	for (size_t i = 0; i < tl->nb; i++)
		if (!strcmp(tl->b[i].name, "unknown_wakeups"))
			module = tl->b[i].activations;
	if (!wk->unknown && !module)
		return 0;
	if (!wk->unknown)
		return add(fd, R_UNKNOWN, "unknown_wakeups", tl->start, "the "
			   "module counted %" PRIu64 " wakeup(s) no blocker "
			   "claimed (a wakeup source with no blocker of its own)",
			   module);
	return add(fd, R_UNKNOWN, module ? "unknown_wakeups" : NULL, tl->start,
		   "%" PRIu64 " resume(s) no stimulus of the rig explains (the "
		   "target woke by itself); the module counted %" PRIu64
		   " wakeup(s) no blocker claimed", wk->unknown, module);
}

/*
 * The capture's end: a last suspend whose records never came, inferred
 * by the power (tail.c), or an end nothing tells about
 */
static int ending(struct an_findings *fd, const struct an_timeline *tl)
{
	char names[200] = "";
	size_t len = 0;

	if (tl->end_state == AN_END_UNKNOWN && tl->last_word >= 0 &&
	    tl->end - tl->last_word > AN_SILENT_END_NS)
		return add(fd, R_UNKNOWN_END, NULL, tl->last_word, "the "
			   "target fell silent %.3f s before the capture's end "
			   "(no record, snapshot or answered ping after %.3f s), "
			   "and nothing tells whether it slept (%s): its last "
			   "records may be missing; counted awake, as the log "
			   "has it", secs(tl->end - tl->last_word),
			   secs(an_sat_sub(tl->last_word, tl->start)),
			   tl->sleep_level_uW < 0 ? "no earlier suspended "
			   "stretch gives the sleep level" :
			   tl->tail_never_above ? "its supply never rose "
			   "above the sleep level after it: the power cannot "
			   "tell its waking from its sleep" : "too few samples "
			   "after it, or too many to hold");
	if (tl->end_state != AN_END_INFERRED)
		return 0;
	for (size_t i = 0; i < tl->nb && len < sizeof(names); i++) {
		int n;

		if (!tl->b[i].tail_released)
			continue;
		n = snprintf(names + len, sizeof(names) - len, "%s%s",
			     len ? ", " : "", tl->b[i].name);
		len = n < 0 ? sizeof(names) : len + (size_t)n;
	}
	return add(fd, R_INFERRED, NULL, tl->inferred_t, "the capture ended "
		   "with the target asleep: its last suspend's records never "
		   "came; suspended by the power from %.3f s to the end "
		   "(%.3f s, at or below %.3f mW)%s%s",
		   secs(an_sat_sub(tl->inferred_t, tl->start)),
		   secs(an_sat_sub(tl->end, tl->inferred_t)),
		   tl->sleep_level_uW / 1000.0,
		   names[0] ? "; released there: " : "", names);
}

static int dominant(struct an_findings *fd, const struct an_timeline *tl)
{
	double sum = 0;

	for (size_t i = 0; i < tl->nb; i++)
		sum += tl->b[i].energy_uJ;
	if (sum <= 0)
		return 0;
	for (size_t i = 0; i < tl->nb; i++) {
		double share = tl->b[i].energy_uJ / sum;

		if (share >= 0.5 && tl->nb > 1)
			return add(fd, R_DOMINANT, tl->b[i].name, tl->start,
				   "%.0f %% of the energy attributed to blockers "
				   "(%.3f mJ of %.3f mJ)", share * 100,
				   tl->b[i].energy_uJ / 1000, sum / 1000);
	}
	return 0;
}

/*
 * One finding for the gaps; a lost tail (the sensor's last buffer at the
 * stop) is named first: the capture ends before the measurement did.
 */
static int gaps(struct an_findings *fd, const struct an_energy *en)
{
	const struct an_gap *tail = NULL;
	int64_t d = 0;
	double lo = 0, hi = 0;
	char first[160] = "";

	if (!en->ngaps)
		return 0;
	for (size_t i = 0; i < en->ngaps; i++) {
		if (en->gaps[i].at_stop)
			tail = &en->gaps[i];
		d += en->gaps[i].duration_ns;
		lo += en->gaps[i].hidden_min_uJ;
		hi += en->gaps[i].hidden_max_uJ;
	}
	if (tail)
		snprintf(first, sizeof(first), "the sensor's last %.0f ms "
			 "before the stop were not delivered (the capture ends "
			 "early); ", (double)tail->duration_ns / 1e6);
	return add(fd, R_GAP, NULL, en->gaps[0].t_ns, "%s%zu gap(s), %.3f s "
		   "of samples missing (%" PRIu64 " samples); the energy not "
		   "measured there is between %.3f and %.3f mJ", first,
		   en->ngaps, secs(d), en->missing, lo / 1000, hi / 1000);
}

static int clock(struct an_findings *fd, const struct an_timeline *tl,
		 const struct an_wakeups *wk)
{
	size_t bad = 0;
	int64_t worst = 0, t = tl->start;
	int ret = 0;

	for (size_t i = 0; i < wk->n; i++) {
		int64_t lat = wk->w[i].latency_ns;

		if (wk->w[i].cause != AN_CAUSE_STIMULUS)
			continue;

		if (wk->w[i].uncert_ns * 10 >= llabs(lat)) {
			if (!bad++ || wk->w[i].uncert_ns > worst)
				t = wk->w[i].t_ns;
			if (wk->w[i].uncert_ns > worst)
				worst = wk->w[i].uncert_ns;
		}
	}
	if (bad)
		ret = add(fd, R_CLOCK, NULL, t, "%zu wakeup latenc%s known to "
			  "10 %% or worse (the largest uncertainty %.3f ms): the "
			  "target's clock was not seen often enough around them",
			  bad, bad == 1 ? "y" : "ies", (double)worst / 1e6);
	if (!ret && tl->unmapped)
		ret = add(fd, R_CLOCK, NULL, tl->start, "%" PRIu64 " event(s) "
			  "with no clock exchange in their suspend cycle keep the "
			  "online host time (uncertainty up to %.3f ms)",
			  tl->unmapped, (double)tl->max_uncert_ns / 1e6);
	return ret;
}

/**
 * an_findings_collect() - rank what went wrong
 * @fd: out (zeroed storage)
 * @tl: the timeline
 * @wk: the wakeups
 * @en: the energies
 * @leak_ns: the leak threshold
 *
 * Return: 0 or -ENOMEM.
 */
int an_findings_collect(struct an_findings *fd, const struct an_timeline *tl,
			const struct an_wakeups *wk,
			const struct an_energy *en, const struct an_costs *co,
			int64_t leak_ns)
{
	int ret;

	memset(fd, 0, sizeof(*fd));
	ret = leaks(fd, tl, leak_ns);
	for (size_t i = 0; i < tl->naborts && !ret; i++) {
		const struct an_event *a = &tl->aborts[i];

		ret = add(fd, R_ABORT, a->who[0] ? a->who : NULL, a->t_ns,
			  "suspend aborted (%s)%s%s", a->arg,
			  a->who[0] ? "; blocked last before it: " : "",
			  a->who);
	}
	if (!ret)
		ret = unknown_wakeups(fd, tl, wk);
	if (!ret)
		ret = dominant(fd, tl);
	for (size_t i = 0; i < co->n && !ret; i++) {
		const struct an_cost *c = &co->c[i];

		if (c->break_even_ns < 0 || c->suspended_ns >= c->break_even_ns)
			continue;
		ret = add(fd, R_SHORT, NULL, tl->susp[c->susp].start,
			  "suspended %.3f s, shorter than its break-even "
			  "%.3f s: staying awake idle would have cost less",
			  secs(c->suspended_ns), secs(c->break_even_ns));
	}
	if (!ret)
		ret = ending(fd, tl);
	if (!ret)
		ret = gaps(fd, en);
	if (!ret && tl->lost_lines)
		ret = add(fd, R_LOST, NULL, tl->lost_first_t, "%" PRIu64
			  " record(s) of the event log lost, in %" PRIu64
			  " place(s), the first at %.3f s: the blockers' states "
			  "are taken again from the next stats snapshot%s",
			  tl->lost_records, tl->lost_lines,
			  secs(an_sat_sub(tl->lost_first_t, tl->start)),
			  tl->anon_records ? " (counted per name: without "
			  "object ids, which object of a name ended is a guess)" :
			  "");
	if (!ret)
		ret = clock(fd, tl, wk);
	for (size_t i = 0; i < tl->nb && !ret; i++) {
		const struct an_stats_check *sc = &tl->b[i].stats;

		if (sc->agree)
			continue;
		ret = add(fd, R_STATS, tl->b[i].name, sc->last_t, "the module "
			  "counted %" PRId64 " activation(s) and %.3f s active "
			  "between its stats snapshots, the events %"
			  PRId64 " and %.3f s", sc->count_delta,
			  secs(sc->total_delta_ns), sc->events_count,
			  secs(sc->events_active_ns));
	}
	if (!ret && (tl->nskipped || tl->skipped_other)) {
		char list[300] = "";
		size_t off = 0;

		for (size_t i = 0; i < tl->nskipped && off < sizeof(list); i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s%s x%" PRIu64, i ? ", " : "",
						tl->skipped[i].type,
						tl->skipped[i].n);
		ret = add(fd, R_SKIPPED, NULL, tl->start, "event types this "
			  "analysis does not know, skipped: %s%s", list,
			  tl->skipped_other ? ", and more" : "");
	}
	if (ret) {
		an_findings_free(fd);
		return ret;
	}
	if (fd->n)
		qsort(fd->f, fd->n, sizeof(*fd->f), cmp_finding);
	return 0;
}

void an_findings_free(struct an_findings *fd)
{
	free(fd->f);
	memset(fd, 0, sizeof(*fd));
}
