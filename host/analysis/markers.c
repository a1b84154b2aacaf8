// SPDX-License-Identifier: GPL-2.0
/*
 * markers.c - the marker line offline: edges.tsv paired again with the
 * events that drove it.
 *
 * Online, the daemon pairs each edge with its event as the event arrives,
 * mapped with the link's model of the moment, and writes the pair into
 * clock.tsv. Offline the whole capture is known: the events are mapped
 * with the clock fitted over every ping (clockfit.c), fed to libsbrig's
 * sbrig_marker (sbrig/marker.h) together with the edges in host-time
 * order, and the pairs it finds join the pings for a second fit
 * (an_clock_add_markers()). The daemon's own pairs are then left out of
 * the fit (an_clock_fit(..., false)), so that no edge counts twice.
 *
 * The rising edges are kept: a wakeup's latency runs to the first one
 * after its stimulus (wakeups.c, report-format.md section 3).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-clock.h"
#include "an-markers.h"

#define MARKER_LINE		"marker"	/* sbrig_config's line name */
#define MARKER_WINDOW_NS	2000000LL	/* as the daemon's pairing */

static int cmp_edge(const void *x, const void *y)
{
	const struct sbrig_edge *a = x, *b = y;

	return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

/**
 * an_markers_read() - the marker edges of a capture
 * @mk: out (zeroed storage)
 * @cr: the capture (edges.tsv is rewound)
 *
 * Return: 0, or -errno with sbrig_errmsg() naming edges.tsv's line.
 */
int an_markers_read(struct an_markers *mk, struct sbrig_capread *cr)
{
	struct sbrig_edge e;
	int ret;

	memset(mk, 0, sizeof(*mk));
	while ((ret = sbrig_capread_next_edge(cr, &e)) == 1) {
		if (strcmp(e.line, MARKER_LINE))
			continue;
		ret = an_grow((void **)&mk->e, &mk->ecap, mk->edges + 1,
			      sizeof(*mk->e));
		if (ret)
			goto out;
		mk->e[mk->edges++] = e;
	}
	if (ret < 0)
		goto out;
	if (mk->edges)
		qsort(mk->e, mk->edges, sizeof(*mk->e), cmp_edge);
	for (size_t i = 0; i < mk->edges; i++) {
		if (!mk->e[i].rising)
			continue;
		ret = an_grow((void **)&mk->rise, &mk->rise_cap, mk->nrise + 1,
			      sizeof(*mk->rise));
		if (ret)
			goto out;
		mk->rise[mk->nrise++] = mk->e[i].t_ns;
	}
	ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_EDGES);
out:
	if (ret < 0)
		an_markers_free(mk);
	return ret < 0 ? ret : 0;
}

struct pairs {
	struct sbrig_marker_pair *p;
	size_t n, cap;
};

static int drain(struct sbrig_marker *m, struct pairs *pp)
{
	struct sbrig_marker_pair p;
	int ret;

	while (sbrig_marker_next_pair(m, &p) == 1) {
		ret = an_grow((void **)&pp->p, &pp->cap, pp->n + 1,
			      sizeof(*pp->p));
		if (ret)
			return ret;
		pp->p[pp->n++] = p;
	}
	return 0;
}

/*
 * Feed the events (in log order, mapped with @clk) and the edges (in time
 * order) to @m, each edge before the first event mapped after it. A new
 * boot starts the pairing afresh, as the daemon does, once the edges the
 * old boot's last event can still pair with are in.
 */
static int pair_all(struct sbrig_marker *m, struct pairs *pp,
		    const struct an_markers *mk, const struct an_clock *clk,
		    struct sbrig_capread *cr)
{
	struct an_mapper mp;
	struct sbrig_event ev;
	char boot[SBRIG_BOOT_ID_MAX] = "";
	int64_t tail = INT64_MIN;	/* the last event's pairing reach */
	size_t j = 0;
	int ret = an_mapper_init(&mp, clk, cr);

	if (ret)
		return ret;
	while ((ret = sbrig_capread_next_event(cr, &ev)) == 1) {
		int64_t t, unc;

		an_mapper_map(&mp, &ev, &t, &unc);
		if (strcmp(ev.boot_id, boot)) {
			while (boot[0] && j < mk->edges && mk->e[j].t_ns <= tail)
				sbrig_marker_add_edge(m, &mk->e[j++]);
			ret = drain(m, pp);
			if (ret)
				break;
			sbrig_marker_reset(m);
			snprintf(boot, sizeof(boot), "%s", ev.boot_id);
		}
		while (j < mk->edges && mk->e[j].t_ns <= t)
			sbrig_marker_add_edge(m, &mk->e[j++]);
		ev.host_t_ns = t;
		ev.uncert_ns = unc;
		sbrig_marker_add_event(m, &ev);
		ret = drain(m, pp);
		if (ret)
			break;
		tail = t + MARKER_WINDOW_NS + (unc > 0 ? unc : 0);
	}
	while (!ret && j < mk->edges) {
		sbrig_marker_add_edge(m, &mk->e[j++]);
		ret = drain(m, pp);
	}
	an_mapper_free(&mp);
	if (ret < 0)
		return ret;
	return sbrig_capread_rewind(cr, SBRIG_CAPFILE_EVENTS);
}

/**
 * an_markers_pair() - pair the marker edges offline and fit the clock again
 * @mk: the marker edges (an_markers_read()); @mk->pairs is set
 * @clk: the clock fitted from the pings; fitted again with the pairs
 * @cr: the capture (events.tsv is read and rewound)
 *
 * Return: 0, or -errno with sbrig_errmsg() set.
 */
int an_markers_pair(struct an_markers *mk, struct an_clock *clk,
		    struct sbrig_capread *cr)
{
	struct pairs pp = { 0 };
	struct sbrig_marker *m;
	int ret;

	mk->pairs = 0;
	if (!mk->edges)
		return 0;
	m = sbrig_marker_new(MARKER_WINDOW_NS);
	if (!m)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	ret = pair_all(m, &pp, mk, clk, cr);
	if (!ret)
		ret = an_clock_add_markers(clk, pp.p, pp.n);
	if (!ret)
		mk->pairs = pp.n;
	sbrig_marker_free(m);
	free(pp.p);
	return ret;
}

int64_t an_markers_rise_in(const struct an_markers *mk, int64_t from,
			   int64_t to)
{
	size_t lo = 0, hi = mk->nrise;

	while (lo < hi) {	/* the first at or after @from */
		size_t mid = lo + (hi - lo) / 2;

		if (mk->rise[mid] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < mk->nrise && mk->rise[lo] <= to ? mk->rise[lo] : -1;
}

void an_markers_free(struct an_markers *mk)
{
	free(mk->e);
	free(mk->rise);
	memset(mk, 0, sizeof(*mk));
}
