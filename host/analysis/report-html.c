// SPDX-License-Identifier: GPL-2.0
/*
 * report-html.c - report.html from report.json (sbrig_report_render_html).
 *
 * The page is rendered from report.json alone (never from a capture) into
 * one self-contained file that opens from disk with no network:
 *
 *   <style>   dygraphs' stylesheet, then the page's (assets/report.css)
 *   <script type="application/json" id="sbrig-report">   the report
 *   <script>  dygraphs (Debian's libjs-dygraphs, read when rendering)
 *   <script>  the page (assets/report.js), which builds the DOM and the
 *             charts from the inlined report
 *
 * Three steps, each finished before the next starts:
 *
 * 1. Load and check. The file is parsed with json-c (strict JSON, valid
 *    UTF-8) and walked against report_fields[], a table of every field
 *    the page reads with its type; `schema` and `version` are checked
 *    first, so a file that is no report of this version says so. The
 *    first mismatch fails with -EINVAL and names the field by its path
 *    ("blockers[2].energy_uJ: expected a number, got a string").
 *
 * 2. Pack the trace. A one-hour capture's trace is mostly numbers (three
 *    envelope levels of up to 200 000 buckets and up to 500 000 raw
 *    samples): as JSON text with full-precision doubles it alone can pass
 *    10 MB. The page does not need the text, so the bulk arrays are
 *    replaced by base64 strings of little-endian binary, and the rest of
 *    the report is inlined as it was parsed. trace.packed = 1 tells the
 *    page; the packed shape is
 *
 *      levels[i]: { bucket_ns, t0_ns, n, min, max, mean }
 *                 min/max/mean: n float32, NaN for a null bucket
 *      raw[i]:    { t0_ns, n, dt_ns, power_uW }
 *                 dt_ns: n uint32, the first 0, each the distance to the
 *                 previous sample; power_uW: n float32
 *             or  { t0_ns, n, dt_base_ns, dt16, power_uW }
 *                 when all distances are within 65535 ns of the smallest,
 *                 dt_base_ns: that one; dt16: n - 1 uint16, each
 *                 distance minus dt_base_ns (a steady rate: 2 bytes a
 *                 sample instead of 4)
 *
 *    A raw window is cut into several where two samples are more than
 *    2^32-1 ns apart (float32 keeps 7 significant digits: 0.1 uW of
 *    1 W). The packed values are checked as they are packed: parallel
 *    arrays of equal length, sample times that never go back, spans that
 *    do not end before they start.
 *
 * 3. Write. The page is assembled in memory, with every "<" of the JSON
 *    written as \u003c (it can only occur inside JSON strings, so the
 *    text cannot close its <script> element), then written to a temporary
 *    file next to @html_path, fsync'd and renamed over it: a failure
 *    leaves the old file (or none), never half a page.
 *
 * dygraphs is looked for in SBRIG_DYGRAPHS_DIR when that is set, else in
 * /usr/share/javascript/dygraphs (dygraph.min.js, else dygraph.js, and
 * the matching .css).
 *
 * Not thread-safe only in that sbrig_errmsg() is per thread; no globals.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include <sbrig/analysis.h>
#include <sbrig/sbrig.h>

#include "atomic.h"
#include "report-html.h"

#define DYGRAPHS_DIR "/usr/share/javascript/dygraphs"
/* a report.json larger than this is refused (a 1 h capture's: a few MB) */
#define REPORT_MAX_BYTES ((size_t)1 << 30)
#define JSON_MAX_DEPTH 64
#define PATH_BUF 256

/* ---- a growable byte buffer with a sticky error ------------------------ */

struct buf {
	char *p;
	size_t len, cap;
	int err;	/* the first -errno; later adds do nothing */
};

static void buf_add(struct buf *b, const void *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1) {
			if (cap > SIZE_MAX / 2) {
				b->err = -ENOMEM;
				return;
			}
			cap *= 2;
		}
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Text for an HTML element or attribute value. */
static void buf_html(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': buf_puts(b, "&amp;"); break;
		case '<': buf_puts(b, "&lt;"); break;
		case '>': buf_puts(b, "&gt;"); break;
		case '"': buf_puts(b, "&quot;"); break;
		default: buf_add(b, s, 1);
		}
	}
}

/*
 * Where @s (a script or stylesheet of @n bytes) ends without its last line
 * when that line is a source map reference ("//# sourceMappingURL=..." in
 * a script, the same in a comment in a stylesheet): the map is not
 * inlined, so the page
 * must not point at it.
 */
static size_t strip_source_map(const char *s, size_t n)
{
	size_t end = n, line;

	while (end && strchr(" \t\r\n", s[end - 1]))
		end--;
	for (line = end; line && s[line - 1] != '\n'; line--)
		;
	if (end - line > 21 && (!strncmp(s + line, "//# sourceMappingURL=", 21) ||
				!strncmp(s + line, "/*# sourceMappingURL=", 21)))
		return line;
	return n;
}

/*
 * Script or style text inlined verbatim, except the two sequences that
 * would end its element early or start an HTML comment inside it
 * ("</script", "</style", "<!--", any case): written as "<\/script",
 * "<\/style" and "<\!--", which mean the same inside a JavaScript string,
 * where they occur in a script.
 */
static void buf_script(struct buf *b, const char *s, size_t n)
{
	const char *end = s + strip_source_map(s, n);

	while (s < end) {
		const char *lt = memchr(s, '<', (size_t)(end - s));

		if (!lt) {
			buf_add(b, s, (size_t)(end - s));
			break;
		}
		buf_add(b, s, (size_t)(lt - s) + 1);
		s = lt + 1;
		if ((end - s >= 7 && !strncasecmp(s, "/script", 7)) ||
		    (end - s >= 6 && !strncasecmp(s, "/style", 6)) ||
		    (end - s >= 3 && !strncmp(s, "!--", 3)))
			buf_puts(b, "\\");
	}
}

/* ---- base64 of little-endian binary ------------------------------------ */

static char *base64(const unsigned char *in, size_t n, size_t *outlen)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t len = (n + 2) / 3 * 4, i, o = 0;
	char *out = malloc(len + 1);

	if (!out)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];

		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void put_f32(unsigned char *p, double d)
{
	float f = (float)d;
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	put_le32(p, v);
}

/* A JSON string of @bytes as base64; NULL on ENOMEM. */
static struct json_object *b64_string(const unsigned char *bytes, size_t n)
{
	struct json_object *s;
	size_t len;
	char *b = base64(bytes, n, &len);

	if (!b)
		return NULL;
	s = json_object_new_string_len(b, (int)len);
	free(b);
	return s;
}

/* ---- the schema: every field the page reads, with its type -------------- */

enum jtype { J_OBJ, J_ARR, J_MAP, J_STR, J_INT, J_NUM, J_BOOL };

#define J_NULL 0x1	/* may be null */
#define J_OPT 0x2	/* may be absent */

/**
 * struct jfield - one field of report.json
 * @name: its key (unused for an array's or a map's element)
 * @type: what it must be; J_NUM is an integer or a fraction, J_MAP an
 *	object with any keys whose values are all @sub[0]
 * @flags: J_NULL, J_OPT
 * @len: J_ARR: the exact number of elements (0: any)
 * @sub: J_OBJ: its fields, up to one with a NULL @name; J_ARR, J_MAP: the
 *	element (@sub[0]); fields not in the table are ignored
 */
struct jfield {
	const char *name;
	unsigned char type, flags;
	unsigned short len;
	const struct jfield *sub;
};

static const struct jfield e_int[] = { { "", J_INT, 0, 0, NULL } };
static const struct jfield e_str[] = { { "", J_STR, 0, 0, NULL } };
static const struct jfield e_str_null[] = { { "", J_STR, J_NULL, 0, NULL } };
static const struct jfield e_num[] = { { "", J_NUM, 0, 0, NULL } };
static const struct jfield e_num_null[] = { { "", J_NUM, J_NULL, 0, NULL } };
static const struct jfield e_span[] = { { "", J_ARR, 0, 2, e_int } };

static const struct jfield f_clock[] = {
	{ "segments", J_INT, J_OPT, 0, NULL },
	{ "max_uncert_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_target[] = { { "", J_MAP, 0, 0, e_str_null } };

static const struct jfield f_capture[] = {
	{ "path", J_STR, 0, 0, NULL },
	{ "status", J_STR, 0, 0, NULL },
	{ "format_version", J_INT, J_OPT, 0, NULL },
	{ "start_ns", J_INT, 0, 0, NULL },
	{ "end_ns", J_INT, 0, 0, NULL },
	{ "duration_ns", J_INT, 0, 0, NULL },
	{ "samples", J_INT, 0, 0, NULL },
	{ "gaps", J_INT, 0, 0, NULL },
	{ "missing_samples", J_INT, 0, 0, NULL },
	{ "events", J_INT, J_OPT, 0, NULL },
	{ "unmapped_events", J_INT, J_OPT, 0, NULL },
	{ "skipped_events", J_MAP, J_OPT, 0, e_int },
	{ "provenance", J_MAP, J_OPT, 0, e_str_null },
	{ "targets", J_ARR, J_OPT, 0, e_target },
	{ "clock", J_OBJ, J_OPT, 0, f_clock },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield f_energy[] = {
	{ "total_uJ", J_NUM, 0, 0, NULL },
	{ "suspended_uJ", J_NUM, 0, 0, NULL },
	{ "awake_uJ", J_NUM, 0, 0, NULL },
	{ "suspended_ns", J_INT, 0, 0, NULL },
	{ "awake_ns", J_INT, 0, 0, NULL },
	{ "baseline_uW", J_NUM, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield f_stats_check[] = {
	{ "snapshots", J_INT, J_OPT, 0, NULL },
	{ "count_delta", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "events_count", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "total_time_delta_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "events_active_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "max_time_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "agree", J_BOOL, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield f_blocker[] = {
	{ "name", J_STR, 0, 0, NULL },
	{ "kind", J_STR, 0, 0, NULL },
	{ "activations", J_INT, 0, 0, NULL },
	{ "active_ns", J_INT, 0, 0, NULL },
	{ "max_active_ns", J_INT, 0, 0, NULL },
	{ "energy_uJ", J_NUM, 0, 0, NULL },
	{ "exclusive_energy_uJ", J_NUM, 0, 0, NULL },
	{ "above_baseline_uJ", J_NUM, J_NULL, 0, NULL },
	{ "active_at_end", J_BOOL, J_OPT, 0, NULL },
	{ "stats_check", J_OBJ, J_OPT | J_NULL, 0, f_stats_check },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_blocker[] = { { "", J_OBJ, 0, 0, f_blocker } };

static const struct jfield f_unattributed[] = {
	{ "awake_ns", J_INT, 0, 0, NULL },
	{ "energy_uJ", J_NUM, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield f_gap[] = {
	{ "t_ns", J_INT, 0, 0, NULL },
	{ "duration_ns", J_INT, 0, 0, NULL },
	{ "missing", J_INT, 0, 0, NULL },
	{ "declared", J_BOOL, 0, 0, NULL },
	{ "hidden_min_uJ", J_NUM, 0, 0, NULL },
	{ "hidden_max_uJ", J_NUM, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_gap[] = { { "", J_OBJ, 0, 0, f_gap } };

static const struct jfield f_wakeup[] = {
	{ "stimulus", J_STR, 0, 0, NULL },
	{ "t_ns", J_INT, 0, 0, NULL },
	{ "resume_t_ns", J_INT, 0, 0, NULL },
	{ "marker_t_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "latency_ns", J_INT, 0, 0, NULL },
	{ "uncert_ns", J_INT, 0, 0, NULL },
	{ "latency_from", J_STR, J_OPT, 0, NULL },
	{ "awake_ns", J_INT, 0, 0, NULL },
	{ "energy_uJ", J_NUM, 0, 0, NULL },
	{ "blockers", J_ARR, 0, 0, e_str },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_wakeup[] = { { "", J_OBJ, 0, 0, f_wakeup } };

/* with n = 0 the figures are 0 (analysis.h) or, as the page takes it, null */
static const struct jfield f_latency[] = {
	{ "n", J_INT, 0, 0, NULL },
	{ "min_ns", J_INT, J_NULL, 0, NULL },
	{ "median_ns", J_INT, J_NULL, 0, NULL },
	{ "p95_ns", J_INT, J_NULL, 0, NULL },
	{ "max_ns", J_INT, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

/* phases[]: one per suspend/resume cycle, its phases in order */
static const struct jfield f_phase[] = {
	{ "name", J_STR, 0, 0, NULL },
	{ "t_ns", J_INT, 0, 0, NULL },
	{ "duration_ns", J_INT, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_phase[] = { { "", J_OBJ, 0, 0, f_phase } };
static const struct jfield f_cycle[] = {
	{ "cycle", J_INT, 0, 0, NULL },
	{ "phases", J_ARR, 0, 0, e_phase },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_cycle[] = { { "", J_OBJ, 0, 0, f_cycle } };

static const struct jfield f_finding[] = {
	{ "kind", J_STR, 0, 0, NULL },
	{ "blocker", J_STR, J_NULL, 0, NULL },
	{ "t_ns", J_INT, J_NULL, 0, NULL },
	{ "detail", J_STR, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_finding[] = { { "", J_OBJ, 0, 0, f_finding } };

static const struct jfield f_level[] = {
	{ "bucket_ns", J_INT, 0, 0, NULL },
	{ "t0_ns", J_INT, 0, 0, NULL },
	{ "min", J_ARR, 0, 0, e_num_null },
	{ "max", J_ARR, 0, 0, e_num_null },
	{ "mean", J_ARR, 0, 0, e_num_null },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_level[] = { { "", J_OBJ, 0, 0, f_level } };
static const struct jfield f_raw[] = {
	{ "t_ns", J_ARR, 0, 0, e_int },
	{ "power_uW", J_ARR, 0, 0, e_num },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_raw[] = { { "", J_OBJ, 0, 0, f_raw } };
static const struct jfield f_row[] = {
	{ "name", J_STR, 0, 0, NULL },
	{ "spans", J_ARR, 0, 0, e_span },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_row[] = { { "", J_OBJ, 0, 0, f_row } };
static const struct jfield f_state[] = {
	{ "state", J_STR, 0, 0, NULL },
	{ "spans", J_ARR, 0, 0, e_span },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_state[] = { { "", J_OBJ, 0, 0, f_state } };
static const struct jfield f_trace[] = {
	{ "unit", J_STR, 0, 0, NULL },
	{ "levels", J_ARR, 0, 0, e_level },
	{ "raw", J_ARR, 0, 0, e_raw },
	{ "timeline", J_ARR, 0, 0, e_row },
	{ "states", J_ARR, 0, 0, e_state },
	{ NULL, 0, 0, 0, NULL },
};

static const struct jfield report_fields[] = {
	{ "schema", J_STR, 0, 0, NULL },
	{ "version", J_INT, 0, 0, NULL },
	{ "generator", J_STR, J_OPT, 0, NULL },
	{ "capture", J_OBJ, 0, 0, f_capture },
	{ "energy", J_OBJ, 0, 0, f_energy },
	{ "blockers", J_ARR, 0, 0, e_blocker },
	{ "unattributed", J_OBJ, 0, 0, f_unattributed },
	{ "gaps", J_ARR, 0, 0, e_gap },
	{ "wakeups", J_ARR, 0, 0, e_wakeup },
	{ "unknown_wake_count", J_INT, 0, 0, NULL },
	{ "latency", J_OBJ, 0, 0, f_latency },
	{ "phases", J_ARR, 0, 0, e_cycle },
	{ "findings", J_ARR, 0, 0, e_finding },
	{ "trace", J_OBJ, 0, 0, f_trace },
	{ NULL, 0, 0, 0, NULL },
};

/* ---- checking ------------------------------------------------------------ */

/* @o's @key; NULL when absent or null */
static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* A field's path as the messages name it: "blockers[2].energy_uJ". */
struct jpath {
	char s[PATH_BUF];
	size_t len;
};

static size_t path_push(struct jpath *p, const char *fmt, ...)
	SBRIG_PRINTF(2, 3);

static size_t path_push(struct jpath *p, const char *fmt, ...)
{
	size_t old = p->len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p->s + p->len, sizeof(p->s) - p->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		p->len = p->len + (size_t)n < sizeof(p->s) ?
			 p->len + (size_t)n : sizeof(p->s) - 1;
	return old;
}

static void path_pop(struct jpath *p, size_t old)
{
	p->len = old;
	p->s[old] = '\0';
}

static const char *jtype_name(enum json_type t)
{
	switch (t) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a fraction";
	case json_type_int: return "an integer";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "something else";
}

/*
 * What @v is, for a message. json-c reads NaN and [-]Infinity even in
 * strict mode; JSON has neither, so they are named as they were written.
 */
static const char *got(struct json_object *v)
{
	if (json_object_is_type(v, json_type_double) &&
	    !isfinite(json_object_get_double(v)))
		return json_object_get_string(v);
	return jtype_name(json_object_get_type(v));
}

static bool type_ok(struct json_object *v, unsigned char type)
{
	enum json_type t = json_object_get_type(v);

	if (t == json_type_double && !isfinite(json_object_get_double(v)))
		return false;

	switch (type) {
	case J_OBJ:
	case J_MAP:
		return t == json_type_object;
	case J_ARR:
		return t == json_type_array;
	case J_STR:
		return t == json_type_string;
	case J_INT:
		return t == json_type_int;
	case J_NUM:
		return t == json_type_int || t == json_type_double;
	case J_BOOL:
		return t == json_type_boolean;
	}
	return false;
}

static const char *const want_name[] = {
	[J_OBJ] = "an object", [J_ARR] = "an array", [J_MAP] = "an object",
	[J_STR] = "a string", [J_INT] = "an integer (ns, counts)",
	[J_NUM] = "a number", [J_BOOL] = "a boolean",
};

static int check_value(struct json_object *v, const struct jfield *f,
		       struct jpath *p);

static int check_object(struct json_object *obj, const struct jfield *fields,
			struct jpath *p)
{
	for (const struct jfield *f = fields; f->name; f++) {
		struct json_object *v;
		size_t old = path_push(p, "%s%s", p->len ? "." : "", f->name);
		int ret = 0;

		if (!json_object_object_get_ex(obj, f->name, &v)) {
			if (!(f->flags & J_OPT))
				ret = sbrig_set_error(-EINVAL,
						      "field '%s': missing", p->s);
		} else {
			ret = check_value(v, f, p);
		}
		path_pop(p, old);
		if (ret)
			return ret;
	}
	return 0;
}

static int check_value(struct json_object *v, const struct jfield *f,
		       struct jpath *p)
{
	if (!v) {	/* json-c's null */
		if (f->flags & J_NULL)
			return 0;
		return sbrig_set_error(-EINVAL,
				       "field '%s': expected %s, got null",
				       p->s, want_name[f->type]);
	}
	if (!type_ok(v, f->type))
		return sbrig_set_error(-EINVAL, "field '%s': expected %s, got %s",
				       p->s, want_name[f->type], got(v));
	if (f->type == J_OBJ)
		return check_object(v, f->sub, p);
	if (f->type == J_ARR) {
		size_t n = json_object_array_length(v);

		if (f->len && n != f->len)
			return sbrig_set_error(-EINVAL,
				"field '%s': expected %u elements, got %zu",
				p->s, f->len, n);
		for (size_t i = 0; i < n; i++) {
			size_t old = path_push(p, "[%zu]", i);
			int ret = check_value(json_object_array_get_idx(v, i),
					      f->sub, p);

			path_pop(p, old);
			if (ret)
				return ret;
		}
	}
	if (f->type == J_MAP) {
		json_object_object_foreach(v, key, val) {
			size_t old = path_push(p, ".%s", key);
			int ret = check_value(val, f->sub, p);

			path_pop(p, old);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* schema and version first: a file that is no report says just that */
static int check_report(struct json_object *root)
{
	struct jpath p = { .s = "", .len = 0 };
	struct json_object *v;
	const char *schema;
	int64_t version;
	int ret;

	if (!json_object_is_type(root, json_type_object))
		return sbrig_set_error(-EINVAL, "not a report: expected an "
				       "object, got %s", got(root));
	if (!json_object_object_get_ex(root, "schema", &v))
		return sbrig_set_error(-EINVAL, "field 'schema': missing (not "
				       "an %s file)", SBRIG_REPORT_SCHEMA);
	if (!json_object_is_type(v, json_type_string))
		return sbrig_set_error(-EINVAL, "field 'schema': expected a "
				       "string, got %s", got(v));
	schema = json_object_get_string(v);
	if (strcmp(schema, SBRIG_REPORT_SCHEMA))
		return sbrig_set_error(-EINVAL, "field 'schema': \"%.64s\" is "
				       "not \"%s\"", schema,
				       SBRIG_REPORT_SCHEMA);
	if (!json_object_object_get_ex(root, "version", &v))
		return sbrig_set_error(-EINVAL, "field 'version': missing");
	if (!json_object_is_type(v, json_type_int))
		return sbrig_set_error(-EINVAL, "field 'version': expected an "
				       "integer, got %s", got(v));
	version = json_object_get_int64(v);
	if (version != SBRIG_REPORT_VERSION)
		return sbrig_set_error(-EINVAL, "field 'version': %" PRId64
				       " is not supported (this sbrig renders "
				       "version %d)", version,
				       SBRIG_REPORT_VERSION);
	ret = check_object(root, report_fields, &p);
	if (ret)
		return ret;
	v = get(get(root, "trace"), "unit");
	if (strcmp(json_object_get_string(v), "uW"))
		return sbrig_set_error(-EINVAL, "field 'trace.unit': \"%.16s\" "
				       "is not \"uW\"", json_object_get_string(v));
	return 0;
}

/* ---- packing the trace ---------------------------------------------------- */

/* Replace @key of @o by a base64 string; 0 or -ENOMEM. */
static int put_b64(struct json_object *o, const char *key,
		   const unsigned char *bytes, size_t n)
{
	struct json_object *s = b64_string(bytes, n);

	if (!s || json_object_object_add(o, key, s)) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

static int pack_level(struct json_object *lv, size_t idx)
{
	static const char *const keys[] = { "min", "max", "mean" };
	size_t n = json_object_array_length(get(lv, "min"));
	unsigned char *bytes;
	int ret = 0;

	if (json_object_get_int64(get(lv, "bucket_ns")) <= 0)
		return sbrig_set_error(-EINVAL, "field 'trace.levels[%zu]."
				       "bucket_ns': not positive", idx);
	for (size_t k = 1; k < 3; k++) {
		size_t m = json_object_array_length(get(lv, keys[k]));

		if (m != n)
			return sbrig_set_error(-EINVAL, "field 'trace.levels"
					       "[%zu].%s': %zu values, min has "
					       "%zu", idx, keys[k], m, n);
	}
	bytes = malloc(n ? n * 4 : 1);
	if (!bytes)
		return -ENOMEM;
	for (size_t k = 0; k < 3 && !ret; k++) {
		struct json_object *arr = get(lv, keys[k]);

		for (size_t i = 0; i < n; i++) {
			struct json_object *v = json_object_array_get_idx(arr, i);

			put_f32(bytes + 4 * i, v ? json_object_get_double(v) : NAN);
		}
		ret = put_b64(lv, keys[k], bytes, n * 4);
	}
	free(bytes);
	if (!ret && json_object_object_add(lv, "n",
					   json_object_new_int64((int64_t)n)))
		ret = -ENOMEM;
	return ret;
}

/*
 * One packed raw segment: samples [from, to) of @t, @pw into @out. The
 * distances between samples are uint32, or, when they all lie within
 * 65535 ns of the smallest (a steady sample rate), that smallest one
 * (dt_base_ns) and uint16 offsets from it: 2 bytes a sample instead of 4.
 */
static int pack_segment(struct json_object *out, struct json_object *t,
			struct json_object *pw, size_t from, size_t to,
			unsigned char *dt, unsigned char *pbytes)
{
	struct json_object *seg = json_object_new_object();
	int64_t t0 = json_object_get_int64(json_object_array_get_idx(t, from));
	int64_t prev = t0, dmin = INT64_MAX, dmax = 0;
	size_t n = to - from;
	bool narrow;
	int ret = -ENOMEM;

	if (!seg)
		return -ENOMEM;
	for (size_t i = from; i < to; i++) {
		int64_t ti = json_object_get_int64(json_object_array_get_idx(t, i));

		if (i > from) {
			dmin = ti - prev < dmin ? ti - prev : dmin;
			dmax = ti - prev > dmax ? ti - prev : dmax;
		}
		put_le32(dt + 4 * (i - from), (uint32_t)(ti - prev));
		put_f32(pbytes + 4 * (i - from),
			json_object_get_double(json_object_array_get_idx(pw, i)));
		prev = ti;
	}
	narrow = n > 1 && dmax - dmin <= 0xffff;
	if (narrow)	/* in place: offset k (2 bytes) from dt k + 1 (4) */
		for (size_t k = 0; k + 1 < n; k++) {
			const unsigned char *d = dt + 4 * (k + 1);
			uint32_t v = (uint32_t)d[0] | (uint32_t)d[1] << 8 |
				     (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
			uint32_t off = v - (uint32_t)dmin;

			dt[2 * k] = (unsigned char)off;
			dt[2 * k + 1] = (unsigned char)(off >> 8);
		}
	if (json_object_object_add(seg, "t0_ns", json_object_new_int64(t0)) ||
	    json_object_object_add(seg, "n", json_object_new_int64((int64_t)n)))
		goto fail;
	if (narrow ? json_object_object_add(seg, "dt_base_ns",
					    json_object_new_int64(dmin)) ||
		     put_b64(seg, "dt16", dt, 2 * (n - 1))
		   : put_b64(seg, "dt_ns", dt, 4 * n))
		goto fail;
	if (put_b64(seg, "power_uW", pbytes, 4 * n) ||
	    json_object_array_add(out, seg))
		goto fail;
	return 0;
fail:
	json_object_put(seg);
	return ret;
}

static int pack_raw(struct json_object *win, size_t idx,
		    struct json_object *out)
{
	struct json_object *t = get(win, "t_ns"), *pw = get(win, "power_uW");
	size_t n = json_object_array_length(t), from = 0;
	unsigned char *dt, *pbytes;
	int ret = 0;

	if (json_object_array_length(pw) != n)
		return sbrig_set_error(-EINVAL, "field 'trace.raw[%zu].power_uW'"
				       ": %zu values, t_ns has %zu", idx,
				       json_object_array_length(pw), n);
	if (!n)
		return 0;
	dt = malloc(n * 4);
	pbytes = malloc(n * 4);
	if (!dt || !pbytes) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 1; i <= n && !ret; i++) {
		int64_t d = 0;

		if (i < n) {
			int64_t a = json_object_get_int64(
					json_object_array_get_idx(t, i - 1));
			int64_t b = json_object_get_int64(
					json_object_array_get_idx(t, i));

			if (b < a) {
				ret = sbrig_set_error(-EINVAL, "field 'trace."
					"raw[%zu].t_ns[%zu]': %" PRId64 " is "
					"before the sample ahead of it", idx, i,
					b);
				break;
			}
			d = b - a;
		}
		if (i == n || d > (int64_t)UINT32_MAX) {
			ret = pack_segment(out, t, pw, from, i, dt, pbytes);
			from = i;
		}
	}
out:
	free(dt);
	free(pbytes);
	return ret;
}

static int check_spans(struct json_object *rows, const char *what)
{
	size_t n = json_object_array_length(rows);

	for (size_t r = 0; r < n; r++) {
		struct json_object *spans = get(json_object_array_get_idx(rows, r),
						"spans");
		size_t m = json_object_array_length(spans);

		for (size_t i = 0; i < m; i++) {
			struct json_object *s = json_object_array_get_idx(spans, i);
			int64_t a = json_object_get_int64(
					json_object_array_get_idx(s, 0));
			int64_t b = json_object_get_int64(
					json_object_array_get_idx(s, 1));

			if (b < a)
				return sbrig_set_error(-EINVAL, "field 'trace.%s"
					"[%zu].spans[%zu]': ends (%" PRId64 ") "
					"before it starts (%" PRId64 ")", what,
					r, i, b, a);
		}
	}
	return 0;
}

static int pack_trace(struct json_object *trace)
{
	struct json_object *levels = get(trace, "levels");
	struct json_object *raw = get(trace, "raw");
	struct json_object *packed;
	size_t n = json_object_array_length(levels);
	int ret;

	for (size_t i = 0; i < n; i++) {
		ret = pack_level(json_object_array_get_idx(levels, i), i);
		if (ret)
			return ret;
	}
	packed = json_object_new_array();
	if (!packed)
		return -ENOMEM;
	n = json_object_array_length(raw);
	for (size_t i = 0; i < n; i++) {
		ret = pack_raw(json_object_array_get_idx(raw, i), i, packed);
		if (ret) {
			json_object_put(packed);
			return ret;
		}
	}
	if (json_object_object_add(trace, "raw", packed))
		return -ENOMEM;
	ret = check_spans(get(trace, "timeline"), "timeline");
	if (!ret)
		ret = check_spans(get(trace, "states"), "states");
	if (!ret && json_object_object_add(trace, "packed",
					   json_object_new_int(1)))
		ret = -ENOMEM;
	return ret;
}

/* ---- files ----------------------------------------------------------------- */

/* Read all of @path into a NUL-terminated buffer. 0 or -errno + message. */
static int slurp(const char *path, size_t max, char **out, size_t *outlen)
{
	struct stat st;
	char *p = NULL;
	size_t len = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = sbrig_set_error(errno ? -errno : -EINVAL, "%s: %s", path,
				      errno ? strerror(errno) :
				      "not a regular file");
		goto out;
	}
	if ((uintmax_t)st.st_size > max) {
		ret = sbrig_set_error(-EFBIG, "%s: larger than %zu bytes", path,
				      max);
		goto out;
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, p + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = sbrig_set_error(-errno, "%s: %s", path,
					      strerror(errno));
			goto out;
		}
		if (n == 0)
			break;	/* it shrank: take what is there */
		len += (size_t)n;
	}
	p[len] = '\0';
	*out = p;
	*outlen = len;
	p = NULL;
out:
	free(p);
	close(fd);
	return ret;
}

static int parse_json(const char *path, const char *text, size_t len,
		      struct json_object **out)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	struct json_object *root;
	enum json_tokener_error err;
	size_t end, line = 1, col = 1;

	if (!tok)
		return sbrig_set_error(-ENOMEM, "%s: out of memory", path);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
				    JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	err = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (err == json_tokener_success)
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
	if (err == json_tokener_continue)
		err = json_tokener_error_parse_eof;
	if (err != json_tokener_success || end < len) {
		for (size_t i = 0; i < end && i < len; i++, col++)
			if (text[i] == '\n') {
				line++;
				col = 0;
			}
		json_object_put(root);
		json_tokener_free(tok);
		return sbrig_set_error(-EINVAL, "%s:%zu:%zu: not JSON: %s",
				       path, line, col,
				       err != json_tokener_success ?
				       json_tokener_error_desc(err) :
				       "text after the end of the document");
	}
	json_tokener_free(tok);
	*out = root;
	return 0;
}

/* The report, checked and with its trace packed; -errno + message. */
static int load_report(const char *path, struct json_object **out)
{
	struct json_object *root = NULL;
	char *text = NULL;
	size_t len;
	int ret;

	ret = slurp(path, REPORT_MAX_BYTES, &text, &len);
	if (ret)
		return ret;
	ret = parse_json(path, text, len, &root);
	free(text);
	if (ret)
		return ret;
	ret = check_report(root);
	if (!ret)
		ret = pack_trace(get(root, "trace"));
	if (ret) {
		if (ret == -ENOMEM)
			sbrig_set_error(ret, "out of memory");
		sbrig_prefix_error("%s", path);
		json_object_put(root);
		return ret;
	}
	*out = root;
	return 0;
}

/* dygraphs' script (@ext "js") or stylesheet ("css"): min first */
static int read_dygraphs(const char *ext, char **out, size_t *len)
{
	const char *dir = getenv("SBRIG_DYGRAPHS_DIR");
	char path[PATH_MAX];
	int ret;

	if (!dir || !*dir)
		dir = DYGRAPHS_DIR;
	snprintf(path, sizeof(path), "%s/dygraph.min.%s", dir, ext);
	if (!access(path, R_OK))
		return slurp(path, REPORT_MAX_BYTES, out, len);
	snprintf(path, sizeof(path), "%s/dygraph.%s", dir, ext);
	ret = slurp(path, REPORT_MAX_BYTES, out, len);
	if (ret)
		sbrig_prefix_error("dygraphs (Debian's libjs-dygraphs; "
				   "SBRIG_DYGRAPHS_DIR overrides %s)",
				   DYGRAPHS_DIR);
	return ret;
}


/* ---- the page ---------------------------------------------------------------- */

/* The report's JSON, every "<" as \u003c (it can only be inside a string). */
static void buf_json(struct buf *b, struct json_object *root)
{
	size_t len;
	const char *s = json_object_to_json_string_length(root,
			JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
			&len);
	const char *end = s + len;

	if (!s) {
		if (!b->err)
			b->err = -ENOMEM;
		return;
	}
	while (s < end) {
		const char *lt = memchr(s, '<', (size_t)(end - s));

		if (!lt) {
			buf_add(b, s, (size_t)(end - s));
			break;
		}
		buf_add(b, s, (size_t)(lt - s));
		buf_puts(b, "\\u003c");
		s = lt + 1;
	}
}

static void build_page(struct buf *b, struct json_object *root,
		       const char *dy_js, size_t dy_js_len,
		       const char *dy_css, size_t dy_css_len)
{
	const char *cap = json_object_get_string(get(get(root, "capture"),
						     "path"));
	const char *base = strrchr(cap, '/');

	/* "/x/cap1/" names cap1, not "" */
	while (base && !base[1] && base > cap) {
		const char *prev = base - 1;

		while (prev > cap && *prev != '/')
			prev--;
		base = prev;
	}
	buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		 "<meta charset=\"utf-8\">\n"
		 "<meta name=\"viewport\" content=\"width=device-width, "
		 "initial-scale=1\">\n<link rel=\"icon\" href=\"data:,\">\n"
		 "<meta name=\"generator\" content=\"sbrig ");
	buf_html(b, sbrig_version);
	buf_puts(b, "\">\n<title>sbrig report: ");
	buf_html(b, base && base[1] ? base + 1 : cap);
	buf_puts(b, "</title>\n<style>\n");
	buf_script(b, dy_css, dy_css_len);
	buf_puts(b, "\n</style>\n<style>\n");
	buf_puts(b, sbrig_report_page_css);
	buf_puts(b, "</style>\n</head>\n<body>\n"
		 "<noscript><p>This report draws its tables and charts with "
		 "JavaScript; the data is in report.json.</p></noscript>\n"
		 "<main id=\"report\"></main>\n"
		 "<script type=\"application/json\" id=\"sbrig-report\">");
	buf_json(b, root);
	buf_puts(b, "</script>\n<script>\n");
	buf_script(b, dy_js, dy_js_len);
	buf_puts(b, "\n</script>\n<script>\n");
	buf_puts(b, sbrig_report_page_js);
	buf_puts(b, "</script>\n</body>\n</html>\n");
}

int sbrig_report_render_html(const char *json_path, const char *html_path)
{
	struct json_object *root = NULL;
	char *dy_js = NULL, *dy_css = NULL;
	size_t dy_js_len, dy_css_len;
	struct buf page = { 0 };
	int ret;

	ret = load_report(json_path, &root);
	if (ret)
		return ret;
	ret = read_dygraphs("js", &dy_js, &dy_js_len);
	if (ret)
		goto out;
	ret = read_dygraphs("css", &dy_css, &dy_css_len);
	if (ret)
		goto out;
	build_page(&page, root, dy_js, dy_js_len, dy_css, dy_css_len);
	if (page.err) {
		ret = sbrig_set_error(page.err, "%s: out of memory", html_path);
		goto out;
	}
	ret = an_write_atomic(html_path, page.p, page.len);
out:
	buf_free(&page);
	free(dy_css);
	free(dy_js);
	json_object_put(root);
	return ret;
}
