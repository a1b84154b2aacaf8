// SPDX-License-Identifier: GPL-2.0
/*
 * compare.c - sbrig compare BASE... -- NEW...: regression verdicts
 * between repeated runs of a base and a new build, offline (no daemon),
 * with libsbrig-analysis (sbrig/compare.h). The command only parses its
 * arguments, calls the library, writes compare.json and prints the
 * summary the library renders; the statistics are all in the library.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "cli.h"

const char compare_args[] =
	"[-c FILE] [-o DIR] [--html FILE] [-f] [-q] [--leak-s S] BASE... -- NEW...";

const char compare_help[] =
"Compare repeated runs of one scenario on a base build (BASE...) with runs\n"
"on a new build (NEW...), offline (no daemon needed), and give a verdict\n"
"per metric: regressed, improved, unchanged, or inconclusive with how many\n"
"more runs a side would likely settle it. A run is a report.json, a\n"
"directory holding one, or a capture directory (analysed on the fly;\n"
"nothing is written into it). The metrics: energy_total_uJ,\n"
"energy_per_wakeup_uJ, awake_per_wakeup_ns, baseline_uW,\n"
"latency_median_ns, latency_p95_ns, per blocker\n"
"blocker_energy_per_wakeup_uJ and blocker_activations, aborted_suspends,\n"
"unknown_wakeups, and per blocker leak (the share of runs that leak).\n"
"\n"
"A metric regressed when its test says the runs differ (p <= alpha,\n"
"default 0.01, after the Benjamini-Hochberg adjustment over all the\n"
"metrics) and the change is beyond the metric's minimum in the worse\n"
"direction; it is unchanged when the change is within the minimum and\n"
"either not significant or with its whole interval within it; else\n"
"inconclusive, with how many more runs would settle it (also with fewer\n"
"than min_runs, default 5, runs a side). The test and change: the\n"
"Mann-Whitney U test with the Hodges-Lehmann shift and its exact Moses\n"
"interval; for counts an exact Poisson test and the change of the mean;\n"
"for leaks Fisher's exact test on the runs that leak. The rule and the\n"
"defaults: host/doc/compare-format.md.\n"
"Refused unless --force: runs of different scenarios or rigs\n"
"(provenance scenario_sha256, rig_sha256), a run still open, with gaps\n"
"or lasting very differently, and too few runs for any significance\n"
"(the message names the smallest number a side that can).\n"
"\n"
"Prints a short summary: the verdict, the metrics that are not\n"
"unchanged, the blockers whose energy per wakeup got worse and by how\n"
"much.\n"
"\n"
"  -c, --config FILE       thresholds (a [compare] section and one\n"
"                          [METRIC] section each; default: built in)\n"
"      --print-config      print the thresholds in effect as such a file,\n"
"                          and exit\n"
"  -o, --output DIR        write DIR/compare.json (DIR is created;\n"
"                          the file is replaced atomically)\n"
"      --html FILE         also write the comparison page: self-contained\n"
"                          HTML (no network) with the power and blocker\n"
"                          timelines of a representative base and new run\n"
"                          and each metric's distributions (replaced\n"
"                          atomically)\n"
"  -f, --force             compare anyway runs of different scenarios or\n"
"                          rigs, open runs, runs with gaps or of odd\n"
"                          durations, too few runs (each a warning in\n"
"                          compare.json)\n"
"      --leak-s S          leak threshold for captures analysed on the\n"
"                          fly (default 5)\n"
"  -q, --quiet             print only the verdict line\n"
"\n"
"Exit status: 0 nothing regressed (unchanged or improved), 1 a metric\n"
"regressed, 4 none regressed but one is inconclusive, 2 usage error (also\n"
"a thresholds file that does not parse: file:line, and too few runs), 5\n"
"the runs are of different scenarios or rigs, or one is open, has gaps\n"
"or lasts very differently, 6 a run cannot be read or analysed (the\n"
"error names the file and the field), 7 compare.json or the page cannot be\n"
"written.\n";

int cmd_compare(const struct command *c, int argc, char **argv)
{
	static const struct option o[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "html", required_argument, NULL, 'H' },
		{ "force", no_argument, NULL, 'f' },
		{ "leak-s", required_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbrig_compare_opts opts = { 0 };
	struct sbrig_compare_config cfg;
	const char *out = NULL, *html = NULL;
	bool print_config = false, quiet = false;
	struct sbrig_compare *cmp;
	char path[PATH_MAX];
	int opt, dd, nbase, ret;
	double leak_s;
	char *end;

	/* options come before "--": what follows it is NEW runs only */
	for (dd = 1; dd < argc && strcmp(argv[dd], "--"); dd++)
		;
	sbrig_compare_config_init(&cfg);
	optind = 0;
	while ((opt = getopt_long(dd, argv, "c:o:fqh", o, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (sbrig_compare_config_load(&cfg, optarg)) {
				fprintf(stderr, "sbrig compare: %s\n",
					sbrig_errmsg());
				return EXIT_USAGE;
			}
			break;
		case 'P':
			print_config = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'H':
			html = optarg;
			break;
		case 'f':
			opts.force = true;
			break;
		case 'L':
			leak_s = strtod(optarg, &end);
			if (*end || !(leak_s > 0) || leak_s > 1e9)
				return usage_error(c->name, "--leak-s: '%s' is not "
						   "a positive number of seconds",
						   optarg);
			opts.leak_ns = (int64_t)llround(leak_s * 1e9);
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			command_help(c, stdout);
			return EXIT_OK;
		default:
			return usage_error(c->name, "bad option");
		}
	}
	if (print_config)
		return sbrig_compare_config_write(&cfg, stdout) ? EXIT_FAIL :
								  EXIT_OK;
	if (dd == argc)
		return usage_error(c->name, "expected BASE... -- NEW... (the "
				   "base runs, '--', the new runs)");
	nbase = dd - optind;
	if (nbase < 1)
		return usage_error(c->name, "no BASE run before '--'");
	if (argc - dd - 1 < 1)
		return usage_error(c->name, "no NEW run after '--'");
	if (out && !*out)
		return usage_error(c->name, "-o: an empty directory name");
	if (html && !*html)
		return usage_error(c->name, "--html: an empty file name");

	opts.cfg = &cfg;
	cmp = sbrig_compare_run((const char *const *)argv + optind,
				(size_t)nbase, (const char *const *)argv + dd + 1,
				(size_t)(argc - dd - 1), &opts);
	if (!cmp) {
		fprintf(stderr, "sbrig compare: %s\n", sbrig_errmsg());
		return errno == EXDEV ? EXIT_NOT_COMPARABLE :
		       errno == ERANGE ? EXIT_USAGE : EXIT_BAD_INPUT;
	}
	ret = EXIT_OK;
	if (out) {
		int err = sbrig_mkdir_p(out, 0755);

		if (err) {
			fprintf(stderr, "sbrig compare: %s\n", sbrig_errmsg());
			ret = EXIT_WRITE;
		} else if ((size_t)snprintf(path, sizeof(path), "%s/compare.json",
					    out) >= sizeof(path)) {
			fprintf(stderr, "sbrig compare: %s: path too long\n", out);
			ret = EXIT_WRITE;
		} else if (sbrig_compare_write_json(cmp, path)) {
			fprintf(stderr, "sbrig compare: %s\n", sbrig_errmsg());
			ret = EXIT_WRITE;
		}
	}
	if (ret == EXIT_OK && html && sbrig_compare_render_html(cmp, html)) {
		fprintf(stderr, "sbrig compare: %s\n", sbrig_errmsg());
		ret = EXIT_WRITE;
	}
	if (ret == EXIT_OK) {
		if (quiet)
			printf("verdict: %s\n", sbrig_verdict_name(
				sbrig_compare_verdict(cmp)));
		else if (sbrig_compare_render_text(cmp, stdout))
			ret = EXIT_WRITE;
		if (out && ret == EXIT_OK)
			printf("compare: %s\n", path);
		if (html && ret == EXIT_OK)
			printf("page: %s\n", html);
	}
	if (ret == EXIT_OK) {
		switch (sbrig_compare_verdict(cmp)) {
		case SBRIG_REGRESSED:
			ret = EXIT_REGRESSED;
			break;
		case SBRIG_INCONCLUSIVE:
			ret = EXIT_INCONCLUSIVE;
			break;
		default:
			break;
		}
	}
	sbrig_compare_free(cmp);
	return ret;
}
