// SPDX-License-Identifier: GPL-2.0
/*
 * compare-text.c - the short human summary of a comparison, rendered from
 * its compare.json document alone (what sbrig compare prints):
 *
 *	verdict: regressed (1 regressed, 0 improved, 14 unchanged, ...)
 *	regressed: energy_per_wakeup_uJ: 120.000 -> 126.100 mJ (+5.1 %, ...)
 *	worse_blocker: wifi: +60.000 mJ per wakeup (+100.0 %)
 *	inconclusive: latency_p95_ns: ...: run 6 more a side (11 in all)
 *
 * One "key: value" line each: the verdict, every metric that is not
 * unchanged (regressions first), then the blockers whose energy per
 * wakeup got worse (by how much, largest first), then the warnings.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/compare.h>

#include "cm-shared.h"
#include "report-load.h"

typedef struct json_object jobj;

static const char *str(jobj *o, const char *k)
{
	const char *s = json_object_get_string(an_jget(o, k));

	return s ? s : "";
}

static double num(jobj *o, const char *k)
{
	jobj *v = an_jget(o, k);

	return v ? json_object_get_double(v) : NAN;
}

/* @v of unit @unit for a reader: mJ, ms, mW, or a count */
static const char *human(const char *unit, double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else if (!strcmp(unit, "uJ"))
		snprintf(buf, n, "%.3f mJ", v / 1e3);
	else if (!strcmp(unit, "ns"))
		snprintf(buf, n, "%.3f ms", v / 1e6);
	else if (!strcmp(unit, "uW"))
		snprintf(buf, n, "%.3f mW", v / 1e3);
	else
		snprintf(buf, n, "%g", v);
	return buf;
}

/* how many of a side's values are above 0 (runs with a leak) */
static size_t positive(jobj *side)
{
	jobj *v = an_jget(side, "values");
	size_t k = 0;

	for (size_t i = 0; i < json_object_array_length(v); i++)
		k += json_object_get_double(json_object_array_get_idx(v, i)) > 0;
	return k;
}

static void metric_name(jobj *m, char *buf, size_t n)
{
	if (an_jget(m, "blocker"))
		snprintf(buf, n, "blocker %s: %s", str(m, "blocker"),
			 str(m, "metric"));
	else
		snprintf(buf, n, "%s", str(m, "metric"));
}

static void metric_line(jobj *m, FILE *out)
{
	const char *unit = str(m, "unit");
	jobj *ci = an_jget(m, "ci_rel");
	char name[512], a[64], b[64];
	double rel = num(m, "change_rel");

	metric_name(m, name, sizeof(name));
	if (!strcmp(str(m, "metric"), "leak")) {
		fprintf(out, "%s: %s: in %zu of %d new runs, %zu of %d base "
			"runs (p = %.2g)", str(m, "verdict"), name,
			positive(an_jget(m, "new")),
			(int)num(an_jget(m, "new"), "n"),
			positive(an_jget(m, "base")),
			(int)num(an_jget(m, "base"), "n"), num(m, "p_value"));
		goto more;
	}
	fprintf(out, "%s: %s: %s -> %s", str(m, "verdict"), name,
		human(unit, num(an_jget(m, "base"), "median"), a, sizeof(a)),
		human(unit, num(an_jget(m, "new"), "median"), b, sizeof(b)));
	fprintf(out, " (");
	if (!isnan(rel))
		fprintf(out, "%+.1f %%", rel * 100);
	else
		fprintf(out, "%s", human(unit, num(m, "change"), a, sizeof(a)));
	if (ci)
		fprintf(out, ", %.0f %% interval %+.1f %% .. %+.1f %%",
			num(m, "confidence") * 100,
			json_object_get_double(json_object_array_get_idx(ci, 0)) * 100,
			json_object_get_double(json_object_array_get_idx(ci, 1)) * 100);
	if (!isnan(num(m, "p_value")))
		fprintf(out, "; p = %.2g", num(m, "p_value"));
	fprintf(out, ")");
more:
	if (an_jget(m, "more_runs"))
		fprintf(out, ": run %d more a side (%d in all)",
			(int)num(m, "more_runs"), (int)num(m, "runs_needed"));
	else if (!strcmp(str(m, "verdict"), "inconclusive"))
		fprintf(out, ": %s", str(m, "reason"));
	fprintf(out, "\n");
}

static int cmp_change(const void *x, const void *y)
{
	double a = num(*(jobj *const *)x, "change");
	double b = num(*(jobj *const *)y, "change");

	return (a < b) - (a > b);	/* largest first */
}

int cm_render_text(jobj *root, FILE *out)
{
	static const char *const order[] = {
		"regressed", "inconclusive", "improved",
	};
	jobj *metrics = an_jget(root, "metrics"), *cnt = an_jget(root, "counts");
	jobj *warn = an_jget(root, "warnings");
	size_t n = json_object_array_length(metrics), nw = 0;
	jobj **worse = calloc(n + 1, sizeof(*worse));
	char a[64];

	if (!worse)
		return -ENOMEM;
	fprintf(out, "verdict: %s (%d regressed, %d improved, %d unchanged, "
		"%d inconclusive; %d base runs, %d new runs)\n",
		str(root, "verdict"), (int)num(cnt, "regressed"),
		(int)num(cnt, "improved"), (int)num(cnt, "unchanged"),
		(int)num(cnt, "inconclusive"),
		(int)num(an_jget(root, "base"), "n"),
		(int)num(an_jget(root, "new"), "n"));
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (size_t i = 0; i < n; i++) {
			jobj *m = json_object_array_get_idx(metrics, i);

			if (!strcmp(str(m, "verdict"), order[k]))
				metric_line(m, out);
		}
	for (size_t i = 0; i < n; i++) {
		jobj *m = json_object_array_get_idx(metrics, i);

		if (!strcmp(str(m, "metric"), "blocker_energy_per_wakeup_uJ") &&
		    !strcmp(str(m, "verdict"), "regressed"))
			worse[nw++] = m;
	}
	qsort(worse, nw, sizeof(*worse), cmp_change);
	for (size_t i = 0; i < nw; i++) {
		double rel = num(worse[i], "change_rel");

		fprintf(out, "worse_blocker: %s: %s%s per wakeup", str(worse[i],
			"blocker"), num(worse[i], "change") >= 0 ? "+" : "",
			human("uJ", num(worse[i], "change"), a, sizeof(a)));
		if (!isnan(rel))
			fprintf(out, " (%+.1f %%)", rel * 100);
		fprintf(out, "\n");
	}
	for (size_t i = 0; i < n; i++) {
		jobj *m = json_object_array_get_idx(metrics, i);

		if (!strcmp(str(m, "metric"), "leak") &&
		    !strcmp(str(m, "verdict"), "regressed"))
			fprintf(out, "new_leak: %s\n", str(m, "blocker"));
	}
	for (size_t i = 0; i < json_object_array_length(warn); i++)
		fprintf(out, "warning: %s\n", json_object_get_string(
			json_object_array_get_idx(warn, i)));
	free(worse);
	return ferror(out) ? -EIO : 0;
}
