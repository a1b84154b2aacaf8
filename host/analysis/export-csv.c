// SPDX-License-Identifier: GPL-2.0
/*
 * export-csv.c - a report's tables as CSV (RFC 4180: comma-separated, a
 * field with a comma, a quote or a line end quoted, quotes doubled; "\n"
 * line ends), one header line naming the columns with their units
 * (export-formats.md): blockers, wakeups, and the finest power envelope.
 * A null figure is an empty field. Text cells go through an_csv_text()
 * (csv.h): a name that a spreadsheet would take for a formula is written
 * as text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/sbrig.h>

#include "csv.h"
#include "ex-formats.h"
#include "report-load.h"

typedef struct json_object jobj;

/* a value as JSON has it (integers as integers), or empty for null */
static void field(FILE *out, jobj *v)
{
	if (!v)
		return;
	if (json_object_is_type(v, json_type_string))
		an_csv_text(out, json_object_get_string(v));
	else if (json_object_is_type(v, json_type_int))
		fprintf(out, "%" PRId64, json_object_get_int64(v));
	else if (json_object_is_type(v, json_type_boolean))
		fputs(json_object_get_boolean(v) ? "true" : "false", out);
	else
		fprintf(out, "%.3f", json_object_get_double(v));
}

/* the rows of @arr, columns @cols (keys of each element) */
static int table(FILE *out, jobj *arr, const char *const *cols, size_t n,
		 const char *list_col)
{
	for (size_t c = 0; c < n; c++)
		fprintf(out, "%s%c", cols[c], c + 1 < n ? ',' : '\n');
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		jobj *row = json_object_array_get_idx(arr, i);

		for (size_t c = 0; c < n; c++) {
			jobj *v = an_jget(row, cols[c]);

			if (list_col && !strcmp(cols[c], list_col)) {
				/* a list: its names joined by ';', whole */
				char *buf = NULL;
				size_t l;
				FILE *f = open_memstream(&buf, &l);

				if (!f)
					return sbrig_set_error(-ENOMEM, "csv: out of memory");
				for (size_t k = 0; k < json_object_array_length(v); k++)
					fprintf(f, "%s%s", k ? ";" : "",
						json_object_get_string(json_object_array_get_idx(v, k)));
				if (fclose(f))
					return sbrig_set_error(-ENOMEM, "csv: out of memory");
				an_csv_text(out, buf);
				free(buf);
			} else {
				field(out, v);
			}
			fputc(c + 1 < n ? ',' : '\n', out);
		}
	}
	return ferror(out) ? sbrig_set_error(-ENOMEM, "csv: out of memory") : 0;
}

int ex_csv_blockers(jobj *r, FILE *out)
{
	static const char *const cols[] = {
		"name", "kind", "activations", "active_ns", "max_active_ns",
		"energy_uJ", "exclusive_energy_uJ", "above_baseline_uJ",
		"active_at_end",
	};

	return table(out, an_jget(r, "blockers"), cols,
		     sizeof(cols) / sizeof(cols[0]), NULL);
}

int ex_csv_wakeups(jobj *r, FILE *out)
{
	static const char *const cols[] = {
		"stimulus", "t_ns", "resume_t_ns", "latency_ns", "uncert_ns",
		"awake_ns", "energy_uJ", "blockers", "cause", "wakeup_source",
	};

	return table(out, an_jget(r, "wakeups"), cols,
		     sizeof(cols) / sizeof(cols[0]), "blockers");
}

int ex_csv_envelope(jobj *r, FILE *out)
{
	jobj *levels = an_jget(an_jget(r, "trace"), "levels"), *lv = NULL;
	jobj *mn, *mx, *me;
	int64_t t0, b;

	for (size_t i = 0; i < json_object_array_length(levels); i++) {
		jobj *l = json_object_array_get_idx(levels, i);

		if (!lv || json_object_get_int64(an_jget(l, "bucket_ns")) <
			   json_object_get_int64(an_jget(lv, "bucket_ns")))
			lv = l;
	}
	fputs("t_ns,bucket_ns,min_uW,max_uW,mean_uW\n", out);
	if (!lv)
		return 0;
	t0 = json_object_get_int64(an_jget(lv, "t0_ns"));
	b = json_object_get_int64(an_jget(lv, "bucket_ns"));
	mn = an_jget(lv, "min");
	mx = an_jget(lv, "max");
	me = an_jget(lv, "mean");
	for (size_t i = 0; i < json_object_array_length(me); i++) {
		fprintf(out, "%" PRId64 ",%" PRId64 ",", t0 + (int64_t)i * b, b);
		field(out, json_object_array_get_idx(mn, i));
		fputc(',', out);
		field(out, json_object_array_get_idx(mx, i));
		fputc(',', out);
		field(out, json_object_array_get_idx(me, i));
		fputc('\n', out);
	}
	return ferror(out) ? sbrig_set_error(-ENOMEM, "csv: out of memory") : 0;
}
