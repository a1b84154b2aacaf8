// SPDX-License-Identifier: GPL-2.0
/* Unit tests for the error convention (lib/error.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/sbrig.h>

static void set_error_returns_negative_errno(void **state)
{
	assert_int_equal(sbrig_set_error(-EINVAL, "a:%d: bad", 3), -EINVAL);
	assert_string_equal(sbrig_errmsg(), "a:3: bad");
	assert_int_equal(sbrig_set_error(ENOENT, "x"), -ENOENT);
}

static void prefix_keeps_old_message(void **state)
{
	sbrig_set_error(-EIO, "read failed");
	sbrig_prefix_error("rig %s", "virtual");
	assert_string_equal(sbrig_errmsg(), "rig virtual: read failed");
}

static void clock_is_monotonic(void **state)
{
	int64_t a = sbrig_now_ns(), b = sbrig_now_ns();

	assert_true(a > 0);
	assert_true(b >= a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(set_error_returns_negative_errno),
		cmocka_unit_test(prefix_keeps_old_message),
		cmocka_unit_test(clock_is_monotonic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
