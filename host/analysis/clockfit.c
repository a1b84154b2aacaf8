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
 *    Only the neighbours on a ping's own line count (no jump, step 3,
 *    between them): the exchanges after a resume's step are judged among
 *    themselves.
 * 3. Segments: a retained sample starts a new segment when its offset is
 *    further from the previous one's than max(JUMP_MIN_NS, 3 x the larger
 *    half-width) + DRIFT_BUDGET of the time between them: a target reboot
 *    (CLOCK_BOOTTIME from 0) or the error in the sleep time a resume
 *    injected into CLOCK_BOOTTIME.
 *    A jump is taken when the next retained sample confirms it (agrees
 *    with the new offset within the same limit). A single sample off the
 *    line, the next one back on it, is a spike, left out of the fit
 *    (c->spikes), as chrony does not step its clock on one exchange. A
 *    sample with no next one, or whose next one jumps again, is the only
 *    word on its stretch (a target that slept again after one exchange):
 *    it is taken.
 * 4. Each segment: weighted least squares of offset against target time
 *    (weight 1 / h^2); below two samples or MIN_SPAN_NS of target time, the
 *    weighted mean offset and no drift. As chrony's regression does, the
 *    fit survives outliers: samples whose residual is above REJECT_K
 *    half-widths are left out and the segment is fitted again (at most
 *    REJECT_ROUNDS times; every round judges every sample afresh, so one
 *    wrongly dropped by a fit an outlier skewed comes back), never down
 *    to no sample (c->outliers). The drift is clamped to +/- MAX_DRIFT
 *    (a crystal is off by tens of ppm; more is a fit misled by a few
 *    samples), the offset then fitted again with the drift held.
 * 5. Marker pairs found offline (markers.c) are merged into the pings by
 *    host time and steps 3 and 4 run again: an_clock_add_markers().
 *
 * A mapping's uncertainty is the larger of the segment's smallest
 * half-width and its largest residual, plus DRIFT_BUDGET of the distance
 * outside the segment's target-time span. In a segment with two marker
 * pairs or more, the markers (a hundred times the weight of a UART ping)
 * set the fit: its uncertainty is the larger of MARKER_HALF_NS and their
 * largest residual, plus DRIFT_BUDGET of the distance outside their span.
 *
 * an_mapper: which segment maps an event, by timeline.c's epochs (the
 * enters of the event log), so that the marker pairing and the timeline
 * map every event the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/analysis.h>

#include "an-base.h"
#include "an-clock.h"

#define MARKER_HALF_NS	AN_MARKER_HALF_NS	/* 100 us */
#define BAND_FACTOR	3
#define BAND_WINDOW	32		/* neighbours each side */
#define BAND_SLACK_NS	1000000		/* 1 ms */
#define JUMP_MIN_NS	1000000		/* 1 ms */
#define DRIFT_BUDGET	20e-6		/* 20 ppm */
#define MIN_SPAN_NS	2000000000LL
#define REJECT_K	3		/* half-widths */
#define REJECT_ROUNDS	8
#define MAX_DRIFT	200e-6		/* 200 ppm */

struct an_clock_sample {
	int64_t host;		/* midpoint */
	int64_t t;		/* target */
	int64_t rtt;		/* 0 for a marker pair */
	double off;		/* host - target */
	int64_t half;
	bool keep;		/* passed the band filter */
	bool spike;		/* off the line, the next back on it (step 3) */
	bool out;		/* an outlier of its segment's fit (step 4) */
};

/* in a segment (step 3) */
static bool kept(const struct an_clock_sample *s)
{
	return s->keep && !s->spike;
}

/* in its segment's fit (step 4) */
static bool used(const struct an_clock_sample *s)
{
	return kept(s) && !s->out;
}

/* Is @b's offset more than a jump away from @a's (step 3)? */
static bool jumps(const struct an_clock_sample *a,
		  const struct an_clock_sample *b)
{
	int64_t h = a->half > b->half ? a->half : b->half;
	double lim = (h < JUMP_MIN_NS / 3 ? JUMP_MIN_NS : 3.0 * (double)h) +
		DRIFT_BUDGET * fabs((double)b->host - (double)a->host);

	return fabs(b->off - a->off) > lim;
}

/*
 * Step 2. Only neighbours on @i's line count: a resume's step (or a
 * reboot) starts another, and the exchanges after it are judged among
 * themselves, not against a quicker one from before the step that says
 * nothing of them (a short wake's few exchanges would all be dropped).
 */
static void band_filter(struct an_clock_sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t lo = INT64_MAX;
		size_t a = i > BAND_WINDOW ? i - BAND_WINDOW : 0;
		size_t b = i + BAND_WINDOW < n ? i + BAND_WINDOW : n - 1;

		if (!s[i].rtt)		/* a marker pair */
			continue;
		for (size_t j = a; j <= b; j++)
			if (s[j].rtt && s[j].rtt < lo && !jumps(&s[i], &s[j]))
				lo = s[j].rtt;
		s[i].keep = s[i].rtt <= BAND_FACTOR * (double)lo + BAND_SLACK_NS;
	}
}

/* One weighted least-squares fit of @g over the used samples of @s. */
static void fit_once(struct an_segment *g, const struct an_clock_sample *s,
		     size_t n)
{
	double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
	int64_t t0 = -1;

	g->n = 0;
	g->markers = 0;
	g->min_half_ns = INT64_MAX;
	g->max_resid_ns = 0;
	g->max_marker_resid_ns = 0;
	g->drift_clamped = false;
	for (size_t i = 0; i < n; i++) {
		double w, x;

		if (!used(&s[i]))
			continue;
		if (t0 < 0)
			t0 = s[i].t;
		if (!s[i].rtt) {	/* a marker pair */
			if (!g->markers++)
				g->t_marker_first = s[i].t;
			g->t_marker_last = s[i].t;
		}
		w = 1.0 / ((double)s[i].half * (double)s[i].half);
		x = (double)s[i].t - (double)t0;
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
		if (fabs(g->drift) > MAX_DRIFT) {
			g->drift = g->drift > 0 ? MAX_DRIFT : -MAX_DRIFT;
			g->offset_ns = (sy - g->drift * sx) / sw;
			g->drift_clamped = true;
		}
	}
}

/* |residual| of @s against @g's fit, in ns (saturated) */
static double resid(const struct an_segment *g, const struct an_clock_sample *s)
{
	return fabs(s->off - (g->offset_ns +
			      g->drift * ((double)s->t - (double)g->t_ref)));
}

/*
 * Step 4: fit, leave out the samples beyond REJECT_K half-widths, fit
 * again; returns how many samples are left out.
 */
static unsigned int fit(struct an_segment *g, struct an_clock_sample *s,
			size_t n)
{
	unsigned int nout = 0;

	for (size_t i = 0; i < n; i++)
		s[i].out = false;
	fit_once(g, s, n);
	for (int round = 0; round < REJECT_ROUNDS; round++) {
		unsigned int rej = 0, left = 0;
		bool changed = false;

		for (size_t i = 0; i < n; i++) {
			if (!kept(&s[i]))
				continue;
			if (resid(g, &s[i]) > REJECT_K * (double)s[i].half)
				rej++;
			else
				left++;
		}
		if (!left)	/* nothing fits: keep what the fit has */
			break;
		for (size_t i = 0; i < n; i++) {
			bool o;

			if (!kept(&s[i]))
				continue;
			o = resid(g, &s[i]) > REJECT_K * (double)s[i].half;
			changed |= o != s[i].out;
			s[i].out = o;
		}
		nout = rej;
		if (!changed)
			break;
		fit_once(g, s, n);
	}
	for (size_t i = 0; i < n; i++) {
		int64_t r;

		if (!used(&s[i]))
			continue;
		r = an_sat_ns(resid(g, &s[i]));
		if (r > g->max_resid_ns)
			g->max_resid_ns = r;
		if (!s[i].rtt && r > g->max_marker_resid_ns)
			g->max_marker_resid_ns = r;
	}
	return nout;
}

/*
 * A mapping's uncertainty with @g before the distance term, and the target
 * span [*@first, *@last] outside which DRIFT_BUDGET adds (top comment).
 */
static int64_t seg_uncert(const struct an_segment *g, int64_t *first,
			  int64_t *last)
{
	int64_t u;

	if (g->markers >= 2) {
		*first = g->t_marker_first;
		*last = g->t_marker_last;
		u = g->max_marker_resid_ns;
		return u > MARKER_HALF_NS ? u : MARKER_HALF_NS;
	}
	*first = g->t_first;
	*last = g->t_last;
	u = g->min_half_ns;
	return u > g->max_resid_ns ? u : g->max_resid_ns;
}

static int add_segment(struct an_clock *c, size_t from, size_t to)
{
	struct an_clock_sample *s = c->s;
	struct an_segment *g;
	size_t first = to, last = 0;
	int ret;

	for (size_t i = from; i < to; i++) {
		if (!kept(&s[i]))
			continue;
		if (first == to)
			first = i;
		last = i;
	}
	if (first == to)
		return 0;
	ret = an_grow((void **)&c->seg, &c->cap, c->nseg + 1, sizeof(*c->seg));
	if (ret)
		return ret;
	g = &c->seg[c->nseg++];
	memset(g, 0, sizeof(*g));
	g->host_first = s[first].host;
	g->host_last = s[last].host;
	g->host_last_lo = an_sat_sub(s[last].host, s[last].half);
	g->t_first = s[first].t;
	g->t_last = s[last].t;
	g->s_first = first;
	g->s_end = last + 1;
	c->outliers += fit(g, s + first, last + 1 - first);
	return 0;
}

/* The next sample after @i that passed the band filter, or @n. */
static size_t next_kept(const struct an_clock_sample *s, size_t n, size_t i)
{
	while (++i < n && !kept(&s[i]))
		;
	return i;
}

/*
 * The residuals of the used samples, by kind: median and p95 (nearest
 * rank, sbrig_latency_stats()) into @c.
 */
static int residual_stats(struct an_clock *c)
{
	int64_t *v = malloc((c->ns ? c->ns : 1) * sizeof(*v));
	struct sbrig_latency_stats st;

	if (!v)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	for (int marker = 0; marker < 2; marker++) {
		size_t n = 0;

		for (size_t k = 0; k < c->nseg; k++) {
			const struct an_segment *g = &c->seg[k];

			for (size_t i = g->s_first; i < g->s_end; i++)
				if (used(&c->s[i]) &&
				    (c->s[i].rtt == 0) == (marker == 1))
					v[n++] = an_sat_ns(resid(g, &c->s[i]));
		}
		sbrig_latency_stats(v, NULL, n, &st);
		c->resid[marker].n = n;
		c->resid[marker].median_ns = n ? st.median_ns : -1;
		c->resid[marker].p95_ns = n ? st.p95_ns : -1;
	}
	free(v);
	return 0;
}

/* Steps 3 and 4 over the samples of @c (their keep flags set). */
static int segments(struct an_clock *c)
{
	struct an_clock_sample *s = c->s;
	size_t n = c->ns, from = 0, prev = SIZE_MAX;
	int64_t first, last;
	int ret = 0;

	c->nseg = 0;
	c->spikes = c->outliers = 0;
	for (size_t i = 0; i < n; i++)
		s[i].spike = s[i].out = false;
	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (!s[i].keep)
			continue;
		if (prev != SIZE_MAX && jumps(&s[prev], &s[i])) {
			/*
			 * a spike when the next exchange is back on the line
			 * before it; confirmed when the next one agrees; else
			 * (the last exchange, or one between two jumps: a wake
			 * too short for a second one) the only word on its
			 * stretch, taken
			 */
			j = next_kept(s, n, i);
			if (j < n && jumps(&s[i], &s[j]) &&
			    !jumps(&s[prev], &s[j])) {
				s[i].spike = true;
				c->spikes++;
				continue;
			}
			ret = add_segment(c, from, i);
			if (ret)
				return ret;
			from = i;
		}
		prev = i;
	}
	ret = add_segment(c, from, n);
	if (!ret)
		ret = residual_stats(c);
	for (size_t k = 0; k < c->nseg && !ret; k++)
		sbrig_log(SBRIG_LOG_DEBUG, "clock segment %zu: host %" PRId64
			  "..%" PRId64 ", %u exchange(s) (%u marker), offset "
			  "%.0f ns, drift %.1f ppm%s, +/- %" PRId64 " ns", k,
			  c->seg[k].host_first, c->seg[k].host_last,
			  c->seg[k].n, c->seg[k].markers, c->seg[k].offset_ns,
			  c->seg[k].drift * 1e6,
			  c->seg[k].drift_clamped ? " (clamped)" : "",
			  seg_uncert(&c->seg[k], &first, &last));
	return ret;
}

/**
 * an_clock_fit() - fit the segments of a capture's clock.tsv
 * @c: out (zeroed storage)
 * @cr: the capture
 * @marker_rows: take clock.tsv's marker rows (the daemon's online pairs)
 *	too; else skip them (the analysis pairs the edges itself)
 *
 * Return: 0, or -errno with sbrig_errmsg() naming clock.tsv's line.
 */
int an_clock_fit(struct an_clock *c, struct sbrig_capread *cr,
		 bool marker_rows)
{
	struct sbrig_capture_clock_row row;
	struct an_clock_sample *s;
	int ret;

	memset(c, 0, sizeof(*c));
	while ((ret = sbrig_capread_next_clock(cr, &row)) == 1) {
		int64_t rtt = an_sat_sub(row.host_recv_ns, row.host_send_ns);

		/* not a possible exchange; or one no clock could time */
		if (rtt < 0 || rtt == INT64_MAX)
			continue;
		if (!rtt && !marker_rows) {
			c->marker_rows_skipped++;
			continue;
		}
		ret = an_grow((void **)&c->s, &c->scap, c->ns + 1,
			      sizeof(*c->s));
		if (ret)
			goto out;
		s = &c->s[c->ns++];
		s->host = row.host_send_ns + rtt / 2;
		s->t = row.target_ns;
		s->rtt = rtt;
		s->half = rtt ? rtt / 2 + (rtt & 1) : MARKER_HALF_NS;
		s->off = (double)s->host - (double)s->t;
		s->keep = true;
		if (!rtt)
			c->marker_rows++;
	}
	if (ret < 0)
		goto out;
	band_filter(c->s, c->ns);
	ret = segments(c);
out:
	if (ret < 0)
		an_clock_free(c);
	return ret < 0 ? ret : 0;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct sbrig_marker_pair *a = x, *b = y;

	return a->host_ns < b->host_ns ? -1 : a->host_ns > b->host_ns;
}

/**
 * an_clock_add_markers() - add marker pairs and fit the segments again
 * @c: a fitted clock
 * @p: the pairs (edge host time, target time of its event); sorted here
 * @n: their number
 *
 * The pairs join the exchanges in host-time order (clock.tsv's rows are
 * in that order already) with the half-width MARKER_HALF_NS.
 *
 * Return: 0 or -ENOMEM.
 */
int an_clock_add_markers(struct an_clock *c, struct sbrig_marker_pair *p,
			 size_t n)
{
	struct an_clock_sample *m;
	size_t i = 0, j = 0, k = 0, total = c->ns + n;

	if (!n)
		return 0;
	m = calloc(total, sizeof(*m));
	if (!m)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	qsort(p, n, sizeof(*p), cmp_pair);
	while (k < total) {
		if (j < n && (i == c->ns || p[j].host_ns < c->s[i].host)) {
			m[k].host = p[j].host_ns;
			m[k].t = p[j].target_ns;
			m[k].rtt = 0;
			m[k].half = MARKER_HALF_NS;
			m[k].off = (double)m[k].host - (double)m[k].t;
			m[k].keep = true;
			j++;
		} else {
			m[k] = c->s[i++];
		}
		k++;
	}
	free(c->s);
	c->s = m;
	c->ns = c->scap = total;
	c->marker_pairs += n;
	return segments(c);
}

int an_clock_segment_at(const struct an_clock *c, int64_t host_ns)
{
	int best = -1;
	int64_t bd = INT64_MAX;

	for (size_t k = 0; k < c->nseg; k++) {
		const struct an_segment *g = &c->seg[k];
		int64_t d = host_ns < g->host_first ?
			an_sat_sub(g->host_first, host_ns) :
			host_ns > g->host_last ?
			an_sat_sub(host_ns, g->host_last) : 0;

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
		g->drift * ((double)target_ns - (double)g->t_ref);
	int64_t first, last, u = seg_uncert(g, &first, &last);
	int64_t out = target_ns < first ? an_sat_sub(first, target_ns) :
		target_ns > last ? an_sat_sub(target_ns, last) : 0;

	*host_ns = an_sat_ns(nearbyint(h));
	*uncert_ns = an_sat_add(u, an_sat_ns(DRIFT_BUDGET * (double)out));
}

/* ---- mapping events by their epochs ----------------------------------- */

/* What place.c needs of @ev's epoch (the one after mp->n enters). */
static int epoch_note(struct an_mapper *mp, const struct sbrig_event *ev,
		      unsigned int boot)
{
	struct an_epoch *e;
	size_t old = mp->epcap;
	int ret = an_grow((void **)&mp->ep, &mp->epcap, mp->n + 2,
			  sizeof(*mp->ep));

	if (ret)
		return ret;
	for (size_t i = old; i < mp->epcap; i++)
		mp->ep[i] = (struct an_epoch){ .exit_t = -1, .enter_t = -1,
					       .boot = UINT32_MAX };
	e = &mp->ep[mp->n];
	if (e->boot == UINT32_MAX)
		e->boot = boot;
	else if (e->boot != boot)
		e->exit_t = INT64_MIN;	/* a reboot inside: never placed */
	if (!strcmp(ev->type, "exit") && e->exit_t == -1)
		e->exit_t = ev->target_t_ns;
	if (!strcmp(ev->type, "enter"))
		e->enter_t = ev->target_t_ns;
	return 0;
}

/*
 * Did segment @k of @c see epoch @e: one of its exchanges (or marker
 * pairs) answered in the epoch's wake, between its exit and its enter
 * (target times)? A segment that only reaches the epoch from exchanges
 * of other wakes maps it across sleeps whose resumes may have stepped
 * CLOCK_BOOTTIME: a step is a segment boundary only where two exchanges
 * around it disagree, and the steps of several sleeps between two
 * exchanges can cancel out. Such a mapping is no evidence of where the
 * epoch lies.
 */
static bool saw(const struct an_clock *c, int k, const struct an_epoch *e)
{
	const struct an_segment *g = &c->seg[k];

	for (size_t i = g->s_first; i < g->s_end && i < c->ns; i++) {
		const struct an_clock_sample *x = &c->s[i];

		if (used(x) && (e->exit_t < 0 || x->t >= e->exit_t) &&
		    (e->enter_t < 0 || x->t <= e->enter_t))
			return true;
	}
	return false;
}

/*
 * Which epochs the clock maps, and where: each event a segment that saw
 * its epoch maps (an_mapper_map() before any placement; saw()), from its epoch's exit on (the events before it are the
 * sleep's own: its suspend path's tail, and the resume path that
 * CLOCK_BOOTTIME's step already moved), widens its epoch's
 * online_first/online_last. The mapper is then reset and the events
 * rewound.
 */
static int epochs_mapped(struct an_mapper *mp, struct sbrig_capread *cr)
{
	struct sbrig_event ev;
	bool awake = true;	/* a capture begins awake */
	int ret;

	while ((ret = sbrig_capread_next_event(cr, &ev)) == 1) {
		struct an_epoch *e = &mp->ep[mp->next <= mp->n ? mp->next :
					     mp->n];
		int64_t h, u;
		int k;

		if (!strcmp(ev.type, "exit") || strcmp(ev.boot_id, mp->boot))
			awake = true;
		k = an_mapper_map(mp, &ev, &h, &u);
		if (k >= 0 && awake && saw(mp->clk, k, e)) {
			if (!e->online || an_sat_sub(h, u) < e->online_first)
				e->online_first = an_sat_sub(h, u);
			if (!e->online || an_sat_add(h, u) > e->online_last)
				e->online_last = an_sat_add(h, u);
			e->online = true;
		}
		if (!strcmp(ev.type, "enter"))
			awake = false;
	}
	mp->next = 0;
	mp->enter_online = -1;
	mp->boot[0] = '\0';
	mp->past_exit = false;
	return ret < 0 ? ret : sbrig_capread_rewind(cr, SBRIG_CAPFILE_EVENTS);
}

/**
 * an_mapper_init() - the enters of events.tsv, for an_mapper_map()
 * @mp: out (zeroed storage)
 * @clk: the clock to map with (may be fitted again before the mapping)
 * @cr: the capture; events.tsv is read once and rewound
 *
 * The online host times of the enters, in log order: an event's epoch
 * runs from the enter before it to the enter after it. An enter is logged
 * after everything before it in its boot's log, so its time is at least
 * each earlier event's earliest (host_t_ns - uncert_ns): an enter whose
 * online time the daemon could only guess (logged with the clock of the
 * suspend it ends, seconds of uncertainty) then still opens its epoch
 * after the exchanges of the awake time before it.
 *
 * Return: 0 or -errno (sbrig_errmsg() naming events.tsv's line).
 */
int an_mapper_init(struct an_mapper *mp, const struct an_clock *clk,
		   struct sbrig_capread *cr)
{
	char boot[SBRIG_BOOT_ID_MAX] = "";
	int64_t lb = INT64_MIN;		/* the log's lower bound so far */
	unsigned int boots = 0;
	struct sbrig_event ev;
	int ret;

	memset(mp, 0, sizeof(*mp));
	mp->clk = clk;
	mp->enter_online = -1;
	while ((ret = sbrig_capread_next_event(cr, &ev)) == 1) {
		int64_t early = an_sat_sub(ev.host_t_ns, ev.uncert_ns);

		if (strcmp(boot, ev.boot_id)) {
			if (boot[0])
				boots++;
			snprintf(boot, sizeof(boot), "%s", ev.boot_id);
			lb = INT64_MIN;
		}
		ret = epoch_note(mp, &ev, boots);
		if (ret)
			break;
		if (!strcmp(ev.type, "enter")) {
			ret = an_grow((void **)&mp->enters, &mp->cap, mp->n + 1,
				      sizeof(*mp->enters));
			if (ret)
				break;
			mp->enters[mp->n++] = ev.host_t_ns > lb ? ev.host_t_ns :
				lb;
		}
		if (early > lb)
			lb = early;
	}
	if (!ret)
		ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_EVENTS);
	if (!ret && mp->ep)
		ret = epochs_mapped(mp, cr);
	if (!ret && mp->ep)
		ret = an_place_epochs(mp->ep, mp->n + 1, cr);
	if (ret < 0)
		an_mapper_free(mp);
	return ret < 0 ? ret : 0;
}

/*
 * The clock segment for an event of the epoch [@from, @to) (online host
 * times of the enters around it; -1 / AN_OPEN_END at the ends): the one in
 * effect after @from, or the nearest before @to in the first epoch of a
 * boot; -1 when no exchange falls in the epoch.
 */
/* see agrees() */
#define ONLINE_SLACK_NS	20000000LL

static int epoch_segment(const struct an_clock *clk, int64_t from, int64_t to,
			 int64_t online)
{
	int k, best = -1;
	int64_t bd = INT64_MAX;

	if (from >= 0) {
		k = an_clock_segment_after(clk, from);
		return k >= 0 && clk->seg[k].host_first < to ? k : -1;
	}
	for (size_t i = 0; i < clk->nseg; i++) {
		const struct an_segment *g = &clk->seg[i];
		int64_t d = online < g->host_first ?
			an_sat_sub(g->host_first, online) :
			online > g->host_last ?
			an_sat_sub(online, g->host_last) : 0;

		if (g->host_first < to && d < bd) {
			bd = d;
			best = (int)i;
		}
	}
	return best;
}

/*
 * Does a mapping (@host_ns +/- @unc) agree with the event's online time?
 * The daemon's online model is younger and its uncertainty claims are
 * optimistic by some milliseconds, so only a far larger disagreement
 * counts: the sign of a wrong segment (the epoch rule misled; the
 * offsets of two segments differ by the sleep time a resume injected,
 * tens of milliseconds to a second).
 */
static bool agrees(const struct sbrig_event *ev, int64_t host_ns, int64_t unc)
{
	double d;

	if (ev->uncert_ns < 0)
		return true;	/* no online time: nothing disagrees */
	d = (double)an_sat_dist(host_ns, ev->host_t_ns);

	return d <= 4 * ((double)unc + (double)ev->uncert_ns) +
		ONLINE_SLACK_NS;
}

/*
 * The segment whose mapping of @ev agrees best with its online time, in
 * place of @k's, which does not; else the online time itself (-1).
 */
static int other_segment(const struct an_clock *clk,
			 const struct sbrig_event *ev, int k,
			 int64_t *host_ns, int64_t *uncert_ns)
{
	int64_t best_d = INT64_MAX, h, u;
	int best = -1;

	for (size_t i = 0; i < clk->nseg; i++) {
		int64_t d;

		if ((int)i == k)
			continue;
		an_clock_map(clk, (int)i, ev->target_t_ns, &h, &u);
		d = an_sat_dist(h, ev->host_t_ns);
		if (agrees(ev, h, u) && d < best_d) {
			best_d = d;
			best = (int)i;
		}
	}
	sbrig_log(SBRIG_LOG_DEBUG, "event %" PRIu64 " %s: segment %d's mapping "
		  "is %" PRId64 " ns from its online time; %s %d", ev->seq,
		  ev->type, k, an_sat_sub(*host_ns, ev->host_t_ns),
		  best >= 0 ? "segment" : "kept the online time, segment", best);
	if (best >= 0) {
		an_clock_map(clk, best, ev->target_t_ns, host_ns, uncert_ns);
	} else {
		*host_ns = ev->host_t_ns;
		*uncert_ns = ev->uncert_ns;
	}
	return best;
}

/*
 * The placed epoch (place.c) that maps @ev, or NULL. From its exit on,
 * an event is its epoch's. Before the exit an epoch holds the tail of
 * the sleep's suspend path (target times near the last enter: the wake
 * before, on the clock before the resume's step) and the head of its
 * resume path (near the exit: this wake): the nearer one's placement.
 * A placed epoch's events are its wake's even where the daemon gave
 * them an online time: that is the pre-resume model, off by the step.
 */
static const struct an_epoch *placed_epoch(const struct an_mapper *mp,
					   const struct sbrig_event *ev)
{
	const struct an_epoch *e, *prev;

	if (!mp->ep || mp->next > mp->n)
		return NULL;
	e = &mp->ep[mp->next];
	prev = mp->next ? &mp->ep[mp->next - 1] : NULL;
	if (!mp->past_exit && prev && e->exit_t >= 0 && prev->enter_t >= 0 &&
	    an_sat_sub(ev->target_t_ns, prev->enter_t) <
	    an_sat_sub(e->exit_t, ev->target_t_ns))
		return prev->placed ? prev : NULL;
	return e->placed ? e : NULL;
}

/**
 * an_mapper_map() - map the next event of events.tsv
 * @mp: the mapper
 * @ev: the event (every event, in the file's order)
 * @host_ns: out: its host time (the online one if it cannot be mapped)
 * @uncert_ns: out: its uncertainty (likewise)
 *
 * Return: the segment used, AN_SEG_PLACED (an epoch the clock did not see,
 * placed by the power: place.c), or -1 (no exchange in the event's epoch).
 */
int an_mapper_map(struct an_mapper *mp, const struct sbrig_event *ev,
		  int64_t *host_ns, int64_t *uncert_ns)
{
	const struct an_epoch *e;
	int64_t to;
	int k;

	if (strcmp(ev->boot_id, mp->boot)) {
		snprintf(mp->boot, sizeof(mp->boot), "%s", ev->boot_id);
		mp->enter_online = -1;
		mp->past_exit = true;
		mp->lb = INT64_MIN;
	}
	if (!strcmp(ev->type, "exit"))
		mp->past_exit = true;
	/* an epoch the clock did not see, placed by the power (place.c) */
	e = placed_epoch(mp, ev);
	if (e) {
		*host_ns = an_sat_add(ev->target_t_ns, e->offset);
		*uncert_ns = e->uncert;
		k = AN_SEG_PLACED;
		goto out;
	}
	/* the next enter, or this one (stamped before its sleep) */
	to = mp->next < mp->n ? mp->enters[mp->next] : AN_OPEN_END;
	k = epoch_segment(mp->clk, mp->enter_online, to, ev->host_t_ns);
	*host_ns = ev->host_t_ns;
	*uncert_ns = ev->uncert_ns;
	if (k >= 0) {
		an_clock_map(mp->clk, k, ev->target_t_ns, host_ns, uncert_ns);
		if (!agrees(ev, *host_ns, *uncert_ns))
			k = other_segment(mp->clk, ev, k, host_ns, uncert_ns);
	}
	/*
	 * No time at all (uncertainty -1): it was logged after the events
	 * before it, so it is no earlier than their earliest; that bound,
	 * its uncertainty still unknown, rather than host time 0. Online
	 * times of a sleep's tail (after its enter, before its exit) are no
	 * bound: they may be the model from before the resume's step.
	 */
	if (k < 0 && *uncert_ns < 0 && mp->lb != INT64_MIN)
		*host_ns = mp->lb;
out:
	if (*uncert_ns >= 0 && (k >= 0 || k == AN_SEG_PLACED ||
				mp->past_exit || !strcmp(ev->type, "enter")) &&
	    an_sat_sub(*host_ns, *uncert_ns) > mp->lb)
		mp->lb = an_sat_sub(*host_ns, *uncert_ns);
	if (!strcmp(ev->type, "enter")) {
		mp->past_exit = false;
		mp->enter_online = mp->next < mp->n ? mp->enters[mp->next] :
			ev->host_t_ns;
		mp->next++;
	}
	return k;
}

void an_mapper_free(struct an_mapper *mp)
{
	free(mp->ep);
	free(mp->enters);
	memset(mp, 0, sizeof(*mp));
}

void an_clock_free(struct an_clock *c)
{
	free(c->seg);
	free(c->s);
	c->seg = NULL;
	c->s = NULL;
	c->nseg = c->cap = 0;
	c->ns = c->scap = 0;
}
