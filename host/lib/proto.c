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

/*
 * The reflected CRC-32 of IEEE 802.3 (zlib's crc32(), polynomial
 * 0xedb88320), a byte at a time. The table is a constant (the unit test
 * rebuilds it bit by bit): a table built on first use would be a data
 * race between threads (the daemon's and the capture's), real on ARM.
 */
static const uint32_t crc_table[256] = {
	0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau,
	0x076dc419u, 0x706af48fu, 0xe963a535u, 0x9e6495a3u,
	0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
	0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u,
	0x1db71064u, 0x6ab020f2u, 0xf3b97148u, 0x84be41deu,
	0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
	0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu,
	0x14015c4fu, 0x63066cd9u, 0xfa0f3d63u, 0x8d080df5u,
	0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
	0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu,
	0x35b5a8fau, 0x42b2986cu, 0xdbbbc9d6u, 0xacbcf940u,
	0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
	0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u,
	0x21b4f4b5u, 0x56b3c423u, 0xcfba9599u, 0xb8bda50fu,
	0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
	0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du,
	0x76dc4190u, 0x01db7106u, 0x98d220bcu, 0xefd5102au,
	0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
	0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u,
	0x7f6a0dbbu, 0x086d3d2du, 0x91646c97u, 0xe6635c01u,
	0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
	0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u,
	0x65b0d9c6u, 0x12b7e950u, 0x8bbeb8eau, 0xfcb9887cu,
	0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
	0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u,
	0x4adfa541u, 0x3dd895d7u, 0xa4d1c46du, 0xd3d6f4fbu,
	0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
	0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u,
	0x5005713cu, 0x270241aau, 0xbe0b1010u, 0xc90c2086u,
	0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
	0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u,
	0x59b33d17u, 0x2eb40d81u, 0xb7bd5c3bu, 0xc0ba6cadu,
	0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
	0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u,
	0xe3630b12u, 0x94643b84u, 0x0d6d6a3eu, 0x7a6a5aa8u,
	0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
	0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu,
	0xf762575du, 0x806567cbu, 0x196c3671u, 0x6e6b06e7u,
	0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
	0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u,
	0xd6d6a3e8u, 0xa1d1937eu, 0x38d8c2c4u, 0x4fdff252u,
	0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
	0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u,
	0xdf60efc3u, 0xa867df55u, 0x316e8eefu, 0x4669be79u,
	0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
	0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu,
	0xc5ba3bbeu, 0xb2bd0b28u, 0x2bb45a92u, 0x5cb36a04u,
	0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
	0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au,
	0x9c0906a9u, 0xeb0e363fu, 0x72076785u, 0x05005713u,
	0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
	0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u,
	0x86d3d2d4u, 0xf1d4e242u, 0x68ddb3f8u, 0x1fda836eu,
	0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
	0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu,
	0x8f659effu, 0xf862ae69u, 0x616bffd3u, 0x166ccf45u,
	0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
	0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu,
	0xaed16a4au, 0xd9d65adcu, 0x40df0b66u, 0x37d83bf0u,
	0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
	0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u,
	0xbad03605u, 0xcdd70693u, 0x54de5729u, 0x23d967bfu,
	0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
	0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

uint32_t sbrig_proto_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

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
			if (m->ev.obj)
				w_printf(&w, " %" PRIu64, m->ev.obj);
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
	/* revision 2: the blocker's object id, a number from 1 */
	if (r->p < r->end && *r->p != ' ')
		return -1;
	if (r_done(r) && (r_u64(r, &m->ev.obj) || !m->ev.obj))
		return -1;
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
