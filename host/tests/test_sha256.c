// SPDX-License-Identifier: GPL-2.0
/* Unit tests for lib/sha256.c against the FIPS 180-4 / NIST vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sha256.h"

static void hex_of(const char *s, char hex[SBRIG_SHA256_HEX_LEN])
{
	sbrig_sha256_hex(s, strlen(s), hex);
}

static void nist_short_vectors(void **state)
{
	char hex[SBRIG_SHA256_HEX_LEN];

	hex_of("", hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb924"
				 "27ae41e4649b934ca495991b7852b855");
	hex_of("abc", hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223"
				 "b00361a396177a9cb410ff61f20015ad");
	/* 56 bytes: the padding needs a second block */
	hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039"
				 "a33ce45964ff2167f6ecedd419db06c1");
	/* 112 bytes */
	hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
	       "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu", hex);
	assert_string_equal(hex, "cf5b16a778af8380036ce59e7b049237"
				 "0b249b11e8f07a51afac45037afee9d1");
}

static void million_a_in_odd_chunks(void **state)
{
	static const uint8_t want[SBRIG_SHA256_LEN] = {
		0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7,
		0xe2, 0x84, 0xd7, 0x3e, 0x67, 0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97,
		0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0,
	};
	struct sbrig_sha256 ctx;
	uint8_t md[SBRIG_SHA256_LEN];
	char chunk[997];
	size_t left = 1000000;

	memset(chunk, 'a', sizeof(chunk));
	sbrig_sha256_init(&ctx);
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

		sbrig_sha256_update(&ctx, chunk, n);
		left -= n;
	}
	sbrig_sha256_final(&ctx, md);
	assert_memory_equal(md, want, sizeof(want));
}

static void split_equals_one_shot(void **state)
{
	const char *s = "[rig]\nname = virtual\n[power]\nuri = ip:127.0.0.1:30431\n";
	char one[SBRIG_SHA256_HEX_LEN];
	size_t len = strlen(s), cut;

	sbrig_sha256_hex(s, len, one);
	for (cut = 0; cut <= len; cut++) {
		struct sbrig_sha256 ctx;
		uint8_t a[SBRIG_SHA256_LEN], b[SBRIG_SHA256_LEN];

		sbrig_sha256_init(&ctx);
		sbrig_sha256_update(&ctx, s, cut);
		sbrig_sha256_update(&ctx, s + cut, len - cut);
		sbrig_sha256_final(&ctx, a);
		sbrig_sha256_init(&ctx);
		sbrig_sha256_update(&ctx, s, len);
		sbrig_sha256_final(&ctx, b);
		assert_memory_equal(a, b, sizeof(a));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nist_short_vectors),
		cmocka_unit_test(million_a_in_odd_chunks),
		cmocka_unit_test(split_equals_one_shot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
