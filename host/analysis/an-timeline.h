/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-timeline.h - the timeline of a capture, private to host/analysis/:
 * events + stats + stimuli -> blockers with their active spans, suspended
 * spans, resumes, aborts, boots (timeline.c), the suspended spans' ends
 * refined by the power (edges.c).
 */
#ifndef SBRIG_AN_TIMELINE_H
#define SBRIG_AN_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/capture-read.h>
#include <sbrig/sbrig.h>

#include "an-base.h"

struct an_clock;


enum an_kind {
	AN_KIND_SUSPEND_BLOCKER,
	AN_KIND_WAKEUP_SOURCE,
	AN_KIND_BUILTIN,
};

/** struct an_snap_active - a snapshot's rows of a name with an active object */
struct an_snap_active {
	unsigned int snap;	/* 1, 2, ...: index into @snap_t + 1 */
	unsigned int active;
};

/**
 * struct an_stats_check - the module's statistics next to the events'
 * @snapshots: stats snapshots that had this name
 * @last_snap, @last_t, @last_count, @last_total_ns, @last_rows: its rows
 *	in the last snapshot that had it (count and total_time summed over
 *	the rows: one row per object of the name)
 * @acc_snap, @acc_t, @acc_count, @acc_total_ns, @acc_rows, @acc_max_ns,
 *	@acc_active: while reading: the same for the snapshot being read
 *	(@acc_active: its rows with an active object)
 * @active, @nactive, @active_cap: the snapshots in which objects of the
 *	name were active, and how many (to re-synchronise after "lost")
 * @win: the windows between two consecutive snapshots that both had it,
 *	as the same objects (as many rows, and the summed count and
 *	total_time did not go back: a blocker destroyed and created again
 *	under its name starts from 0)
 * @nwin, @win_cap: their number, allocated
 * @count_delta, @total_delta_ns: the module's deltas summed over @win
 * @max_time_ns: the largest max_time of the name's rows in the last
 *	snapshot
 * @events_count, @events_active_ns: what the events show over @win
 *	(object activations, and the objects' active times summed)
 * @events_edge: of @events_count's activations, or of those just outside
 *	a window, how many began within the clock's uncertainty of a
 *	snapshot's time (the window they belong to is not known)
 * @agree: the two agree (report-format.md)
 */
struct an_stats_check {
	unsigned int snapshots;
	unsigned int last_snap;
	int64_t last_t, last_count, last_total_ns;
	unsigned int last_rows;
	unsigned int acc_snap;
	int64_t acc_t, acc_count, acc_total_ns, acc_max_ns;
	unsigned int acc_rows, acc_active;
	struct an_snap_active *active;	/* snapshots with rows active */
	size_t nactive, active_cap;
	struct an_span *win;
	size_t nwin, win_cap;
	int64_t count_delta;
	int64_t total_delta_ns;
	int64_t max_time_ns;
	int64_t events_count;
	int64_t events_active_ns;
	int64_t events_edge;
	bool agree;
};

/** struct an_open - an object active now (while building the timeline) */
struct an_open {
	int64_t t;
	uint64_t id;
	uint64_t epoch;
};

/**
 * struct an_object - a blocker object known by its id (events.tsv obj)
 * @id: the module's id (0: a free entry of the table)
 * @b: its name's index in the timeline's blockers
 * @slot: its index in that blocker's @open, or SIZE_MAX while inactive
 */
struct an_object {
	uint64_t id;
	size_t b;
	size_t slot;
};

/**
 * struct an_blocker - one name of the capture: a suspend blocker name (any
 *	number of objects may share it: every evdev client's is "evdev") or
 *	a kernel wakeup source's
 * @name: its name (as the log has it)
 * @kind: see enum an_kind
 * @spans: when the name was active (any of its objects), in time order,
 *	disjoint, clipped to the capture
 * @ospans: the objects' active spans (a block record paired with an
 *	unblock record of the name; which object is which does not matter
 *	for counts and summed times), in the order they ended
 * @open: the objects known by id active now (while building): when each
 *	began, its id and the timeline's @lost_epoch when a record last said
 *	it was active
 * @anon: the objects active now not known by id (a capture without ids,
 *	the first snapshot's, a re-synchronisation's), last opened last
 * @ids: a block/unblock record of the name carried an object id
 * @snap_active: objects the first stats snapshot showed active (so
 *	active from the capture's start), until the name's first event
 * @snap_active_t: host time of that snapshot, or -1; the name's first
 *	event, when it comes earlier, cancels @snap_active (the snapshot was
 *	taken after the capture had seen the objects become active)
 * @seen_event: a record of the name has been read
 * @activations: object activations (@nospans)
 * @active_ns, @max_active_ns: from @spans
 * @active_at_end: the last span runs to the capture's end
 * @tail_released: it was active when the power shows the target going
 *	to sleep after the last record, and ends there (tail.c)
 * @energy_uJ, @exclusive_uJ, @share_ns: the integration's shares
 *	(@share_ns: duration divided among the active ones, for the
 *	above-baseline figure)
 * @stats: the cross-check with the module's statistics
 */
struct an_blocker {
	char name[SBRIG_NAME_MAX];
	enum an_kind kind;
	struct an_span *spans;
	size_t nspans, cap;
	struct an_span *ospans;
	size_t nospans, ocap;
	struct an_open *open;
	size_t nopen, open_cap;
	struct an_open *anon;
	size_t nanon, anon_cap;
	bool ids;
	unsigned int snap_active;
	int64_t snap_active_t;
	bool seen_event;
	uint64_t activations;
	int64_t active_ns, max_active_ns;
	bool active_at_end;
	bool tail_released;
	double energy_uJ, exclusive_uJ;
	double share_ns;
	struct an_stats_check stats;
};

/*
 * where an event's host time comes from (report-format.md, "Wakeups":
 * resume_from): the clock's model (or the online time), the power (an
 * epoch placed by place.c), or only a lower bound (an event with no time
 * at all, or one the log put before the capture's start, clamped to it)
 */
enum an_time_from {
	AN_FROM_CLOCK,
	AN_FROM_PLACED,
	AN_FROM_BOUNDED,
};

/**
 * struct an_event - an event of interest, mapped
 * @t_ns: host time, never before the capture's start
 * @uncert_ns: its uncertainty
 * @from: where @t_ns comes from (enum an_time_from)
 * @arg: the event's argument (resume 0, abort -16)
 * @who: abort: the blocker blocked last before it in its boot ("" none)
 */
struct an_event {
	int64_t t_ns;
	int64_t uncert_ns;
	enum an_time_from from;
	char arg[SBRIG_NAME_MAX];
	char who[SBRIG_NAME_MAX];
};

/** struct an_stimulus - what the rig did */
struct an_stimulus {
	int64_t t_ns;
	char what[16];
	char arg[SBRIG_NAME_MAX];
};

/*
 * The phases of one suspend/resume cycle, by sleepgraph's names, from the
 * kernel's suspend_resume records ("phase ACTION VAL begin|end").
 */
#define AN_PHASES 10

/** struct an_phase - one phase: its sleepgraph name, start and length */
struct an_phase {
	const char *name;
	int64_t t_ns, duration_ns;
};

/* the slowest device callbacks kept per phase (dev_pm records) */
#define AN_DEVPM_SLOWEST 3

/** struct an_devpm - a device PM callback that took long (dev_pm) */
struct an_devpm {
	char device[48];
	char verb[12];
	int64_t duration_ns;
	int error;
};

/**
 * struct an_cycle - the phases of one suspend attempt, in time order
 * @slow: NULL, or (when the log has dev_pm records) per phase its
 *	slowest callbacks, slowest first, [phase][AN_DEVPM_SLOWEST]
 *	(duration_ns 0: none)
 */
struct an_cycle {
	struct an_phase ph[AN_PHASES];
	unsigned int n;
	struct an_devpm *slow;
};

/** struct an_skipped - events of a type the analysis does not know */
struct an_skipped {
	char type[12];
	uint64_t n;
};

/*
 * How the capture ends (report-format.md, "The capture's end"): the log's
 * last platform record is an enter (asleep by the log); the power after
 * the last record shows the target awake at the end; it fell to the
 * sleep level after the last record and stayed there (a suspend whose
 * records never came, inferred by the power); or nothing tells (no
 * samples after the last record, no earlier suspended stretch to take
 * the sleep level from): awake, as the log says.
 */
enum an_end {
	AN_END_AWAKE,
	AN_END_SUSPENDED,
	AN_END_INFERRED,
	AN_END_UNKNOWN,
};

struct an_timeline {
	int64_t start, end;		/* the capture's span */
	struct an_blocker *b;
	size_t nb, cap;
	size_t *bhash;			/* open addressing: index + 1, 0 free */
	size_t bhash_cap;		/* a power of 2, or 0 */
	struct an_span *susp;		/* suspended spans */
	int64_t *susp_unc;		/* uncertainty of each span's ends */
	unsigned char *susp_edges;	/* AN_EDGE_*: which ends the log has */
	size_t nsusp, susp_cap, susp_unc_cap, susp_edges_cap;
	int64_t transition_ns;		/* moved to awake by the power */
	uint64_t edges_refined;		/* ends so moved */
	struct an_event *resumes;	/* "resume" events */
	size_t nresumes, resumes_cap;
	struct an_event *aborts;	/* "abort" events (arg: the error) */
	size_t naborts, aborts_cap;
	struct an_stimulus *stimuli;
	size_t nstimuli, stimuli_cap;
	struct an_cycle *cycles;	/* phases, one per suspend attempt */
	size_t ncycles, cycles_cap;
	int64_t *snap_t;		/* stats snapshots' times */
	size_t nsnap, snap_cap;
	uint64_t lost_records;		/* "lost N" records: N summed */
	uint64_t lost_lines;		/* how many "lost" records */
	int64_t lost_first_t;		/* the first one's time */
	int64_t lost_since;		/* the last one's, this boot, or -1 */
	uint64_t lost_epoch;		/* "lost" records so far */
	struct an_object *obj;		/* objects by id, this boot: open */
	size_t nobj, obj_cap;		/* addressing, obj_cap a power of 2 */
	unsigned char hash_key[16];	/* the tables' SipHash key: random */
	uint64_t probes;		/* slots the tables looked at */
	uint64_t id_records;		/* block/unblock records with an id */
	uint64_t anon_records;		/* and without one */
	struct an_skipped skipped[16];
	size_t nskipped;
	uint64_t skipped_other;		/* types beyond the table */
	uint64_t events;
	uint64_t unmapped;		/* kept their online host time */
	uint64_t placed;		/* placed by the power (place.c) */
	int64_t max_uncert_ns;
	unsigned int boots;
	int64_t last_record_lo;		/* the latest a record's time less
					 * its uncertainty, or -1 */
	int64_t last_word;		/* or answered ping, snapshot (tail.c) */
	enum an_end end_state;		/* how the capture ends (tail.c) */
	int64_t inferred_t;		/* AN_END_INFERRED: asleep from */
	double sleep_level_uW;		/* the level it judged by, or -1 */
	bool tail_never_above;		/* no sample after last_word above it */
};

/* which ends of a suspended span are the log's enter and exit */
#define AN_EDGE_ENTER	1
#define AN_EDGE_EXIT	2
#define AN_EDGE_INFERRED 4	/* the start is the power's (tail.c) */

/*
 * a target silent this long at the capture's end (no record, snapshot or
 * answered ping: two of the link's default ping periods) may have slept
 */
#define AN_SILENT_END_NS	2000000000LL

/* how far from an enter or exit its power-refined time may be */
#define AN_EDGE_WINDOW_NS	1000000000LL

/*
 * Build the timeline from events.tsv, stats.tsv and stimuli.tsv, mapping
 * events with @clk; @start: the capture's first instant. 0 or -errno.
 */
int an_timeline_build(struct an_timeline *tl, struct sbrig_capread *cr,
		      const struct an_clock *clk, int64_t start);
/* The capture ends at @end: clip what was open, count activations. */
void an_timeline_finish(struct an_timeline *tl, int64_t end);
void an_timeline_free(struct an_timeline *tl);

/*
 * edges.c: move each suspended span's enter and exit ends to where the
 * samples show the platform's low level begin and end (read once, then
 * rewound). 0 or -errno.
 */
int an_edges_refine(struct an_timeline *tl, struct sbrig_capread *cr);
/*
 * tail.c: how the capture ends: when the log leaves the target awake and
 * the power after the last record falls to the sleep level and stays
 * there, the target is suspended from that fall (a suspended span that
 * runs to the end, AN_EDGE_INFERRED) and what was active then ends there.
 * Sets @tl->end_state. 0 or -errno.
 */
int an_tail_infer(struct an_timeline *tl, const struct an_clock *clk,
		  struct sbrig_capread *cr);
/* Is @t inside a suspended span? */
bool an_timeline_suspended(const struct an_timeline *tl, int64_t t);

#endif /* SBRIG_AN_TIMELINE_H */
