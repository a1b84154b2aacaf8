/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report-load.h - reading the JSON documents the analysis writes
 * (report.json, compare.json) back, checked against a table of their
 * fields. Private to host/analysis/: every renderer and exporter loads its
 * input through here, so a document that is not of the schema and version
 * this code reads is refused once, the same way, with the field's path.
 */
#ifndef SBRIG_REPORT_LOAD_H
#define SBRIG_REPORT_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/*
 * What a document read back may be (report-format.md, compare-format.md):
 * a file of at most AN_JSON_MAX_BYTES, whose values take json-c at most
 * AN_JSON_MAX_TREE of memory (an_json_load() counts them as it reads).
 * A real report stays far below both: its trace is at most ~6 MB whatever
 * the capture's length, and 32 MiB holds some 40 000 wakeups with their
 * phases and blocker spans; a real comparison holds a few thousand
 * metrics.
 */
#define AN_JSON_MAX_BYTES ((size_t)32 << 20)
#define AN_JSON_MAX_TREE ((size_t)512 << 20)

enum jtype { J_OBJ, J_ARR, J_MAP, J_STR, J_INT, J_NUM, J_BOOL };

#define J_NULL 0x1	/* may be null */
#define J_OPT 0x2	/* may be absent */

/**
 * struct jfield - one field of a document
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

/* element tables the documents share */
extern const struct jfield an_je_int[], an_je_str[], an_je_str_null[],
	an_je_num[], an_je_num_null[];

/* @o's @key; NULL when absent or null (json-c's null is NULL) */
struct json_object *an_jget(struct json_object *o, const char *key);

/*
 * Read all of @path (at most @max bytes) into a NUL-terminated buffer the
 * caller frees. 0 or -errno with sbrig_errmsg() naming @path.
 */
int an_slurp(const char *path, size_t max, char **out, size_t *outlen);

/*
 * Parse @path as strict JSON (valid UTF-8, nothing after the document),
 * reading it in chunks (never whole in memory). *@out is the caller's
 * (json_object_put()). 0, -EINVAL naming "path:line:column", or -EFBIG
 * when the file or its values pass AN_JSON_MAX_BYTES / AN_JSON_MAX_TREE.
 */
int an_json_load(const char *path, struct json_object **out);

/*
 * Check @root: "schema" is @schema, "version" is @version (both first, so
 * that a file that is another document says just that), then @fields.
 * 0 or -EINVAL with sbrig_errmsg() naming the field by its path
 * ("blockers[2].energy_uJ: expected a number, got a string").
 */
int an_json_check_doc(struct json_object *root, const char *schema,
		      int version, const struct jfield *fields);

/* Check @root as a report.json of SBRIG_REPORT_VERSION. 0 or -EINVAL. */
int an_report_check(struct json_object *root);

/*
 * Load and check the report.json @path; *@out is the caller's. 0 or -errno
 * with sbrig_errmsg() starting with @path.
 */
int an_report_load(const char *path, struct json_object **out);

struct sbrig_analysis;

/*
 * The analysis @a as a report.json document (report-json.c), the caller's
 * (json_object_put()); NULL when out of memory.
 */
struct json_object *an_report_json(const struct sbrig_analysis *a);

#endif /* SBRIG_REPORT_LOAD_H */
