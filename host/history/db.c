// SPDX-License-Identifier: GPL-2.0
/*
 * db.c - the history database: where it is, opening it, its schema and
 * migrations, SQLite's errors translated (history-format.md).
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
 * Every handle sets WAL mode (readers do not block the writer, nor it
 * them; a writer killed mid-transaction leaves only an uncommitted tail
 * in the WAL, which the next opener ignores), synchronous FULL (a commit
 * is on disk when it returns), foreign keys, and a busy timeout, so
 * concurrent writers queue for the write lock instead of failing.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sbrig/sbrig.h>

#include "internal.h"

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

int hi_err(struct sbrig_history *h, int rc, const char *what)
{
	int err;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		err = -EBUSY;
		break;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		err = -EINVAL;
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
			       h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc),
			       err == -EBUSY ? " (another writer held the "
			       "database longer than the busy timeout)" :
			       (rc & 0xff) == SQLITE_NOTADB ?
			       " (is it an sbrig history database?)" : "");
}

int hi_exec(struct sbrig_history *h, const char *sql, const char *what)
{
	int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : hi_err(h, rc, what);
}

sqlite3_stmt *hi_prepare(struct sbrig_history *h, const char *sql, int *ret)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK) {
		*ret = hi_err(h, rc, "preparing a query");
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* ---- where it is -------------------------------------------------------- */

int sbrig_history_default_path(char *buf, size_t size)
{
	const char *env = getenv("SBRIG_HISTORY");
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	int n;

	if (env && *env)
		n = snprintf(buf, size, "%s", env);
	else if (xdg && *xdg == '/')	/* relative ones are ignored (XDG) */
		n = snprintf(buf, size, "%s/sbrig/history.db", xdg);
	else if (home && *home)
		n = snprintf(buf, size, "%s/.local/share/sbrig/history.db",
			     home);
	else
		return sbrig_set_error(-ENOENT, "no history database: give "
				       "--db FILE, or set SBRIG_HISTORY or "
				       "HOME");
	if (n < 0 || (size_t)n >= size)
		return sbrig_set_error(-ENAMETOOLONG, "history database path "
				       "too long");
	return 0;
}

/* ---- opening ------------------------------------------------------------ */

static int user_version(struct sbrig_history *h, int *v)
{
	sqlite3_stmt *st;
	int ret = 0, rc;

	st = hi_prepare(h, "PRAGMA user_version", &ret);
	if (!st)
		return ret;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int(st, 0);
	else
		ret = hi_err(h, rc, "reading the schema version");
	sqlite3_finalize(st);
	return ret;
}

static int newer(struct sbrig_history *h, int v)
{
	return sbrig_set_error(-EPROTO, "%s: schema version %d is newer than "
			       "this sbrig reads (%d): use a newer sbrig",
			       h->path, v, SBRIG_HISTORY_VERSION);
}

/* bring the schema to SBRIG_HISTORY_VERSION, in one transaction */
static int migrate(struct sbrig_history *h)
{
	char sql[64], what[64];
	int v = 0, ret;

	ret = hi_exec(h, "BEGIN IMMEDIATE", "locking it to check its schema");
	if (ret)
		return ret;
	ret = user_version(h, &v);
	if (ret)
		goto rollback;
	h->migrated_from = v;
	if (v > SBRIG_HISTORY_VERSION) {
		ret = newer(h, v);
		goto rollback;
	}
	if (v < 0) {
		ret = sbrig_set_error(-EINVAL, "%s: schema version %d: not an "
				      "sbrig history database", h->path, v);
		goto rollback;
	}
	if (v > 0 && v < SBRIG_HISTORY_VERSION) {
		/* a file of ours, not someone else's database */
		sqlite3_stmt *st = hi_prepare(h, "SELECT 1 FROM sqlite_schema "
					      "WHERE type = 'table' AND "
					      "name = 'runs'", &ret);

		if (!st)
			goto rollback;
		if (sqlite3_step(st) != SQLITE_ROW)
			ret = sbrig_set_error(-EINVAL, "%s: schema version %d "
					      "but no runs table: not an sbrig "
					      "history database", h->path, v);
		sqlite3_finalize(st);
		if (ret)
			goto rollback;
	}
	for (int i = v; i < SBRIG_HISTORY_VERSION; i++) {
		snprintf(what, sizeof(what), "migrating schema version %d to "
			 "%d", i, i + 1);
		ret = hi_exec(h, migrations[i], what);
		if (ret)
			goto rollback;
	}
	if (v != SBRIG_HISTORY_VERSION) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
			 SBRIG_HISTORY_VERSION);
		ret = hi_exec(h, sql, "setting the schema version");
		if (ret)
			goto rollback;
	}
	return hi_exec(h, "COMMIT", "committing its schema");
rollback:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

struct sbrig_history *sbrig_history_open(const char *path, bool create)
{
	struct sbrig_history *h = calloc(1, sizeof(*h));
	struct stat st;
	int ret, rc, v = 0;

	if (!h) {
		errno = ENOMEM;
		sbrig_set_error(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	snprintf(h->path, sizeof(h->path), "%s", path);
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
	} else if (errno != ENOENT || !create) {
		ret = sbrig_set_error(-errno, "%s: %s%s", path, strerror(errno),
				      errno == ENOENT ? " (no history there "
				      "yet: 'sbrig history add' creates it)" :
				      "");
		goto fail;
	} else if ((ret = sbrig_mkdir_parent(path, 0755)) < 0) {
		sbrig_prefix_error("%s: creating its directory", path);
		goto fail;
	}
	rc = sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE |
			     (create ? SQLITE_OPEN_CREATE : 0), NULL);
	if (rc != SQLITE_OK) {
		ret = hi_err(h, rc, "opening it");
		goto fail;
	}
	sqlite3_extended_result_codes(h->db, 1);
	sqlite3_busy_timeout(h->db, HI_BUSY_TIMEOUT_MS);
	/* a file this sbrig cannot read is refused before anything is written */
	ret = user_version(h, &v);
	if (!ret && v > SBRIG_HISTORY_VERSION)
		ret = newer(h, v);
	if (!ret)
		ret = hi_exec(h, "PRAGMA journal_mode = WAL",
			      "switching to WAL mode");
	if (!ret)
		ret = hi_exec(h, "PRAGMA synchronous = FULL; "
			      "PRAGMA foreign_keys = ON", "setting it up");
	if (!ret)
		ret = migrate(h);
	if (ret)
		goto fail;
	return h;
fail:
	sbrig_history_close(h);
	errno = -ret;
	return NULL;
}

void sbrig_history_close(struct sbrig_history *h)
{
	if (!h)
		return;
	sqlite3_close(h->db);
	free(h);
}

const char *sbrig_history_path(const struct sbrig_history *h)
{
	return h->path;
}

int sbrig_history_migrated_from(const struct sbrig_history *h)
{
	return h->migrated_from;
}

/* ---- naming a scenario --------------------------------------------------- */

static bool is_hex(const char *s)
{
	for (; *s; s++)
		if (!strchr("0123456789abcdefABCDEF", *s))
			return false;
	return true;
}

/* "dir/press.scn" -> "press" in @buf */
static const char *stem(const char *path, char *buf, size_t size)
{
	const char *b = strrchr(path, '/');
	size_t len;

	b = b ? b + 1 : path;
	len = strlen(b);
	if (len > 4 && !strcmp(b + len - 4, ".scn"))
		len -= 4;
	snprintf(buf, size, "%.*s", (int)len, b);
	return buf;
}

int hi_scenario_resolve(struct sbrig_history *h, const char *arg,
			struct hi_scenario *out)
{
	sqlite3_stmt *st;
	char known[2048] = "", s[1024];
	const char *found = NULL;
	char *first = NULL;
	size_t nfound = 0, len;
	bool sha = strlen(arg) >= 8 && is_hex(arg);
	int ret = 0, rc;

	memset(out, 0, sizeof(*out));
	st = hi_prepare(h, "SELECT DISTINCT scenario, scenario_sha256 FROM "
			"runs ORDER BY scenario", &ret);
	if (!st)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *hash = (const char *)sqlite3_column_text(st, 1);

		len = strlen(known);
		if (len + strlen(name) + 8 < sizeof(known) &&
		    !strstr(known, name))
			snprintf(known + len, sizeof(known) - len, "%s'%s'",
				 len ? ", " : "", *name ? name : "");
		if (!strcmp(name, arg) || !strcmp(stem(name, s, sizeof(s)), arg))
			found = name;
		else if (sha && !strncasecmp(hash, arg, strlen(arg)))
			found = name;
		else
			continue;
		if (!first) {
			first = strdup(found);
			nfound = 1;
		} else if (strcmp(first, found)) {
			nfound++;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(first);
		return hi_err(h, rc, "listing its scenarios");
	}
	if (!first)
		return sbrig_set_error(-ENOENT, "%s: no run of scenario '%s' "
				       "(the history has: %s)", h->path, arg,
				       *known ? known : "no run at all");
	if (nfound > 1) {
		ret = sbrig_set_error(-EINVAL, "%s: '%s' names several "
				      "scenarios (%s, ...): give the scenario's "
				      "path as recorded", h->path, arg, first);
		free(first);
		return ret;
	}
	snprintf(out->name, sizeof(out->name), "%s", first);
	free(first);
	if (sha && strcmp(out->name, arg) &&
	    strcmp(stem(out->name, s, sizeof(s)), arg)) {
		out->where = "r.scenario_sha256 LIKE ?1 || '%'";
		snprintf(out->param, sizeof(out->param), "%s", arg);
	} else {
		out->where = "r.scenario = ?1";
		snprintf(out->param, sizeof(out->param), "%s", out->name);
	}
	return 0;
}
