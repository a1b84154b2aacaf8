// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - sbrig: the command-line client of sbrigd.
 *
 * Each command is one entry of the command table: it parses its own
 * options (getopt_long), sends one request on the daemon's socket
 * (host/doc/daemon-protocol.md) and renders the answer: "data" lines are
 * printed as they come, "progress" lines drive a status line on a TTY, the
 * final "ok key=value ..." is printed as "key: value" lines. Ctrl-C during
 * a long request sends "stop" and waits for the daemon's final answer, so
 * the capture is always closed cleanly.
 *
 * Exit status: 0 ok, 1 the operation failed, 2 usage error, 3 the daemon
 * cannot be reached.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sbrig/analysis.h>
#include <sbrig/sbrig.h>
#include <sbrig/scenario.h>

#include "cli.h"
#include "render.h"

/* ---- progress rendering ------------------------------------------------- */

static void capture_progress(const char *text, void *ctx)
{
	char el[32] = "0", sa[32] = "0", ga[32] = "0", ev[32] = "0",
	     ma[32] = "0";

	if (!tty || !kv_get(text, "elapsed_ms", el, sizeof(el)))
		return;
	kv_get(text, "samples", sa, sizeof(sa));
	kv_get(text, "gaps", ga, sizeof(ga));
	kv_get(text, "events", ev, sizeof(ev));
	kv_get(text, "mean_mA", ma, sizeof(ma));
	fprintf(stderr, "\r\033[K%s%.1f s  samples %s  gaps %s  events %s  "
		"mean %s mA", ctx ? (const char *)ctx : "", atoll(el) / 1000.0,
		sa, ga, ev, ma);
	fflush(stderr);
}

static void run_progress(const char *text, void *ctx)
{
	static char step[512];

	if (!strncmp(text, "step=", 5)) {
		snprintf(step, sizeof(step), "%s", text + 5);
		if (tty) {
			fprintf(stderr, "\r\033[Kstep %s", step);
			fflush(stderr);
		} else {
			printf("step %s\n", step);
			fflush(stdout);
		}
	} else if (tty && !strncmp(text, "elapsed_ms=", 11)) {
		char el[32] = "0", sa[32] = "0";

		kv_get(text, "elapsed_ms", el, sizeof(el));
		kv_get(text, "samples", sa, sizeof(sa));
		fprintf(stderr, "\r\033[Kstep %s  [%.1f s, %s samples]", step,
			atoll(el) / 1000.0, sa);
		fflush(stderr);
	}
}

static void end_progress(void)
{
	if (tty)
		fprintf(stderr, "\n");
}

/* ---- commands ----------------------------------------------------------- */


void command_help(const struct command *c, FILE *f)
{
	fprintf(f, "Usage: sbrig [-s SOCKET] %s %s\n\n%s", c->name, c->args,
		c->help);
}

/* Parse options with @opts; handles --help. Return -1 to go on, else exit. */
static int parse_help_only(const struct command *c, int argc, char **argv)
{
	static const struct option o[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+h", o, NULL)) != -1) {
		if (opt == 'h') {
			command_help(c, stdout);
			return EXIT_OK;
		}
		return usage_error(c->name, "bad option");
	}
	return -1;
}

static int cmd_press(const struct command *c, int argc, char **argv)
{
	char line[512] = "press";
	struct reply r = { 0 };
	int ret = parse_help_only(c, argc, argv);

	if (ret >= 0)
		return ret;
	argc -= optind;
	argv += optind;
	if (argc < 1 || argc > 2)
		return usage_error(c->name, "expected KEY [DURATION]");
	if (argc == 2 && check_duration(c->name, "DURATION", argv[1], NULL))
		return EXIT_USAGE;
	if (add_arg(line, sizeof(line), argv[0]) ||
	    (argc == 2 && add_arg(line, sizeof(line), argv[1])))
		return usage_error(c->name, "bad KEY");
	ret = request(line, NULL, 0, &r);
	return fail(&r, ret, "press");
}

static int cmd_plug(const struct command *c, int argc, char **argv)
{
	struct reply r = { 0 };
	char line[32];
	int ret = parse_help_only(c, argc, argv);

	if (ret >= 0)
		return ret;
	if (argc - optind != 1 || (strcmp(argv[optind], "in") &&
				   strcmp(argv[optind], "out")))
		return usage_error(c->name, "expected 'in' or 'out'");
	snprintf(line, sizeof(line), "plug %s", argv[optind]);
	ret = request(line, NULL, 0, &r);
	return fail(&r, ret, "plug");
}

static const struct option capture_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "stats-every", required_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int cmd_capture(const struct command *c, int argc, char **argv)
{
	const char *out = NULL, *dur = NULL, *every = NULL;
	char line[PATH_MAX + 256] = "capture", dir[PATH_MAX], opt_s[64];
	struct reply r = { .progress = capture_progress };
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "o:d:h", capture_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'd':
			dur = optarg;
			break;
		case 'S':
			every = optarg;
			break;
		case 'h':
			command_help(c, stdout);
			return EXIT_OK;
		default:
			return usage_error(c->name, "bad option");
		}
	}
	if (optind != argc)
		return usage_error(c->name, "unexpected argument '%s'",
				   argv[optind]);
	if (!out)
		return usage_error(c->name, "-o DIR is required");
	if ((dur && check_duration(c->name, "-d", dur, NULL)) ||
	    (every && check_duration(c->name, "--stats-every", every, NULL)))
		return EXIT_USAGE;
	if (abs_dir(out, dir, sizeof(dir)) < 0 ||
	    add_arg(line, sizeof(line), dir))
		return usage_error(c->name, "bad directory '%s'", out);
	if (dur) {
		snprintf(opt_s, sizeof(opt_s), "duration=%s", dur);
		add_arg(line, sizeof(line), opt_s);
	}
	if (every) {
		snprintf(opt_s, sizeof(opt_s), "stats_every=%s", every);
		add_arg(line, sizeof(line), opt_s);
	}
	ret = request(line, NULL, 0, &r);
	end_progress();
	if (ret == EXIT_OK)
		print_summary("capture", r.final);
	return fail(&r, ret, "capture");
}

static int cmd_run(const struct command *c, int argc, char **argv)
{
	const char *out = NULL, *every = NULL;
	char line[2 * PATH_MAX + 256] = "run", dir[PATH_MAX], path[PATH_MAX],
	     opt_s[PATH_MAX + 16];
	struct reply r = { .progress = run_progress };
	struct sbrig_scenario *sc;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "o:h", capture_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'S':
			every = optarg;
			break;
		case 'h':
			command_help(c, stdout);
			return EXIT_OK;
		default:
			return usage_error(c->name, "bad option");
		}
	}
	if (argc - optind != 1)
		return usage_error(c->name, "expected one SCENARIO file");
	if (!out)
		return usage_error(c->name, "-o DIR is required");
	if (every && check_duration(c->name, "--stats-every", every, NULL))
		return EXIT_USAGE;
	/* check it here: errors name file:line:column before anything runs */
	sc = sbrig_scenario_load(argv[optind]);
	if (!sc) {
		fprintf(stderr, "sbrig run: %s\n", sbrig_errmsg());
		return EXIT_USAGE;
	}
	sbrig_scenario_free(sc);
	/* every byte goes to the daemon, which parses (and hashes) them all */
	f = fopen(argv[optind], "r");
	if (f) {
		size_t size = 0, n;

		do {
			char *p = len == size ? realloc(text, size += 65536) :
				text;

			if (!p)
				break;
			text = p;
			n = fread(text + len, 1, size - len, f);
			len += n;
		} while (n > 0);
	}
	if (!f || ferror(f) || !text || !len) {
		fprintf(stderr, "sbrig run: %s: %s\n", argv[optind],
			!f || ferror(f) ? strerror(errno) : "empty");
		if (f)
			fclose(f);
		free(text);
		return EXIT_USAGE;
	}
	fclose(f);
	if (abs_dir(out, dir, sizeof(dir)) < 0 ||
	    abs_dir(argv[optind], path, sizeof(path)) < 0 ||
	    add_arg(line, sizeof(line), dir)) {
		free(text);
		return usage_error(c->name, "bad directory '%s'", out);
	}
	snprintf(opt_s, sizeof(opt_s), "bytes=%zu", len);
	add_arg(line, sizeof(line), opt_s);
	snprintf(opt_s, sizeof(opt_s), "origin=%s", path);
	add_arg(line, sizeof(line), opt_s);
	if (every) {
		snprintf(opt_s, sizeof(opt_s), "stats_every=%s", every);
		add_arg(line, sizeof(line), opt_s);
	}
	ret = request(line, text, len, &r);
	free(text);
	end_progress();
	if (ret == EXIT_OK)
		print_summary("run", r.final);
	return fail(&r, ret, "run");
}

/* latency: the rounds as the daemon times them (the live lines) */
struct lat_ctx {
	unsigned int done;
	int64_t *lat, *unc;	/* each round's latency_ns and uncert_ns */
	size_t n, cap;
	bool nomem;
};

/* Keep a round the daemon measured (for --until other than resume). */
static void lat_keep(struct lat_ctx *l, int64_t lat, int64_t unc)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		int64_t *a = realloc(l->lat, cap * sizeof(*a));

		if (a)
			l->lat = a;
		a = a ? realloc(l->unc, cap * sizeof(*a)) : NULL;
		if (!a) {
			l->nomem = true;
			return;
		}
		l->unc = a;
		l->cap = cap;
	}
	l->lat[l->n] = lat;
	l->unc[l->n++] = unc;
}

static int write_latency_csv(const char *csv_path, const int64_t *lat,
			     const int64_t *unc, size_t n)
{
	FILE *csv;

	if (sbrig_mkdir_parent(csv_path, 0755) < 0) {
		fprintf(stderr, "sbrig latency: %s\n", sbrig_errmsg());
		return EXIT_FAIL;
	}
	csv = fopen(csv_path, "w");
	if (!csv) {
		fprintf(stderr, "sbrig latency: %s: %s\n", csv_path,
			strerror(errno));
		return EXIT_FAIL;
	}
	fprintf(csv, "i,latency_ns,uncert_ns\n");
	for (size_t i = 0; i < n; i++)
		fprintf(csv, "%zu,%" PRId64 ",%" PRId64 "\n", i + 1, lat[i],
			unc[i]);
	if (fclose(csv)) {
		fprintf(stderr, "sbrig latency: %s: %s\n", csv_path,
			strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static void print_latency_stats(const struct sbrig_latency_stats *st,
				const char *dir)
{
	printf("n: %u\n", st->n);
	if (st->n) {
		printf("min_ms: %.3f\n", st->min_ns / 1e6);
		printf("median_ms: %.3f\n", st->median_ns / 1e6);
		printf("p95_ms: %.3f\n", st->p95_ns / 1e6);
		printf("max_ms: %.3f\n", st->max_ns / 1e6);
		printf("clock_uncertainty_ms: %.3f\n", st->uncert_ns / 1e6);
	}
	printf("capture: %s\n", dir);
}

/*
 * --until EVENT other than resume: the capture's analysis measures each
 * wakeup to its resume (report-format.md), not to EVENT, so the rounds
 * and their statistics are the daemon's, as it timed them.
 */
static int latency_from_rounds(const struct lat_ctx *l, const char *until,
			       const char *dir, const char *csv_path)
{
	struct sbrig_latency_stats st;
	int64_t *v;

	if (l->nomem)
		return EXIT_FAIL;
	if (csv_path && write_latency_csv(csv_path, l->lat, l->unc, l->n))
		return EXIT_FAIL;
	v = malloc((l->n ? l->n : 1) * sizeof(*v));
	if (!v)
		return EXIT_FAIL;
	memcpy(v, l->lat, l->n * sizeof(*v));
	sbrig_latency_stats(v, l->unc, l->n, &st);
	free(v);
	printf("note: until '%s': the statistics are the daemon's timing of "
	       "each round (the capture's analysis measures to the resume)\n",
	       until);
	print_latency_stats(&st, dir);
	return EXIT_OK;
}

/*
 * The measurements and their statistics from the capture the run
 * recorded (libsbrig-analysis: the clock fitted over the whole capture);
 * the live lines were the daemon's online timing.
 */
static int latency_from_capture(const char *dir, const char *csv_path,
				unsigned int measured)
{
	struct sbrig_analysis *a = sbrig_analysis_run(dir, NULL);
	struct sbrig_latency_stats st;
	struct sbrig_wakeup *w = NULL;
	size_t n;

	if (!a) {
		fprintf(stderr, "sbrig latency: analysing %s: %s\n", dir,
			sbrig_errmsg());
		return EXIT_FAIL;
	}
	n = sbrig_analysis_wakeups(a, NULL, 0);
	w = calloc(n ? n : 1, sizeof(*w));
	if (!w) {
		sbrig_analysis_free(a);
		return EXIT_FAIL;
	}
	sbrig_analysis_wakeups(a, w, n);
	sbrig_analysis_latency(a, &st);
	sbrig_analysis_free(a);
	if (csv_path) {
		int64_t *lat = malloc((n ? n : 1) * sizeof(*lat));
		int64_t *unc = malloc((n ? n : 1) * sizeof(*unc));
		int ret = EXIT_FAIL;

		if (lat && unc) {
			for (size_t i = 0; i < n; i++) {
				lat[i] = w[i].latency_ns;
				unc[i] = w[i].uncert_ns;
			}
			ret = write_latency_csv(csv_path, lat, unc, n);
		}
		free(lat);
		free(unc);
		if (ret) {
			free(w);
			return ret;
		}
	}
	free(w);
	if (n != measured)
		printf("note: the capture has %zu wakeup(s) by the rig, the daemon "
		       "timed %u round(s); the statistics are the capture's\n",
		       n, measured);
	print_latency_stats(&st, dir);
	return EXIT_OK;
}

static void latency_progress(const char *text, void *ctx)
{
	struct lat_ctx *l = ctx;
	char i[32] = "", lat[32] = "", unc[32] = "", why[32], ev[32] = "";

	kv_get(text, "i", i, sizeof(i));
	if (kv_get(text, "retry", why, sizeof(why))) {
		/* a round the daemon starts again: say so, on its own line */
		kv_get(text, "event", ev, sizeof(ev));
		fprintf(tty ? stderr : stdout, "%s%s not measured: the target "
			"%s (%s); waiting until it sleeps again\n",
			tty ? "\r\033[K" : "", i,
			!strcmp(why, "no_clock") ? "slept again before its clock "
			"could be read" : !strcmp(why, "woke_before_press") ?
			"woke before the press" : "woke by itself", ev);
		fflush(tty ? stderr : stdout);
		return;
	}
	if (!kv_get(text, "latency_ns", lat, sizeof(lat)))
		return;
	kv_get(text, "uncert_ns", unc, sizeof(unc));
	l->done++;
	lat_keep(l, atoll(lat), atoll(unc));
	if (tty) {
		fprintf(stderr, "\r\033[K%s  %.3f ms (+/- %.3f ms)", i,
			atoll(lat) / 1e6, atoll(unc) / 1e6);
		fflush(stderr);
	} else {
		printf("%s %.3f ms +/- %.3f ms\n", i, atoll(lat) / 1e6,
		       atoll(unc) / 1e6);
		fflush(stdout);
	}
}

static int cmd_latency(const struct command *c, int argc, char **argv)
{
	static const struct option o[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "key", required_argument, NULL, 'k' },
		{ "press", required_argument, NULL, 'p' },
		{ "until", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "csv", required_argument, NULL, 'C' },
		{ "output", required_argument, NULL, 'o' },
		{ "stats-every", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *vals[6] = { "10", "power", NULL, "resume", "30s", NULL };
	static const char *const keys[6] = { "n", "key", "press", "until",
					     "timeout", "stats_every" };
	struct lat_ctx l = { 0 };
	struct reply r = { .progress = latency_progress, .ctx = &l };
	const char *csv = NULL, *out = NULL;
	char line[PATH_MAX + 1024] = "latency", opt_s[300], *end;
	char dir[PATH_MAX], name[64], n[16] = "0", req[16] = "0";
	int opt, ret;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "n:o:h", o, NULL)) != -1) {
		switch (opt) {
		case 'n':
			vals[0] = optarg;
			break;
		case 'k':
			vals[1] = optarg;
			break;
		case 'p':
			vals[2] = optarg;
			break;
		case 'u':
			vals[3] = optarg;
			break;
		case 't':
			vals[4] = optarg;
			break;
		case 'S':
			vals[5] = optarg;
			break;
		case 'C':
			csv = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			command_help(c, stdout);
			return EXIT_OK;
		default:
			return usage_error(c->name, "bad option");
		}
	}
	if (optind != argc)
		return usage_error(c->name, "unexpected argument '%s'",
				   argv[optind]);
	if (strtoul(vals[0], &end, 10) == 0 || *end)
		return usage_error(c->name, "-n: '%s' is not a positive count",
				   vals[0]);
	if ((vals[2] && check_duration(c->name, "--press", vals[2], NULL)) ||
	    check_duration(c->name, "--timeout", vals[4], NULL) ||
	    (vals[5] && check_duration(c->name, "--stats-every", vals[5],
				       NULL)))
		return EXIT_USAGE;
	if (!out) {
		/* a latency run records a capture like every other */
		time_t now = time(NULL);
		struct tm tm;

		strftime(name, sizeof(name), "latency-%Y%m%dT%H%M%SZ",
			 gmtime_r(&now, &tm));
		out = name;
	}
	if (abs_dir(out, dir, sizeof(dir)) < 0 ||
	    add_arg(line, sizeof(line), dir))
		return usage_error(c->name, "bad directory '%s'", out);
	for (int i = 0; i < 6; i++) {
		if (!vals[i])
			continue;
		snprintf(opt_s, sizeof(opt_s), "%s=%s", keys[i], vals[i]);
		if (add_arg(line, sizeof(line), opt_s))
			return usage_error(c->name, "bad argument '%s'",
					   vals[i]);
	}
	ret = request(line, NULL, 0, &r);
	end_progress();
	kv_get(r.final, "n", n, sizeof(n));
	if (ret == EXIT_OK) {
		char cap[PATH_MAX] = "";

		warn_tail_lost("latency", r.final);

		kv_get(r.final, "dir", cap, sizeof(cap));
		if (strcmp(vals[3], "resume"))
			ret = latency_from_rounds(&l, vals[3],
						  cap[0] ? cap : dir, csv);
		else
			ret = latency_from_capture(cap[0] ? cap : dir, csv,
						   (unsigned int)atoi(n));
		free(l.lat);
		free(l.unc);
		return ret;
	} else if (ret == EXIT_FAIL && kv_get(r.final, "requested", req,
					      sizeof(req))) {
		/* "2/5 measured: the target did not fall asleep ..." */
		char status[4096] = "", cap[PATH_MAX] = "";
		const char *ename = strerrorname_np(r.err), *why = status;

		kv_get(r.final, "status", status, sizeof(status));
		kv_get(r.final, "dir", cap, sizeof(cap));
		if (!strncmp(why, "failed: ", 8))
			why += 8;
		fprintf(stderr, "%ssbrig latency: %s/%s measured: %s (%s%s%s)\n",
			tty ? "\n" : "", n, req, why, ename ? ename : "",
			ename ? ": " : "", strerror(r.err));
		if (cap[0])
			printf("capture: %s\n", cap);
		free(l.lat);
		free(l.unc);
		return ret;
	}
	free(l.lat);
	free(l.unc);
	return fail(&r, ret, "latency");
}

static int agent_request(const char *what, const char *cmdline,
			 int64_t dur_ns)
{
	struct reply r = { 0 };
	char line[700];
	int ret;

	snprintf(line, sizeof(line), "agent %" PRId64 "ms %s",
		 dur_ns / 1000000 + 10000, cmdline);
	ret = request(line, NULL, 0, &r);
	return fail(&r, ret, what);
}

static int cmd_burn(const struct command *c, int argc, char **argv)
{
	char cmdline[64];
	int64_t ns = 0;
	int ret = parse_help_only(c, argc, argv);

	if (ret >= 0)
		return ret;
	if (argc - optind != 1)
		return usage_error(c->name, "expected DURATION");
	if (check_duration(c->name, "DURATION", argv[optind], &ns))
		return EXIT_USAGE;
	snprintf(cmdline, sizeof(cmdline), "burn %" PRId64, ns / 1000000);
	return agent_request("burn", cmdline, ns);
}

static int cmd_stop(const struct command *c, int argc, char **argv)
{
	struct reply r = { 0 };
	int ret = parse_help_only(c, argc, argv);

	if (ret >= 0)
		return ret;
	if (optind != argc)
		return usage_error(c->name, "unexpected argument '%s'",
				   argv[optind]);
	ret = request("stop", NULL, 0, &r);
	if (ret == EXIT_OK)
		printf("%s\n", r.final);
	return fail(&r, ret, "stop");
}

static const struct command commands[] = {
	{ "status", status_args,
	  "show the rig, what is wrong with it, its sensor, target and capture",
	  status_help, cmd_status },
	{ "press", "KEY [DURATION]",
	  "press a key for a while",
"Press KEY (a [key:KEY] line of the rig) for DURATION (default: the rig's\n"
"press_ms), then release it; returns once the key is released.\n"
"DURATION is an integer with a unit: ns, us, ms, s (e.g. 250ms, 2s).\n",
	  cmd_press },
	{ "plug", "in|out",
	  "switch the charger supply",
"Switch the target's charger supply on (in) or off (out).\n",
	  cmd_plug },
	{ "capture", "-o DIR [-d DURATION] [--stats-every DURATION]",
	  "record a capture directory",
"Record a capture into DIR (created; it must not exist or be empty):\n"
"samples, gaps, marker edges, stimuli, target events, stats snapshots and\n"
"clock exchanges, until DURATION has passed or Ctrl-C. Shows progress on a\n"
"terminal and prints a summary ('key: value' lines) at the end; when the\n"
"sensor did not deliver its samples up to the stop, the summary's\n"
"tail_lost_ms says how much of the end was lost, with a warning on stderr.\n"
"\n"
"  -o, --output DIR        capture directory (required)\n"
"  -d, --duration D        stop after D (default: until Ctrl-C)\n"
"      --stats-every D     ask the agent for a stats snapshot every D\n",
	  cmd_capture },
	{ "run", "SCENARIO -o DIR [--stats-every DURATION]",
	  "run a scenario with a capture around it",
"Run the scenario file SCENARIO (rig/scenarios/README.md) with a capture\n"
"into DIR around it; shows each step as it starts. A wait step that times\n"
"out ends the run: the capture is kept, closed with status 'failed: FILE:\n"
"LINE: wait ... timed out after D', and sbrig exits 1. A scenario that does\n"
"not parse is a usage error (exit 2), reported with file:line:column.\n"
"\n"
"  -o, --output DIR        capture directory (required)\n"
"      --stats-every D     ask the agent for a stats snapshot every D\n",
	  cmd_run },
	{ "latency", "[-n N] [--key KEY] [--press D] [--until EVENT] "
	  "[--timeout D] [--csv FILE] [-o DIR] [--stats-every D]",
	  "measure wakeup latency over N key presses",
"Measure wakeup latency N times: wait until the target is asleep (its\n"
"agent silent for the rig's quiet_ms: a suspended target's user space is\n"
"frozen), press KEY, and measure from the press (the host time the GPIO\n"
"line changed) to the first EVENT the target stamped after it, mapped to\n"
"host time by the link's clock model. Events stamped before the press\n"
"(the suspend/enter the target could only send after waking) are skipped.\n"
"Prints each measurement as the daemon times it, then min/median/p95/max\n"
"in ms and the clock uncertainty, computed from the capture the run\n"
"recorded (presses, events, samples, as every capture) as 'sbrig analyze'\n"
"does (which measures to the resume: with --until another event, from the\n"
"daemon's timing of each round, and a note says so), and the capture's\n"
"path. A round whose EVENT is stamped before the press (the\n"
"target woke by itself) is not measured: a line says so and the next\n"
"sleep is used. Ctrl-C ends it with the rounds measured so far.\n"
"\n"
"  -n, --count N           measurements (default 10)\n"
"      --key KEY           key to press (default power)\n"
"      --press D           press duration (default: the rig's press_ms)\n"
"      --until EVENT       event that ends a measurement (default resume)\n"
"      --timeout D         longest wait for the target to fall asleep, and\n"
"                          for EVENT after a press (default 30s)\n"
"      --csv FILE          also write i,latency_ns,uncert_ns rows to FILE\n"
"                          (from the capture, or the daemon's rounds with\n"
"                          --until other than resume)\n"
"  -o, --output DIR        capture directory (default: latency-DATE in the\n"
"                          current directory, DATE in UTC)\n"
"      --stats-every D     ask the agent for a stats snapshot every D\n",
	  cmd_latency },
	{ "target", target_args,
	  "the target: policy, state, blockers, events, hold",
	  target_help, cmd_target },
	{ "hold", "NAME DURATION",
	  "make the target agent hold a blocker (as target hold)",
"Have the target agent hold the suspend blocker NAME for DURATION; returns\n"
"when the agent reports it released. The same as 'sbrig target hold'.\n",
	  cmd_hold },
	{ "burn", "DURATION",
	  "make the target agent burn CPU",
"Have the target agent load the target's CPU for DURATION.\n",
	  cmd_burn },
	{ "analyze", "CAPTURE [-o DIR] [--leak-s S] [-q] [-v]",
	  "analyse a capture: report.json and report.html",
	  analyze_help, cmd_analyze },
	{ "stop", "",
	  "stop the running capture or scenario",
"Stop the running capture, scenario run or latency measurement (whoever\n"
"started it): a capture is closed with status 'aborted: stopped by a\n"
"client'.\n",
	  cmd_stop },
	{ "render", render_args, render_summary, render_help, cmd_render },
	{ "compare", compare_args,
	  "regression verdicts: base runs vs new runs",
	  compare_help, cmd_compare },
	{ "history", history_args,
	  "the per-commit history of runs: add, show, trend, html, export",
	  history_help, cmd_history },
	{ "export", "INPUT (--samples csv|tsv | --perfetto | --csv TABLE | "
	  "--junit | --lava) [-o FILE]",
	  "a capture's samples, a report or a comparison in other formats",
	  export_help, cmd_export },
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sbrig [-s SOCKET | -r RIG] [--run-dir DIR] COMMAND [ARGS...]\n"
"       sbrig COMMAND --help\n"
"\n"
"Client of sbrigd(8), the suspend-blocker test rig daemon.\n"
"\n"
"  -s, --socket PATH   daemon socket\n"
"  -r, --rig RIG       the daemon of the rig RIG (sbrigd@RIG.service):\n"
"                      the socket DIR/RIG.sock; RIG is 1-%d letters,\n"
"                      digits, '.', '_', '-', not starting with '.' or '-'\n"
"                      and without '..'\n"
"      --run-dir DIR   where the rigs' sockets are (default:\n"
"                      $SBRIG_RUN_DIR or " DEFAULT_RUN_DIR ")\n"
"                      The socket is the first of: -s, -r, $SBRIG_SOCKET,\n"
"                      $SBRIG_RIG, " DEFAULT_SOCKET " (the default rig,\n"
"                      sbrigd.service); -s and -r together are an error\n"
"  -h, --help          this help\n"
"  -V, --version       print the version\n"
"\n"
"Commands:\n", SBRIG_RIG_NAME_MAX);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f,
"\n"
"Exit status: 0 ok, 1 the operation failed, 2 usage error, 3 cannot reach\n"
"the daemon; compare and history have their own (sbrig compare --help,\n"
"sbrig history --help).\n");
}

/* DIR/NAME.sock for the rig NAME, checked; NULL after printing why not */
static const char *rig_socket(const char *what, const char *name)
{
	static char path[PATH_MAX];
	char why[128];

	if (sbrig_rig_name_check(name, why, sizeof(why)) < 0) {
		fprintf(stderr, "sbrig: %s: bad rig name '", what);
		for (const char *p = name; *p; p++)
			fputc(*p >= ' ' && *p < 0x7f ? *p : '?', stderr);
		fprintf(stderr, "': %s\n", why);
		return NULL;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.sock", run_dir,
			     name) >= sizeof(path)) {
		fprintf(stderr, "sbrig: %s: the socket path is too long\n",
			what);
		return NULL;
	}
	return path;
}

int main(int argc, char **argv)
{
	static const struct option o[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "rig", required_argument, NULL, 'r' },
		{ "run-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *opt_sock = NULL, *opt_rig = NULL, *env;
	int opt;

	run_dir = getenv("SBRIG_RUN_DIR");
	while ((opt = getopt_long(argc, argv, "+s:r:hV", o, NULL)) != -1) {
		switch (opt) {
		case 's':
			opt_sock = optarg;
			break;
		case 'r':
			opt_rig = optarg;
			break;
		case 'D':
			run_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("sbrig %s\n", sbrig_version);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!run_dir || !*run_dir)
		run_dir = DEFAULT_RUN_DIR;
	if (opt_sock && opt_rig) {
		fprintf(stderr, "sbrig: -s SOCKET and -r RIG both name the "
			"daemon: give one\n");
		return EXIT_USAGE;
	}
	/* the command line, then the environment, the specific first */
	if (opt_sock) {
		sock_path = opt_sock;
	} else if (opt_rig) {
		sock_path = rig_socket("-r", opt_rig);
		if (!sock_path)
			return EXIT_USAGE;
	} else if ((env = getenv("SBRIG_SOCKET")) && *env) {
		sock_path = env;
	} else if ((env = getenv("SBRIG_RIG")) && *env) {
		sock_path = rig_socket("$SBRIG_RIG", env);
		if (!sock_path)
			return EXIT_USAGE;
	} else {
		sock_path = DEFAULT_SOCKET;
	}
	if (optind == argc) {
		fprintf(stderr, "sbrig: a COMMAND is required\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	tty = isatty(STDERR_FILENO);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			return commands[i].fn(&commands[i], argc - optind,
					      argv + optind);
	fprintf(stderr, "sbrig: unknown command '%s'\n", argv[optind]);
	usage(stderr);
	return EXIT_USAGE;
}
