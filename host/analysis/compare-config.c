// SPDX-License-Identifier: GPL-2.0
/*
 * compare-config.c - the metrics of sbrig compare and their thresholds:
 * the defaults (cm_metrics[], documented in compare-format.md), and the
 * thresholds file that overrides them (sbrig compare --config FILE;
 * --print-config writes the defaults in the same format).
 *
 * The file is INI-like:
 *
 *	# a comment (also after a value)
 *	[compare]
 *	alpha = 0.01
 *	[energy_per_wakeup_uJ]
 *	min_change = 0.03
 *
 * One key table (keys[]) names every key of a section with its range;
 * [compare] takes the global keys, a section named after a metric takes
 * min_change, min_abs and alpha. libinih splits the lines (as it does the
 * rig config's, host/lib/config.c); a line source of ours counts them,
 * cuts comments and checks what libinih would take quietly or refuse
 * without saying why, so that errors are "file:line: [section]: why".
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "cm-shared.h"

#define CM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define LINE_MAX_LEN 1024

const struct cm_metric_def cm_metrics[SBRIG_METRIC_COUNT] = {
	[SBRIG_M_ENERGY_TOTAL] = { "energy_total_uJ", "uJ", +1, false,
		"energy of the whole run", { 0.03, 0, 0 } },
	[SBRIG_M_ENERGY_PER_WAKEUP] = { "energy_per_wakeup_uJ", "uJ", +1,
		false, "energy from a stimulus to the next suspend, mean "
		"over the run's wakeups", { 0.03, 0, 0 } },
	[SBRIG_M_AWAKE_PER_WAKEUP] = { "awake_per_wakeup_ns", "ns", +1, false,
		"time awake after a wakeup, mean over the run's wakeups",
		{ 0.05, 1e6, 0 } },
	[SBRIG_M_BASELINE] = { "baseline_uW", "uW", +1, false,
		"suspended baseline power", { 0.05, 100, 0 } },
	[SBRIG_M_LATENCY_MEDIAN] = { "latency_median_ns", "ns", +1, false,
		"wakeup latency, median of the run", { 0.05, 1e6, 0 } },
	[SBRIG_M_LATENCY_P95] = { "latency_p95_ns", "ns", +1, false,
		"wakeup latency, 95th percentile of the run",
		{ 0.10, 2e6, 0 } },
	[SBRIG_M_BLOCKER_ENERGY] = { "blocker_energy_per_wakeup_uJ", "uJ", +1,
		true, "a blocker's energy divided by the run's wakeups",
		{ 0.05, 1000, 0 } },
	[SBRIG_M_BLOCKER_ACTIVATIONS] = { "blocker_activations", "count", +1,
		true, "a blocker's activations in the run", { 0.5, 3, 0 } },
	[SBRIG_M_ABORTED_SUSPENDS] = { "aborted_suspends", "count", +1, false,
		"aborted_suspend findings of the run", { 0, 1, 0 } },
	[SBRIG_M_UNKNOWN_WAKEUPS] = { "unknown_wakeups", "count", +1, false,
		"resumes no stimulus explains", { 0, 1, 0 } },
	[SBRIG_M_LEAK] = { "leak", "count", +1, true,
		"runs with a leak finding of the blocker: the share of runs "
		"that leak, by Fisher's exact test", { 0, 0.3, 0 } },
};

const char *sbrig_metric_name(enum sbrig_metric m)
{
	return (unsigned int)m < SBRIG_METRIC_COUNT ? cm_metrics[m].name : NULL;
}

const char *sbrig_metric_unit(enum sbrig_metric m)
{
	return (unsigned int)m < SBRIG_METRIC_COUNT ? cm_metrics[m].unit : NULL;
}

const char *sbrig_verdict_name(enum sbrig_verdict v)
{
	static const char *const names[SBRIG_VERDICT_COUNT] = {
		[SBRIG_UNCHANGED] = "unchanged",
		[SBRIG_IMPROVED] = "improved",
		[SBRIG_REGRESSED] = "regressed",
		[SBRIG_INCONCLUSIVE] = "inconclusive",
	};

	return (unsigned int)v < SBRIG_VERDICT_COUNT ? names[v] : "?";
}

int cm_metric_by_name(const char *name)
{
	for (int m = 0; m < SBRIG_METRIC_COUNT; m++)
		if (!strcmp(cm_metrics[m].name, name))
			return m;
	return -1;
}

void sbrig_compare_config_init(struct sbrig_compare_config *cfg)
{
	*cfg = (struct sbrig_compare_config){
		.alpha = 0.01, .confidence = 0.95, .power = 0.8,
		.min_runs = 5,
	};
	for (int m = 0; m < SBRIG_METRIC_COUNT; m++)
		cfg->metric[m] = cm_metrics[m].thr;
}

/* ---- the key table ---------------------------------------------------- */

enum key_type { K_DOUBLE, K_UINT };

/**
 * struct cfg_key - one key of the thresholds file
 * @name: the key
 * @global: in [compare] (else in a metric's section)
 * @type: how the value is read
 * @min: the smallest value allowed
 * @max: the largest
 * @open_min: @min itself is not allowed
 * @what: the comment --print-config writes after it
 */
struct cfg_key {
	const char *name;
	bool global;
	enum key_type type;
	double min, max;
	bool open_min;
	const char *what;
};

static const struct cfg_key keys[] = {
	{ "alpha", true, K_DOUBLE, 0, 0.5, true,
	  "significance: the test's p at most this is a difference" },
	{ "confidence", true, K_DOUBLE, 0.5, 0.999, false,
	  "level of the change's interval" },
	{ "power", true, K_DOUBLE, 0.5, 0.99, false,
	  "power the \"run N more\" estimate aims at" },
	{ "min_runs", true, K_UINT, 2, 10000, false,
	  "fewer runs than this on a side: inconclusive" },
	{ "min_change", false, K_DOUBLE, 0, 100, false,
	  "smallest relative change of the median that matters" },
	{ "min_abs", false, K_DOUBLE, 0, 1e18, false,
	  "smallest absolute change that matters (the metric's unit)" },
	{ "alpha", false, K_DOUBLE, 0, 0.5, false,
	  "this metric's significance (0: [compare] alpha)" },
};

static void *key_field(struct sbrig_compare_config *cfg, int metric,
		       const struct cfg_key *k)
{
	if (k->global) {
		if (!strcmp(k->name, "alpha"))
			return &cfg->alpha;
		if (!strcmp(k->name, "confidence"))
			return &cfg->confidence;
		if (!strcmp(k->name, "power"))
			return &cfg->power;
		return &cfg->min_runs;
	}
	if (!strcmp(k->name, "min_change"))
		return &cfg->metric[metric].min_change;
	if (!strcmp(k->name, "min_abs"))
		return &cfg->metric[metric].min_abs;
	return &cfg->metric[metric].alpha;
}

/* Store @val of key @k; -EINVAL with "why" in @why. */
static int store(struct sbrig_compare_config *cfg, int metric,
		 const struct cfg_key *k, const char *val, char *why,
		 size_t whylen)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(val, &end);
	if (end == val || *end || errno || !isfinite(d))
		goto not_number;
	if (d < k->min || d > k->max || (k->open_min && d == k->min)) {
		snprintf(why, whylen, "%s = %s: out of range (%s%g .. %g)",
			 k->name, val, k->open_min ? "above " : "", k->min,
			 k->max);
		return -EINVAL;
	}
	if (k->type == K_UINT) {
		if (d != floor(d))
			goto not_number;
		*(unsigned int *)key_field(cfg, metric, k) = (unsigned int)d;
	} else {
		*(double *)key_field(cfg, metric, k) = d;
	}
	return 0;

not_number:
	snprintf(why, whylen, "%s = %s: not %s", k->name, val,
		 k->type == K_DOUBLE ? "a number" : "a whole number");
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/**
 * struct cm_parser - one sbrig_compare_config_load() through libinih
 * @cfg: being filled in
 * @path: for messages
 * @f: the file
 * @lineno: the line last handed to libinih
 * @section: the current section's name ("" before any)
 * @metric: its metric, -1 for [compare], -2 before any section
 * @err: the first error (0: none); its message is in sbrig_errmsg()
 */
struct cm_parser {
	struct sbrig_compare_config *cfg;
	const char *path;
	FILE *f;
	unsigned int lineno;
	char section[128];
	int metric;
	int err;
};

static void parser_fail(struct cm_parser *p, int err)
{
	if (!p->err)
		p->err = err;
}

/*
 * libinih's line source: one line at a time, counted, its comment (from
 * '#' or ';') cut, indentation dropped (never a libinih continuation), and
 * what libinih would take quietly or report without a reason checked
 * here with one: a section header's form and name, a key before any
 * section, a line that is no KEY = VALUE. Returning NULL ends the parse
 * (at the first error).
 */
static char *cm_reader(char *str, int num, void *stream)
{
	struct cm_parser *p = stream;
	char line[LINE_MAX_LEN + 2], *s, *hash;

	if (p->err || !fgets(line, sizeof(line), p->f))
		return NULL;
	p->lineno++;
	s = line;
	if (p->lineno == 1 && !memcmp(s, "\xef\xbb\xbf", 3))
		s += 3;		/* a UTF-8 BOM, as libinih would skip it */
	if (!strchr(s, '\n') && !feof(p->f)) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: line longer "
					       "than %d characters", p->path,
					       p->lineno, LINE_MAX_LEN));
		return NULL;
	}
	hash = strpbrk(s, "#;");
	if (hash)
		*hash = '\0';
	s = trim(s);
	if (*s == '[') {
		char *close = strchr(s, ']');

		if (!close || *trim(close + 1)) {
			parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: '%s': a "
						       "section header is [NAME]",
						       p->path, p->lineno, s));
			return NULL;
		}
		*close = '\0';
		snprintf(p->section, sizeof(p->section), "%s", trim(s + 1));
		p->metric = -1;		/* [compare] */
		if (strcmp(p->section, "compare"))
			p->metric = cm_metric_by_name(p->section);
		if (p->metric == -1 && strcmp(p->section, "compare")) {
			parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: [%s]: no "
				"such section (compare, or a metric: "
				"energy_per_wakeup_uJ ...; sbrig compare "
				"--print-config lists them)", p->path,
				p->lineno, p->section));
			return NULL;
		}
		snprintf(str, (size_t)num, "[%s]", p->section);
		return str;
	}
	if (*s && p->metric == -2) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: '%s': a key "
					       "before any [section]", p->path,
					       p->lineno, s));
		return NULL;
	}
	if (*s && !strchr(s, '=')) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: [%s]: '%s': "
					       "expected KEY = VALUE", p->path,
					       p->lineno, p->section, s));
		return NULL;
	}
	if (strlen(s) + 2 > (size_t)num) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: [%s]: line "
					       "longer than %d characters",
					       p->path, p->lineno, p->section,
					       num - 2));
		return NULL;
	}
	snprintf(str, (size_t)num, "%s\n", s);
	return str;
}

/* libinih's handler: one KEY = VALUE of the current section. */
static int cm_handler(void *user, const char *section, const char *name,
		      const char *value)
{
	struct cm_parser *p = user;
	const struct cfg_key *k = NULL;
	char why[256];

	if (p->err)
		return 0;
	for (size_t i = 0; i < CM_ARRAY_SIZE(keys); i++)
		if (keys[i].global == (p->metric == -1) &&
		    !strcmp(keys[i].name, name))
			k = &keys[i];
	if (!k) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: [%s]: unknown "
					       "key '%s' (%s)", p->path,
					       p->lineno, section, name,
					       p->metric == -1 ?
					       "alpha, confidence, power, "
					       "min_runs" :
					       "min_change, min_abs, alpha"));
		return 0;
	}
	if (store(p->cfg, p->metric, k, value, why, sizeof(why))) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s:%u: [%s]: %s",
					       p->path, p->lineno, section,
					       why));
		return 0;
	}
	return 1;
}

int sbrig_compare_config_load(struct sbrig_compare_config *cfg,
			      const char *path)
{
	struct cm_parser p = { .cfg = cfg, .path = path, .metric = -2 };
	int ret;

	p.f = fopen(path, "re");
	if (!p.f)
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	ret = ini_parse_stream(cm_reader, &p, cm_handler, &p);
	if (p.err)
		ret = p.err;
	else if (ferror(p.f))
		ret = sbrig_set_error(-EIO, "%s: read error", path);
	else if (ret)	/* a line libinih refused that cm_reader let by */
		ret = sbrig_set_error(-EINVAL, "%s:%d: [%s]: not KEY = VALUE",
				      path, ret, p.section);
	else
		snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	fclose(p.f);
	return ret;
}

int sbrig_compare_config_write(const struct sbrig_compare_config *cfg,
			       FILE *out)
{
	const struct cfg_key *k;

	fprintf(out, "# sbrig compare thresholds (host/doc/compare-format.md)"
		"\n# read with: sbrig compare --config FILE ...\n\n[compare]\n");
	for (k = keys; k < keys + CM_ARRAY_SIZE(keys); k++) {
		if (!k->global)
			continue;
		if (k->type == K_DOUBLE)
			fprintf(out, "%-12s = %-8g # %s\n", k->name,
				*(double *)key_field((void *)cfg, 0, k),
				k->what);
		else
			fprintf(out, "%-12s = %-8u # %s\n", k->name,
				*(unsigned int *)key_field((void *)cfg, 0, k),
				k->what);
	}
	for (int m = 0; m < SBRIG_METRIC_COUNT; m++) {
		const struct sbrig_compare_threshold *t = &cfg->metric[m];

		fprintf(out, "\n# %s (%s%s)\n[%s]\n", cm_metrics[m].what,
			cm_metrics[m].unit, cm_metrics[m].per_blocker ?
			", one per blocker" : "", cm_metrics[m].name);
		if (m == SBRIG_M_LEAK) {
			fprintf(out, "min_abs      = %g\nalpha        = %g\n",
				t->min_abs, t->alpha);
			continue;
		}
		fprintf(out, "min_change   = %g\nmin_abs      = %g\n"
			"alpha        = %g\n", t->min_change, t->min_abs,
			t->alpha);
	}
	return ferror(out) ? -EIO : 0;
}
