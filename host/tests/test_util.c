// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for lib/util.c's sbrig_term(): control bytes and backslashes
 * escaped, everything else (UTF-8 included) kept, a copy that does not
 * fit cut with "..." and never past its buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/sbrig.h>

static void control_bytes_escaped(void **state)
{
	char buf[64];

	assert_string_equal(sbrig_term("\x1b]0;t\x07\r\n\x7f", buf, sizeof(buf)),
			    "\\x1b]0;t\\x07\\x0d\\x0a\\x7f");
	assert_string_equal(sbrig_term("a\\b", buf, sizeof(buf)), "a\\\\b");
	assert_string_equal(sbrig_term("c0ffee caf\xc3\xa9", buf, sizeof(buf)),
			    "c0ffee caf\xc3\xa9");
	assert_string_equal(sbrig_term("", buf, sizeof(buf)), "");
}

static void long_strings_cut(void **state)
{
	char buf[16], big[100];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memset(buf, 'Z', sizeof(buf));
	sbrig_term(big, buf, 12);
	assert_string_equal(buf, "xxxxxxxx...");
	assert_int_equal(buf[12], 'Z');		/* nothing past its size */
	/* an escape that does not fit is not cut in half */
	sbrig_term("abcdef\x1b", buf, 12);
	assert_string_equal(buf, "abcdef...");
	sbrig_term("abcdefg", buf, 12);
	assert_string_equal(buf, "abcdefg");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(control_bytes_escaped),
		cmocka_unit_test(long_strings_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
