// SPDX-License-Identifier: GPL-2.0
/*
 * clockfit.c - the offline clock model: clock.tsv -> segments.
 *
 * Online, the link's model (lib/clock.c) fits the last 64 exchanges and is
 * restarted whenever the target slept; offline the whole capture is known,
 * so each stretch between two jumps of the offset is fitted as a whole.
 *
 * 1. Every row is an offset sample: a ping (s, r, t) gives host - target =
 *    (s + r) / 2 - t with half-width h = (r - s) / 2; a marker pair (s = r)
 *    has h = MARKER_HALF_NS.
 * 2. Pings whose round trip is above BAND_FACTOR x the lowest round trip
 *    among their BAND_WINDOW neighbours + BAND_SLACK_NS are dropped (a
 *    busy UART, a descheduled host, a ping answered only after a sleep:
 *    wide and asymmetric). The band is generous: the weights (1 / h^2)
 *    already make a wide exchange count little, the filter only keeps the
 *    outliers (tens of ms, seconds) out of the fit and the jump test.
 * 3. Segments: a retained sample starts a new segment when its offset is
 *    further from the previous one's than max(JUMP_MIN_NS, 3 x the larger
 *    half-width) + DRIFT_BUDGET of the time between them: a target reboot
 *    (CLOCK_BOOTTIME from 0) or the error in the sleep time a resume
 *    injected into CLOCK_BOOTTIME.
 * 4. Each segment: weighted least squares of offset against target time
 *    (weight 1 / h^2); below two samples or MIN_SPAN_NS of target time, the
 *    weighted mean offset and no drift.
 *
 * A mapping's uncertainty is the larger of the segment's smallest
 * half-width and its largest residual, plus DRIFT_BUDGET of the distance
 * outside the segment's target-time span.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis-internal.h"

#define MARKER_HALF_NS	100000		/* 100 us: the GPIO path's spread */
#define BAND_FACTOR	3
#define BAND_WINDOW	32		/* neighbours each side */
#define BAND_SLACK_NS	1000000		/* 1 ms */
#define JUMP_MIN_NS	1000000		/* 1 ms */
#define DRIFT_BUDGET	20e-6		/* 20 ppm */
#define MIN_SPAN_NS	2000000000LL

struct sample {
	int64_t host;		/* midpoint */
	int64_t t;		/* target */
	int64_t rtt;		/* 0 for a marker pair */
	double off;		/* host - target */
	int64_t half;
	bool keep;
};

int an_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	*p = q;
	*cap = n;
	return 0;
}

static void band_filter(struct sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t lo = INT64_MAX;
		size_t a = i > BAND_WINDOW ? i - BAND_WINDOW : 0;
		size_t b = i + BAND_WINDOW < n ? i + BAND_WINDOW : n - 1;

		if (!s[i].rtt)		/* a marker pair */
			continue;
		for (size_t j = a; j <= b; j++)
			if (s[j].rtt && s[j].rtt < lo)
				lo = s[j].rtt;
		s[i].keep = s[i].rtt <= BAND_FACTOR * (double)lo + BAND_SLACK_NS;
	}
}

static void fit(struct an_segment *g, const struct sample *s, size_t n)
{
	double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
	int64_t t0 = -1;

	g->n = 0;
	g->min_half_ns = INT64_MAX;
	g->max_resid_ns = 0;
	for (size_t i = 0; i < n; i++) {
		double w, x;

		if (!s[i].keep)
			continue;
		if (t0 < 0)
			t0 = s[i].t;
		w = 1.0 / ((double)s[i].half * (double)s[i].half);
		x = (double)(s[i].t - t0);
		sw += w;
		sx += w * x;
		sy += w * s[i].off;
		sxx += w * x * x;
		sxy += w * x * s[i].off;
		if (s[i].half < g->min_half_ns)
			g->min_half_ns = s[i].half;
		g->n++;
	}
	g->t_ref = t0;
	g->drift = 0;
	g->offset_ns = sw > 0 ? sy / sw : 0;
	if (g->n >= 2 && g->t_last - g->t_first >= MIN_SPAN_NS) {
		double den = sw * sxx - sx * sx;

		if (den > 0) {
			g->drift = (sw * sxy - sx * sy) / den;
			g->offset_ns = (sy - g->drift * sx) / sw;
		}
	}
	for (size_t i = 0; i < n; i++) {
		double pred, r;

		if (!s[i].keep)
			continue;
		pred = g->offset_ns + g->drift * (double)(s[i].t - t0);
		r = fabs(s[i].off - pred);
		if (r > (double)g->max_resid_ns)
			g->max_resid_ns = (int64_t)r;
	}
}

static int add_segment(struct an_clock *c, const struct sample *s, size_t n)
{
	struct an_segment *g;
	size_t first = n, last = 0;
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (!s[i].keep)
			continue;
		if (first == n)
			first = i;
		last = i;
	}
	if (first == n)
		return 0;
	ret = an_grow((void **)&c->seg, &c->cap, c->nseg + 1, sizeof(*c->seg));
	if (ret)
		return ret;
	g = &c->seg[c->nseg++];
	memset(g, 0, sizeof(*g));
	g->host_first = s[first].host;
	g->host_last = s[last].host;
	g->t_first = s[first].t;
	g->t_last = s[last].t;
	fit(g, s + first, last + 1 - first);
	return 0;
}

/**
 * an_clock_fit() - fit the segments of a capture's clock.tsv
 * @c: out (zeroed storage)
 * @cr: the capture
 *
 * Return: 0, or -errno with sbrig_errmsg() naming clock.tsv's line.
 */
int an_clock_fit(struct an_clock *c, struct sbrig_capread *cr)
{
	struct sbrig_capture_clock_row row;
	struct sample *s = NULL;
	size_t n = 0, cap = 0, from = 0, prev = SIZE_MAX;
	int ret;

	memset(c, 0, sizeof(*c));
	while ((ret = sbrig_capread_next_clock(cr, &row)) == 1) {
		int64_t rtt = row.host_recv_ns - row.host_send_ns;

		if (rtt < 0)
			continue;	/* not a possible exchange */
		ret = an_grow((void **)&s, &cap, n + 1, sizeof(*s));
		if (ret)
			goto out;
		s[n].host = row.host_send_ns + rtt / 2;
		s[n].t = row.target_ns;
		s[n].rtt = rtt;
		s[n].half = rtt ? (rtt + 1) / 2 : MARKER_HALF_NS;
		s[n].off = (double)s[n].host - (double)s[n].t;
		s[n].keep = true;
		n++;
	}
	if (ret < 0)
		goto out;
	band_filter(s, n);
	for (size_t i = 0; i < n; i++) {
		double lim;

		if (!s[i].keep)
			continue;
		if (prev != SIZE_MAX) {
			int64_t h = s[i].half > s[prev].half ? s[i].half :
				s[prev].half;

			lim = (double)(3 * h > JUMP_MIN_NS ? 3 * h : JUMP_MIN_NS) +
				DRIFT_BUDGET * fabs((double)(s[i].host -
							     s[prev].host));
			if (fabs(s[i].off - s[prev].off) > lim) {
				ret = add_segment(c, s + from, i - from);
				if (ret)
					goto out;
				from = i;
			}
		}
		prev = i;
	}
	ret = add_segment(c, s + from, n - from);
	for (size_t k = 0; k < c->nseg && !ret; k++)
		sbrig_log(SBRIG_LOG_DEBUG, "clock segment %zu: host %" PRId64
			  "..%" PRId64 ", %u exchange(s), offset %.0f ns, drift "
			  "%.1f ppm, +/- %" PRId64 " ns", k, c->seg[k].host_first,
			  c->seg[k].host_last, c->seg[k].n, c->seg[k].offset_ns,
			  c->seg[k].drift * 1e6,
			  c->seg[k].min_half_ns > c->seg[k].max_resid_ns ?
			  c->seg[k].min_half_ns : c->seg[k].max_resid_ns);
out:
	free(s);
	if (ret < 0)
		an_clock_free(c);
	return ret < 0 ? ret : 0;
}

int an_clock_segment_at(const struct an_clock *c, int64_t host_ns)
{
	int best = -1;
	int64_t bd = INT64_MAX;

	for (size_t k = 0; k < c->nseg; k++) {
		const struct an_segment *g = &c->seg[k];
		int64_t d = host_ns < g->host_first ? g->host_first - host_ns :
			host_ns > g->host_last ? host_ns - g->host_last : 0;

		if (d < bd) {
			bd = d;
			best = (int)k;
		}
	}
	return best;
}

int an_clock_segment_after(const struct an_clock *c, int64_t host_ns)
{
	for (size_t k = 0; k < c->nseg; k++)
		if (c->seg[k].host_last > host_ns)
			return (int)k;
	return -1;
}

void an_clock_map(const struct an_clock *c, int k, int64_t target_ns,
		  int64_t *host_ns, int64_t *uncert_ns)
{
	const struct an_segment *g = &c->seg[k];
	double h = (double)target_ns + g->offset_ns +
		g->drift * (double)(target_ns - g->t_ref);
	int64_t out = target_ns < g->t_first ? g->t_first - target_ns :
		target_ns > g->t_last ? target_ns - g->t_last : 0;
	int64_t u = g->min_half_ns > g->max_resid_ns ? g->min_half_ns :
		g->max_resid_ns;

	*host_ns = h >= 9.2e18 ? INT64_MAX : h <= -9.2e18 ? INT64_MIN :
		(int64_t)llround(h);
	*uncert_ns = u + (int64_t)(DRIFT_BUDGET * (double)out);
}

void an_clock_free(struct an_clock *c)
{
	free(c->seg);
	c->seg = NULL;
	c->nseg = c->cap = 0;
}
