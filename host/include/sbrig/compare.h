/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: regression verdicts between two sets of runs (libsbrig-analysis)
 *
 * sbrig compare's library. Repeated runs of one scenario on a base and on
 * a new build (report.json files, or capture directories analysed on the
 * fly) in; per metric a verdict out: regressed, improved, unchanged or
 * inconclusive (with how many more runs would settle it), with the
 * change (the Hodges-Lehmann shift), its exact Moses interval and the
 * Mann-Whitney U test's p-value, raw and adjusted over the comparison
 * (Benjamini-Hochberg), counts by an exact Poisson test and leaks by
 * Fisher's exact test, all written to compare.json (host/doc/compare-format.md, the
 * contract). The rule and the default thresholds are documented there;
 * thresholds can be read from a config file.
 *
 * Layers: compare-stats.c holds the statistics (pure functions),
 * compare-config.c the thresholds, compare-load.c reads and checks the
 * runs, compare-metrics.c extracts a run's metrics, compare-decide.c
 * decides them, compare.c builds compare.json; compare-text.c renders the
 * summary from that JSON alone, compare-html.c the page from it and two
 * runs; compare-run.c is the sbrig_run_* API below.
 *
 * Errors follow libsbrig's convention (sbrig.h): 0 / -errno, NULL + errno,
 * sbrig_errmsg() naming the file, line and field.
 */
#ifndef SBRIG_COMPARE_H
#define SBRIG_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* compare.json's "schema" and "version" */
#define SBRIG_COMPARE_SCHEMA "sbrig-compare"
#define SBRIG_COMPARE_VERSION 2

/**
 * enum sbrig_verdict - the outcome for one metric (or all of them)
 * @SBRIG_UNCHANGED: no change that matters
 * @SBRIG_IMPROVED: a significant change that matters, for the better
 * @SBRIG_REGRESSED: a significant change that matters, for the worse
 * @SBRIG_INCONCLUSIVE: the runs cannot tell: run more
 */
enum sbrig_verdict {
	SBRIG_UNCHANGED,
	SBRIG_IMPROVED,
	SBRIG_REGRESSED,
	SBRIG_INCONCLUSIVE,
	SBRIG_VERDICT_COUNT
};

/**
 * enum sbrig_metric - what is compared, per run (compare-format.md)
 * @SBRIG_M_ENERGY_TOTAL: energy.total_uJ
 * @SBRIG_M_ENERGY_PER_WAKEUP: the mean of wakeups[].energy_uJ
 * @SBRIG_M_AWAKE_PER_WAKEUP: the mean of wakeups[].awake_ns
 * @SBRIG_M_BASELINE: energy.baseline_uW, the suspended baseline
 * @SBRIG_M_LATENCY_MEDIAN: latency.median_ns
 * @SBRIG_M_LATENCY_P95: latency.p95_ns
 * @SBRIG_M_BLOCKER_ENERGY: per blocker: its energy_uJ / wakeups
 * @SBRIG_M_BLOCKER_ACTIVATIONS: per blocker: its activations
 * @SBRIG_M_ABORTED_SUSPENDS: the aborted_suspend findings
 * @SBRIG_M_UNKNOWN_WAKEUPS: unknown_wake_count
 * @SBRIG_M_LEAK: per blocker: a leak finding (a new one is a regression
 *	by itself, whatever the statistics)
 */
enum sbrig_metric {
	SBRIG_M_ENERGY_TOTAL,
	SBRIG_M_ENERGY_PER_WAKEUP,
	SBRIG_M_AWAKE_PER_WAKEUP,
	SBRIG_M_BASELINE,
	SBRIG_M_LATENCY_MEDIAN,
	SBRIG_M_LATENCY_P95,
	SBRIG_M_BLOCKER_ENERGY,
	SBRIG_M_BLOCKER_ACTIVATIONS,
	SBRIG_M_ABORTED_SUSPENDS,
	SBRIG_M_UNKNOWN_WAKEUPS,
	SBRIG_M_LEAK,
	SBRIG_METRIC_COUNT
};

/* "regressed", "improved", ...; "?" for a value out of range */
const char *sbrig_verdict_name(enum sbrig_verdict v);
/* "energy_per_wakeup_uJ", ...; NULL for a value out of range */
const char *sbrig_metric_name(enum sbrig_metric m);
/* the metric's unit: "uJ", "ns", "uW" or "count" */
const char *sbrig_metric_unit(enum sbrig_metric m);

/**
 * struct sbrig_compare_threshold - when a change of one metric matters
 * @min_change: the smallest relative change of the median that matters
 *	(0.03: 3 % of the base median)
 * @min_abs: the smallest absolute change that matters, in the metric's
 *	unit; the threshold is the larger of the two
 * @alpha: the test's significance for this metric (0: the config's)
 */
struct sbrig_compare_threshold {
	double min_change;
	double min_abs;
	double alpha;
};

/**
 * struct sbrig_compare_config - how to decide
 * @alpha: significance: p <= @alpha is a significant difference
 * @confidence: level of the change's interval
 * @power: the power the "run N more" estimate aims at
 * @min_runs: fewer runs than this on a side: inconclusive
 * @metric: each metric's thresholds
 * @path: the config file it was read from ("" for the defaults)
 */
struct sbrig_compare_config {
	double alpha, confidence, power;
	unsigned int min_runs;
	struct sbrig_compare_threshold metric[SBRIG_METRIC_COUNT];
	char path[4096];
};

/** sbrig_compare_config_init() - the documented defaults into @cfg */
void sbrig_compare_config_init(struct sbrig_compare_config *cfg);

/**
 * sbrig_compare_config_load() - read a thresholds file over @cfg
 * @cfg: the config (start from sbrig_compare_config_init())
 * @path: the file: a [compare] section and one [METRIC] section per
 *	metric (compare-format.md, "Thresholds")
 *
 * Return: 0, or -errno with sbrig_errmsg() as "file:line: [section]: why"
 * (@cfg may then be partly updated).
 */
int sbrig_compare_config_load(struct sbrig_compare_config *cfg,
			      const char *path);

/**
 * sbrig_compare_config_write() - @cfg as a thresholds file
 * @cfg: the config
 * @out: where to write it (what sbrig_compare_config_load() reads back)
 *
 * Return: 0, or -EIO.
 */
int sbrig_compare_config_write(const struct sbrig_compare_config *cfg,
			       FILE *out);

/**
 * struct sbrig_compare_opts - how to compare (zero: the defaults)
 * @cfg: the thresholds (NULL: the defaults)
 * @force: compare runs of different scenarios or rigs, open runs, runs
 *	with gaps or of very different durations, or too few runs anyway
 *	(each a warning)
 * @leak_ns: the leak threshold for captures analysed on the fly (0: the
 *	analysis's default)
 */
struct sbrig_compare_opts {
	const struct sbrig_compare_config *cfg;
	bool force;
	int64_t leak_ns;
};

struct sbrig_compare;

/**
 * sbrig_compare_run() - compare the base runs with the new ones
 * @base: the base runs: report.json files, directories holding one
 *	(report.json), or capture directories (analysed on the fly, nothing
 *	written)
 * @nbase: how many (>= 1)
 * @next: the new runs, the same way
 * @nnew: how many (>= 1)
 * @opts: options, or NULL for the defaults
 *
 * Every run must be of the same scenario on the same rig (provenance
 * rig_sha256 and scenario_sha256), complete, without gaps and of like
 * duration, unless @opts->force.
 *
 * Return: the comparison, freed with sbrig_compare_free(); or NULL with
 * errno EINVAL (a run cannot be read: sbrig_errmsg() names its file and
 * field, or there is no run on a side), EXDEV (the runs are of different
 * scenarios or rigs: the message names two of them and the hashes; or a
 * run is open, has gaps or lasts very differently: the message names it),
 * ERANGE (so few runs that no difference can be significant, unless
 * @opts->force: the message names the smallest number a side that can) or
 * ENOMEM.
 */
struct sbrig_compare *sbrig_compare_run(const char *const *base, size_t nbase,
					const char *const *next, size_t nnew,
					const struct sbrig_compare_opts *opts);

/** sbrig_compare_free() - free a comparison; NULL ok */
void sbrig_compare_free(struct sbrig_compare *c);

/**
 * sbrig_compare_verdict() - the overall verdict
 * @c: the comparison
 *
 * Return: SBRIG_REGRESSED when a metric regressed, else SBRIG_INCONCLUSIVE
 * when one is inconclusive, else SBRIG_IMPROVED when one improved, else
 * SBRIG_UNCHANGED.
 */
enum sbrig_verdict sbrig_compare_verdict(const struct sbrig_compare *c);

/**
 * sbrig_compare_write_json() - write compare.json
 * @c: the comparison
 * @path: the file (replaced atomically)
 *
 * Return: 0 or -errno with sbrig_errmsg().
 */
int sbrig_compare_write_json(const struct sbrig_compare *c, const char *path);

/**
 * sbrig_compare_render_html() - the comparison page
 * @c: the comparison
 * @path: the page (replaced atomically): self-contained (dygraphs and the
 *	data inlined, no network): the verdicts, the power and blocker
 *	timeline of a representative base run and new run (the run whose
 *	energy per wakeup is nearest its side's median), and per metric the
 *	distributions of the base and the new runs' values
 *
 * Rendered from the compare.json document and the two runs' report.json
 * documents alone.
 *
 * Return: 0 or -errno with sbrig_errmsg() naming @path (or dygraphs).
 */
int sbrig_compare_render_html(const struct sbrig_compare *c, const char *path);

/**
 * sbrig_compare_render_text() - the short human summary
 * @c: the comparison
 * @out: where to write it: the verdict, the metrics that regressed,
 *	improved or are inconclusive (the blockers that got worse named, by
 *	how much), one line each
 *
 * Rendered from the comparison's compare.json document alone.
 *
 * Return: 0 or -errno.
 */
int sbrig_compare_render_text(const struct sbrig_compare *c, FILE *out);

/**
 * DOC: one run's metrics, for readers other than compare (the history)
 *
 * A run read the way sbrig_compare_run() reads each of its arguments,
 * with the metrics compare would extract from it.
 */
struct sbrig_run;

/**
 * sbrig_run_load() - read one run
 * @arg: a report.json, a directory holding one, or a capture directory
 *	(analysed on the fly in memory; nothing is written)
 * @leak_ns: the leak threshold for a capture (0: the analysis's default)
 *
 * Return: the run, freed with sbrig_run_free(); or NULL with errno EINVAL
 * (sbrig_errmsg() names @arg and the field), ENOENT or ENOMEM.
 */
struct sbrig_run *sbrig_run_load(const char *arg, int64_t leak_ns);

/** sbrig_run_free() - free a run; NULL ok */
void sbrig_run_free(struct sbrig_run *r);

/**
 * sbrig_run_field() - a string of the run's report.json
 * @r: the run
 * @key: a key of capture.provenance ("git_sha", "scenario",
 *	"scenario_sha256", "rig_name", "rig_sha256", ...), or "path" (the
 *	capture's path), "status" (the capture's status), "generator"
 *
 * Return: the value, owned by @r; "" when absent or null.
 */
const char *sbrig_run_field(const struct sbrig_run *r, const char *key);

/**
 * sbrig_run_int() - an integer of the report's capture object
 * @r: the run
 * @key: "start_ns", "end_ns", "samples", ...
 *
 * Return: its value, 0 when absent.
 */
int64_t sbrig_run_int(const struct sbrig_run *r, const char *key);

/**
 * sbrig_run_blockers() - the blockers the run's metrics are kept for
 * @r: the run
 * @names: set to an array of the names (owned by @r), sorted: every
 *	blocker the report lists and every one a leak finding names
 *
 * Return: how many.
 */
size_t sbrig_run_blockers(const struct sbrig_run *r, const char *const **names);

/**
 * sbrig_run_metric() - metric @m of the run, as compare takes it
 * @r: the run
 * @m: the metric
 * @blocker: its blocker for a per-blocker metric, else NULL
 *
 * Return: the value; NaN when the run has none (compare-format.md, "a run
 * without it").
 */
double sbrig_run_metric(const struct sbrig_run *r, enum sbrig_metric m,
			const char *blocker);

/* true when metric @m is kept per blocker */
bool sbrig_metric_per_blocker(enum sbrig_metric m);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_COMPARE_H */
