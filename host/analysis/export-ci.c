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
 * pass; each case's figures are "key: value" lines of its <system-out>
 * (Jenkins' xUnit schema has no <properties> in a <testcase>).
 *
 * LAVA lines: "lava-test-case NAME --result pass|fail|skip --measurement X
 * --units U", which a Lava-Test shell on the device runs (LAVA takes
 * test-case signals only from there). A report gives its headline figures
 * (pass) and a line per finding kind that is a failure (leak,
 * aborted_suspend); a comparison gives a line per metric verdict (fail for
 * regressed, skip for inconclusive) and the overall verdict.
 *
 * Both read documents that may come from anywhere (a compare.json is a
 * file like any other): every string is written so that its reader takes
 * it for what it is and nothing else.
 *
 *  - XML: text is valid UTF-8 made of XML 1.0 characters; a byte sequence
 *    that is not (a character cut in two, U+FFFE, a control character)
 *    becomes U+FFFD. Numbers are written from the metrics themselves
 *    (tests, failures, skipped count the test cases written), as
 *    integers that cannot wrap.
 *  - LAVA: a line is one shell command whose words LAVA's lava-test-case
 *    takes apart with "=" and ">" as separators: a name holds only
 *    [A-Za-z0-9_.-] and at most 100 characters, a unit only
 *    [A-Za-z0-9_%/.-] (at most 100, never empty), a measurement fits
 *    lava-server's column (30 digits, 10 after the point).
 *  - Names stay distinct and stable: a name whose mapping loses
 *    information (a byte replaced, a name cut) gets the first 8 hex digits
 *    of the SHA-256 of its full name as a suffix (ex_name_t); two figures
 *    that still end up with one name are an error, never two results
 *    under one name.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sha256.h>	/* libmd */

#include <sbrig/sbrig.h>

#include "ex-formats.h"
#include "ex-text.h"
#include "report-load.h"

typedef struct json_object jobj;

#define LAVA_NAME_MAX 100
#define LAVA_UNITS_MAX 100
/* lava-server's TestCase.measurement: DecimalField(max_digits=30,
 * decimal_places=10), so less than 1e20 in magnitude */
#define LAVA_MEASUREMENT_MAX 1e19
#define HASH_HEX 8

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

/* ---- names ---------------------------------------------------------------- */

/* The first HASH_HEX hex digits of the SHA-256 of @s, into @hex. */
static void short_hash(const char *s, char hex[HASH_HEX + 1])
{
	char full[SHA256_DIGEST_STRING_LENGTH];

	SHA256Data((const uint8_t *)s, strlen(s), full);
	memcpy(hex, full, HASH_HEX);
	hex[HASH_HEX] = '\0';
}

/* Does @s (@n bytes) end with @sep and HASH_HEX lowercase hex digits? */
static bool ends_hashed(const char *s, size_t n, const char *sep)
{
	size_t l = strlen(sep);

	if (n < l + HASH_HEX || memcmp(s + n - HASH_HEX - l, sep, l))
		return false;
	for (size_t i = n - HASH_HEX; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/*
 * The set of names written so far: a second figure with a name already
 * written is an error naming both (@what: "metrics[3]", "blockers[2]").
 */
static int name_unique(jobj *seen, const char *name, const char *what,
		       const char *format)
{
	jobj *first;

	if (json_object_object_get_ex(seen, name, &first))
		return sbrig_set_error(-EINVAL, "%s: %s and %s both give the "
				       "test case name '%.200s'", format,
				       json_object_get_string(first), what,
				       name);
	if (json_object_object_add(seen, name, json_object_new_string(what)))
		return sbrig_set_error(-ENOMEM, "%s: out of memory", format);
	return 0;
}

/* ---- XML ------------------------------------------------------------------ */

static bool xml_char(uint32_t c)
{
	return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
	       (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

/*
 * @s as XML text or attribute value: escaped, every byte sequence that is
 * not UTF-8 of an XML 1.0 character written as U+FFFD. Return whether
 * anything was replaced.
 */
static bool xml(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	bool lossy = false;

	while (n) {
		size_t len;
		int32_t c = ex_utf8_next(p, n, &len);

		p += len;
		n -= len;
		if (c < 0 || !xml_char((uint32_t)c)) {
			fputs("\xef\xbf\xbd", out);	/* U+FFFD */
			lossy = true;
			continue;
		}
		switch (c) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\n': fputs("&#10;", out); break;
		case '\r': fputs("&#13;", out); break;
		case '\t': fputs("&#9;", out); break;
		default:
			fwrite(p - len, 1, len, out);
		}
	}
	return lossy;
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

static void int_property(FILE *out, const char *indent, const char *name,
			 jobj *v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(v));
	property(out, indent, name, buf);
}

/* the strings of @arr joined by ',' (a property) */
static void joined_property(FILE *out, const char *name, jobj *arr)
{
	fprintf(out, "      <property name=\"%s\" value=\"", name);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		if (i)
			fputc(',', out);
		xml(out, json_object_get_string(json_object_array_get_idx(arr,
									  i)));
	}
	fputs("\"/>\n", out);
}

/* "\nNAME: VALUE" in a case's system-out (nothing for null) */
static void num_line(FILE *out, const char *name, jobj *v)
{
	if (v)
		fprintf(out, "&#10;%s: %.10g", name, json_object_get_double(v));
}

/*
 * "regressed: REASON; change +5.5 % (95 % interval +4.3 % .. +6.2 %),
 * p = 1.1e-05" into a memory stream's buffer (*@buf, the caller's)
 */
static int message(jobj *m, char **buf)
{
	jobj *ci = get(m, "ci_rel");
	size_t len;
	FILE *f = open_memstream(buf, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "%s: %s", str(m, "verdict"), str(m, "reason"));
	if (!isnan(num(m, "change_rel")))
		fprintf(f, "; change %+.1f %%", num(m, "change_rel") * 100);
	if (ci)
		fprintf(f, " (%.0f %% interval %+.1f %% .. %+.1f %%)",
			num(m, "confidence") * 100,
			json_object_get_double(json_object_array_get_idx(ci, 0)) *
			100,
			json_object_get_double(json_object_array_get_idx(ci, 1)) *
			100);
	if (!isnan(num(m, "p_value")))
		fprintf(f, ", p = %.2g", num(m, "p_value"));
	if (get(m, "more_runs"))
		fprintf(f, "; run %" PRId64 " more a side",
			json_object_get_int64(get(m, "more_runs")));
	return fclose(f) ? -ENOMEM : 0;
}

/*
 * A test case's name: METRIC or METRIC[BLOCKER], as XML; when a byte had
 * to be replaced, " #" and the short hash of the name as it is in the
 * document follow, so names that differ stay apart. The name as written
 * (unescaped, for the set of names) into *@key, the caller's.
 */
static int case_name(jobj *m, FILE *out, char **key)
{
	size_t len;
	char *raw = NULL, hex[HASH_HEX + 1];
	FILE *f = open_memstream(&raw, &len), *k;
	bool lossy;

	*key = NULL;
	if (!f)
		return -ENOMEM;
	if (get(m, "blocker"))
		fprintf(f, "%s[%s]", str(m, "metric"), str(m, "blocker"));
	else
		fputs(str(m, "metric"), f);
	if (fclose(f))
		return -ENOMEM;
	k = open_memstream(key, &len);
	if (!k) {
		free(raw);
		return -ENOMEM;
	}
	lossy = xml(k, raw) || ends_hashed(raw, strlen(raw), " #");
	if (lossy) {
		short_hash(raw, hex);
		fprintf(k, " #%s", hex);
	}
	free(raw);
	if (fclose(k))
		return -ENOMEM;
	fputs(*key, out);	/* escaped already */
	return 0;
}

int ex_junit(jobj *c, FILE *out)
{
	static const char *const prov_keys[] = {
		"rig_name", "rig_config", "rig_sha256", "scenario",
		"scenario_sha256",
	};
	jobj *metrics = get(c, "metrics"), *prov = get(c, "provenance");
	size_t n = json_object_array_length(metrics), failures = 0, skipped = 0;
	jobj *seen;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		const char *v = str(json_object_array_get_idx(metrics, i),
				    "verdict");

		failures += !strcmp(v, "regressed");
		skipped += !strcmp(v, "inconclusive");
	}
	seen = json_object_new_object();
	if (!seen)
		return sbrig_set_error(-ENOMEM, "junit: out of memory");
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	      "  <testsuite name=\"sbrig compare: ", out);
	xml(out, *str(prov, "scenario") ? str(prov, "scenario") : "runs");
	fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
		"skipped=\"%zu\">\n    <properties>\n", n, failures, skipped);
	joined_property(out, "commit", get(get(c, "new"), "git_sha"));
	joined_property(out, "base_commit", get(get(c, "base"), "git_sha"));
	for (size_t i = 0; i < sizeof(prov_keys) / sizeof(prov_keys[0]); i++)
		property(out, "      ", prov_keys[i], str(prov, prov_keys[i]));
	property(out, "      ", "thresholds",
		 *str(get(c, "config"), "path") ? str(get(c, "config"), "path") :
		 "(built-in defaults)");
	property(out, "      ", "verdict", str(c, "verdict"));
	int_property(out, "      ", "base_runs", get(get(c, "base"), "n"));
	int_property(out, "      ", "new_runs", get(get(c, "new"), "n"));
	fputs("    </properties>\n", out);
	for (size_t i = 0; i < n && !ret; i++) {
		jobj *m = json_object_array_get_idx(metrics, i);
		const char *v = str(m, "verdict");
		char *key = NULL, *msg = NULL, what[48];

		fputs("    <testcase classname=\"sbrig.compare\" name=\"", out);
		ret = case_name(m, out, &key);
		snprintf(what, sizeof(what), "metrics[%zu]", i);
		if (!ret)
			ret = name_unique(seen, key, what, "junit");
		free(key);
		fputs("\" time=\"0\">\n", out);
		if (!ret && message(m, &msg))
			ret = -ENOMEM;
		if (!ret && (!strcmp(v, "regressed") ||
			     !strcmp(v, "inconclusive"))) {
			fprintf(out, "      <%s message=\"",
				*v == 'r' ? "failure type=\"regressed\"" :
				"skipped");
			xml(out, msg);
			fputs("\"/>\n", out);
		}
		/* the message, then the figures, one "key: value" a line */
		fputs("      <system-out>", out);
		if (!ret)
			xml(out, msg);
		fputs("&#10;verdict: ", out);
		xml(out, v);
		fputs("&#10;unit: ", out);
		xml(out, str(m, "unit"));
		num_line(out, "base_median", get(get(m, "base"), "median"));
		num_line(out, "new_median", get(get(m, "new"), "median"));
		num_line(out, "change_rel", get(m, "change_rel"));
		num_line(out, "p_value", get(m, "p_value"));
		fputs("</system-out>\n", out);
		free(msg);
		fputs("    </testcase>\n", out);
	}
	json_object_put(seen);
	if (ret == -ENOMEM)
		return sbrig_set_error(-ENOMEM, "junit: out of memory");
	if (ret)
		return ret;
	fputs("  </testsuite>\n</testsuites>\n", out);
	return ferror(out) ? sbrig_set_error(-ENOMEM, "junit: out of memory") : 0;
}

/* ---- LAVA ------------------------------------------------------------------- */

static bool lava_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
}

/*
 * The LAVA name of the figure whose full name is @full: @full itself when
 * it is a LAVA name of at most LAVA_NAME_MAX characters (that does not
 * end like a hashed one); else its first characters with every other
 * byte as '_', then '-' and the short hash of @full.
 */
static void lava_name(char buf[LAVA_NAME_MAX + 1], const char *full)
{
	size_t n = strlen(full), keep;
	bool lossy = n > LAVA_NAME_MAX || ends_hashed(full, n, "-");
	char hex[HASH_HEX + 1];

	for (size_t i = 0; i < n && !lossy; i++)
		lossy = !lava_name_char(full[i]);
	if (!lossy) {
		memcpy(buf, full, n + 1);
		return;
	}
	keep = n < LAVA_NAME_MAX - HASH_HEX - 1 ? n :
	       LAVA_NAME_MAX - HASH_HEX - 1;
	for (size_t i = 0; i < keep; i++)
		buf[i] = lava_name_char(full[i]) ? full[i] : '_';
	short_hash(full, hex);
	snprintf(buf + keep, LAVA_NAME_MAX + 1 - keep, "-%s", hex);
}

/* Units: [A-Za-z0-9_%/.-], every other byte '_', at most 100, "none" for "" */
static void lava_units(char buf[LAVA_UNITS_MAX + 1], const char *u)
{
	size_t i;

	for (i = 0; u[i] && i < LAVA_UNITS_MAX; i++)
		buf[i] = lava_name_char(u[i]) || u[i] == '%' || u[i] == '/' ?
			 u[i] : '_';
	buf[i] = '\0';
	if (!i)
		strcpy(buf, "none");
}

/*
 * struct lava - the lines being written
 * @out: where
 * @seen: the names written so far (name -> what gave it)
 */
struct lava {
	FILE *out;
	jobj *seen;
};

/*
 * One line for the figure named @a (and @b: "A_B"), @what in the
 * document; the measurement is left out when it is not finite or does
 * not fit lava-server's column.
 */
static int lava(struct lava *l, const char *a, const char *b,
		const char *what, const char *result, double x,
		const char *units)
{
	char name[LAVA_NAME_MAX + 1], u[LAVA_UNITS_MAX + 1];
	char *full = NULL;
	int ret;

	if (asprintf(&full, "%s%s%s", a, b && *b ? "_" : "",
		     b ? b : "") < 0)
		return sbrig_set_error(-ENOMEM, "lava: out of memory");
	lava_name(name, full);
	free(full);
	ret = name_unique(l->seen, name, what, "lava");
	if (ret)
		return ret;
	fprintf(l->out, "lava-test-case %s --result %s", name, result);
	if (fabs(x) < 0.0005)
		x = 0;		/* no "-0.000" */
	if (isfinite(x) && fabs(x) < LAVA_MEASUREMENT_MAX) {
		lava_units(u, units);
		fprintf(l->out, " --measurement %.*f --units %s",
			strcmp(units, "count") ? 3 : 0, x, u);
	}
	fputc('\n', l->out);
	return 0;
}

static size_t count_kind(jobj *f, const char *kind)
{
	size_t k = 0;

	for (size_t i = 0; i < json_object_array_length(f); i++)
		k += !strcmp(str(json_object_array_get_idx(f, i), "kind"), kind);
	return k;
}

static int lava_begin(struct lava *l, FILE *out)
{
	l->out = out;
	l->seen = json_object_new_object();
	return l->seen ? 0 : sbrig_set_error(-ENOMEM, "lava: out of memory");
}

static int lava_end(struct lava *l, int ret)
{
	json_object_put(l->seen);
	if (!ret && ferror(l->out))
		ret = sbrig_set_error(-ENOMEM, "lava: out of memory");
	return ret;
}

int ex_lava_report(jobj *r, FILE *out)
{
	jobj *e = get(r, "energy"), *lat = get(r, "latency");
	jobj *bl = get(r, "blockers"), *f = get(r, "findings");
	jobj *wk = get(r, "wakeups");
	size_t nw = json_object_array_length(wk);
	struct lava l;
	double s = 0;
	int ret;

	ret = lava_begin(&l, out);
	if (ret)
		return ret;
	ret = lava(&l, "energy_total", NULL, "energy.total_uJ", "pass",
		   num(e, "total_uJ") / 1e3, "mJ");
	ret = ret ?: lava(&l, "energy_suspended", NULL, "energy.suspended_uJ",
			  "pass", num(e, "suspended_uJ") / 1e3, "mJ");
	ret = ret ?: lava(&l, "energy_awake", NULL, "energy.awake_uJ", "pass",
			  num(e, "awake_uJ") / 1e3, "mJ");
	if (!ret && get(e, "baseline_uW"))
		ret = lava(&l, "baseline_power", NULL, "energy.baseline_uW",
			   "pass", num(e, "baseline_uW") / 1e3, "mW");
	for (size_t i = 0; i < nw; i++)
		s += num(json_object_array_get_idx(wk, i), "energy_uJ");
	if (!ret && nw) {
		ret = lava(&l, "energy_per_wakeup", NULL, "wakeups", "pass",
			   s / (double)nw / 1e3, "mJ");
		ret = ret ?: lava(&l, "wakeups", NULL, "wakeups", "pass",
				  (double)nw, "count");
	}
	if (!ret && num(lat, "n") > 0) {
		ret = lava(&l, "latency_median", NULL, "latency.median_ns",
			   "pass", num(lat, "median_ns") / 1e6, "ms");
		ret = ret ?: lava(&l, "latency_p95", NULL, "latency.p95_ns",
				  "pass", num(lat, "p95_ns") / 1e6, "ms");
	}
	for (size_t i = 0; !ret && i < json_object_array_length(bl); i++) {
		jobj *b = json_object_array_get_idx(bl, i);
		char what[48];

		snprintf(what, sizeof(what), "blockers[%zu]", i);
		ret = lava(&l, "blocker_energy", str(b, "name"), what, "pass",
			   num(b, "energy_uJ") / 1e3, "mJ");
	}
	ret = ret ?: lava(&l, "leaks", NULL, "findings",
			  count_kind(f, "leak") ? "fail" : "pass",
			  (double)count_kind(f, "leak"), "count");
	ret = ret ?: lava(&l, "aborted_suspends", NULL, "findings",
			  count_kind(f, "aborted_suspend") ? "fail" : "pass",
			  (double)count_kind(f, "aborted_suspend"), "count");
	return lava_end(&l, ret);
}

/* a verdict's LAVA result: regressed fails, inconclusive is skipped (the
 * runs cannot tell: not a failure of the build), the rest pass */
static const char *lava_result(const char *verdict)
{
	if (!strcmp(verdict, "regressed"))
		return "fail";
	return strcmp(verdict, "inconclusive") ? "pass" : "skip";
}

int ex_lava_compare(jobj *c, FILE *out)
{
	jobj *metrics = get(c, "metrics");
	size_t regressed = 0;
	struct lava l;
	int ret;

	ret = lava_begin(&l, out);
	for (size_t i = 0; !ret && i < json_object_array_length(metrics); i++) {
		jobj *m = json_object_array_get_idx(metrics, i);
		const char *v = str(m, "verdict");
		const char *result = lava_result(v);
		char *a = NULL, what[48];

		regressed += !strcmp(v, "regressed");
		if (asprintf(&a, "compare_%s", str(m, "metric")) < 0) {
			ret = sbrig_set_error(-ENOMEM, "lava: out of memory");
			break;
		}
		snprintf(what, sizeof(what), "metrics[%zu]", i);
		if (!strcmp(str(m, "metric"), "leak"))
			ret = lava(&l, a, str(m, "blocker"), what, result,
				   num(m, "change") * 100, "percent");
		else if (!isnan(num(m, "change_rel")))
			ret = lava(&l, a, str(m, "blocker"), what, result,
				   num(m, "change_rel") * 100, "percent");
		else
			ret = lava(&l, a, str(m, "blocker"), what, result,
				   num(m, "change"), str(m, "unit"));
		free(a);
	}
	ret = ret ?: lava(&l, "compare_verdict", NULL, "verdict",
			  lava_result(str(c, "verdict")), (double)regressed,
			  "count");
	return lava_end(&l, ret);
}
