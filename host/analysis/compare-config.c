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
 * min_change, min_abs and alpha. Errors are "file:line: [section]: why",
 * as the rig config's (host/lib/config.c); the analysis links no INI
 * library (libinih is a rig library), so the few lines of parsing are
 * here.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "compare-internal.h"

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

int sbrig_compare_config_load(struct sbrig_compare_config *cfg,
			      const char *path)
{
	char line[LINE_MAX_LEN + 2], section[128] = "", why[256];
	int metric = -2;	/* -2: before any section, -1: [compare] */
	unsigned int lineno = 0;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *s, *eq, *key, *val, *hash;
		const struct cfg_key *k = NULL;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			ret = sbrig_set_error(-EINVAL, "%s:%u: line longer than "
					      "%d characters", path, lineno,
					      LINE_MAX_LEN);
			goto out;
		}
		hash = strpbrk(line, "#;");
		if (hash)
			*hash = '\0';
		s = trim(line);
		if (!*s)
			continue;
		if (*s == '[') {
			char *close = strchr(s, ']');

			if (!close || *trim(close + 1)) {
				ret = sbrig_set_error(-EINVAL, "%s:%u: '%s': a "
						      "section header is "
						      "[NAME]", path, lineno,
						      s);
				goto out;
			}
			*close = '\0';
			snprintf(section, sizeof(section), "%s", trim(s + 1));
			if (!strcmp(section, "compare")) {
				metric = -1;
				continue;
			}
			metric = cm_metric_by_name(section);
			if (metric < 0) {
				ret = sbrig_set_error(-EINVAL, "%s:%u: [%s]: no "
						      "such section (compare, "
						      "or a metric: "
						      "energy_per_wakeup_uJ "
						      "...; sbrig compare "
						      "--print-config lists "
						      "them)", path, lineno,
						      section);
				goto out;
			}
			continue;
		}
		if (metric == -2) {
			ret = sbrig_set_error(-EINVAL, "%s:%u: '%s': a key "
					      "before any [section]", path,
					      lineno, s);
			goto out;
		}
		eq = strchr(s, '=');
		if (!eq) {
			ret = sbrig_set_error(-EINVAL, "%s:%u: [%s]: '%s': "
					      "expected KEY = VALUE", path,
					      lineno, section, s);
			goto out;
		}
		*eq = '\0';
		key = trim(s);
		val = trim(eq + 1);
		for (size_t i = 0; i < CM_ARRAY_SIZE(keys); i++)
			if (keys[i].global == (metric == -1) &&
			    !strcmp(keys[i].name, key))
				k = &keys[i];
		if (!k) {
			ret = sbrig_set_error(-EINVAL, "%s:%u: [%s]: unknown key "
					      "'%s' (%s)", path, lineno,
					      section, key, metric == -1 ?
					      "alpha, confidence, power, "
					      "min_runs" :
					      "min_change, min_abs, alpha");
			goto out;
		}
		if (store(cfg, metric, k, val, why, sizeof(why))) {
			ret = sbrig_set_error(-EINVAL, "%s:%u: [%s]: %s", path,
					      lineno, section, why);
			goto out;
		}
	}
	if (ferror(f))
		ret = sbrig_set_error(-EIO, "%s: read error", path);
	else
		snprintf(cfg->path, sizeof(cfg->path), "%s", path);
out:
	fclose(f);
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
