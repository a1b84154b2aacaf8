/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-clock.h - the offline clock model, private to host/analysis/:
 * clock.tsv's segments, each a fitted offset + drift (clockfit.c), the
 * mapping of events onto host time with them, and the epochs that no
 * exchange saw, placed by the power (place.c).
 */
#ifndef SBRIG_AN_CLOCK_H
#define SBRIG_AN_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/capture-read.h>
#include <sbrig/marker.h>
#include <sbrig/records.h>
#include <sbrig/sbrig.h>

/**
 * struct an_segment - exchanges between two jumps of the offset
 * @host_first: host time of its first exchange
 * @host_last: host time of its last exchange
 * @host_last_lo: the earliest its last exchange's target time can be on
 *	the host (its ping's send; a marker pair's edge less its window)
 * @t_first: target time of its first exchange
 * @t_last: target time of its last exchange
 * @offset_ns: fitted host - target at @t_ref
 * @t_ref: reference target time of the fit
 * @drift: fitted rate (host ns per target ns, minus 1)
 * @min_half_ns: smallest half-width of a retained exchange
 * @max_resid_ns: largest |residual| of a retained exchange
 * @max_marker_resid_ns: largest |residual| of a marker pair
 * @t_marker_first, @t_marker_last: target times of its first and last
 *	marker pair
 * @n: exchanges retained (in the fit: not spikes, not outliers)
 * @markers: of which marker pairs
 * @drift_clamped: the fitted drift was beyond +/- 200 ppm, clamped
 * @s_first, @s_end: its samples, [@s_first, @s_end) of an_clock.s
 */
struct an_segment {
	int64_t host_first, host_last, host_last_lo;
	int64_t t_first, t_last;
	double offset_ns;
	int64_t t_ref;
	double drift;
	int64_t min_half_ns;
	int64_t max_resid_ns;
	int64_t max_marker_resid_ns;
	int64_t t_marker_first, t_marker_last;
	unsigned int n;
	unsigned int markers;
	bool drift_clamped;
	size_t s_first, s_end;
};

/**
 * struct an_clock_resid - how far the used samples of one kind lie from
 *	their segment's fit (the alignment error the mapping keeps)
 * @n: samples
 * @median_ns: median |residual|, -1 without samples
 * @p95_ns: 95th percentile (nearest rank), -1 without samples
 */
struct an_clock_resid {
	size_t n;
	int64_t median_ns, p95_ns;
};

/* the half-width of a marker edge's time (the GPIO path's spread) */
#define AN_MARKER_HALF_NS	100000

struct an_clock_sample;	/* one exchange or marker pair (clockfit.c) */

/**
 * struct an_clock - the offline clock model
 * @seg: its segments, in host-time order
 * @s: the samples they were fitted from (kept for a refit)
 * @marker_rows: clock.tsv's marker rows taken (the daemon's pairs)
 * @marker_rows_skipped: those left out (the edges are paired offline)
 * @marker_pairs: pairs added by an_clock_add_markers()
 * @spikes: samples off the line whose next one is back on the line
 *	before them (left out)
 * @outliers: samples beyond 3 half-widths of their segment's fit (left out)
 * @resid: the residuals of the pings [0] and marker pairs [1]
 */
struct an_clock {
	struct an_segment *seg;
	size_t nseg, cap;
	struct an_clock_sample *s;
	size_t ns, scap;
	uint64_t marker_rows, marker_rows_skipped;
	uint64_t marker_pairs;
	uint64_t spikes, outliers;
	struct an_clock_resid resid[2];
};

/*
 * Read clock.tsv and fit its segments; @marker_rows: take its marker rows
 * too. 0 or -errno.
 */
int an_clock_fit(struct an_clock *c, struct sbrig_capread *cr,
		 bool marker_rows);
/* Add @n marker pairs (sorted in place) and fit again. 0 or -ENOMEM. */
int an_clock_add_markers(struct an_clock *c, struct sbrig_marker_pair *p,
			 size_t n);
/* The segment whose host span is nearest @host_ns; -1 if none. */
int an_clock_segment_at(const struct an_clock *c, int64_t host_ns);
/* The segment holding the first exchange after @host_ns; -1 if none. */
int an_clock_segment_after(const struct an_clock *c, int64_t host_ns);
/* Map @target_ns with segment @k. */
void an_clock_map(const struct an_clock *c, int k, int64_t target_ns,
		  int64_t *host_ns, int64_t *uncert_ns);
void an_clock_free(struct an_clock *c);

/**
 * struct an_mapper - maps events in events.tsv's order onto host time
 * @clk: the clock
 * @enters: online host times of the enters, in log order (no earlier than
 *	the earliest time of an event logged before them)
 * @n, @cap: their number, allocated
 * @next: the next enter to come
 * @enter_online: online host time of the last enter of this boot, or -1
 * @boot: the boot of the last event mapped
 *
 * The rule of report-format.md (section 1, Clock): an event is mapped with
 * the segment in effect after the last enter before it in its boot.
 */
struct an_mapper {
	const struct an_clock *clk;
	int64_t *enters;
	size_t n, cap;
	size_t next;
	int64_t enter_online;
	char boot[SBRIG_BOOT_ID_MAX];
	struct an_epoch *ep;	/* n + 1 epochs (place.c) */
	size_t epcap;
	bool past_exit;		/* the current epoch's exit was mapped */
	int64_t lb;		/* the latest earliest time so far, this boot */
};

/* an_mapper_map()'s answer for an event placed by the power (place.c) */
#define AN_SEG_PLACED	(-2)

/**
 * struct an_epoch - the events from one enter to the next, for place.c
 * @exit_t: target time of its first exit, or -1
 * @enter_t: target time of the enter that ends it, or -1
 * @online_first: the earliest its first event with an online time can
 *	be (host - uncertainty)
 * @online_last: the latest its last event with an online time can be
 * @boot: which boot of the log (counted from 0); a boot that changes
 *	inside the epoch makes @exit_t -1
 * @online: one of its events has an online host time
 * @placed: placed by the power: host = target + @offset +/- @uncert
 */
struct an_epoch {
	int64_t exit_t, enter_t;
	int64_t online_first, online_last;
	unsigned int boot;
	bool online;
	bool placed;
	int64_t offset, uncert;
};

/* Place the epochs with no online time by the power. 0 or -errno. */
int an_place_epochs(struct an_epoch *ep, size_t n, struct sbrig_capread *cr);

/* Read the enters (events.tsv, rewound). 0 or -errno. */
int an_mapper_init(struct an_mapper *mp, const struct an_clock *clk,
		   struct sbrig_capread *cr);
/*
 * Map the next event: the segment used, AN_SEG_PLACED (placed by the
 * power), or -1 (online time kept).
 */
int an_mapper_map(struct an_mapper *mp, const struct sbrig_event *ev,
		  int64_t *host_ns, int64_t *uncert_ns);
void an_mapper_free(struct an_mapper *mp);

#endif /* SBRIG_AN_CLOCK_H */
