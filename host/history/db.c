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
 * instead of failing.
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

const char *hi_text(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);

	return s ? s : "";
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
	sqlite3_stmt *st;
	int app = 0, ret = 0, rc, objects = 0, runs = 0;
	char why[96];

	*empty = false;
	/* one statement: one snapshot (another process may be creating it) */
	st = hi_prepare(h, "SELECT (SELECT application_id FROM "
			"pragma_application_id), (SELECT user_version FROM "
			"pragma_user_version), COUNT(*), COUNT(*) FILTER (WHERE "
			"type = 'table' AND name = 'runs') FROM sqlite_schema",
			&ret);
	if (!st)
		return ret;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		app = sqlite3_column_int(st, 0);
		*v = sqlite3_column_int(st, 1);
		objects = sqlite3_column_int(st, 2);
		runs = sqlite3_column_int(st, 3);
	} else {
		ret = hi_err(h, rc, "reading its application id, schema "
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

	ret = hi_exec(h, "BEGIN IMMEDIATE", "locking it to check its schema");
	if (ret)
		return ret;
	ret = identify(h, &v, &marked, &empty);
	if (ret)
		goto rollback;
	if (marked && v == SBRIG_HISTORY_VERSION) {
		h->migrated_from = v;
		return hi_exec(h, "COMMIT", "committing its schema");
	}
	h->migrated_from = v;
	for (int i = v; i < SBRIG_HISTORY_VERSION; i++) {
		snprintf(what, sizeof(what), "migrating schema version %d to "
			 "%d", i, i + 1);
		ret = hi_exec(h, migrations[i], what);
		if (ret)
			goto rollback;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d; "
		 "PRAGMA application_id = %d", SBRIG_HISTORY_VERSION,
		 HI_APPLICATION_ID);
	ret = hi_exec(h, sql, "setting the schema version");
	if (ret)
		goto rollback;
	return hi_exec(h, "COMMIT", "committing its schema");
rollback:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
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

	rc = sqlite3_open_v2(h->path, &h->db, SQLITE_OPEN_READONLY, NULL);
	if (rc != SQLITE_OK)
		return hi_err(h, rc, "opening it");
	sqlite3_extended_result_codes(h->db, 1);
	rc = sqlite3_exec(h->db, "SELECT COUNT(*) FROM sqlite_schema", NULL,
			  NULL, NULL);
	snprintf(wal, sizeof(wal), "%s-wal", h->path);
	if (((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN) ||
	    !access(wal, F_OK))
		return 0;	/* open, or an error the first read reports */
	sqlite3_close(h->db);
	h->db = NULL;
	ret = uri_of(h->path, "immutable=1", uri, sizeof(uri));
	if (ret)
		return sbrig_set_error(ret, "%s: path too long", h->path);
	rc = sqlite3_open_v2(uri, &h->db, SQLITE_OPEN_READONLY |
			     SQLITE_OPEN_URI, NULL);
	if (rc != SQLITE_OK)
		return hi_err(h, rc, "opening it");
	sqlite3_extended_result_codes(h->db, 1);
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
		int rc = sqlite3_exec(h->db, "PRAGMA journal_mode = WAL", NULL,
				      NULL, NULL);

		if (rc == SQLITE_OK)
			return 0;
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= HI_BUSY_TIMEOUT_MS)
			return hi_err(h, rc, "switching to WAL mode");
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

struct sbrig_history *sbrig_history_open(const char *path, bool write)
{
	struct sbrig_history *h = calloc(1, sizeof(*h));
	struct stat st;
	bool marked, empty;
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
		rc = sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE |
				     SQLITE_OPEN_CREATE, NULL);
		ret = rc == SQLITE_OK ? 0 : hi_err(h, rc, "opening it");
		if (!ret)
			sqlite3_extended_result_codes(h->db, 1);
	} else {
		ret = open_reader(h);
	}
	if (ret)
		goto fail;
	sqlite3_busy_timeout(h->db, HI_BUSY_TIMEOUT_MS);
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
				ret = hi_exec(h, read_as_current[i],
					      "reading an older schema version");
		if (ret)
			goto fail;
		h->read_as_from = v;
		return h;
	}
	ret = to_wal(h);
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

int sbrig_history_read_as_from(const struct sbrig_history *h)
{
	return h->read_as_from;
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
	char known[2048] = "", s[1024], e[1100];
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
		const char *name = hi_text(st, 0);
		const char *hash = hi_text(st, 1);

		len = strlen(known);
		sbrig_term(name, e, sizeof(e));	/* for a terminal */
		if (len + strlen(e) + 8 < sizeof(known) && !strstr(known, e))
			snprintf(known + len, sizeof(known) - len, "%s'%s'",
				 len ? ", " : "", e);
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
				      "path as recorded", h->path, arg,
				      sbrig_term(first, e, sizeof(e)));
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
