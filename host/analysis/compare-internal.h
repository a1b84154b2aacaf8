/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compare-internal.h - what the files of sbrig compare share, private to
 * host/analysis/: the metric table (compare-config.c) and the loading of
 * compare.json (compare-json.c) for the renderers and exporters.
 */
#ifndef SBRIG_COMPARE_INTERNAL_H
#define SBRIG_COMPARE_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include <sbrig/compare.h>

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

#endif /* SBRIG_COMPARE_INTERNAL_H */
