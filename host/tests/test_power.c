// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the pure parts of lib/power.c: gap detection, unit
 * conversion (double and exact integer), scan decoding, INA226 timing
 * choice and the remote clock mapping. The
 * capture path itself is tested end to end (tests/test_power.py) against
 * rig/virtual/ina226_iiod.py through the real libiio.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/power.h>
#include <sbrig/sbrig.h>

#include "power-internal.h"

#define PERIOD_NS 1120000	/* INA226: 2 x 140 us, averaging 4 (893 S/s) */

/*
 * Stamps as ina2xx-adc's kthread makes them (power-internal.h): conversion
 * k ends at k x @real_ns, its stamp lies anywhere before the next one ends.
 * The offsets come from a fixed LCG: uniform in [0, real), with runs of
 * the driver's worst case (late, then early: 1.97 periods between stamps).
 */
struct stamps {
	uint64_t lcg;
	int64_t real_ns;
	int64_t k;		/* conversion of the next stamp */
	unsigned int n;
};

static int64_t stamp_at(struct stamps *st, int64_t frac_permille)
{
	return st->k++ * st->real_ns + st->real_ns * frac_permille / 1000;
}

static int64_t stamp_next(struct stamps *st)
{
	int64_t f;

	st->lcg = st->lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	f = (int64_t)((st->lcg >> 33) % 1000);
	if ((st->n++ / 64) % 4 == 3)	/* a run of late/early pairs */
		f = st->n % 2 ? 985 : 10;
	return stamp_at(st, f);
}

/* feed @n stamps; return the gaps found (their missing counts added up) */
static unsigned int feed(struct sbrig_power_grid *g, struct stamps *st,
			 unsigned int n, uint64_t *missing_sum,
			 unsigned int *longer_than_1_5)
{
	unsigned int gaps = 0;
	int64_t prev = INT64_MIN;

	for (unsigned int i = 0; i < n; i++) {
		int64_t t = stamp_next(st);
		uint64_t m = 0;

		if (prev != INT64_MIN && longer_than_1_5 &&
		    2 * (t - prev) > 3 * g->period_ns)
			(*longer_than_1_5)++;
		prev = t;
		if (sbrig_power_gap(g, t, &m)) {
			gaps++;
			*missing_sum += m;
		}
	}
	return gaps;
}

static void gap_none_for_the_drivers_jitter(void **state)
{
	struct sbrig_power_grid g;
	struct stamps st = { .lcg = 1, .real_ns = PERIOD_NS };
	unsigned int late = 0;
	uint64_t missing = 0;

	sbrig_power_grid_init(&g, PERIOD_NS);
	assert_int_equal(feed(&g, &st, 50000, &missing, &late), 0);
	/* the old rule (1.5 periods from the previous stamp) saw thousands */
	assert_true(late > 1000);
}

static void gap_none_on_a_slow_or_fast_chip(void **state)
{
	/* the chip's oscillator: conversions up to 10 % longer, or shorter */
	const int64_t real[] = { PERIOD_NS * 109 / 100, PERIOD_NS * 93 / 100 };

	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		struct sbrig_power_grid g;
		struct stamps st = { .lcg = 7 + i, .real_ns = real[i] };
		uint64_t missing = 0;

		sbrig_power_grid_init(&g, PERIOD_NS);
		assert_int_equal(feed(&g, &st, 50000, &missing, NULL), 0);
	}
}

static void gap_finds_one_lost_conversion(void **state)
{
	struct sbrig_power_grid g;
	struct stamps st = { .lcg = 3, .real_ns = PERIOD_NS };
	uint64_t missing = 0, m = 0;

	sbrig_power_grid_init(&g, PERIOD_NS);
	assert_int_equal(feed(&g, &st, 5000, &missing, NULL), 0);
	/* an early stamp, then one conversion lost, read mid-period */
	assert_false(sbrig_power_gap(&g, stamp_at(&st, 20), &m));
	st.k++;
	assert_true(sbrig_power_gap(&g, stamp_at(&st, 500), &m));
	assert_int_equal(m, 1);
	/* a loss read right at its conversion cannot be told from the
	 * driver's jitter: the next stamp late in its period shows it */
	assert_false(sbrig_power_gap(&g, stamp_at(&st, 30), &m));
	st.k++;
	assert_false(sbrig_power_gap(&g, stamp_at(&st, 0), &m));
	assert_true(sbrig_power_gap(&g, stamp_at(&st, 600), &m));
	assert_int_equal(m, 1);
	/* and the grid is not disturbed by either */
	missing = 0;
	assert_int_equal(feed(&g, &st, 5000, &missing, NULL), 0);
}

static void gap_counts_missing_samples(void **state)
{
	struct sbrig_power_grid g;
	struct stamps st = { .lcg = 5, .real_ns = PERIOD_NS };
	uint64_t missing = 0, m = 0;

	sbrig_power_grid_init(&g, PERIOD_NS);
	assert_int_equal(feed(&g, &st, 2000, &missing, NULL), 0);
	/* 'drop 25' in the emulator: 25 conversions never read */
	assert_false(sbrig_power_gap(&g, stamp_at(&st, 100), &m));
	st.k += 25;
	assert_true(sbrig_power_gap(&g, stamp_at(&st, 400), &m));
	assert_int_equal(m, 25);
	/* a long outage, one minute: counted with the period measured so
	 * far (to ~1/conversions: here within 0.1 %) */
	st.k += 60000000000LL / PERIOD_NS;
	assert_true(sbrig_power_gap(&g, stamp_at(&st, 300), &m));
	assert_in_range(m, 60000000000LL / PERIOD_NS * 999 / 1000,
			60000000000LL / PERIOD_NS * 1001 / 1000);
	missing = 0;
	assert_int_equal(feed(&g, &st, 2000, &missing, NULL), 0);
}

static void gap_needs_a_period(void **state)
{
	struct sbrig_power_grid g;
	uint64_t missing = 0;

	sbrig_power_grid_init(&g, 0);
	assert_false(sbrig_power_gap(&g, 0, &missing));
	assert_false(sbrig_power_gap(&g, 1000000000, &missing));
	/* time going backwards is not a gap either */
	sbrig_power_grid_init(&g, PERIOD_NS);
	assert_false(sbrig_power_gap(&g, PERIOD_NS * 10, &missing));
	assert_false(sbrig_power_gap(&g, 0, &missing));
	assert_false(sbrig_power_gap(&g, PERIOD_NS, &missing));
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

/* the scale strings ina2xx-adc (and the emulator) print */
static void conv_exact_for_ina226_scales(void **state)
{
	struct sbrig_power_conv cv;

	assert_int_equal(sbrig_power_conv_init(&cv, "0.002500000\n", NULL,
					       1000000), 0);
	assert_true(cv.exact);
	assert_int_equal(cv.mul, 2500);		/* nV per LSB */
	assert_int_equal(cv.div, 1);
	assert_int_equal(sbrig_power_conv(&cv, 400), 1000000);
	assert_int_equal(sbrig_power_conv(&cv, -400), -1000000);
	assert_int_equal(sbrig_power_conv(&cv, -32768), -81920000);
	assert_int_equal(sbrig_power_conv(&cv, 32767), 81917500);

	assert_int_equal(sbrig_power_conv_init(&cv, "1.250000000", NULL, 1000), 0);
	assert_true(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, 4000), 5000000);	/* uV */
	assert_int_equal(sbrig_power_conv(&cv, 65535), 81918750);

	assert_int_equal(sbrig_power_conv_init(&cv, "6.250000000", NULL, 1000), 0);
	assert_int_equal(sbrig_power_conv(&cv, 80), 500000);		/* uW */
	assert_int_equal(sbrig_power_conv(&cv, 65535), 409593750);

	assert_int_equal(sbrig_power_conv_init(&cv, "0.250000000", NULL, 1000), 0);
	assert_int_equal(sbrig_power_conv(&cv, 400), 100000);		/* uA */
	assert_int_equal(sbrig_power_conv(&cv, -400), -100000);
	assert_int_equal(sbrig_power_conv(&cv, -32768), -8192000);
}

/* 2500 nV / 3000 uOhm: 0.833333333 mA per LSB, not a whole uA */
static void conv_rounds_like_llround(void **state)
{
	struct sbrig_power_conv cv;

	assert_int_equal(sbrig_power_conv_init(&cv, "0.833333333", NULL, 1000), 0);
	assert_true(cv.exact);
	assert_int_equal(cv.div, 1000000);	/* 833333333 / 1e6 uA */
	assert_int_equal(sbrig_power_conv(&cv, 1), 833);	/* 833.33 */
	assert_int_equal(sbrig_power_conv(&cv, 3), 2500);	/* 2499.999999 */
	assert_int_equal(sbrig_power_conv(&cv, -1), -833);
	assert_int_equal(sbrig_power_conv(&cv, -3), -2500);
	/* exact halves go away from zero, as llround() */
	assert_int_equal(sbrig_power_conv_init(&cv, "0.5", NULL, 1), 0);
	assert_true(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, 5), 3);
	assert_int_equal(sbrig_power_conv(&cv, -5), -3);
	assert_int_equal(sbrig_power_conv(&cv, 4), 2);
	assert_int_equal(sbrig_power_conv(&cv, -4), -2);
	assert_int_equal(sbrig_power_conv_init(&cv, "0.0025", NULL, 1000), 0);
	assert_int_equal(sbrig_power_conv(&cv, 1), 3);	/* 2.5 */
	assert_int_equal(sbrig_power_conv(&cv, -1), -3);
	assert_int_equal(sbrig_power_conv(&cv, 3), 8);	/* 7.5 */
}

/* Over the whole 16-bit range the integer path equals the double one. */
static void conv_matches_scale_helper(void **state)
{
	static const struct {
		const char *scale;
		unsigned int factor;
	} cases[] = {
		{ "0.002500000", 1000000 }, { "1.250000000", 1000 },
		{ "6.250000000", 1000 }, { "0.250000000", 1000 },
		{ "0.125000000", 1000 }, { "3.125000000", 1000 },
		{ "0.833333333", 1000 }, { "4.166666666", 1000 },
		{ "0.001", 1000000 }, { "12", 1000 },
	};
	struct sbrig_power_conv cv;
	size_t i;
	int64_t raw;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double scale = strtod(cases[i].scale, NULL);

		assert_int_equal(sbrig_power_conv_init(&cv, cases[i].scale,
						       NULL, cases[i].factor), 0);
		assert_true(cv.exact);
		for (raw = -32768; raw <= 65535; raw++)
			assert_int_equal(sbrig_power_conv(&cv, raw),
					 sbrig_power_scale(raw, 0, scale,
							   cases[i].factor));
	}
}

static void conv_offset_and_fallback(void **state)
{
	struct sbrig_power_conv cv;

	/* integer offset: still exact; added before scaling */
	assert_int_equal(sbrig_power_conv_init(&cv, "0.5", "-2", 1000), 0);
	assert_true(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, 10), 4000);
	assert_int_equal(sbrig_power_conv(&cv, -10), -6000);
	/* fractional offset, too many digits, exponent: double path */
	assert_int_equal(sbrig_power_conv_init(&cv, "0.5", "-2.5", 1000), 0);
	assert_false(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, 10), 3750);
	assert_int_equal(sbrig_power_conv_init(&cv, "0.3333333333", NULL, 1000), 0);
	assert_false(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, 3), 1000);
	assert_int_equal(sbrig_power_conv_init(&cv, "2.5e-3", NULL, 1000000), 0);
	assert_false(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, -400), -1000000);
	/* no scale: 1 */
	assert_int_equal(sbrig_power_conv_init(&cv, NULL, NULL, 1000), 0);
	assert_true(cv.exact);
	assert_int_equal(sbrig_power_conv(&cv, -7), -7000);
	/* raw outside the exact path's range still converts */
	assert_int_equal(sbrig_power_conv_init(&cv, "0.25", NULL, 1000), 0);
	assert_int_equal(sbrig_power_conv(&cv, INT64_C(1) << 30),
			 (INT64_C(1) << 30) * 250);
	/* not numbers */
	assert_int_equal(sbrig_power_conv_init(&cv, "abc", NULL, 1000), -EINVAL);
	assert_int_equal(sbrig_power_conv_init(&cv, "1", "", 1000), -EINVAL);
}

static const unsigned char scan[16] = {
	0x90, 0x01,		/* 400 */
	0x70, 0xfe,		/* -400 as u16 0xfe70 */
	0x34, 0x12,		/* 0x1234 */
	0xff, 0xff,
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
};

static struct sbrig_power_field field(size_t offset, unsigned int length,
				      unsigned int bits, unsigned int shift,
				      bool is_signed, bool fully, bool is_be)
{
	struct iio_data_format fmt = {
		.length = length, .bits = bits, .shift = shift,
		.is_signed = is_signed, .is_fully_defined = fully,
		.is_be = is_be, .repeat = 1,
	};
	struct sbrig_power_field f;

	assert_int_equal(sbrig_power_field_init(&f, &fmt), 0);
	f.offset = offset;
	return f;
}

static void field_decodes_like_iio_channel_convert(void **state)
{
	struct sbrig_power_field f;

	/* ina2xx-adc: le:u16/16>>0 (the emulator: le:U16/16>>0) */
	f = field(0, 16, 16, 0, false, false, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 400);
	f = field(2, 16, 16, 0, false, true, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0xfe70);
	/* signed 16 of 16 bits: stored as u16 the same */
	f = field(2, 16, 16, 0, true, false, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0xfe70);
	/* big endian */
	f = field(4, 16, 16, 0, false, false, true);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0x3412);
	/* shift and mask: le:u12/16>>4 */
	f = field(4, 16, 12, 4, false, false, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0x123);
	/* sign extension within 16 bits: le:s12/16>>4 of 0xffff */
	f = field(6, 16, 12, 4, true, false, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0xffff);
	f = field(4, 16, 8, 0, true, false, false);	/* 0x34: positive */
	assert_int_equal(sbrig_power_field_get(&f, scan), 0x34);
	f = field(0, 16, 8, 0, true, false, false);	/* 0x90: negative */
	assert_int_equal(sbrig_power_field_get(&f, scan), 0xff90);
	/* "fully defined" formats are taken as they are */
	f = field(4, 16, 8, 0, false, true, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0x1234);
	/* timestamp: le:s64/64>>0, and big endian */
	f = field(8, 64, 64, 0, true, false, false);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0x1122334455667788ULL);
	f = field(8, 64, 64, 0, true, false, true);
	assert_int_equal(sbrig_power_field_get(&f, scan), 0x8877665544332211ULL);
}

static void field_rejects_other_formats(void **state)
{
	struct iio_data_format fmt = { .length = 32, .bits = 32, .repeat = 1 };
	struct sbrig_power_field f;

	assert_int_equal(sbrig_power_field_init(&f, &fmt), -ENOTSUP);
	fmt.length = 16;
	fmt.bits = 17;
	assert_int_equal(sbrig_power_field_init(&f, &fmt), -ENOTSUP);
	fmt.bits = 16;
	fmt.shift = 16;
	assert_int_equal(sbrig_power_field_init(&f, &fmt), -ENOTSUP);
	fmt.shift = 0;
	fmt.repeat = 2;
	assert_int_equal(sbrig_power_field_init(&f, &fmt), -ENOTSUP);
	fmt.repeat = 1;
	assert_int_equal(sbrig_power_field_init(&f, &fmt), 0);
}

static void timing_picks_nearest_ina226_setting(void **state)
{
	unsigned int ct, avg;

	sbrig_power_pick_timing(893, SBRIG_POWER_MAX_RATE_HZ, &ct, &avg);
	assert_int_equal(ct, 140);
	assert_int_equal(avg, 4);
	sbrig_power_pick_timing(114, SBRIG_POWER_MAX_RATE_HZ, &ct, &avg);	/* driver default */
	assert_int_equal((unsigned int)(1e6 / (2.0 * ct * avg) + 0.5), 114);
	/* 1250 is nearer 1506 S/s (2 x 332 us), which the driver cannot
	 * read without losses over a 400 kHz bus: the fastest it can */
	sbrig_power_pick_timing(SBRIG_POWER_MAX_RATE_HZ, SBRIG_POWER_MAX_RATE_HZ,
				&ct, &avg);
	assert_int_equal(ct, 140);
	assert_int_equal(avg, 4);
	sbrig_power_pick_timing(1000000, SBRIG_POWER_MAX_RATE_HZ, &ct, &avg);	/* clamps to that */
	assert_int_equal(ct, 140);
	assert_int_equal(avg, 4);
	sbrig_power_pick_timing(0.01, SBRIG_POWER_MAX_RATE_HZ, &ct, &avg);	/* ... and slowest */
	assert_int_equal(ct, 8244);
	assert_int_equal(avg, 1024);
	/* the ceiling follows the bus: 100 kHz reads 384 S/s at most (the
	 * nearest below: 2 x 588 us, 426 S/s, is too fast; 2 x 332 us
	 * averaging 4: 377 S/s), 1 MHz 2272 (2 x 204 us: 2451 S/s is not) */
	assert_int_equal(sbrig_power_max_rate(0), SBRIG_POWER_MAX_RATE_HZ);
	assert_int_equal(sbrig_power_max_rate(100000), 384);
	assert_int_equal(sbrig_power_max_rate(1000000), 2272);
	sbrig_power_pick_timing(893, sbrig_power_max_rate(100000), &ct, &avg);
	assert_true(1e6 / (2.0 * ct * avg) <= 384);
	sbrig_power_pick_timing(1e6, sbrig_power_max_rate(1000000), &ct, &avg);
	assert_int_equal(ct, 332);
	assert_int_equal(avg, 1);
}

static void clockmap_keeps_minimum_delay(void **state)
{
	struct sbrig_clockmap map = { 0 };

	assert_false(map.valid);
	sbrig_clockmap_update(&map, 5000, 1000);	/* delay + offset 4000 */
	assert_true(map.valid);
	assert_int_equal(map.min_off_ns, 4000);
	sbrig_clockmap_update(&map, 9000, 6000);	/* faster: 3000 */
	assert_int_equal(map.min_off_ns, 3000);
	sbrig_clockmap_update(&map, 20000, 10000);	/* slower: ignored */
	assert_int_equal(map.min_off_ns, 3000);
	/* remote clock ahead of ours: negative offsets work too */
	map.valid = false;
	sbrig_clockmap_update(&map, 1000, 1000000);
	assert_int_equal(map.min_off_ns, 1000 - 1000000);
}

/*
 * A remote clock 20 ppm slow against ours (the offset grows 20 us a
 * second) for five minutes, buffers every 72 ms whose delay is 0.2 to
 * 3 ms (a jittery LAN), with the least delay 0.2 ms now and then: the
 * running minimum of before stays at the start's offset (6 ms early
 * after five minutes); the fit finds the drift within 1 ppm and maps the
 * last buffer within the least delay plus the jitter's spread, never
 * after its arrival.
 */
/*
 * The offset applied to remote stamps: towards the estimate by a quarter
 * period at most, and never so far down that a stamp maps before the one
 * before it. ina2xx-adc on a loaded host stamps a sample read late and
 * the next one 100 us after it (seen over ip: from the real iiod in a TCG
 * guest: a quarter period step down mapped it 180 us before its
 * predecessor).
 */
static void slew_never_maps_a_stamp_before_the_last(void **state)
{
	const int64_t step = 280000;	/* 1120 us / 4 */
	const int64_t ts[] = { 0, 1500000, 1600000, 1620000, 1620000,
			       2540000, 3460000, 4380000 };
	int64_t applied = 5000000, target = 3000000, prev = 0;

	(void)state;
	/* up, and down within reach, unlimited by the interval */
	assert_int_equal(sbrig_power_slew(0, 1000000, step, 0), step);
	assert_int_equal(sbrig_power_slew(0, 100000, step, 0), 100000);
	assert_int_equal(sbrig_power_slew(0, -200000, step, step), -200000);
	assert_int_equal(sbrig_power_slew(0, -1000000, step, step), -step);
	/* down: by the interval when it is shorter than the step */
	assert_int_equal(sbrig_power_slew(0, -1000000, step, 100000), -100000);
	assert_int_equal(sbrig_power_slew(0, -1000000, step, 0), 0);
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		int64_t dt = i ? ts[i] - ts[i - 1] : step;

		applied = sbrig_power_slew(applied, target, step, dt);
		if (i)
			assert_true(ts[i] + applied >= prev);
		prev = ts[i] + applied;
	}
	/* and it gets there */
	for (int i = 0; i < 20; i++)
		applied = sbrig_power_slew(applied, target, step, 920000);
	assert_int_equal(applied, target);
}

static void clockmap_follows_a_drifting_clock(void **state)
{
	struct sbrig_clockmap map = { 0 };
	const int64_t off0 = 123456789, min_delay = 200000;
	const double drift = 20e-6;
	uint32_t rnd = 1;
	int64_t t, true_off = 0, last_a = 0, last_t = 0, got;

	for (t = 0; t <= 300LL * 1000000000; t += 72000000) {
		int64_t delay;

		rnd = rnd * 1103515245u + 12345u;
		delay = min_delay + (int64_t)((rnd >> 8) % 2800000);
		if ((rnd >> 4) % 16 == 0)
			delay = min_delay;
		true_off = off0 + (int64_t)(drift * (double)t);
		last_t = t;
		last_a = t + true_off + delay;
		sbrig_clockmap_update(&map, last_a, last_t);
		if (map.have_drift)	/* never after the arrival */
			assert_true(last_t + sbrig_clockmap_offset(&map, last_t) <=
				    last_a);
	}
	assert_true(map.have_drift);
	assert_true(fabs(map.drift - drift) < 1e-6);
	got = sbrig_clockmap_offset(&map, last_t);
	assert_true(got >= true_off + min_delay - map.uncert_ns - 50000);
	assert_true(got <= true_off + min_delay + 50000);
	assert_true(map.uncert_ns < 1000000);
	/* what the running minimum alone would have mapped: ~6 ms early */
	assert_true(true_off + min_delay - map.min_off_ns > 5500000);
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
		cmocka_unit_test(gap_none_for_the_drivers_jitter),
		cmocka_unit_test(gap_none_on_a_slow_or_fast_chip),
		cmocka_unit_test(gap_finds_one_lost_conversion),
		cmocka_unit_test(gap_counts_missing_samples),
		cmocka_unit_test(gap_needs_a_period),
		cmocka_unit_test(scale_converts_to_integer_units),
		cmocka_unit_test(conv_exact_for_ina226_scales),
		cmocka_unit_test(conv_rounds_like_llround),
		cmocka_unit_test(conv_matches_scale_helper),
		cmocka_unit_test(conv_offset_and_fallback),
		cmocka_unit_test(field_decodes_like_iio_channel_convert),
		cmocka_unit_test(field_rejects_other_formats),
		cmocka_unit_test(timing_picks_nearest_ina226_setting),
		cmocka_unit_test(clockmap_keeps_minimum_delay),
		cmocka_unit_test(clockmap_follows_a_drifting_clock),
		cmocka_unit_test(slew_never_maps_a_stamp_before_the_last),
		cmocka_unit_test(new_rejects_bad_uri),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
