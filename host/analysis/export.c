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
#include "ex-formats.h"
#include "report-load.h"

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
