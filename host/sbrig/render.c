// SPDX-License-Identifier: GPL-2.0
/*
 * render.c - sbrig render: report.html from a report.json, offline (no
 * daemon, no capture: the page is rendered from the JSON alone, by
 * sbrig_report_render_html()).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/analysis.h>
#include <sbrig/sbrig.h>

#include "render.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

const char render_args[] = "REPORT.json [-o FILE]";
const char render_summary[] = "render report.html from a report.json";
const char render_help[] =
"Render REPORT.json (the analysis's report, host/doc/report-format.md)\n"
"into one self-contained HTML page that opens from disk with no network:\n"
"findings, the power trace with the blocker timeline (drag to zoom,\n"
"double-click to reset), energy per blocker, wakeups, phases, provenance.\n"
"The charting library is Debian's libjs-dygraphs, read from\n"
"/usr/share/javascript/dygraphs (or $SBRIG_DYGRAPHS_DIR) and inlined.\n"
"The file is replaced atomically; a report that is not valid (wrong\n"
"schema or version, a missing field, a field of the wrong type) is\n"
"refused with the field's name and nothing is written, as is one larger\n"
"than 32 MiB or whose values would take more than 512 MiB of memory\n"
"(the page is written as it is made: render never uses more).\n"
"\n"
"  -o, --output FILE       the page (default: REPORT.json with .html for\n"
"                          .json, e.g. DIR/report.html)\n";

static int usage(const char *why, const char *arg)
{
	fprintf(stderr, "sbrig render: %s%s%s%s\nTry 'sbrig render --help'.\n",
		why, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
	return EXIT_USAGE;
}

/* REPORT.json -> REPORT.html; anything else gets ".html" added */
static char *default_output(const char *json)
{
	size_t n = strlen(json);
	char *out = malloc(n + 6);

	if (!out)
		return NULL;
	if (n > 5 && !strcmp(json + n - 5, ".json"))
		n -= 5;
	memcpy(out, json, n);
	strcpy(out + n, ".html");
	return out;
}

int cmd_render(const struct command *c, int argc, char **argv)
{
	static const struct option o[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	char *def = NULL;
	int opt, ret;

	(void)c;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "o:h", o, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case 'h':
			printf("Usage: sbrig render %s\n\n%s", render_args,
			       render_help);
			return EXIT_OK;
		default:
			return usage("bad option", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage("a REPORT.json is required", NULL);
	if (argc - optind > 1)
		return usage("unexpected argument", argv[optind + 1]);
	if (output && !*output)
		return usage("-o needs a file name", NULL);
	if (!output) {
		def = default_output(argv[optind]);
		if (!def) {
			fprintf(stderr, "sbrig: render: out of memory\n");
			return EXIT_FAIL;
		}
		output = def;
	}
	ret = sbrig_report_render_html(argv[optind], output);
	if (ret)
		fprintf(stderr, "sbrig: render: %s\n", sbrig_errmsg());
	else
		printf("html: %s\n", output);
	free(def);
	return ret ? EXIT_FAIL : EXIT_OK;
}
