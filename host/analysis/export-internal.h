/* SPDX-License-Identifier: GPL-2.0 */
/*
 * export-internal.h - the exporters of sbrig export (export-*.c), private
 * to host/analysis/. Each renders a checked document (report-load.c,
 * compare-json.c) to a stdio stream (a memory stream, export.c) and
 * returns 0 or -errno with the message set.
 */
#ifndef SBRIG_EXPORT_INTERNAL_H
#define SBRIG_EXPORT_INTERNAL_H

#include <stdint.h>
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

/* @s as the inside of a JSON string (no quotes; what is not UTF-8, as
 * U+FFFD) */
void ex_json_str(FILE *out, const char *s);

/*
 * The code point that starts @s (@n > 0 bytes) and its length in *@len;
 * -1 when @s does not start with a whole UTF-8 sequence of a Unicode
 * scalar value (an overlong form, a surrogate, a cut sequence): *@len is
 * then 1, the byte to skip.
 */
int32_t ex_utf8_next(const unsigned char *s, size_t n, size_t *len);

/* a time in ns as µs, exactly: "1234.567" */
void ex_us(FILE *out, int64_t t_ns);

#endif /* SBRIG_EXPORT_INTERNAL_H */
