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
 * 2. Check that the runs can be compared: enough of them for the exact
 *    test to reach alpha at all (else ERANGE, naming the smallest number
 *    a side that can, unless forced), one scenario (provenance scenario_sha256) on one
 *    rig (rig_sha256), every capture complete, without gaps and of like
 *    duration. Others are refused (EXDEV) unless forced, and then listed
 *    in compare.json's warnings.
 * 3. Extract each metric per run (cm_metrics[]; per blocker for the
 *    per-blocker ones, over every blocker any run has) and measure it
 *    (compare-stats.c: the Mann-Whitney U test with the Hodges-Lehmann
 *    shift and its Moses interval; counts by an exact Poisson test;
 *    leaks by Fisher's exact test on the runs that leak); adjust the
 *    p-values over the comparison (Benjamini-Hochberg, the leaks a
 *    family of their own); then judge each (cs_judge()).
 * 4. Build compare.json as a json-c document. The comparison object is
 *    that document: compare.json is written from it, and the summary is
 *    rendered from it (compare-text.c), so what is printed is what the
 *    file says.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
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

/*
 * Keep of @report's trace only what compare uses: the coarsest envelope
 * level, the timeline and the states (the comparison page's trace
 * summary). The finer levels and the raw samples are most of a report
 * (a one-hour run: MBs), and compare holds every run to the end.
 */
static void slim_trace(jobj *report)
{
	jobj *t = get(report, "trace"), *lv = get(t, "levels"), *best = NULL;
	size_t nb = SIZE_MAX;

	if (!t)
		return;
	json_object_object_del(t, "raw");
	for (size_t i = 0; i < json_object_array_length(lv); i++) {
		jobj *l = json_object_array_get_idx(lv, i);
		size_t k = json_object_array_length(get(l, "mean"));

		if (k && k < nb) {
			nb = k;
			best = l;
		}
	}
	if (!lv || !best)
		return;
	json_object_get(best);
	json_object_object_add(t, "levels", json_object_new_array());
	json_object_array_add(get(t, "levels"), best);
}

static int load_report(const char *arg, const struct sbrig_compare_opts *o,
			struct cm_run *r);

/* Read @arg into @r, its trace slimmed. 0 or -errno with the message
 * naming @arg. */
static int load_run(const char *arg, const struct sbrig_compare_opts *o,
		    struct cm_run *r)
{
	int ret = load_report(arg, o, r);

	if (!ret)
		slim_trace(r->report);
	return ret;
}

/* Read @arg into @r. 0 or -errno with the message naming @arg. */
static int load_report(const char *arg, const struct sbrig_compare_opts *o,
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

/* a run's duration differs "very" from the runs' median beyond this ratio */
#define DURATION_RATIO 1.5

/*
 * Runs that cannot be read as like for like: a capture still open (its
 * writer killed: its end is missing), one with gaps in its samples (energy
 * left out reads as "improved"), one whose duration is off the runs'
 * median by more than DURATION_RATIO. 0 when none; else -EXDEV naming the
 * first, or with @force a warning per run in @warnings and 0.
 */
static int check_quality(const struct cm_run *runs, size_t n, bool force,
			 jobj *warnings)
{
	double *d = calloc(n + 1, sizeof(*d)), med;
	char why[1024];
	int ret = 0;

	if (!d)
		return sbrig_set_error(-ENOMEM, "compare: out of memory");
	for (size_t i = 0; i < n; i++)
		d[i] = num(get(runs[i].report, "capture"), "duration_ns");
	med = cs_median(d, n);	/* sorts d */
	for (size_t i = 0; i < n && !ret; i++) {
		jobj *cap = get(runs[i].report, "capture");
		double dur = num(cap, "duration_ns"), gaps = num(cap, "gaps");
		const char *status = str(cap, "status");

		if (strcmp(status, "complete"))
			snprintf(why, sizeof(why), "%s: capture status \"%s\" "
				 "(not complete: its end is missing)",
				 runs[i].arg, status);
		else if (gaps > 0)
			snprintf(why, sizeof(why), "%s: %.0f gap%s in its "
				 "samples (their energy is not counted)",
				 runs[i].arg, gaps, gaps == 1 ? "" : "s");
		else if (med > 0 && (dur > med * DURATION_RATIO ||
				     dur * DURATION_RATIO < med))
			snprintf(why, sizeof(why), "%s: lasts %.3f s, the runs' "
				 "median %.3f s (more than %.1fx apart)",
				 runs[i].arg, dur / 1e9, med / 1e9,
				 DURATION_RATIO);
		else
			continue;
		if (!force)
			ret = sbrig_set_error(-EXDEV, "%s; compare complete "
					      "runs without gaps and of like "
					      "durations, or force it", why);
		else
			json_object_array_add(warnings,
					      json_object_new_string(why));
	}
	free(d);
	return ret;
}

/*
 * -ERANGE when @nb and @nn runs can never give a significant difference
 * at the smallest alpha of @cfg (the exact test's smallest p, 2 / C(nb +
 * nn, nb), is above it), naming the smallest number of runs a side that
 * can; with @force a warning in @warnings instead. Else 0.
 */
static int check_sample_size(size_t nb, size_t nn,
			     const struct sbrig_compare_config *cfg, bool force,
			     jobj *warnings)
{
	double alpha = cfg->alpha, minp = cs_min_p(nb, nn);
	char why[512];

	for (int m = 0; m < SBRIG_METRIC_COUNT; m++)
		if (m != SBRIG_M_LEAK && cfg->metric[m].alpha > 0)
			alpha = fmin(alpha, cfg->metric[m].alpha);
	if (minp <= alpha)
		return 0;
	snprintf(why, sizeof(why), "%zu base and %zu new runs can never show "
		 "a significant difference at alpha %g (the smallest p of the "
		 "exact test, 2 / C(%zu, %zu), is %.3g): give at least %u runs "
		 "a side", nb, nn, alpha, nb + nn, nb, minp,
		 cs_smallest_runs(alpha));
	if (!force)
		return sbrig_set_error(-ERANGE, "%s, or force it", why);
	json_object_array_add(warnings, json_object_new_string(why));
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

/**
 * struct cm_entry - one metric (of one blocker) being decided
 * @m: the metric
 * @bl: its blocker, or NULL
 * @vb: the base runs' values, one per run, NaN for a run without one
 * @vn: the new runs' values
 * @lb: for a leak: base runs that leak
 * @ln: new runs that leak
 * @tested: a test gave a p-value (it belongs to a family)
 * @o: the outcome
 */
struct cm_entry {
	enum sbrig_metric m;
	const char *bl;
	double *vb, *vn;
	size_t lb, ln;
	bool tested;
	struct cs_outcome o;
};

/*
 * Measure metric @m (of blocker @bl) over the runs into @e: its values,
 * and its test and estimate. 1 when no run has it (not compared), 0, or
 * -ENOMEM.
 */
static int measure_metric(const struct cm_run *base, size_t nb,
			  const struct cm_run *next, size_t nn,
			  enum sbrig_metric m, const char *bl,
			  const struct sbrig_compare_config *cfg,
			  struct cm_entry *e)
{
	const struct sbrig_compare_threshold *thr = &cfg->metric[m];
	double *pb = calloc(nb + nn + 1, sizeof(*pb)), *pn;
	size_t kb, kn, i;
	int ret = 0;

	*e = (struct cm_entry){ .m = m, .bl = bl };
	e->vb = calloc(nb + 1, sizeof(*e->vb));
	e->vn = calloc(nn + 1, sizeof(*e->vn));
	if (!pb || !e->vb || !e->vn) {
		ret = -ENOMEM;
		goto out;
	}
	pn = pb + nb;
	for (i = 0; i < nb; i++)
		e->vb[i] = run_metric(base[i].report, m, bl);
	for (i = 0; i < nn; i++)
		e->vn[i] = run_metric(next[i].report, m, bl);
	kb = present(e->vb, nb, pb);
	kn = present(e->vn, nn, pn);
	if (!kb && !kn) {
		ret = 1;	/* no run has it: not compared */
		goto out;
	}
	if (m == SBRIG_M_LEAK) {
		for (i = 0; i < kb; i++)
			e->lb += pb[i] > 0;
		for (i = 0; i < kn; i++)
			e->ln += pn[i] > 0;
		if (!e->lb && !e->ln) {
			ret = 1;
			goto out;
		}
		e->o = (struct cs_outcome){ .ci_lo = NAN, .ci_hi = NAN,
			.change_rel = NAN, .threshold = thr->min_abs,
			.alpha = thr->alpha > 0 ? thr->alpha : cfg->alpha,
			.median_base = cs_median(pb, kb),
			.median_new = cs_median(pn, kn) };
		/* one-sided, in the direction the share of leaks moved */
		if ((double)e->ln * (double)kb >= (double)e->lb * (double)kn)
			e->o.p_value = cs_fisher_greater(e->lb, kb, e->ln, kn);
		else
			e->o.p_value = cs_fisher_greater(e->ln, kn, e->lb, kb);
		e->o.p_adjusted = e->o.p_value;
		e->o.nb = kb;
		e->o.nn = kn;
		e->tested = true;
	} else if (!kb || !kn) {
		e->o = (struct cs_outcome){ .verdict = SBRIG_INCONCLUSIVE,
			.ci_lo = NAN, .ci_hi = NAN, .p_value = NAN,
			.p_adjusted = NAN, .change = NAN, .change_rel = NAN,
			.threshold = NAN,
			.median_base = kb ? cs_median(pb, kb) : NAN,
			.median_new = kn ? cs_median(pn, kn) : NAN,
			.reason = !kb ? "no base run has a value (no wakeup?)" :
					"no new run has a value (no wakeup?)" };
	} else if (!strcmp(cm_metrics[m].unit, "count")) {
		ret = cs_measure_counts(pb, kb, pn, kn, thr, cfg, &e->o);
		e->tested = !ret;
	} else {
		ret = cs_measure(pb, kb, pn, kn, thr, cfg, &e->o);
		e->tested = !ret;
	}
out:
	free(pb);
	if (ret) {
		free(e->vb);
		free(e->vn);
		e->vb = e->vn = NULL;
	}
	return ret;
}

/*
 * Adjust the p-values of the tested entries of one family (@leaks: the
 * leak tests, else every other test) by Benjamini-Hochberg. 0 or -ENOMEM.
 */
static int adjust_family(struct cm_entry *e, size_t n, bool leaks)
{
	double *p = calloc(n + 1, sizeof(*p)), *adj = calloc(n + 1, sizeof(*adj));
	size_t k = 0, j = 0;
	int ret = -ENOMEM;

	if (!p || !adj)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (e[i].tested && (e[i].m == SBRIG_M_LEAK) == leaks)
			p[k++] = e[i].o.p_value;
	ret = cs_bh_adjust(p, k, adj);
	if (ret)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].tested || (e[i].m == SBRIG_M_LEAK) != leaks)
			continue;
		e[i].o.p_adjusted = adj[j++];
		e[i].o.family = k;
	}
out:
	free(p);
	free(adj);
	return ret;
}

/* the names of the entry's estimate, interval and test */
static bool is_count(const struct cm_entry *e)
{
	return e->m != SBRIG_M_LEAK && !strcmp(cm_metrics[e->m].unit, "count");
}

static const char *estimate_name(const struct cm_entry *e)
{
	if (!e->tested)
		return NULL;
	if (e->m == SBRIG_M_LEAK)
		return "share-difference";
	return is_count(e) ? "mean-difference" : "hodges-lehmann";
}

static const char *interval_name(const struct cm_entry *e)
{
	if (!e->tested || e->m == SBRIG_M_LEAK || !isfinite(e->o.ci_lo))
		return NULL;
	if (is_count(e))
		return "poisson-normal";
	return e->o.nb * e->o.nn <= 2500 ? "moses-exact" : "moses-normal";
}

static const char *test_name(const struct cm_entry *e)
{
	if (e->m == SBRIG_M_LEAK)
		return "fisher-exact-one-sided";
	return is_count(e) ? "poisson-exact" : "mann-whitney-u";
}

/* The entry @e, judged, as compare.json's metric object; its verdict
 * counted in @counts. */
static jobj *entry_json(struct cm_entry *e, size_t nb, size_t nn,
			const struct sbrig_compare_config *cfg, size_t *counts)
{
	const struct cm_metric_def *def = &cm_metrics[e->m];
	const struct sbrig_compare_threshold *thr = &cfg->metric[e->m];
	struct cs_outcome *o = &e->o;
	bool leak = e->m == SBRIG_M_LEAK;
	jobj *j = json_object_new_object();

	if (leak)
		cs_judge_leak(o, e->lb, o->nb, e->ln, o->nn, thr, cfg);
	else if (e->tested)
		cs_judge(o, def->worse, cfg);
	counts[o->verdict]++;

	put(j, "metric", json_object_new_string(def->name));
	put(j, "blocker", e->bl ? json_object_new_string(e->bl) : NULL);
	put(j, "unit", json_object_new_string(def->unit));
	put(j, "worse", json_object_new_string(def->worse > 0 ? "higher" :
						"lower"));
	put(j, "verdict", json_object_new_string(sbrig_verdict_name(o->verdict)));
	put(j, "reason", json_object_new_string(o->reason));
	put(j, "base", side_json(e->vb, nb, o->median_base));
	put(j, "new", side_json(e->vn, nn, o->median_new));
	put(j, "estimate", js_or_null(estimate_name(e)));
	put(j, "change", jg(o->change, 10));
	put(j, "change_rel", jg(o->change_rel, 6));
	put(j, "ci", pair(o->ci_lo, o->ci_hi, 10));
	put(j, "ci_rel", o->median_base != 0 ?
	    pair(o->ci_lo / fabs(o->median_base), o->ci_hi / fabs(o->median_base),
		 6) : NULL);
	put(j, "interval", js_or_null(interval_name(e)));
	put(j, "confidence", leak || !isfinite(o->ci_lo) ? NULL :
	    jg(cfg->confidence, 6));
	put(j, "test", json_object_new_string(test_name(e)));
	put(j, "p_value", jg(o->p_value, 6));
	put(j, "p_adjusted", jg(o->p_adjusted, 6));
	put(j, "adjustment", e->tested ?
	    json_object_new_string("benjamini-hochberg") : NULL);
	put(j, "family", e->tested ? json_object_new_int64((int64_t)o->family) :
	    NULL);
	put(j, "u", leak || is_count(e) || isnan(o->p_value) ? NULL :
	    jg(o->u, 10));
	put(j, "alpha", jg(thr->alpha > 0 ? thr->alpha : cfg->alpha, 6));
	put(j, "threshold", jg(o->threshold, 10));
	put(j, "min_change", jg(thr->min_change, 6));
	put(j, "min_abs", jg(thr->min_abs, 10));
	put(j, "runs_needed", o->verdict == SBRIG_INCONCLUSIVE && o->runs_needed ?
	    json_object_new_int64(o->runs_needed) : NULL);
	put(j, "more_runs", o->verdict == SBRIG_INCONCLUSIVE && o->more_runs ?
	    json_object_new_int64(o->more_runs) : NULL);
	return j;
}

/*
 * Every metric over the runs: measured, adjusted per family, judged,
 * added to @metrics. 0 or -ENOMEM.
 */
static int decide_all(const struct cm_run *runs, size_t nb, size_t nn,
		      const char **bl, size_t nbl,
		      const struct sbrig_compare_config *cfg, jobj *metrics,
		      size_t *counts)
{
	size_t cap = SBRIG_METRIC_COUNT * (nbl + 1), n = 0;
	struct cm_entry *e = calloc(cap, sizeof(*e));
	int ret = 0;

	if (!e)
		return -ENOMEM;
	for (int m = 0; !ret && m < SBRIG_METRIC_COUNT; m++) {
		size_t k = cm_metrics[m].per_blocker ? nbl : 1;

		for (size_t b = 0; !ret && b < k; b++) {
			ret = measure_metric(runs, nb, runs + nb, nn, m,
					     cm_metrics[m].per_blocker ? bl[b] :
					     NULL, cfg, &e[n]);
			if (!ret)
				n++;
			else if (ret == 1)
				ret = 0;
		}
	}
	if (!ret)
		ret = adjust_family(e, n, false);
	if (!ret)
		ret = adjust_family(e, n, true);
	for (size_t i = 0; !ret && i < n; i++)
		json_object_array_add(metrics, entry_json(&e[i], nb, nn, cfg,
							  counts));
	for (size_t i = 0; i < n; i++) {
		free(e[i].vb);
		free(e[i].vn);
	}
	free(e);
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

	put(o, "path", js_or_null(cfg->path));
	put(o, "alpha", jg(cfg->alpha, 6));
	put(o, "confidence", jg(cfg->confidence, 6));
	put(o, "power", jg(cfg->power, 6));
	put(o, "min_runs", json_object_new_int64(cfg->min_runs));
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
	ret = check_sample_size(nbase, nnew, cfg, opts->force, warnings);
	if (!ret)
		ret = check_comparable(runs, n, opts->force, warnings);
	if (!ret)
		ret = check_quality(runs, n, opts->force, warnings);
	if (ret) {
		json_object_put(warnings);
		json_object_put(metrics);
		goto fail;
	}
	ret = blocker_names(runs, n, &bl, &nbl);
	if (!ret)
		ret = decide_all(runs, nbase, nnew, bl, nbl, cfg, metrics,
				 counts);
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
