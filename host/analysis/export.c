// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - sbrig_export_render(): load and check the document, pick the
 * exporter, render into a memory stream. The exporters (export-*.c) see
 * only a checked document: a field the table of its schema has is there
 * and of its type.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/analysis.h>
#include <sbrig/compare.h>
#include <sbrig/export.h>
#include <sbrig/sbrig.h>

#include "cm-shared.h"
#include "export-internal.h"
#include "report-load.h"

void ex_json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n) {
		size_t len;
		int32_t c = ex_utf8_next(p, n, &len);

		if (c < 0)
			fputs("\\ufffd", out);	/* not UTF-8 */
		else if (c == '"' || c == '\\')
			fprintf(out, "\\%c", (char)c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", (unsigned int)c);
		else
			fwrite(p, 1, len, out);
		p += len;
		n -= len;
	}
}

int32_t ex_utf8_next(const unsigned char *s, size_t n, size_t *len)
{
	unsigned char c = s[0];
	size_t need;
	int32_t cp, min;

	*len = 1;
	if (c < 0x80)
		return c;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return -1;	/* a continuation byte, 0xc0, 0xc1, 0xf5.. */
	}
	if (n <= need)
		return -1;
	for (size_t i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = need + 1;
	return cp;
}

void ex_us(FILE *out, int64_t t_ns)
{
	uint64_t u = t_ns < 0 ? -(uint64_t)t_ns : (uint64_t)t_ns;

	fprintf(out, "%s%" PRIu64 ".%03" PRIu64, t_ns < 0 ? "-" : "",
		u / 1000, u % 1000);
}

/* the document's "schema" without checking it (to pick the table) */
static const char *schema_of(struct json_object *root)
{
	const char *s = json_object_get_string(an_jget(root, "schema"));

	return json_object_is_type(an_jget(root, "schema"), json_type_string) ?
	       s : "";
}

int sbrig_export_write(const char *json_path, enum sbrig_export what,
		       FILE *out)
{
	struct json_object *root = NULL;
	bool compare = what == SBRIG_EXPORT_JUNIT;
	int ret;

	ret = an_json_load(json_path, &root);
	if (ret)
		return ret;
	if (what == SBRIG_EXPORT_LAVA)
		compare = !strcmp(schema_of(root), SBRIG_COMPARE_SCHEMA);
	ret = compare ? cm_compare_check(root) : an_report_check(root);
	if (ret) {
		sbrig_prefix_error("%s", json_path);
		json_object_put(root);
		return ret;
	}
	switch (what) {
	case SBRIG_EXPORT_PERFETTO:
		ret = ex_perfetto(root, out);
		break;
	case SBRIG_EXPORT_CSV_BLOCKERS:
		ret = ex_csv_blockers(root, out);
		break;
	case SBRIG_EXPORT_CSV_WAKEUPS:
		ret = ex_csv_wakeups(root, out);
		break;
	case SBRIG_EXPORT_CSV_ENVELOPE:
		ret = ex_csv_envelope(root, out);
		break;
	case SBRIG_EXPORT_JUNIT:
		ret = ex_junit(root, out);
		break;
	case SBRIG_EXPORT_LAVA:
		ret = compare ? ex_lava_compare(root, out) :
				ex_lava_report(root, out);
		break;
	default:
		ret = sbrig_set_error(-EINVAL, "export: unknown format %d",
				      (int)what);
	}
	json_object_put(root);
	return ret;
}

int sbrig_export_render(const char *json_path, enum sbrig_export what,
			char **text, size_t *len)
{
	FILE *out;
	int ret;

	*text = NULL;
	*len = 0;
	out = open_memstream(text, len);
	if (!out)
		return sbrig_set_error(-ENOMEM, "export: out of memory");
	ret = sbrig_export_write(json_path, what, out);
	if (fclose(out) && !ret)
		ret = sbrig_set_error(-ENOMEM, "export: out of memory");
	if (ret) {
		free(*text);
		*text = NULL;
		*len = 0;
	}
	return ret;
}
