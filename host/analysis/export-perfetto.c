// SPDX-License-Identifier: GPL-2.0
/*
 * export-perfetto.c - a report as a Chrome trace (JSON object format),
 * which ui.perfetto.dev and chrome://tracing open (export-formats.md):
 *
 *	pid 1, the capture (process_name: "sbrig SCENARIO")
 *	  power_uW     a counter track ("ph":"C"): the finest envelope
 *	               level's mean per bucket, at the bucket's start
 *	  tid 1 states   suspended / awake as complete slices ("ph":"X")
 *	  tid 2 phases   the suspend/resume phases as complete slices, a
 *	               device pass's slowest callbacks in its args
 *	  tid 3 events   stimuli, resumes and findings as instants ("ph":"i")
 *	  blockers     each blocker one async track: its activations as
 *	               "ph":"b" / "ph":"e" pairs with the blocker's id
 *	               (blockers overlap, so they cannot be "X" slices on
 *	               one thread; one blocker's own activations never do)
 *	pid 2, "kernel wakeup sources" (only when there are some)
 *	  each wakeup source one async track, cat "wakeup_source", as above
 *
 * Timestamps ("ts", "dur") are µs on the rig host's CLOCK_MONOTONIC,
 * written exactly from the report's ns (three decimals). Metadata
 * ("ph":"M") names the process and threads; the top-level "metadata"
 * object carries the capture's path and provenance.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <sbrig/sbrig.h>

#include "ex-formats.h"
#include "ex-text.h"
#include "report-load.h"

typedef struct json_object jobj;

enum { PID = 1, TID_STATES = 1, TID_PHASES = 2, TID_EVENTS = 3 };
enum { PID_WS = 2 };	/* the kernel's wakeup sources, a group of their own */

static jobj *get(jobj *o, const char *k)
{
	return an_jget(o, k);
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

static jobj *idx(jobj *a, size_t i)
{
	return json_object_array_get_idx(a, i);
}

static size_t len(jobj *a)
{
	return json_object_array_length(a);
}

/* the ",\n" before every event but the first */
static void sep(FILE *out, bool *first)
{
	fputs(*first ? "\n" : ",\n", out);
	*first = false;
}

static void meta_pid(FILE *out, bool *first, int pid, const char *what,
		     int tid, const char *name)
{
	sep(out, first);
	fprintf(out, "{\"ph\":\"M\",\"pid\":%d,", pid);
	if (tid)
		fprintf(out, "\"tid\":%d,", tid);
	fprintf(out, "\"name\":\"%s\",\"args\":{\"name\":\"", what);
	ex_json_str(out, name);
	fputs("\"}}", out);
}

static void meta(FILE *out, bool *first, const char *what, int tid,
		 const char *name)
{
	meta_pid(out, first, PID, what, tid, name);
}

static void slice(FILE *out, bool *first, int tid, const char *cat,
		  const char *name, int64_t t_ns, int64_t dur_ns)
{
	sep(out, first);
	fprintf(out, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"%s\","
		"\"name\":\"", PID, tid, cat);
	ex_json_str(out, name);
	fputs("\",\"ts\":", out);
	ex_us(out, t_ns);
	fputs(",\"dur\":", out);
	ex_us(out, dur_ns);
	fputc('}', out);
}

/*
 * A suspend/resume phase as a complete slice; its slowest device
 * callbacks (dev_pm records), when it has some, as the slice's args:
 * "slowest_devices": [{"device", "verb", "duration_us", "error"}, ...],
 * slowest first (the log gives their durations, not their start times:
 * no slices of their own).
 */
static void phase(FILE *out, bool *first, jobj *p)
{
	jobj *dv = get(p, "slowest_devices");
	int64_t t = i64(p, "t_ns"), dur = i64(p, "duration_ns");

	sep(out, first);
	fprintf(out, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"phase\","
		"\"name\":\"", PID, TID_PHASES);
	ex_json_str(out, str(p, "name"));
	fputs("\",\"ts\":", out);
	ex_us(out, t);
	fputs(",\"dur\":", out);
	ex_us(out, dur);
	if (dv && len(dv)) {
		fputs(",\"args\":{\"slowest_devices\":[", out);
		for (size_t i = 0; i < len(dv); i++) {
			jobj *d = idx(dv, i);

			fputs(i ? ",{\"device\":\"" : "{\"device\":\"", out);
			ex_json_str(out, str(d, "device"));
			fputs("\",\"verb\":\"", out);
			ex_json_str(out, str(d, "verb"));
			fputs("\",\"duration_us\":", out);
			ex_us(out, i64(d, "duration_ns"));
			fprintf(out, ",\"error\":%" PRId64 "}", i64(d, "error"));
		}
		fputs("]}", out);
	}
	fputc('}', out);
}

static void instant(FILE *out, bool *first, const char *cat,
		    const char *name, int64_t t_ns, const char *detail)
{
	sep(out, first);
	fprintf(out, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,"
		"\"cat\":\"%s\",\"name\":\"", PID, TID_EVENTS, cat);
	ex_json_str(out, name);
	fputs("\",\"ts\":", out);
	ex_us(out, t_ns);
	if (detail) {
		fputs(",\"args\":{\"detail\":\"", out);
		ex_json_str(out, detail);
		fputs("\"}", out);
	}
	fputc('}', out);
}

/* a blocker's (@ws: a kernel wakeup source's) activation begins or ends */
static void async(FILE *out, bool *first, char ph, bool ws, size_t id,
		  const char *name, int64_t t_ns)
{
	sep(out, first);
	fprintf(out, "{\"ph\":\"%c\",\"pid\":%d,\"cat\":\"%s\","
		"\"id\":%zu,\"name\":\"", ph, ws ? PID_WS : PID,
		ws ? "wakeup_source" : "blocker", id);
	ex_json_str(out, name);
	fputs("\",\"ts\":", out);
	ex_us(out, t_ns);
	fputc('}', out);
}

/* the level with the smallest buckets, or NULL */
static jobj *finest(jobj *levels)
{
	jobj *best = NULL;

	for (size_t i = 0; i < len(levels); i++)
		if (!best || i64(idx(levels, i), "bucket_ns") <
			     i64(best, "bucket_ns"))
			best = idx(levels, i);
	return best;
}

static void power(FILE *out, bool *first, jobj *trace)
{
	jobj *lv = finest(get(trace, "levels")), *mean;
	int64_t t0, b;

	if (!lv)
		return;
	mean = get(lv, "mean");
	t0 = i64(lv, "t0_ns");
	b = i64(lv, "bucket_ns");
	for (size_t i = 0; i < len(mean); i++) {
		jobj *v = idx(mean, i);

		if (!v)		/* a bucket without samples: nothing drawn */
			continue;
		sep(out, first);
		fprintf(out, "{\"ph\":\"C\",\"pid\":%d,\"name\":\"power_uW\","
			"\"ts\":", PID);
		ex_us(out, t0 + (int64_t)i * b);
		fprintf(out, ",\"args\":{\"power_uW\":%.3f}}",
			json_object_get_double(v));
	}
}

static void provenance(FILE *out, jobj *cap)
{
	jobj *prov = get(cap, "provenance");

	fputs("\"metadata\":{\"source\":\"sbrig export --perfetto\","
	      "\"capture\":\"", out);
	ex_json_str(out, str(cap, "path"));
	fputs("\",\"time_unit\":\"us, host CLOCK_MONOTONIC\"", out);
	if (prov) {
		json_object_object_foreach(prov, k, v) {
			fputs(",\"", out);
			ex_json_str(out, k);
			fputs("\":\"", out);
			ex_json_str(out, v ? json_object_get_string(v) : "");
			fputc('"', out);
		}
	}
	fputc('}', out);
}

int ex_perfetto(jobj *r, FILE *out)
{
	jobj *cap = get(r, "capture"), *trace = get(r, "trace");
	jobj *states = get(trace, "states"), *tl = get(trace, "timeline");
	jobj *wk = get(r, "wakeups"), *fd = get(r, "findings");
	jobj *ph = get(r, "phases");
	const char *scenario = str(get(cap, "provenance"), "scenario");
	char pname[512];
	bool first = true, ws_named = false;

	snprintf(pname, sizeof(pname), "sbrig %s", *scenario ? scenario :
		 str(cap, "path"));
	fputs("{\"displayTimeUnit\":\"ms\",", out);
	provenance(out, cap);
	fputs(",\"traceEvents\":[", out);
	meta(out, &first, "process_name", 0, pname);
	meta(out, &first, "thread_name", TID_STATES, "states");
	meta(out, &first, "thread_name", TID_PHASES, "phases");
	meta(out, &first, "thread_name", TID_EVENTS, "events");
	power(out, &first, trace);
	for (size_t i = 0; i < len(states); i++) {
		jobj *st = idx(states, i), *sp = get(st, "spans");

		for (size_t k = 0; k < len(sp); k++) {
			int64_t a = json_object_get_int64(idx(idx(sp, k), 0));
			int64_t b = json_object_get_int64(idx(idx(sp, k), 1));

			slice(out, &first, TID_STATES, "state", str(st, "state"),
			      a, b - a);
		}
	}
	for (size_t c = 0; c < len(ph); c++) {
		jobj *p = get(idx(ph, c), "phases");

		for (size_t k = 0; k < len(p); k++)
			phase(out, &first, idx(p, k));
	}
	for (size_t i = 0; i < len(tl); i++) {
		jobj *row = idx(tl, i), *sp = get(row, "spans");
		bool ws = !strcmp(str(row, "kind"), "wakeup_source");

		if (ws && !ws_named) {
			meta_pid(out, &first, PID_WS, "process_name", 0,
				 "kernel wakeup sources");
			ws_named = true;
		}
		for (size_t k = 0; k < len(sp); k++) {
			async(out, &first, 'b', ws, i + 1, str(row, "name"),
			      json_object_get_int64(idx(idx(sp, k), 0)));
			async(out, &first, 'e', ws, i + 1, str(row, "name"),
			      json_object_get_int64(idx(idx(sp, k), 1)));
		}
	}
	for (size_t i = 0; i < len(wk); i++) {
		jobj *w = idx(wk, i);

		/* a resume no stimulus explains has none */
		if (get(w, "t_ns"))
			instant(out, &first, "stimulus", str(w, "stimulus"),
				i64(w, "t_ns"), NULL);
		instant(out, &first, "resume", "resume", i64(w, "resume_t_ns"),
			get(w, "wakeup_source") ? str(w, "wakeup_source") :
			get(w, "cause") ? str(w, "cause") : NULL);
	}
	for (size_t i = 0; i < len(fd); i++) {
		jobj *f = idx(fd, i);
		char name[256];

		if (!get(f, "t_ns"))
			continue;
		snprintf(name, sizeof(name), "%s%s%s", str(f, "kind"),
			 get(f, "blocker") ? ": " : "", str(f, "blocker"));
		instant(out, &first, "finding", name, i64(f, "t_ns"),
			str(f, "detail"));
	}
	fputs("\n]}\n", out);
	return ferror(out) ? sbrig_set_error(-ENOMEM, "perfetto: out of "
					     "memory") : 0;
}
