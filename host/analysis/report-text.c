// SPDX-License-Identifier: GPL-2.0
/*
 * report-text.c - the report's headline as "key: value" lines, rendered
 * from report.json alone (what sbrig analyze and make demo print).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/analysis.h>
#include <sbrig/sbrig.h>


typedef struct json_object jobj;

static jobj *get(jobj *o, const char *k)
{
	jobj *v = NULL;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static double num(jobj *o, const char *k)
{
	return json_object_get_double(get(o, k));
}

static int64_t i64(jobj *o, const char *k)
{
	return json_object_get_int64(get(o, k));
}

static const char *str(jobj *o, const char *k)
{
	const char *s = json_object_get_string(get(o, k));

	return s ? s : "";
}

/*
 * @o's text @k for a terminal: control bytes (a newline that would fake a
 * line of its own, ESC that would drive the terminal) and '\' escaped as
 * capture-format.md escapes text columns (\n, \t, \r, \xHH, \\).
 * Cut to fit @n (at least 5).
 */
static const char *tx(jobj *o, const char *k, char *buf, size_t n)
{
	const unsigned char *s = (const unsigned char *)str(o, k);
	size_t w = 0;

	for (; *s && w + 5 < n; s++) {
		unsigned char c = *s;

		if (c == '\\' || c == '\n' || c == '\t' || c == '\r')
			w += (size_t)snprintf(buf + w, n - w, "\\%c",
					      c == '\n' ? 'n' : c == '\t' ? 't' :
					      c == '\r' ? 'r' : '\\');
		else if (c < 0x20 || c == 0x7f)
			w += (size_t)snprintf(buf + w, n - w, "\\x%02x", c);
		else
			buf[w++] = (char)c;
	}
	buf[w] = '\0';
	return buf;
}

/* room for an escaped name or detail (4 bytes a byte at worst) */
#define TX_MAX	(4 * 512 + 8)

/* Load @path as a report of a version this code reads. */
static jobj *load(const char *path)
{
	jobj *r = json_object_from_file(path);

	if (!r) {
		sbrig_set_error(-EINVAL, "%s: not JSON: %s", path,
				json_util_get_last_err());
		return NULL;
	}
	if (strcmp(str(r, "schema"), SBRIG_REPORT_SCHEMA) ||
	    i64(r, "version") != SBRIG_REPORT_VERSION) {
		sbrig_set_error(-EINVAL, "%s: schema: expected \"%s\" version "
				"%d, got \"%s\" version %" PRId64, path,
				SBRIG_REPORT_SCHEMA, SBRIG_REPORT_VERSION,
				str(r, "schema"), i64(r, "version"));
		json_object_put(r);
		return NULL;
	}
	return r;
}

/* An ip: sensor's clock mapped to ours: how well (report-format.md). */
static void sensor_clock(FILE *out, jobj *sc)
{
	if (!sc || strcmp(str(sc, "clock"), "remote"))
		return;
	fprintf(out, "sensor_clock: remote, ");
	if (get(sc, "drift_ppb"))
		fprintf(out, "drift %+.3f ppm", (double)i64(sc, "drift_ppb") / 1000);
	else
		fprintf(out, "drift not known (under 20 s of samples)");
	fprintf(out, ", uncertainty %.3f ms\n",
		(double)i64(sc, "uncert_ns") / 1e6);
}

/*
 * The target clock's fit: how far its exchanges lie from it (the
 * alignment error every mapped time keeps), and what it left out.
 */
static void target_clock(FILE *out, jobj *ck)
{
	jobj *rs = get(ck, "residuals");
	const char *kind[2] = { "ping", "marker" };

	if (!rs)
		return;
	fprintf(out, "clock: %" PRId64 " segment(s); residuals:",
		i64(ck, "segments"));
	for (int i = 0; i < 2; i++) {
		jobj *o = get(rs, kind[i]);

		if (!i64(o, "count")) {
			fprintf(out, " %s none;", kind[i]);
			continue;
		}
		fprintf(out, " %s median %.3f ms, p95 %.3f ms (%" PRId64 ");",
			kind[i], (double)i64(o, "median_ns") / 1e6,
			(double)i64(o, "p95_ns") / 1e6, i64(o, "count"));
	}
	fprintf(out, " left out: %" PRId64 " spike(s), %" PRId64
		" outlier(s); drift clamped in %" PRId64 " segment(s)\n",
		i64(ck, "spikes_rejected"), i64(ck, "outliers_rejected"),
		i64(ck, "drift_clamped_segments"));
}

int sbrig_report_render_text(const char *json_path, FILE *out)
{
	jobj *r = load(json_path), *c, *e, *bl, *f, *lat, *un;
	char t1[TX_MAX], t2[TX_MAX], t3[TX_MAX];
	double total, dur_s;

	if (!r)
		return -EINVAL;
	c = get(r, "capture");
	e = get(r, "energy");
	dur_s = (double)i64(c, "duration_ns") / 1e9;
	fprintf(out, "capture: %s (%s, %.3f s, %" PRId64 " samples, %" PRId64
		" gaps)\n", tx(c, "path", t1, sizeof(t1)),
		tx(c, "status", t2, sizeof(t2)), dur_s,
		i64(c, "samples"), i64(c, "gaps"));
	target_clock(out, get(c, "clock"));
	sensor_clock(out, get(get(c, "clock"), "sensor"));
	f = get(r, "findings");
	for (size_t i = 0; i < json_object_array_length(f); i++) {
		jobj *x = json_object_array_get_idx(f, i);

		fprintf(out, "finding: %s%s%s: %s\n",
			tx(x, "kind", t1, sizeof(t1)),
			get(x, "blocker") ? ": " : "",
			tx(x, "blocker", t2, sizeof(t2)),
			tx(x, "detail", t3, sizeof(t3)));
	}
	total = num(e, "total_uJ");
	fprintf(out, "energy_total: %.3f mJ in %.3f s (mean %.3f mW)\n",
		total / 1000, dur_s, dur_s > 0 ? total / 1000 / dur_s : 0);
	fprintf(out, "energy_suspended: %.3f mJ in %.3f s", num(e,
		"suspended_uJ") / 1000, (double)i64(e, "suspended_ns") / 1e9);
	if (get(e, "baseline_uW"))
		fprintf(out, " (baseline %.3f mW)", num(e, "baseline_uW") / 1000);
	fprintf(out, "\n");
	fprintf(out, "energy_awake: %.3f mJ in %.3f s", num(e, "awake_uJ") /
		1000, (double)i64(e, "awake_ns") / 1e9);
	if (i64(e, "transition_ns") > 0)
		fprintf(out, " (%.3f s of it while the log said suspended)",
			(double)i64(e, "transition_ns") / 1e9);
	fprintf(out, "\n");
	bl = get(r, "blockers");
	for (size_t i = 0; i < json_object_array_length(bl); i++) {
		jobj *b = json_object_array_get_idx(bl, i);

		fprintf(out, "blocker: %s: %.3f mJ (exclusive %.3f mJ), %"
			PRId64 " activation(s), %.3f s active\n",
			tx(b, "name", t1, sizeof(t1)),
			num(b, "energy_uJ") / 1000,
			num(b, "exclusive_energy_uJ") / 1000,
			i64(b, "activations"),
			(double)i64(b, "active_ns") / 1e9);
	}
	un = get(r, "unattributed");
	fprintf(out, "unattributed: %.3f mJ in %.3f s awake with no blocker\n",
		num(un, "energy_uJ") / 1000, (double)i64(un, "awake_ns") / 1e9);
	lat = get(r, "latency");
	if (i64(lat, "n"))
		fprintf(out, "latency: n=%" PRId64 " min %.3f ms, median %.3f "
			"ms, p95 %.3f ms, max %.3f ms\n", i64(lat, "n"),
			(double)i64(lat, "min_ns") / 1e6,
			(double)i64(lat, "median_ns") / 1e6,
			(double)i64(lat, "p95_ns") / 1e6,
			(double)i64(lat, "max_ns") / 1e6);
	else
		fprintf(out, "latency: no wakeup by the rig in this capture\n");
	json_object_put(r);
	return ferror(out) ? sbrig_set_error(-EIO, "writing the summary") : 0;
}
