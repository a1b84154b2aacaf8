/* SPDX-License-Identifier: GPL-2.0 */
/*
 * analysis-internal.h - the analysis's objects, private to host/analysis/.
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
 *	findings.c	what went wrong, ranked
 *	analysis.c	runs the steps; report-json.c writes the result
 *
 * All times are host CLOCK_MONOTONIC ns. Spans are half-open [start, end).
 */
#ifndef SBRIG_ANALYSIS_INTERNAL_H
#define SBRIG_ANALYSIS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/analysis.h>
#include <sbrig/capture-read.h>
#include <sbrig/marker.h>
#include <sbrig/records.h>
#include <sbrig/sbrig.h>

#define AN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/**
 * an_sample_power_uW() - the power a sample stands for, in µW
 * @s: the sample
 *
 * |current| x bus voltage when the sample has a bus voltage, else its
 * power_uW. An INA226 computes its power register from its already
 * quantised current and bus registers, in steps of 25 current LSB (at
 * 40 mOhm 1.5625 mW, a tenth of a 3 mA baseline at 5 V); the product of
 * the two registers is 25 times finer. The magnitude, as the chip's power
 * register (report-format.md, "Integration").
 */
static inline double an_sample_power_uW(const struct sbrig_sample *s)
{
	double i = s->current_uA < 0 ? -(double)s->current_uA :
				       (double)s->current_uA;

	if (s->bus_uV > 0)
		return i * (double)s->bus_uV * 1e-6;
	return (double)s->power_uW;
}

/* grow *@p (of *@cap elements of @size) to hold @need; 0 or -ENOMEM */
int an_grow(void **p, size_t *cap, size_t need, size_t size);

/** struct an_span - a half-open interval of host time */
struct an_span {
	int64_t start, end;
};

/* qsort() order of spans: by start, then end (timeline.c) */
int an_cmp_span(const void *a, const void *b);
/* |union of @v|: sorted in place and merged into @v, *@n shrinks (timeline.c) */
int64_t an_merge_spans(struct an_span *v, size_t *n);

/*
 * Saturating time arithmetic: times, uncertainties and durations come from
 * the capture (whatever a hostile file holds), so a sum or difference of
 * two of them must not overflow; it sticks at INT64_MIN / INT64_MAX.
 */
static inline int64_t an_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t an_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* |@a - @b|, saturated */
static inline int64_t an_sat_dist(int64_t a, int64_t b)
{
	return a > b ? an_sat_sub(a, b) : an_sat_sub(b, a);
}

/*
 * The latest sample time the analysis takes (2^62 ns, 146 years of
 * CLOCK_MONOTONIC): any two sample times then differ, and add up, without
 * overflow. A sample outside [0, AN_TIME_MAX] is refused (integrate.c).
 */
#define AN_TIME_MAX	((int64_t)1 << 62)

/* @v (ns) as an int64_t, saturated; NaN gives 0 */
static inline int64_t an_sat_ns(double v)
{
	return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN :
		v == v ? (int64_t)v : 0;
}

/* ---- clockfit.c ---------------------------------------------------------- */

/**
 * struct an_segment - exchanges between two jumps of the offset
 * @host_first: host time of its first exchange
 * @host_last: host time of its last exchange
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
	int64_t host_first, host_last;
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
};

/**
 * struct an_trace - a window of the power trace (edges.c, place.c)
 * @t: the samples' times
 * @p: their power (uW)
 * @n: samples; @cap: room
 * @overflow: samples were dropped (the window is too long to hold)
 */
struct an_trace {
	int64_t *t;
	double *p;
	size_t n, cap;
	bool overflow;
};

int an_trace_add(struct an_trace *x, int64_t t, double p);
double an_trace_asleep_level(const struct an_trace *x);
void an_trace_free(struct an_trace *x);

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

/* ---- markers.c ------------------------------------------------------------ */

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

/* ---- timeline.c ----------------------------------------------------------- */

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
	double energy_uJ, exclusive_uJ;
	double share_ns;
	struct an_stats_check stats;
};

/**
 * struct an_event - an event of interest, mapped
 * @t_ns: host time
 * @uncert_ns: its uncertainty
 * @arg: the event's argument (resume 0, abort -16)
 * @who: abort: the blocker blocked last before it in its boot ("" none)
 */
struct an_event {
	int64_t t_ns;
	int64_t uncert_ns;
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
};

/* which ends of a suspended span are the log's enter and exit */
#define AN_EDGE_ENTER	1
#define AN_EDGE_EXIT	2

/* how far from an enter or exit its power-refined time may be */
#define AN_EDGE_WINDOW_NS	1000000000LL

/* "Still open": the end of what lasts to the capture's end, until known. */
#define AN_OPEN_END (INT64_MAX / 4)

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
/* Is @t inside a suspended span? */
bool an_timeline_suspended(const struct an_timeline *tl, int64_t t);

/* ---- wakeups.c ------------------------------------------------------------ */

/* what woke the target (report-format.md section 3) */
enum an_cause {
	AN_CAUSE_STIMULUS,	/* the rig's press, plug or unplug */
	AN_CAUSE_WAKEUP_SOURCE,	/* a kernel wakeup source, named */
	AN_CAUSE_UNKNOWN,
};

/**
 * struct an_wakeup - a resume, and what woke the target
 * @cause: see enum an_cause; the fields up to @uncert_ns are the
 *	stimulus's and mean something only for AN_CAUSE_STIMULUS
 * @source: AN_CAUSE_WAKEUP_SOURCE: the wakeup source's index in the
 *	timeline's blockers
 * @stim: index into the timeline's stimuli
 * @t_ns: the stimulus; for other causes, the platform's exit (where the
 *	episode's energy starts)
 * @resume_t_ns, @resume_uncert_ns: its resume
 * @marker_t_ns: the marker's first rising edge after @t_ns, up to the
 *	resume (+ its uncertainty), or -1
 * @latency_ns: to @marker_t_ns if there is one, else to @resume_t_ns
 * @uncert_ns: @latency_ns's uncertainty (the marker's, or the resume's)
 * @end_ns: the next enter (or the capture's end); an_wakeups_refine()
 *	moves it with the power-refined start of that stretch
 * @end_susp: the index of that suspended stretch, or -1
 * @energy_uJ: from @t_ns to @end_ns (the integration fills it in)
 * @blockers: indices of the blockers active in [resume, end)
 * @nblockers: their number
 */
struct an_wakeup {
	enum an_cause cause;
	size_t source;
	size_t stim;
	int64_t t_ns;
	int64_t resume_t_ns, resume_uncert_ns;
	int64_t marker_t_ns;
	int64_t latency_ns, uncert_ns;
	int64_t end_ns;
	long end_susp;
	double energy_uJ;
	size_t *blockers;
	size_t nblockers;
};

struct an_wakeups {
	struct an_wakeup *w;
	size_t n, cap;
	uint64_t stimulus;		/* resumes a stimulus explains */
	uint64_t unknown;		/* resumes nothing explains */
	struct sbrig_latency_stats lat;
};

int an_wakeups_find(struct an_wakeups *wk, const struct an_timeline *tl,
		    const struct an_markers *mk);
/* The stretches' starts were moved (an_edges_refine()): the episodes' ends
 * follow them. */
void an_wakeups_refine(struct an_wakeups *wk, const struct an_timeline *tl);
void an_wakeups_free(struct an_wakeups *wk);

/* ---- integrate.c ---------------------------------------------------------- */

/** struct an_gap - samples missing */
struct an_gap {
	int64_t t_ns, duration_ns;
	uint64_t missing;
	bool declared;
	double hidden_min_uJ, hidden_max_uJ;
};

/** struct an_level - a min/max/mean envelope of power */
struct an_level {
	int64_t bucket_ns;
	int64_t t0_ns;
	size_t n;
	double *min, *max, *sum;
	uint32_t *count;
};

/** struct an_raw - every sample of one window */
struct an_raw {
	struct an_span win;
	int64_t *t;
	double *p;
	size_t n, cap;
};

#define AN_LEVELS 3
#define AN_RAW_MAX_SAMPLES 100000

struct an_energy {
	uint64_t samples;
	int64_t first_t, last_t;		/* first and last sample */
	double total_uJ, suspended_uJ, awake_uJ;
	int64_t suspended_ns, awake_ns;		/* state time (wall) */
	bool have_baseline;
	double baseline_uW;
	double unattributed_uJ;
	int64_t unattributed_ns;		/* awake, nothing active */
	struct an_gap *gaps;
	size_t ngaps, gaps_cap;
	uint64_t missing;
	double pmin_uW, pmax_uW;
	struct an_level level[AN_LEVELS];
	struct an_raw *raw;
	size_t nraw;
	size_t raw_total;
};

/*
 * Stream the samples (and gaps.tsv) against the timeline: energies per
 * state, per blocker (into @tl's blockers), per wakeup (into @wk), the
 * gaps, the baseline and the trace. 0 or -errno.
 */
int an_integrate(struct an_energy *en, struct sbrig_capread *cr,
		 struct an_timeline *tl, struct an_wakeups *wk);
void an_energy_free(struct an_energy *en);

/* ---- costs.c -------------------------------------------------------------- */

/**
 * struct an_cost - what one suspend cost (report-format.md section 6)
 * @susp: its suspended stretch (the timeline's index)
 * @entry: from the last suspend blocker's release to the low level
 * @exit: from the power's rise to the first suspend blocker after it
 * @has_entry, @has_exit: the window is not empty
 * @entry_uJ, @exit_uJ: their energy above the suspended baseline
 * @suspended_ns: the stretch's length
 * @break_even_ns: (entry + exit) / (idle - baseline), or -1
 */
struct an_cost {
	size_t susp;
	struct an_span entry, exit;
	bool has_entry, has_exit;
	double entry_uJ, exit_uJ;
	int64_t suspended_ns;
	int64_t break_even_ns;
};

/**
 * struct an_costs - the costs of the capture's suspends
 * @c: per whole cycle (enter and exit in the capture), in time order
 * @have_idle, @idle_uW: the mean power awake with nothing active
 * @median_break_even_ns: over the cycles that have one, or -1
 */
struct an_costs {
	struct an_cost *c;
	size_t n, cap;
	bool have_idle;
	double idle_uW;
	int64_t median_break_even_ns;
};

int an_costs_measure(struct an_costs *co, struct sbrig_capread *cr,
		     const struct an_timeline *tl, const struct an_energy *en);
void an_costs_free(struct an_costs *co);

/* ---- findings.c ----------------------------------------------------------- */

/** struct an_finding - one thing that went wrong */
struct an_finding {
	int rank;			/* lower: more severe */
	char kind[24];
	char blocker[SBRIG_NAME_MAX];	/* "" = none */
	int64_t t_ns;
	char detail[400];
};

struct an_findings {
	struct an_finding *f;
	size_t n, cap;
};

int an_findings_collect(struct an_findings *fd, const struct an_timeline *tl,
			const struct an_wakeups *wk,
			const struct an_energy *en, const struct an_costs *co,
			int64_t leak_ns);
void an_findings_free(struct an_findings *fd);

/* ---- report-json.c: writes with an_write_atomic() (atomic.h) --------------- */

/* ---- analysis.c ----------------------------------------------------------- */

struct sbrig_analysis {
	char dir[4096];
	struct sbrig_capture_meta meta;
	struct sbrig_analysis_opts opts;
	struct an_clock clk;
	struct an_markers mk;
	struct an_timeline tl;
	struct an_wakeups wk;
	struct an_energy en;
	struct an_costs co;
	struct an_findings fd;
};

#endif /* SBRIG_ANALYSIS_INTERNAL_H */
