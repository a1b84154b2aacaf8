/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cm-shared.h - what the files of sbrig compare share, private to
 * host/analysis/: the comparison object, a run read, small json-c
 * helpers, the metric table (compare-config.c), reading and checking the
 * runs (compare-load.c), a run's metrics (compare-metrics.c), deciding
 * them (compare-decide.c), and the loading of compare.json
 * (compare-json.c) for the renderers and exporters.
 */
#ifndef SBRIG_CM_SHARED_H
#define SBRIG_CM_SHARED_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include <sbrig/compare.h>

#include "report-load.h"

/**
 * struct sbrig_compare - a comparison (sbrig/compare.h)
 * @doc: its compare.json document
 * @verdict: the overall verdict
 * @rep: the representative base and new run's report.json
 * @rep_idx: their index among their side's runs
 */
struct sbrig_compare {
	struct json_object *doc;
	enum sbrig_verdict verdict;
	struct json_object *rep[2];
	int rep_idx[2];
};

/**
 * struct cm_run - one run read
 * @arg: the argument that named it
 * @report: its report.json document (its trace cut to the coarsest
 *	level, the timeline and the states)
 */
struct cm_run {
	const char *arg;
	struct json_object *report;
};

/* ---- json-c helpers ---- */

/* @o's member @k, or NULL (also for a NULL @o) */
static inline struct json_object *cm_get(struct json_object *o, const char *k)
{
	return an_jget(o, k);
}

/* a number member, NaN when absent */
static inline double cm_num(struct json_object *o, const char *k)
{
	struct json_object *v = cm_get(o, k);

	return v ? json_object_get_double(v) : NAN;
}

/* a string member, "" when absent or null */
static inline const char *cm_str(struct json_object *o, const char *k)
{
	const char *s = json_object_get_string(cm_get(o, k));

	return s ? s : "";
}

static inline void cm_put(struct json_object *o, const char *k,
			  struct json_object *v)
{
	json_object_object_add(o, k, v);
}

/* a number with @sig significant digits, printed so; null if not finite */
static inline struct json_object *cm_jg(double v, int sig)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof(buf), "%.*g", sig, v);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}

/* a metric's value: integers stay integers, others keep 10 digits */
static inline struct json_object *cm_jv(double v)
{
	if (!isfinite(v))
		return NULL;
	if (v == floor(v) && fabs(v) < 9e15)
		return json_object_new_int64((int64_t)v);
	return cm_jg(v, 10);
}

/* a string, or null for NULL or "" */
static inline struct json_object *cm_js_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

/* ---- the runs (compare-load.c) ---- */

/*
 * Read @arg into @r (compare-format.md, "Comparable runs": a report.json,
 * a directory holding one, a capture analysed on the fly with
 * @o->leak_ns). 0 or -errno with sbrig_errmsg() naming @arg.
 */
int cm_load_run(const char *arg, const struct sbrig_compare_opts *o,
		struct cm_run *r);

/* A string of @r's capture.provenance, "" when absent. */
const char *cm_prov(const struct cm_run *r, const char *key);

/*
 * Whether @nbase + @nnew runs (@runs, the base ones first) can be
 * compared: 0; -ERANGE (too few for any significance), -EXDEV (other
 * scenarios or rigs; open runs, gaps, odd durations) with sbrig_errmsg();
 * with @force each a warning in @warnings and 0.
 */
int cm_check_runs(const struct cm_run *runs, size_t nbase, size_t nnew,
		  const struct sbrig_compare_config *cfg, bool force,
		  struct json_object *warnings);

/* ---- a run's metrics (compare-metrics.c) ---- */

/* Metric @m of the report @r (of blocker @bl); NaN when it has none. */
double cm_run_metric(struct json_object *r, enum sbrig_metric m,
		     const char *bl);

/*
 * The names of every blocker of any of the @n runs (and of every leak),
 * sorted, into *@out (freed by the caller; the names are the reports')
 * and their number into *@count. 0 or -ENOMEM.
 */
int cm_blocker_names(const struct cm_run *runs, size_t n, const char ***out,
		     size_t *count);

/* ---- the verdicts (compare-decide.c) ---- */

/*
 * Every metric of the @nb base runs and @nn new runs (@runs, base first;
 * per blocker over @bl[@nbl]) decided, its entry added to @metrics and
 * its verdict counted in @counts. 0 or -ENOMEM.
 */
int cm_decide_all(const struct cm_run *runs, size_t nb, size_t nn,
		  const char **bl, size_t nbl,
		  const struct sbrig_compare_config *cfg,
		  struct json_object *metrics, size_t *counts);

/**
 * struct cm_metric_def - one metric of enum sbrig_metric
 * @name: its name in compare.json and the thresholds file
 * @unit: "uJ", "ns", "uW" or "count"
 * @worse: +1 when a higher value is worse, -1 when a lower one is
 * @per_blocker: one metric per blocker
 * @what: a short description (the thresholds file's comment)
 * @thr: its default thresholds
 */
struct cm_metric_def {
	const char *name;
	const char *unit;
	int worse;
	bool per_blocker;
	const char *what;
	struct sbrig_compare_threshold thr;
};

extern const struct cm_metric_def cm_metrics[SBRIG_METRIC_COUNT];

/* The metric named @name, or -1. */
int cm_metric_by_name(const char *name);

/*
 * Check @root as a compare.json of SBRIG_COMPARE_VERSION. 0 or -EINVAL
 * naming the field.
 */
int cm_compare_check(struct json_object *root);

/* Load and check the compare.json @path; *@out is the caller's. */
int cm_compare_load(const char *path, struct json_object **out);

/* The summary of the compare.json document @root (compare-text.c). */
int cm_render_text(struct json_object *root, FILE *out);

#endif /* SBRIG_CM_SHARED_H */
