// SPDX-License-Identifier: GPL-2.0
/*
 * place.c - wakes the clock could not see, placed by the power.
 *
 * A wake shorter than the link's ping period (a charger plug the target
 * answers in 30 ms, then suspends again) has no clock exchange: the daemon
 * writes its events with no online host time (uncert_ns -1), and each
 * resume steps CLOCK_BOOTTIME by the sleep time the kernel injected (on
 * an RTC of one-second resolution, up to a second off), so no segment's
 * mapping holds for it either. The power still shows it: the platform
 * is awake around the kernel's exit ... enter, and asleep either side.
 *
 * For every run of such epochs (an epoch: the events from one enter to
 * the next) between two epochs that do have online times (or, for a run
 * that begins the log, after its first epoch that holds no exit and no
 * online time: from the capture's start), the samples
 * between those two epochs are read: from the latest the last online
 * event before the run can be (host + uncertainty) to the earliest the
 * first one after it can be (host - uncertainty), so that the neighbours'
 * own wakes are never whole inside. The stretches above the suspended
 * level that begin and end inside the window are the wakes. When there
 * are exactly as many as the run has epochs, the k-th wake places the
 * k-th epoch: the awake stretch [rise, fall] holds the kernel's
 * [exit, enter], so the epoch's offset (host - target) lies in
 * [rise - exit, fall - enter]; its middle is the placement and half its
 * width, plus a sample interval, the uncertainty. A power trace that
 * follows the platform's state late or coarsely (the virtual rig's reads
 * QEMU's run state every 25 ms) can show a wake shorter than the kernel's
 * span: the interval is then empty, and the middle of [fall - enter,
 * rise - exit] is taken, half its width plus a sample interval the
 * uncertainty. Placements that would put an epoch's exit before the
 * enter of the one before it are not the log's: the run is left
 * unplaced (its events keep their online time and count as unmapped),
 * as it is when the wakes are not as many as the epochs.
 * report-format.md, "Clock".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-clock.h"
#include "an-trace.h"

#define PLACE_MIN_RUN		3	/* samples above the level: a wake */
#define PLACE_BATCH		2048

struct wake {
	int64_t rise, fall;
};

/* The samples in [@a, @b] into @x. 0, -E2BIG (too many) or -errno. */
static int read_window(struct sbrig_capread *cr, int64_t a, int64_t b,
		       struct an_trace *x)
{
	struct sbrig_sample batch[PLACE_BATCH];
	ssize_t got;
	int ret;

	x->n = 0;
	ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	if (ret)
		return ret;
	ret = sbrig_capread_seek_samples(cr, a);
	if (ret && ret != -EOPNOTSUPP)
		return ret;
	while ((got = sbrig_capread_samples(cr, batch, PLACE_BATCH)) > 0) {
		for (ssize_t i = 0; i < got; i++) {
			if (batch[i].t_ns < a)
				continue;
			if (batch[i].t_ns > b)
				return 0;
			ret = an_trace_add(x, batch[i].t_ns,
					   an_sample_power_uW(&batch[i]));
			if (ret)
				return ret;
			if (x->overflow)
				return -E2BIG;
		}
	}
	return got < 0 ? (int)got : 0;
}

/*
 * The wakes of @x: runs of at least PLACE_MIN_RUN samples above the
 * suspended level (an_trace_asleep_level(), as edges.c), a dip shorter
 * than PLACE_MIN_RUN samples not ending one, that begin after the
 * window's first sample and end before its last. Their number into *@nw (at most @max).
 */
static void find_wakes(const struct an_trace *x, struct wake *w, size_t max,
		       size_t *nw, int64_t *dt)
{
	double thr = an_trace_asleep_level(x);
	size_t i = 0;

	*nw = 0;
	*dt = x->n > 1 ? (x->t[x->n - 1] - x->t[0]) / (int64_t)(x->n - 1) : 0;
	while (i < x->n) {
		size_t s, e, below;

		for (; i < x->n && x->p[i] <= thr; i++)
			;
		if (i == x->n)
			break;
		s = i;
		e = i;
		for (below = 0; i < x->n && below < PLACE_MIN_RUN; i++) {
			if (x->p[i] > thr) {
				e = i;
				below = 0;
			} else {
				below++;
			}
		}
		if (e - s + 1 < PLACE_MIN_RUN || s == 0 || e + 1 >= x->n)
			continue;	/* noise, or cut by the window */
		if (*nw == max) {
			*nw = max + 1;	/* too many: no placement */
			return;
		}
		w[(*nw)++] = (struct wake){ x->t[s], x->t[e] };
	}
}

/*
 * Place epochs @e0..@e1 (@ep) by the wakes @w, one each. True if every
 * epoch fits its wake.
 */
static bool fit_run(struct an_epoch *ep, size_t e0, size_t e1,
		    const struct wake *w, int64_t dt, bool apply)
{
	int64_t prev_enter = INT64_MIN;

	for (size_t e = e0; e <= e1; e++) {
		const struct wake *k = &w[e - e0];
		int64_t lo = an_sat_sub(k->rise, ep[e].exit_t);
		int64_t hi = an_sat_sub(k->fall, ep[e].enter_t);

		int64_t slack = an_sat_sub(hi, lo);

		if (!apply)
			sbrig_log(SBRIG_LOG_DEBUG, "place: epoch %zu: wake %"
				  PRId64 " .. %" PRId64 " (%" PRId64 " ns), "
				  "its exit .. enter %" PRId64 " ns", e,
				  k->rise, k->fall, k->fall - k->rise,
				  an_sat_sub(ep[e].enter_t, ep[e].exit_t));

		int64_t off = lo + slack / 2;

		/* the placed epochs keep the log's order */
		if (e > e0 && an_sat_add(ep[e].exit_t, off) <= prev_enter)
			return false;
		prev_enter = an_sat_add(ep[e].enter_t, off);
		if (apply) {
			ep[e].placed = true;
			ep[e].offset = off;
			ep[e].uncert = an_sat_add(slack < 0 ? -(slack / 2) :
						  slack / 2, dt);
		}
	}
	return true;
}

/* Place one run, bracketed by online times [@a, @b]. */
static int place_run(struct an_epoch *ep, size_t e0, size_t e1, int64_t a,
		     int64_t b, struct sbrig_capread *cr, struct an_trace *x)
{
	size_t n = e1 - e0 + 1, nw;
	struct wake *w;
	int64_t dt;
	int ret;

	if (b <= a)
		return 0;
	ret = read_window(cr, a, b, x);
	if (ret == -E2BIG)
		return 0;	/* a window too long to read: left as it is */
	if (ret)
		return ret;
	w = malloc(n * sizeof(*w));
	if (!w)
		return -ENOMEM;
	find_wakes(x, w, n, &nw, &dt);
	if (nw == n && fit_run(ep, e0, e1, w, dt, false))
		fit_run(ep, e0, e1, w, dt, true);
	sbrig_log(SBRIG_LOG_DEBUG, "place: epochs %zu..%zu, %zu wake(s) in "
		  "[%" PRId64 ", %" PRId64 "]: %s", e0, e1, nw, a, b,
		  ep[e0].placed ? "placed" : "not placed");
	free(w);
	return 0;
}

/**
 * an_place_epochs() - place the epochs with no online time by the power
 * @ep: the epochs of events.tsv, in order (an_mapper_init() fills them)
 * @n: their number
 * @cr: the capture: its samples are read (and rewound)
 *
 * Return: 0 or -errno (sbrig_errmsg() naming the samples' file).
 */
int an_place_epochs(struct an_epoch *ep, size_t n, struct sbrig_capread *cr)
{
	struct an_trace x = { 0 };
	int ret = 0;
	bool read = false;

	for (size_t e = 1; e + 1 < n && !ret; e++) {
		size_t e1 = e;
		/* the log's first epoch, awake from before the capture: its
		 * wake touches the window's start and is not counted */
		bool first = e == 1 && !ep[0].online && ep[0].exit_t == -1;

		if (ep[e].online || (!ep[e - 1].online && !first))
			continue;
		/* a run of whole wakes of one boot, an online epoch after */
		while (e1 < n && !ep[e1].online && ep[e1].exit_t >= 0 &&
		       ep[e1].enter_t >= ep[e1].exit_t &&
		       ep[e1].boot == ep[e - 1].boot)
			e1++;
		if (e1 < n && ep[e1].online && e1 > e &&
		    ep[e1].boot == ep[e - 1].boot) {
			read = true;
			ret = place_run(ep, e, e1 - 1, first ? INT64_MIN :
					ep[e - 1].online_last,
					ep[e1].online_first, cr, &x);
		}
		if (e1 > e)
			e = e1 - 1;
	}
	an_trace_free(&x);
	if (!ret && read)
		ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
	if (ret == -ENOMEM)
		ret = sbrig_set_error(-ENOMEM, "analysis: out of memory");
	return ret;
}
