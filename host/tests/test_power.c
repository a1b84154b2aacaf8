// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the pure parts of lib/power.c: gap detection, unit
 * conversion, INA226 timing choice and the remote clock mapping. The
 * capture path itself is tested end to end (tests/test_power.py) against
 * rig/virtual/ina226_iiod.py through the real libiio.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/power.h>
#include <sbrig/sbrig.h>

#include "power-internal.h"

#define PERIOD_NS 280000	/* INA226: 2 x 140 us, no averaging */

static void gap_none_within_one_and_a_half_periods(void **state)
{
	uint64_t missing = 12345;

	assert_false(sbrig_power_gap(0, PERIOD_NS, PERIOD_NS, &missing));
	/* jitter up to 1.5 periods is not a gap */
	assert_false(sbrig_power_gap(0, PERIOD_NS * 3 / 2, PERIOD_NS, &missing));
	assert_false(sbrig_power_gap(0, 0, PERIOD_NS, &missing));
	assert_int_equal(missing, 12345);	/* untouched */
}

static void gap_counts_missing_samples(void **state)
{
	uint64_t missing = 0;

	/* just over 1.5 periods: one sample missing (round(1.5+)-1 = 1) */
	assert_true(sbrig_power_gap(0, PERIOD_NS * 3 / 2 + 1, PERIOD_NS,
				    &missing));
	assert_int_equal(missing, 1);
	/* 'drop 10' in the emulator: 11 periods between neighbours */
	assert_true(sbrig_power_gap(1000, 1000 + 11 * PERIOD_NS, PERIOD_NS,
				    &missing));
	assert_int_equal(missing, 10);
	/* rounding to the nearest period, jitter included */
	assert_true(sbrig_power_gap(0, 5 * PERIOD_NS + PERIOD_NS / 3,
				    PERIOD_NS, &missing));
	assert_int_equal(missing, 4);
	/* a long outage at 3571 Hz: one minute */
	assert_true(sbrig_power_gap(0, 60000000000LL, PERIOD_NS, &missing));
	/* 214285.7 periods: round, minus the sample that closes it */
	assert_int_equal(missing, 214285);
}

static void gap_needs_a_period(void **state)
{
	uint64_t missing = 0;

	assert_false(sbrig_power_gap(0, 1000000000, 0, &missing));
	/* time going backwards is not a gap either */
	assert_false(sbrig_power_gap(PERIOD_NS * 10, 0, PERIOD_NS, &missing));
}

static void scale_converts_to_integer_units(void **state)
{
	/* values seen on ina2xx-adc with a 10 mOhm shunt */
	assert_int_equal(sbrig_power_scale(400, 0, 0.25, 1e3), 100000);	/* uA */
	assert_int_equal(sbrig_power_scale(4000, 0, 1.25, 1e3), 5000000);	/* uV */
	assert_int_equal(sbrig_power_scale(400, 0, 0.0025, 1e6), 1000000);	/* nV */
	assert_int_equal(sbrig_power_scale(80, 0, 6.25, 1e3), 500000);	/* uW */
	assert_int_equal(sbrig_power_scale(-400, 0, 0.25, 1e3), -100000);
	/* offset is added before scaling, as IIO defines it */
	assert_int_equal(sbrig_power_scale(10, -2, 0.5, 1e3), 4000);
	/* rounds to nearest */
	assert_int_equal(sbrig_power_scale(1, 0, 0.0025, 1e6), 2500);
	assert_int_equal(sbrig_power_scale(3, 0, 0.3333333, 1e3), 1000);
}

static void timing_picks_nearest_ina226_setting(void **state)
{
	unsigned int ct, avg;

	sbrig_power_pick_timing(3571, &ct, &avg);
	assert_int_equal(ct, 140);
	assert_int_equal(avg, 1);
	sbrig_power_pick_timing(114, &ct, &avg);	/* driver default */
	assert_int_equal((unsigned int)(1e6 / (2.0 * ct * avg) + 0.5), 114);
	sbrig_power_pick_timing(1000000, &ct, &avg);	/* clamps to fastest */
	assert_int_equal(ct, 140);
	assert_int_equal(avg, 1);
	sbrig_power_pick_timing(0.01, &ct, &avg);	/* ... and slowest */
	assert_int_equal(ct, 8244);
	assert_int_equal(avg, 1024);
}

static void clockmap_keeps_minimum_delay(void **state)
{
	struct sbrig_clockmap map = { 0 };

	assert_false(map.valid);
	sbrig_clockmap_update(&map, 5000, 1000);	/* delay + offset 4000 */
	assert_true(map.valid);
	assert_int_equal(map.offset_ns, 4000);
	sbrig_clockmap_update(&map, 9000, 6000);	/* faster: 3000 */
	assert_int_equal(map.offset_ns, 3000);
	sbrig_clockmap_update(&map, 20000, 10000);	/* slower: ignored */
	assert_int_equal(map.offset_ns, 3000);
	/* remote clock ahead of ours: negative offsets work too */
	map.valid = false;
	sbrig_clockmap_update(&map, 1000, 1000000);
	assert_int_equal(map.offset_ns, 1000 - 1000000);
}

static void new_rejects_bad_uri(void **state)
{
	struct sbrig_power_opts opts = { .device = "ina226" };

	errno = 0;
	assert_null(sbrig_power_new("", &opts));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "URI"));
	errno = 0;
	assert_null(sbrig_power_new("nosuchbackend:x", &opts));
	assert_true(errno > 0);
	assert_non_null(strstr(sbrig_errmsg(), "nosuchbackend:x"));
	sbrig_power_free(NULL);
	assert_int_equal(sbrig_power_fd(NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gap_none_within_one_and_a_half_periods),
		cmocka_unit_test(gap_counts_missing_samples),
		cmocka_unit_test(gap_needs_a_period),
		cmocka_unit_test(scale_converts_to_integer_units),
		cmocka_unit_test(timing_picks_nearest_ina226_setting),
		cmocka_unit_test(clockmap_keeps_minimum_delay),
		cmocka_unit_test(new_rejects_bad_uri),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
