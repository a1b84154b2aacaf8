// SPDX-License-Identifier: GPL-2.0
/*
 * copy.c - a history copied into another one, across backends (sbrig
 * history copy FROM TO; history-format.md, "Copying a history").
 *
 * The runs of FROM (all, or one scenario's) are read in FROM's commit
 * sequence and added to TO in one transaction of TO's write lock (all of
 * them or, when anything fails or the process is killed, none). A run is
 * the same run in both when its capture is (the runs table's UNIQUE key:
 * capture path, start, end, samples), as for sbrig history add: one TO
 * has already is left as it is, so copying twice adds nothing. A commit
 * TO lacks is appended to its sequence in FROM's order; one it has keeps
 * its place. A run keeps its added_utc, report and host version.
 *
 * FROM's runs are read a batch at a time (hi_prepare_rows(): from
 * PostgreSQL through a cursor), so memory does not grow with their
 * number; TO's lock is held for the whole copy (one transaction).
 *
 * FROM is someone else's database: a NULL is read as "" or 0 and a value
 * that is not a finite number is not copied (TO's columns are NOT NULL).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sbrig/sbrig.h>

#include "internal.h"

/* the columns of a run, in the order of the SELECT and the INSERT */
#define RUN_COLS "commit_sha, scenario, scenario_sha256, rig_name, " \
	"rig_sha256, capture_path, start_ns, end_ns, samples, added_utc, " \
	"report, host_version"

enum { C_COMMIT, C_SCENARIO, C_SSHA, C_RIG, C_RSHA, C_PATH, C_START, C_END,
       C_SAMPLES, C_ADDED, C_REPORT, C_HOSTV, C_ID };

static bool is_int_col(int c)
{
	return c == C_START || c == C_END || c == C_SAMPLES;
}

/* TO's statements, prepared once */
struct to_stmts {
	struct hi_stmt *find, *commit, *run, *metric;
};

static void to_free(struct to_stmts *t)
{
	hi_finalize(t->find);
	hi_finalize(t->commit);
	hi_finalize(t->run);
	hi_finalize(t->metric);
}

static int to_prepare(struct sbrig_history *to, struct to_stmts *t)
{
	int ret = 0;

	memset(t, 0, sizeof(*t));
	t->find = hi_prepare(to, "SELECT id FROM runs WHERE capture_path = ?1 "
			     "AND start_ns = ?2 AND end_ns = ?3 AND samples = "
			     "?4", &ret);
	if (t->find)
		t->commit = hi_prepare(to, "INSERT INTO commits (sha, seq) "
				       "SELECT ?1, COALESCE(MAX(seq), 0) + 1 "
				       "FROM commits WHERE TRUE ON CONFLICT "
				       "(sha) DO NOTHING", &ret);
	if (t->commit)
		t->run = hi_prepare(to, "INSERT INTO runs (" RUN_COLS ") VALUES "
				    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
				    "?11, ?12) RETURNING id", &ret);
	if (t->run)
		t->metric = hi_prepare(to, "INSERT INTO metrics (run_id, "
				       "metric, blocker, value) VALUES (?1, ?2, "
				       "?3, ?4)", &ret);
	if (!t->metric)
		to_free(t);
	return ret;
}

/* the run at @run's row into TO unless it is there; *@added when it was not */
static int copy_run(struct hi_stmt *run, struct hi_stmt *metrics,
		    struct to_stmts *t, bool *added)
{
	int64_t id = 0;
	int ret, rc;

	*added = false;
	hi_reset(t->find);
	hi_bind_text(t->find, 1, hi_text(run, C_PATH));
	hi_bind_int64(t->find, 2, hi_int64(run, C_START));
	hi_bind_int64(t->find, 3, hi_int64(run, C_END));
	hi_bind_int64(t->find, 4, hi_int64(run, C_SAMPLES));
	rc = hi_step(t->find, "looking the capture up");
	if (rc)
		return rc < 0 ? rc : 0;	/* there already */
	hi_reset(t->commit);
	hi_bind_text(t->commit, 1, hi_text(run, C_COMMIT));
	rc = hi_step(t->commit, "adding the commit");
	if (rc < 0)
		return rc;
	hi_reset(t->run);
	for (int c = C_COMMIT; c <= C_HOSTV; c++) {
		if (is_int_col(c))
			hi_bind_int64(t->run, c + 1, hi_int64(run, c));
		else
			hi_bind_text(t->run, c + 1, hi_text(run, c));
	}
	rc = hi_step(t->run, "inserting the run");
	if (rc < 0)
		return rc;
	id = hi_int64(t->run, 0);
	hi_reset(metrics);
	hi_bind_int64(metrics, 1, hi_int64(run, C_ID));
	while ((rc = hi_step(metrics, "reading the run's metrics")) > 0) {
		double v = hi_double(metrics, 2);

		if (hi_null(metrics, 2) || !isfinite(v))
			continue;	/* not ours: no value */
		hi_reset(t->metric);
		hi_bind_int64(t->metric, 1, id);
		hi_bind_text(t->metric, 2, hi_text(metrics, 0));
		hi_bind_text(t->metric, 3, hi_text(metrics, 1));
		hi_bind_double(t->metric, 4, v);
		ret = hi_step(t->metric, "inserting a metric");
		if (ret < 0)
			return ret;
	}
	if (rc < 0)
		return rc;
	*added = true;
	return 0;
}

int sbrig_history_copy(struct sbrig_history *from, struct sbrig_history *to,
		       const char *scenario, struct sbrig_history_copied *out)
{
	struct hi_stmt *run = NULL, *metrics = NULL;
	struct to_stmts t = { 0 };
	struct hi_scenario sc;
	char sql[768];
	bool added, locked = false;
	int ret = 0, rc;

	memset(out, 0, sizeof(*out));
	if (scenario) {
		ret = hi_scenario_resolve(from, scenario, &sc);
		if (ret)
			return ret;
		snprintf(out->scenario, sizeof(out->scenario), "%s", sc.name);
	}
	snprintf(sql, sizeof(sql), "SELECT r.commit_sha, r.scenario, "
		 "r.scenario_sha256, r.rig_name, r.rig_sha256, r.capture_path, "
		 "r.start_ns, r.end_ns, r.samples, r.added_utc, r.report, "
		 "r.host_version, r.id FROM runs r JOIN commits c ON c.sha = "
		 "r.commit_sha WHERE %s ORDER BY c.seq, r.id",
		 scenario ? sc.where : "TRUE");
	run = hi_prepare_rows(from, sql, &ret);
	if (!run)
		goto out;
	if (scenario)
		hi_bind_text(run, 1, sc.param);
	metrics = hi_prepare(from, "SELECT metric, blocker, value FROM metrics "
			     "WHERE run_id = ?1 ORDER BY metric, blocker", &ret);
	if (!metrics)
		goto out;
	ret = hi_begin(to, "locking it to copy runs into it");
	if (ret)
		goto out;
	locked = true;
	ret = to_prepare(to, &t);
	if (ret)
		goto out;
	while ((rc = hi_step(run, "reading its runs")) > 0) {
		ret = copy_run(run, metrics, &t, &added);
		if (ret)
			goto out;
		out->runs++;
		out->added += added;
	}
	if (rc < 0) {
		ret = rc;
		goto out;
	}
	to_free(&t);
	memset(&t, 0, sizeof(t));
	ret = hi_commit(to, "committing the copied runs");
	locked = false;
out:
	to_free(&t);
	hi_finalize(run);
	hi_finalize(metrics);
	if (locked)
		hi_rollback(to);
	if (ret)
		out->added = 0;
	return ret;
}
