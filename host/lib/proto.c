// SPDX-License-Identifier: GPL-2.0
/*
 * proto.c - codec of the target link's line frames (see sbrig/proto.h and
 * host/doc/link-protocol.md).
 *
 * Shared verbatim by the host library and the target agent
 * (kernel-module/tools/sbagent.c compiles this file in), so it depends on
 * libc only: no sbrig_set_error(), errors are return values.
 *
 * Encoding appends fields to a buffer with a bounds-checked printf and
 * closes the frame with the CRC. Decoding locates the frame in a line
 * (kernel messages may precede it), checks the CRC first and only then
 * parses fields with a tiny tokenizer: quoted strings or runs of non-space
 * bytes, numbers in strict decimal.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/sbrig/proto.h"

#define CRC_FIELD_LEN	10	/* "*xxxxxxxx" plus the space before it */

static const char *const type_names[] = {
	[SBRIG_PROTO_T_HELLO] = "HELLO",
	[SBRIG_PROTO_T_EV] = "EV",
	[SBRIG_PROTO_T_ST] = "ST",
	[SBRIG_PROTO_T_PONG] = "PONG",
	[SBRIG_PROTO_T_R] = "R",
	[SBRIG_PROTO_T_D] = "D",
	[SBRIG_PROTO_T_GAP] = "GAP",
	[SBRIG_PROTO_T_BEAT] = "BEAT",
	[SBRIG_PROTO_H_HELLO] = "HELLO",
	[SBRIG_PROTO_H_ACK] = "ACK",
	[SBRIG_PROTO_H_RESEND] = "RESEND",
	[SBRIG_PROTO_H_PING] = "PING",
	[SBRIG_PROTO_H_CMD] = "CMD",
};

const char *sbrig_proto_type_name(enum sbrig_proto_type type)
{
	if ((unsigned int)type >= sizeof(type_names) / sizeof(type_names[0]))
		return "?";
	return type_names[type];
}

/* ------------------------------------------------------------- CRC-32 -- */

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = 1;
}

uint32_t sbrig_proto_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* benign race: every thread computes the same table */
	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ------------------------------------------------------------ encoder -- */

struct wbuf {
	char *buf;
	size_t size;
	size_t len;
	int overflow;
};

static void __attribute__((format(printf, 2, 3)))
w_printf(struct wbuf *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(w->buf + w->len, w->size - w->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= w->size - w->len)
		w->overflow = 1;
	else
		w->len += (size_t)n;
}

static int str_ok(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
}

/* Append " \"s\"" with bad bytes replaced and the length limited. */
static void w_str(struct wbuf *w, const char *s)
{
	size_t i;

	w_printf(w, " \"");
	for (i = 0; s[i] && i < SBRIG_PROTO_STR_MAX && !w->overflow; i++)
		w_printf(w, "%c", str_ok((unsigned char)s[i]) ? s[i] : '?');
	w_printf(w, "\"");
}

/* Append " tok" for a bare token: spaces and bad bytes become '?'. */
static void w_tok(struct wbuf *w, const char *s)
{
	size_t i;

	w_printf(w, " ");
	if (!*s)
		w_printf(w, "-");
	for (i = 0; s[i] && !w->overflow; i++)
		w_printf(w, "%c", str_ok((unsigned char)s[i]) && s[i] != ' ' ?
			 s[i] : '?');
}

int sbrig_proto_encode(const struct sbrig_proto_msg *m, char *buf,
		       size_t size)
{
	struct wbuf w = { .buf = buf, .size = size };
	size_t i;

	if ((unsigned int)m->type > SBRIG_PROTO_H_CMD)
		return -EINVAL;
	w_printf(&w, "@sb%d %s", SBRIG_PROTO_VERSION,
		 sbrig_proto_type_name(m->type));
	switch (m->type) {
	case SBRIG_PROTO_T_HELLO:
		w_printf(&w, " %u", m->hello.proto);
		w_tok(&w, m->hello.boot_id);
		w_tok(&w, m->hello.agent);
		w_str(&w, m->hello.kernel);
		w_tok(&w, m->hello.module);
		w_printf(&w, " %" PRIu64 " %" PRIu64 " %s", m->hello.oldest_seq,
			 m->hello.next_seq, m->hello.answer ? "ok" : "new");
		break;
	case SBRIG_PROTO_T_EV:
		w_printf(&w, " %" PRIu64 " %" PRId64, m->ev.seq, m->ev.t_ns);
		w_tok(&w, m->ev.type);
		if (m->ev.quoted) {
			w_str(&w, m->ev.arg);
			if (m->ev.cut)
				w_printf(&w, "+");
		} else {
			/* raw text: printable, no quote at its start */
			w_printf(&w, " ");
			for (i = 0; m->ev.arg[i] && i < SBRIG_PROTO_STR_MAX; i++)
				w_printf(&w, "%c",
					 str_ok((unsigned char)m->ev.arg[i]) ?
					 m->ev.arg[i] : '?');
			if (!i)
				w_printf(&w, "-");
		}
		break;
	case SBRIG_PROTO_T_ST:
		w_printf(&w, " %" PRIu32 " %" PRIu32 " %" PRIu32,
			 m->st.cmd_id, m->st.idx, m->st.n);
		w_str(&w, m->st.name);
		w_printf(&w, " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64
			 " %" PRId64 " %" PRId64 " %" PRId64, m->st.count,
			 m->st.wake_count, m->st.active_since, m->st.total_time,
			 m->st.sleep_time, m->st.max_time, m->st.last_change);
		break;
	case SBRIG_PROTO_T_PONG:
		w_printf(&w, " %" PRIu64 " %" PRId64, m->pong.token,
			 m->pong.t_boot_ns);
		break;
	case SBRIG_PROTO_T_R:
	case SBRIG_PROTO_T_D:
		w_printf(&w, " %" PRIu32 " %d", m->reply.cmd_id, m->reply.err);
		w_str(&w, m->reply.text);
		break;
	case SBRIG_PROTO_T_GAP:
		w_printf(&w, " %" PRIu64 " %" PRIu64, m->gap.from_seq,
			 m->gap.to_seq);
		break;
	case SBRIG_PROTO_T_BEAT:
		w_printf(&w, " %" PRIu64 " %" PRId64, m->beat.next_seq,
			 m->beat.t_boot_ns);
		break;
	case SBRIG_PROTO_H_HELLO:
		w_printf(&w, " %u", m->hhello.proto);
		w_tok(&w, m->hhello.boot_id);
		w_printf(&w, " %" PRIu64, m->hhello.next_seq);
		break;
	case SBRIG_PROTO_H_ACK:
	case SBRIG_PROTO_H_RESEND:
		w_printf(&w, " %" PRIu64, m->ack.seq);
		break;
	case SBRIG_PROTO_H_PING:
		w_printf(&w, " %" PRIu64, m->ping.token);
		break;
	case SBRIG_PROTO_H_CMD:
		w_printf(&w, " %" PRIu32, m->cmd.cmd_id);
		w_tok(&w, m->cmd.verb);
		if (m->cmd.args[0]) {
			w_printf(&w, " ");
			for (i = 0; m->cmd.args[i]; i++)
				w_printf(&w, "%c",
					 m->cmd.args[i] >= 0x20 &&
					 m->cmd.args[i] <= 0x7e ?
					 m->cmd.args[i] : '?');
		}
		break;
	}
	w_printf(&w, " ");
	if (w.overflow)
		return -EMSGSIZE;
	w_printf(&w, "*%08x\n", sbrig_proto_crc32(0, buf, w.len));
	if (w.overflow || w.len > SBRIG_PROTO_FRAME_MAX)
		return -EMSGSIZE;
	return (int)w.len;
}

/* ------------------------------------------------------------ decoder -- */

struct rbuf {
	const char *p;
	const char *end;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Next token: 1 ok, 0 end, -1 malformed. Sets *s, *n (quotes stripped). */
static int r_tok(struct rbuf *r, const char **s, size_t *n, int *quoted)
{
	const char *q;

	while (r->p < r->end && *r->p == ' ')
		r->p++;
	if (r->p >= r->end)
		return 0;
	*quoted = *r->p == '"';
	if (*quoted) {
		q = ++r->p;
		while (q < r->end && *q != '"') {
			if (!str_ok((unsigned char)*q))
				return -1;
			q++;
		}
		if (q >= r->end || q - r->p > SBRIG_PROTO_STR_MAX)
			return -1;
		*s = r->p;
		*n = (size_t)(q - r->p);
		r->p = q + 1;
		return 1;
	}
	q = r->p;
	while (q < r->end && *q != ' ')
		q++;
	*s = r->p;
	*n = (size_t)(q - r->p);
	r->p = q;
	return 1;
}

static int r_word(struct rbuf *r, char *out, size_t size, int want_quoted)
{
	const char *s;
	size_t n;
	int quoted;

	if (r_tok(r, &s, &n, &quoted) != 1 || quoted != want_quoted ||
	    n >= size)
		return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	/* a quoted string ends at its quote: a space or the end must follow */
	if (quoted && r->p < r->end && *r->p != ' ')
		return -1;
	return 0;
}

static int r_u64(struct rbuf *r, uint64_t *v)
{
	char tmp[24], *end;

	if (r_word(r, tmp, sizeof(tmp), 0) || tmp[0] < '0' || tmp[0] > '9')
		return -1;
	errno = 0;
	*v = strtoull(tmp, &end, 10);
	return errno || *end ? -1 : 0;
}

static int r_i64(struct rbuf *r, int64_t *v)
{
	char tmp[24], *end;

	if (r_word(r, tmp, sizeof(tmp), 0) ||
	    !(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')))
		return -1;
	errno = 0;
	*v = strtoll(tmp, &end, 10);
	return errno || *end ? -1 : 0;
}

static int r_u32(struct rbuf *r, uint32_t *v)
{
	uint64_t x;

	if (r_u64(r, &x) || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int r_int(struct rbuf *r, int *v)
{
	int64_t x;

	if (r_i64(r, &x) || x < -100000 || x > 100000)
		return -1;
	*v = (int)x;
	return 0;
}

static int r_done(struct rbuf *r)
{
	while (r->p < r->end && *r->p == ' ')
		r->p++;
	return r->p == r->end ? 0 : -1;
}

/* The rest of the body, trimmed, into out (printable only). */
static int r_rest(struct rbuf *r, char *out, size_t size)
{
	const char *e = r->end;
	size_t n;

	while (r->p < e && *r->p == ' ')
		r->p++;
	while (e > r->p && e[-1] == ' ')
		e--;
	n = (size_t)(e - r->p);
	if (n >= size)
		return -1;
	memcpy(out, r->p, n);
	out[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
			return -1;
	r->p = r->end;
	return 0;
}

static int decode_ev(struct rbuf *r, struct sbrig_proto_msg *m)
{
	const char *s;
	size_t n;
	int quoted;

	if (r_u64(r, &m->ev.seq) || r_i64(r, &m->ev.t_ns) ||
	    r_word(r, m->ev.type, sizeof(m->ev.type), 0))
		return -1;
	while (r->p < r->end && *r->p == ' ')
		r->p++;
	m->ev.quoted = r->p < r->end && *r->p == '"';
	m->ev.cut = false;
	if (!m->ev.quoted)
		return r_rest(r, m->ev.arg, sizeof(m->ev.arg));
	if (r_tok(r, &s, &n, &quoted) != 1)
		return -1;
	memcpy(m->ev.arg, s, n);
	m->ev.arg[n] = '\0';
	if (r->p < r->end && *r->p == '+') {
		m->ev.cut = true;
		r->p++;
	}
	return r_done(r);
}

static int decode_body(struct rbuf *r, bool from_target,
		       struct sbrig_proto_msg *m)
{
	char type[8];

	if (r_word(r, type, sizeof(type), 0))
		return -1;
	memset(m, 0, sizeof(*m));
	if (from_target) {
		if (!strcmp(type, "HELLO")) {
			m->type = SBRIG_PROTO_T_HELLO;
			if (r_u32(r, &m->hello.proto) ||
			    r_word(r, m->hello.boot_id, sizeof(m->hello.boot_id), 0) ||
			    r_word(r, m->hello.agent, sizeof(m->hello.agent), 0) ||
			    r_word(r, m->hello.kernel, sizeof(m->hello.kernel), 1) ||
			    r_word(r, m->hello.module, sizeof(m->hello.module), 0) ||
			    r_u64(r, &m->hello.oldest_seq) ||
			    r_u64(r, &m->hello.next_seq) ||
			    r_word(r, type, sizeof(type), 0) ||
			    (strcmp(type, "ok") && strcmp(type, "new")))
				return -1;
			m->hello.answer = !strcmp(type, "ok");
		} else if (!strcmp(type, "EV")) {
			m->type = SBRIG_PROTO_T_EV;
			return decode_ev(r, m);
		} else if (!strcmp(type, "ST")) {
			m->type = SBRIG_PROTO_T_ST;
			if (r_u32(r, &m->st.cmd_id) || r_u32(r, &m->st.idx) ||
			    r_u32(r, &m->st.n) ||
			    r_word(r, m->st.name, sizeof(m->st.name), 1) ||
			    r_u64(r, &m->st.count) || r_u64(r, &m->st.wake_count) ||
			    r_i64(r, &m->st.active_since) ||
			    r_i64(r, &m->st.total_time) ||
			    r_i64(r, &m->st.sleep_time) ||
			    r_i64(r, &m->st.max_time) ||
			    r_i64(r, &m->st.last_change))
				return -1;
		} else if (!strcmp(type, "PONG")) {
			m->type = SBRIG_PROTO_T_PONG;
			if (r_u64(r, &m->pong.token) ||
			    r_i64(r, &m->pong.t_boot_ns))
				return -1;
		} else if (!strcmp(type, "R") || !strcmp(type, "D")) {
			m->type = type[0] == 'R' ? SBRIG_PROTO_T_R :
						   SBRIG_PROTO_T_D;
			if (r_u32(r, &m->reply.cmd_id) || r_int(r, &m->reply.err) ||
			    r_word(r, m->reply.text, sizeof(m->reply.text), 1))
				return -1;
		} else if (!strcmp(type, "GAP")) {
			m->type = SBRIG_PROTO_T_GAP;
			if (r_u64(r, &m->gap.from_seq) || r_u64(r, &m->gap.to_seq) ||
			    m->gap.to_seq < m->gap.from_seq)
				return -1;
		} else if (!strcmp(type, "BEAT")) {
			m->type = SBRIG_PROTO_T_BEAT;
			if (r_u64(r, &m->beat.next_seq) ||
			    r_i64(r, &m->beat.t_boot_ns))
				return -1;
		} else {
			return -1;
		}
		return r_done(r);
	}
	if (!strcmp(type, "HELLO")) {
		m->type = SBRIG_PROTO_H_HELLO;
		if (r_u32(r, &m->hhello.proto) ||
		    r_word(r, m->hhello.boot_id, sizeof(m->hhello.boot_id), 0) ||
		    r_u64(r, &m->hhello.next_seq))
			return -1;
		if (!strcmp(m->hhello.boot_id, "-"))
			m->hhello.boot_id[0] = '\0';
	} else if (!strcmp(type, "ACK") || !strcmp(type, "RESEND")) {
		m->type = type[0] == 'A' ? SBRIG_PROTO_H_ACK :
					   SBRIG_PROTO_H_RESEND;
		if (r_u64(r, &m->ack.seq))
			return -1;
	} else if (!strcmp(type, "PING")) {
		m->type = SBRIG_PROTO_H_PING;
		if (r_u64(r, &m->ping.token))
			return -1;
	} else if (!strcmp(type, "CMD")) {
		m->type = SBRIG_PROTO_H_CMD;
		if (r_u32(r, &m->cmd.cmd_id) ||
		    r_word(r, m->cmd.verb, sizeof(m->cmd.verb), 0))
			return -1;
		return r_rest(r, m->cmd.args, sizeof(m->cmd.args));
	} else {
		return -1;
	}
	return r_done(r);
}

/* CRC check of a candidate frame line[pos..end). 0 ok. */
static int crc_ok(const char *line, size_t pos, size_t end)
{
	const char *c = line + end - 9;
	uint32_t want = 0;
	int i, v;

	if (end - pos < 4 + 1 + CRC_FIELD_LEN ||
	    end - pos + 1 > SBRIG_PROTO_FRAME_MAX)
		return -1;
	if (c[-1] != ' ' || c[0] != '*')
		return -1;
	for (i = 1; i <= 8; i++) {
		v = hexval(c[i]);
		if (v < 0)
			return -1;
		want = want << 4 | (uint32_t)v;
	}
	return sbrig_proto_crc32(0, line + pos, end - 9 - pos) == want ? 0 : -1;
}

int sbrig_proto_decode(const char *line, size_t len, bool from_target,
		       struct sbrig_proto_msg *msg, size_t *frame_off)
{
	size_t end = len, pos, body;
	int seen = 0;
	unsigned long ver;
	struct rbuf r;

	if (end && line[end - 1] == '\r')
		end--;
	for (pos = end >= 3 ? end - 3 + 1 : 0; pos-- > 0;) {
		if (line[pos] != '@' || memcmp(line + pos, "@sb", 3))
			continue;
		seen = 1;
		if (crc_ok(line, pos, end))
			continue;
		if (frame_off)
			*frame_off = pos;
		body = pos + 3;
		ver = 0;
		while (body < end && line[body] >= '0' && line[body] <= '9' &&
		       ver < 1000)
			ver = ver * 10 + (unsigned long)(line[body++] - '0');
		if (body == pos + 3 || line[body] != ' ')
			return SBRIG_PROTO_EBAD;
		if (ver != SBRIG_PROTO_VERSION)
			return SBRIG_PROTO_EVERSION;
		r.p = line + body;
		r.end = line + end - CRC_FIELD_LEN;
		return decode_body(&r, from_target, msg) ? SBRIG_PROTO_EBAD : 1;
	}
	return seen ? SBRIG_PROTO_EBAD : 0;
}

int sbrig_proto_token(const char **p, char *buf, size_t size)
{
	struct rbuf r = { .p = *p, .end = *p + strlen(*p) };
	const char *s;
	size_t n;
	int quoted, ret;

	ret = r_tok(&r, &s, &n, &quoted);
	if (ret <= 0)
		return ret;
	if (n >= size || (quoted && r.p < r.end && *r.p != ' '))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*p = r.p;
	return 1;
}

const char *const sbrig_proto_policies[] = { "forced", "opportunistic", NULL };
const char *const sbrig_proto_states[] = { "on", "mem", "standby", "freeze",
					   NULL };

int sbrig_proto_word(const char *const *words, const char *w)
{
	for (int i = 0; w && words[i]; i++)
		if (!strcmp(words[i], w))
			return i;
	return -1;
}

const char *sbrig_proto_words(const char *const *words, const char *sep,
			      char *buf, size_t size)
{
	size_t len = 0;

	if (!size)
		return buf;
	buf[0] = '\0';
	for (int i = 0; words[i] && len < size; i++) {
		int n = snprintf(buf + len, size - len, "%s%s", i ? sep : "",
				 words[i]);

		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buf;
}

bool sbrig_proto_state_sleeps(const char *state)
{
	return sbrig_proto_word(sbrig_proto_states, state) >= 0 &&
		strcmp(state, "on") != 0;
}
