// SPDX-License-Identifier: GPL-2.0
/*
 * export-ci.c - what CI systems read (export-formats.md):
 *
 * JUnit XML of a compare.json: one <testsuite> with the provenance as
 * <properties> (commit, base_commit, rig and scenario names and hashes,
 * the thresholds file: the way labgrid's pytest plugin records a run's
 * config and git SHAs with record_testsuite_property()), and one
 * <testcase> per metric verdict: a regression is a <failure>, an
 * inconclusive verdict is <skipped> (run more), unchanged and improved
 * pass; each case's figures are its <properties>.
 *
 * LAVA lines: "lava-test-case NAME --result pass|fail --measurement X
 * --units U", which a Lava-Test shell on the device runs (LAVA takes
 * test-case signals only from there). NAME is [A-Za-z0-9_.-] only (every
 * other byte becomes '_') and at most 100 characters; units have no
 * spaces. A report gives its headline figures (pass) and a line per
 * finding kind that is a failure (leak, aborted_suspend); a comparison
 * gives a line per metric verdict (fail for regressed and inconclusive)
 * and the overall verdict.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/sbrig.h>

#include "export-internal.h"
#include "report-load.h"

typedef struct json_object jobj;

#define LAVA_NAME_MAX 100

static jobj *get(jobj *o, const char *k)
{
	return an_jget(o, k);
}

static const char *str(jobj *o, const char *k)
{
	const char *s = json_object_get_string(get(o, k));

	return s ? s : "";
}

static double num(jobj *o, const char *k)
{
	jobj *v = get(o, k);

	return v ? json_object_get_double(v) : NAN;
}

/* ---- JUnit ---------------------------------------------------------------- */

static void xml(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\n': fputs("&#10;", out); break;
		case '\t': fputs("&#9;", out); break;
		default:
			if (c >= 0x20)	/* XML 1.0 has no other control char */
				fputc(c, out);
		}
	}
}

static void property(FILE *out, const char *indent, const char *name,
		     const char *value)
{
	fprintf(out, "%s<property name=\"", indent);
	xml(out, name);
	fputs("\" value=\"", out);
	xml(out, value);
	fputs("\"/>\n", out);
}

/* the strings of @arr joined by ',' */
static void joined(jobj *arr, char *buf, size_t n)
{
	size_t l = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(arr) && l < n; i++)
		l += (size_t)snprintf(buf + l, n - l, "%s%s", i ? "," : "",
				      json_object_get_string(
					json_object_array_get_idx(arr, i)));
}

static void case_name(jobj *m, char *buf, size_t n)
{
	if (get(m, "blocker"))
		snprintf(buf, n, "%s[%s]", str(m, "metric"), str(m, "blocker"));
	else
		snprintf(buf, n, "%s", str(m, "metric"));
}

static void num_property(FILE *out, const char *name, jobj *v)
{
	char buf[64];

	if (!v)
		return;
	snprintf(buf, sizeof(buf), "%.10g", json_object_get_double(v));
	property(out, "        ", name, buf);
}

/* "change +5.5 % (95 % interval +4.3 % .. +6.2 %), p = 1.1e-05" */
static void message(jobj *m, char *buf, size_t n)
{
	jobj *ci = get(m, "ci_rel");
	size_t l;

	l = (size_t)snprintf(buf, n, "%s: %s", str(m, "verdict"),
			     str(m, "reason"));
	if (!isnan(num(m, "change_rel")) && l < n)
		l += (size_t)snprintf(buf + l, n - l, "; change %+.1f %%",
				      num(m, "change_rel") * 100);
	if (ci && l < n)
		l += (size_t)snprintf(buf + l, n - l,
			" (%.0f %% interval %+.1f %% .. %+.1f %%)",
			num(m, "confidence") * 100,
			json_object_get_double(json_object_array_get_idx(ci, 0)) * 100,
			json_object_get_double(json_object_array_get_idx(ci, 1)) * 100);
	if (!isnan(num(m, "p_value")) && l < n)
		l += (size_t)snprintf(buf + l, n - l, ", p = %.2g",
				      num(m, "p_value"));
	if (get(m, "more_runs") && l < n)
		snprintf(buf + l, n - l, "; run %d more a side",
			 (int)num(m, "more_runs"));
}

int ex_junit(jobj *c, FILE *out)
{
	static const char *const prov_keys[] = {
		"rig_name", "rig_config", "rig_sha256", "scenario",
		"scenario_sha256",
	};
	jobj *metrics = get(c, "metrics"), *cnt = get(c, "counts");
	jobj *prov = get(c, "provenance");
	size_t n = json_object_array_length(metrics);
	char buf[2048], name[512];

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	      "  <testsuite name=\"sbrig compare: ", out);
	xml(out, *str(prov, "scenario") ? str(prov, "scenario") : "runs");
	fprintf(out, "\" tests=\"%zu\" failures=\"%d\" errors=\"0\" "
		"skipped=\"%d\">\n    <properties>\n", n,
		(int)num(cnt, "regressed"), (int)num(cnt, "inconclusive"));
	joined(get(get(c, "new"), "git_sha"), buf, sizeof(buf));
	property(out, "      ", "commit", buf);
	joined(get(get(c, "base"), "git_sha"), buf, sizeof(buf));
	property(out, "      ", "base_commit", buf);
	for (size_t i = 0; i < sizeof(prov_keys) / sizeof(prov_keys[0]); i++)
		property(out, "      ", prov_keys[i], str(prov, prov_keys[i]));
	property(out, "      ", "thresholds",
		 *str(get(c, "config"), "path") ? str(get(c, "config"), "path") :
		 "(built-in defaults)");
	property(out, "      ", "verdict", str(c, "verdict"));
	snprintf(buf, sizeof(buf), "%d", (int)num(get(c, "base"), "n"));
	property(out, "      ", "base_runs", buf);
	snprintf(buf, sizeof(buf), "%d", (int)num(get(c, "new"), "n"));
	property(out, "      ", "new_runs", buf);
	fputs("    </properties>\n", out);
	for (size_t i = 0; i < n; i++) {
		jobj *m = json_object_array_get_idx(metrics, i);
		const char *v = str(m, "verdict");

		case_name(m, name, sizeof(name));
		fputs("    <testcase classname=\"sbrig.compare\" name=\"", out);
		xml(out, name);
		fputs("\" time=\"0\">\n      <properties>\n", out);
		property(out, "        ", "verdict", v);
		property(out, "        ", "unit", str(m, "unit"));
		num_property(out, "base_median", get(get(m, "base"), "median"));
		num_property(out, "new_median", get(get(m, "new"), "median"));
		num_property(out, "change_rel", get(m, "change_rel"));
		num_property(out, "p_value", get(m, "p_value"));
		fputs("      </properties>\n", out);
		message(m, buf, sizeof(buf));
		if (!strcmp(v, "regressed") || !strcmp(v, "inconclusive")) {
			fprintf(out, "      <%s message=\"",
				*v == 'r' ? "failure type=\"regressed\"" :
				"skipped");
			xml(out, buf);
			fputs("\"/>\n", out);
		} else {
			fputs("      <system-out>", out);
			xml(out, buf);
			fputs("</system-out>\n", out);
		}
		fputs("    </testcase>\n", out);
	}
	fputs("  </testsuite>\n</testsuites>\n", out);
	return ferror(out) ? sbrig_set_error(-ENOMEM, "junit: out of memory") : 0;
}

/* ---- LAVA ------------------------------------------------------------------- */

/* @a and @b joined by '_' as a LAVA test-case name */
static void lava_name(char *buf, const char *a, const char *b)
{
	size_t l = (size_t)snprintf(buf, LAVA_NAME_MAX + 1, "%s%s%s", a,
				    b && *b ? "_" : "", b ? b : "");

	if (l > LAVA_NAME_MAX)
		l = LAVA_NAME_MAX;
	for (size_t i = 0; i < l; i++) {
		char ch = buf[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      ch == '.'))
			buf[i] = '_';
	}
	buf[l] = '\0';
}

static void lava(FILE *out, const char *a, const char *b, bool pass,
		 double x, const char *units)
{
	char name[LAVA_NAME_MAX + 1];

	lava_name(name, a, b);
	fprintf(out, "lava-test-case %s --result %s", name,
		pass ? "pass" : "fail");
	if (fabs(x) < 0.0005)
		x = 0;		/* no "-0.000" */
	if (isfinite(x))
		fprintf(out, " --measurement %.*f --units %s",
			strcmp(units, "count") ? 3 : 0, x, units);
	fputc('\n', out);
}

static size_t count_kind(jobj *f, const char *kind)
{
	size_t k = 0;

	for (size_t i = 0; i < json_object_array_length(f); i++)
		k += !strcmp(str(json_object_array_get_idx(f, i), "kind"), kind);
	return k;
}

int ex_lava_report(jobj *r, FILE *out)
{
	jobj *e = get(r, "energy"), *lat = get(r, "latency");
	jobj *bl = get(r, "blockers"), *f = get(r, "findings");
	jobj *wk = get(r, "wakeups");
	size_t nw = json_object_array_length(wk);
	double s = 0;

	lava(out, "energy_total", NULL, true, num(e, "total_uJ") / 1e3, "mJ");
	lava(out, "energy_suspended", NULL, true, num(e, "suspended_uJ") / 1e3,
	     "mJ");
	lava(out, "energy_awake", NULL, true, num(e, "awake_uJ") / 1e3, "mJ");
	if (get(e, "baseline_uW"))
		lava(out, "baseline_power", NULL, true,
		     num(e, "baseline_uW") / 1e3, "mW");
	for (size_t i = 0; i < nw; i++)
		s += num(json_object_array_get_idx(wk, i), "energy_uJ");
	if (nw) {
		lava(out, "energy_per_wakeup", NULL, true, s / (double)nw / 1e3,
		     "mJ");
		lava(out, "wakeups", NULL, true, (double)nw, "count");
	}
	if (num(lat, "n") > 0) {
		lava(out, "latency_median", NULL, true,
		     num(lat, "median_ns") / 1e6, "ms");
		lava(out, "latency_p95", NULL, true, num(lat, "p95_ns") / 1e6,
		     "ms");
	}
	for (size_t i = 0; i < json_object_array_length(bl); i++) {
		jobj *b = json_object_array_get_idx(bl, i);

		lava(out, "blocker_energy", str(b, "name"), true,
		     num(b, "energy_uJ") / 1e3, "mJ");
	}
	lava(out, "leaks", NULL, !count_kind(f, "leak"),
	     (double)count_kind(f, "leak"), "count");
	lava(out, "aborted_suspends", NULL, !count_kind(f, "aborted_suspend"),
	     (double)count_kind(f, "aborted_suspend"), "count");
	return ferror(out) ? sbrig_set_error(-ENOMEM, "lava: out of memory") : 0;
}

int ex_lava_compare(jobj *c, FILE *out)
{
	jobj *metrics = get(c, "metrics");

	for (size_t i = 0; i < json_object_array_length(metrics); i++) {
		jobj *m = json_object_array_get_idx(metrics, i);
		const char *v = str(m, "verdict");
		bool pass = strcmp(v, "regressed") && strcmp(v, "inconclusive");
		char a[256];

		snprintf(a, sizeof(a), "compare_%s", str(m, "metric"));
		if (!isnan(num(m, "change_rel")))
			lava(out, a, str(m, "blocker"), pass,
			     num(m, "change_rel") * 100, "percent");
		else if (!strcmp(str(m, "test"), "new-leak"))
			lava(out, a, str(m, "blocker"), pass,
			     num(get(m, "new"), "median"), "count");
		else
			lava(out, a, str(m, "blocker"), pass, num(m, "change"),
			     str(m, "unit"));
	}
	lava(out, "compare_verdict", NULL,
	     strcmp(str(c, "verdict"), "regressed") &&
	     strcmp(str(c, "verdict"), "inconclusive"),
	     num(get(c, "counts"), "regressed"), "count");
	return ferror(out) ? sbrig_set_error(-ENOMEM, "lava: out of memory") : 0;
}
