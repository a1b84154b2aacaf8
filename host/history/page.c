// SPDX-License-Identifier: GPL-2.0
/*
 * page.c - the trend page of a scenario (sbrig history html): every
 * metric's trend (trend.c) over the commits, per blocker for each blocker
 * the scenario's runs have, as one self-contained page rendered with the
 * analysis's page machinery (html-page.h: dygraphs and the data inlined)
 * by assets/trend.js. The page's data is a document of its own
 * (history-format.md, "The trend page"): the trend.json documents and the
 * commits with their runs' reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include <sbrig/compare.h>
#include <sbrig/history.h>
#include <sbrig/sbrig.h>

#include "html-page.h"
#include "internal.h"

/* a run's link: report.html beside its report.json when there is one */
static const char *link_of(const char *report, char *buf, size_t size)
{
	size_t len = strlen(report);

	if (len >= 11 && !strcmp(report + len - 11, "report.json") &&
	    len + 1 < size) {
		snprintf(buf, size, "%.*shtml", (int)(len - 4), report);
		if (!access(buf, R_OK))
			return buf;
	}
	return report;
}

/* the commits with runs of the scenario on the rig, and their reports */
static int commits_json(struct sbrig_history *h, const struct hi_scenario *sc,
			const char *rig_sha, struct json_object *out)
{
	struct json_object *c = NULL, *reps = NULL;
	struct hi_stmt *st;
	char sql[768], lbuf[4200];
	int64_t last = -1;
	int ret = 0, rc;

	snprintf(sql, sizeof(sql), "SELECT c.seq, r.commit_sha, r.report FROM "
		 "runs r JOIN commits c ON c.sha = r.commit_sha WHERE %s AND "
		 "r.rig_sha256 = ?2 ORDER BY c.seq, r.id", sc->where);
	st = hi_prepare(h, sql, &ret);
	if (!st)
		return ret;
	hi_bind_text(st, 1, sc->param);
	hi_bind_text(st, 2, rig_sha);
	while ((rc = hi_step(st, "listing the commits")) > 0) {
		int64_t seq = hi_int64(st, 0);

		if (seq != last) {
			c = json_object_new_object();
			reps = json_object_new_array();
			json_object_object_add(c, "seq", json_object_new_int64(seq));
			json_object_object_add(c, "commit", json_object_new_string(
				hi_text(st, 1)));
			json_object_object_add(c, "reports", reps);
			json_object_array_add(out, c);
			last = seq;
		}
		json_object_array_add(reps, json_object_new_string(link_of(
			hi_text(st, 2), lbuf,
			sizeof(lbuf))));
	}
	hi_finalize(st);
	return rc < 0 ? rc : 0;
}

/* the blockers the scenario's runs have a per-blocker metric of */
static int blockers_of(struct sbrig_history *h, const struct hi_scenario *sc,
		       struct json_object *out)
{
	struct hi_stmt *st;
	char sql[512];
	int ret = 0, rc;

	snprintf(sql, sizeof(sql), "SELECT DISTINCT m.blocker FROM runs r JOIN "
		 "metrics m ON m.run_id = r.id WHERE %s AND m.blocker != '' "
		 "ORDER BY m.blocker", sc->where);
	st = hi_prepare(h, sql, &ret);
	if (!st)
		return ret;
	hi_bind_text(st, 1, sc->param);
	while ((rc = hi_step(st, "listing the blockers")) > 0)
		json_object_array_add(out, json_object_new_string(
			hi_text(st, 0)));
	hi_finalize(st);
	return rc < 0 ? rc : 0;
}

/* add metric @m's trend (of @blocker) to @trends; a metric without values is left out */
static int add_trend(struct sbrig_history *h, const char *scenario, int m,
		     const char *blocker, const struct sbrig_trend_opts *opts,
		     struct json_object *trends, char *rig, char *rig_sha)
{
	struct sbrig_trend_opts o = opts ? *opts : (struct sbrig_trend_opts){ 0 };
	struct sbrig_trend *t;

	o.blocker = blocker;
	t = sbrig_history_trend(h, scenario, sbrig_metric_name(m), &o);
	if (!t)
		return errno == ENOENT ? 0 : -errno;
	json_object_array_add(trends, hi_trend_json(t, link_of));
	snprintf(rig, 256, "%s", hi_trend_rig(t, false));
	snprintf(rig_sha, 128, "%s", hi_trend_rig(t, true));
	sbrig_trend_free(t);
	return 0;
}

int sbrig_history_render_html(struct sbrig_history *h, const char *scenario,
			      const struct sbrig_trend_opts *opts,
			      const char *path)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *trends = json_object_new_array();
	struct json_object *commits = json_object_new_array();
	struct json_object *blockers = json_object_new_array();
	char rig[256] = "", rig_sha[128] = "", title[1200], e[3100];
	struct hi_scenario sc;
	int ret;

	ret = hi_scenario_resolve(h, scenario, &sc);
	if (ret)
		goto out;
	ret = blockers_of(h, &sc, blockers);
	for (int m = 0; m < SBRIG_METRIC_COUNT && !ret; m++) {
		if (!sbrig_metric_per_blocker(m)) {
			ret = add_trend(h, scenario, m, NULL, opts, trends, rig,
					rig_sha);
			continue;
		}
		for (size_t b = 0; b < json_object_array_length(blockers) && !ret; b++)
			ret = add_trend(h, scenario, m, json_object_get_string(
				json_object_array_get_idx(blockers, b)), opts,
				trends, rig, rig_sha);
	}
	if (ret)
		goto out;
	if (!json_object_array_length(trends)) {
		ret = sbrig_set_error(-ENOENT, "%s: scenario '%s' has no metric "
				      "value on the rig", h->path,
				      sbrig_term(sc.name, e, sizeof(e)));
		goto out;
	}
	ret = commits_json(h, &sc, rig_sha, commits);
	if (ret)
		goto out;
	json_object_object_add(doc, "schema", json_object_new_string("sbrig-trend-page"));
	json_object_object_add(doc, "version", json_object_new_int(1));
	json_object_object_add(doc, "generator", json_object_new_string(sbrig_version));
	json_object_object_add(doc, "scenario", json_object_new_string(sc.name));
	json_object_object_add(doc, "rig", json_object_new_string(rig));
	json_object_object_add(doc, "commits", commits);
	commits = NULL;
	json_object_object_add(doc, "trends", trends);
	trends = NULL;
	snprintf(title, sizeof(title), "sbrig trend: %s", sc.name);
	ret = an_page_write(&(struct an_page){
		.title = title,
		.noscript = "This page draws its charts with JavaScript; the "
			    "data is 'sbrig history trend --json'.",
		.main_id = "trend", .data_id = "sbrig-trend", .data = doc,
		.css = hi_trend_page_css, .js = hi_trend_page_js,
	}, path);
	if (ret)	/* not "nothing to show": the message says what failed */
		ret = -EIO;
out:
	json_object_put(blockers);
	json_object_put(commits);
	json_object_put(trends);
	json_object_put(doc);
	return ret;
}
