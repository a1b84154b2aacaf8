// SPDX-License-Identifier: GPL-2.0
/*
 * compare-json.c - compare.json read back and checked (for the exporters
 * and renderers that take a compare.json: sbrig export --junit/--lava).
 * The table names every field they read, with its type; the walk is
 * report-load.c's, so errors name the field by its path
 * ("metrics[3].verdict: expected a string, got null").
 */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "cm-shared.h"
#include "report-load.h"

static const struct jfield f_side[] = {
	{ "n", J_INT, 0, 0, NULL },
	{ "median", J_NUM, J_NULL, 0, NULL },
	{ "min", J_NUM, J_NULL, 0, NULL },
	{ "max", J_NUM, J_NULL, 0, NULL },
	{ "values", J_ARR, 0, 0, an_je_num_null },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield e_pair[] = { { "", J_NUM, 0, 0, NULL } };

static const struct jfield f_metric[] = {
	{ "metric", J_STR, 0, 0, NULL },
	{ "blocker", J_STR, J_NULL, 0, NULL },
	{ "unit", J_STR, 0, 0, NULL },
	{ "worse", J_STR, 0, 0, NULL },
	{ "verdict", J_STR, 0, 0, NULL },
	{ "reason", J_STR, 0, 0, NULL },
	{ "base", J_OBJ, 0, 0, f_side },
	{ "new", J_OBJ, 0, 0, f_side },
	{ "change", J_NUM, J_NULL, 0, NULL },
	{ "change_rel", J_NUM, J_NULL, 0, NULL },
	{ "ci", J_ARR, J_NULL, 2, e_pair },
	{ "ci_rel", J_ARR, J_NULL, 2, e_pair },
	{ "confidence", J_NUM, J_NULL, 0, NULL },
	{ "test", J_STR, 0, 0, NULL },
	{ "p_value", J_NUM, J_NULL, 0, NULL },
	{ "p_adjusted", J_NUM, J_NULL, 0, NULL },
	{ "alpha", J_NUM, J_NULL, 0, NULL },
	{ "threshold", J_NUM, J_NULL, 0, NULL },
	{ "runs_needed", J_INT, J_NULL, 0, NULL },
	{ "more_runs", J_INT, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_metric[] = { { "", J_OBJ, 0, 0, f_metric } };

static const struct jfield f_run[] = {
	{ "input", J_STR, 0, 0, NULL },
	{ "capture", J_STR, 0, 0, NULL },
	{ "git_sha", J_STR, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_run[] = { { "", J_OBJ, 0, 0, f_run } };

static const struct jfield f_runs[] = {
	{ "n", J_INT, 0, 0, NULL },
	{ "git_sha", J_ARR, 0, 0, an_je_str },
	{ "runs", J_ARR, 0, 0, e_run },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield f_counts[] = {
	{ "regressed", J_INT, 0, 0, NULL },
	{ "improved", J_INT, 0, 0, NULL },
	{ "unchanged", J_INT, 0, 0, NULL },
	{ "inconclusive", J_INT, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield f_config[] = {
	{ "path", J_STR, J_NULL, 0, NULL },
	{ "alpha", J_NUM, 0, 0, NULL },
	{ "confidence", J_NUM, 0, 0, NULL },
	{ "min_runs", J_INT, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield compare_fields[] = {
	{ "schema", J_STR, 0, 0, NULL },
	{ "version", J_INT, 0, 0, NULL },
	{ "generator", J_STR, J_OPT, 0, NULL },
	{ "verdict", J_STR, 0, 0, NULL },
	{ "counts", J_OBJ, 0, 0, f_counts },
	{ "forced", J_BOOL, 0, 0, NULL },
	{ "warnings", J_ARR, 0, 0, an_je_str },
	{ "config", J_OBJ, 0, 0, f_config },
	{ "provenance", J_MAP, 0, 0, an_je_str_null },
	{ "base", J_OBJ, 0, 0, f_runs },
	{ "new", J_OBJ, 0, 0, f_runs },
	{ "metrics", J_ARR, 0, 0, e_metric },
	{ NULL, 0, 0, 0, NULL },
};

int cm_compare_check(struct json_object *root)
{
	static const char *const verdicts[] = {
		"regressed", "improved", "unchanged", "inconclusive",
	};
	struct json_object *m;
	int ret;

	ret = an_json_check_doc(root, SBRIG_COMPARE_SCHEMA,
				SBRIG_COMPARE_VERSION, compare_fields);
	if (ret)
		return ret;
	m = an_jget(root, "metrics");
	for (size_t i = 0; i <= json_object_array_length(m); i++) {
		const char *v = json_object_get_string(an_jget(
			i < json_object_array_length(m) ?
			json_object_array_get_idx(m, i) : root, "verdict"));
		bool ok = false;

		for (size_t k = 0; k < sizeof(verdicts) / sizeof(*verdicts); k++)
			ok |= !strcmp(v, verdicts[k]);
		if (ok)
			continue;
		if (i < json_object_array_length(m))
			return sbrig_set_error(-EINVAL, "field 'metrics[%zu]."
					       "verdict': \"%.32s\" is not a "
					       "verdict", i, v);
		return sbrig_set_error(-EINVAL, "field 'verdict': \"%.32s\" "
				       "is not a verdict", v);
	}
	return 0;
}

int cm_compare_load(const char *path, struct json_object **out)
{
	struct json_object *root = NULL;
	int ret;

	ret = an_json_load(path, &root);
	if (ret)
		return ret;
	ret = cm_compare_check(root);
	if (ret) {
		sbrig_prefix_error("%s", path);
		json_object_put(root);
		return ret;
	}
	*out = root;
	return 0;
}
