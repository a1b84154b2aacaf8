/* SPDX-License-Identifier: GPL-2.0 */
/*
 * internal.h - what the files of libsbrig-history share, private to
 * host/history/: the handle, SQLite's errors translated (db.c), the
 * scenario a user names resolved to runs (db.c), and the change-point
 * search (steps.c).
 */
#ifndef SBRIG_HISTORY_INTERNAL_H
#define SBRIG_HISTORY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include <sbrig/history.h>

/* how long a writer waits for another one's transaction (ms) */
#define HI_BUSY_TIMEOUT_MS 60000

/* PRAGMA application_id of sbrig's history databases: "SBRG" */
#define HI_APPLICATION_ID 0x53425247

struct sbrig_history {
	sqlite3 *db;
	char path[4096];
	int migrated_from, read_as_from;
};

/*
 * Record "PATH: @what: SQLite's message" for the result code @rc and
 * return it as -errno: -EBUSY (locked), -EBADMSG (not a database, corrupt),
 * -EACCES, -ENOSPC, -ENOMEM, -ENOENT (cannot open), else -EIO. The one
 * place SQLite's errors are translated.
 */
int hi_err(struct sbrig_history *h, int rc, const char *what);

/* Run @sql (no result rows). 0 or hi_err(). */
int hi_exec(struct sbrig_history *h, const char *sql, const char *what);

/*
 * A prepared statement of @sql, or NULL after hi_err() (*@ret set).
 */
sqlite3_stmt *hi_prepare(struct sbrig_history *h, const char *sql, int *ret);

/*
 * Column @i of @st's row as text: "" for NULL (a database is what someone
 * else may have written: a column declared NOT NULL by us can be NULL in
 * a file made by another program), never NULL.
 */
const char *hi_text(sqlite3_stmt *st, int i);

/**
 * struct hi_scenario - the runs a user's SCENARIO names
 * @where: an SQL condition on the runs table (alias r) with one parameter
 * @param: the parameter to bind
 * @name: the scenario as it is shown (its provenance scenario)
 */
struct hi_scenario {
	const char *where;
	char param[1024];
	char name[1024];
};

/*
 * Resolve @arg: an exact provenance scenario, its file name without
 * ".scn", or a scenario_sha256 prefix of >= 8 hex digits. 0, -ENOENT (no
 * run of it: the message lists the scenarios there are), -EINVAL (it
 * names several scenarios), or an SQLite error.
 */
int hi_scenario_resolve(struct sbrig_history *h, const char *arg,
			struct hi_scenario *out);

/* ---- steps.c: change points over a sequence of commits ---------------- */

/**
 * struct hi_point - one commit of a trend
 * @values: its runs' values, sorted
 * @n: how many
 */
struct hi_point {
	double *values;
	size_t n;
};

/**
 * struct hi_step - a change point
 * @at: the index of the first commit after the step
 * @t: Welch's t of the commits' medians in the windows before and after it
 * @before: the median of the commits' medians in the window before
 * @after: the median of the commits' medians in the window after
 * @nbefore: commits in the window before
 * @nafter: commits in the window after
 * @provisional: a window has fewer commits than the rule's (at the start
 *	or the end of the sequence): more commits may move or drop it
 */
struct hi_step {
	size_t at;
	double t, before, after;
	size_t nbefore, nafter;
	bool provisional;
};

/**
 * struct hi_step_rule - when a step is one
 * @window: commits in each window
 * @t_threshold: the smallest |t|
 * @min_change: the smallest relative change of the median
 * @min_abs: the smallest absolute change (the larger of the two counts)
 */
struct hi_step_rule {
	unsigned int window;
	double t_threshold, min_change, min_abs;
};

/* the fewest commits a side a t is computed from, for a window of @w */
#define HI_MIN_SIDE(w) ((w) >= 3 ? 3u : 2u)

/* the median of the sorted @v[@n]; NaN for none */
double hi_median(const double *v, size_t n);

/*
 * The change points of @pts[@n] (each commit's runs, sorted) under @rule
 * into *@out (malloc'd, the caller frees it; NULL when none), in
 * sequence. Return how many, or -ENOMEM.
 */
long hi_find_steps(const struct hi_point *pts, size_t n,
		   const struct hi_step_rule *rule, struct hi_step **out);

/* ---- trend.c, page.c ---------------------------------------------------- */

struct json_object;

/*
 * @t as a trend.json document (the caller's: json_object_put()); each
 * report path through @link when it is not NULL (it fills and returns
 * @buf, or returns @report).
 */
struct json_object *hi_trend_json(const struct sbrig_trend *t,
				  const char *(*link)(const char *report,
						      char *buf, size_t size));

/* @t's rig: its rig_sha256 (@sha) or its rig_name */
const char *hi_trend_rig(const struct sbrig_trend *t, bool sha);

/* the trend page's script and stylesheet (assets/, page-assets.c) */
extern const char hi_trend_page_js[], hi_trend_page_css[];

#endif /* SBRIG_HISTORY_INTERNAL_H */
