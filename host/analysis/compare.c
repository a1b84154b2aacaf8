// SPDX-License-Identifier: GPL-2.0
/*
 * compare.c - sbrig compare: base runs vs new runs -> compare.json
 * (host/doc/compare-format.md).
 *
 * Four steps:
 *
 * 1. Read every run. An argument is a report.json, a directory holding
 *    one, or a capture directory (it has a meta.ini), which is analysed
 *    on the fly in memory (nothing is written next to it). Every report
 *    is checked against report.json's table (report-load.c), so a run of
 *    another schema version or with a field missing is refused, naming
 *    the file and the field.
 * 2. Check that the runs are comparable: one scenario (provenance
 *    scenario_sha256) on one rig (rig_sha256). Different ones are refused
 *    (EXDEV) unless forced, and then listed in compare.json's warnings.
 * 3. Extract each metric per run (cm_metrics[]; per blocker for the
 *    per-blocker ones, over every blocker any run has) and decide each
 *    with cs_decide() (compare-stats.c); the leak metric is the rule "a
 *    blocker that leaks in a new run and in no base run regressed".
 * 4. Build compare.json as a json-c document. The comparison object is
 *    that document: compare.json is written from it, and the summary is
 *    rendered from it (compare-text.c), so what is printed is what the
 *    file says.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include <sbrig/analysis.h>
#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "analysis-internal.h"
#include "atomic.h"
#include "compare-internal.h"
#include "compare-stats.h"
#include "html-page.h"
#include "report-html.h"
#include "report-load.h"

typedef struct json_object jobj;

struct sbrig_compare {
	jobj *doc;			/* compare.json */
	enum sbrig_verdict verdict;
	jobj *rep[2];			/* the representative base, new report */
	int rep_idx[2];			/* its index among its side's runs */
};

/**
 * struct cm_run - one run read
 * @arg: the argument that named it
 * @report: its report.json document
 */
struct cm_run {
	const char *arg;
	jobj *report;
};

/* ---- json helpers ------------------------------------------------------ */

static jobj *get(jobj *o, const char *k)
{
	return an_jget(o, k);
}

static double num(jobj *o, const char *k)
{
	jobj *v = get(o, k);

	return v ? json_object_get_double(v) : NAN;
}

static const char *str(jobj *o, const char *k)
{
	const char *s = json_object_get_string(get(o, k));

	return s ? s : "";
}

static void put(jobj *o, const char *k, jobj *v)
{
	json_object_object_add(o, k, v);
}

/* a number with @sig significant digits, printed so; null if not finite */
static jobj *jg(double v, int sig)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof(buf), "%.*g", sig, v);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}

/* a metric's value: integers stay integers, others keep 10 digits */
static jobj *jv(double v)
{
	if (!isfinite(v))
		return NULL;
	if (v == floor(v) && fabs(v) < 9e15)
		return json_object_new_int64((int64_t)v);
	return jg(v, 10);
}

static jobj *js_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

/* ---- 1. reading the runs ------------------------------------------------ */

static bool is_file(const char *dir, const char *name)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* Read @arg into @r. 0 or -errno with the message naming @arg. */
static int load_run(const char *arg, const struct sbrig_compare_opts *o,
		    struct cm_run *r)
{
	struct sbrig_analysis_opts ao = { .leak_ns = o->leak_ns };
	struct sbrig_analysis *a;
	char p[4200];
	struct stat st;
	int ret;

	r->arg = arg;
	r->report = NULL;
	if (stat(arg, &st))
		return sbrig_set_error(-errno, "%s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return an_report_load(arg, &r->report);
	if (is_file(arg, "meta.ini")) {
		a = sbrig_analysis_run(arg, &ao);
		if (!a) {
			ret = -errno;
			sbrig_prefix_error("%s: analysing the capture", arg);
			return ret;
		}
		r->report = an_report_json(a);
		sbrig_analysis_free(a);
		if (!r->report)
			return sbrig_set_error(-ENOMEM, "%s: out of memory", arg);
		ret = an_report_check(r->report);
		if (ret) {
			sbrig_prefix_error("%s: its analysis", arg);
			json_object_put(r->report);
			r->report = NULL;
		}
		return ret;
	}
	if (is_file(arg, "report.json")) {
		snprintf(p, sizeof(p), "%s/report.json", arg);
		return an_report_load(p, &r->report);
	}
	return sbrig_set_error(-EINVAL, "%s: neither a report.json, nor a "
			       "directory with one, nor a capture directory "
			       "(no meta.ini)", arg);
}

/* ---- 2. are they comparable? ------------------------------------------- */

static const char *prov(const struct cm_run *r, const char *key)
{
	return str(get(get(r->report, "capture"), "provenance"), key);
}

/* short hash for messages */
static const char *short_hash(const char *h, char *buf)
{
	snprintf(buf, 13, "%s", *h ? h : "(none)");
	return buf;
}

/*
 * 0 when every run has @runs[0]'s scenario and rig; else -EXDEV naming the
 * first that differs, or with @force a warning added to @warnings (one
 * per key) and 0.
 */
static int check_comparable(const struct cm_run *runs, size_t n, bool force,
			    jobj *warnings)
{
	static const struct { const char *hash, *name, *what; } keys[] = {
		{ "scenario_sha256", "scenario", "scenarios" },
		{ "rig_sha256", "rig_name", "rigs" },
	};
	char why[1024], h0[16], h1[16];

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		for (size_t i = 1; i < n; i++) {
			if (!strcmp(prov(&runs[0], keys[k].hash),
				    prov(&runs[i], keys[k].hash)))
				continue;
			snprintf(why, sizeof(why), "runs of different %s: %s "
				 "(%s \"%s\", %s %s) and %s (%s \"%s\", %s %s)",
				 keys[k].what, runs[0].arg, keys[k].name,
				 prov(&runs[0], keys[k].name), keys[k].hash,
				 short_hash(prov(&runs[0], keys[k].hash), h0),
				 runs[i].arg, keys[k].name,
				 prov(&runs[i], keys[k].name), keys[k].hash,
				 short_hash(prov(&runs[i], keys[k].hash), h1));
			if (!force)
				return sbrig_set_error(-EXDEV, "%s; compare runs "
						       "of one scenario on one "
						       "rig, or force it", why);
			json_object_array_add(warnings,
					      json_object_new_string(why));
			break;	/* one warning per key */
		}
	}
	return 0;
}

/* ---- 3. the metrics ----------------------------------------------------- */

static double mean_of(jobj *arr, const char *key)
{
	size_t n = json_object_array_length(arr);
	double s = 0;

	if (!n)
		return NAN;
	for (size_t i = 0; i < n; i++)
		s += num(json_object_array_get_idx(arr, i), key);
	return s / (double)n;
}

static jobj *blocker_of(jobj *report, const char *name)
{
	jobj *bl = get(report, "blockers");

	for (size_t i = 0; i < json_object_array_length(bl); i++) {
		jobj *b = json_object_array_get_idx(bl, i);

		if (!strcmp(str(b, "name"), name))
			return b;
	}
	return NULL;
}

static size_t findings_of(jobj *report, const char *kind, const char *blocker)
{
	jobj *f = get(report, "findings");
	size_t k = 0;

	for (size_t i = 0; i < json_object_array_length(f); i++) {
		jobj *x = json_object_array_get_idx(f, i);

		if (!strcmp(str(x, "kind"), kind) &&
		    (!blocker || !strcmp(str(x, "blocker"), blocker)))
			k++;
	}
	return k;
}

/* metric @m of one run (of blocker @bl); NaN when the run has none */
static double run_metric(jobj *r, enum sbrig_metric m, const char *bl)
{
	jobj *wk = get(r, "wakeups"), *lat = get(r, "latency"), *b;
	size_t nw = json_object_array_length(wk);

	switch (m) {
	case SBRIG_M_ENERGY_TOTAL:
		return num(get(r, "energy"), "total_uJ");
	case SBRIG_M_ENERGY_PER_WAKEUP:
		return mean_of(wk, "energy_uJ");
	case SBRIG_M_AWAKE_PER_WAKEUP:
		return mean_of(wk, "awake_ns");
	case SBRIG_M_BASELINE:
		return num(get(r, "energy"), "baseline_uW");
	case SBRIG_M_LATENCY_MEDIAN:
		return num(lat, "n") > 0 ? num(lat, "median_ns") : NAN;
	case SBRIG_M_LATENCY_P95:
		return num(lat, "n") > 0 ? num(lat, "p95_ns") : NAN;
	case SBRIG_M_BLOCKER_ENERGY:
		if (!nw)
			return NAN;
		b = blocker_of(r, bl);
		return b ? num(b, "energy_uJ") / (double)nw : 0;
	case SBRIG_M_BLOCKER_ACTIVATIONS:
		b = blocker_of(r, bl);
		return b ? num(b, "activations") : 0;
	case SBRIG_M_ABORTED_SUSPENDS:
		return (double)findings_of(r, "aborted_suspend", NULL);
	case SBRIG_M_UNKNOWN_WAKEUPS:
		return num(r, "unknown_wake_count");
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

static int blocker_names(const struct cm_run *runs, size_t n,
			 const char ***out, size_t *count)
{
	const char **names = NULL;
	size_t k = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		jobj *bl = get(runs[i].report, "blockers");
		jobj *f = get(runs[i].report, "findings");

		for (size_t j = 0; j < json_object_array_length(bl); j++)
			if (add_name(&names, &k, &cap, str(json_object_array_get_idx(bl, j), "name")))
				goto nomem;
		for (size_t j = 0; j < json_object_array_length(f); j++) {
			jobj *x = json_object_array_get_idx(f, j);

			if (!strcmp(str(x, "kind"), "leak") && get(x, "blocker") &&
			    add_name(&names, &k, &cap, str(x, "blocker")))
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

/* FNV-1a of @s, to give each metric its own bootstrap stream */
static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
	return h;
}

/* {"n", "median", "min", "max", "values"} of one side */
static jobj *side_json(const double *v, size_t n, double median)
{
	jobj *o = json_object_new_object(), *vals = json_object_new_array();
	double lo = INFINITY, hi = -INFINITY;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		json_object_array_add(vals, jv(v[i]));
		if (isnan(v[i]))
			continue;
		k++;
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	put(o, "n", json_object_new_int64((int64_t)k));
	put(o, "median", jv(median));
	put(o, "min", jv(k ? lo : NAN));
	put(o, "max", jv(k ? hi : NAN));
	put(o, "values", vals);
	return o;
}

static jobj *pair(double a, double b, int sig)
{
	jobj *p;

	if (!isfinite(a) || !isfinite(b))
		return NULL;
	p = json_object_new_array();
	json_object_array_add(p, jg(a, sig));
	json_object_array_add(p, jg(b, sig));
	return p;
}

/* the present (non-NaN) values of @v into @out; how many */
static size_t present(const double *v, size_t n, double *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			out[k++] = v[i];
	return k;
}

/*
 * The leak rule: @kb of the base runs and @kn of the new ones have a leak
 * of the blocker.
 */
static void leak_outcome(size_t kb, size_t kn, struct cs_outcome *o)
{
	*o = (struct cs_outcome){ .ci_lo = NAN, .ci_hi = NAN, .p_value = NAN,
				  .change_rel = NAN };
	if (kn && !kb) {
		o->verdict = SBRIG_REGRESSED;
		o->reason = "a new leak: it leaks in new runs and in no base "
			    "run";
	} else if (kb && !kn) {
		o->verdict = SBRIG_IMPROVED;
		o->reason = "the leak is gone: it leaks in base runs and in no "
			    "new run";
	} else {
		o->verdict = SBRIG_UNCHANGED;
		o->reason = "it leaks in base and in new runs";
	}
}

/*
 * Decide metric @m (of blocker @bl) over the runs and add its entry to
 * @metrics; count its verdict in @counts. 0 or -ENOMEM.
 */
static int decide_metric(const struct cm_run *base, size_t nb,
			 const struct cm_run *next, size_t nn,
			 enum sbrig_metric m, const char *bl,
			 const struct sbrig_compare_config *cfg, jobj *metrics,
			 size_t *counts)
{
	const struct cm_metric_def *def = &cm_metrics[m];
	const struct sbrig_compare_threshold *thr = &cfg->metric[m];
	double *vb = calloc(nb * 2 + 1, sizeof(*vb));
	double *vn = calloc(nn * 2 + 1, sizeof(*vn));
	double *pb = vb ? vb + nb : NULL, *pn = vn ? vn + nn : NULL;
	size_t kb, kn, i;
	struct cs_outcome o;
	uint64_t seed;
	jobj *e;
	int ret = 0;

	if (!vb || !vn) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nb; i++)
		vb[i] = run_metric(base[i].report, m, bl);
	for (i = 0; i < nn; i++)
		vn[i] = run_metric(next[i].report, m, bl);
	kb = present(vb, nb, pb);
	kn = present(vn, nn, pn);
	if (!kb && !kn)
		goto out;	/* no run has it: not compared */
	if (m == SBRIG_M_LEAK) {
		size_t lb = 0, ln = 0;

		for (i = 0; i < kb; i++)
			lb += pb[i] > 0;
		for (i = 0; i < kn; i++)
			ln += pn[i] > 0;
		if (!lb && !ln)
			goto out;
		leak_outcome(lb, ln, &o);
		o.median_base = cs_median(pb, kb);
		o.median_new = cs_median(pn, kn);
		o.change = o.median_new - o.median_base;
	} else if (!kb || !kn) {
		o = (struct cs_outcome){ .verdict = SBRIG_INCONCLUSIVE,
			.ci_lo = NAN, .ci_hi = NAN, .p_value = NAN,
			.change = NAN, .change_rel = NAN, .threshold = NAN,
			.median_base = kb ? cs_median(pb, kb) : NAN,
			.median_new = kn ? cs_median(pn, kn) : NAN,
			.reason = !kb ? "no base run has a value (no wakeup?)" :
					"no new run has a value (no wakeup?)" };
	} else {
		seed = hash_str(hash_str(cfg->seed ^ 0xCBF29CE484222325ull,
					 def->name), bl ? bl : "");
		ret = cs_decide(pb, kb, pn, kn, def->worse, thr, cfg, seed, &o);
		if (ret)
			goto out;
	}
	counts[o.verdict]++;

	e = json_object_new_object();
	put(e, "metric", json_object_new_string(def->name));
	put(e, "blocker", bl ? json_object_new_string(bl) : NULL);
	put(e, "unit", json_object_new_string(def->unit));
	put(e, "worse", json_object_new_string(def->worse > 0 ? "higher" :
						"lower"));
	put(e, "verdict", json_object_new_string(sbrig_verdict_name(o.verdict)));
	put(e, "reason", json_object_new_string(o.reason));
	put(e, "base", side_json(vb, nb, o.median_base));
	put(e, "new", side_json(vn, nn, o.median_new));
	put(e, "change", jg(o.change, 10));
	put(e, "change_rel", jg(o.change_rel, 6));
	put(e, "ci", pair(o.ci_lo, o.ci_hi, 10));
	put(e, "ci_rel", o.median_base != 0 ?
	    pair(o.ci_lo / fabs(o.median_base), o.ci_hi / fabs(o.median_base),
		 6) : NULL);
	put(e, "confidence", m == SBRIG_M_LEAK ? NULL :
	    jg(cfg->confidence, 6));
	put(e, "test", json_object_new_string(m == SBRIG_M_LEAK ? "new-leak" :
					       "mann-whitney-u"));
	put(e, "p_value", jg(o.p_value, 6));
	put(e, "u", m == SBRIG_M_LEAK || isnan(o.p_value) ? NULL :
	    jg(o.u, 10));
	put(e, "alpha", m == SBRIG_M_LEAK ? NULL : jg(thr->alpha > 0 ?
	    thr->alpha : cfg->alpha, 6));
	put(e, "threshold", m == SBRIG_M_LEAK ? NULL : jg(o.threshold, 10));
	put(e, "min_change", m == SBRIG_M_LEAK ? NULL : jg(thr->min_change, 6));
	put(e, "min_abs", m == SBRIG_M_LEAK ? NULL : jg(thr->min_abs, 10));
	put(e, "runs_needed", o.verdict == SBRIG_INCONCLUSIVE && o.runs_needed ?
	    json_object_new_int64(o.runs_needed) : NULL);
	put(e, "more_runs", o.verdict == SBRIG_INCONCLUSIVE && o.more_runs ?
	    json_object_new_int64(o.more_runs) : NULL);
	json_object_array_add(metrics, e);
out:
	free(vb);
	free(vn);
	return ret;
}

/* ---- 4. the document ---------------------------------------------------- */

static jobj *runs_json(const struct cm_run *runs, size_t n)
{
	jobj *o = json_object_new_object(), *list = json_object_new_array();
	jobj *shas = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		jobj *r = json_object_new_object();
		const char *sha = prov(&runs[i], "git_sha");
		bool seen = false;

		put(r, "input", json_object_new_string(runs[i].arg));
		put(r, "capture", json_object_new_string(str(get(runs[i].report,
						"capture"), "path")));
		put(r, "git_sha", js_or_null(sha));
		json_object_array_add(list, r);
		for (size_t j = 0; j < json_object_array_length(shas); j++)
			seen |= !strcmp(json_object_get_string(
				json_object_array_get_idx(shas, j)), sha);
		if (!seen && *sha)
			json_object_array_add(shas, json_object_new_string(sha));
	}
	put(o, "n", json_object_new_int64((int64_t)n));
	put(o, "git_sha", shas);
	put(o, "runs", list);
	return o;
}

static jobj *config_json(const struct sbrig_compare_config *cfg)
{
	jobj *o = json_object_new_object();
	char seed[32];

	snprintf(seed, sizeof(seed), "%" PRIu64, cfg->seed);
	put(o, "path", js_or_null(cfg->path));
	put(o, "alpha", jg(cfg->alpha, 6));
	put(o, "confidence", jg(cfg->confidence, 6));
	put(o, "power", jg(cfg->power, 6));
	put(o, "resamples", json_object_new_int64(cfg->resamples));
	put(o, "min_runs", json_object_new_int64(cfg->min_runs));
	put(o, "seed", json_object_new_string(seed));
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
		put(o, keys[i], js_or_null(prov(r, keys[i])));
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
			jobj *sd = get(m, side), *vals = get(sd, "values");
			double med = num(sd, "median"), best = INFINITY;
			size_t k = 0;

			if (strcmp(str(m, "metric"), pref[p]) || get(m, "blocker") ||
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
		ret = load_run(i < nbase ? base[i] : next[i - nbase], opts,
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
	ret = check_comparable(runs, n, opts->force, warnings);
	if (ret) {
		json_object_put(warnings);
		json_object_put(metrics);
		goto fail;
	}
	ret = blocker_names(runs, n, &bl, &nbl);
	for (int m = 0; !ret && m < SBRIG_METRIC_COUNT; m++) {
		if (!cm_metrics[m].per_blocker) {
			ret = decide_metric(runs, nbase, runs + nbase, nnew, m,
					    NULL, cfg, metrics, counts);
			continue;
		}
		for (size_t b = 0; !ret && b < nbl; b++)
			ret = decide_metric(runs, nbase, runs + nbase, nnew, m,
					    bl[b], cfg, metrics, counts);
	}
	free(bl);
	if (ret) {
		json_object_put(warnings);
		json_object_put(metrics);
		goto fail;
	}

	snprintf(gen, sizeof(gen), "sbrig compare %s", sbrig_version);
	put(doc, "schema", json_object_new_string(SBRIG_COMPARE_SCHEMA));
	put(doc, "version", json_object_new_int(SBRIG_COMPARE_VERSION));
	put(doc, "generator", json_object_new_string(gen));
	put(doc, "verdict", json_object_new_string(
		sbrig_verdict_name(overall(counts))));
	cnt = json_object_new_object();
	for (int v = 0; v < SBRIG_VERDICT_COUNT; v++)
		put(cnt, sbrig_verdict_name(v),
		    json_object_new_int64((int64_t)counts[v]));
	put(doc, "counts", cnt);
	put(doc, "forced", json_object_new_boolean(opts->force));
	put(doc, "warnings", warnings);
	put(doc, "config", config_json(cfg));
	put(doc, "provenance", provenance_json(&runs[0]));
	put(doc, "base", runs_json(runs, nbase));
	put(doc, "new", runs_json(runs + nbase, nnew));
	put(doc, "metrics", metrics);

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

/* ---- one run, for other readers (the history) --------------------------- */

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
	ret = load_run(arg, &o, &r->run);
	if (!ret && blocker_names(&r->run, 1, &r->blockers, &r->nblockers))
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
		return str(get(r->run.report, "capture"), key);
	if (!strcmp(key, "generator"))
		return str(r->run.report, key);
	return prov(&r->run, key);
}

int64_t sbrig_run_int(const struct sbrig_run *r, const char *key)
{
	return json_object_get_int64(get(get(r->run.report, "capture"), key));
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
	return run_metric(r->run.report, m, blocker);
}

bool sbrig_metric_per_blocker(enum sbrig_metric m)
{
	return (unsigned int)m < SBRIG_METRIC_COUNT && cm_metrics[m].per_blocker;
}

/* ---- the comparison page ----------------------------------------------- */

/* the coarsest envelope level of @trace, the timeline and the states */
static jobj *trace_summary(jobj *report, const char *input)
{
	jobj *t = get(report, "trace"), *lv = get(t, "levels"), *o, *best = NULL;
	size_t nb = SIZE_MAX;

	for (size_t i = 0; i < json_object_array_length(lv); i++) {
		jobj *l = json_object_array_get_idx(lv, i);
		size_t k = json_object_array_length(get(l, "mean"));

		if (k && k < nb) {
			nb = k;
			best = l;
		}
	}
	o = json_object_new_object();
	put(o, "input", json_object_new_string(input));
	put(o, "capture", json_object_new_string(str(get(report, "capture"), "path")));
	put(o, "start_ns", json_object_get(get(get(report, "capture"), "start_ns")));
	put(o, "level", json_object_get(best));
	put(o, "timeline", json_object_get(get(t, "timeline")));
	put(o, "states", json_object_get(get(t, "states")));
	return o;
}

int sbrig_compare_render_html(const struct sbrig_compare *c, const char *path)
{
	jobj *data = json_object_new_object(), *runs;
	int ret;

	put(data, "compare", json_object_get(c->doc));
	for (int side = 0; side < 2; side++) {
		runs = get(get(c->doc, side ? "new" : "base"), "runs");
		put(data, side ? "new_run" : "base_run", trace_summary(
			c->rep[side], str(json_object_array_get_idx(runs,
				c->rep_idx[side]), "input")));
	}
	ret = an_page_write(&(struct an_page){
		.title = "sbrig compare",
		.noscript = "This page draws its charts with JavaScript; the "
			    "data is compare.json.",
		.main_id = "compare", .data_id = "sbrig-compare", .data = data,
		.css = sbrig_compare_page_css, .js = sbrig_compare_page_js,
	}, path);
	json_object_put(data);
	return ret;
}
