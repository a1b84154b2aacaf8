// SPDX-License-Identifier: GPL-2.0
/*
 * compare-run.c - one run read the way sbrig compare reads each of its
 * arguments, with the metrics compare would extract from it: the
 * sbrig_run_* API (sbrig/compare.h) for other readers (the history).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "cm-shared.h"

struct sbrig_run {
	struct cm_run run;
	const char **blockers;
	size_t nblockers;
};

struct sbrig_run *sbrig_run_load(const char *arg, int64_t leak_ns)
{
	struct sbrig_compare_opts o = { .leak_ns = leak_ns };
	struct sbrig_run *r = calloc(1, sizeof(*r));
	int ret;

	if (!r) {
		sbrig_set_error(-ENOMEM, "%s: out of memory", arg);
		errno = ENOMEM;
		return NULL;
	}
	ret = cm_load_run(arg, &o, &r->run);
	if (!ret && cm_blocker_names(&r->run, 1, &r->blockers, &r->nblockers))
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", arg);
	if (ret) {
		sbrig_run_free(r);
		errno = -ret;
		return NULL;
	}
	return r;
}

void sbrig_run_free(struct sbrig_run *r)
{
	if (!r)
		return;
	json_object_put(r->run.report);
	free(r->blockers);
	free(r);
}

const char *sbrig_run_field(const struct sbrig_run *r, const char *key)
{
	if (!strcmp(key, "path") || !strcmp(key, "status"))
		return cm_str(cm_get(r->run.report, "capture"), key);
	if (!strcmp(key, "generator"))
		return cm_str(r->run.report, key);
	return cm_prov(&r->run, key);
}

int64_t sbrig_run_int(const struct sbrig_run *r, const char *key)
{
	return json_object_get_int64(cm_get(cm_get(r->run.report, "capture"), key));
}

size_t sbrig_run_blockers(const struct sbrig_run *r, const char *const **names)
{
	*names = r->blockers;
	return r->nblockers;
}

double sbrig_run_metric(const struct sbrig_run *r, enum sbrig_metric m,
			const char *blocker)
{
	if ((unsigned int)m >= SBRIG_METRIC_COUNT ||
	    cm_metrics[m].per_blocker != (blocker != NULL))
		return NAN;
	return cm_run_metric(r->run.report, m, blocker);
}

bool sbrig_metric_per_blocker(enum sbrig_metric m)
{
	return (unsigned int)m < SBRIG_METRIC_COUNT && cm_metrics[m].per_blocker;
}

