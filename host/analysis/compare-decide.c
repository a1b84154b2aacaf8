// SPDX-License-Identifier: GPL-2.0
/*
 * compare-decide.c - every metric over the runs, decided: its values per
 * run (compare-metrics.c), its test and estimate (compare-stats.c), the
 * p-values adjusted over the comparison (Benjamini-Hochberg, the leaks a
 * family of their own), the verdict, and its compare.json entry
 * (host/doc/compare-format.md, "The verdict").
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/compare.h>

#include "cm-shared.h"
#include "compare-stats.h"

typedef struct json_object jobj;

/* {"n", "median", "min", "max", "values"} of one side */
static jobj *side_json(const double *v, size_t n, double median)
{
	jobj *o = json_object_new_object(), *vals = json_object_new_array();
	double lo = INFINITY, hi = -INFINITY;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		json_object_array_add(vals, cm_jv(v[i]));
		if (isnan(v[i]))
			continue;
		k++;
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	cm_put(o, "n", json_object_new_int64((int64_t)k));
	cm_put(o, "median", cm_jv(median));
	cm_put(o, "min", cm_jv(k ? lo : NAN));
	cm_put(o, "max", cm_jv(k ? hi : NAN));
	cm_put(o, "values", vals);
	return o;
}

static jobj *pair(double a, double b, int sig)
{
	jobj *p;

	if (!isfinite(a) || !isfinite(b))
		return NULL;
	p = json_object_new_array();
	json_object_array_add(p, cm_jg(a, sig));
	json_object_array_add(p, cm_jg(b, sig));
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
		e->vb[i] = cm_run_metric(base[i].report, m, bl);
	for (i = 0; i < nn; i++)
		e->vn[i] = cm_run_metric(next[i].report, m, bl);
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

	cm_put(j, "metric", json_object_new_string(def->name));
	cm_put(j, "blocker", e->bl ? json_object_new_string(e->bl) : NULL);
	cm_put(j, "unit", json_object_new_string(def->unit));
	cm_put(j, "worse", json_object_new_string(def->worse > 0 ? "higher" :
						"lower"));
	cm_put(j, "verdict", json_object_new_string(sbrig_verdict_name(o->verdict)));
	cm_put(j, "reason", json_object_new_string(o->reason));
	cm_put(j, "base", side_json(e->vb, nb, o->median_base));
	cm_put(j, "new", side_json(e->vn, nn, o->median_new));
	cm_put(j, "estimate", cm_js_or_null(estimate_name(e)));
	cm_put(j, "change", cm_jg(o->change, 10));
	cm_put(j, "change_rel", cm_jg(o->change_rel, 6));
	cm_put(j, "ci", pair(o->ci_lo, o->ci_hi, 10));
	cm_put(j, "ci_rel", o->median_base != 0 ?
	    pair(o->ci_lo / fabs(o->median_base), o->ci_hi / fabs(o->median_base),
		 6) : NULL);
	cm_put(j, "interval", cm_js_or_null(interval_name(e)));
	cm_put(j, "confidence", leak || !isfinite(o->ci_lo) ? NULL :
	    cm_jg(cfg->confidence, 6));
	cm_put(j, "test", json_object_new_string(test_name(e)));
	cm_put(j, "p_value", cm_jg(o->p_value, 6));
	cm_put(j, "p_adjusted", cm_jg(o->p_adjusted, 6));
	cm_put(j, "adjustment", e->tested ?
	    json_object_new_string("benjamini-hochberg") : NULL);
	cm_put(j, "family", e->tested ? json_object_new_int64((int64_t)o->family) :
	    NULL);
	cm_put(j, "u", leak || is_count(e) || isnan(o->p_value) ? NULL :
	    cm_jg(o->u, 10));
	cm_put(j, "alpha", cm_jg(thr->alpha > 0 ? thr->alpha : cfg->alpha, 6));
	cm_put(j, "threshold", cm_jg(o->threshold, 10));
	cm_put(j, "min_change", cm_jg(thr->min_change, 6));
	cm_put(j, "min_abs", cm_jg(thr->min_abs, 10));
	cm_put(j, "runs_needed", o->verdict == SBRIG_INCONCLUSIVE && o->runs_needed ?
	    json_object_new_int64(o->runs_needed) : NULL);
	cm_put(j, "more_runs", o->verdict == SBRIG_INCONCLUSIVE && o->more_runs ?
	    json_object_new_int64(o->more_runs) : NULL);
	return j;
}

/*
 * Every metric over the runs: measured, adjusted per family, judged,
 * added to @metrics. 0 or -ENOMEM.
 */
int cm_decide_all(const struct cm_run *runs, size_t nb, size_t nn,
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

