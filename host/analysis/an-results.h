/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-results.h - what the analysis of one capture finds, private to
 * host/analysis/: the wakeup episodes (wakeups.c), the energies
 * (integrate.c), the suspends' costs (costs.c), the findings
 * (findings.c).
 */
#ifndef SBRIG_AN_RESULTS_H
#define SBRIG_AN_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/analysis.h>
#include <sbrig/capture-read.h>
#include <sbrig/records.h>
#include <sbrig/sbrig.h>

#include "an-base.h"
#include "an-timeline.h"

struct an_markers;

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
 * @resume_from: where @resume_t_ns comes from (enum an_time_from)
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
	enum an_time_from resume_from;
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

/**
 * struct an_gap - samples missing
 * @t_ns: the last sample before it
 * @duration_ns: to the first sample after it (@at_stop: to the stop)
 * @missing: the samples it stands for (gaps.tsv's, or from the median
 *	interval)
 * @declared: in gaps.tsv, or (@at_stop) in meta.ini's [end]
 * @at_stop: the sensor's tail lost at the stop ([end] sensor_tail_lost):
 *	after the last sample, so after the capture's end
 * @hidden_min_uJ, @hidden_max_uJ: the energy it may hide
 */
struct an_gap {
	int64_t t_ns, duration_ns;
	uint64_t missing;
	bool declared;
	bool at_stop;
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

#endif /* SBRIG_AN_RESULTS_H */
