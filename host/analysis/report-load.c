// SPDX-License-Identifier: GPL-2.0
/*
 * report-load.c - report.json read back and checked (report-load.h).
 *
 * The file is parsed with json-c (strict JSON, valid UTF-8) and walked
 * against report_fields[], a table of every field a renderer or exporter
 * reads with its type; `schema` and `version` are checked first, so a
 * file that is no report of this version says so. The first mismatch
 * fails with -EINVAL and names the field by its path
 * ("blockers[2].energy_uJ: expected a number, got a string"). The same
 * walk checks compare.json against its own table (compare-json.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include <sbrig/analysis.h>
#include <sbrig/sbrig.h>

#include "report-load.h"

#define JSON_MAX_DEPTH 64
#define PATH_BUF 256

/* ---- the report's schema: every field read back, with its type ----------- */

const struct jfield an_je_int[] = { { "", J_INT, 0, 0, NULL } };
const struct jfield an_je_str[] = { { "", J_STR, 0, 0, NULL } };
const struct jfield an_je_str_null[] = { { "", J_STR, J_NULL, 0, NULL } };
const struct jfield an_je_num[] = { { "", J_NUM, 0, 0, NULL } };
const struct jfield an_je_num_null[] = { { "", J_NUM, J_NULL, 0, NULL } };
static const struct jfield e_span[] = { { "", J_ARR, 0, 2, an_je_int } };

static const struct jfield f_sensor_clock[] = {
	{ "clock", J_STR, 0, 0, NULL },
	{ "drift_ppb", J_INT, J_NULL, 0, NULL },
	{ "uncert_ns", J_INT, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield f_clock_resid[] = {
	{ "count", J_INT, 0, 0, NULL },
	{ "median_ns", J_INT, J_NULL, 0, NULL },
	{ "p95_ns", J_INT, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield f_clock_resids[] = {
	{ "ping", J_OBJ, 0, 0, f_clock_resid },
	{ "marker", J_OBJ, 0, 0, f_clock_resid },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield f_clock[] = {
	{ "segments", J_INT, J_OPT, 0, NULL },
	{ "max_uncert_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "residuals", J_OBJ, J_OPT, 0, f_clock_resids },
	{ "spikes_rejected", J_INT, J_OPT, 0, NULL },
	{ "outliers_rejected", J_INT, J_OPT, 0, NULL },
	{ "drift_clamped_segments", J_INT, J_OPT, 0, NULL },
	{ "sensor", J_OBJ, J_OPT, 0, f_sensor_clock },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_target[] = { { "", J_MAP, 0, 0, an_je_str_null } };

static const struct jfield f_end[] = {
	{ "state", J_STR, 0, 0, NULL },
	{ "last_heard_ns", J_INT, J_NULL, 0, NULL },
	{ "inferred_t_ns", J_INT, J_NULL, 0, NULL },
	{ "sleep_level_uW", J_NUM, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};

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
	{ "placed_events", J_INT, J_OPT, 0, NULL },
	{ "end", J_OBJ, J_OPT, 0, f_end },
	{ "object_ids", J_STR, J_OPT | J_NULL, 0, NULL },
	{ "skipped_events", J_MAP, J_OPT, 0, an_je_int },
	{ "provenance", J_MAP, J_OPT, 0, an_je_str_null },
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
	{ "events_near_snapshot", J_INT, J_OPT | J_NULL, 0, NULL },
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
	{ "at_stop", J_BOOL, J_OPT, 0, NULL },
	{ "hidden_min_uJ", J_NUM, 0, 0, NULL },
	{ "hidden_max_uJ", J_NUM, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_gap[] = { { "", J_OBJ, 0, 0, f_gap } };

static const struct jfield f_wakeup[] = {
	{ "cause", J_STR, J_OPT, 0, NULL },
	{ "wakeup_source", J_STR, J_OPT | J_NULL, 0, NULL },
	{ "stimulus", J_STR, J_NULL, 0, NULL },
	{ "t_ns", J_INT, J_NULL, 0, NULL },
	{ "resume_t_ns", J_INT, 0, 0, NULL },
	{ "resume_from", J_STR, J_OPT, 0, NULL },
	{ "marker_t_ns", J_INT, J_OPT | J_NULL, 0, NULL },
	{ "latency_ns", J_INT, J_NULL, 0, NULL },
	{ "uncert_ns", J_INT, J_NULL, 0, NULL },
	{ "latency_from", J_STR, J_OPT | J_NULL, 0, NULL },
	{ "awake_ns", J_INT, 0, 0, NULL },
	{ "energy_uJ", J_NUM, 0, 0, NULL },
	{ "blockers", J_ARR, 0, 0, an_je_str },
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
static const struct jfield f_devpm[] = {
	{ "device", J_STR, 0, 0, NULL },
	{ "verb", J_STR, 0, 0, NULL },
	{ "duration_ns", J_INT, 0, 0, NULL },
	{ "error", J_INT, 0, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_devpm[] = { { "", J_OBJ, 0, 0, f_devpm } };
static const struct jfield f_phase[] = {
	{ "name", J_STR, 0, 0, NULL },
	{ "t_ns", J_INT, 0, 0, NULL },
	{ "duration_ns", J_INT, 0, 0, NULL },
	{ "slowest_devices", J_ARR, J_OPT, 0, e_devpm },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_phase[] = { { "", J_OBJ, 0, 0, f_phase } };
static const struct jfield f_cycle[] = {
	{ "cycle", J_INT, 0, 0, NULL },
	{ "phases", J_ARR, 0, 0, e_phase },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_cycle[] = { { "", J_OBJ, 0, 0, f_cycle } };

/* suspend_costs: what each suspend cost (report-format.md section 6) */
static const struct jfield f_cost[] = {
	{ "t_ns", J_INT, 0, 0, NULL },
	{ "suspended_ns", J_INT, 0, 0, NULL },
	{ "entry_ns", J_INT, J_NULL, 0, NULL },
	{ "entry_uJ", J_NUM, J_NULL, 0, NULL },
	{ "exit_ns", J_INT, J_NULL, 0, NULL },
	{ "exit_uJ", J_NUM, J_NULL, 0, NULL },
	{ "break_even_ns", J_INT, J_NULL, 0, NULL },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_cost[] = { { "", J_OBJ, 0, 0, f_cost } };
static const struct jfield f_costs[] = {
	{ "idle_uW", J_NUM, J_NULL, 0, NULL },
	{ "median_break_even_ns", J_INT, J_NULL, 0, NULL },
	{ "cycles", J_ARR, 0, 0, e_cost },
	{ NULL, 0, 0, 0, NULL },
};

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
	{ "min", J_ARR, 0, 0, an_je_num_null },
	{ "max", J_ARR, 0, 0, an_je_num_null },
	{ "mean", J_ARR, 0, 0, an_je_num_null },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_level[] = { { "", J_OBJ, 0, 0, f_level } };
static const struct jfield f_raw[] = {
	{ "t_ns", J_ARR, 0, 0, an_je_int },
	{ "power_uW", J_ARR, 0, 0, an_je_num },
	{ NULL, 0, 0, 0, NULL },
};
static const struct jfield e_raw[] = { { "", J_OBJ, 0, 0, f_raw } };
static const struct jfield f_row[] = {
	{ "name", J_STR, 0, 0, NULL },
	{ "kind", J_STR, J_OPT, 0, NULL },
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
	{ "suspend_costs", J_OBJ, J_OPT, 0, f_costs },
	{ "findings", J_ARR, 0, 0, e_finding },
	{ "trace", J_OBJ, 0, 0, f_trace },
	{ NULL, 0, 0, 0, NULL },
};

/* ---- checking ------------------------------------------------------------ */

/* @o's @key; NULL when absent or null */
struct json_object *an_jget(struct json_object *o, const char *key)
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

/* schema and version first: a file that is another document says just that */
int an_json_check_doc(struct json_object *root, const char *schema,
		      int version, const struct jfield *fields)
{
	struct jpath p = { .s = "", .len = 0 };
	struct json_object *v;
	const char *got_schema;
	int64_t got_version;
	bool report = !strcmp(schema, SBRIG_REPORT_SCHEMA);

	if (!json_object_is_type(root, json_type_object))
		return sbrig_set_error(-EINVAL, "not %s%s: expected an "
				       "object, got %s", report ? "a report" :
				       "an ", report ? "" : schema, got(root));
	if (!json_object_object_get_ex(root, "schema", &v))
		return sbrig_set_error(-EINVAL, "field 'schema': missing (not "
				       "an %s file)", schema);
	if (!json_object_is_type(v, json_type_string))
		return sbrig_set_error(-EINVAL, "field 'schema': expected a "
				       "string, got %s", got(v));
	got_schema = json_object_get_string(v);
	if (strcmp(got_schema, schema))
		return sbrig_set_error(-EINVAL, "field 'schema': \"%.64s\" is "
				       "not \"%s\"", got_schema, schema);
	if (!json_object_object_get_ex(root, "version", &v))
		return sbrig_set_error(-EINVAL, "field 'version': missing");
	if (!json_object_is_type(v, json_type_int))
		return sbrig_set_error(-EINVAL, "field 'version': expected an "
				       "integer, got %s", got(v));
	got_version = json_object_get_int64(v);
	if (got_version != version)
		return sbrig_set_error(-EINVAL, "field 'version': %" PRId64
				       " is not supported (this sbrig reads "
				       "%s version %d)", got_version, schema,
				       version);
	return check_object(root, fields, &p);
}

int an_report_check(struct json_object *root)
{
	struct json_object *v;
	int ret;

	ret = an_json_check_doc(root, SBRIG_REPORT_SCHEMA,
				SBRIG_REPORT_VERSION, report_fields);
	if (ret)
		return ret;
	v = an_jget(an_jget(root, "trace"), "unit");
	if (strcmp(json_object_get_string(v), "uW"))
		return sbrig_set_error(-EINVAL, "field 'trace.unit': \"%.16s\" "
				       "is not \"uW\"", json_object_get_string(v));
	return 0;
}

/* ---- files ----------------------------------------------------------------- */

/* Read all of @path into a NUL-terminated buffer. 0 or -errno + message. */
int an_slurp(const char *path, size_t max, char **out, size_t *outlen)
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

/*
 * Reading a document with bounded memory.
 *
 * The file is fed to json-c's tokener AN_JSON_CHUNK bytes at a time (its
 * text is never whole in memory), and before a chunk goes in, jcost_scan()
 * adds up what the values that start in it will cost once json-c holds
 * them: an upper bound per kind of value, from json-c 0.16's allocations
 * measured with malloc's own statistics (tests/test_export_memory.py
 * checks the bound on documents made of each kind):
 *
 *   value          what json-c allocates                    counted
 *   integer        its object                               72
 *   fraction       its object and its text                  96 + length
 *   string         its object and the bytes                 88 + length
 *   true, false    an object                                72
 *   null           nothing (NULL)                           0
 *   array          its object and a list of 32 slots        416
 *                  (shrunk to its length at its end: the
 *                  hole may stay, as between nested arrays)
 *   element        the list's slot, as it doubles           24
 *   object         its object and a 16-entry hash table     800
 *   key            its copy                                 32 + length
 *   11th member+   the table, as it doubles                 120
 *
 * plus twice the longest token (the tokener's buffer grows to hold it).
 * The document is refused as soon as the sum passes AN_JSON_MAX_TREE,
 * naming the byte where it did: whatever the file holds, reading it takes
 * at most AN_JSON_MAX_TREE (and the chunk) of memory.
 */
#define AN_JSON_CHUNK (64 << 10)
#define COST_INT 72
#define COST_FRACTION 96
#define COST_STRING 88
#define COST_WORD 72
#define COST_ARRAY 416
#define COST_SLOT 24
#define COST_OBJECT 800
#define COST_KEY 32
#define COST_MEMBER 120
#define COST_TABLE_MEMBERS 10	/* an object's first table holds these */

/**
 * struct jcost - the scanner's state across chunks
 * @state: where in a token the last chunk ended
 * @len: bytes of the token in progress
 * @fraction: the number in progress has a '.', 'e' or 'E'
 * @key: the string in progress is an object's key
 * @depth: open containers (those beyond JCOST_DEPTH are counted as the
 *	innermost one tracked)
 * @obj: for each tracked container, whether it is an object
 * @members: for each tracked container, its members or elements so far
 * @expect_key: for each tracked object, a key comes next
 * @longest: the longest token so far
 * @bytes: the cost of the values so far
 * @word_cost: of the literal in progress (true, false: COST_WORD; null: 0)
 */
#define JCOST_DEPTH (JSON_MAX_DEPTH + 1)
struct jcost {
	enum { JC_VALUE, JC_STRING, JC_ESCAPE, JC_NUMBER, JC_WORD } state;
	uint64_t len;
	bool fraction, key;
	unsigned int depth;
	bool obj[JCOST_DEPTH];
	uint32_t members[JCOST_DEPTH];
	bool expect_key[JCOST_DEPTH];
	uint64_t longest, bytes;
	unsigned int word_cost;
};

static unsigned int jcost_top(const struct jcost *c)
{
	return c->depth < JCOST_DEPTH ? c->depth - 1 : JCOST_DEPTH - 1;
}

/* A value starts: its place in its container. */
static void jcost_value(struct jcost *c)
{
	unsigned int t;

	if (!c->depth)
		return;		/* the document itself */
	t = jcost_top(c);
	if (!c->obj[t]) {
		c->bytes += COST_SLOT;
		c->members[t]++;
	}
}

static void jcost_end_token(struct jcost *c, uint64_t cost, bool counts_len)
{
	c->bytes += cost + (counts_len ? c->len : 0);
	if (c->len > c->longest)
		c->longest = c->len;
	c->state = JC_VALUE;
}

static void jcost_open(struct jcost *c, bool obj)
{
	unsigned int t;

	jcost_value(c);
	c->bytes += obj ? COST_OBJECT : COST_ARRAY;
	c->depth++;
	t = jcost_top(c);
	c->obj[t] = obj;
	c->members[t] = 0;
	c->expect_key[t] = obj;
}

static void jcost_scan(struct jcost *c, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		unsigned int t;

		switch (c->state) {
		case JC_STRING:
			if (ch == '\\')
				c->state = JC_ESCAPE;
			else if (ch == '"')
				jcost_end_token(c, c->key ? COST_KEY :
						COST_STRING, true);
			else
				c->len++;
			continue;
		case JC_ESCAPE:
			c->len++;
			c->state = JC_STRING;
			continue;
		case JC_NUMBER:
			if ((ch >= '0' && ch <= '9') || strchr("+-.eE", ch)) {
				c->fraction |= ch == '.' || ch == 'e' ||
					       ch == 'E';
				c->len++;
				continue;
			}
			jcost_end_token(c, c->fraction ? COST_FRACTION :
					COST_INT, c->fraction);
			break;		/* @ch is the next token's */
		case JC_WORD:
			if (ch >= 'a' && ch <= 'z') {
				c->len++;
				continue;
			}
			jcost_end_token(c, c->word_cost, false);
			break;
		case JC_VALUE:
			break;
		}
		switch (ch) {
		case '"':
			t = c->depth ? jcost_top(c) : 0;
			c->key = c->depth && c->obj[t] && c->expect_key[t];
			if (c->key) {
				c->expect_key[t] = false;
				if (++c->members[t] > COST_TABLE_MEMBERS)
					c->bytes += COST_MEMBER;
			} else {
				jcost_value(c);
			}
			c->state = JC_STRING;
			c->len = 0;
			break;
		case '{':
		case '[':
			jcost_open(c, ch == '{');
			break;
		case '}':
		case ']':
			if (c->depth)
				c->depth--;
			break;
		case ',':
			if (c->depth && c->obj[jcost_top(c)])
				c->expect_key[jcost_top(c)] = true;
			break;
		case 't':
		case 'f':
		case 'n':
			jcost_value(c);
			c->state = JC_WORD;
			c->word_cost = ch == 'n' ? 0 : COST_WORD;
			c->len = 1;
			break;
		default:
			if (ch == '-' || (ch >= '0' && ch <= '9')) {
				jcost_value(c);
				c->state = JC_NUMBER;
				c->fraction = false;
				c->len = 1;
			}
		}
	}
}

static uint64_t jcost_total(const struct jcost *c)
{
	return c->bytes + 2 * c->longest;
}

/* "path:line:col: not JSON: why" for the byte at @off of @fd's file */
static int not_json(const char *path, int fd, uint64_t off, const char *why)
{
	char buf[AN_JSON_CHUNK];
	uint64_t line = 1, col = 1, pos = 0;

	while (pos < off) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)pos);

		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n && pos < off; i++, pos++, col++)
			if (buf[i] == '\n') {
				line++;
				col = 0;
			}
	}
	return sbrig_set_error(-EINVAL, "%s:%" PRIu64 ":%" PRIu64 ": not JSON: "
			       "%s", path, line, col, why);
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int an_json_load(const char *path, struct json_object **out)
{
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL;
	struct jcost cost = { .state = JC_VALUE };
	bool done = false;	/* the document ended; only blanks may follow */
	uint64_t off = 0;	/* of @buf's first byte in the file */
	struct stat st;
	char *buf = NULL;
	int fd, ret = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = sbrig_set_error(errno ? -errno : -EINVAL, "%s: %s", path,
				      errno ? strerror(errno) :
				      "not a regular file");
		goto close_fd;
	}
	if ((uintmax_t)st.st_size > AN_JSON_MAX_BYTES) {
		ret = sbrig_set_error(-EFBIG, "%s: %jd bytes: larger than any "
				      "real document (at most %zu MiB)", path,
				      (intmax_t)st.st_size,
				      AN_JSON_MAX_BYTES >> 20);
		goto close_fd;
	}
	buf = malloc(AN_JSON_CHUNK);
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!buf || !tok) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", path);
		goto free_tok;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
				    JSON_TOKENER_VALIDATE_UTF8);
	for (;;) {
		enum json_tokener_error err;
		ssize_t n = read(fd, buf, AN_JSON_CHUNK);
		size_t end = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = sbrig_set_error(-errno, "%s: %s", path,
					      strerror(errno));
			goto free_tok;
		}
		if (n == 0)
			break;
		if (off + (uint64_t)n > AN_JSON_MAX_BYTES) {	/* it grew */
			ret = sbrig_set_error(-EFBIG, "%s: larger than any real "
					      "document (at most %zu MiB)",
					      path, AN_JSON_MAX_BYTES >> 20);
			goto free_tok;
		}
		if (!done) {
			jcost_scan(&cost, buf, (size_t)n);
			if (jcost_total(&cost) > AN_JSON_MAX_TREE) {
				ret = sbrig_set_error(-EFBIG, "%s: by byte %"
					PRIu64 " its values would take more "
					"than the %zu MiB a document is given "
					"in memory: larger than any real "
					"document", path, off + (uint64_t)n,
					AN_JSON_MAX_TREE >> 20);
				goto free_tok;
			}
			root = json_tokener_parse_ex(tok, buf, (int)n);
			err = json_tokener_get_error(tok);
			if (err != json_tokener_success &&
			    err != json_tokener_continue) {
				ret = not_json(path, fd, off +
					       json_tokener_get_parse_end(tok),
					       json_tokener_error_desc(err));
				goto free_tok;
			}
			done = err == json_tokener_success;
			end = done ? json_tokener_get_parse_end(tok) : (size_t)n;
		}
		while (end < (size_t)n && blank(buf[end]))
			end++;
		if (end < (size_t)n) {
			ret = not_json(path, fd, off + end, "text after the end "
				       "of the document");
			goto free_tok;
		}
		off += (uint64_t)n;
	}
	if (!done) {
		ret = not_json(path, fd, off, json_tokener_error_desc(
				       json_tokener_error_parse_eof));
		goto free_tok;
	}
	*out = root;
	root = NULL;
free_tok:
	json_object_put(root);
	json_tokener_free(tok);
	free(buf);
close_fd:
	close(fd);
	return ret;
}

int an_report_load(const char *path, struct json_object **out)
{
	struct json_object *root = NULL;
	int ret;

	ret = an_json_load(path, &root);
	if (ret)
		return ret;
	ret = an_report_check(root);
	if (ret) {
		sbrig_prefix_error("%s", path);
		json_object_put(root);
		return ret;
	}
	*out = root;
	return 0;
}
