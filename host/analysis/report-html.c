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
 * 1. Load and check (report-load.c, shared with every reader of
 *    report.json). The file is parsed with json-c (strict JSON, valid
 *    UTF-8) and walked against a table of every field read back with its
 *    type; `schema` and `version` are checked first, so a file that is no
 *    report of this version says so. The first mismatch fails with
 *    -EINVAL and names the field by its path ("blockers[2].energy_uJ:
 *    expected a number, got a string").
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
#include "html-page.h"
#include "report-html.h"
#include "report-load.h"

#define DYGRAPHS_DIR "/usr/share/javascript/dygraphs"

/* ---- a growable byte buffer with a sticky error ------------------------ */

/*
 * A buffer, or with @f a stream the bytes go to at once (a page is
 * written as it is made: it is never in memory whole).
 */
struct buf {
	char *p;
	size_t len, cap;
	int err;	/* the first -errno; later adds do nothing */
	FILE *f;
};

static void buf_add(struct buf *b, const void *s, size_t n)
{
	if (b->err)
		return;
	if (b->f) {
		if (fwrite(s, 1, n, b->f) != n)
			b->err = errno ? -errno : -EIO;
		return;
	}
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
	size_t n = json_object_array_length(an_jget(lv, "min"));
	unsigned char *bytes;
	int ret = 0;

	if (json_object_get_int64(an_jget(lv, "bucket_ns")) <= 0)
		return sbrig_set_error(-EINVAL, "field 'trace.levels[%zu]."
				       "bucket_ns': not positive", idx);
	for (size_t k = 1; k < 3; k++) {
		size_t m = json_object_array_length(an_jget(lv, keys[k]));

		if (m != n)
			return sbrig_set_error(-EINVAL, "field 'trace.levels"
					       "[%zu].%s': %zu values, min has "
					       "%zu", idx, keys[k], m, n);
	}
	bytes = malloc(n ? n * 4 : 1);
	if (!bytes)
		return -ENOMEM;
	for (size_t k = 0; k < 3 && !ret; k++) {
		struct json_object *arr = an_jget(lv, keys[k]);

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
	struct json_object *t = an_jget(win, "t_ns"), *pw = an_jget(win, "power_uW");
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
		struct json_object *spans = an_jget(json_object_array_get_idx(rows, r),
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
	struct json_object *levels = an_jget(trace, "levels");
	struct json_object *raw = an_jget(trace, "raw");
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
	ret = check_spans(an_jget(trace, "timeline"), "timeline");
	if (!ret)
		ret = check_spans(an_jget(trace, "states"), "states");
	if (!ret && json_object_object_add(trace, "packed",
					   json_object_new_int(1)))
		ret = -ENOMEM;
	return ret;
}

/* The report, checked and with its trace packed; -errno + message. */
static int load_report(const char *path, struct json_object **out)
{
	struct json_object *root = NULL;
	int ret;

	ret = an_report_load(path, &root);
	if (ret)
		return ret;
	ret = pack_trace(an_jget(root, "trace"));
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
		return an_slurp(path, AN_JSON_MAX_BYTES, out, len);
	snprintf(path, sizeof(path), "%s/dygraph.%s", dir, ext);
	ret = an_slurp(path, AN_JSON_MAX_BYTES, out, len);
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

static void build_page(struct buf *b, const struct an_page *p,
		       const char *dy_js, size_t dy_js_len,
		       const char *dy_css, size_t dy_css_len)
{
	buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		 "<meta charset=\"utf-8\">\n"
		 "<meta name=\"viewport\" content=\"width=device-width, "
		 "initial-scale=1\">\n<link rel=\"icon\" href=\"data:,\">\n"
		 "<meta name=\"generator\" content=\"sbrig ");
	buf_html(b, sbrig_version);
	buf_puts(b, "\">\n<title>");
	buf_html(b, p->title);
	buf_puts(b, "</title>\n<style>\n");
	buf_script(b, dy_css, dy_css_len);
	buf_puts(b, "\n</style>\n<style>\n");
	buf_puts(b, p->css);
	buf_puts(b, "</style>\n</head>\n<body>\n<noscript><p>");
	buf_html(b, p->noscript);
	buf_puts(b, "</p></noscript>\n<main id=\"");
	buf_html(b, p->main_id);
	buf_puts(b, "\"></main>\n<script type=\"application/json\" id=\"");
	buf_html(b, p->data_id);
	buf_puts(b, "\">");
	buf_json(b, p->data);
	buf_puts(b, "</script>\n<script>\n");
	buf_script(b, dy_js, dy_js_len);
	buf_puts(b, "\n</script>\n<script>\n");
	buf_puts(b, p->js);
	buf_puts(b, "</script>\n</body>\n</html>\n");
}

int an_page_write(const struct an_page *p, const char *path)
{
	char *dy_js = NULL, *dy_css = NULL;
	size_t dy_js_len, dy_css_len;
	struct an_atomic w;
	struct buf page = { 0 };
	int ret;

	ret = read_dygraphs("js", &dy_js, &dy_js_len);
	if (ret)
		goto out;
	ret = read_dygraphs("css", &dy_css, &dy_css_len);
	if (ret)
		goto out;
	/* written to the file as it is made: never whole in memory */
	ret = an_atomic_open(&w, path);
	if (ret)
		goto out;
	page.f = w.f;
	build_page(&page, p, dy_js, dy_js_len, dy_css, dy_css_len);
	if (page.err == -ENOMEM) {
		an_atomic_abort(&w);
		ret = sbrig_set_error(page.err, "%s: out of memory", path);
		goto out;
	}
	ret = an_atomic_close(&w);	/* a write error is named there */
out:
	buf_free(&page);
	free(dy_css);
	free(dy_js);
	return ret;
}

int sbrig_report_render_html(const char *json_path, const char *html_path)
{
	struct json_object *root = NULL;
	char title[4200];
	const char *cap, *base;
	int ret;

	ret = load_report(json_path, &root);
	if (ret)
		return ret;
	cap = json_object_get_string(an_jget(an_jget(root, "capture"), "path"));
	base = strrchr(cap, '/');
	/* "/x/cap1/" names cap1, not "" */
	while (base && !base[1] && base > cap) {
		const char *prev = base - 1;

		while (prev > cap && *prev != '/')
			prev--;
		base = prev;
	}
	snprintf(title, sizeof(title), "sbrig report: %s",
		 base && base[1] ? base + 1 : cap);
	ret = an_page_write(&(struct an_page){
		.title = title,
		.noscript = "This report draws its tables and charts with "
			    "JavaScript; the data is in report.json.",
		.main_id = "report", .data_id = "sbrig-report", .data = root,
		.css = sbrig_report_page_css, .js = sbrig_report_page_js,
	}, html_path);
	json_object_put(root);
	return ret;
}
