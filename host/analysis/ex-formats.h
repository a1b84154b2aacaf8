/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ex-formats.h - the exporters of sbrig export (export-*.c), private to
 * host/analysis/. Each renders a checked document (report-load.c,
 * compare-json.c) to a stdio stream (a memory stream, export.c) and
 * returns 0 or -errno with the message set. export.c calls them; what
 * they write with is ex-text.h's, below them.
 */
#ifndef SBRIG_EX_FORMATS_H
#define SBRIG_EX_FORMATS_H

#include <stdio.h>

#include <json-c/json.h>

/* export-perfetto.c: a report as Chrome trace JSON */
int ex_perfetto(struct json_object *report, FILE *out);

/* export-csv.c: a report's blockers, wakeups, finest envelope */
int ex_csv_blockers(struct json_object *report, FILE *out);
int ex_csv_wakeups(struct json_object *report, FILE *out);
int ex_csv_envelope(struct json_object *report, FILE *out);

/* export-ci.c: a comparison as JUnit XML; either document as LAVA lines */
int ex_junit(struct json_object *cmp, FILE *out);
int ex_lava_report(struct json_object *report, FILE *out);
int ex_lava_compare(struct json_object *cmp, FILE *out);

#endif /* SBRIG_EX_FORMATS_H */
