/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-base.h - what every step of the analysis stands on, private to
 * host/analysis/: growing an array, half-open spans of host time and their
 * union, saturating time arithmetic, a sample's power (an-base.c).
 *
 * All times are host CLOCK_MONOTONIC ns. Spans are half-open [start, end).
 */
#ifndef SBRIG_AN_BASE_H
#define SBRIG_AN_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/records.h>

#define AN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/**
 * an_sample_power_uW() - the power a sample stands for, in µW
 * @s: the sample
 *
 * |current| x bus voltage when the sample has a bus voltage, else its
 * power_uW. An INA226 computes its power register from its already
 * quantised current and bus registers, in steps of 25 current LSB (at
 * 40 mOhm 1.5625 mW, a tenth of a 3 mA baseline at 5 V); the product of
 * the two registers is 25 times finer. The magnitude, as the chip's power
 * register (report-format.md, "Integration").
 */
static inline double an_sample_power_uW(const struct sbrig_sample *s)
{
	double i = s->current_uA < 0 ? -(double)s->current_uA :
				       (double)s->current_uA;

	if (s->bus_uV > 0)
		return i * (double)s->bus_uV * 1e-6;
	return (double)s->power_uW;
}

/* grow *@p (of *@cap elements of @size) to hold @need; 0 or -ENOMEM */
int an_grow(void **p, size_t *cap, size_t need, size_t size);

/** struct an_span - a half-open interval of host time */
struct an_span {
	int64_t start, end;
};

/* qsort() order of spans: by start, then end (timeline.c) */
int an_cmp_span(const void *a, const void *b);
/* |union of @v|: sorted in place and merged into @v, *@n shrinks (timeline.c) */
int64_t an_merge_spans(struct an_span *v, size_t *n);

/*
 * Saturating time arithmetic: times, uncertainties and durations come from
 * the capture (whatever a hostile file holds), so a sum or difference of
 * two of them must not overflow; it sticks at INT64_MIN / INT64_MAX.
 */
static inline int64_t an_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t an_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* |@a - @b|, saturated */
static inline int64_t an_sat_dist(int64_t a, int64_t b)
{
	return a > b ? an_sat_sub(a, b) : an_sat_sub(b, a);
}

/*
 * The latest sample time the analysis takes (2^62 ns, 146 years of
 * CLOCK_MONOTONIC): any two sample times then differ, and add up, without
 * overflow. A sample outside [0, AN_TIME_MAX] is refused (integrate.c).
 */
#define AN_TIME_MAX	((int64_t)1 << 62)

/* @v (ns) as an int64_t, saturated; NaN gives 0 */
static inline int64_t an_sat_ns(double v)
{
	return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN :
		v == v ? (int64_t)v : 0;
}


/* "Still open": the end of what lasts to the capture's end, until known. */
#define AN_OPEN_END (INT64_MAX / 4)

#endif /* SBRIG_AN_BASE_H */
