// SPDX-License-Identifier: GPL-2.0
/*
 * history.c - sbrig history add|show|trend|html|export|copy: the per-commit history
 * of runs, offline (no daemon), with libsbrig-history (sbrig/history.h).
 * Each subcommand is one entry of a table; they share --db. The command
 * only parses arguments, calls the library and prints what it returns.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/compare.h>
#include <sbrig/history.h>
#include <sbrig/sbrig.h>

#include "cli.h"

const char history_args[] =
	"[--db DB] add|show|trend|html|export|copy [OPTIONS] [ARGS...]";

const char history_help[] =
"The per-commit history of runs, in a database (offline, no daemon needed):\n"
"DB of --db, else $SBRIG_HISTORY, else $XDG_DATA_HOME/sbrig/history.db\n"
"($HOME/.local/share/sbrig/history.db). DB is a path or sqlite:PATH (an\n"
"SQLite file, the default), or a postgresql://[USER@]HOST[:PORT]/DBNAME[?...]\n"
"URI (libpq's; its password only from ~/.pgpass, PGPASSFILE, PGPASSWORD or a\n"
"service file: a URI with a password is refused). 'add' creates an SQLite\n"
"file (and its directory), or sbrig's tables in an existing PostgreSQL\n"
"database. Several sbrig history add may run at once (they wait for each\n"
"other's transactions); one killed loses only the run it was adding. Only\n"
"add and copy write: show, trend, html and export only read (no lock, no\n"
"migration; an older version is read as it is, add migrates it). A database\n"
"that is not sbrig's (SQLite's application_id or PostgreSQL's sbrig_meta, or\n"
"another program's tables) is refused, left as it is. Layout, backends,\n"
"commit order and the change-point rule: host/doc/history-format.md.\n"
"\n"
"  add [--commit SHA] RUN...\n"
"      add runs: report.json files, directories holding one, or captures\n"
"      (analysed on the fly), filed under their provenance git_sha (or SHA)\n"
"      with their scenario, rig and the metrics sbrig compare takes. The\n"
"      same capture added again is the same run (reported as 'present').\n"
"  show [--git-dir DIR] [SCENARIO]\n"
"      the scenarios with their rigs, commits and runs; with SCENARIO its\n"
"      commits in sequence with their runs\n"
"  trend [--blocker NAME] [--rig RIG] [--window N] [--t-threshold T]\n"
"        [-c FILE] [--json FILE] [--git-dir DIR] SCENARIO METRIC\n"
"      METRIC (as sbrig compare names it) over the commits: per commit its\n"
"      runs' median, min and max, and the change points: the commit where\n"
"      the metric stepped, with the change (Welch's t of the medians of the\n"
"      N commits before vs the N from it on, default 5, |t| >= T, default\n"
"      7, a local maximum of |t|, and the metric's minimum change of sbrig\n"
"      compare's thresholds, -c FILE); 'provisional' while a window has\n"
"      fewer than N commits. A blocker's metric is 0 in the runs without\n"
"      the blocker (a new blocker steps up from 0).\n"
"      SCENARIO: the scenario path as recorded, its file name without\n"
"      .scn, or a scenario_sha256 prefix; RIG (rig_name or a rig_sha256\n"
"      prefix) when the scenario ran on several rigs. --json writes\n"
"      trend.json (replaced atomically).\n"
"  html [--rig RIG] [--window N] [--t-threshold T] [-c FILE]\n"
"       [--git-dir DIR] -o FILE SCENARIO\n"
"      the trend page of SCENARIO: one self-contained HTML file (opens from\n"
"      disk, no network), a chart per metric (per blocker too) over the\n"
"      commits with its change points marked, and the commits with a link\n"
"      to each run's report (its report.html when one is beside it)\n"
"  export [--scenario SCENARIO] [--git-dir DIR] [-o FILE]\n"
"      every metric of every run as CSV (stdout, or FILE)\n"
"  copy [--scenario SCENARIO] FROM TO\n"
"      copy the runs of database FROM (all, or SCENARIO's) into database TO\n"
"      (created like add's; either may be SQLite or PostgreSQL), in one\n"
"      transaction; a run TO has is left as it is: copying twice adds\n"
"      nothing\n"
"\n"
"  --db DB     the database (before or after the subcommand; not with copy)\n"
"  --git-dir DIR\n"
"              the commits in the order of the history of the git\n"
"              repository DIR (parents before children, whatever order the\n"
"              runs were added in; commits it lacks are left out, counted on\n"
"              stderr); without it, the order in which commits were added\n"
"\n"
"Exit status: 0 ok, 1 nothing to show (no such scenario, no value of the\n"
"metric), 2 usage error (also a thresholds file that does not parse),\n"
"5 the scenario ran on several rigs and no --rig was given, 6 a run cannot\n"
"be read (the others are still added; the error names the file and the\n"
"field), 7 the database cannot be opened or read (not a database, corrupt,\n"
"not sbrig's, a server that is down or does not answer within its\n"
"connect_timeout), migrated or written, or an output file cannot be written\n"
"(the error names the file or the database).\n";

#define CMD "history"

static int open_db(const char *db, bool write, struct sbrig_history **h)
{
	char path[PATH_MAX];

	if (!db) {
		if (sbrig_history_default_path(path, sizeof(path))) {
			fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
			return EXIT_USAGE;
		}
		db = path;
	}
	*h = sbrig_history_open(db, write);
	if (!*h) {
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
		return EXIT_WRITE;
	}
	if (write && sbrig_history_migrated_from(*h) &&
	    sbrig_history_migrated_from(*h) != SBRIG_HISTORY_VERSION)
		fprintf(stderr, "sbrig history: %s: migrated from schema "
			"version %d to %d\n", db, sbrig_history_migrated_from(*h),
			SBRIG_HISTORY_VERSION);
	if (!write && sbrig_history_read_as_from(*h) != SBRIG_HISTORY_VERSION)
		fprintf(stderr, "sbrig history: %s: schema version %d, read as "
			"%d (not migrated: the next 'sbrig history add' "
			"migrates it)\n", db, sbrig_history_read_as_from(*h),
			SBRIG_HISTORY_VERSION);
	return 0;
}

/* --git-dir: the commits in DIR's order; 0 or an exit status */
static int git_order(struct sbrig_history *h, const char *git_dir)
{
	size_t unknown;
	int ret;

	if (!git_dir)
		return 0;
	ret = sbrig_history_order_by_git(h, git_dir, &unknown);
	if (ret) {
		fprintf(stderr, "sbrig history: --git-dir: %s\n", sbrig_errmsg());
		return ret == -EINVAL ? EXIT_USAGE : ret == -ENOENT ?
		       EXIT_FAIL : EXIT_WRITE;
	}
	if (unknown)
		fprintf(stderr, "sbrig history: %s: %zu commit%s of %s not in "
			"this repository: left out\n", git_dir, unknown,
			unknown == 1 ? "" : "s", sbrig_history_path(h));
	return 0;
}

/* an errno of the library to an exit status */
static int status_of(int err)
{
	switch (err) {
	case ENOENT:
		return EXIT_FAIL;
	case EXDEV:
		return EXIT_NOT_COMPARABLE;
	case EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_WRITE;
	}
}

static int h_add(const char *db, int argc, char **argv)
{
	static const struct option o[] = {
		{ "commit", required_argument, NULL, 'C' },
		{ "db", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *commit = NULL;
	struct sbrig_history *h;
	size_t added = 0, present = 0, bad = 0;
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "h", o, NULL)) != -1) {
		switch (opt) {
		case 'C':
			commit = optarg;
			break;
		case 'D':
			db = optarg;
			break;
		case 'h':
			fputs(history_help, stdout);
			return EXIT_OK;
		default:
			return usage_error(CMD, "bad option");
		}
	}
	if (optind == argc)
		return usage_error(CMD, "add: expected RUN... (report.json "
				   "files, directories, captures)");
	if (commit && !*commit)
		return usage_error(CMD, "add: --commit: an empty commit");
	ret = open_db(db, true, &h);
	if (ret)
		return ret;
	for (int i = optind; i < argc; i++) {
		char tc[600], ts[4200];
		struct sbrig_history_added a;
		int err = sbrig_history_add(h, argv[i], NULL, commit, &a);

		if (err == -EINVAL) {
			fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
			bad++;
			continue;
		}
		if (err) {
			fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
			sbrig_history_close(h);
			return EXIT_WRITE;
		}
		/* the commit and scenario are the run's (someone else's) */
		printf("%s: %s: run %lld, commit %s, scenario %s\n",
		       a.added ? "added" : "present", argv[i], (long long)a.id,
		       sbrig_term(a.commit, tc, sizeof(tc)), *a.scenario ?
		       sbrig_term(a.scenario, ts, sizeof(ts)) : "(none)");
		a.added ? added++ : present++;
	}
	printf("history: %s: %zu added, %zu present%s\n",
	       sbrig_history_path(h), added, present,
	       bad ? ", some runs could not be read" : "");
	sbrig_history_close(h);
	return bad ? EXIT_BAD_INPUT : EXIT_OK;
}

static int h_show(const char *db, int argc, char **argv)
{
	static const struct option o[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "git-dir", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *git_dir = NULL;
	struct sbrig_history *h;
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "h", o, NULL)) != -1) {
		if (opt == 'D') {
			db = optarg;
			continue;
		}
		if (opt == 'g') {
			git_dir = optarg;
			continue;
		}
		if (opt == 'h') {
			fputs(history_help, stdout);
			return EXIT_OK;
		}
		return usage_error(CMD, "bad option");
	}
	if (argc - optind > 1)
		return usage_error(CMD, "show: expected [SCENARIO]");
	ret = open_db(db, false, &h);
	if (ret)
		return ret;
	ret = git_order(h, git_dir);
	if (ret) {
		sbrig_history_close(h);
		return ret;
	}
	ret = sbrig_history_show(h, optind < argc ? argv[optind] : NULL, stdout);
	if (ret)
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
	sbrig_history_close(h);
	return ret ? status_of(-ret) : EXIT_OK;
}

static int trend_or_html(const char *db, int argc, char **argv, bool html)
{
	static const struct option o[] = {
		{ "blocker", required_argument, NULL, 'b' },
		{ "rig", required_argument, NULL, 'r' },
		{ "window", required_argument, NULL, 'w' },
		{ "t-threshold", required_argument, NULL, 't' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", required_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'D' },
		{ "git-dir", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbrig_compare_config cfg;
	struct sbrig_trend_opts to = { .cfg = &cfg };
	const char *json = NULL, *git_dir = NULL;
	struct sbrig_history *h;
	struct sbrig_trend *t;
	int opt, ret;
	char *end;
	long w;

	sbrig_compare_config_init(&cfg);
	optind = 0;
	while ((opt = getopt_long(argc, argv, html ? "c:o:h" : "c:h", o,
				  NULL)) != -1) {
		if ((html && (opt == 'b' || opt == 'j')) || (!html && opt == 'o'))
			return usage_error(CMD, "%s: bad option", argv[0]);
		switch (opt) {
		case 'o':
			json = optarg;	/* the page */
			break;
		case 'b':
			to.blocker = optarg;
			break;
		case 'r':
			to.rig = optarg;
			break;
		case 'w':
			w = strtol(optarg, &end, 10);
			if (*end || w < 1 || w > 1000)
				return usage_error(CMD, "--window: '%s' is not a "
						   "number of commits (1..1000)",
						   optarg);
			to.window = (unsigned int)w;
			break;
		case 't':
			to.t_threshold = strtod(optarg, &end);
			if (*end || !(to.t_threshold > 0) ||
			    to.t_threshold > 1e6)
				return usage_error(CMD, "--t-threshold: '%s' is "
						   "not a positive number",
						   optarg);
			break;
		case 'c':
			if (sbrig_compare_config_load(&cfg, optarg)) {
				fprintf(stderr, "sbrig history: %s\n",
					sbrig_errmsg());
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = optarg;
			break;
		case 'D':
			db = optarg;
			break;
		case 'g':
			git_dir = optarg;
			break;
		case 'h':
			fputs(history_help, stdout);
			return EXIT_OK;
		default:
			return usage_error(CMD, "bad option");
		}
	}
	if (html) {
		if (argc - optind != 1)
			return usage_error(CMD, "html: expected SCENARIO");
		if (!json || !*json)
			return usage_error(CMD, "html: -o FILE is required");
		ret = open_db(db, false, &h);
		if (ret)
			return ret;
		ret = git_order(h, git_dir);
		if (ret) {
			sbrig_history_close(h);
			return ret;
		}
		ret = sbrig_history_render_html(h, argv[optind], &to, json);
		if (ret)
			fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
		else
			printf("page: %s\n", json);
		sbrig_history_close(h);
		return !ret ? EXIT_OK : ret == -ENOENT ? EXIT_FAIL :
		       ret == -EXDEV ? EXIT_NOT_COMPARABLE : EXIT_WRITE;
	}
	if (argc - optind != 2)
		return usage_error(CMD, "trend: expected SCENARIO METRIC");
	ret = open_db(db, false, &h);
	if (ret)
		return ret;
	ret = git_order(h, git_dir);
	if (ret) {
		sbrig_history_close(h);
		return ret;
	}
	t = sbrig_history_trend(h, argv[optind], argv[optind + 1], &to);
	if (!t) {
		ret = errno;
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
		sbrig_history_close(h);
		return status_of(ret);
	}
	sbrig_history_close(h);
	ret = EXIT_OK;
	if (json && sbrig_trend_write_json(t, json)) {
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
		ret = EXIT_WRITE;
	}
	if (!ret && sbrig_trend_render_text(t, stdout))
		ret = EXIT_WRITE;
	if (!ret && json)
		printf("trend: %s\n", json);
	sbrig_trend_free(t);
	return ret;
}

static int h_trend(const char *db, int argc, char **argv)
{
	return trend_or_html(db, argc, argv, false);
}

static int h_html(const char *db, int argc, char **argv)
{
	return trend_or_html(db, argc, argv, true);
}

static int h_export(const char *db, int argc, char **argv)
{
	static const struct option o[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'D' },
		{ "git-dir", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *scenario = NULL, *out = NULL, *git_dir = NULL;
	struct sbrig_history *h;
	FILE *f = stdout;
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "o:h", o, NULL)) != -1) {
		switch (opt) {
		case 's':
			scenario = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'D':
			db = optarg;
			break;
		case 'g':
			git_dir = optarg;
			break;
		case 'h':
			fputs(history_help, stdout);
			return EXIT_OK;
		default:
			return usage_error(CMD, "bad option");
		}
	}
	if (optind != argc)
		return usage_error(CMD, "export: unexpected argument '%s'",
				   argv[optind]);
	ret = open_db(db, false, &h);
	if (ret)
		return ret;
	ret = git_order(h, git_dir);
	if (ret) {
		sbrig_history_close(h);
		return ret;
	}
	if (out && sbrig_mkdir_parent(out, 0755) < 0) {
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
		sbrig_history_close(h);
		return EXIT_WRITE;
	}
	if (out && !(f = fopen(out, "w"))) {
		fprintf(stderr, "sbrig history: %s: %s\n", out, strerror(errno));
		sbrig_history_close(h);
		return EXIT_WRITE;
	}
	ret = sbrig_history_export_csv(h, scenario, f);
	if (ret)
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
	if (out && fclose(f) && !ret) {
		fprintf(stderr, "sbrig history: %s: %s\n", out, strerror(errno));
		ret = -EIO;
	}
	sbrig_history_close(h);
	return ret ? status_of(-ret) : EXIT_OK;
}

static int h_copy(const char *db, int argc, char **argv)
{
	static const struct option o[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbrig_history *from = NULL, *to = NULL;
	struct sbrig_history_copied c;
	const char *scenario = NULL;
	char e[3100];
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "h", o, NULL)) != -1) {
		switch (opt) {
		case 's':
			scenario = optarg;
			break;
		case 'h':
			fputs(history_help, stdout);
			return EXIT_OK;
		default:
			return usage_error(CMD, "bad option");
		}
	}
	if (db)
		return usage_error(CMD, "copy: no --db: it takes FROM and TO");
	if (argc - optind != 2)
		return usage_error(CMD, "copy: expected FROM TO (two databases)");
	if (!*argv[optind] || !*argv[optind + 1])
		return usage_error(CMD, "copy: an empty database name");
	ret = open_db(argv[optind], false, &from);
	if (ret)
		return ret;
	ret = open_db(argv[optind + 1], true, &to);
	if (ret) {
		sbrig_history_close(from);
		return ret;
	}
	ret = sbrig_history_copy(from, to, scenario, &c);
	if (ret)
		fprintf(stderr, "sbrig history: %s\n", sbrig_errmsg());
	else
		printf("copied%s%s: %zu runs from %s to %s: %zu added, %zu "
		       "present\n", *c.scenario ? " scenario " : "",
		       sbrig_term(c.scenario, e, sizeof(e)), c.runs,
		       sbrig_history_path(from), sbrig_history_path(to),
		       c.added, c.runs - c.added);
	sbrig_history_close(from);
	sbrig_history_close(to);
	return ret ? status_of(-ret) : EXIT_OK;
}

int cmd_history(const struct command *c, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(const char *db, int argc, char **argv);
	} subs[] = {
		{ "add", h_add },
		{ "show", h_show },
		{ "trend", h_trend },
		{ "html", h_html },
		{ "export", h_export },
		{ "copy", h_copy },
	};
	const char *db = NULL;
	int i = 1;

	/* options before the subcommand: --db DB, --help */
	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			command_help(c, stdout);
			return EXIT_OK;
		}
		if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			db = argv[i + 1];
			i += 2;
		} else if (!strncmp(argv[i], "--db=", 5)) {
			db = argv[i] + 5;
			i++;
		} else {
			return usage_error(c->name, "bad option '%s'", argv[i]);
		}
	}
	if (i == argc)
		return usage_error(c->name, "expected a subcommand: add, show, "
				   "trend, html, export or copy");
	if (db && !*db)
		return usage_error(c->name, "--db: an empty file name");
	for (size_t k = 0; k < sizeof(subs) / sizeof(subs[0]); k++)
		if (!strcmp(argv[i], subs[k].name))
			return subs[k].fn(db, argc - i, argv + i);
	return usage_error(c->name, "unknown subcommand '%s' (add, show, "
			   "trend, html, export, copy)", argv[i]);
}
