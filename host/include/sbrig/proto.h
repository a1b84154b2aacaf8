/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: target link wire protocol (codec)
 *
 * Encoder and decoder of the line frames exchanged between the host
 * (lib/link.c) and the target agent (kernel-module/tools/sbagent.c, which
 * compiles lib/proto.c in). The protocol itself is documented in
 * host/doc/link-protocol.md: a frame is one text line
 *
 *	@sb1 TYPE FIELDS... *CRC\n
 *
 * where CRC is the CRC-32 (IEEE, zlib's crc32) of the bytes from '@' up to
 * and including the space before '*', as 8 lowercase hex digits.
 *
 * This codec has no dependency beyond libc (the agent is a static target
 * program) and reports errors by return value only.
 */
#ifndef SBRIG_PROTO_H
#define SBRIG_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBRIG_PROTO_VERSION	1
/*
 * The revision each end puts in its HELLO's proto field (the frames stay
 * version 1): 1, the original; 2, an EV of a block/unblock may carry the
 * blocker's object id. An agent sends ids only to a host whose HELLO says
 * 2 or more, so each end of a revision 1 link sees what it always did.
 */
#define SBRIG_PROTO_REVISION	2
/* Longest frame, including the '\n'. */
#define SBRIG_PROTO_FRAME_MAX	1024
/* Longest quoted string (blocker name, text), without quotes. */
#define SBRIG_PROTO_STR_MAX	255

/**
 * enum sbrig_proto_type - frame types; T_ = target to host, H_ = host to
 * target (HELLO exists in both directions with different fields)
 */
enum sbrig_proto_type {
	SBRIG_PROTO_T_HELLO,	/* HELLO proto boot agent "kernel" module oldest next new|ok */
	SBRIG_PROTO_T_EV,	/* EV seq t_ns type arg */
	SBRIG_PROTO_T_ST,	/* ST cmd idx n "name" count wake active total sleep max last */
	SBRIG_PROTO_T_PONG,	/* PONG token t_boot_ns */
	SBRIG_PROTO_T_R,	/* R cmd errno "text" */
	SBRIG_PROTO_T_D,	/* D cmd errno "text" */
	SBRIG_PROTO_T_GAP,	/* GAP from_seq to_seq */
	SBRIG_PROTO_T_BEAT,	/* BEAT next_seq t_boot_ns */
	SBRIG_PROTO_H_HELLO,	/* HELLO proto boot_id|- next_seq */
	SBRIG_PROTO_H_ACK,	/* ACK seq */
	SBRIG_PROTO_H_RESEND,	/* RESEND seq */
	SBRIG_PROTO_H_PING,	/* PING token */
	SBRIG_PROTO_H_CMD,	/* CMD cmd_id verb args... */
};

/* Decoder results besides success (1) and "no frame on this line" (0). */
#define SBRIG_PROTO_EBAD	(-74)	/* -EBADMSG: CRC or syntax */
#define SBRIG_PROTO_EVERSION	(-93)	/* -EPROTONOSUPPORT: @sbN, N != 1 */

/**
 * struct sbrig_proto_msg - one decoded (or to-be-encoded) frame
 * @type: which member of the union is valid
 *
 * Strings are NUL-terminated and unquoted. Numbers are as on the wire;
 * @reply.err is the positive errno of the wire (0 = success).
 */
struct sbrig_proto_msg {
	enum sbrig_proto_type type;
	union {
		struct {
			unsigned int proto;
			char boot_id[40];
			char agent[32];
			char kernel[96];
			char module[32];
			uint64_t oldest_seq;
			uint64_t next_seq;
			/* true ("ok"): answers a host HELLO; false ("new"):
			 * the agent waits for one (it just started) */
			bool answer;
		} hello;		/* T_HELLO */
		struct {
			unsigned int proto;
			char boot_id[40];	/* "" encodes as "-" */
			uint64_t next_seq;
		} hhello;		/* H_HELLO */
		struct {
			uint64_t seq;
			int64_t t_ns;
			char type[12];
			/* quoted: blocker name (unquoted here), else raw text */
			char arg[SBRIG_PROTO_STR_MAX + 1];
			bool quoted;
			bool cut;	/* '+' after the closing quote */
			/* block/unblock: the blocker's object id (revision
			 * 2, after the quoted name), 0: none */
			uint64_t obj;
		} ev;			/* T_EV */
		struct {
			uint32_t cmd_id;
			uint32_t idx;
			uint32_t n;
			char name[SBRIG_PROTO_STR_MAX + 1];
			uint64_t count;
			uint64_t wake_count;
			int64_t active_since;
			int64_t total_time;
			int64_t sleep_time;
			int64_t max_time;
			int64_t last_change;
		} st;			/* T_ST */
		struct {
			uint64_t token;
			int64_t t_boot_ns;
		} pong;			/* T_PONG */
		struct {
			uint32_t cmd_id;
			int err;
			char text[SBRIG_PROTO_STR_MAX + 1];
		} reply;		/* T_R, T_D */
		struct {
			uint64_t from_seq;
			uint64_t to_seq;
		} gap;			/* T_GAP */
		struct {
			uint64_t next_seq;
			int64_t t_boot_ns;
		} beat;			/* T_BEAT */
		struct {
			uint64_t seq;
		} ack;			/* H_ACK, H_RESEND */
		struct {
			uint64_t token;
		} ping;			/* H_PING */
		struct {
			uint32_t cmd_id;
			char verb[16];
			char args[SBRIG_PROTO_FRAME_MAX];	/* raw */
		} cmd;			/* H_CMD */
	};
};

/**
 * sbrig_proto_crc32() - CRC-32/IEEE (same as zlib's crc32())
 * @crc: previous value (0 to start)
 * @buf: bytes
 * @len: their number
 *
 * Return: the updated CRC.
 */
uint32_t sbrig_proto_crc32(uint32_t crc, const void *buf, size_t len);

/**
 * sbrig_proto_encode() - build one frame
 * @msg: what to encode
 * @buf: output, at least SBRIG_PROTO_FRAME_MAX bytes to be safe
 * @size: size of @buf
 *
 * Strings are sanitised: bytes outside 0x20..0x7e and '"', '\\' become
 * '?'; strings longer than SBRIG_PROTO_STR_MAX are cut.
 *
 * Return: frame length including the final '\n' (the frame is also
 * NUL-terminated), or -EMSGSIZE if it does not fit, -EINVAL for a bad type.
 */
int sbrig_proto_encode(const struct sbrig_proto_msg *msg, char *buf,
		       size_t size);

/**
 * sbrig_proto_decode() - find and decode the frame in one received line
 * @line: the line, without its '\n' (a trailing '\r' is ignored); need not
 *	be NUL-terminated
 * @len: its length
 * @from_target: true on the host (decode target frames), false on the agent
 * @msg: out
 * @frame_off: out (may be NULL): where the frame starts in @line; the bytes
 *	before it are noise (e.g. a kernel message)
 *
 * The frame is the last "@sb" in the line at which a frame with a valid
 * CRC starts (so "@sb" inside a quoted name or a corrupted frame followed
 * by a good one cannot hide a good frame).
 *
 * Return: 1 with @msg filled; 0 if the line holds no "@sb" at all;
 * SBRIG_PROTO_EBAD if it does but no valid frame (CRC, syntax, unknown
 * type, wrong direction); SBRIG_PROTO_EVERSION if the CRC is valid but the
 * version is not SBRIG_PROTO_VERSION.
 */
int sbrig_proto_decode(const char *line, size_t len, bool from_target,
		       struct sbrig_proto_msg *msg, size_t *frame_off);

/**
 * sbrig_proto_token() - split the next token of a CMD's arguments
 * @p: in/out: cursor into a NUL-terminated string
 * @buf: out: the token, unquoted
 * @size: size of @buf
 *
 * A token is a double-quoted string (may contain spaces) or a run of
 * non-space bytes.
 *
 * Return: 1 if a token was read, 0 at the end, -1 on a malformed or too
 * long token.
 */
int sbrig_proto_token(const char **p, char *buf, size_t size);

/**
 * sbrig_proto_type_name() - "HELLO", "EV", ... for @type; "?" if unknown
 */
const char *sbrig_proto_type_name(enum sbrig_proto_type type);

/**
 * DOC: the words of the agent's policy and state commands
 *
 * What ``policy`` and ``state`` take (link-protocol.md), as
 * NULL-terminated lists, so that the host (sbrigd's requests, sbrig's
 * arguments, the scenario parser) checks them before anything is sent
 * and names the choices in its messages. Every state but ``on`` puts the
 * target to sleep: under the forced policy at once, under the
 * opportunistic one whenever no blocker is active.
 */
extern const char *const sbrig_proto_policies[];
extern const char *const sbrig_proto_states[];

/**
 * sbrig_proto_word() - look a word up in such a list
 * @words: NULL-terminated list (sbrig_proto_policies, sbrig_proto_states)
 * @w: the word (NULL: not found)
 *
 * Return: its index, or -1.
 */
int sbrig_proto_word(const char *const *words, const char *w);

/**
 * sbrig_proto_words() - a list as text for messages: "forced, opportunistic"
 * @words: NULL-terminated list
 * @sep: between two words
 * @buf: out, NUL-terminated, cut to @size - 1 bytes
 * @size: size of @buf
 *
 * Return: @buf.
 */
const char *sbrig_proto_words(const char *const *words, const char *sep,
			      char *buf, size_t size);

/**
 * sbrig_proto_state_sleeps() - does requesting @state put the target to sleep?
 * @state: a word of sbrig_proto_states
 *
 * Return: true for every state but "on" (and false for a word that is not
 * a state).
 */
bool sbrig_proto_state_sleeps(const char *state);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_PROTO_H */
