/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-markers.h - the marker line of a capture, private to
 * host/analysis/: edges.tsv's marker edges paired again with the events
 * (more clock samples) and the rising edges for the wakeups (markers.c).
 */
#ifndef SBRIG_AN_MARKERS_H
#define SBRIG_AN_MARKERS_H

#include <stddef.h>
#include <stdint.h>

#include <sbrig/capture-read.h>
#include <sbrig/marker.h>

struct an_clock;


/**
 * struct an_markers - the marker line of a capture (edges.tsv)
 * @e: its edges, in time order
 * @edges, @ecap: their number, allocated
 * @rise: host times of the rising edges, in time order
 * @nrise, @rise_cap: their number, allocated
 * @pairs: edges paired with an event offline
 */
struct an_markers {
	struct sbrig_edge *e;
	size_t edges, ecap;
	int64_t *rise;
	size_t nrise, rise_cap;
	uint64_t pairs;
};

/* Read edges.tsv's marker edges. 0 or -errno. */
int an_markers_read(struct an_markers *mk, struct sbrig_capread *cr);
/*
 * Pair the marker edges with the events' transitions (events mapped with
 * @clk), then fit @clk again with the pairs added. 0 or -errno.
 */
int an_markers_pair(struct an_markers *mk, struct an_clock *clk,
		    struct sbrig_capread *cr);
/* The first rising edge in [@from, @to], or -1. */
int64_t an_markers_rise_in(const struct an_markers *mk, int64_t from,
			   int64_t to);
void an_markers_free(struct an_markers *mk);

#endif /* SBRIG_AN_MARKERS_H */
