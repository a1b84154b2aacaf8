/* SPDX-License-Identifier: GPL-2.0 */
/*
 * internal.h - what the files of libsbrig-history share, private to
 * host/history/: the backend interface and the handle (db.c chooses the
 * backend; db-sqlite.c), the scenario a user names resolved to runs
 * (db.c), and the change-point search (steps.c).
 */
#ifndef SBRIG_HISTORY_INTERNAL_H
#define SBRIG_HISTORY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/history.h>

/* how long a writer waits for another one's transaction (ms) */
#define HI_BUSY_TIMEOUT_MS 60000
/* rows of a hi_prepare_rows() query held in memory at a time */
#define HI_ROWS_BATCH 256

/* sbrig's mark on its databases: "SBRG" (SQLite's PRAGMA application_id) */
#define HI_APPLICATION_ID 0x53425247

struct sbrig_history;

/*
 * A statement of a backend: each backend's own statement starts with it
 * (hi_prepare() returns the backend's, the wrappers below dispatch on it)
 */
struct hi_stmt {
	struct sbrig_history *h;
};

/**
 * struct hi_backend - one kind of database the history lives in
 *
 * Chosen by the scheme of the database's URI (db.c: hi_backend_of()), as
 * libiio chooses its backends; the rest of host/history/ calls only these
 * (through the hi_ wrappers) and writes SQL both backends take: ?N
 * parameters, ON CONFLICT, RETURNING, TRUE, no bare columns beside an
 * aggregate. Every error is recorded (sbrig_set_error()) as "DATABASE:
 * @what: the backend's message" and returned as -errno: -EBUSY (another
 * writer held it longer than the timeout), -EBADMSG (not a database,
 * corrupt, not sbrig's), -EACCES, -ENOSPC, -ENOMEM, -ENOENT (no such
 * database), -EPROTO (a newer schema), else -EIO.
 *
 * @name: "sqlite", "postgresql"
 * @temp: the schema of a connection's own temporary tables
 * @temp_on, @temp_off: SQL a reader runs before and after making its
 *	temporary tables (a read-only session may not create them), or NULL
 * @open: open @h->path's database (@where: it without the scheme) to read
 *	it (no write of any kind, an older schema read as the current one)
 *	or to write it (created, migrated, marked as sbrig's); sets
 *	@h->migrated_from and @h->read_as_from
 * @close: close it (@h itself is db.c's)
 * @exec: run @sql, no result rows
 * @prepare: a statement of @sql, or NULL after an error (*@ret)
 * @prepare_rows: the same for a query of many rows (HI_ROWS_BATCH in
 *	memory at a time: PostgreSQL reads them through a cursor, in a
 *	transaction of its own when the session is in none, until it is
 *	reset or finalized; SQLite steps every statement a row at a time)
 * @bind_text, @bind_int64, @bind_double: parameter ?@i (from 1)
 * @step: the next row: 1, 0 when there is none, or -errno
 * @reset: to run again with new parameters
 * @finalize: free it (NULL is fine)
 * @text: column @i as text, "" for NULL, never NULL (what comes back
 *	from a database is what someone else may have written)
 * @int64, @dbl: column @i as a number (0 for NULL or for text)
 * @null: whether column @i is NULL
 * @begin: start a write transaction holding the write lock (writers
 *	queue for it up to HI_BUSY_TIMEOUT_MS, then -EBUSY)
 * @commit: commit it
 * @rollback: roll it back (nothing to report: the transaction is lost)
 */
struct hi_backend {
	const char *name, *temp, *temp_on, *temp_off;
	int (*open)(struct sbrig_history *h, const char *where, bool write);
	void (*close)(struct sbrig_history *h);
	int (*exec)(struct sbrig_history *h, const char *sql, const char *what);
	struct hi_stmt *(*prepare)(struct sbrig_history *h, const char *sql,
				   int *ret);
	struct hi_stmt *(*prepare_rows)(struct sbrig_history *h,
					const char *sql, int *ret);
	void (*bind_text)(struct hi_stmt *st, int i, const char *s);
	void (*bind_int64)(struct hi_stmt *st, int i, int64_t v);
	void (*bind_double)(struct hi_stmt *st, int i, double v);
	int (*step)(struct hi_stmt *st, const char *what);
	void (*reset)(struct hi_stmt *st);
	void (*finalize)(struct hi_stmt *st);
	const char *(*text)(struct hi_stmt *st, int i);
	int64_t (*int64)(struct hi_stmt *st, int i);
	double (*dbl)(struct hi_stmt *st, int i);
	bool (*null)(struct hi_stmt *st, int i);
	int (*begin)(struct sbrig_history *h, const char *what);
	int (*commit)(struct sbrig_history *h, const char *what);
	void (*rollback)(struct sbrig_history *h);
};

extern const struct hi_backend hi_sqlite, hi_postgresql;

/**
 * struct sbrig_history - an open history
 * @be: its backend
 * @conn: the backend's connection
 * @path: the database as it is named in messages (its URI, never with a
 *	password)
 * @migrated_from: the schema version a writer found (SBRIG_HISTORY_VERSION
 *	for a reader)
 * @read_as_from: the schema version a reader found
 */
struct sbrig_history {
	const struct hi_backend *be;
	void *conn;
	char path[4096];
	int migrated_from, read_as_from;
};

static inline int hi_exec(struct sbrig_history *h, const char *sql,
			  const char *what)
{
	return h->be->exec(h, sql, what);
}

static inline struct hi_stmt *hi_prepare(struct sbrig_history *h,
					 const char *sql, int *ret)
{
	return h->be->prepare(h, sql, ret);
}

static inline struct hi_stmt *hi_prepare_rows(struct sbrig_history *h,
					      const char *sql, int *ret)
{
	return h->be->prepare_rows(h, sql, ret);
}

static inline void hi_bind_text(struct hi_stmt *st, int i, const char *s)
{
	st->h->be->bind_text(st, i, s);
}

static inline void hi_bind_int64(struct hi_stmt *st, int i, int64_t v)
{
	st->h->be->bind_int64(st, i, v);
}

static inline void hi_bind_double(struct hi_stmt *st, int i, double v)
{
	st->h->be->bind_double(st, i, v);
}

static inline int hi_step(struct hi_stmt *st, const char *what)
{
	return st->h->be->step(st, what);
}

static inline void hi_reset(struct hi_stmt *st)
{
	st->h->be->reset(st);
}

static inline void hi_finalize(struct hi_stmt *st)
{
	if (st)
		st->h->be->finalize(st);
}

static inline const char *hi_text(struct hi_stmt *st, int i)
{
	return st->h->be->text(st, i);
}

static inline int64_t hi_int64(struct hi_stmt *st, int i)
{
	return st->h->be->int64(st, i);
}

static inline double hi_double(struct hi_stmt *st, int i)
{
	return st->h->be->dbl(st, i);
}

static inline bool hi_null(struct hi_stmt *st, int i)
{
	return st->h->be->null(st, i);
}

static inline int hi_begin(struct sbrig_history *h, const char *what)
{
	return h->be->begin(h, what);
}

static inline int hi_commit(struct sbrig_history *h, const char *what)
{
	return h->be->commit(h, what);
}

static inline void hi_rollback(struct sbrig_history *h)
{
	h->be->rollback(h);
}

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
 * names several scenarios), or a database error.
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
