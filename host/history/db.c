// SPDX-License-Identifier: GPL-2.0
/*
 * db.c - the history database: where it is, which backend its URI names
 * (a path or "sqlite:PATH": db-sqlite.c; "postgresql://...": db-pg.c), opening and closing it through
 * that backend, and the scenario a user names resolved to runs (with
 * SQL every backend takes). Nothing here knows a backend's API.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sbrig/sbrig.h>

#include "internal.h"

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
				       "--db DB, or set SBRIG_HISTORY or "
				       "HOME");
	if (n < 0 || (size_t)n >= size)
		return sbrig_set_error(-ENAMETOOLONG, "history database path "
				       "too long");
	return 0;
}

/* ---- opening ------------------------------------------------------------ */

/* the schemes of the URIs of the backends that are built in */
static const struct {
	const char *prefix;
	const struct hi_backend *be;
	bool whole;	/* the backend takes the whole URI (libpq's) */
} schemes[] = {
	{ "sqlite:", &hi_sqlite, false },
	{ "postgresql://", &hi_postgresql, true },
	{ "postgres://", &hi_postgresql, true },
};

/*
 * The backend @uri names, and what it names without the scheme, into
 * *@where: a "SCHEME:" of schemes[]; a plain path is SQLite's. A URI of
 * another scheme ("x://...") is refused, naming the known ones.
 */
static int backend_of(const char *uri, const struct hi_backend **be,
		      const char **where)
{
	size_t n = strspn(uri, "abcdefghijklmnopqrstuvwxyz"
			  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	for (size_t i = 0; i < sizeof(schemes) / sizeof(*schemes); i++) {
		size_t len = strlen(schemes[i].prefix);

		if (!strncasecmp(uri, schemes[i].prefix, len)) {
			*be = schemes[i].be;
			*where = schemes[i].whole ? uri : uri + len;
			return 0;
		}
	}
	if (n && !strncmp(uri + n, "://", 3))
		return sbrig_set_error(-EINVAL, "%.*s: not a history backend "
				       "(a path, sqlite:PATH, or "
				       "postgresql://...)", (int)n, uri);
	*be = &hi_sqlite;
	*where = uri;
	return 0;
}

struct sbrig_history *sbrig_history_open(const char *uri, bool write)
{
	struct sbrig_history *h = calloc(1, sizeof(*h));
	const char *where = uri;
	int ret;

	if (!h) {
		errno = ENOMEM;
		sbrig_set_error(-ENOMEM, "%s: out of memory", uri);
		return NULL;
	}
	ret = backend_of(uri, &h->be, &where);
	if (ret) {
		free(h);
		errno = -ret;
		return NULL;
	}
	snprintf(h->path, sizeof(h->path), "%s", where);
	h->migrated_from = SBRIG_HISTORY_VERSION;
	h->read_as_from = SBRIG_HISTORY_VERSION;
	ret = h->be->open(h, where, write);
	if (ret) {
		sbrig_history_close(h);
		errno = -ret;
		return NULL;
	}
	return h;
}

void sbrig_history_close(struct sbrig_history *h)
{
	if (!h)
		return;
	if (h->conn)
		h->be->close(h);
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
	struct hi_stmt *st;
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
	while ((rc = hi_step(st, "listing its scenarios")) > 0) {
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
	hi_finalize(st);
	if (rc < 0) {
		free(first);
		return rc;
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
