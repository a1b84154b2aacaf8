/* SPDX-License-Identifier: GPL-2.0 */
/*
 * power-internal.h - the pure parts of power.c (gap detection, unit
 * conversion, scan demultiplexing, INA226 timing, remote clock mapping),
 * exported to the unit tests. Not installed.
 */
#ifndef SBRIG_POWER_INTERNAL_H
#define SBRIG_POWER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <iio.h>

/*
 * Gaps on a jittered conversion grid. ina2xx-adc's kthread polls the
 * INA226's conversion-ready flag, stamps the sample when the flag is
 * seen, reads the four registers and sleeps usleep_range(d, 1.5 d) until
 * shortly before the next conversion. Each sample is a new conversion
 * (reading the flag clears it), and its stamp lies after that conversion
 * ended and before the next one ends (plus the few microseconds left of
 * the flag's read): anywhere in one period. Intervals between stamps thus
 * range from near 0 to near 2 periods without a conversion lost, and a
 * lost one can be anywhere from 1 to 3 periods: the interval alone cannot
 * tell (the old 1.5-period rule saw spurious gaps under load).
 *
 * So the rule judges each stamp against the conversion grid instead: the
 * anchor is an upper bound on the time of the last sample's conversion,
 * the lower envelope of the stamps carried forward one period per
 * conversion (each stamp is an upper bound on its own conversion; the
 * earliest ones, when the thread was waiting on the flag, lie on the
 * grid). The period carried forward is an upper bound too: the nominal
 * one plus the chip's oscillator tolerance (SBRIG_POWER_PERIOD_TOL) at
 * first, then the elapsed time over the conversions counted, plus one
 * period, which converges on the chip's real period from above. A stamp
 * closes a gap only when no sequence of conversions without a loss can
 * reach it: more than two periods plus a readout margin (a quarter
 * period: the flag's read, a preemption before the stamp) after the
 * anchor. No jitter within the driver's pattern makes a gap; a loss whose
 * stamp lands late enough in its period is found at once, one whose stamp
 * lands within the margin of the grid is found at the next stamp that
 * does (the count stays right, the place moves by a sample). The
 * conversions counted for the period estimate are the fewest the stamps
 * allow, so it stays an upper bound. On the emulator's simulated driver
 * (20000 samples at 893 S/s), with wake-ups up to 0.2 / 0.3 / 0.5 ms late
 * it counts 198 of 200, 1782 of 1902 and 4927 of 6710 lost conversions,
 * never more than were lost, and nothing without losses.
 */

/* the INA226's conversion times are +10 % at most (datasheet) */
#define SBRIG_POWER_PERIOD_TOL_PCT	10

/**
 * struct sbrig_power_grid - the conversion grid a capture's stamps lie on
 * @period_ns: nominal sampling period (> 0; else no gap is ever found)
 * @anchor_ns: upper bound on the last sample's conversion time
 * @first_ns: the first stamp
 * @conversions: conversions from the first stamp to the anchor's
 * @valid: a stamp has been seen
 *
 * Set up with sbrig_power_grid_init(), fed every stamp in order through
 * sbrig_power_gap(). Owned by the caller; one thread at a time.
 */
struct sbrig_power_grid {
	int64_t period_ns;
	int64_t anchor_ns;
	int64_t first_ns;
	uint64_t conversions;
	bool valid;
};

/**
 * sbrig_power_grid_init() - start a grid (no stamp seen)
 * @grid: out
 * @period_ns: the nominal sampling period
 */
void sbrig_power_grid_init(struct sbrig_power_grid *grid, int64_t period_ns);

/**
 * sbrig_power_gap() - does this stamp close a gap?
 * @grid: the grid, updated with @t_ns
 * @t_ns: the next sample's stamp (the sensor's raw timestamp)
 * @missing: out: conversions known to be missing before it (set only on a
 *	gap; >= 1): the whole periods from the anchor to @t_ns, less the
 *	sample itself
 *
 * See the block comment above for the rule. A stamp earlier than the
 * anchor (time going backwards) is taken as a new anchor, never a gap.
 * Pure apart from @grid; any context.
 *
 * Return: true on a gap.
 */
bool sbrig_power_gap(struct sbrig_power_grid *grid, int64_t t_ns,
		     uint64_t *missing);

/**
 * sbrig_power_scale() - convert a raw reading to an integer unit
 * @raw: raw value from the channel
 * @offset: the channel's offset attribute (0 if none)
 * @scale: the channel's scale attribute (IIO base unit: mV, mA, mW)
 * @factor: 1000 for uV/uA/uW, 1e6 for nV
 *
 * Return: llround((raw + offset) * scale * factor).
 */
int64_t sbrig_power_scale(int64_t raw, double offset, double scale,
			  double factor);

/**
 * struct sbrig_power_conv - raw reading -> integer unit, precomputed
 * @exact: use @mul/@div/@offset (else @scale_d/@offset_d/@factor_d)
 * @mul: output units per LSB is @mul / @div (reduced fraction)
 * @div: see @mul (> 0)
 * @offset: the channel's offset attribute (an integer, in LSB)
 * @scale_d: fallback: the scale attribute as a double
 * @offset_d: fallback: the offset attribute as a double
 * @factor_d: fallback: the unit factor
 *
 * IIO prints scales and offsets as decimals with at most 9 fractional
 * digits (IIO_VAL_INT_PLUS_NANO, IIO_VAL_FRACTIONAL, ...): such a value
 * times a power-of-ten unit factor is an exact fraction, so the capture
 * path converts with one integer multiply (and a rounding division when
 * the result per LSB is not whole, e.g. current with a 3 mOhm shunt).
 * Anything else (a fractional offset, a huge scale) falls back to
 * sbrig_power_scale().
 */
struct sbrig_power_conv {
	bool exact;
	int64_t mul;
	int64_t div;
	int64_t offset;
	double scale_d;
	double offset_d;
	double factor_d;
};

/* |raw + offset| the exact path takes (2^21; checked at init) */
#define SBRIG_POWER_CONV_MAX_RAW	(INT64_C(1) << 20)

/**
 * sbrig_power_conv_init() - prepare a conversion from attribute strings
 * @cv: out
 * @scale: the scale attribute's text (IIO base unit: mV, mA, mW), or
 *	NULL for 1
 * @offset: the offset attribute's text, or NULL for 0
 * @factor: 1000 for uV/uA/uW, 1000000 for nV
 *
 * Pure; any context. Return: 0, or -EINVAL if a string is no number.
 */
int sbrig_power_conv_init(struct sbrig_power_conv *cv, const char *scale,
			  const char *offset, unsigned int factor);

/**
 * sbrig_power_conv() - convert one raw reading
 * @cv: from sbrig_power_conv_init()
 * @raw: the raw value
 *
 * Return: (raw + offset) * scale * factor rounded to the nearest integer,
 * halves away from zero (as llround()); exact on the integer path.
 */
static inline int64_t sbrig_power_conv(const struct sbrig_power_conv *cv,
				       int64_t raw)
{
	int64_t x, p;

	if (!cv->exact || raw > SBRIG_POWER_CONV_MAX_RAW ||
	    raw < -SBRIG_POWER_CONV_MAX_RAW)
		return sbrig_power_scale(raw, cv->offset_d, cv->scale_d,
					 cv->factor_d);
	x = raw + cv->offset;
	p = x * cv->mul;
	if (cv->div == 1)
		return p;
	if (p >= 0)
		return (2 * p + cv->div) / (2 * cv->div);
	return -((-2 * p + cv->div) / (2 * cv->div));
}

/**
 * struct sbrig_power_field - one channel's place and format in a scan
 * @offset: byte offset of the channel in a scan (set per buffer)
 * @length: storage bits: 16 or 64
 * @bits: valid bits
 * @shift: right shift
 * @swap: stored in the other byte order than the host's
 * @sign_extend: sign-extend from @bits (else mask to @bits)
 * @fix_bits: @bits < @length and the format is not "fully defined"
 *
 * The same decoding as libiio 0.24's iio_channel_convert() for one
 * 16- or 64-bit element, without a library call per value.
 */
struct sbrig_power_field {
	size_t offset;
	unsigned int length;
	unsigned int bits;
	unsigned int shift;
	bool swap;
	bool sign_extend;
	bool fix_bits;
};

/**
 * sbrig_power_field_init() - take a channel's data format
 * @f: out (@f->offset is set to 0)
 * @fmt: the format libiio reports
 *
 * Return: 0, or -ENOTSUP for anything but one 16- or 64-bit element
 * with 1 <= bits <= length and shift < length.
 */
int sbrig_power_field_init(struct sbrig_power_field *f,
			   const struct iio_data_format *fmt);

/**
 * sbrig_power_field_get() - decode a channel's value from a scan
 * @f: the field
 * @scan: start of the scan (one sample of all enabled channels)
 *
 * Return: what iio_channel_convert() would store in a uint16_t or
 * uint64_t for this channel.
 */
static inline uint64_t sbrig_power_field_get(const struct sbrig_power_field *f,
					     const void *scan)
{
	const unsigned char *p = (const unsigned char *)scan + f->offset;
	uint64_t v, m;

	if (f->length == 16) {
		uint16_t x;

		memcpy(&x, p, sizeof(x));
		v = f->swap ? __builtin_bswap16(x) : x;
	} else {
		uint64_t x;

		memcpy(&x, p, sizeof(x));
		v = f->swap ? __builtin_bswap64(x) : x;
	}
	v >>= f->shift;
	if (f->fix_bits) {
		m = (UINT64_C(1) << f->bits) - 1;
		v &= m;
		if (f->sign_extend && (v >> (f->bits - 1)))
			v |= ~m;
		if (f->length == 16)
			v &= 0xffff;
	}
	return v;
}

/**
 * sbrig_power_pick_timing() - INA226 setting nearest to a sampling rate
 * @rate_hz: wanted rate (> 0)
 * @max_hz: the fastest rate allowed (sbrig_power_max_rate())
 * @ct_us: out: conversion time for both bus and shunt (us)
 * @avg: out: averaging count
 *
 * The INA226 converts bus and shunt alternately: rate = 1e6 / (2 * ct *
 * avg). Chooses, among the pairs not faster than @max_hz (the slowest
 * pair if none is), the one whose rate is nearest @rate_hz (log
 * distance).
 */
void sbrig_power_pick_timing(double rate_hz, double max_hz,
			     unsigned int *ct_us, unsigned int *avg);

/* the remote clock's windows: their length and how many are fitted */
#define SBRIG_CLOCKMAP_WIN_NS	(10LL * 1000000000)
#define SBRIG_CLOCKMAP_WINDOWS	30
/* a fitted drift beyond this (a crystal is within 100 ppm) is not used */
#define SBRIG_CLOCKMAP_MAX_DRIFT 0.0005

/**
 * struct sbrig_clockmap_point - one buffer's arrival: remote time and
 *	local - remote (offset plus that buffer's delay)
 */
struct sbrig_clockmap_point {
	int64_t t_ns;
	int64_t off_ns;
};

/**
 * struct sbrig_clockmap - remote sample clock -> local CLOCK_MONOTONIC
 * @valid: at least one buffer seen
 * @min_off_ns: the smallest local - remote seen (offset + least delay)
 * @win: the closed windows' least-delay points, a ring of @nwin from @head
 * @nwin: closed windows kept
 * @head: the oldest one
 * @last: the newest point
 * @cur: the least-delay point of the window under way
 * @cur_start_ns: remote time its window began
 * @have_drift: @line_* and @drift are fitted (two windows closed)
 * @line_t_ns: the fitted line's reference time (remote)
 * @line_off_ns: its offset there, moved down to the lowest point
 * @drift: its slope (d offset / d remote time: ppb = 1e9 x)
 * @uncert_ns: the spread of the windows' points about the line (what the
 *	delay's jitter lets us know of the offset; the least delay itself is
 *	not measurable from here)
 *
 * See the comment in power.c on how (and how well) this works.
 */
struct sbrig_clockmap {
	bool valid;
	int64_t min_off_ns;
	struct sbrig_clockmap_point win[SBRIG_CLOCKMAP_WINDOWS];
	unsigned int nwin, head;
	struct sbrig_clockmap_point last;
	struct sbrig_clockmap_point cur;
	int64_t cur_start_ns;
	bool have_drift;
	int64_t line_t_ns;
	int64_t line_off_ns;
	double drift;
	int64_t uncert_ns;
};

/**
 * sbrig_clockmap_update() - take one buffer's arrival into account
 * @map: the mapping
 * @arrival_ns: local CLOCK_MONOTONIC when the buffer arrived
 * @last_ts_ns: remote timestamp of its last sample
 *
 * Keeps the least-delay point of each SBRIG_CLOCKMAP_WIN_NS window of
 * remote time and, once two windows have closed, fits a line through
 * the last SBRIG_CLOCKMAP_WINDOWS of them (least squares), moved down so
 * that no point lies below it: the remote clock's drift, never a mapped
 * time after its arrival.
 */
void sbrig_clockmap_update(struct sbrig_clockmap *map, int64_t arrival_ns,
			   int64_t last_ts_ns);

/**
 * sbrig_clockmap_offset() - local - remote to apply at remote time @ts_ns
 * @map: the mapping (valid)
 * @ts_ns: a remote timestamp (at or after the points seen)
 *
 * Return: the least local - remote seen until a drift is fitted; then the
 * fitted line at @ts_ns, no later than the window under way allows.
 */
int64_t sbrig_clockmap_offset(const struct sbrig_clockmap *map,
			      int64_t ts_ns);

/**
 * sbrig_power_slew() - the offset to apply to the next remote stamp
 * @applied: the offset applied to the previous stamp
 * @target: the estimate it moves towards
 * @max_step: at most this far per sample (a quarter period)
 * @max_down: at most this far down: the remote interval from the previous
 *	stamp (0 when it is not after it), so that the mapped stamp is never
 *	before the previous one; a driver that catches up after a late
 *	wake-up stamps samples far less than a period apart
 *
 * Return: the offset to apply: @target when within reach, else @applied
 * moved towards it as far as the limits let it.
 */
static inline int64_t sbrig_power_slew(int64_t applied, int64_t target,
				       int64_t max_step, int64_t max_down)
{
	int64_t d = target - applied;
	int64_t down = max_down < max_step ? max_down : max_step;

	if (d > max_step)
		return applied + max_step;
	if (d < -down)
		return applied - (down > 0 ? down : 0);
	return target;
}

#endif /* SBRIG_POWER_INTERNAL_H */
