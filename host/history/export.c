// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - the history written out: a summary (sbrig history show) and
 * every value as CSV (sbrig history export; history-format.md, "Export").
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "csv.h"
#include "internal.h"

int sbrig_history_show(struct sbrig_history *h, const char *scenario,
		       FILE *out)
{
	struct hi_scenario sc;
	struct hi_stmt *st;
	char sql[1024], name[3100];
	int ret = 0, rc;

	if (scenario) {
		ret = hi_scenario_resolve(h, scenario, &sc);
		if (ret)
			return ret;
		snprintf(sql, sizeof(sql), "SELECT c.seq, c.sha, "
			 "MIN(r.rig_name), COUNT(*), MIN(r.added_utc), "
			 "MAX(r.added_utc) FROM runs r JOIN commits c ON "
			 "c.sha = r.commit_sha WHERE %s GROUP BY c.seq, c.sha, "
			 "r.rig_sha256 ORDER BY 1, 3", sc.where);
	} else {
		snprintf(sql, sizeof(sql), "SELECT r.scenario, MIN(r.rig_name), "
			 "COUNT(DISTINCT r.commit_sha), COUNT(*), "
			 "(SELECT r2.commit_sha FROM runs r2 JOIN commits c2 ON "
			 "c2.sha = r2.commit_sha WHERE r2.scenario = r.scenario "
			 "AND r2.rig_sha256 = r.rig_sha256 ORDER BY c2.seq "
			 "DESC LIMIT 1) FROM runs r GROUP BY r.scenario, "
			 "r.rig_sha256 ORDER BY 1, 2");
	}
	st = hi_prepare(h, sql, &ret);
	if (!st)
		return ret;
	if (scenario)
		hi_bind_text(st, 1, sc.param);
	/* the file's version (a reader reads an older one as it is) */
	fprintf(out, "history: %s (schema version %d)\n", h->path,
		h->read_as_from ? h->read_as_from : SBRIG_HISTORY_VERSION);
	if (scenario)
		fprintf(out, "scenario: %s\n%6s  %-40s %-12s %5s  %s\n",
			sbrig_term(sc.name, name, sizeof(name)),
			"seq", "commit", "rig", "runs", "added (UTC)");
	else
		fprintf(out, "%-40s %-12s %7s %6s  %s\n", "scenario", "rig",
			"commits", "runs", "last commit");
	while ((rc = hi_step(st, "reading it")) > 0) {
		/* what another program wrote, printed on a terminal */
		char a[1100], b[300], c[300], d[300];
		bool span = strcmp(hi_text(st, 4), hi_text(st, 5));

		if (scenario)
			fprintf(out, "%6lld  %-40s %-12s %5lld  %s%s%s\n",
				(long long)hi_int64(st, 0),
				sbrig_term(hi_text(st, 1), a, sizeof(a)),
				sbrig_term(hi_text(st, 2), b, sizeof(b)),
				(long long)hi_int64(st, 3),
				sbrig_term(hi_text(st, 4), c, sizeof(c)),
				span ? " .. " : "", span ?
				sbrig_term(hi_text(st, 5), d, sizeof(d)) : "");
		else
			fprintf(out, "%-40s %-12s %7lld %6lld  %s\n",
				*hi_text(st, 0) ? sbrig_term(hi_text(st, 0), a,
							     sizeof(a)) :
				"(no scenario)",
				sbrig_term(hi_text(st, 1), b, sizeof(b)),
				(long long)hi_int64(st, 2),
				(long long)hi_int64(st, 3),
				sbrig_term(hi_text(st, 4), c, sizeof(c)));
	}
	hi_finalize(st);
	if (rc < 0)
		return rc;
	return ferror(out) ? sbrig_set_error(-EIO, "writing the summary: "
					     "%s", strerror(EIO)) : 0;
}

/* @s as a CSV text cell (an_csv_text(): RFC 4180, no formula), then @end */
static void csv(FILE *out, const char *s, char end)
{
	an_csv_text(out, s);
	fputc(end, out);
}

static const char *unit_of(const char *metric)
{
	for (int m = 0; m < SBRIG_METRIC_COUNT; m++)
		if (!strcmp(sbrig_metric_name(m), metric))
			return sbrig_metric_unit(m);
	return "";
}

int sbrig_history_export_csv(struct sbrig_history *h, const char *scenario,
			     FILE *out)
{
	struct hi_scenario sc;
	struct hi_stmt *st;
	char sql[1024], num[64];
	int ret = 0, rc;

	if (scenario) {
		ret = hi_scenario_resolve(h, scenario, &sc);
		if (ret)
			return ret;
	}
	snprintf(sql, sizeof(sql), "SELECT r.id, c.seq, r.commit_sha, "
		 "r.scenario, r.scenario_sha256, r.rig_name, r.rig_sha256, "
		 "r.capture_path, r.report, m.metric, m.blocker, m.value "
		 "FROM runs r JOIN commits c ON c.sha = r.commit_sha JOIN "
		 "metrics m ON m.run_id = r.id WHERE %s ORDER BY c.seq, r.id, "
		 "m.metric, m.blocker", scenario ? sc.where : "TRUE");
	st = hi_prepare(h, sql, &ret);
	if (!st)
		return ret;
	if (scenario)
		hi_bind_text(st, 1, sc.param);
	fputs("run,seq,commit,scenario,scenario_sha256,rig_name,rig_sha256,"
	      "capture,report,metric,blocker,value,unit\n", out);
	while ((rc = hi_step(st, "reading it")) > 0) {
		fprintf(out, "%lld,%lld,", (long long)hi_int64(st, 0),
			(long long)hi_int64(st, 1));
		for (int i = 2; i <= 10; i++)
			csv(out, hi_text(st, i), ',');
		/* a number, not text: "-5" stays "-5"; a NaN is no value */
		if (hi_null(st, 11) || !isfinite(hi_double(st, 11)))
			*num = '\0';
		else
			snprintf(num, sizeof(num), "%.10g",
				 hi_double(st, 11));
		fprintf(out, "%s,", num);
		csv(out, unit_of(hi_text(st, 9)), '\n');
	}
	hi_finalize(st);
	if (rc < 0)
		return rc;
	return ferror(out) ? sbrig_set_error(-EIO, "writing the export: %s",
					     strerror(EIO)) : 0;
}
