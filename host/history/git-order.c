// SPDX-License-Identifier: GPL-2.0
/*
 * git-order.c - the commit sequence from a git repository (libgit2):
 * parents before children, not the order in which runs were added
 * (history-format.md, "The commit sequence").
 *
 * The history's commits that name a commit of the repository (hex, 4 to
 * 40 digits: a full SHA or an unambiguous prefix; nothing else is handed
 * to libgit2) are pushed onto a revision walk sorted topologically (ties
 * by commit time), oldest first, and numbered in the order the walk meets
 * them. The numbers go into a TEMP table "commits" of the reader's own
 * connection, which every query of the history finds before the file's
 * own table of that name (SQLite's TEMP schema, PostgreSQL's pg_temp are
 * searched first): show, trend, html and export then follow git's
 * order without a word of SQL changed and without writing to the file.
 * A commit the repository does not have is left out (counted). libgit2's
 * errors are translated here, once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <git2.h>

#include <sbrig/sbrig.h>

#include "internal.h"

struct named {
	git_oid oid;
	char *sha;	/* as the history names it */
};

static int cmp_named(const void *a, const void *b)
{
	return git_oid_cmp(&((const struct named *)a)->oid,
			   &((const struct named *)b)->oid);
}

/* libgit2's last error for @rc, naming @dir: -ENOENT or -EIO */
static int git_err(const char *dir, int rc, const char *what)
{
	const git_error *e = git_error_last();

	return sbrig_set_error(rc == GIT_ENOTFOUND ? -ENOENT : -EIO,
			       "%s: %s: %s", dir, what,
			       e && e->message ? e->message : "libgit2 error");
}

static bool commit_name(const char *s, size_t *len)
{
	*len = strlen(s);
	if (*len < GIT_OID_MINPREFIXLEN || *len > GIT_OID_HEXSZ)
		return false;
	return strspn(s, "0123456789abcdefABCDEF") == *len;
}

/* the history's commits the repository has, into @v (sorted by oid) */
static int resolve(struct sbrig_history *h, git_repository *repo,
		   const char *dir, struct named **v, size_t *n,
		   size_t *unknown)
{
	struct hi_stmt *st;
	size_t cap = 0, len;
	int ret = 0, rc;

	*v = NULL;
	*n = *unknown = 0;
	st = hi_prepare(h, "SELECT sha FROM commits", &ret);
	if (!st)
		return ret;
	while ((rc = hi_step(st, "listing its commits")) > 0) {
		const char *sha = hi_text(st, 0);
		bool named = commit_name(sha, &len);
		git_object *obj = NULL;
		git_oid oid;
		int grc = named ? git_oid_fromstrn(&oid, sha, len) : GIT_ENOTFOUND;

		if (!grc)
			grc = git_object_lookup_prefix(&obj, repo, &oid, len,
						       GIT_OBJECT_COMMIT);
		if (grc == GIT_ENOTFOUND || grc == GIT_EAMBIGUOUS) {
			(*unknown)++;	/* not one of its commits (for sure) */
			continue;
		}
		if (grc) {
			ret = git_err(dir, grc, "looking a commit up");
			break;
		}
		if (*n == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct named *nv = realloc(*v, c * sizeof(**v));

			if (!nv) {
				git_object_free(obj);
				ret = -ENOMEM;
				break;
			}
			*v = nv;
			cap = c;
		}
		git_oid_cpy(&(*v)[*n].oid, git_object_id(obj));
		(*v)[*n].sha = strdup(sha);
		git_object_free(obj);
		if (!(*v)[(*n)++].sha) {
			ret = -ENOMEM;
			break;
		}
	}
	if (!ret && rc < 0)
		ret = rc;
	hi_finalize(st);
	if (!ret && *n)
		qsort(*v, *n, sizeof(**v), cmp_named);
	return ret;
}

/* number @v's commits in the walk's order into the TEMP table commits */
static int number(struct sbrig_history *h, git_repository *repo,
		  const char *dir, const struct named *v, size_t n)
{
	git_revwalk *walk = NULL;
	struct hi_stmt *st = NULL;
	int64_t seq = 0;
	git_oid oid;
	char sql[256];
	int ret, grc;

	if (h->be->temp_on) {
		ret = hi_exec(h, h->be->temp_on, "ordering its commits");
		if (ret)
			return ret;
	}
	snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s.commits; "
		 "CREATE TEMP TABLE commits (sha TEXT PRIMARY KEY, "
		 "seq BIGINT NOT NULL)", h->be->temp);
	ret = hi_exec(h, sql, "ordering its commits");
	if (ret)
		goto out;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.commits (sha, seq) VALUES "
		 "(?1, ?2)", h->be->temp);
	st = hi_prepare(h, sql, &ret);
	if (!st)
		goto out;
	grc = git_revwalk_new(&walk, repo);
	if (!grc)
		grc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL |
					  GIT_SORT_TIME | GIT_SORT_REVERSE);
	for (size_t i = 0; i < n && !grc; i++)
		grc = git_revwalk_push(walk, &v[i].oid);
	if (grc) {
		ret = git_err(dir, grc, "walking its history");
		goto out;
	}
	while (!(grc = git_revwalk_next(&oid, walk))) {
		struct named key = { .oid = oid };
		const struct named *f = bsearch(&key, v, n, sizeof(*v),
						cmp_named);

		if (!f)
			continue;
		seq++;
		/* several names of one commit (a prefix, the full SHA) */
		while (f > v && !git_oid_cmp(&f[-1].oid, &oid))
			f--;
		for (; f < v + n && !git_oid_cmp(&f->oid, &oid); f++) {
			hi_reset(st);
			hi_bind_text(st, 1, f->sha);
			hi_bind_int64(st, 2, seq);
			ret = hi_step(st, "ordering its commits");
			if (ret < 0)
				goto out;
			ret = 0;
		}
	}
	if (grc != GIT_ITEROVER)
		ret = git_err(dir, grc, "walking its history");
out:
	hi_finalize(st);
	if (h->be->temp_off) {
		int err = hi_exec(h, h->be->temp_off, "ordering its commits");

		ret = ret ? ret : err;
	}
	git_revwalk_free(walk);
	return ret;
}

int sbrig_history_order_by_git(struct sbrig_history *h, const char *git_dir,
			       size_t *unknown)
{
	git_repository *repo = NULL;
	struct named *v = NULL;
	size_t n = 0, u = 0;
	int ret, grc;

	if (unknown)
		*unknown = 0;
	if (git_libgit2_init() < 0)
		return git_err(git_dir, -1, "starting libgit2");
	grc = git_repository_open_ext(&repo, git_dir,
				      GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (grc) {
		ret = git_err(git_dir, grc, "not a git repository");
		ret = ret == -ENOENT ? -EINVAL : ret;
		goto out;
	}
	ret = resolve(h, repo, git_dir, &v, &n, &u);
	if (!ret && !n)
		ret = sbrig_set_error(-ENOENT, "%s: none of the %zu commits of "
				      "%s is in this repository", git_dir, u,
				      h->path);
	if (!ret)
		ret = number(h, repo, git_dir, v, n);
	if (!ret && unknown)
		*unknown = u;
out:
	if (ret == -ENOMEM)
		sbrig_set_error(-ENOMEM, "%s: out of memory", git_dir);
	for (size_t i = 0; i < n; i++)
		free(v[i].sha);
	free(v);
	git_repository_free(repo);
	git_libgit2_shutdown();
	return ret;
}
