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

/**
 * sbrig_power_gap() - is there a gap between two sample times?
 * @prev_t_ns: time of the previous sample
 * @t_ns: time of this sample
 * @period_ns: nominal sampling period (> 0)
 * @missing: out: samples missing in between (set only on a gap; >= 1)
 *
 * A sample more than 1.5 nominal periods after the previous one closes a
 * gap of round(dt / period) - 1 samples, at least 1. Pure; any context.
 *
 * Return: true on a gap.
 */
bool sbrig_power_gap(int64_t prev_t_ns, int64_t t_ns, int64_t period_ns,
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
 * @ct_us: out: conversion time for both bus and shunt (us)
 * @avg: out: averaging count
 *
 * The INA226 converts bus and shunt alternately: rate = 1e6 / (2 * ct *
 * avg). Chooses the pair whose rate is nearest @rate_hz (log distance).
 */
void sbrig_power_pick_timing(double rate_hz, unsigned int *ct_us,
			     unsigned int *avg);

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

#endif /* SBRIG_POWER_INTERNAL_H */
