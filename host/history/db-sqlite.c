// SPDX-License-Identifier: GPL-2.0
/*
 * db-sqlite.c - the history in an SQLite file, the embedded default
 * backend (a plain path or "sqlite:PATH"): opening the file, its schema
 * and migrations, SQLite's errors translated (history-format.md).
 *
 * The schema version is SQLite's PRAGMA user_version. migrations[i] takes
 * a database from version i to version i + 1 (migrations[0] creates the
 * first layout in an empty file), so a file of any older version is
 * brought up to date by the steps after its version, all in one
 * transaction with the new user_version: a migration that fails, or a
 * process killed during one, leaves the file at its old version. A file
 * of a newer version than SBRIG_HISTORY_VERSION is refused, never
 * written.
 *
 * sbrig's files carry its PRAGMA application_id (HI_APPLICATION_ID); a
 * file with another one, or an SQLite file of another program (no
 * application_id, tables of its own), is refused before anything is
 * written to it. Files made before the application_id was set (versions
 * 1 and 2 with our runs table) are ours and get it at their next write.
 *
 * A reader (show, trend, html, export) opens the file read-only: it takes
 * no lock and writes nothing, not even a migration; a file of an older
 * version is read through views of its own connection (read_as_current).
 * Only a writer (add) switches the file to WAL mode (readers do not block
 * the writer, nor it them; a writer killed mid-transaction leaves only an
 * uncommitted tail in the WAL, which the next opener ignores), synchronous
 * FULL (a commit is on disk when it returns), foreign keys, and migrates
 * it; with a busy timeout, concurrent writers queue for the write lock
 * (BEGIN IMMEDIATE) instead of failing.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include <sbrig/sbrig.h>

#include "internal.h"

/* the connection of @h */
#define DB(h) ((sqlite3 *)(h)->conn)

struct sq_stmt {
	struct hi_stmt base;
	sqlite3_stmt *st;
};

#define SQ(s) ((struct sq_stmt *)(s))

/* ---- the schema, version by version ------------------------------------- */

static const char *const migrations[SBRIG_HISTORY_VERSION] = {
	/* 0 -> 1: the first layout */
	"CREATE TABLE runs ("
	" id INTEGER PRIMARY KEY,"
	" commit_sha TEXT NOT NULL,"
	" scenario TEXT NOT NULL,"
	" scenario_sha256 TEXT NOT NULL,"
	" rig_name TEXT NOT NULL,"
	" rig_sha256 TEXT NOT NULL,"
	" capture_path TEXT NOT NULL,"
	" start_ns INTEGER NOT NULL,"
	" end_ns INTEGER NOT NULL,"
	" samples INTEGER NOT NULL,"
	" added_utc TEXT NOT NULL,"
	" UNIQUE (capture_path, start_ns, end_ns, samples));"
	"CREATE TABLE metrics ("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" metric TEXT NOT NULL,"
	" blocker TEXT NOT NULL DEFAULT '',"
	" value REAL NOT NULL,"
	" PRIMARY KEY (run_id, metric, blocker)) WITHOUT ROWID;",
	/*
	 * 1 -> 2: the commit sequence becomes a table (version 1 ordered the
	 * commits by their first run's id, implicitly; the table keeps that
	 * order), each run links its report and records the host version
	 * that made it, and metrics are indexed for the trend's query
	 */
	"CREATE TABLE commits ("
	" sha TEXT PRIMARY KEY,"
	" seq INTEGER NOT NULL UNIQUE);"
	"INSERT INTO commits (sha, seq)"
	" SELECT commit_sha, ROW_NUMBER() OVER (ORDER BY MIN(id))"
	" FROM runs GROUP BY commit_sha;"
	"ALTER TABLE runs ADD COLUMN report TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN host_version TEXT NOT NULL DEFAULT '';"
	"CREATE INDEX metrics_by_metric ON metrics (metric, blocker);",
};

/* ---- errors ------------------------------------------------------------- */

static int sq_err(struct sbrig_history *h, int rc, const char *what)
{
	int err;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		err = -EBUSY;
		break;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		err = -EBADMSG;
		break;
	case SQLITE_PERM:
	case SQLITE_READONLY:
	case SQLITE_AUTH:
		err = -EACCES;
		break;
	case SQLITE_FULL:
		err = -ENOSPC;
		break;
	case SQLITE_NOMEM:
		err = -ENOMEM;
		break;
	case SQLITE_CANTOPEN:
		err = -ENOENT;
		break;
	default:
		err = -EIO;
		break;
	}
	return sbrig_set_error(err, "%s: %s: %s%s", h->path, what,
			       DB(h) ? sqlite3_errmsg(DB(h)) : sqlite3_errstr(rc),
			       err == -EBUSY ? " (another writer held the "
			       "database longer than the busy timeout)" :
			       (rc & 0xff) == SQLITE_NOTADB ?
			       " (is it an sbrig history database?)" : "");
}

static int sq_exec(struct sbrig_history *h, const char *sql, const char *what)
{
	int rc = sqlite3_exec(DB(h), sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : sq_err(h, rc, what);
}

static struct hi_stmt *sq_prepare(struct sbrig_history *h, const char *sql,
				  int *ret)
{
	struct sq_stmt *s = calloc(1, sizeof(*s));
	int rc;

	if (!s) {
		*ret = sbrig_set_error(-ENOMEM, "%s: out of memory", h->path);
		return NULL;
	}
	s->base.h = h;
	rc = sqlite3_prepare_v2(DB(h), sql, -1, &s->st, NULL);
	if (rc != SQLITE_OK) {
		*ret = sq_err(h, rc, "preparing a query");
		sqlite3_finalize(s->st);
		free(s);
		return NULL;
	}
	return &s->base;
}

static void sq_bind_text(struct hi_stmt *st, int i, const char *s)
{
	sqlite3_bind_text(SQ(st)->st, i, s, -1, SQLITE_TRANSIENT);
}

static void sq_bind_int64(struct hi_stmt *st, int i, int64_t v)
{
	sqlite3_bind_int64(SQ(st)->st, i, v);
}

static void sq_bind_double(struct hi_stmt *st, int i, double v)
{
	sqlite3_bind_double(SQ(st)->st, i, v);
}

static int sq_step(struct hi_stmt *st, const char *what)
{
	int rc = sqlite3_step(SQ(st)->st);

	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : sq_err(st->h, rc, what);
}

static void sq_reset(struct hi_stmt *st)
{
	sqlite3_reset(SQ(st)->st);
}

static void sq_finalize(struct hi_stmt *st)
{
	sqlite3_finalize(SQ(st)->st);
	free(st);
}

static const char *sq_text(struct hi_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(SQ(st)->st, i);

	return s ? s : "";
}

static int64_t sq_int64(struct hi_stmt *st, int i)
{
	return sqlite3_column_int64(SQ(st)->st, i);
}

static double sq_double(struct hi_stmt *st, int i)
{
	return sqlite3_column_double(SQ(st)->st, i);
}

static bool sq_null(struct hi_stmt *st, int i)
{
	return sqlite3_column_type(SQ(st)->st, i) == SQLITE_NULL;
}

/* BEGIN IMMEDIATE: the write lock, waited for up to the busy timeout */
static int sq_begin(struct sbrig_history *h, const char *what)
{
	return sq_exec(h, "BEGIN IMMEDIATE", what);
}

static int sq_commit(struct sbrig_history *h, const char *what)
{
	return sq_exec(h, "COMMIT", what);
}

static void sq_rollback(struct sbrig_history *h)
{
	sqlite3_exec(DB(h), "ROLLBACK", NULL, NULL, NULL);
}

/* ---- opening ------------------------------------------------------------ */

static int newer(struct sbrig_history *h, int v)
{
	return sbrig_set_error(-EPROTO, "%s: schema version %d is newer than "
			       "this sbrig reads (%d): use a newer sbrig",
			       h->path, v, SBRIG_HISTORY_VERSION);
}

static int foreign(struct sbrig_history *h, const char *why)
{
	return sbrig_set_error(-EBADMSG, "%s: not an sbrig history database "
			       "(%s): refused, left as it is", h->path, why);
}

/*
 * Whose file this is, from what it says without being written to: ours
 * (our application_id; or, from before it was set, none with a schema
 * version of ours and our runs table), empty (no application_id, no
 * version, no table: a new file), or someone else's. Its schema version
 * into *@v; *@marked when it carries our application_id, *@empty when it
 * is empty. 0, -EBADMSG (not ours), -EPROTO (newer), or an SQLite error.
 */
static int identify(struct sbrig_history *h, int *v, bool *marked,
		    bool *empty)
{
	sqlite3_stmt *st = NULL;
	int app = 0, ret = 0, rc, objects = 0, runs = 0;
	char why[96];

	*empty = false;
	/* one statement: one snapshot (another process may be creating it) */
	rc = sqlite3_prepare_v2(DB(h), "SELECT (SELECT application_id FROM "
				"pragma_application_id), (SELECT user_version "
				"FROM pragma_user_version), COUNT(*), COUNT(*) "
				"FILTER (WHERE type = 'table' AND name = 'runs') "
				"FROM sqlite_schema", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		return sq_err(h, rc, "reading its application id, schema "
			      "version and tables");
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		app = sqlite3_column_int(st, 0);
		*v = sqlite3_column_int(st, 1);
		objects = sqlite3_column_int(st, 2);
		runs = sqlite3_column_int(st, 3);
	} else {
		ret = sq_err(h, rc, "reading its application id, schema "
			     "version and tables");
	}
	sqlite3_finalize(st);
	if (ret)
		return ret;
	*marked = app == HI_APPLICATION_ID;
	if (app && app != HI_APPLICATION_ID) {
		snprintf(why, sizeof(why), "its application_id is %#x, sbrig's "
			 "is %#x", (unsigned int)app, HI_APPLICATION_ID);
		return foreign(h, why);
	}
	if (*v > SBRIG_HISTORY_VERSION)
		return newer(h, *v);
	if (!app && !*v && !objects) {
		*empty = true;
		return 0;
	}
	if (!app && !*v)
		return foreign(h, "an SQLite database of another program: no "
			       "application_id, no schema version, tables of "
			       "its own");
	if (*v < 1 || (*v < SBRIG_HISTORY_VERSION && !runs) ||
	    (!app && !runs)) {
		snprintf(why, sizeof(why), "schema version %d but no runs "
			 "table", *v);
		return foreign(h, why);
	}
	return 0;
}

/*
 * Bring the schema to SBRIG_HISTORY_VERSION and mark the file as ours
 * (application_id), in one transaction, identified again under the write
 * lock (another process may have created or migrated it meanwhile).
 */
static int migrate(struct sbrig_history *h)
{
	char sql[96], what[64];
	bool marked, empty;
	int v = 0, ret;

	ret = sq_exec(h, "BEGIN IMMEDIATE", "locking it to check its schema");
	if (ret)
		return ret;
	ret = identify(h, &v, &marked, &empty);
	if (ret)
		goto rollback;
	if (marked && v == SBRIG_HISTORY_VERSION) {
		h->migrated_from = v;
		return sq_exec(h, "COMMIT", "committing its schema");
	}
	h->migrated_from = v;
	for (int i = v; i < SBRIG_HISTORY_VERSION; i++) {
		snprintf(what, sizeof(what), "migrating schema version %d to "
			 "%d", i, i + 1);
		ret = sq_exec(h, migrations[i], what);
		if (ret)
			goto rollback;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d; "
		 "PRAGMA application_id = %d", SBRIG_HISTORY_VERSION,
		 HI_APPLICATION_ID);
	ret = sq_exec(h, sql, "setting the schema version");
	if (ret)
		goto rollback;
	return sq_exec(h, "COMMIT", "committing its schema");
rollback:
	sqlite3_exec(DB(h), "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/*
 * A reader of a file of an older schema version sees it as the current
 * one, through objects of its own connection's TEMP schema (searched
 * before the file's own for a name without a schema): nothing is written
 * to the file. Version 1: the commit sequence of its runs' order, and
 * runs without a report or host version.
 */
static const char *const read_as_current[SBRIG_HISTORY_VERSION] = {
	NULL,
	"CREATE TEMP TABLE commits AS SELECT commit_sha AS sha,"
	" ROW_NUMBER() OVER (ORDER BY MIN(id)) AS seq"
	" FROM main.runs GROUP BY commit_sha;"
	"CREATE TEMP VIEW runs AS SELECT *, '' AS report,"
	" '' AS host_version FROM main.runs;",
};

/* "file:" URI of @path (RFC 3986: what is not unreserved or '/' escaped) */
static int uri_of(const char *path, const char *query, char *buf,
		  size_t size)
{
	size_t k = 0;
	int n;

	n = snprintf(buf, size, "file:");
	k = (size_t)n;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (k + 4 >= size)
			return -ENAMETOOLONG;
		if (strchr("/-._~", *p) || (*p >= '0' && *p <= '9') ||
		    ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))
			buf[k++] = (char)*p;
		else
			k += (size_t)snprintf(buf + k, size - k, "%%%02X", *p);
	}
	n = snprintf(buf + k, size - k, "?%s", query);
	return n < 0 || (size_t)n >= size - k ? -ENAMETOOLONG : 0;
}

/*
 * Open @path read-only. A file in WAL mode needs its -shm file, which a
 * reader cannot create in a directory it may not write: when there is no
 * -wal file either (no writer is active, the last one checkpointed
 * everything into the file), the file alone is the database, and it is
 * opened as immutable.
 */
static int open_reader(struct sbrig_history *h)
{
	char wal[4200], uri[3 * 4096 + 64];
	int rc, ret;

	rc = sqlite3_open_v2(h->path, (sqlite3 **)&h->conn, SQLITE_OPEN_READONLY, NULL);
	if (rc != SQLITE_OK)
		return sq_err(h, rc, "opening it");
	sqlite3_extended_result_codes(DB(h), 1);
	rc = sqlite3_exec(DB(h), "SELECT COUNT(*) FROM sqlite_schema", NULL,
			  NULL, NULL);
	snprintf(wal, sizeof(wal), "%s-wal", h->path);
	if (((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN) ||
	    !access(wal, F_OK))
		return 0;	/* open, or an error the first read reports */
	sqlite3_close(DB(h));
	h->conn = NULL;
	ret = uri_of(h->path, "immutable=1", uri, sizeof(uri));
	if (ret)
		return sbrig_set_error(ret, "%s: path too long", h->path);
	rc = sqlite3_open_v2(uri, (sqlite3 **)&h->conn, SQLITE_OPEN_READONLY |
			     SQLITE_OPEN_URI, NULL);
	if (rc != SQLITE_OK)
		return sq_err(h, rc, "opening it");
	sqlite3_extended_result_codes(DB(h), 1);
	return 0;
}

/*
 * Switch a writer's file to WAL mode. Two adders creating one new file at
 * once can find it locked by the other's switch without SQLite's busy
 * handler being asked (seen: "database is locked" at once): retried, for
 * up to the busy timeout, until one of them has switched it.
 */
static int to_wal(struct sbrig_history *h)
{
	for (int waited_ms = 0;; waited_ms += 10) {
		int rc = sqlite3_exec(DB(h), "PRAGMA journal_mode = WAL", NULL,
				      NULL, NULL);

		if (rc == SQLITE_OK)
			return 0;
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= HI_BUSY_TIMEOUT_MS)
			return sq_err(h, rc, "switching to WAL mode");
		sqlite3_sleep(10);
	}
}

/*
 * A writer writes the file and, beside it, its -wal and -shm files: say
 * so when it cannot, rather than SQLite's "unable to open database file"
 */
static int writable(struct sbrig_history *h)
{
	char dir[sizeof(h->path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", h->path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		slash[slash == dir] = '\0';	/* "/h.db" -> "/" */
	if ((access(h->path, F_OK) || !access(h->path, W_OK)) &&
	    !access(dir, W_OK))
		return 0;
	return sbrig_set_error(-errno, "%s: cannot add to it: %s (sbrig "
			       "history add writes the file and its -wal and "
			       "-shm files beside it, in %s)", h->path,
			       strerror(errno), dir);
}

static int sq_open(struct sbrig_history *h, const char *path, bool write)
{
	struct stat st;
	bool marked, empty;
	int ret, rc, v = 0;

	if (!*path) {
		ret = sbrig_set_error(-EINVAL, "the history database: an "
				      "empty file name");
		goto fail;
	}
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			ret = sbrig_set_error(-EINVAL, "%s: not a regular file",
					      path);
			goto fail;
		}
	} else if (errno != ENOENT || !write) {
		ret = sbrig_set_error(-errno, "%s: %s%s", path, strerror(errno),
				      errno == ENOENT ? " (no history there "
				      "yet: 'sbrig history add' creates it)" :
				      "");
		goto fail;
	} else if ((ret = sbrig_mkdir_parent(path, 0755)) < 0) {
		sbrig_prefix_error("%s: creating its directory", path);
		goto fail;
	}
	if (write) {
		ret = writable(h);
		if (ret)
			goto fail;
		rc = sqlite3_open_v2(path, (sqlite3 **)&h->conn, SQLITE_OPEN_READWRITE |
				     SQLITE_OPEN_CREATE, NULL);
		ret = rc == SQLITE_OK ? 0 : sq_err(h, rc, "opening it");
		if (!ret)
			sqlite3_extended_result_codes(DB(h), 1);
	} else {
		ret = open_reader(h);
	}
	if (ret)
		goto fail;
	sqlite3_busy_timeout(DB(h), HI_BUSY_TIMEOUT_MS);
	/* a file that is not ours, or too new, is refused before any write */
	ret = identify(h, &v, &marked, &empty);
	if (ret)
		goto fail;
	h->migrated_from = SBRIG_HISTORY_VERSION;
	if (!write) {
		if (empty) {
			ret = sbrig_set_error(-ENOENT, "%s: an empty database "
					      "(no history there yet: 'sbrig "
					      "history add' makes one)", path);
			goto fail;
		}
		for (int i = v; i < SBRIG_HISTORY_VERSION && !ret; i++)
			if (read_as_current[i])
				ret = sq_exec(h, read_as_current[i],
					      "reading an older schema version");
		if (ret)
			goto fail;
		h->read_as_from = v;
		return 0;
	}
	ret = to_wal(h);
	if (!ret)
		ret = sq_exec(h, "PRAGMA synchronous = FULL; "
			      "PRAGMA foreign_keys = ON", "setting it up");
	if (!ret)
		ret = migrate(h);
fail:
	return ret;
}

static void sq_close(struct sbrig_history *h)
{
	sqlite3_close(DB(h));
	h->conn = NULL;
}

const struct hi_backend hi_sqlite = {
	.name = "sqlite",
	.temp = "temp",
	.open = sq_open,
	.close = sq_close,
	.exec = sq_exec,
	.prepare = sq_prepare,
	.prepare_rows = sq_prepare,	/* rows are stepped anyway */
	.bind_text = sq_bind_text,
	.bind_int64 = sq_bind_int64,
	.bind_double = sq_bind_double,
	.step = sq_step,
	.reset = sq_reset,
	.finalize = sq_finalize,
	.text = sq_text,
	.int64 = sq_int64,
	.dbl = sq_double,
	.null = sq_null,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
};
