// SPDX-License-Identifier: GPL-2.0
/*
 * compare.c - sbrig compare: base runs vs new runs -> compare.json
 * (host/doc/compare-format.md), the document and the calls that build it.
 *
 * Four steps, a file each:
 *
 * 1. Read every run (compare-load.c): a report.json, a directory holding
 *    one, or a capture directory analysed on the fly; each report checked
 *    against report.json's table, its trace cut to what compare uses.
 * 2. Check that the runs can be compared (compare-load.c): enough of them
 *    for the exact test to reach alpha at all (else ERANGE, naming the
 *    smallest number a side that can, unless forced), one scenario
 *    (provenance scenario_sha256) on one rig (rig_sha256), every capture
 *    complete, without gaps and of like duration. Others are refused
 *    (EXDEV) unless forced, and then listed in compare.json's warnings.
 * 3. Extract each metric per run (compare-metrics.c; per blocker for the
 *    per-blocker ones, over every blocker any run has), measure it,
 *    adjust the p-values over the comparison and judge each
 *    (compare-decide.c, with compare-stats.c).
 * 4. Build compare.json as a json-c document (here). The comparison
 *    object is that document: compare.json is written from it, the
 *    summary is rendered from it (compare-text.c) and the page from it
 *    and the two representative runs (compare-html.c), so what is printed
 *    is what the file says.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "atomic.h"
#include "cm-shared.h"

typedef struct json_object jobj;

static jobj *runs_json(const struct cm_run *runs, size_t n)
{
	jobj *o = json_object_new_object(), *list = json_object_new_array();
	jobj *shas = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		jobj *r = json_object_new_object();
		const char *sha = cm_prov(&runs[i], "git_sha");
		bool seen = false;

		cm_put(r, "input", json_object_new_string(runs[i].arg));
		cm_put(r, "capture", json_object_new_string(cm_str(cm_get(runs[i].report,
						"capture"), "path")));
		cm_put(r, "git_sha", cm_js_or_null(sha));
		json_object_array_add(list, r);
		for (size_t j = 0; j < json_object_array_length(shas); j++)
			seen |= !strcmp(json_object_get_string(
				json_object_array_get_idx(shas, j)), sha);
		if (!seen && *sha)
			json_object_array_add(shas, json_object_new_string(sha));
	}
	cm_put(o, "n", json_object_new_int64((int64_t)n));
	cm_put(o, "git_sha", shas);
	cm_put(o, "runs", list);
	return o;
}

static jobj *config_json(const struct sbrig_compare_config *cfg)
{
	jobj *o = json_object_new_object();

	cm_put(o, "path", cm_js_or_null(cfg->path));
	cm_put(o, "alpha", cm_jg(cfg->alpha, 6));
	cm_put(o, "confidence", cm_jg(cfg->confidence, 6));
	cm_put(o, "power", cm_jg(cfg->power, 6));
	cm_put(o, "min_runs", json_object_new_int64(cfg->min_runs));
	return o;
}

static jobj *provenance_json(const struct cm_run *r)
{
	static const char *const keys[] = {
		"rig_name", "rig_config", "rig_sha256", "scenario",
		"scenario_sha256",
	};
	jobj *o = json_object_new_object();

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cm_put(o, keys[i], cm_js_or_null(cm_prov(r, keys[i])));
	return o;
}

static enum sbrig_verdict overall(const size_t *counts)
{
	if (counts[SBRIG_REGRESSED])
		return SBRIG_REGRESSED;
	if (counts[SBRIG_INCONCLUSIVE])
		return SBRIG_INCONCLUSIVE;
	if (counts[SBRIG_IMPROVED])
		return SBRIG_IMPROVED;
	return SBRIG_UNCHANGED;
}

static void free_runs(struct cm_run *runs, size_t n)
{
	for (size_t i = 0; runs && i < n; i++)
		json_object_put(runs[i].report);
	free(runs);
}

/*
 * The representative run of a side: the one whose energy per wakeup (else
 * total energy) is nearest its side's median; 0 when no run has either.
 */
static size_t representative(jobj *metrics, const char *side)
{
	static const char *const pref[] = { "energy_per_wakeup_uJ",
					    "energy_total_uJ" };

	for (size_t p = 0; p < 2; p++) {
		for (size_t i = 0; i < json_object_array_length(metrics); i++) {
			jobj *m = json_object_array_get_idx(metrics, i);
			jobj *sd = cm_get(m, side), *vals = cm_get(sd, "values");
			double med = cm_num(sd, "median"), best = INFINITY;
			size_t k = 0;

			if (strcmp(cm_str(m, "metric"), pref[p]) || cm_get(m, "blocker") ||
			    isnan(med))
				continue;
			for (size_t j = 0; j < json_object_array_length(vals); j++) {
				jobj *v = json_object_array_get_idx(vals, j);

				if (v && fabs(json_object_get_double(v) - med) < best) {
					best = fabs(json_object_get_double(v) - med);
					k = j;
				}
			}
			return k;
		}
	}
	return 0;
}

struct sbrig_compare *sbrig_compare_run(const char *const *base, size_t nbase,
					const char *const *next, size_t nnew,
					const struct sbrig_compare_opts *opts)
{
	static const struct sbrig_compare_opts no_opts;
	struct sbrig_compare_config defaults;
	const struct sbrig_compare_config *cfg;
	size_t n = nbase + nnew, nbl = 0, counts[SBRIG_VERDICT_COUNT] = { 0 };
	const char **bl = NULL;
	struct sbrig_compare *c = NULL;
	struct cm_run *runs;
	jobj *doc = NULL, *metrics, *warnings, *cnt;
	char gen[128];
	int ret = 0;

	if (!opts)
		opts = &no_opts;
	cfg = opts->cfg;
	if (!cfg) {
		sbrig_compare_config_init(&defaults);
		cfg = &defaults;
	}
	if (!nbase || !nnew) {
		sbrig_set_error(-EINVAL, "no %s run to compare (give at least "
				"one report or capture on each side)",
				!nbase ? "base" : "new");
		errno = EINVAL;
		return NULL;
	}
	runs = calloc(n, sizeof(*runs));
	if (!runs)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		ret = cm_load_run(i < nbase ? base[i] : next[i - nbase], opts,
			       &runs[i]);
		if (ret) {
			if (ret != -ENOMEM)
				ret = -EINVAL;
			goto fail;
		}
	}
	doc = json_object_new_object();
	warnings = json_object_new_array();
	metrics = json_object_new_array();
	ret = cm_check_runs(runs, nbase, nnew, cfg, opts->force, warnings);
	if (ret) {
		json_object_put(warnings);
		json_object_put(metrics);
		goto fail;
	}
	ret = cm_blocker_names(runs, n, &bl, &nbl);
	if (!ret)
		ret = cm_decide_all(runs, nbase, nnew, bl, nbl, cfg, metrics,
				 counts);
	free(bl);
	if (ret) {
		json_object_put(warnings);
		json_object_put(metrics);
		goto fail;
	}

	snprintf(gen, sizeof(gen), "sbrig compare %s", sbrig_version);
	cm_put(doc, "schema", json_object_new_string(SBRIG_COMPARE_SCHEMA));
	cm_put(doc, "version", json_object_new_int(SBRIG_COMPARE_VERSION));
	cm_put(doc, "generator", json_object_new_string(gen));
	cm_put(doc, "verdict", json_object_new_string(
		sbrig_verdict_name(overall(counts))));
	cnt = json_object_new_object();
	for (int v = 0; v < SBRIG_VERDICT_COUNT; v++)
		cm_put(cnt, sbrig_verdict_name(v),
		    json_object_new_int64((int64_t)counts[v]));
	cm_put(doc, "counts", cnt);
	cm_put(doc, "forced", json_object_new_boolean(opts->force));
	cm_put(doc, "warnings", warnings);
	cm_put(doc, "config", config_json(cfg));
	cm_put(doc, "provenance", provenance_json(&runs[0]));
	cm_put(doc, "base", runs_json(runs, nbase));
	cm_put(doc, "new", runs_json(runs + nbase, nnew));
	cm_put(doc, "metrics", metrics);

	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->doc = doc;
	c->verdict = overall(counts);
	for (int side = 0; side < 2; side++) {
		size_t k = representative(metrics, side ? "new" : "base");

		if (k >= (side ? nnew : nbase))
			k = 0;
		c->rep_idx[side] = (int)k;
		c->rep[side] = json_object_get(runs[side ? nbase + k : k].report);
	}
	free_runs(runs, n);
	return c;

nomem:
	ret = sbrig_set_error(-ENOMEM, "compare: out of memory");
fail:
	json_object_put(doc);
	free_runs(runs, n);
	errno = -ret;
	return NULL;
}

void sbrig_compare_free(struct sbrig_compare *c)
{
	if (!c)
		return;
	json_object_put(c->doc);
	json_object_put(c->rep[0]);
	json_object_put(c->rep[1]);
	free(c);
}

enum sbrig_verdict sbrig_compare_verdict(const struct sbrig_compare *c)
{
	return c->verdict;
}

int sbrig_compare_write_json(const struct sbrig_compare *c, const char *path)
{
	const char *text;
	size_t len;
	char *buf;
	int ret;

	text = json_object_to_json_string_length(c->doc,
						 JSON_C_TO_STRING_PRETTY |
						 JSON_C_TO_STRING_SPACED |
						 JSON_C_TO_STRING_NOSLASHESCAPE,
						 &len);
	buf = text ? malloc(len + 1) : NULL;
	if (!buf)
		return sbrig_set_error(-ENOMEM, "compare: out of memory");
	memcpy(buf, text, len);
	buf[len] = '\n';
	ret = an_write_atomic(path, buf, len + 1);
	free(buf);
	return ret;
}

int sbrig_compare_render_text(const struct sbrig_compare *c, FILE *out)
{
	return cm_render_text(c->doc, out);
}

