/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: the per-commit history of runs (libsbrig-history)
 *
 * A database of runs (an SQLite file or a PostgreSQL database; report.json
 * documents, or captures analysed
 * on the fly) with the commit, scenario and rig they were made on
 * (report.json's capture.provenance) and the metrics sbrig compare takes
 * from each (sbrig/compare.h); trends of one metric of one scenario over
 * the commit sequence, with the commits where the metric stepped up or
 * down (a windowed t-test over the commits, as Mozilla Perfherder does).
 * The database's layout, the commit order and the change-point rule are
 * documented in host/doc/history-format.md (the contract).
 *
 * Layers: host/history/ stands on libsbrig-analysis (to read runs),
 * libsqlite3, libpq and libgit2; db.c chooses the backend by the
 * database's URI (db-sqlite.c, db-pg.c: one interface, internal.h's
 * struct hi_backend, which open, migrate and query it), add.c
 * adds runs, trend.c queries a trend, steps.c finds its change points
 * (pure functions, no database), git-order.c orders the commits as a git
 * repository's history does, export.c writes the database out, copy.c
 * copies it into another (any backends). The CLI
 * (sbrig history) only parses arguments and prints what this returns.
 *
 * Concurrency: every change is one transaction under the database's write
 * lock (SQLite: WAL mode and a busy timeout; PostgreSQL: an advisory lock
 * and a lock timeout), so concurrent writers (several sbrig history add)
 * wait for each other and a writer killed mid-transaction leaves
 * what was committed before it intact. A handle is used by one thread.
 *
 * Errors follow libsbrig's convention (sbrig.h): 0 / -errno, NULL +
 * errno, sbrig_errmsg() naming the database file or the run's file and
 * field. Each backend's errors are translated once, in its db-*.c.
 */
#ifndef SBRIG_HISTORY_H
#define SBRIG_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sbrig/compare.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the schema version this library writes (SQLite's PRAGMA user_version) */
#define SBRIG_HISTORY_VERSION 2
/* trend.json's "schema" and "version" */
#define SBRIG_TREND_SCHEMA "sbrig-trend"
#define SBRIG_TREND_VERSION 2

struct sbrig_history;

/**
 * sbrig_history_default_path() - where the database is by default
 * @buf: filled with the path
 * @size: its size
 *
 * $SBRIG_HISTORY if set and not empty, else $XDG_DATA_HOME/sbrig/history.db
 * (XDG_DATA_HOME defaulting to $HOME/.local/share).
 *
 * Return: 0, or -ENOENT when neither $SBRIG_HISTORY nor $HOME is set,
 * -ENAMETOOLONG.
 */
int sbrig_history_default_path(char *buf, size_t size);

/**
 * sbrig_history_open() - open a history database to read it, or to write it
 * @path: the database: a path or "sqlite:PATH" (an SQLite file, as
 *	below), or a "postgresql://" / "postgres://" URI (libpq's; one with a
 *	password is refused, -EINVAL: history-format.md, "Backends", says how
 *	PostgreSQL differs); another "SCHEME://" is refused (-EINVAL)
 * @write: false: to read it (sbrig_history_show(), _trend(), _render_html(),
 *	_export_csv()): opened read-only, it takes no lock and writes nothing
 *	(a file of an older schema version is read as the current one
 *	without being migrated; one in a directory the reader cannot write
 *	is read as it is); it must exist. true: to add runs: created (with
 *	its directory) when it does not exist, switched to WAL mode, migrated
 *	to SBRIG_HISTORY_VERSION in one transaction (all steps or none) and
 *	marked as sbrig's (PRAGMA application_id).
 *
 * Refused, before anything is written to it: a file of a newer schema
 * version (-EPROTO), one that is no SQLite database, is corrupt, or is an
 * SQLite database of another program (another application_id, or tables
 * of its own and none of ours) (-EBADMSG); to read: an empty file
 * (-ENOENT).
 *
 * Return: the handle, closed with sbrig_history_close(); or NULL with
 * errno and sbrig_errmsg() naming @path.
 */
struct sbrig_history *sbrig_history_open(const char *path, bool write);

/** sbrig_history_close() - close the database; NULL ok */
void sbrig_history_close(struct sbrig_history *h);

/** sbrig_history_path() - the file or URI @h was opened from (owned by @h) */
const char *sbrig_history_path(const struct sbrig_history *h);

/**
 * sbrig_history_migrated_from() - the schema version the file had when
 * opened (0: it was created; SBRIG_HISTORY_VERSION: nothing to migrate)
 * @h: the database
 */
int sbrig_history_migrated_from(const struct sbrig_history *h);

/**
 * sbrig_history_read_as_from() - for a handle opened to read, the schema
 * version of the file (read as SBRIG_HISTORY_VERSION, not migrated)
 * @h: the database
 */
int sbrig_history_read_as_from(const struct sbrig_history *h);

/**
 * sbrig_history_order_by_git() - order the commits as a git repository's
 *	history does, for what is read through @h from now on
 * @h: the database, opened to read
 * @git_dir: the repository (its .git directory, a bare repository, or a
 *	work tree holding .git; not searched for upwards)
 * @unknown: if not NULL, set to how many of the history's commits the
 *	repository does not have (they are left out)
 *
 * Parents come before their children (topological order, ties by commit
 * time), whatever the order the runs were added in: a commit added late
 * (backfilled) takes its place. Only commit names of 4 to 40 hex digits
 * are looked up. The order lives in @h's connection only: nothing is
 * written to the database.
 *
 * Return: 0; -EINVAL when @git_dir is no repository, -ENOENT when it has
 * none of the history's commits, -ENOMEM, -EIO (libgit2 or SQLite
 * failed); sbrig_errmsg() names @git_dir.
 */
int sbrig_history_order_by_git(struct sbrig_history *h, const char *git_dir,
			       size_t *unknown);

/**
 * struct sbrig_history_added - what sbrig_history_add() did
 * @id: the run's id in the database (the one already there when the
 *	capture was added before)
 * @added: true when the run is new, false when it was there already
 * @commit: the run's provenance git_sha (a copy)
 * @scenario: its provenance scenario (a copy)
 */
struct sbrig_history_added {
	int64_t id;
	bool added;
	char commit[128];
	char scenario[1024];
};

/**
 * sbrig_history_add() - add one run
 * @h: the database
 * @arg: a report.json, a directory holding one, or a capture directory
 *	(analysed on the fly; nothing is written into it)
 * @report: what to record as the run's report (the link of the trend
 *	page); NULL: @arg as an absolute path
 * @commit: the commit to file the run under; NULL: its provenance git_sha
 * @out: filled in on success
 *
 * A capture is identified by its path, start and end and sample count
 * (report.json's capture object): the same capture added twice is one
 * run (the second add changes nothing). The run and its metrics are
 * written in one transaction.
 *
 * Return: 0; -EINVAL when @arg cannot be read (missing, unreadable, not a
 * run of this schema: the message names the file and field) or has no commit (provenance git_sha empty), -EBUSY when the
 * database stayed locked longer than the busy timeout, -EIO.
 */
int sbrig_history_add(struct sbrig_history *h, const char *arg,
		      const char *report, const char *commit,
		      struct sbrig_history_added *out);

/**
 * sbrig_history_show() - a summary of the database
 * @h: the database
 * @scenario: NULL: every scenario with its commits and runs; else the
 *	commits of that scenario in sequence, with their runs
 * @out: where to write it (text)
 *
 * Return: 0, -ENOENT (no such scenario), -EBADMSG (the database is
 * corrupt), -EIO.
 */
int sbrig_history_show(struct sbrig_history *h, const char *scenario,
		       FILE *out);

/**
 * struct sbrig_trend_opts - how to look for change points (zero: defaults)
 * @blocker: the blocker of a per-blocker metric (required for one, must be
 *	NULL for the others)
 * @rig: the rig (rig_name or a rig_sha256 prefix) when runs of several
 *	rigs exist; NULL: there must be one
 * @window: commits in each window before and after a candidate (default
 *	5)
 * @t_threshold: |t| of Welch's t-test from which a step is one (default
 *	7, Perfherder's)
 * @cfg: the minimum change that matters (min_change, min_abs of the
 *	metric, sbrig_compare_config); NULL: compare's defaults
 */
struct sbrig_trend_opts {
	const char *blocker;
	const char *rig;
	unsigned int window;
	double t_threshold;
	const struct sbrig_compare_config *cfg;
};

struct sbrig_trend;

/**
 * sbrig_history_trend() - metric @metric of @scenario over the commits
 * @h: the database
 * @scenario: the provenance scenario, its file name without ".scn", or a
 *	scenario_sha256 prefix (at least 8 hex digits)
 * @metric: a metric name (sbrig_metric_name())
 * @opts: options, or NULL
 *
 * Return: the trend (its points per commit in sequence, its change
 * points), freed with sbrig_trend_free(); or NULL with errno ENOENT (no
 * such scenario or no value of @metric), EINVAL (an unknown metric, a
 * blocker missing or not wanted), EXDEV (runs of several rigs and no
 * @opts->rig; the message names them), EBADMSG (the database is corrupt),
 * ENOMEM, EIO.
 */
struct sbrig_trend *sbrig_history_trend(struct sbrig_history *h,
					const char *scenario,
					const char *metric,
					const struct sbrig_trend_opts *opts);

/** sbrig_trend_free() - free a trend; NULL ok */
void sbrig_trend_free(struct sbrig_trend *t);

/** sbrig_trend_steps() - how many change points @t has */
size_t sbrig_trend_steps(const struct sbrig_trend *t);

/**
 * sbrig_trend_render_text() - the trend as a table, one line per commit,
 * change points marked, then one line per change point
 * @t: the trend
 * @out: where to write it
 *
 * Return: 0 or -EIO.
 */
int sbrig_trend_render_text(const struct sbrig_trend *t, FILE *out);

/**
 * sbrig_trend_write_json() - write trend.json (history-format.md)
 * @t: the trend
 * @path: the file (replaced atomically)
 *
 * Return: 0 or -errno with sbrig_errmsg() naming @path.
 */
int sbrig_trend_write_json(const struct sbrig_trend *t, const char *path);

/**
 * sbrig_history_render_html() - the trend page of a scenario
 * @h: the database
 * @scenario: as sbrig_history_trend() takes it
 * @opts: the change-point rule and the rig (@opts->blocker is ignored:
 *	the page has every metric, per blocker for every blocker), or NULL
 * @path: the page (replaced atomically): self-contained (dygraphs and the
 *	data inlined), one chart per metric over the commits with its change
 *	points marked, and the commits with a link to each run's report
 *	(its report.html when one is next to its report.json)
 *
 * Return: 0, or -errno as sbrig_history_trend() (ENOENT: no such
 * scenario or no value; EXDEV: several rigs), or -EIO when the page
 * cannot be made or written (dygraphs missing, @path not writable; the
 * message names the file and why).
 */
int sbrig_history_render_html(struct sbrig_history *h, const char *scenario,
			      const struct sbrig_trend_opts *opts,
			      const char *path);

/**
 * sbrig_history_export_csv() - every metric value of every run as CSV
 * @h: the database
 * @scenario: only this scenario's runs (as sbrig_history_trend() takes
 *	it), or NULL for all
 * @out: where to write it: a header line, then one row per run and metric
 *	(history-format.md, "Export")
 *
 * Return: 0, -ENOENT (no such scenario), -EBADMSG (the database is
 * corrupt), -EIO.
 */
int sbrig_history_export_csv(struct sbrig_history *h, const char *scenario,
			     FILE *out);

/**
 * struct sbrig_history_copied - what sbrig_history_copy() did
 * @runs: the runs of FROM it copied or found in TO
 * @added: of these, the ones TO did not have
 * @scenario: the scenario copied (its provenance scenario), "" for all
 */
struct sbrig_history_copied {
	size_t runs, added;
	char scenario[1024];
};

/**
 * sbrig_history_copy() - copy a history's runs into another (any backends)
 * @from: opened to read
 * @to: opened to write
 * @scenario: NULL for every run, or a scenario as sbrig_history_trend()
 *	takes it
 * @out: what was copied
 *
 * FROM's runs, in its commit sequence, with their metrics, added to TO in
 * one transaction: all or none. A run TO has (the same capture) is left
 * as it is, so copying again adds nothing; a commit TO lacks is appended
 * to its sequence.
 *
 * Return: 0, -ENOENT (no such scenario), -EINVAL (it names several), or a
 * database error of either (the message names the database).
 */
int sbrig_history_copy(struct sbrig_history *from, struct sbrig_history *to,
		       const char *scenario, struct sbrig_history_copied *out);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_HISTORY_H */
