// SPDX-License-Identifier: GPL-2.0
/*
 * target.c - sbrig target: the target from the rig host, through the
 * daemon's "target" requests (host/doc/daemon-protocol.md): the module's
 * policy and state, its statistics table, its events as the daemon
 * received them, and blockers held by the agent.
 *
 * The sub-commands are one table (subs[]); their options another
 * (opt_table[]): each sub-command names the options it takes, and one
 * parser fills a struct target_opts for all of them. Arguments are checked
 * here (the policy and state words are libsbrig's, sbrig/proto.h), so a
 * mistake is a usage error (exit 2) naming the argument before anything
 * is sent; the daemon checks them again for other clients.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/proto.h>
#include <sbrig/records.h>

#include "cli.h"

const char target_args[] =
	"policy|state|blockers|events|hold [ARGS...]";

const char target_help[] =
"The target, through its agent and the daemon: the suspend_block module's\n"
"policy and requested state, its statistics table and event log, and\n"
"blockers held by the agent.\n"
"\n"
"  policy forced|opportunistic [--timeout D]\n"
"      set the module's policy (/sys/kernel/suspend_block/policy)\n"
"  state on|mem|standby|freeze [--timeout D]\n"
"      request a state (/sys/kernel/suspend_block/state): under the\n"
"      forced policy a sleep state is entered at once, under the\n"
"      opportunistic one whenever no blocker is active. A sleep state\n"
"      returns once the rig sees the target asleep (no frame from its\n"
"      agent for the rig's quiet_ms) or back from a sleep; 'on' once\n"
"      the agent has written it\n"
"  blockers [--tsv] [--active] [--timeout D]\n"
"      the module's statistics table (debugfs suspend_blockers), one\n"
"      blocker a line, '*' marking the active ones, times in ms\n"
"  events [-n N] [--follow] [--tsv]\n"
"      the target's recent events as the daemon received them (it keeps\n"
"      the last 1024), oldest first: seq, the target's CLOCK_BOOTTIME in\n"
"      s, type, argument\n"
"  hold NAME DURATION\n"
"      the agent holds the blocker NAME for DURATION; returns when it\n"
"      released it\n"
"\n"
"      --timeout D         give up after D (policy, blockers: 10s; state:\n"
"                          30s); a command sent while the target sleeps\n"
"                          reaches it when it wakes\n"
"      --tsv               tab-separated, a header line naming the columns,\n"
"                          times in ns (blockers: the capture's stats.tsv\n"
"                          columns; events: its events.tsv columns)\n"
"      --active            only the active blockers\n"
"  -n, --count N           only the last N events kept (0: none)\n"
"  -f, --follow            then the new events as they come, until Ctrl-C\n"
"\n"
"Exit status: 0 done (a sleep state: the target went to sleep), 1 the\n"
"agent refused or failed, or the target did not fall asleep in time, 2\n"
"usage error (an unknown policy or state, a bad duration), 3 the daemon\n"
"cannot be reached.\n";

/* ---- options ------------------------------------------------------------ */

/**
 * struct target_opts - the options of every sub-command (NULL/false: not
 * given)
 */
struct target_opts {
	const char *timeout;
	bool tsv;
	bool active;
	const char *count;
	bool follow;
};

enum {
	O_TIMEOUT = 1 << 0,
	O_TSV = 1 << 1,
	O_ACTIVE = 1 << 2,
	O_COUNT = 1 << 3,
	O_FOLLOW = 1 << 4,
};

static const struct {
	unsigned int bit;
	const char *name;
	char shrt;		/* short option, or 0 */
	bool has_arg;		/* a const char * at @off, else a bool */
	size_t off;
} opt_table[] = {
	{ O_TIMEOUT, "timeout", 0, true, offsetof(struct target_opts, timeout) },
	{ O_TSV, "tsv", 0, false, offsetof(struct target_opts, tsv) },
	{ O_ACTIVE, "active", 0, false, offsetof(struct target_opts, active) },
	{ O_COUNT, "count", 'n', true, offsetof(struct target_opts, count) },
	{ O_FOLLOW, "follow", 'f', false, offsetof(struct target_opts, follow) },
};

#define N_OPTS (sizeof(opt_table) / sizeof(opt_table[0]))

struct target_sub;
typedef int (*target_fn)(const struct target_sub *t, int argc, char **argv,
			 const struct target_opts *o);

/**
 * struct target_sub - one sub-command
 * @name: the word after "target"
 * @opts: the options it takes (O_* bits)
 * @nargs: its positional arguments
 * @args: their synopsis, for messages
 * @fn: runs it with its positional arguments
 */
struct target_sub {
	const char *name;
	unsigned int opts;
	int nargs;
	const char *args;
	target_fn fn;
};

/*
 * Parse @argc/@argv (argv[0] is the sub-command) with the options @t
 * takes. Return -1 to go on (positional arguments from optind), else the
 * exit status (--help, a usage error).
 */
static int parse_opts(const struct target_sub *t, int argc, char **argv,
		      struct target_opts *o)
{
	struct option longs[N_OPTS + 2];
	char shorts[2 * N_OPTS + 4] = "h";
	size_t n = 0, ns = 1;
	char what[64];
	int opt;

	for (size_t i = 0; i < N_OPTS; i++) {
		if (!(t->opts & opt_table[i].bit))
			continue;
		longs[n++] = (struct option){ opt_table[i].name,
			opt_table[i].has_arg ? required_argument : no_argument,
			NULL, 256 + (int)i };
		if (opt_table[i].shrt) {
			shorts[ns++] = opt_table[i].shrt;
			if (opt_table[i].has_arg)
				shorts[ns++] = ':';
		}
	}
	longs[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	longs[n] = (struct option){ NULL, 0, NULL, 0 };
	shorts[ns] = '\0';
	snprintf(what, sizeof(what), "target %s", t->name);
	optind = 0;
	while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		size_t i;

		if (opt == 'h') {
			printf("Usage: sbrig [-s SOCKET] target %s %s\n\n%s",
			       t->name, t->args, target_help);
			return EXIT_OK;
		}
		for (i = 0; i < N_OPTS; i++)
			if (opt == 256 + (int)i ||
			    (opt_table[i].shrt && opt == opt_table[i].shrt))
				break;
		if (i == N_OPTS)
			return usage_error(what, "bad option");
		if (opt_table[i].has_arg)
			*(const char **)((char *)o + opt_table[i].off) = optarg;
		else
			*(bool *)((char *)o + opt_table[i].off) = true;
	}
	if (argc - optind != t->nargs)
		return usage_error(what, "expected %s", t->args[0] ?
				   t->args : "no argument");
	if (o->timeout && check_duration(what, "--timeout", o->timeout, NULL))
		return EXIT_USAGE;
	return -1;
}

/* @w must be one of @words: else a usage error naming @what. */
static int check_word(const struct target_sub *t, const char *what,
		      const char *const *words, const char *w)
{
	char list[128], cmd[64];

	if (sbrig_proto_word(words, w) >= 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "target %s", t->name);
	return usage_error(cmd, "unknown %s '%s' (%s)", what, w,
			   sbrig_proto_words(words, ", ", list, sizeof(list)));
}

/* "target VERB ARG [timeout=D]" */
static int target_line(char *line, size_t size, const char *verb,
		       const char *arg, const struct target_opts *o)
{
	char opt[96];

	snprintf(line, size, "target %s", verb);
	if (arg && add_arg(line, size, arg))
		return -1;
	if (o->timeout) {
		snprintf(opt, sizeof(opt), "timeout=%s", o->timeout);
		if (add_arg(line, size, opt))
			return -1;
	}
	return 0;
}

/* ---- policy, state, hold ------------------------------------------------ */

static void state_progress(const char *text, void *ctx)
{
	const char *state = ctx;

	if (!tty || strncmp(text, "accepted ", 9))
		return;
	if (sbrig_proto_state_sleeps(state))
		fprintf(stderr, "%s; waiting for the target to fall asleep\n",
			text + 9);
	else
		fprintf(stderr, "%s\n", text + 9);
	fflush(stderr);
}

/* Send @line; print the summary ("key: value") on success. */
static int simple_request(const struct target_sub *t, const char *line,
			  void *ctx)
{
	struct reply r = { .progress = state_progress, .ctx = ctx };
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "target %s", t->name);
	ret = request(line, NULL, 0, &r);
	if (ret == EXIT_OK)
		print_kv(stdout, r.final);
	return fail(&r, ret, what);
}

static int sub_policy(const struct target_sub *t, int argc, char **argv,
		      const struct target_opts *o)
{
	char line[256];

	if (check_word(t, "policy", sbrig_proto_policies, argv[0]))
		return EXIT_USAGE;
	target_line(line, sizeof(line), "policy", argv[0], o);
	return simple_request(t, line, argv[0]);
}

static int sub_state(const struct target_sub *t, int argc, char **argv,
		     const struct target_opts *o)
{
	char line[256];

	if (check_word(t, "state", sbrig_proto_states, argv[0]))
		return EXIT_USAGE;
	target_line(line, sizeof(line), "state", argv[0], o);
	return simple_request(t, line, argv[0]);
}

/* NAME DURATION: a name the link carries unchanged, a duration >= 1ms. */
static int hold(const char *cmd, const struct target_sub *t, char **argv)
{
	char line[SBRIG_PROTO_STR_MAX * 2 + 64] = "target hold";
	int64_t ns;

	for (const char *p = argv[0]; *p; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
			return usage_error(cmd, "NAME: '%s' is not a blocker "
					   "name (printable ASCII, no '\"' or "
					   "'\\')", argv[0]);
	if (!argv[0][0] || strlen(argv[0]) > SBRIG_PROTO_STR_MAX)
		return usage_error(cmd, "NAME: 1 to %d characters",
				   SBRIG_PROTO_STR_MAX);
	if (check_duration(cmd, "DURATION", argv[1], &ns))
		return EXIT_USAGE;
	if (ns < 1000000)
		return usage_error(cmd, "DURATION: '%s' is below 1ms", argv[1]);
	if (add_arg(line, sizeof(line), argv[0]) ||
	    add_arg(line, sizeof(line), argv[1]))
		return usage_error(cmd, "NAME: too long");
	return simple_request(t, line, (void *)"");
}

static int sub_hold(const struct target_sub *t, int argc, char **argv,
		    const struct target_opts *o)
{
	return hold("target hold", t, argv);
}

/* ---- blockers ----------------------------------------------------------- */

/* The columns of a "data blocker" line, in the module's order. */
static const struct {
	const char *key;	/* in the answer and the TSV header */
	const char *shown;	/* in the table (times in ms) */
	size_t off;
	bool time;
} blocker_cols[] = {
	{ "count", "count", offsetof(struct sbrig_blocker_stats, count), false },
	{ "wake_count", "wake_count",
	  offsetof(struct sbrig_blocker_stats, wake_count), false },
	{ "active_since_ns", "active_since_ms",
	  offsetof(struct sbrig_blocker_stats, active_since_ns), true },
	{ "total_time_ns", "total_time_ms",
	  offsetof(struct sbrig_blocker_stats, total_time_ns), true },
	{ "sleep_time_ns", "sleep_time_ms",
	  offsetof(struct sbrig_blocker_stats, sleep_time_ns), true },
	{ "max_time_ns", "max_time_ms",
	  offsetof(struct sbrig_blocker_stats, max_time_ns), true },
	{ "last_change_ns", "last_change_ms",
	  offsetof(struct sbrig_blocker_stats, last_change_ns), true },
};

#define N_COLS (sizeof(blocker_cols) / sizeof(blocker_cols[0]))
#define CELL_MAX 32

/**
 * struct blockers - the rows of a "target blockers" answer
 * @rows: in the module's order
 * @n: rows
 * @size: allocated
 * @bad: a line that did not parse (the first one)
 * @oom: out of memory: rows were lost
 */
struct blockers {
	struct sbrig_blocker_stats *rows;
	size_t n, size;
	char bad[128];
	bool oom;
};

/* The counters are uint64_t and the times int64_t: both 8 bytes. */
static void set_col(struct sbrig_blocker_stats *st, size_t c, const char *v)
{
	void *p = (char *)st + blocker_cols[c].off;

	if (blocker_cols[c].time)
		*(int64_t *)p = strtoll(v, NULL, 10);
	else
		*(uint64_t *)p = strtoull(v, NULL, 10);
}

static void blocker_row(const char *text, void *ctx)
{
	struct blockers *b = ctx;
	struct sbrig_blocker_stats st = { .name = "" };
	char k[32], v[SBRIG_NAME_MAX];
	bool named = false;

	if (strncmp(text, "blocker ", 8)) {
		if (!b->bad[0])
			snprintf(b->bad, sizeof(b->bad), "%s", text);
		return;
	}
	text += 8;
	while (kv_next(&text, k, sizeof(k), v, sizeof(v))) {
		if (!strcmp(k, "name")) {
			snprintf(st.name, sizeof(st.name), "%s", v);
			named = true;
			continue;
		}
		for (size_t c = 0; c < N_COLS; c++)
			if (!strcmp(k, blocker_cols[c].key))
				set_col(&st, c, v);
	}
	if (!named)
		return;
	if (b->n == b->size) {
		size_t size = b->size ? 2 * b->size : 64;
		struct sbrig_blocker_stats *p = realloc(b->rows,
							size * sizeof(*p));

		if (!p) {
			b->oom = true;
			return;
		}
		b->rows = p;
		b->size = size;
	}
	b->rows[b->n++] = st;
}

static void cell(char *buf, const struct sbrig_blocker_stats *st, size_t c,
		 bool ms)
{
	const void *p = (const char *)st + blocker_cols[c].off;
	int64_t v;

	if (!blocker_cols[c].time) {
		snprintf(buf, CELL_MAX, "%" PRIu64, *(const uint64_t *)p);
		return;
	}
	v = *(const int64_t *)p;
	if (!ms)
		snprintf(buf, CELL_MAX, "%" PRId64, v);
	else
		snprintf(buf, CELL_MAX, "%s%llu.%03llu", v < 0 ? "-" : "",
			 (unsigned long long)llabs(v) / 1000000,
			 (unsigned long long)llabs(v) / 1000 % 1000);
}

static void print_tsv(const struct blockers *b, bool active)
{
	char buf[CELL_MAX];

	printf("name");
	for (size_t c = 0; c < N_COLS; c++)
		printf("\t%s", blocker_cols[c].key);
	printf("\n");
	for (size_t i = 0; i < b->n; i++) {
		if (active && !b->rows[i].active_since_ns)
			continue;
		printf("%s", b->rows[i].name);
		for (size_t c = 0; c < N_COLS; c++) {
			cell(buf, &b->rows[i], c, false);
			printf("\t%s", buf);
		}
		printf("\n");
	}
}

/* sbctl list's table: aligned columns, '*' marks an active blocker. */
static void print_table(const struct blockers *b, bool active)
{
	int w[N_COLS], name_w = 4;
	char buf[CELL_MAX];

	for (size_t c = 0; c < N_COLS; c++)
		w[c] = (int)strlen(blocker_cols[c].shown);
	for (size_t i = 0; i < b->n; i++) {
		if (active && !b->rows[i].active_since_ns)
			continue;
		if ((int)strlen(b->rows[i].name) > name_w)
			name_w = (int)strlen(b->rows[i].name);
		for (size_t c = 0; c < N_COLS; c++) {
			cell(buf, &b->rows[i], c, true);
			if ((int)strlen(buf) > w[c])
				w[c] = (int)strlen(buf);
		}
	}
	printf("  %-*s", name_w, "name");
	for (size_t c = 0; c < N_COLS; c++)
		printf("  %*s", w[c], blocker_cols[c].shown);
	printf("\n");
	for (size_t i = 0; i < b->n; i++) {
		const struct sbrig_blocker_stats *st = &b->rows[i];

		if (active && !st->active_since_ns)
			continue;
		printf("%s %-*s", st->active_since_ns ? "*" : " ", name_w,
		       st->name);
		for (size_t c = 0; c < N_COLS; c++) {
			cell(buf, st, c, true);
			printf("  %*s", w[c], buf);
		}
		printf("\n");
	}
}

static int sub_blockers(const struct target_sub *t, int argc, char **argv,
			const struct target_opts *o)
{
	struct blockers b = { 0 };
	struct reply r = { .data = blocker_row, .ctx = &b };
	char line[256];
	int ret;

	target_line(line, sizeof(line), "blockers", NULL, o);
	ret = request(line, NULL, 0, &r);
	if (ret == EXIT_OK && (b.oom || b.bad[0])) {
		fprintf(stderr, "sbrig target blockers: %s%s\n", b.oom ?
			"out of memory" : "unexpected answer: ", b.bad);
		ret = EXIT_FAIL;
	} else if (ret == EXIT_OK) {
		if (o->tsv)
			print_tsv(&b, o->active);
		else
			print_table(&b, o->active);
	}
	free(b.rows);
	return ret == EXIT_OK ? EXIT_OK : fail(&r, ret, "target blockers");
}

/* ---- events ------------------------------------------------------------- */

/**
 * struct events_out - how "data event" lines are printed
 * @tsv: as the capture's events.tsv rows (after a header line)
 * @boot: the boot of the last line printed ("" before the first)
 * @n: events printed
 */
struct events_out {
	bool tsv;
	char boot[SBRIG_BOOT_ID_MAX];
	uint64_t n;
};

static const char *const event_keys[] = {
	"host_t_ns", "uncert_ns", "target_t_ns", "boot_id", "seq", "type",
	"arg", "cut", "obj",
};

#define N_EV_KEYS (sizeof(event_keys) / sizeof(event_keys[0]))
enum { E_HOST, E_UNCERT, E_TARGET, E_BOOT, E_SEQ, E_TYPE, E_ARG, E_CUT, E_OBJ };

static void event_line(const char *text, void *ctx)
{
	struct events_out *out = ctx;
	char v[N_EV_KEYS][SBRIG_NAME_MAX], k[32], val[SBRIG_NAME_MAX];
	long long t;

	if (!strncmp(text, "dropped ", 8)) {
		char n[32] = "?";

		kv_get(text + 8, "events", n, sizeof(n));
		fprintf(stderr, "sbrig target events: %s events not shown: "
			"this reader was too slow\n", n);
		return;
	}
	if (strncmp(text, "event ", 6))
		return;
	memset(v, 0, sizeof(v));
	text += 6;
	while (kv_next(&text, k, sizeof(k), val, sizeof(val)))
		for (size_t i = 0; i < N_EV_KEYS; i++)
			if (!strcmp(k, event_keys[i]))
				snprintf(v[i], sizeof(v[i]), "%s", val);
	out->n++;
	if (out->tsv) {
		for (size_t i = 0; i < N_EV_KEYS; i++)
			printf("%s%s", i ? "\t" : "", v[i]);
		printf("\n");
		return;
	}
	if (strcmp(out->boot, v[E_BOOT])) {
		printf("-- boot %s --\n", v[E_BOOT]);
		snprintf(out->boot, sizeof(out->boot), "%s", v[E_BOOT]);
	}
	t = atoll(v[E_TARGET]);
	/* blocker names quoted as in the module's log */
	if (!strcmp(v[E_TYPE], "block") || !strcmp(v[E_TYPE], "unblock"))
		printf("%10s %10lld.%09lld  %-7s \"%s\"%s%s%s\n", v[E_SEQ],
		       t / 1000000000, t % 1000000000, v[E_TYPE], v[E_ARG],
		       !strcmp(v[E_CUT], "1") ? "+" : "",
		       v[E_OBJ][0] && strcmp(v[E_OBJ], "0") ? " #" : "",
		       strcmp(v[E_OBJ], "0") ? v[E_OBJ] : "");
	else
		printf("%10s %10lld.%09lld  %-7s %s\n", v[E_SEQ],
		       t / 1000000000, t % 1000000000, v[E_TYPE], v[E_ARG]);
	fflush(stdout);
}

static int sub_events(const struct target_sub *t, int argc, char **argv,
		      const struct target_opts *o)
{
	struct events_out out = { .tsv = o->tsv };
	struct reply r = { .data = event_line, .ctx = &out };
	char line[256] = "target events", opt[64], *end;
	unsigned long n;
	int ret;

	if (o->count) {
		errno = 0;
		n = strtoul(o->count, &end, 10);
		if (errno || *end || o->count[0] < '0' || o->count[0] > '9' ||
		    n > 1024)
			return usage_error("target events", "-n: '%s' is not "
					   "0..1024", o->count);
		snprintf(opt, sizeof(opt), "n=%lu", n);
		add_arg(line, sizeof(line), opt);
	}
	if (o->follow)
		add_arg(line, sizeof(line), "follow=yes");
	if (out.tsv) {
		for (size_t i = 0; i < N_EV_KEYS; i++)
			printf("%s%s", i ? "\t" : "", event_keys[i]);
		printf("\n");
		fflush(stdout);
	}
	ret = request(line, NULL, 0, &r);
	return fail(&r, ret, "target events");
}

/* ---- the command -------------------------------------------------------- */

static const struct target_sub subs[] = {
	{ "policy", O_TIMEOUT, 1, "forced|opportunistic [--timeout D]",
	  sub_policy },
	{ "state", O_TIMEOUT, 1, "on|mem|standby|freeze [--timeout D]",
	  sub_state },
	{ "blockers", O_TSV | O_ACTIVE | O_TIMEOUT, 0,
	  "[--tsv] [--active] [--timeout D]", sub_blockers },
	{ "events", O_COUNT | O_FOLLOW | O_TSV, 0, "[-n N] [--follow] [--tsv]",
	  sub_events },
	{ "hold", 0, 2, "NAME DURATION", sub_hold },
};

int cmd_target(const struct command *c, int argc, char **argv)
{
	struct target_opts o = { 0 };
	int ret;

	if (argc >= 2 && (!strcmp(argv[1], "--help") ||
			  !strcmp(argv[1], "-h"))) {
		command_help(c, stdout);
		return EXIT_OK;
	}
	if (argc < 2)
		return usage_error(c->name, "expected policy, state, blockers, "
				   "events or hold");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (strcmp(argv[1], subs[i].name))
			continue;
		ret = parse_opts(&subs[i], argc - 1, argv + 1, &o);
		if (ret >= 0)
			return ret;
		return subs[i].fn(&subs[i], argc - 1 - optind,
				  argv + 1 + optind, &o);
	}
	return usage_error(c->name, "unknown sub-command '%s' (policy, state, "
			   "blockers, events, hold)", argv[1]);
}

/* sbrig hold NAME DURATION: target hold by its older name */
int cmd_hold(const struct command *c, int argc, char **argv)
{
	static const struct target_sub t = { "hold", 0, 2, "NAME DURATION",
					     sub_hold };

	if (argc == 2 && (!strcmp(argv[1], "--help") ||
			  !strcmp(argv[1], "-h"))) {
		command_help(c, stdout);
		return EXIT_OK;
	}
	if (argc != 3)
		return usage_error(c->name, "expected NAME DURATION");
	return hold(c->name, &t, argv + 1);
}
