// SPDX-License-Identifier: GPL-2.0
/*
 * add.c - adding runs to the history.
 *
 * A run is read (and a capture analysed) before the database is touched,
 * so the write lock is held only for the inserts: hi_begin() takes it
 * (waiting up to the busy timeout for another writer), the capture's
 * identity (path, start, end, samples: the runs table's UNIQUE key) is
 * looked up, and a new run is inserted with its commit (appended to the
 * commit sequence when it is new) and its metrics, then committed.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "internal.h"

static int step_done(struct hi_stmt *st, const char *what)
{
	int rc = hi_step(st, what);

	return rc < 0 ? rc : 0;
}

/* the run's id when its capture is there already, else 0 */
static int find_run(struct sbrig_history *h, const struct sbrig_run *r,
		    int64_t *id)
{
	struct hi_stmt *st;
	int ret = 0, rc;

	*id = 0;
	st = hi_prepare(h, "SELECT id FROM runs WHERE capture_path = ?1 AND "
			"start_ns = ?2 AND end_ns = ?3 AND samples = ?4", &ret);
	if (!st)
		return ret;
	hi_bind_text(st, 1, sbrig_run_field(r, "path"));
	hi_bind_int64(st, 2, sbrig_run_int(r, "start_ns"));
	hi_bind_int64(st, 3, sbrig_run_int(r, "end_ns"));
	hi_bind_int64(st, 4, sbrig_run_int(r, "samples"));
	rc = hi_step(st, "looking the capture up");
	if (rc > 0)
		*id = hi_int64(st, 0);
	else
		ret = rc;
	hi_finalize(st);
	return ret;
}

static int insert_metric(struct sbrig_history *h, struct hi_stmt *st,
			 int64_t id, enum sbrig_metric m, const char *bl,
			 double v)
{
	int ret;

	if (isnan(v) || !isfinite(v))
		return 0;
	hi_reset(st);
	hi_bind_int64(st, 1, id);
	hi_bind_text(st, 2, sbrig_metric_name(m));
	hi_bind_text(st, 3, bl ? bl : "");
	hi_bind_double(st, 4, v);
	ret = step_done(st, "inserting a metric");
	return ret;
}

static int insert_run(struct sbrig_history *h, const struct sbrig_run *r,
		      const char *report, const char *commit, int64_t *id)
{
	const char *const *names;
	size_t nb = sbrig_run_blockers(r, &names);
	struct hi_stmt *st;
	char utc[32];
	time_t now = time(NULL);
	struct tm tm;
	int ret = 0;

	strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	st = hi_prepare(h, "INSERT INTO commits (sha, seq) SELECT ?1, "
			"COALESCE(MAX(seq), 0) + 1 FROM commits WHERE TRUE "
			"ON CONFLICT (sha) DO NOTHING", &ret);
	if (!st)
		return ret;
	hi_bind_text(st, 1, commit);
	ret = step_done(st, "adding the commit");
	hi_finalize(st);
	if (ret)
		return ret;
	st = hi_prepare(h, "INSERT INTO runs (commit_sha, scenario, "
			"scenario_sha256, rig_name, rig_sha256, capture_path, "
			"start_ns, end_ns, samples, added_utc, report, "
			"host_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
			"?9, ?10, ?11, ?12) RETURNING id", &ret);
	if (!st)
		return ret;
	hi_bind_text(st, 1, commit);
	hi_bind_text(st, 2, sbrig_run_field(r, "scenario"));
	hi_bind_text(st, 3, sbrig_run_field(r, "scenario_sha256"));
	hi_bind_text(st, 4, sbrig_run_field(r, "rig_name"));
	hi_bind_text(st, 5, sbrig_run_field(r, "rig_sha256"));
	hi_bind_text(st, 6, sbrig_run_field(r, "path"));
	hi_bind_int64(st, 7, sbrig_run_int(r, "start_ns"));
	hi_bind_int64(st, 8, sbrig_run_int(r, "end_ns"));
	hi_bind_int64(st, 9, sbrig_run_int(r, "samples"));
	hi_bind_text(st, 10, utc);
	hi_bind_text(st, 11, report);
	hi_bind_text(st, 12, sbrig_run_field(r, "host_version"));
	ret = hi_step(st, "inserting the run");
	if (ret > 0)
		*id = hi_int64(st, 0);
	hi_finalize(st);
	if (ret < 0)
		return ret;
	ret = 0;
	st = hi_prepare(h, "INSERT INTO metrics (run_id, metric, blocker, "
			"value) VALUES (?1, ?2, ?3, ?4)", &ret);
	if (!st)
		return ret;
	for (int m = 0; m < SBRIG_METRIC_COUNT && !ret; m++) {
		if (!sbrig_metric_per_blocker(m)) {
			ret = insert_metric(h, st, *id, m, NULL,
					    sbrig_run_metric(r, m, NULL));
			continue;
		}
		for (size_t b = 0; b < nb && !ret; b++)
			ret = insert_metric(h, st, *id, m, names[b],
					    sbrig_run_metric(r, m, names[b]));
	}
	hi_finalize(st);
	return ret;
}

int sbrig_history_add(struct sbrig_history *h, const char *arg,
		      const char *report, const char *commit,
		      struct sbrig_history_added *out)
{
	char abs[PATH_MAX];
	struct sbrig_run *r;
	int64_t id;
	int ret;

	memset(out, 0, sizeof(*out));
	r = sbrig_run_load(arg, 0);
	if (!r)	/* whatever is wrong with it, it is bad input, not the db */
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	if (!commit || !*commit)
		commit = sbrig_run_field(r, "git_sha");
	if (!*commit) {
		ret = sbrig_set_error(-EINVAL, "%s: capture.provenance.git_sha: "
				      "empty: the run has no commit to file it "
				      "under (give one with --commit)", arg);
		goto out;
	}
	if (!report)
		report = realpath(arg, abs) ? abs : arg;
	snprintf(out->commit, sizeof(out->commit), "%s", commit);
	snprintf(out->scenario, sizeof(out->scenario), "%s",
		 sbrig_run_field(r, "scenario"));
	ret = hi_begin(h, "locking it to add a run");
	if (ret)
		goto out;
	ret = find_run(h, r, &id);
	if (!ret && !id) {
		ret = insert_run(h, r, report, commit, &id);
		out->added = true;
	}
	if (!ret)
		ret = hi_commit(h, "committing the run");
	if (ret) {
		hi_rollback(h);
		out->added = false;
	}
	out->id = id;
out:
	sbrig_run_free(r);
	return ret;
}
