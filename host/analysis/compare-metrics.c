// SPDX-License-Identifier: GPL-2.0
/*
 * compare-metrics.c - the metrics of one run, as compare takes them from
 * its report.json (host/doc/compare-format.md, "The metrics"), and the
 * blockers they are kept for.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/compare.h>

#include "an-base.h"
#include "cm-shared.h"

typedef struct json_object jobj;

static double mean_of(jobj *arr, const char *key)
{
	size_t n = json_object_array_length(arr);
	double s = 0;

	if (!n)
		return NAN;
	for (size_t i = 0; i < n; i++)
		s += cm_num(json_object_array_get_idx(arr, i), key);
	return s / (double)n;
}

static jobj *blocker_of(jobj *report, const char *name)
{
	jobj *bl = cm_get(report, "blockers");

	for (size_t i = 0; i < json_object_array_length(bl); i++) {
		jobj *b = json_object_array_get_idx(bl, i);

		if (!strcmp(cm_str(b, "name"), name))
			return b;
	}
	return NULL;
}

static size_t findings_of(jobj *report, const char *kind, const char *blocker)
{
	jobj *f = cm_get(report, "findings");
	size_t k = 0;

	for (size_t i = 0; i < json_object_array_length(f); i++) {
		jobj *x = json_object_array_get_idx(f, i);

		if (!strcmp(cm_str(x, "kind"), kind) &&
		    (!blocker || !strcmp(cm_str(x, "blocker"), blocker)))
			k++;
	}
	return k;
}

double cm_run_metric(jobj *r, enum sbrig_metric m, const char *bl)
{
	jobj *wk = cm_get(r, "wakeups"), *lat = cm_get(r, "latency"), *b;
	size_t nw = json_object_array_length(wk);

	switch (m) {
	case SBRIG_M_ENERGY_TOTAL:
		return cm_num(cm_get(r, "energy"), "total_uJ");
	case SBRIG_M_ENERGY_PER_WAKEUP:
		return mean_of(wk, "energy_uJ");
	case SBRIG_M_AWAKE_PER_WAKEUP:
		return mean_of(wk, "awake_ns");
	case SBRIG_M_BASELINE:
		return cm_num(cm_get(r, "energy"), "baseline_uW");
	case SBRIG_M_LATENCY_MEDIAN:
		return cm_num(lat, "n") > 0 ? cm_num(lat, "median_ns") : NAN;
	case SBRIG_M_LATENCY_P95:
		return cm_num(lat, "n") > 0 ? cm_num(lat, "p95_ns") : NAN;
	case SBRIG_M_BLOCKER_ENERGY:
		if (!nw)
			return NAN;
		b = blocker_of(r, bl);
		return b ? cm_num(b, "energy_uJ") / (double)nw : 0;
	case SBRIG_M_BLOCKER_ACTIVATIONS:
		b = blocker_of(r, bl);
		return b ? cm_num(b, "activations") : 0;
	case SBRIG_M_ABORTED_SUSPENDS:
		return (double)findings_of(r, "aborted_suspend", NULL);
	case SBRIG_M_UNKNOWN_WAKEUPS:
		return cm_num(r, "unknown_wake_count");
	case SBRIG_M_LEAK:
		return findings_of(r, "leak", bl) ? 1 : 0;
	case SBRIG_METRIC_COUNT:
		break;
	}
	return NAN;
}

/* the names of every blocker of any run (and of every leak), sorted */
static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int add_name(const char ***names, size_t *n, size_t *cap,
		    const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*names)[i], s))
			return 0;
	if (an_grow((void **)names, cap, *n + 1, sizeof(**names)))
		return -ENOMEM;
	(*names)[(*n)++] = s;
	return 0;
}

int cm_blocker_names(const struct cm_run *runs, size_t n, const char ***out,
		     size_t *count)
{
	const char **names = NULL;
	size_t k = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		jobj *bl = cm_get(runs[i].report, "blockers");
		jobj *f = cm_get(runs[i].report, "findings");

		for (size_t j = 0; j < json_object_array_length(bl); j++)
			if (add_name(&names, &k, &cap, cm_str(json_object_array_get_idx(bl, j), "name")))
				goto nomem;
		for (size_t j = 0; j < json_object_array_length(f); j++) {
			jobj *x = json_object_array_get_idx(f, j);

			if (!strcmp(cm_str(x, "kind"), "leak") && cm_get(x, "blocker") &&
			    add_name(&names, &k, &cap, cm_str(x, "blocker")))
				goto nomem;
		}
	}
	if (k)
		qsort(names, k, sizeof(*names), cmp_str);
	*out = names;
	*count = k;
	return 0;
nomem:
	free(names);
	return -ENOMEM;
}

