// SPDX-License-Identifier: GPL-2.0
/* Unit tests for the target link codec (lib/proto.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/proto.h>

static int decode_str(const char *line, bool from_target,
		      struct sbrig_proto_msg *m, size_t *off)
{
	return sbrig_proto_decode(line, strlen(line), from_target, m, off);
}

/* Encode, then decode (without the '\n'); returns the decoded message. */
static struct sbrig_proto_msg roundtrip(const struct sbrig_proto_msg *in,
					bool from_target)
{
	char buf[SBRIG_PROTO_FRAME_MAX + 1];
	struct sbrig_proto_msg out;
	int n = sbrig_proto_encode(in, buf, sizeof(buf));

	assert_true(n > 0);
	assert_int_equal(buf[n - 1], '\n');
	assert_int_equal(sbrig_proto_decode(buf, (size_t)n - 1, from_target,
					    &out, NULL), 1);
	assert_int_equal(out.type, in->type);
	return out;
}

static void crc_matches_zlib(void **state)
{
	/* zlib: crc32(0, "123456789", 9) == 0xcbf43926 */
	assert_int_equal(sbrig_proto_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(sbrig_proto_crc32(sbrig_proto_crc32(0, "1234", 4),
					   "56789", 5), 0xcbf43926u);
}

/* every byte value, against the polynomial worked bit by bit */
static void crc_table_is_the_polynomials(void **state)
{
	unsigned int i, k;

	for (i = 0; i < 256; i++) {
		unsigned char b = (unsigned char)i;
		uint32_t c = ~0u ^ i;

		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		assert_int_equal(sbrig_proto_crc32(0, &b, 1), ~c);
	}
}

static void known_frame_bytes(void **state)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_PING };
	char buf[64];
	char want[64];
	int n;

	m.ping.token = 7;
	n = sbrig_proto_encode(&m, buf, sizeof(buf));
	snprintf(want, sizeof(want), "@sb1 PING 7 *%08x\n",
		 sbrig_proto_crc32(0, "@sb1 PING 7 ", 12));
	assert_int_equal(n, (int)strlen(want));
	assert_string_equal(buf, want);
}

static void roundtrip_all_types(void **state)
{
	struct sbrig_proto_msg m, o;

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_T_HELLO;
	m.hello.proto = 1;
	strcpy(m.hello.boot_id, "0b7e-11");
	strcpy(m.hello.agent, "0.1.0");
	strcpy(m.hello.kernel, "6.1.0-57-amd64 #1 SMP");
	strcpy(m.hello.module, "-");
	m.hello.oldest_seq = 3;
	m.hello.next_seq = 99;
	m.hello.answer = true;
	o = roundtrip(&m, true);
	assert_string_equal(o.hello.kernel, "6.1.0-57-amd64 #1 SMP");
	assert_string_equal(o.hello.module, "-");
	assert_int_equal(o.hello.next_seq, 99);
	assert_true(o.hello.answer);

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_T_EV;
	m.ev.seq = 18446744073709551615ULL;
	m.ev.t_ns = 5012345678;
	strcpy(m.ev.type, "block");
	strcpy(m.ev.arg, "rig agent with spaces");
	m.ev.quoted = true;
	m.ev.cut = true;
	o = roundtrip(&m, true);
	assert_true(o.ev.seq == 18446744073709551615ULL);
	assert_string_equal(o.ev.arg, "rig agent with spaces");
	assert_true(o.ev.quoted && o.ev.cut);
	assert_true(o.ev.obj == 0);	/* none sent: none read */

	/* revision 2: the blocker's object id after the name */
	m.ev.obj = 18446744073709551615ULL;
	o = roundtrip(&m, true);
	assert_true(o.ev.obj == 18446744073709551615ULL);
	assert_string_equal(o.ev.arg, "rig agent with spaces");
	assert_true(o.ev.quoted && o.ev.cut);
	m.ev.cut = false;
	m.ev.obj = 7;
	o = roundtrip(&m, true);
	assert_true(o.ev.obj == 7 && !o.ev.cut);
	m.ev.obj = 0;

	m.ev.quoted = false;
	m.ev.cut = false;
	strcpy(m.ev.type, "policy");
	strcpy(m.ev.arg, "opportunistic mem");
	o = roundtrip(&m, true);
	assert_string_equal(o.ev.arg, "opportunistic mem");
	assert_false(o.ev.quoted);

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_T_ST;
	m.st.cmd_id = 4000000000u;
	m.st.idx = 2;
	m.st.n = 3;
	strcpy(m.st.name, "input-event-queue");
	m.st.count = 41;
	m.st.last_change = 118300112233;
	m.st.active_since = -1;
	o = roundtrip(&m, true);
	assert_int_equal(o.st.cmd_id, 4000000000u);
	assert_string_equal(o.st.name, "input-event-queue");
	assert_int_equal(o.st.active_since, -1);
	assert_int_equal(o.st.last_change, 118300112233);

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_T_D;
	m.reply.cmd_id = 5;
	m.reply.err = 16;
	strcpy(m.reply.text, "busy \"quoted\" \\ text");
	o = roundtrip(&m, true);
	assert_int_equal(o.reply.err, 16);
	assert_string_equal(o.reply.text, "busy ?quoted? ? text");

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_T_GAP;
	m.gap.from_seq = 10;
	m.gap.to_seq = 12;
	o = roundtrip(&m, true);
	assert_int_equal(o.gap.to_seq, 12);

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_H_HELLO;
	m.hhello.proto = 1;
	m.hhello.next_seq = 42;
	o = roundtrip(&m, false);
	assert_string_equal(o.hhello.boot_id, "");	/* "-" on the wire */
	assert_int_equal(o.hhello.next_seq, 42);

	memset(&m, 0, sizeof(m));
	m.type = SBRIG_PROTO_H_CMD;
	m.cmd.cmd_id = 9;
	strcpy(m.cmd.verb, "hold");
	strcpy(m.cmd.args, "\"rig test\" 500");
	o = roundtrip(&m, false);
	assert_string_equal(o.cmd.verb, "hold");
	assert_string_equal(o.cmd.args, "\"rig test\" 500");
}

static void tokens_with_quotes(void **state)
{
	const char *p = "\"rig test\"  500 x";
	char buf[32];

	assert_int_equal(sbrig_proto_token(&p, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "rig test");
	assert_int_equal(sbrig_proto_token(&p, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "500");
	assert_int_equal(sbrig_proto_token(&p, buf, sizeof(buf)), 1);
	assert_int_equal(sbrig_proto_token(&p, buf, sizeof(buf)), 0);
	p = "\"unterminated";
	assert_int_equal(sbrig_proto_token(&p, buf, sizeof(buf)), -1);
	p = "\"x\"junk";
	assert_int_equal(sbrig_proto_token(&p, buf, sizeof(buf)), -1);
}

static int encode_ev(char *buf, size_t size, uint64_t seq)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_T_EV };

	m.ev.seq = seq;
	m.ev.t_ns = 1;
	strcpy(m.ev.type, "block");
	strcpy(m.ev.arg, "a @sb1 name");	/* "@sb" inside a name */
	m.ev.quoted = true;
	return sbrig_proto_encode(&m, buf, size);
}

static void frame_after_kernel_message(void **state)
{
	char frame[256], line[512];
	struct sbrig_proto_msg m;
	size_t off = 0;
	int n = encode_ev(frame, sizeof(frame), 7);

	frame[n - 1] = '\0';
	snprintf(line, sizeof(line), "[   12.345678] usb 1-1: reset %s\r", frame);
	assert_int_equal(decode_str(line, true, &m, &off), 1);
	assert_int_equal(m.ev.seq, 7);
	assert_string_equal(m.ev.arg, "a @sb1 name");
	assert_int_equal(off, strlen("[   12.345678] usb 1-1: reset "));

	/* a corrupted frame, then a good one on the same line */
	snprintf(line, sizeof(line), "@sb1 EV 3 1 block \"x\" *deadbeef %s",
		 frame);
	assert_int_equal(decode_str(line, true, &m, NULL), 1);
	assert_int_equal(m.ev.seq, 7);
}

static void crc_mismatch_and_truncation(void **state)
{
	char frame[256];
	struct sbrig_proto_msg m;
	int n = encode_ev(frame, sizeof(frame), 1), i;

	frame[n - 1] = '\0';
	frame[10] ^= 1;		/* corrupt a payload byte */
	assert_int_equal(decode_str(frame, true, &m, NULL), SBRIG_PROTO_EBAD);
	frame[10] ^= 1;
	for (i = 1; i < n - 1; i++) {	/* every truncation is rejected */
		assert_int_equal(sbrig_proto_decode(frame, (size_t)i, true, &m,
						    NULL) == 1, 0);
	}
	assert_int_equal(decode_str("no frame here", true, &m, NULL), 0);
	assert_int_equal(decode_str("@sb", true, &m, NULL), SBRIG_PROTO_EBAD);
	assert_int_equal(decode_str("", true, &m, NULL), 0);
}

static void wrong_direction_and_version(void **state)
{
	char buf[128], body[64];
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_PING };
	int n;

	m.ping.token = 1;
	n = sbrig_proto_encode(&m, buf, sizeof(buf));
	/* a host frame is not a target frame */
	assert_int_equal(sbrig_proto_decode(buf, (size_t)n - 1, true, &m, NULL),
			 SBRIG_PROTO_EBAD);
	strcpy(body, "@sb2 PING 1 ");
	snprintf(buf, sizeof(buf), "%s*%08x", body,
		 sbrig_proto_crc32(0, body, strlen(body)));
	assert_int_equal(decode_str(buf, false, &m, NULL), SBRIG_PROTO_EVERSION);
	strcpy(body, "@sb1 FOO 1 ");
	snprintf(buf, sizeof(buf), "%s*%08x", body,
		 sbrig_proto_crc32(0, body, strlen(body)));
	assert_int_equal(decode_str(buf, false, &m, NULL), SBRIG_PROTO_EBAD);
	/* valid CRC but a non-number where a number belongs */
	strcpy(body, "@sb1 PING x1 ");
	snprintf(buf, sizeof(buf), "%s*%08x", body,
		 sbrig_proto_crc32(0, body, strlen(body)));
	assert_int_equal(decode_str(buf, false, &m, NULL), SBRIG_PROTO_EBAD);
}

static void oversize_is_refused(void **state)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_T_R };
	char buf[2 * SBRIG_PROTO_FRAME_MAX], body[2 * SBRIG_PROTO_FRAME_MAX];
	size_t n;

	/* strings are cut at 255 bytes, so a reply always fits */
	memset(m.reply.text, 'a', sizeof(m.reply.text) - 1);
	assert_true(sbrig_proto_encode(&m, buf, sizeof(buf)) > 0);
	assert_int_equal(sbrig_proto_encode(&m, buf, 40), -EMSGSIZE);
	/* a line longer than the frame limit is not a frame, even with a
	 * valid CRC */
	memset(body, 0, sizeof(body));
	strcpy(body, "@sb1 R 1 0 \"");
	n = strlen(body);
	memset(body + n, 'b', SBRIG_PROTO_FRAME_MAX);
	strcpy(body + n + SBRIG_PROTO_FRAME_MAX, "\" ");
	snprintf(buf, sizeof(buf), "%s*%08x", body,
		 sbrig_proto_crc32(0, body, strlen(body)));
	assert_int_equal(decode_str(buf, true, &m, NULL), SBRIG_PROTO_EBAD);
}

static void bad_string_bytes_rejected(void **state)
{
	char buf[128], body[64];
	struct sbrig_proto_msg m;

	strcpy(body, "@sb1 R 1 0 \"tab\there\" ");
	snprintf(buf, sizeof(buf), "%s*%08x", body,
		 sbrig_proto_crc32(0, body, strlen(body)));
	assert_int_equal(decode_str(buf, true, &m, NULL), SBRIG_PROTO_EBAD);
}

/* Decode @body (CRC added) as a target frame. */
static int decode_body_str(const char *body, struct sbrig_proto_msg *m)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s*%08x", body,
		 sbrig_proto_crc32(0, body, strlen(body)));
	return decode_str(buf, true, m, NULL);
}

static void ev_object_id(void **state)
{
	struct sbrig_proto_msg m;

	/* revision 1: no id */
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"evdev\" ", &m), 1);
	assert_true(m.ev.obj == 0 && !m.ev.cut);
	assert_string_equal(m.ev.arg, "evdev");
	/* revision 2: after the name, and after a cut name's '+' */
	assert_int_equal(decode_body_str("@sb1 EV 3 9 unblock \"evdev\" 42 ", &m), 1);
	assert_true(m.ev.obj == 42 && !m.ev.cut);
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"ev\"+ 5 ", &m), 1);
	assert_true(m.ev.obj == 5 && m.ev.cut);
	/* an id is a number from 1, one field, separated by a space */
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"evdev\" 0 ", &m),
			 SBRIG_PROTO_EBAD);
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"evdev\" x ", &m),
			 SBRIG_PROTO_EBAD);
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"evdev\"7 ", &m),
			 SBRIG_PROTO_EBAD);
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"evdev\" 7 8 ", &m),
			 SBRIG_PROTO_EBAD);
	assert_int_equal(decode_body_str("@sb1 EV 3 9 block \"evdev\" -7 ", &m),
			 SBRIG_PROTO_EBAD);
	assert_int_equal(decode_body_str(
		"@sb1 EV 3 9 block \"evdev\" 18446744073709551616 ", &m),
		SBRIG_PROTO_EBAD);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc_matches_zlib),
		cmocka_unit_test(crc_table_is_the_polynomials),
		cmocka_unit_test(known_frame_bytes),
		cmocka_unit_test(roundtrip_all_types),
		cmocka_unit_test(ev_object_id),
		cmocka_unit_test(tokens_with_quotes),
		cmocka_unit_test(frame_after_kernel_message),
		cmocka_unit_test(crc_mismatch_and_truncation),
		cmocka_unit_test(wrong_direction_and_version),
		cmocka_unit_test(oversize_is_refused),
		cmocka_unit_test(bad_string_bytes_rejected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
