// SPDX-License-Identifier: GPL-2.0
/*
 * scenario.c - the scenario language (see scenario.h and
 * rig/scenarios/README.md) parsed into a flat program.
 *
 * Each line is split into tokens (words and "quoted strings", each with its
 * column); the first token picks a row of step_kinds[], whose parser takes
 * the step's arguments from the token list. repeat/end are matched with a
 * small stack, and both ends of a loop get each other's index in @match so
 * the engine never searches. Every error is "origin:line:col: expected ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sha256.h>	/* libmd */

#include <sbrig/proto.h>
#include <sbrig/scenario.h>

#include "internal.h"

#define SC_MAX_TOKENS 16
#define SC_MAX_DEPTH 8
#define SC_MAX_STEPS 100000
#define SC_MAX_REPEAT 1000000
#define SC_MAX_BYTES (1 << 20)

int sbrig_parse_duration(const char *s, int64_t *ns)
{
	static const struct { const char *unit; int64_t mult; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000 },
	};
	int64_t v = 0;
	const char *p = s;
	size_t i;

	if (*p < '0' || *p > '9')
		return sbrig_set_error(-EINVAL, "'%s': not a duration", s);
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return sbrig_set_error(-EINVAL, "'%s': too long", s);
		v = v * 10 + (*p - '0');
	}
	for (i = 0; i < SBRIG_ARRAY_SIZE(units); i++) {
		if (strcmp(p, units[i].unit))
			continue;
		if (v > INT64_MAX / units[i].mult)
			return sbrig_set_error(-EINVAL, "'%s': too long", s);
		*ns = v * units[i].mult;
		return 0;
	}
	return sbrig_set_error(-EINVAL, "'%s': %s unit (ns, us, ms or s)", s,
			       *p ? "unknown" : "missing");
}

/* ---- tokens -------------------------------------------------------------- */

struct sc_token {
	char text[SBRIG_NAME_MAX];
	unsigned int col;
	bool quoted;
};

/**
 * struct sc_parser - state of one parse
 * @origin: name in messages
 * @line: current line number
 * @end_col: column just after the current line's last character
 * @tok: the current line's tokens
 * @ntok: their count
 * @next: next token to consume
 * @sc: the scenario being built
 * @cap: allocated entries of @sc->steps
 * @stack: indices of open repeats
 * @depth: entries in @stack
 * @name_seen: the name directive was given
 */
struct sc_parser {
	const char *origin;
	unsigned int line;
	unsigned int end_col;
	struct sc_token tok[SC_MAX_TOKENS];
	unsigned int ntok, next;
	struct sbrig_scenario *sc;
	size_t cap;
	size_t stack[SC_MAX_DEPTH];
	unsigned int depth;
	bool name_seen;
};

static int SBRIG_PRINTF(3, 4)
sc_error(struct sc_parser *p, unsigned int col, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbrig_set_error(-EINVAL, "%s:%u:%u: %s", p->origin, p->line,
			       col, msg);
}

/* Splits one line (without its newline) into p->tok. */
static int tokenize(struct sc_parser *p, const char *s, size_t n)
{
	size_t i = 0, start, len;

	p->ntok = 0;
	p->next = 0;
	p->end_col = (unsigned int)n + 1;
	while (i < n) {
		struct sc_token *t;
		bool quoted = false;

		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
			i++;
			continue;
		}
		if (s[i] == '#')
			break;
		if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
			return sc_error(p, (unsigned int)i + 1,
					"control character 0x%02x",
					(unsigned char)s[i]);
		if (p->ntok == SC_MAX_TOKENS)
			return sc_error(p, (unsigned int)i + 1,
					"expected end of line (too many words)");
		t = &p->tok[p->ntok];
		t->col = (unsigned int)i + 1;
		if (s[i] == '"') {
			const char *q = memchr(s + i + 1, '"', n - i - 1);

			if (!q)
				return sc_error(p, t->col,
						"expected a closing '\"'");
			start = i + 1;
			len = (size_t)(q - s) - start;
			i = (size_t)(q - s) + 1;
			quoted = true;
			if (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '#')
				return sc_error(p, (unsigned int)i + 1,
					"expected a space after the quoted name");
		} else {
			start = i;
			while (i < n && (unsigned char)s[i] > ' ' &&
			       s[i] != 0x7f && s[i] != '#' && s[i] != '"')
				i++;
			len = i - start;
		}
		if (len >= sizeof(t->text))
			return sc_error(p, t->col, "expected at most %d characters",
					SBRIG_NAME_MAX - 1);
		if (quoted && memchr(s + start, '\t', len))
			return sc_error(p, t->col, "expected a name without tabs");
		memcpy(t->text, s + start, len);
		t->text[len] = '\0';
		t->quoted = quoted;
		p->ntok++;
	}
	return 0;
}

/* Column of the next token, or end of line. */
static unsigned int next_col(const struct sc_parser *p)
{
	return p->next < p->ntok ? p->tok[p->next].col : p->end_col;
}

static const struct sc_token *peek(const struct sc_parser *p)
{
	return p->next < p->ntok ? &p->tok[p->next] : NULL;
}

static bool accept_word(struct sc_parser *p, const char *word)
{
	const struct sc_token *t = peek(p);

	if (!t || t->quoted || strcmp(t->text, word))
		return false;
	p->next++;
	return true;
}

static bool is_id(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");

	return n > 0 && n < SBRIG_ID_MAX && !s[n];
}

static int take_id(struct sc_parser *p, const char *what, char *out, size_t size)
{
	const struct sc_token *t = peek(p);

	if (!t || t->quoted || !is_id(t->text) || strlen(t->text) >= size)
		return sc_error(p, next_col(p),
			"expected %s (1-%d characters of A-Z a-z 0-9 _ - .)",
			what, SBRIG_ID_MAX - 1);
	snprintf(out, size, "%s", t->text);
	p->next++;
	return 0;
}

static int take_quoted(struct sc_parser *p, const char *what, char *out,
		       size_t size)
{
	const struct sc_token *t = peek(p);

	if (!t || !t->quoted || !t->text[0])
		return sc_error(p, next_col(p), "expected %s in double quotes",
				what);
	snprintf(out, size, "%s", t->text);
	p->next++;
	return 0;
}

static int take_duration(struct sc_parser *p, bool positive, int64_t *ns)
{
	const struct sc_token *t = peek(p);

	if (!t || t->quoted || sbrig_parse_duration(t->text, ns))
		return sc_error(p, next_col(p),
			"expected a duration with a unit (e.g. 250ms, 2s)");
	if (positive && *ns <= 0)
		return sc_error(p, t->col, "expected a duration above 0");
	p->next++;
	return 0;
}

/* An optional trailing "timeout DURATION". */
static int take_timeout(struct sc_parser *p, struct sbrig_step *st)
{
	if (!accept_word(p, "timeout"))
		return 0;
	return take_duration(p, true, &st->timeout_ns);
}

/* ---- step kinds ---------------------------------------------------------- */

static int parse_settle(struct sc_parser *p, struct sbrig_step *st)
{
	if (!peek(p)) {		/* the rig's [timing] settle_ms */
		st->rig_default = true;
		return 0;
	}
	return take_duration(p, false, &st->duration_ns);
}

static int parse_press(struct sc_parser *p, struct sbrig_step *st)
{
	int ret = take_id(p, "a key name", st->name, sizeof(st->name));

	if (!ret && !peek(p))	/* the rig's [timing] press_ms */
		st->rig_default = true;
	if (ret || !peek(p))
		return ret;
	return take_duration(p, true, &st->duration_ns);
}

static int parse_none(struct sc_parser *p, struct sbrig_step *st)
{
	return 0;
}

static int parse_hold(struct sc_parser *p, struct sbrig_step *st)
{
	int ret = take_quoted(p, "a blocker name", st->name, sizeof(st->name));

	return ret ? ret : take_duration(p, true, &st->duration_ns);
}

static int parse_burn(struct sc_parser *p, struct sbrig_step *st)
{
	return take_duration(p, true, &st->duration_ns);
}

/* One word of @words (the agent's vocabulary, sbrig/proto.h). */
static int take_word(struct sc_parser *p, const char *what,
		     const char *const *words, char *out, size_t size)
{
	const struct sc_token *t = peek(p);
	char list[128];

	if (!t || t->quoted || sbrig_proto_word(words, t->text) < 0)
		return sc_error(p, next_col(p), "expected %s (%s)", what,
				sbrig_proto_words(words, " ", list,
						  sizeof(list)));
	snprintf(out, size, "%s", t->text);
	p->next++;
	return 0;
}

static int parse_policy(struct sc_parser *p, struct sbrig_step *st)
{
	return take_word(p, "a policy", sbrig_proto_policies, st->name,
			 sizeof(st->name));
}

static int parse_state(struct sc_parser *p, struct sbrig_step *st)
{
	int ret = take_word(p, "a state", sbrig_proto_states, st->name,
			    sizeof(st->name));

	return ret ? ret : take_timeout(p, st);
}

static const char *const event_types[] = {
	"block", "unblock", "suspend", "enter", "exit", "resume", "abort",
	"policy", "lost",
	/* the kernel's own activity (the module's kevents) */
	"ws_activate", "ws_relax", "phase", "dev_pm",
};

static int parse_wait_event(struct sc_parser *p, struct sbrig_step *st)
{
	const struct sc_token *t;
	size_t i;

	t = peek(p);
	for (i = 0; t && !t->quoted && i < SBRIG_ARRAY_SIZE(event_types); i++)
		if (!strcmp(t->text, event_types[i]))
			break;
	if (!t || t->quoted || i == SBRIG_ARRAY_SIZE(event_types))
		return sc_error(p, next_col(p),
			"expected an event type (block unblock suspend enter exit resume abort policy lost)");
	snprintf(st->name, sizeof(st->name), "%s", t->text);
	p->next++;
	t = peek(p);
	if (t && t->quoted) {
		snprintf(st->arg, sizeof(st->arg), "%s", t->text);
		p->next++;
	}
	return take_timeout(p, st);
}

static int parse_wait_edge(struct sc_parser *p, struct sbrig_step *st)
{
	int ret = take_id(p, "a line name", st->name, sizeof(st->name));

	if (ret)
		return ret;
	if (accept_word(p, "rising"))
		st->rising = true;
	else if (!accept_word(p, "falling"))
		return sc_error(p, next_col(p),
				"expected 'rising' or 'falling'");
	return take_timeout(p, st);
}

static const struct {
	const char *word;
	enum sbrig_step_op op;
	int (*parse)(struct sc_parser *p, struct sbrig_step *st);
} wait_kinds[] = {
	{ "event", SBRIG_STEP_WAIT_EVENT, parse_wait_event },
	{ "edge", SBRIG_STEP_WAIT_EDGE, parse_wait_edge },
	{ "asleep", SBRIG_STEP_WAIT_ASLEEP, take_timeout },
};

static int parse_wait(struct sc_parser *p, struct sbrig_step *st)
{
	size_t i;

	for (i = 0; i < SBRIG_ARRAY_SIZE(wait_kinds); i++) {
		if (accept_word(p, wait_kinds[i].word)) {
			st->op = wait_kinds[i].op;
			return wait_kinds[i].parse(p, st);
		}
	}
	return sc_error(p, next_col(p), "expected 'event', 'edge' or 'asleep'");
}

static int parse_repeat(struct sc_parser *p, struct sbrig_step *st)
{
	const struct sc_token *t = peek(p);
	unsigned long n;
	char *end;

	if (!t || t->quoted || t->text[0] < '1' || t->text[0] > '9')
		goto bad;
	n = strtoul(t->text, &end, 10);
	if (*end || n > SC_MAX_REPEAT)
		goto bad;
	if (p->depth == SC_MAX_DEPTH)
		return sc_error(p, p->tok[0].col,
			"expected at most %d nested repeats", SC_MAX_DEPTH);
	st->count = (uint32_t)n;
	p->next++;
	p->stack[p->depth++] = p->sc->nsteps;
	return 0;
bad:
	return sc_error(p, next_col(p), "expected a count (1-%d)", SC_MAX_REPEAT);
}

static int parse_end(struct sc_parser *p, struct sbrig_step *st)
{
	size_t begin;

	if (!p->depth)
		return sc_error(p, p->tok[0].col, "'end' without 'repeat'");
	begin = p->stack[--p->depth];
	st->match = begin;
	p->sc->steps[begin].match = p->sc->nsteps;
	return 0;
}

static const struct {
	const char *word;
	enum sbrig_step_op op;
	int (*parse)(struct sc_parser *p, struct sbrig_step *st);
} step_kinds[] = {
	{ "settle", SBRIG_STEP_SETTLE, parse_settle },
	{ "press", SBRIG_STEP_PRESS, parse_press },
	{ "plug", SBRIG_STEP_PLUG, parse_none },
	{ "unplug", SBRIG_STEP_UNPLUG, parse_none },
	{ "hold", SBRIG_STEP_HOLD, parse_hold },
	{ "burn", SBRIG_STEP_BURN, parse_burn },
	{ "policy", SBRIG_STEP_POLICY, parse_policy },
	{ "state", SBRIG_STEP_STATE, parse_state },
	{ "wait", SBRIG_STEP_WAIT_EVENT, parse_wait },	/* wait_kinds[] */
	{ "repeat", SBRIG_STEP_REPEAT, parse_repeat },
	{ "end", SBRIG_STEP_END, parse_end },
};

static int parse_name_directive(struct sc_parser *p)
{
	if (p->name_seen || p->sc->nsteps)
		return sc_error(p, p->tok[0].col,
			"expected 'name' once, before the first step");
	p->name_seen = true;
	p->next = 1;
	return take_id(p, "a scenario name", p->sc->name, sizeof(p->sc->name));
}

static int parse_step(struct sc_parser *p)
{
	const struct sc_token *t = &p->tok[0];
	struct sbrig_step *st;
	size_t i;
	int ret;

	for (i = 0; i < SBRIG_ARRAY_SIZE(step_kinds); i++)
		if (!t->quoted && !strcmp(t->text, step_kinds[i].word))
			break;
	if (i == SBRIG_ARRAY_SIZE(step_kinds)) {
		char list[128];
		size_t len = 0;

		list[0] = '\0';
		for (i = 0; i < SBRIG_ARRAY_SIZE(step_kinds) &&
		     len < sizeof(list); i++)
			len += snprintf(list + len, sizeof(list) - len, "%s%s",
					i ? " " : "", step_kinds[i].word);
		return sc_error(p, t->col, "expected a step (%s), got '%s'",
				list, t->text);
	}
	if (p->sc->nsteps == SC_MAX_STEPS)
		return sc_error(p, t->col, "expected at most %d steps",
				SC_MAX_STEPS);
	if (p->sc->nsteps == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 32;
		struct sbrig_step *steps = realloc(p->sc->steps,
						   cap * sizeof(*steps));

		if (!steps)
			return sbrig_set_error(-ENOMEM, "%s: out of memory",
					       p->origin);
		p->sc->steps = steps;
		p->cap = cap;
	}
	st = &p->sc->steps[p->sc->nsteps];
	memset(st, 0, sizeof(*st));
	st->op = step_kinds[i].op;
	st->line = p->line;
	p->next = 1;
	ret = step_kinds[i].parse(p, st);
	if (ret)
		return ret;
	p->sc->nsteps++;
	return 0;
}

static int parse_line(struct sc_parser *p, const char *s, size_t n)
{
	int ret = tokenize(p, s, n);

	if (ret || !p->ntok)
		return ret;
	if (!p->tok[0].quoted && !strcmp(p->tok[0].text, "name"))
		ret = parse_name_directive(p);
	else
		ret = parse_step(p);
	if (ret)
		return ret;
	if (p->next < p->ntok)
		return sc_error(p, p->tok[p->next].col,
				"expected end of line, got '%s'",
				p->tok[p->next].text);
	return 0;
}

static struct sbrig_scenario *parse_text(const char *text, size_t len,
					 const char *origin)
{
	struct sc_parser *p;
	struct sbrig_scenario *sc;
	size_t pos = 0;
	int ret = 0;

	sc = calloc(1, sizeof(*sc));
	p = calloc(1, sizeof(*p));
	if (!sc || !p) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", origin);
		goto fail;
	}
	snprintf(sc->path, sizeof(sc->path), "%s", origin);
	SHA256Data((const uint8_t *)text, len, sc->sha256);
	p->origin = origin;
	p->sc = sc;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - text) - pos : len - pos;

		const char *nul = memchr(text + pos, '\0', n);

		p->line++;
		if (nul) {
			ret = sc_error(p, (unsigned int)(nul - text - pos) + 1,
				       "NUL byte (a scenario is text)");
			goto fail;
		}
		ret = parse_line(p, text + pos, n);
		if (ret)
			goto fail;
		pos += n + 1;
	}
	if (p->depth) {
		p->line = sc->steps[p->stack[p->depth - 1]].line;
		ret = sc_error(p, 1, "'repeat' without 'end'");
		goto fail;
	}
	if (!sc->nsteps) {
		ret = sbrig_set_error(-EINVAL, "%s: no steps", origin);
		goto fail;
	}
	if (!sc->name[0])
		sbrig_path_stem(sc->name, sizeof(sc->name), origin);
	free(p);
	return sc;

fail:
	free(p);
	sbrig_scenario_free(sc);
	errno = -ret;
	return NULL;
}

struct sbrig_scenario *sbrig_scenario_parse_buf(const char *text, size_t len,
						const char *origin)
{
	if (!text && len) {
		sbrig_set_error(-EINVAL, "%s: no text", origin);
		errno = EINVAL;
		return NULL;
	}
	return parse_text(text ? text : "", len, origin);
}

struct sbrig_scenario *sbrig_scenario_parse(const char *text,
					    const char *origin)
{
	return sbrig_scenario_parse_buf(text, strlen(text), origin);
}

int sbrig_format_duration(int64_t ns, char *buf, size_t size)
{
	if (ns % 1000000000 == 0)
		return snprintf(buf, size, "%" PRId64 "s", ns / 1000000000);
	if (ns % 1000000 == 0)
		return snprintf(buf, size, "%" PRId64 "ms", ns / 1000000);
	return snprintf(buf, size, "%" PRId64 "ns", ns);
}

int sbrig_step_describe(const struct sbrig_step *s, bool with_timeout,
			char *buf, size_t size)
{
	char d[32], t[48] = "";

	sbrig_format_duration(s->duration_ns, d, sizeof(d));
	if (with_timeout) {
		memcpy(t, " timeout ", 9);
		sbrig_format_duration(s->timeout_ns ? s->timeout_ns :
				      SBRIG_STEP_DEFAULT_TIMEOUT_NS, t + 9,
				      sizeof(t) - 9);
	}
	switch (s->op) {
	case SBRIG_STEP_SETTLE:
		return snprintf(buf, size, "settle %s",
				s->rig_default ? "default" : d);
	case SBRIG_STEP_PRESS:
		return snprintf(buf, size, "press %s %s", s->name,
				s->rig_default ? "default" : d);
	case SBRIG_STEP_PLUG:
		return snprintf(buf, size, "plug");
	case SBRIG_STEP_UNPLUG:
		return snprintf(buf, size, "unplug");
	case SBRIG_STEP_HOLD:
		return snprintf(buf, size, "hold \"%s\" %s", s->name, d);
	case SBRIG_STEP_BURN:
		return snprintf(buf, size, "burn %s", d);
	case SBRIG_STEP_POLICY:
		return snprintf(buf, size, "policy %s", s->name);
	case SBRIG_STEP_STATE:
		return snprintf(buf, size, "state %s%s", s->name, t);
	case SBRIG_STEP_WAIT_EVENT:
		return snprintf(buf, size, "wait event %s%s%s%s%s", s->name,
				s->arg[0] ? " \"" : "", s->arg,
				s->arg[0] ? "\"" : "", t);
	case SBRIG_STEP_WAIT_EDGE:
		return snprintf(buf, size, "wait edge %s %s%s", s->name,
				s->rising ? "rising" : "falling", t);
	case SBRIG_STEP_WAIT_ASLEEP:
		return snprintf(buf, size, "wait asleep%s", t);
	case SBRIG_STEP_REPEAT:
		return snprintf(buf, size, "repeat %" PRIu32, s->count);
	case SBRIG_STEP_END:
		return snprintf(buf, size, "end");
	}
	return snprintf(buf, size, "?");
}

struct sbrig_scenario *sbrig_scenario_load(const char *path)
{
	struct sbrig_scenario *sc = NULL;
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	ssize_t n;
	int fd, err;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		err = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st)) {
		err = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > SC_MAX_BYTES) {
		err = sbrig_set_error(-EINVAL,
			"%s: not a regular file of at most %d bytes", path,
			SC_MAX_BYTES);
		goto close_fd;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		err = sbrig_set_error(-ENOMEM, "%s: out of memory", path);
		goto close_fd;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = sbrig_set_error(-errno, "%s: %s", path,
					      strerror(errno));
			goto free_buf;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	sc = parse_text(buf, got, path);
	err = sc ? 0 : -errno;
free_buf:
	free(buf);
close_fd:
	close(fd);
fail:
	if (err)
		errno = -err;
	return sc;
}

void sbrig_scenario_free(struct sbrig_scenario *sc)
{
	if (!sc)
		return;
	free(sc->steps);
	free(sc);
}
