// SPDX-License-Identifier: GPL-2.0
/*
 * stats.c - parsers for the module's debugfs text, one line at a time.
 *
 * suspend_blockers (kernel-module/stats.c, the seed's table):
 *
 *	name	count	wake_count	active_since	total_time	sleep_time	max_time	last_change
 *	"NAME"	U32	U32	S64	S64	S64	S64	S64
 *
 * suspend_blocker_events (kernel-module/events.c):
 *
 *	SEQ	T_NS	TYPE	ARG
 *
 * A blocker name is whatever user space passed to the module, so it may
 * hold tabs and quotes: a stats row is split from the right (the last
 * seven columns are numbers, what is before them is the quoted name), and
 * an event's ARG is everything after the third tab. Nothing here trusts
 * the input: every field is checked and a bad line is -EINVAL with the
 * column named, never a crash or a partial record.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sbrig/stats.h>

#include "internal.h"

#define STATS_HEADER "name\tcount\twake_count\tactive_since\ttotal_time\t" \
		     "sleep_time\tmax_time\tlast_change"

/* A field of a line: not NUL-terminated. */
struct field {
	const char *s;
	size_t n;
};

/* Length of @line without one trailing "\n" or "\r\n". */
static size_t line_len(const char *line)
{
	size_t n = strlen(line);

	if (n && line[n - 1] == '\n')
		n--;
	if (n && line[n - 1] == '\r')
		n--;
	return n;
}

static bool parse_u64(struct field f, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!f.n || f.n > 20)
		return false;
	for (i = 0; i < f.n; i++) {
		unsigned int d = (unsigned char)f.s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_s64(struct field f, int64_t *out)
{
	bool neg = f.n && f.s[0] == '-';
	uint64_t v;

	if (neg) {
		f.s++;
		f.n--;
	}
	if (!parse_u64(f, &v) || v > (uint64_t)INT64_MAX + neg)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* Copies a field into a NUL-terminated buffer, refusing NUL bytes. */
static bool copy_field(struct field f, char *dst, size_t size)
{
	if (f.n >= size || memchr(f.s, '\0', f.n))
		return false;
	memcpy(dst, f.s, f.n);
	dst[f.n] = '\0';
	return true;
}

/* ---- suspend_blockers ---------------------------------------------------- */

static const char *const stats_columns[] = {
	"name", "count", "wake_count", "active_since", "total_time",
	"sleep_time", "max_time", "last_change",
};

int sbrig_stats_parse_line(const char *line, struct sbrig_blocker_stats *row)
{
	struct sbrig_blocker_stats r;
	struct field f[8];
	size_t n = line_len(line), end = n;
	int col;

	if (n == strlen(STATS_HEADER) && !strncmp(line, STATS_HEADER, n))
		return 1;
	/* the seven number columns, from the right */
	for (col = 7; col >= 1; col--) {
		const char *tab = NULL;
		size_t i;

		for (i = end; i > 0; i--)
			if (line[i - 1] == '\t') {
				tab = line + i - 1;
				break;
			}
		if (!tab)
			return sbrig_set_error(-EINVAL,
				"suspend_blockers: %d columns, expected 8",
				8 - col);
		f[col].s = tab + 1;
		f[col].n = end - (size_t)(tab + 1 - line);
		end = (size_t)(tab - line);
	}
	f[0].s = line;
	f[0].n = end;

	memset(&r, 0, sizeof(r));
	if (f[0].n < 2 || f[0].s[0] != '"' || f[0].s[f[0].n - 1] != '"')
		return sbrig_set_error(-EINVAL,
			"suspend_blockers: column 1 (name): not a quoted name");
	f[0].s++;
	f[0].n -= 2;
	if (!copy_field(f[0], r.name, sizeof(r.name)))
		return sbrig_set_error(-EINVAL,
			"suspend_blockers: column 1 (name): longer than %d bytes",
			SBRIG_NAME_MAX - 1);
	if (!parse_u64(f[1], &r.count) || r.count > UINT32_MAX)
		col = 1;
	else if (!parse_u64(f[2], &r.wake_count) || r.wake_count > UINT32_MAX)
		col = 2;
	else if (!parse_s64(f[3], &r.active_since_ns))
		col = 3;
	else if (!parse_s64(f[4], &r.total_time_ns))
		col = 4;
	else if (!parse_s64(f[5], &r.sleep_time_ns))
		col = 5;
	else if (!parse_s64(f[6], &r.max_time_ns))
		col = 6;
	else if (!parse_s64(f[7], &r.last_change_ns))
		col = 7;
	else
		col = 0;
	if (col)
		return sbrig_set_error(-EINVAL,
			"suspend_blockers: column %d (%s): '%.*s' is not a number",
			col + 1, stats_columns[col],
			(int)(f[col].n > 32 ? 32 : f[col].n), f[col].s);
	*row = r;
	return 0;
}

/* ---- suspend_blocker_events ---------------------------------------------- */

/* ARG parsers: check @arg and store it (unquoted) in @ev->arg. */
typedef int (*event_arg_fn)(struct field arg, struct sbrig_event *ev);

static int arg_name(struct field a, struct sbrig_event *ev)
{
	if (a.n >= 3 && a.s[a.n - 1] == '+' && a.s[a.n - 2] == '"') {
		ev->cut = true;
		a.n--;
	}
	if (a.n < 2 || a.s[0] != '"' || a.s[a.n - 1] != '"')
		return -EINVAL;
	a.s++;
	a.n -= 2;
	return copy_field(a, ev->arg, sizeof(ev->arg)) ? 0 : -EINVAL;
}

static bool is_word(struct field a)
{
	size_t i;

	if (!a.n)
		return false;
	for (i = 0; i < a.n; i++)
		if ((unsigned char)a.s[i] <= ' ' || a.s[i] == 0x7f)
			return false;
	return true;
}

/* a state name: mem, freeze, standby, disk, on */
static int arg_state(struct field a, struct sbrig_event *ev)
{
	if (!is_word(a))
		return -EINVAL;
	return copy_field(a, ev->arg, sizeof(ev->arg)) ? 0 : -EINVAL;
}

/* an errno-style return code */
static int arg_retval(struct field a, struct sbrig_event *ev)
{
	int64_t v;

	if (!parse_s64(a, &v) || v < INT32_MIN || v > INT32_MAX)
		return -EINVAL;
	return copy_field(a, ev->arg, sizeof(ev->arg)) ? 0 : -EINVAL;
}

/* "POLICY STATE" */
static int arg_policy(struct field a, struct sbrig_event *ev)
{
	const char *sp = memchr(a.s, ' ', a.n);
	struct field p, s;

	if (!sp)
		return -EINVAL;
	p.s = a.s;
	p.n = (size_t)(sp - a.s);
	s.s = sp + 1;
	s.n = a.n - p.n - 1;
	if (!is_word(s) || !((p.n == 6 && !memcmp(p.s, "forced", 6)) ||
			     (p.n == 13 && !memcmp(p.s, "opportunistic", 13))))
		return -EINVAL;
	return copy_field(a, ev->arg, sizeof(ev->arg)) ? 0 : -EINVAL;
}

/* records lost: a positive count */
static int arg_count(struct field a, struct sbrig_event *ev)
{
	uint64_t v;

	if (!parse_u64(a, &v) || !v)
		return -EINVAL;
	return copy_field(a, ev->arg, sizeof(ev->arg)) ? 0 : -EINVAL;
}

static const struct {
	const char *type;
	event_arg_fn parse;
	const char *expected;
} event_types[] = {
	{ "block", arg_name, "a quoted blocker name" },
	{ "unblock", arg_name, "a quoted blocker name" },
	{ "suspend", arg_state, "a state name" },
	{ "enter", arg_state, "a state name" },
	{ "exit", arg_state, "a state name" },
	{ "resume", arg_retval, "a return code" },
	{ "abort", arg_retval, "a return code" },
	{ "policy", arg_policy, "'forced|opportunistic STATE'" },
	{ "lost", arg_count, "a record count" },
};

int sbrig_event_parse_line(const char *line, struct sbrig_event *ev)
{
	static const char *const names[] = { "seq", "t_ns", "type" };
	size_t n = line_len(line), i;
	struct field f[4];
	const char *p = line;
	struct sbrig_event e;

	for (i = 0; i < 3; i++) {
		const char *tab = memchr(p, '\t', n - (size_t)(p - line));

		if (!tab)
			return sbrig_set_error(-EINVAL,
				"suspend_blocker_events: no tab after field %zu (%s)",
				i + 1, names[i]);
		f[i].s = p;
		f[i].n = (size_t)(tab - p);
		p = tab + 1;
	}
	f[3].s = p;
	f[3].n = n - (size_t)(p - line);

	memcpy(&e, ev, sizeof(e));
	e.cut = false;
	if (!parse_u64(f[0], &e.seq))
		return sbrig_set_error(-EINVAL,
			"suspend_blocker_events: field 1 (seq): not a number");
	if (!parse_s64(f[1], &e.target_t_ns))
		return sbrig_set_error(-EINVAL,
			"suspend_blocker_events: field 2 (t_ns): not a number");
	for (i = 0; i < SBRIG_ARRAY_SIZE(event_types); i++)
		if (f[2].n == strlen(event_types[i].type) &&
		    !memcmp(f[2].s, event_types[i].type, f[2].n))
			break;
	if (i == SBRIG_ARRAY_SIZE(event_types))
		return sbrig_set_error(-EINVAL,
			"suspend_blocker_events: field 3 (type): unknown type '%.*s'",
			(int)(f[2].n > 16 ? 16 : f[2].n), f[2].s);
	memcpy(e.type, f[2].s, f[2].n);
	e.type[f[2].n] = '\0';
	if (event_types[i].parse(f[3], &e))
		return sbrig_set_error(-EINVAL,
			"suspend_blocker_events: field 4 (arg): %s expects %s",
			event_types[i].type, event_types[i].expected);
	*ev = e;
	return 0;
}
