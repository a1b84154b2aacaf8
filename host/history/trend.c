// SPDX-License-Identifier: GPL-2.0
/*
 * trend.c - one metric of one scenario over the commit sequence, its
 * change points (steps.c), and the trend rendered as text and as
 * trend.json (history-format.md).
 *
 * The points are the commits (in the commits table's sequence) that have
 * a run of the scenario with a value of the metric; each holds its runs'
 * values and reports. A per-blocker metric of a blocker the scenario has
 * had is 0 in its runs without the blocker (before it appeared and after
 * it went), so the step where a blocker comes or goes is seen. The change
 * points are searched over the points.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "atomic.h"
#include "internal.h"

struct tr_point {
	struct hi_point p;	/* values, n */
	int64_t seq;
	char *commit;
	char **reports;		/* one per value, in the same order */
	size_t cap;
};

struct sbrig_trend {
	char scenario[1024], rig[256], rig_sha[128], metric[64], blocker[1024];
	const char *unit;
	struct hi_step_rule rule;
	struct tr_point *pts;
	size_t npts, cap, nruns;
	struct hi_step *steps;
	size_t nsteps;
};

void sbrig_trend_free(struct sbrig_trend *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->npts; i++) {
		for (size_t j = 0; j < t->pts[i].p.n; j++)
			free(t->pts[i].reports[j]);
		free(t->pts[i].reports);
		free(t->pts[i].p.values);
		free(t->pts[i].commit);
	}
	free(t->pts);
	free(t->steps);
	free(t);
}

size_t sbrig_trend_steps(const struct sbrig_trend *t)
{
	return t->nsteps;
}

/*
 * The scenario's rig: the one there is, or @want (rig_name or a
 * rig_sha256 prefix). Its rig_sha256 into @sha, its name into @name.
 */
static int pick_rig(struct sbrig_history *h, const struct hi_scenario *sc,
		    const char *want, char *sha, size_t ssize, char *name,
		    size_t nsize)
{
	char sql[512], list[1024] = "", e1[300], e2[60], e3[3100];
	struct hi_stmt *st;
	size_t n = 0, match = 0, len;
	int ret = 0, rc;

	snprintf(sql, sizeof(sql), "SELECT DISTINCT r.rig_sha256, r.rig_name "
		 "FROM runs r WHERE %s ORDER BY r.rig_name, r.rig_sha256",
		 sc->where);
	st = hi_prepare(h, sql, &ret);
	if (!st)
		return ret;
	hi_bind_text(st, 1, sc->param);
	while ((rc = hi_step(st, "listing the scenario's rigs")) > 0) {
		const char *s = hi_text(st, 0);
		const char *nm = hi_text(st, 1);

		n++;
		len = strlen(list);
		snprintf(list + len, sizeof(list) - len, "%s%s (%.12s)",
			 len ? ", " : "", sbrig_term(nm, e1, sizeof(e1)),
			 sbrig_term(s, e2, sizeof(e2)));
		if (want && strcmp(nm, want) &&
		    (strlen(want) < 8 || strncasecmp(s, want, strlen(want))))
			continue;
		if (!match++) {
			snprintf(sha, ssize, "%s", s);
			snprintf(name, nsize, "%s", nm);
		}
	}
	hi_finalize(st);
	if (rc < 0)
		return rc;
	if (want && !match)
		return sbrig_set_error(-ENOENT, "%s: scenario '%s' has no run "
				       "on rig '%s' (it has runs on: %s)",
				       h->path, sbrig_term(sc->name, e3, sizeof(e3)),
				       want, list);
	if (match > 1)
		return sbrig_set_error(-EXDEV, "%s: scenario '%s' has runs on "
				       "several rigs (%s): choose one with "
				       "--rig NAME|SHA256", h->path,
				       sbrig_term(sc->name, e3, sizeof(e3)), list);
	return 0;
}

static int add_value(struct sbrig_trend *t, int64_t seq, const char *commit,
		     double v, const char *report)
{
	struct tr_point *p = t->npts ? &t->pts[t->npts - 1] : NULL;

	if (!p || p->seq != seq) {
		if (t->npts == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			void *n = realloc(t->pts, cap * sizeof(*t->pts));

			if (!n)
				return -ENOMEM;
			t->pts = n;
			t->cap = cap;
		}
		p = &t->pts[t->npts++];
		memset(p, 0, sizeof(*p));
		p->seq = seq;
		p->commit = strdup(commit);
		if (!p->commit)
			return -ENOMEM;
	}
	if (p->p.n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4;
		double *nv = realloc(p->p.values, cap * sizeof(*nv));
		char **nr;

		if (!nv)
			return -ENOMEM;
		p->p.values = nv;
		nr = realloc(p->reports, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		p->reports = nr;
		p->cap = cap;
	}
	p->reports[p->p.n] = strdup(report);
	if (!p->reports[p->p.n])
		return -ENOMEM;
	p->p.values[p->p.n++] = v;
	t->nruns++;
	return 0;
}

/*
 * A blocker the scenario has had counts as 0 in a run without it, as in
 * compare (compare-format.md, "The metrics"), when the run has what the
 * metric needs: a blocker's energy per wakeup needs a wakeup (the run's
 * own energy_per_wakeup_uJ); "" for nothing.
 */
static const char *absent_needs(int m)
{
	return m == SBRIG_M_BLOCKER_ENERGY ?
	       sbrig_metric_name(SBRIG_M_ENERGY_PER_WAKEUP) : "";
}

struct sbrig_trend *sbrig_history_trend(struct sbrig_history *h,
					const char *scenario,
					const char *metric,
					const struct sbrig_trend_opts *opts)
{
	struct sbrig_trend_opts o = opts ? *opts : (struct sbrig_trend_opts){ 0 };
	struct sbrig_compare_config defaults;
	const struct sbrig_compare_config *cfg = o.cfg;
	struct hi_scenario sc;
	struct sbrig_trend *t = NULL;
	struct hi_stmt *st = NULL;
	char sql[1024], rig_sha[128] = "";
	char e[3100], eb[3100];
	size_t nvalues = 0;
	int m, ret = 0, rc;
	long ns;

	for (m = 0; m < SBRIG_METRIC_COUNT; m++)
		if (!strcmp(sbrig_metric_name(m), metric))
			break;
	if (m == SBRIG_METRIC_COUNT) {
		ret = sbrig_set_error(-EINVAL, "unknown metric '%s' (the "
				      "metrics: sbrig compare --help)", metric);
		goto fail;
	}
	if (sbrig_metric_per_blocker(m) != (o.blocker != NULL)) {
		ret = sbrig_set_error(-EINVAL, o.blocker ?
				      "metric '%s' is not per blocker: no "
				      "--blocker" : "metric '%s' is per blocker:"
				      " name one with --blocker NAME", metric);
		goto fail;
	}
	if (!cfg) {
		sbrig_compare_config_init(&defaults);
		cfg = &defaults;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		ret = -ENOMEM;
		goto fail;
	}
	t->rule.window = o.window ? o.window : 5;
	t->rule.t_threshold = o.t_threshold > 0 ? o.t_threshold : 7;
	t->rule.min_change = cfg->metric[m].min_change;
	t->rule.min_abs = cfg->metric[m].min_abs;
	snprintf(t->metric, sizeof(t->metric), "%s", metric);
	snprintf(t->blocker, sizeof(t->blocker), "%s", o.blocker ? o.blocker : "");
	t->unit = sbrig_metric_unit(m);
	ret = hi_scenario_resolve(h, scenario, &sc);
	if (ret)
		goto fail;
	snprintf(t->scenario, sizeof(t->scenario), "%s", sc.name);
	ret = pick_rig(h, &sc, o.rig, rig_sha, sizeof(rig_sha), t->rig,
		       sizeof(t->rig));
	if (ret)
		goto fail;
	snprintf(t->rig_sha, sizeof(t->rig_sha), "%s", rig_sha);
	/*
	 * Every run of the scenario on the rig, with its value, whether it
	 * has the blocker at all, and whether it has what a per-blocker
	 * value needs (absent_needs())
	 */
	snprintf(sql, sizeof(sql), "SELECT c.seq, r.commit_sha, m.value, "
		 "r.report, EXISTS (SELECT 1 FROM metrics x WHERE x.run_id = "
		 "r.id AND x.blocker = ?4 AND ?4 != ''), ?5 = '' OR EXISTS "
		 "(SELECT 1 FROM metrics y WHERE y.run_id = r.id AND "
		 "y.metric = ?5 AND y.blocker = '' AND y.value IS NOT NULL) "
		 "FROM runs r JOIN commits c ON c.sha = r.commit_sha %s JOIN "
		 "metrics m ON m.run_id = r.id AND m.metric = ?3 AND "
		 "m.blocker = ?4 WHERE %s AND r.rig_sha256 = ?2 "
		 "ORDER BY c.seq, r.id", o.blocker ? "LEFT" : "", sc.where);
	st = hi_prepare(h, sql, &ret);
	if (!st)
		goto fail;
	hi_bind_text(st, 1, sc.param);
	hi_bind_text(st, 2, rig_sha);
	hi_bind_text(st, 3, metric);
	hi_bind_text(st, 4, t->blocker);
	hi_bind_text(st, 5, absent_needs(m));
	while ((rc = hi_step(st, "reading the trend")) > 0) {
		double v = hi_double(st, 2);

		if (!hi_null(st, 2) && !isfinite(v))
			continue;	/* no value (a NaN is not ours) */
		if (!hi_null(st, 2))
			nvalues++;
		else if (o.blocker && !hi_int64(st, 4) &&
			 hi_int64(st, 5))
			v = 0;	/* a run without the blocker */
		else
			continue;	/* no value (a NULL is not ours) */
		if (add_value(t, hi_int64(st, 0), hi_text(st, 1), v,
			      hi_text(st, 3))) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	if (rc < 0) {
		ret = rc;
		goto fail;
	}
	hi_finalize(st);
	st = NULL;
	if (!nvalues) {	/* (a blocker the scenario never had: no zeros) */
		ret = sbrig_set_error(-ENOENT, "%s: no run of scenario '%s' has "
				      "a value of %s%s%s", h->path,
				      sbrig_term(sc.name, e, sizeof(e)),
				      metric, o.blocker ? " of blocker " : "",
				      o.blocker ? sbrig_term(o.blocker, eb,
							     sizeof(eb)) : "");
		goto fail;
	}
	for (size_t i = 0; i < t->npts; i++) {
		/* sorted, with the reports in the same order */
		struct tr_point *p = &t->pts[i];

		for (size_t a = 1; a < p->p.n; a++)
			for (size_t b = a; b > 0 && p->p.values[b - 1] >
			     p->p.values[b]; b--) {
				double v = p->p.values[b];
				char *r = p->reports[b];

				p->p.values[b] = p->p.values[b - 1];
				p->reports[b] = p->reports[b - 1];
				p->p.values[b - 1] = v;
				p->reports[b - 1] = r;
			}
	}
	{
		struct hi_point *hp = calloc(t->npts, sizeof(*hp));

		if (!hp) {
			ret = -ENOMEM;
			goto fail;
		}
		for (size_t i = 0; i < t->npts; i++)
			hp[i] = t->pts[i].p;
		ns = hi_find_steps(hp, t->npts, &t->rule, &t->steps);
		free(hp);
	}
	if (ns < 0) {
		ret = (int)ns;
		goto fail;
	}
	t->nsteps = (size_t)ns;
	return t;
fail:
	if (ret == -ENOMEM)
		sbrig_set_error(-ENOMEM, "%s: out of memory", h->path);
	hi_finalize(st);
	sbrig_trend_free(t);
	errno = -ret;
	return NULL;
}

/* ---- rendering ----------------------------------------------------------- */

static const struct hi_step *step_at(const struct sbrig_trend *t, size_t i)
{
	for (size_t k = 0; k < t->nsteps; k++)
		if (t->steps[k].at == i)
			return &t->steps[k];
	return NULL;
}

static double rel(const struct hi_step *s)
{
	return s->before ? (s->after - s->before) / fabs(s->before) : NAN;
}

/* "regressed" or "improved": for every metric a higher value is worse */
static const char *direction(const struct hi_step *s)
{
	return s->after > s->before ? "regressed" : "improved";
}

int sbrig_trend_render_text(const struct sbrig_trend *t, FILE *out)
{
	/* names from the database (someone else's), printed on a terminal */
	char bl[3100], sc[3100], rig[800], c1[600], c2[600];

	fprintf(out, "trend: %s%s%s of %s on rig %s: %zu commits, %zu runs\n",
		t->metric, *t->blocker ? " of blocker " : "",
		sbrig_term(t->blocker, bl, sizeof(bl)),
		sbrig_term(t->scenario, sc, sizeof(sc)),
		sbrig_term(t->rig, rig, sizeof(rig)), t->npts, t->nruns);
	fprintf(out, "%6s  %-16s %5s %14s %14s %14s\n", "seq", "commit", "runs",
		"median", "min", "max");
	for (size_t i = 0; i < t->npts; i++) {
		const struct tr_point *p = &t->pts[i];
		const struct hi_step *s = step_at(t, i);

		fprintf(out, "%6lld  %-16.16s %5zu %14.6g %14.6g %14.6g",
			(long long)p->seq, sbrig_term(p->commit, c1, sizeof(c1)),
			p->p.n, hi_median(p->p.values, p->p.n), p->p.values[0],
			p->p.values[p->p.n - 1]);
		if (s && isfinite(rel(s)))
			fprintf(out, "  <- step %+.2f %%%s", 100 * rel(s),
				s->provisional ? " (provisional)" : "");
		else if (s)
			fprintf(out, "  <- step from 0%s",
				s->provisional ? " (provisional)" : "");
		fputc('\n', out);
	}
	for (size_t k = 0; k < t->nsteps; k++) {
		const struct hi_step *s = &t->steps[k];
		char pc[32] = "from 0";

		if (isfinite(rel(s)))
			snprintf(pc, sizeof(pc), "%+.2f %%", 100 * rel(s));
		fprintf(out, "step: %s: %+.6g %s (%s), median %.6g -> "
			"%.6g %s (after %s; %zu commits before, %zu after, "
			"t %.1f): %s%s\n",
			sbrig_term(t->pts[s->at].commit, c1, sizeof(c1)),
			s->after - s->before, t->unit, pc, s->before,
			s->after, t->unit,
			sbrig_term(t->pts[s->at - 1].commit, c2, sizeof(c2)),
			s->nbefore, s->nafter, s->t, direction(s),
			s->provisional ?
			" (provisional: a window is not full yet)" : "");
	}
	if (!t->nsteps)
		fprintf(out, "steps: none\n");
	return ferror(out) ? -EIO : 0;
}

static struct json_object *jd(double v)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof(buf), "%.10g", v);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}

struct json_object *hi_trend_json(const struct sbrig_trend *t,
				  const char *(*link)(const char *report,
						      char *buf, size_t size))
{
	struct json_object *d = json_object_new_object(), *pts, *steps, *rule;
	char lbuf[4200];

	json_object_object_add(d, "schema", json_object_new_string(SBRIG_TREND_SCHEMA));
	json_object_object_add(d, "version", json_object_new_int(SBRIG_TREND_VERSION));
	json_object_object_add(d, "generator", json_object_new_string(sbrig_version));
	json_object_object_add(d, "scenario", json_object_new_string(t->scenario));
	json_object_object_add(d, "rig", json_object_new_string(t->rig));
	json_object_object_add(d, "metric", json_object_new_string(t->metric));
	json_object_object_add(d, "blocker", *t->blocker ?
			       json_object_new_string(t->blocker) : NULL);
	json_object_object_add(d, "unit", json_object_new_string(t->unit));
	rule = json_object_new_object();
	json_object_object_add(rule, "window", json_object_new_int((int)t->rule.window));
	json_object_object_add(rule, "t_threshold", jd(t->rule.t_threshold));
	json_object_object_add(rule, "min_change", jd(t->rule.min_change));
	json_object_object_add(rule, "min_abs", jd(t->rule.min_abs));
	json_object_object_add(d, "rule", rule);
	pts = json_object_new_array();
	for (size_t i = 0; i < t->npts; i++) {
		const struct tr_point *p = &t->pts[i];
		struct json_object *o = json_object_new_object();
		struct json_object *v = json_object_new_array();
		struct json_object *r = json_object_new_array();

		for (size_t j = 0; j < p->p.n; j++) {
			json_object_array_add(v, jd(p->p.values[j]));
			json_object_array_add(r, json_object_new_string(
				link ? link(p->reports[j], lbuf, sizeof(lbuf)) :
				p->reports[j]));
		}
		json_object_object_add(o, "seq", json_object_new_int64(p->seq));
		json_object_object_add(o, "commit", json_object_new_string(p->commit));
		json_object_object_add(o, "n", json_object_new_int64((int64_t)p->p.n));
		json_object_object_add(o, "median", jd(hi_median(p->p.values, p->p.n)));
		json_object_object_add(o, "values", v);
		json_object_object_add(o, "reports", r);
		json_object_array_add(pts, o);
	}
	json_object_object_add(d, "points", pts);
	steps = json_object_new_array();
	for (size_t k = 0; k < t->nsteps; k++) {
		const struct hi_step *s = &t->steps[k];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "commit", json_object_new_string(t->pts[s->at].commit));
		json_object_object_add(o, "seq", json_object_new_int64(t->pts[s->at].seq));
		json_object_object_add(o, "after_commit", json_object_new_string(t->pts[s->at - 1].commit));
		json_object_object_add(o, "before", jd(s->before));
		json_object_object_add(o, "after", jd(s->after));
		json_object_object_add(o, "change", jd(s->after - s->before));
		json_object_object_add(o, "change_rel", jd(rel(s)));
		json_object_object_add(o, "t", jd(s->t));
		json_object_object_add(o, "commits_before", json_object_new_int64((int64_t)s->nbefore));
		json_object_object_add(o, "commits_after", json_object_new_int64((int64_t)s->nafter));
		json_object_object_add(o, "direction", json_object_new_string(direction(s)));
		json_object_object_add(o, "provisional", json_object_new_boolean(s->provisional));
		json_object_array_add(steps, o);
	}
	json_object_object_add(d, "steps", steps);
	return d;
}

int sbrig_trend_write_json(const struct sbrig_trend *t, const char *path)
{
	struct json_object *d = hi_trend_json(t, NULL);
	const char *text;
	size_t len;
	int ret;

	text = json_object_to_json_string_length(d, JSON_C_TO_STRING_PRETTY |
						 JSON_C_TO_STRING_SPACED |
						 JSON_C_TO_STRING_NOSLASHESCAPE,
						 &len);
	ret = text ? an_write_atomic(path, text, len) :
		     sbrig_set_error(-ENOMEM, "%s: out of memory", path);
	json_object_put(d);
	return ret;
}

const char *hi_trend_rig(const struct sbrig_trend *t, bool sha)
{
	return sha ? t->rig_sha : t->rig;
}
