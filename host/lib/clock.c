// SPDX-License-Identifier: GPL-2.0
/*
 * clock.c - the target clock model: target CLOCK_BOOTTIME -> host
 * CLOCK_MONOTONIC.
 *
 * Method.
 *
 * A ping/pong exchange gives (s, r, t): the host wrote PING at s, read the
 * PONG at r, and the target stamped t somewhere in between. So the offset
 * o = host - target at target time t lies in [s - t, r - t]: the estimate
 * is the midpoint (s + r) / 2 - t with half-width (r - s) / 2. Exchanges
 * with a long round trip (the UART was busy, the host was descheduled) are
 * wide and usually asymmetric, so they are filtered:
 *
 *  - the model keeps the last PING_WINDOW exchanges;
 *  - only exchanges whose RTT is within the "low band" are retained: RTT <=
 *    BAND_FACTOR * min RTT in the window + BAND_SLACK_NS. add_ping() reports
 *    an exchange outside the band at the time it arrives as filtered (1).
 *
 * A marker sample (a GPIO edge timestamped by the host kernel, paired with
 * the module event that drove the line) is an offset with a small stated
 * uncertainty u. Before it is retained it must agree with the current
 * model within (model uncertainty + u): a mispaired edge is rejected.
 *
 * Fit: weighted least squares of offset against target time over all
 * retained samples, weight 1 / h^2 where h is the sample's half-width (so
 * marker samples of tens of microseconds dominate pings of milliseconds).
 * The slope is the drift (ppb). With fewer than two samples, or samples
 * spanning less than MIN_SPAN_NS of target time, the drift is not
 * determined and the model is a weighted mean offset (drift 0).
 *
 * Uncertainty of a mapping at target time x: the smallest half-width among
 * retained samples (the data cannot do better), or the largest |residual|
 * of a retained sample if that is larger (the fit is off by at least
 * that), plus DRIFT_BUDGET_PPB times the distance from x to the retained
 * samples' time span (extrapolation error of an imperfect drift).
 *
 * Arithmetic. Inputs come from the target link, that is from outside: any
 * int64_t must be safe here. Every sum and difference of two times goes
 * through sat_add()/sat_sub() (saturating at INT64_MIN/INT64_MAX, never
 * undefined behaviour), differences that feed the fit are taken in double,
 * and every double goes back to an integer through d2i() (clamped, NaN is
 * 0). A mapping that saturated is refused (-ERANGE) rather than returned
 * as a nonsense host time; a ping whose round trip does not fit is refused
 * (-ERANGE) before it reaches the model.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/clock.h>

#include "internal.h"

#define PING_WINDOW		64
#define MARKER_WINDOW		64
#define BAND_FACTOR		1.5
#define BAND_SLACK_NS		50000	/* 50 us */
#define MIN_SPAN_NS		2000000000LL	/* 2 s */
#define DRIFT_BUDGET_PPB	20000	/* 20 ppm extrapolation budget */

/* ---- overflow-free arithmetic ------------------------------------------ */

/* a + b, saturated; *sat set when it saturated (may be NULL) */
static int64_t sat_add(int64_t a, int64_t b, bool *sat)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	if (sat)
		*sat = true;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

static int64_t sat_sub(int64_t a, int64_t b, bool *sat)
{
	int64_t r;

	if (!__builtin_sub_overflow(a, b, &r))
		return r;
	if (sat)
		*sat = true;
	return b < 0 ? INT64_MAX : INT64_MIN;
}

/* |a| saturated (|INT64_MIN| is INT64_MAX) */
static int64_t sat_abs(int64_t a)
{
	return a >= 0 ? a : a == INT64_MIN ? INT64_MAX : -a;
}

/* a double as int64_t: truncated toward 0, clamped, NaN -> 0 */
static int64_t d2i(double d, bool *sat)
{
	if (isnan(d))
		return 0;
	/* 2^63 is exactly representable; INT64_MAX is not */
	if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
		if (sat)
			*sat = true;
		return d > 0 ? INT64_MAX : INT64_MIN;
	}
	return (int64_t)d;
}

struct clk_sample {
	int64_t target_ns;
	int64_t offset_ns;	/* host - target, midpoint */
	int64_t half_ns;	/* half-width (>= 1) */
	int64_t rtt_ns;		/* pings only */
};

struct sbrig_clock {
	struct clk_sample ping[PING_WINDOW];
	unsigned int n_ping, next_ping;
	struct clk_sample marker[MARKER_WINDOW];
	unsigned int n_marker, next_marker;

	/* the fitted model (valid if samples > 0) */
	unsigned int samples;
	int64_t ref_target_ns;
	int64_t offset_ns;	/* at ref_target_ns */
	double slope;		/* d offset / d target */
	int64_t base_uncert_ns;
	int64_t span_lo, span_hi;
	int64_t min_rtt_ns;
};

struct sbrig_clock *sbrig_clock_new(void)
{
	struct sbrig_clock *clk = calloc(1, sizeof(*clk));

	if (!clk) {
		errno = ENOMEM;
		return NULL;
	}
	sbrig_clock_reset(clk);
	return clk;
}

void sbrig_clock_free(struct sbrig_clock *clk)
{
	free(clk);
}

void sbrig_clock_reset(struct sbrig_clock *clk)
{
	memset(clk, 0, sizeof(*clk));
	clk->min_rtt_ns = -1;
}

static int64_t window_min_rtt(const struct sbrig_clock *clk)
{
	int64_t m = -1;
	unsigned int i;

	for (i = 0; i < clk->n_ping; i++)
		if (m < 0 || clk->ping[i].rtt_ns < m)
			m = clk->ping[i].rtt_ns;
	return m;
}

static int64_t band_limit(int64_t min_rtt)
{
	return sat_add(d2i((double)min_rtt * BAND_FACTOR, NULL), BAND_SLACK_NS,
		       NULL);
}

/* Visit every retained sample. */
#define for_each_retained(clk, s, band, i)				\
	for (i = 0; i < (clk)->n_ping + (clk)->n_marker; i++)		\
		if ((s = i < (clk)->n_ping ? &(clk)->ping[i] :		\
			  &(clk)->marker[i - (clk)->n_ping]),		\
		    i >= (clk)->n_ping || s->rtt_ns <= (band))

static void refit(struct sbrig_clock *clk)
{
	const struct clk_sample *s;
	int64_t band, ref, off0, lo = INT64_MAX, hi = INT64_MIN;
	int64_t min_half = INT64_MAX, max_res = 0;
	double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, w, x, y, mx, my, d;
	unsigned int i, n = 0;

	clk->min_rtt_ns = window_min_rtt(clk);
	band = clk->n_ping ? band_limit(clk->min_rtt_ns) : 0;
	ref = 0;
	off0 = 0;
	for_each_retained(clk, s, band, i) {
		if (!n) {
			ref = s->target_ns;
			off0 = s->offset_ns;
		}
		n++;
		if (s->target_ns < lo)
			lo = s->target_ns;
		if (s->target_ns > hi)
			hi = s->target_ns;
	}
	clk->samples = n;
	if (!n)
		return;
	ref = hi;
	for_each_retained(clk, s, band, i) {
		w = 1.0 / ((double)s->half_ns * (double)s->half_ns);
		x = (double)s->target_ns - (double)ref;
		y = (double)s->offset_ns - (double)off0;
		sw += w;
		sx += w * x;
		sy += w * y;
		sxx += w * x * x;
		sxy += w * x * y;
		if (s->half_ns < min_half)
			min_half = s->half_ns;
	}
	mx = sx / sw;
	my = sy / sw;
	d = sxx - sx * mx;
	clk->slope = 0;
	if (n >= 2 && sat_sub(hi, lo, NULL) >= MIN_SPAN_NS && d > 0)
		clk->slope = (sxy - sx * my) / d;
	/* a slope this far from 1 is no clock: hostile or broken samples */
	if (!isfinite(clk->slope) || fabs(clk->slope) > 0.5)
		clk->slope = 0;
	clk->ref_target_ns = ref;
	/* line through the weighted centroid, evaluated at ref (x = 0) */
	clk->offset_ns = sat_add(off0, d2i(my - clk->slope * mx, NULL), NULL);
	for_each_retained(clk, s, band, i) {
		double pred = ((double)clk->offset_ns - (double)s->offset_ns) +
			      clk->slope * ((double)s->target_ns - (double)ref);
		int64_t res = d2i(fabs(pred), NULL);

		if (res > max_res)
			max_res = res;
	}
	clk->base_uncert_ns = max_res > min_half ? max_res : min_half;
	clk->span_lo = lo;
	clk->span_hi = hi;
}

static void push(struct clk_sample *arr, unsigned int cap, unsigned int *n,
		 unsigned int *next, const struct clk_sample *s)
{
	arr[*next] = *s;
	*next = (*next + 1) % cap;
	if (*n < cap)
		(*n)++;
}

int sbrig_clock_add_ping(struct sbrig_clock *clk, int64_t host_send_ns,
			 int64_t host_recv_ns, int64_t target_ns)
{
	struct clk_sample s;
	int64_t min_rtt;

	bool sat = false;

	if (host_recv_ns < host_send_ns)
		return -EINVAL;
	s.rtt_ns = sat_sub(host_recv_ns, host_send_ns, &sat);
	s.target_ns = target_ns;
	s.offset_ns = sat_sub(sat_add(host_send_ns, s.rtt_ns / 2, &sat),
			      target_ns, &sat);
	if (sat)
		return -ERANGE;
	s.half_ns = s.rtt_ns / 2 > 0 ? s.rtt_ns / 2 : 1;
	push(clk->ping, PING_WINDOW, &clk->n_ping, &clk->next_ping, &s);
	refit(clk);
	min_rtt = clk->min_rtt_ns;
	return s.rtt_ns <= band_limit(min_rtt) ? 0 : 1;
}

int sbrig_clock_add_marker(struct sbrig_clock *clk, int64_t host_ns,
			   int64_t target_ns, int64_t uncert_ns)
{
	bool sat = false;
	struct clk_sample s = {
		.target_ns = target_ns,
		.offset_ns = sat_sub(host_ns, target_ns, &sat),
		.half_ns = uncert_ns > 0 ? uncert_ns : 1,
		.rtt_ns = 0,
	};
	int64_t pred, u;

	if (sat)
		return -ERANGE;
	if (sbrig_clock_to_host(clk, target_ns, &pred, &u) == 0) {
		int64_t diff = sat_abs(sat_sub(pred, host_ns, NULL));

		if (diff > sat_add(u, s.half_ns, NULL))
			return -EINVAL;
	}
	push(clk->marker, MARKER_WINDOW, &clk->n_marker, &clk->next_marker, &s);
	refit(clk);
	return 0;
}

int sbrig_clock_to_host(const struct sbrig_clock *clk, int64_t target_ns,
			int64_t *host_ns, int64_t *uncert_ns)
{
	int64_t dist = 0, h;
	bool sat = false;

	if (!clk->samples)
		return -EAGAIN;
	h = sat_add(target_ns, clk->offset_ns, &sat);
	h = sat_add(h, d2i(clk->slope * ((double)target_ns -
					 (double)clk->ref_target_ns), &sat),
		    &sat);
	if (sat)
		return -ERANGE;	/* no host time can be that */
	*host_ns = h;
	if (target_ns > clk->span_hi)
		dist = sat_sub(target_ns, clk->span_hi, NULL);
	else if (target_ns < clk->span_lo)
		dist = sat_sub(clk->span_lo, target_ns, NULL);
	if (uncert_ns)
		*uncert_ns = sat_add(clk->base_uncert_ns,
				     d2i((double)dist * DRIFT_BUDGET_PPB / 1e9,
					 NULL), NULL);
	return 0;
}

void sbrig_clock_get_state(const struct sbrig_clock *clk,
			   struct sbrig_clock_state *st)
{
	memset(st, 0, sizeof(*st));
	st->samples = clk->samples;
	st->min_rtt_ns = clk->min_rtt_ns;
	if (!clk->samples)
		return;
	st->offset_ns = clk->offset_ns;
	st->ref_target_ns = clk->ref_target_ns;
	st->drift_ppb = d2i(clk->slope * 1e9, NULL);
	st->uncert_ns = clk->base_uncert_ns;
}
