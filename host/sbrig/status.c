// SPDX-License-Identifier: GPL-2.0
/*
 * status.c - sbrig status: the rig for a person, or as JSON for scripts.
 *
 * The daemon answers "status" with "data key: value" lines
 * (host/doc/daemon-protocol.md). They are read into one JSON object (the
 * key's first dot separates the group: "rig.name" is .rig.name; the
 * values typed by key_types[], "none" a null), and both outputs are made
 * from that object: --json prints it with the problems found in it; the
 * text for a person puts those problems first, then one group a line or
 * a few, with units. What counts as a problem is one table, checks[].
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include <sbrig/sbrig.h>

#include "cli.h"

typedef struct json_object jobj;

const char status_args[] = "[--json] [--all [--timeout D]]";

const char status_help[] =
"Show the rig for a person: what is wrong first (a sensor or line error,\n"
"no agent ever on the target link, suspend_block not loaded, target\n"
"events lost, no clock exchange yet; a sleeping target is not a problem),\n"
"then the rig, its GPIO lines, the power sensor with a reading (when no\n"
"capture runs), the target (connected or asleep, agent, kernel, module,\n"
"boot), the link's counters, the clock offset and its uncertainty, the\n"
"running capture and operation, in units.\n"
"\n"
"      --json              the same as one JSON object, for scripts: the\n"
"                          daemon's status keys as paths (rig.name is\n"
"                          .rig.name, sensor.current_mA .sensor.current_mA),\n"
"                          numbers as numbers, \"none\" as null, and\n"
"                          \"problems\", a list of strings\n"
"      --all               every rig of this host: each daemon's socket in\n"
"                          the run directory (--run-dir, $SBRIG_RUN_DIR,\n"
"                          /run/sbrig; RIG.sock is the rig RIG, sbrigd.sock\n"
"                          the default rig), one line a rig, those with a\n"
"                          problem first: a daemon that does not answer\n"
"                          (and why), then the rigs' own problems; with\n"
"                          --json an object: \"run_dir\" and \"rigs\", a list\n"
"                          of {\"rig\", \"socket\", \"default\", \"answering\",\n"
"                          \"error\", \"problems\" (a silent daemon's error is\n"
"                          its problem), \"status\" (as --json's, or null)} in\n"
"                          that order\n"
"      --timeout D         with --all, the longest wait for the daemons'\n"
"                          answers (default 2s): they are asked at once\n"
"                          (as many as file descriptors allow), so this\n"
"                          bounds the whole, whatever the number of rigs\n"
"\n"
"Exit status: 0 (also when there are problems: they are the answer, with\n"
"--all also a daemon that does not answer), 1 the daemon refused, 2 usage\n"
"error, 3 it cannot be reached (with --all: the run directory cannot be\n"
"read or has no socket).\n";

/* ---- the daemon's lines into one object --------------------------------- */

enum vtype {
	V_STR,
	V_INT,
	V_FLOAT,
	V_BOOL,		/* yes|no */
	V_LINE,		/* "out active", "in inactive", "out error WHY" */
	V_SUMMARY,	/* a capture's "dir=... samples=..." words */
	V_OPERATION,	/* "running (KIND)": KIND */
};

/* Keys whose value is not a string ("line." matches every line). */
static const struct {
	const char *key;
	enum vtype type;
} key_types[] = {
	{ "line.", V_LINE },
	{ "daemon.clients", V_INT },
	{ "daemon.followers", V_INT },
	{ "sensor.busy_ms", V_INT },
	{ "sensor.rate_hz", V_FLOAT },
	{ "sensor.shunt_uohm", V_INT },
	{ "sensor.buffer_samples", V_INT },
	{ "sensor.current_mA", V_FLOAT },
	{ "sensor.bus_mV", V_FLOAT },
	{ "link.connected", V_BOOL },
	{ "link.asleep", V_BOOL },
	{ "link.silent_ms", V_INT },
	{ "link.frames_ok", V_INT },
	{ "link.frames_bad", V_INT },
	{ "link.reconnects", V_INT },
	{ "link.events_lost", V_INT },
	{ "clock.samples", V_INT },
	{ "clock.offset_ns", V_INT },
	{ "clock.uncert_ns", V_INT },
	{ "clock.drift_ppb", V_INT },
	{ "capture", V_SUMMARY },
	{ "operation", V_OPERATION },
};

/* The words of a capture summary that are not integers. */
static const struct {
	const char *key;
	enum vtype type;
} summary_types[] = {
	{ "dir", V_STR },
	{ "status", V_STR },
	{ "mean_mA", V_FLOAT },
};

static enum vtype type_of(const char *key)
{
	for (size_t i = 0; i < sizeof(key_types) / sizeof(key_types[0]); i++) {
		size_t n = strlen(key_types[i].key);

		if (key_types[i].key[n - 1] == '.' ?
		    !strncmp(key, key_types[i].key, n) :
		    !strcmp(key, key_types[i].key))
			return key_types[i].type;
	}
	return V_STR;
}

static jobj *new_number(enum vtype t, const char *v)
{
	char *end;

	if (t == V_INT) {
		long long n = strtoll(v, &end, 10);

		if (*v && !*end)
			return json_object_new_int64(n);
	} else {
		double d = strtod(v, &end);

		if (*v && !*end)
			return json_object_new_double(d);
	}
	return json_object_new_string(v);	/* as the daemon said it */
}

static jobj *new_summary(const char *v)
{
	jobj *o = json_object_new_object();
	char k[64], val[4096];

	while (kv_next(&v, k, sizeof(k), val, sizeof(val))) {
		enum vtype t = V_INT;

		for (size_t i = 0; i < sizeof(summary_types) /
		     sizeof(summary_types[0]); i++)
			if (!strcmp(k, summary_types[i].key))
				t = summary_types[i].type;
		json_object_object_add(o, k, t == V_STR ?
				       json_object_new_string(val) :
				       new_number(t, val));
	}
	return o;
}

static jobj *new_line(const char *v)
{
	jobj *o = json_object_new_object();
	char dir[8] = "";
	int n = 0;

	sscanf(v, "%7s %n", dir, &n);
	json_object_object_add(o, "dir", json_object_new_string(dir));
	if (!strncmp(v + n, "error ", 6))
		json_object_object_add(o, "error",
				       json_object_new_string(v + n + 6));
	else
		json_object_object_add(o, "active", json_object_new_boolean(
					!strcmp(v + n, "active")));
	return o;
}

static jobj *new_value(const char *key, const char *v)
{
	enum vtype t = type_of(key);

	if (!strcmp(v, "none") && t != V_STR)
		return NULL;
	switch (t) {
	case V_INT:
	case V_FLOAT:
		return new_number(t, v);
	case V_BOOL:
		return json_object_new_boolean(!strcmp(v, "yes"));
	case V_LINE:
		return new_line(v);
	case V_SUMMARY:
		return new_summary(v);
	case V_OPERATION:
		if (!strncmp(v, "running (", 9) && v[strlen(v) - 1] == ')')
			return json_object_new_string_len(v + 9,
							  (int)strlen(v) - 10);
		return json_object_new_string(v);
	case V_STR:
		break;
	}
	return json_object_new_string(v);
}

/* "group.rest: value" -> root[group][rest]; "group: none" -> null */
static void status_data(const char *text, void *ctx)
{
	jobj *root = ctx, *group;
	const char *sep = strstr(text, ": ");
	char key[128], head[64];
	const char *dot;

	if (!sep || (size_t)(sep - text) >= sizeof(key))
		return;
	snprintf(key, sizeof(key), "%.*s", (int)(sep - text), text);
	dot = strchr(key, '.');
	if (!dot) {
		json_object_object_add(root, key, !strcmp(sep + 2, "none") ?
				       NULL : new_value(key, sep + 2));
		return;
	}
	snprintf(head, sizeof(head), "%.*s", (int)(dot - key), key);
	if (!json_object_object_get_ex(root, head, &group) || !group) {
		group = json_object_new_object();
		json_object_object_add(root, head, group);
	}
	json_object_object_add(group, dot + 1, new_value(key, sep + 2));
}

/* ---- reading the object ------------------------------------------------- */

static jobj *get(jobj *root, const char *group, const char *key)
{
	jobj *g, *v;

	if (!json_object_object_get_ex(root, group, &g) || !g)
		return NULL;
	if (!key)
		return g;
	return json_object_object_get_ex(g, key, &v) ? v : NULL;
}

/* A value as text ("?" if there is none). */
static const char *str(jobj *root, const char *group, const char *key)
{
	jobj *v = get(root, group, key);

	return v ? json_object_get_string(v) : "?";
}

static bool has(jobj *root, const char *group, const char *key)
{
	return get(root, group, key) != NULL;
}

static int64_t num(jobj *root, const char *group, const char *key)
{
	return json_object_get_int64(get(root, group, key));
}

static double dbl(jobj *root, const char *group, const char *key)
{
	return json_object_get_double(get(root, group, key));
}

/* A time in the largest unit that keeps it readable: "+1.234 ms". */
static const char *fmt_ns(char *buf, size_t size, int64_t ns, bool sign)
{
	double a = ns < 0 ? -(double)ns : (double)ns;
	const char *s = ns < 0 ? "-" : sign ? "+" : "";

	if (a < 1e3)
		snprintf(buf, size, "%s%.0f ns", s, a);
	else if (a < 1e6)
		snprintf(buf, size, "%s%.3f us", s, a / 1e3);
	else if (a < 1e9)
		snprintf(buf, size, "%s%.3f ms", s, a / 1e6);
	else
		snprintf(buf, size, "%s%.3f s", s, a / 1e9);
	return buf;
}

/* ---- problems ----------------------------------------------------------- */

typedef void (*check_fn)(jobj *root, jobj *problems);

static void add_problem(jobj *problems, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_problem(jobj *problems, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(problems, json_object_new_string(buf));
}

/* the sensor's thread waiting this long on the device is a problem */
#define SENSOR_STUCK_MS 2000

static void check_sensor(jobj *root, jobj *problems)
{
	if (has(root, "sensor", "error"))
		add_problem(problems, "sensor: %s", str(root, "sensor",
							 "error"));
	if (has(root, "sensor", "busy") &&
	    num(root, "sensor", "busy_ms") >= SENSOR_STUCK_MS)
		add_problem(problems, "sensor: %s for %.1f s (the device does not answer)",
			    str(root, "sensor", "busy"),
			    num(root, "sensor", "busy_ms") / 1000.0);
}

static void check_lines(jobj *root, jobj *problems)
{
	jobj *lines = get(root, "line", NULL);

	if (!lines)
		return;
	json_object_object_foreach(lines, name, l) {
		jobj *e;

		if (json_object_object_get_ex(l, "error", &e))
			add_problem(problems, "line %s: %s", name,
				    json_object_get_string(e));
	}
}

/* A sleeping target's agent is silent: not a problem (print_target). */
static void check_link(jobj *root, jobj *problems)
{
	if (!get(root, "link", NULL) ||
	    json_object_get_boolean(get(root, "link", "asleep")))
		return;
	if (!json_object_get_boolean(get(root, "link", "connected"))) {
		add_problem(problems, "target: no agent answers on %s (%" PRId64
			    " reconnects; is sbagent running on the target?)",
			    str(root, "link", "uri"),
			    num(root, "link", "reconnects"));
		return;
	}
	if (!strcmp(str(root, "link", "module"), "-"))
		add_problem(problems, "target: suspend_block is not loaded");
}

static void check_events_lost(jobj *root, jobj *problems)
{
	int64_t n = num(root, "link", "events_lost");

	if (n > 0)
		add_problem(problems, "link: %" PRId64 " target event%s lost",
			    n, n == 1 ? " was" : "s were");
}

static void check_clock(jobj *root, jobj *problems)
{
	if (json_object_get_boolean(get(root, "link", "connected")) &&
	    !json_object_get_boolean(get(root, "link", "asleep")) &&
	    has(root, "clock", "samples") && !num(root, "clock", "samples"))
		add_problem(problems, "clock: no exchange with the agent yet: "
			    "target times cannot be put on the host's clock");
}

static const check_fn checks[] = {
	check_sensor, check_lines, check_link, check_events_lost, check_clock,
};

/* ---- the text for a person ---------------------------------------------- */

#define LABEL "%-11s"

static void print_group(const char *label, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void print_group(const char *label, const char *fmt, ...)
{
	char lab[16];
	va_list ap;

	snprintf(lab, sizeof(lab), "%s%s", label, *label ? ":" : "");
	printf(LABEL, lab);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void print_rig(jobj *root)
{
	jobj *lines = get(root, "line", NULL);
	const char *label = "lines";

	print_group("rig", "%s (%s, sha256 %.12s)", str(root, "rig", "name"),
		    str(root, "rig", "config"),
		    str(root, "rig", "config_sha256"));
	if (has(root, "daemon", "version"))
		print_group("daemon", "sbrigd %s", str(root, "daemon",
							  "version"));
	if (has(root, "daemon", "clients"))
		print_group("", "%" PRId64 " client%s connected, %" PRId64
			    " following the target's events",
			    num(root, "daemon", "clients"),
			    num(root, "daemon", "clients") == 1 ? "" : "s",
			    num(root, "daemon", "followers"));
	if (!lines || !json_object_object_length(lines)) {
		print_group(label, "none");
		return;
	}
	json_object_object_foreach(lines, name, l) {
		jobj *d, *e, *a;

		json_object_object_get_ex(l, "dir", &d);
		if (json_object_object_get_ex(l, "error", &e))
			print_group(label, "%s (%s): error: %s", name,
				    json_object_get_string(d),
				    json_object_get_string(e));
		else if (json_object_object_get_ex(l, "active", &a))
			print_group(label, "%s (%s): %s", name,
				    json_object_get_string(d),
				    json_object_get_boolean(a) ? "active" :
				    "inactive");
		label = "";
	}
}

static void print_sensor(jobj *root)
{
	double mA, V;

	if (!get(root, "sensor", NULL)) {
		print_group("sensor", "none (the rig has no [power] sensor)");
		return;
	}
	if (has(root, "sensor", "device"))
		print_group("sensor", "%s at %s", str(root, "sensor", "device"),
			    str(root, "sensor", "uri"));
	else
		print_group("sensor", "%s (not open)", str(root, "sensor",
							    "uri"));
	if (has(root, "sensor", "current_mA")) {
		mA = dbl(root, "sensor", "current_mA");
		V = dbl(root, "sensor", "bus_mV") / 1000;
		print_group("", "%.3f mA at %.3f V (%.1f mW)", mA, V, mA * V);
	} else if (!has(root, "sensor", "error")) {
		print_group("", "no reading while a capture samples");
	}
	if (has(root, "sensor", "rate_hz"))
		print_group("", "%.1f samples/s, shunt %.3f mOhm, "
			    "%" PRId64 "-sample buffers",
			    dbl(root, "sensor", "rate_hz"),
			    num(root, "sensor", "shunt_uohm") / 1000.0,
			    num(root, "sensor", "buffer_samples"));
	if (has(root, "sensor", "busy"))
		print_group("", "%s for %.1f s", str(root, "sensor", "busy"),
			    num(root, "sensor", "busy_ms") / 1000.0);
}

static void print_target(jobj *root)
{
	char a[32], b[32];

	if (!get(root, "link", NULL)) {
		print_group("target", "none (the rig has no [target] link)");
		return;
	}
	if (json_object_get_boolean(get(root, "link", "asleep")) &&
	    has(root, "asleep", "witness") &&
	    strcmp(str(root, "asleep", "witness"), "link"))
		print_group("target", "asleep, seen by the %s: %s (link %s)",
			    str(root, "asleep", "witness"),
			    str(root, "asleep", "detail"),
			    str(root, "link", "uri"));
	else if (json_object_get_boolean(get(root, "link", "asleep")))
		print_group("target", "asleep: no frame from its agent for %.1f "
			    "s (or it stopped), over %s",
			    num(root, "link", "silent_ms") / 1000.0,
			    str(root, "link", "uri"));
	else
		print_group("target", "%s %s",
			    json_object_get_boolean(get(root, "link",
							"connected")) ?
			    "connected over" : "NOT connected:",
			    str(root, "link", "uri"));
	if (has(root, "link", "boot_id")) {
		print_group("", "kernel %s, suspend_block %s, agent %s",
			    str(root, "link", "kernel"),
			    str(root, "link", "module"),
			    str(root, "link", "agent"));
		print_group("", "boot %s", str(root, "link", "boot_id"));
	}
	if (has(root, "asleep", "witness") &&
	    !json_object_get_boolean(get(root, "link", "asleep")) &&
	    strcmp(str(root, "asleep", "witness"), "link"))
		print_group("", "awake, seen by the %s: %s",
			    str(root, "asleep", "witness"),
			    str(root, "asleep", "detail"));
	print_group("link", "%" PRId64 " frames, %" PRId64 " bad, %" PRId64
		    " reconnects, %" PRId64 " events lost",
		    num(root, "link", "frames_ok"),
		    num(root, "link", "frames_bad"),
		    num(root, "link", "reconnects"),
		    num(root, "link", "events_lost"));
	if (!num(root, "clock", "samples"))
		print_group("clock", "no exchange yet");
	else
		print_group("clock", "offset %s +/- %s, drift %" PRId64
			    " ppb (%" PRId64 " exchanges)",
			    fmt_ns(a, sizeof(a), num(root, "clock",
						     "offset_ns"), true),
			    fmt_ns(b, sizeof(b), num(root, "clock",
						     "uncert_ns"), false),
			    num(root, "clock", "drift_ppb"),
			    num(root, "clock", "samples"));
}

static void print_capture(jobj *root)
{
	jobj *c = get(root, "capture", NULL);

	if (!c)
		print_group("capture", "none");
	else
		print_group("capture", "%s: %.1f s, %" PRId64 " samples, %"
			    PRId64 " gaps, %" PRId64 " events, mean %.3f mA",
			    str(root, "capture", "dir"),
			    num(root, "capture", "elapsed_ms") / 1000.0,
			    num(root, "capture", "samples"),
			    num(root, "capture", "gaps"),
			    num(root, "capture", "events"),
			    dbl(root, "capture", "mean_mA"));
	if (!get(root, "operation", NULL))
		print_group("operation", "none");
	else
		print_group("operation", "running (%s)",
			    json_object_get_string(get(root, "operation",
						       NULL)));
}

static void print_person(jobj *root)
{
	jobj *problems = get(root, "problems", NULL);
	size_t n = json_object_array_length(problems);

	if (!n)
		print_group("problems", "none");
	for (size_t i = 0; i < n; i++)
		print_group(i ? "" : "problems", "%s", json_object_get_string(
				json_object_array_get_idx(problems, i)));
	print_rig(root);
	print_sensor(root);
	print_target(root);
	print_capture(root);
}

/* ---- the command -------------------------------------------------------- */

/*
 * Ask the daemon at sock_path for its status (@r: how to wait): *@out the
 * object with its "problems". Return: EXIT_OK, or as request().
 */
static int status_get(struct reply *r, jobj **out)
{
	jobj *root = json_object_new_object(), *problems;
	int ret;

	r->data = status_data;
	r->ctx = root;
	ret = request("status", NULL, 0, r);
	if (ret != EXIT_OK) {
		json_object_put(root);
		return ret;
	}
	/* the same members whatever the rig has */
	if (!json_object_object_get_ex(root, "line", NULL))
		json_object_object_add(root, "line", json_object_new_object());
	if (!json_object_object_get_ex(root, "clock", NULL))
		json_object_object_add(root, "clock", NULL);
	problems = json_object_new_array();
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		checks[i](root, problems);
	json_object_object_add(root, "problems", problems);
	*out = root;
	return EXIT_OK;
}

static void print_json(jobj *o)
{
	printf("%s\n", json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* ---- --all: every rig of the host --------------------------------------- */

/* the most sockets --all lists (the rest are counted) */
#define ALL_MAX_RIGS 1024

struct rig_entry {
	char name[NAME_MAX + 1];	/* the socket's name without ".sock" */
	char sock[PATH_MAX];
	int rank;		/* 0 not answering, 1 problems, 2 fine */
	char error[512];	/* why it does not answer, or is no rig */
	jobj *status;		/* its status object (with "problems") */
};

static int rig_cmp(const void *a, const void *b)
{
	const struct rig_entry *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* @s on the terminal: control and non-ASCII bytes as '?' */
static void put_safe(const char *s)
{
	for (; *s; s++)
		putchar((unsigned char)*s >= ' ' && (unsigned char)*s < 0x7f ?
			*s : '?');
}

/* The rigs' sockets in run_dir into @rigs (at most @max). -errno. */
static int find_rigs(struct rig_entry *rigs, size_t max, size_t *n,
		     size_t *more)
{
	DIR *d = opendir(run_dir);
	struct dirent *de;

	*n = 0;
	*more = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		struct rig_entry *e;
		char why[128];

		if (len <= 5 || strcmp(de->d_name + len - 5, ".sock") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISSOCK(st.st_mode))
			continue;
		if (*n == max) {
			(*more)++;
			continue;
		}
		e = &rigs[(*n)++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%.*s", (int)(len - 5),
			 de->d_name);
		snprintf(e->sock, sizeof(e->sock), "%s/%s", run_dir,
			 de->d_name);
		if (sbrig_rig_name_check(e->name, why, sizeof(why)) < 0)
			snprintf(e->error, sizeof(e->error),
				 "not a rig's socket: the name is not a rig "
				 "name: %s", why);
	}
	closedir(d);
	return 0;
}

/*
 * --all asks every rig at once, each on a thread of its own, with one
 * deadline for them all: --timeout bounds the whole, whatever the number
 * of rigs. The threads are bounded by the file descriptors left (one
 * socket each; a few kept for the rest) and by what pthread_create()
 * grants; a thread asks another rig when it is done, within what is left
 * of the deadline, and a rig whose turn comes after it is not asked.
 */
#define ALL_FDS_KEPT 16
#define ASK_STACK_SIZE (1024 * 1024)	/* request()'s 64 KiB buffer, ASan */

struct ask_batch {
	struct rig_entry *rigs;
	size_t n;
	int timeout_ms;
	int64_t deadline_ns;	/* shared by every rig's request */
	size_t threads;		/* how many ask at once */
	pthread_mutex_t lock;
	size_t next;		/* the next rig a thread takes */
};

static void ask_rig(struct rig_entry *e, const struct ask_batch *b)
{
	struct reply r = {
		.timeout_ms = b->timeout_ms, .deadline_ns = b->deadline_ns,
		.quiet = true, .sock = e->sock, .no_signals = true,
	};
	int ret;

	if (e->error[0])
		return;		/* rank 0: listed with its error */
	if (sbrig_now_ns() >= b->deadline_ns) {
		snprintf(e->error, sizeof(e->error), "not asked: --timeout "
			 "(%d ms) ran out before its turn (%zu rigs asked at "
			 "once)", b->timeout_ms, b->threads);
		return;
	}
	ret = status_get(&r, &e->status);
	if (ret == EXIT_DAEMON) {
		snprintf(e->error, sizeof(e->error), "not answering: %s",
			 r.error);
	} else if (ret != EXIT_OK) {
		snprintf(e->error, sizeof(e->error), "status refused: %s",
			 r.final);
	} else {
		e->rank = json_object_array_length(get(e->status, "problems",
						       NULL)) ? 1 : 2;
	}
}

static void *ask_thread(void *arg)
{
	struct ask_batch *b = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&b->lock);
		i = b->next++;
		pthread_mutex_unlock(&b->lock);
		if (i >= b->n)
			return NULL;
		ask_rig(&b->rigs[i], b);
	}
}

/* How many requests may be open at once: the descriptors left. */
static size_t ask_fd_room(void)
{
	struct rlimit rl;
	int64_t room;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return ALL_MAX_RIGS;
	room = (int64_t)rl.rlim_cur - ALL_FDS_KEPT;
	return room < 1 ? 1 : room > ALL_MAX_RIGS ? ALL_MAX_RIGS : (size_t)room;
}

/*
 * Ask every rig (see above). Where no thread can be made, the rigs are
 * asked here, one after another, within the same deadline.
 */
static void ask_rigs(struct rig_entry *rigs, size_t n, int timeout_ms)
{
	struct ask_batch b = {
		.rigs = rigs, .n = n, .timeout_ms = timeout_ms,
		.deadline_ns = sbrig_now_ns() + timeout_ms * 1000000LL,
	};
	size_t want = n < ask_fd_room() ? n : ask_fd_room(), nth = 0;
	pthread_t *th = calloc(want, sizeof(*th));
	pthread_attr_t attr;

	pthread_mutex_init(&b.lock, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, ASK_STACK_SIZE);
	/* the count is for the message of a rig not asked: set it first */
	b.threads = want;
	pthread_mutex_lock(&b.lock);
	while (th && nth < want &&
	       !pthread_create(&th[nth], &attr, ask_thread, &b))
		nth++;
	b.threads = nth ? nth : 1;
	pthread_mutex_unlock(&b.lock);
	pthread_attr_destroy(&attr);
	if (!nth)
		ask_thread(&b);
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	free(th);
	pthread_mutex_destroy(&b.lock);
}

static void print_rig_line(const struct rig_entry *e, int width)
{
	jobj *root = e->status, *problems;
	size_t n;

	put_safe(e->name);
	printf("%*s", width - (int)strlen(e->name) + 2, "");
	if (!root) {
		put_safe(e->error);
		putchar('\n');
		return;
	}
	problems = get(root, "problems", NULL);
	n = json_object_array_length(problems);
	if (n) {
		printf("%zu problem%s: ", n, n == 1 ? "" : "s");
		for (size_t i = 0; i < n; i++) {
			if (i)
				printf("; ");
			put_safe(json_object_get_string(
				json_object_array_get_idx(problems, i)));
		}
		printf(" (");
	} else {
		printf("ok (");
	}
	printf("rig ");
	put_safe(str(root, "rig", "name"));
	if (has(root, "sensor", "current_mA"))
		printf(", %.3f mA", dbl(root, "sensor", "current_mA"));
	if (get(root, "link", NULL))
		printf(", target %s",
		       json_object_get_boolean(get(root, "link", "asleep")) ?
		       "asleep" :
		       json_object_get_boolean(get(root, "link", "connected")) ?
		       "connected" : "not connected");
	if (get(root, "capture", NULL)) {
		printf(", capturing into ");
		put_safe(str(root, "capture", "dir"));
	}
	printf(")\n");
}

static int status_all(bool json, int timeout_ms)
{
	struct rig_entry *rigs = calloc(ALL_MAX_RIGS, sizeof(*rigs));
	size_t n, more;
	int width = 3, ret;

	if (!rigs)
		return EXIT_FAIL;
	ret = find_rigs(rigs, ALL_MAX_RIGS, &n, &more);
	if (ret < 0 || !n) {
		fprintf(stderr, "sbrig status --all: %s: %s\n", run_dir,
			ret < 0 ? strerror(-ret) : "no rig's socket (NAME.sock) "
			"in it: no sbrigd runs here (see sbrigd(8))");
		free(rigs);
		return EXIT_DAEMON;
	}
	ask_rigs(rigs, n, timeout_ms);
	for (size_t i = 0; i < n; i++) {
		if ((int)strlen(rigs[i].name) > width)
			width = (int)strlen(rigs[i].name);
	}
	qsort(rigs, n, sizeof(*rigs), rig_cmp);
	if (json) {
		jobj *o = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(o, "run_dir",
				       json_object_new_string(run_dir));
		for (size_t i = 0; i < n; i++) {
			jobj *r = json_object_new_object(), *p = NULL;
			struct rig_entry *e = &rigs[i];

			/* a daemon that does not answer is its problem */
			if (e->status) {
				json_object_deep_copy(get(e->status, "problems",
							  NULL), &p, NULL);
			} else {
				p = json_object_new_array();
				json_object_array_add(p, json_object_new_string(
							e->error));
			}
			json_object_object_add(r, "rig",
					       json_object_new_string(e->name));
			json_object_object_add(r, "socket",
					       json_object_new_string(e->sock));
			json_object_object_add(r, "default",
					       json_object_new_boolean(
						!strcmp(e->name, "sbrigd")));
			json_object_object_add(r, "answering",
					       json_object_new_boolean(
						e->status != NULL));
			json_object_object_add(r, "error", e->error[0] ?
				json_object_new_string(e->error) : NULL);
			json_object_object_add(r, "problems", p);
			json_object_object_add(r, "status", e->status);
			e->status = NULL;	/* now @r's */
			json_object_array_add(a, r);
		}
		json_object_object_add(o, "rigs", a);
		print_json(o);
		json_object_put(o);
	} else {
		printf("%-*s  %s\n", width, "RIG", "STATE");
		for (size_t i = 0; i < n; i++)
			print_rig_line(&rigs[i], width);
		if (more)
			printf("(%zu more sockets not listed: at most %d)\n",
			       more, ALL_MAX_RIGS);
	}
	for (size_t i = 0; i < n; i++)
		json_object_put(rigs[i].status);
	free(rigs);
	return EXIT_OK;
}

/* ---- the command -------------------------------------------------------- */

int cmd_status(const struct command *c, int argc, char **argv)
{
	jobj *root;
	struct reply r = { 0 };
	bool json = false, all = false;
	int64_t timeout_ns = 2000000000LL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			command_help(c, stdout);
			return EXIT_OK;
		}
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--all")) {
			all = true;
		} else if (!strcmp(argv[i], "--timeout")) {
			if (i + 1 == argc)
				return usage_error(c->name, "--timeout needs a "
						   "DURATION");
			if (check_duration(c->name, "--timeout", argv[++i],
					   &timeout_ns))
				return EXIT_USAGE;
			if (timeout_ns > 3600 * 1000000000LL)
				return usage_error(c->name, "--timeout: at most "
						   "1h");
			if (timeout_ns < 1000000)
				timeout_ns = 1000000;
		} else {
			return usage_error(c->name, "unexpected argument '%s'",
					   argv[i]);
		}
	}
	if (all)
		return status_all(json, (int)(timeout_ns / 1000000));
	ret = status_get(&r, &root);
	if (ret != EXIT_OK)
		return fail(&r, ret, "status");
	if (json)
		print_json(root);
	else
		print_person(root);
	json_object_put(root);
	return EXIT_OK;
}
