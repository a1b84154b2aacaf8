// SPDX-License-Identifier: GPL-2.0
/*
 * latency.c - wakeup-latency measurement, see latency.h.
 *
 * A measurement repeats N rounds: wait until the target is asleep, press
 * the key, and measure from the press (the host time the GPIO line
 * changed) to the first UNTIL event ("resume") stamped after it, on host
 * time through the link's clock model. Everything it does and sees is
 * recorded in its capture (the presses as stimuli, the target's events).
 *
 * Events stamped before the press (the late "suspend"/"enter" of the
 * cycle the press ends) are skipped. A round is not measured but started
 * again when an UNTIL event is stamped before the press: the target woke
 * by itself just before it. A target that nothing holds awake may suspend
 * again before its agent ran (the events of the wake then wait in the
 * target): when the link stays quiet for quiet_ms after the press, the key
 * is pressed again ("nudge") so that they come out; a measurement counts
 * from the last press before UNTIL. An UNTIL event the link could not map
 * to host time within LAT_MAX_UNCERT_NS (the target slept again before
 * enough clock exchanges after its wake) also starts the round again;
 * LAT_MAX_RETRIES rounds in a row not measured end the measurement.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/scenario.h>

#include "evq.h"
#include "latency.h"
#include "rig.h"
#include "sched.h"
#include "util.h"

#define LAT_MAX_PRESS 8

enum lat_phase { L_ASLEEP, L_PRESS, L_WAKE };

/* the measurement: only the loop's thread touches it */
static struct {
	bool active;
	bool finishing;
	struct op_handle handle;
	const struct lat_client_ops *ops;
	void *ctx;
	struct lat_opts o;
	unsigned int i;			/* rounds measured */
	enum lat_phase phase;
	int64_t press_t[LAT_MAX_PRESS];	/* this round's presses */
	unsigned int npress;
	unsigned int retries;		/* rounds in a row not measured */
	int64_t asleep_deadline_ns;
	int64_t wake_deadline_ns;
	struct sched_timer timer;
	struct sched_timer next;
	struct evq q;
	struct rig_observer obs;
	int err;
} lat;

static void reset(void)
{
	sched_timer_stop(&lat.timer);
	sched_timer_stop(&lat.next);
	rig_forget(&lat);
	rig_unobserve(&lat.obs);
	lat.ops = NULL;
	lat.ctx = NULL;
	evq_clear(&lat.q);
	lat.finishing = false;
	op_release(&lat.handle);
	lat.active = false;
}

/* ---- the end ------------------------------------------------------------ */

static void capture_end(void *ctx, int err, const struct rec_result *res)
{
	const struct lat_client_ops *ops = lat.ops;
	void *octx = lat.ctx;
	unsigned int measured = lat.i;

	if (!lat.active)
		return;
	if (lat.err)
		err = lat.err;
	else if (!lat.finishing && !err)
		err = -ECANCELED;	/* the capture ended under us */
	reset();
	if (ops && ops->done)
		ops->done(octx, err, measured, res);
}

static const struct rec_client_ops lat_rec_ops = {
	.end = capture_end,
};

/* End the measurement (@err 0: complete); the answer follows. */
static void finish(int err, const char *why)
{
	char st[400];

	if (lat.finishing)
		return;
	lat.finishing = true;
	lat.err = err;
	sched_timer_stop(&lat.timer);
	sched_timer_stop(&lat.next);
	rig_release(&lat);
	if (!err)
		snprintf(st, sizeof(st), "complete");
	else if (err == -ECANCELED)
		snprintf(st, sizeof(st), "%s", why);
	else
		snprintf(st, sizeof(st), "failed: %s", why);
	rec_stop(st);	/* capture_end() follows, once the sensor stopped */
}

static void report(enum lat_round_kind kind, int64_t latency_ns,
		   int64_t uncert_ns, const char *why, const char *event)
{
	struct lat_round r = {
		.kind = kind, .i = lat.i + 1, .n = lat.o.n,
		.latency_ns = latency_ns, .uncert_ns = uncert_ns,
		.why = why, .event = event, .nudge = lat.npress - 1,
	};

	if (lat.ops && lat.ops->round)
		lat.ops->round(lat.ctx, &r);
}

/* ---- rounds ------------------------------------------------------------- */

static void on_timer(void *data);
static void look(void *data);

static void press_done(int err, int64_t press_ns, void *data)
{
	if (lat.active && !lat.finishing && err)
		finish(err, "release failed");
}

/* Press for this round (the first press or a nudge). */
static int press(void)
{
	int ret = rig_press(lat.o.key, lat.o.press_ns,
			    &lat.press_t[lat.npress], press_done, &lat);

	if (ret < 0)
		return ret;
	lat.npress++;
	return 0;
}

/*
 * After a press: time out at the deadline; press again when the target
 * has been quiet for quiet_ms since the last press. Return true if the
 * round goes on (timer armed), false at the deadline.
 */
static bool wake_poll(void)
{
	int64_t now = sbrig_now_ns(), next, asleep_at;
	int64_t last = lat.press_t[lat.npress - 1];
	int64_t quiet = (int64_t)rig_config()->quiet_ms * NS_PER_MS;
	int ret;

	if (now >= lat.wake_deadline_ns)
		return false;
	ret = rig_asleep_poll(TIME_NEVER, &next, NULL);
	asleep_at = ret == 1 ? now : ret == 0 && next != TIME_NEVER ? next :
		-1;
	if (asleep_at >= 0 && asleep_at < time_add(last, quiet))
		asleep_at = time_add(last, quiet);
	if (asleep_at >= 0 && now >= asleep_at && lat.npress < LAT_MAX_PRESS) {
		ret = press();
		if (ret < 0) {
			finish(ret, sbrig_errmsg());
			return true;
		}
		report(LAT_NUDGE, 0, 0, NULL, NULL);
		asleep_at = time_add(now, quiet);
	}
	next = lat.wake_deadline_ns;
	if (asleep_at >= 0 && asleep_at < next && lat.npress < LAT_MAX_PRESS)
		next = asleep_at;
	sched_timer_start(&lat.timer, next, on_timer, NULL);
	return true;
}

/* Start a round: wait (up to the timeout) until the target is asleep. */
static void round_start(void)
{
	lat.phase = L_ASLEEP;
	lat.asleep_deadline_ns = time_after(lat.o.timeout_ns);
	sched_defer(&lat.timer, on_timer, NULL);
}

static void on_timer(void *data)
{
	char t[32], msg[400], why[200];
	int64_t next;
	int ret;

	sbrig_format_duration(lat.o.timeout_ns, t, sizeof(t));
	if (lat.phase == L_ASLEEP) {
		ret = rig_asleep_poll(lat.asleep_deadline_ns, &next, NULL);
		if (ret == 1) {
			lat.phase = L_PRESS;
			look(NULL);
			return;
		}
		if (ret == 0) {
			evq_clear(&lat.q);	/* what it says meanwhile is past */
			sched_timer_start(&lat.timer, next, on_timer, NULL);
			return;
		}
		snprintf(msg, sizeof(msg), "the target did not fall asleep "
			 "within %s (%s)", t, rig_awake_why(why, sizeof(why)));
	} else {
		if (wake_poll())
			return;
		snprintf(msg, sizeof(msg), "no '%s' event within %s of the "
			 "press", lat.o.until, t);
	}
	finish(-ETIMEDOUT, msg);
}

/* The target woke without our press: wait until it sleeps again. */
static void retry(const char *why, const struct sbrig_event *ev)
{
	if (++lat.retries == LAT_MAX_RETRIES) {
		finish(-EAGAIN, "no round could be measured in 20 attempts "
		       "in a row");
		return;
	}
	report(LAT_RETRY, 0, 0, why, ev->type);
	round_start();
}

/* One UNTIL event after the press: measure it, or start again. */
static void until_event(const struct sbrig_event *ev)
{
	unsigned int k;

	if (ev->uncert_ns < 0 || ev->uncert_ns > LAT_MAX_UNCERT_NS) {
		/* it slept again before (enough) clock exchanges: no good
		 * host time for it */
		retry("no_clock", ev);
		return;
	}
	/* the last press it may have followed */
	for (k = lat.npress; k > 0; k--)
		if (lat.press_t[k - 1] <= time_add(ev->host_t_ns, ev->uncert_ns))
			break;
	if (!k) {
		retry("woke_before_press", ev);
		return;
	}
	report(LAT_MEASURED, time_sub(ev->host_t_ns, lat.press_t[k - 1]),
	       ev->uncert_ns, NULL, NULL);
	lat.retries = 0;
	if (++lat.i == lat.o.n) {
		finish(0, NULL);
		return;
	}
	round_start();
}

/* Look at the stream for what the current phase waits for. */
static void look(void *data)
{
	const struct evq_item *it;
	int ret;

	if (!lat.active || lat.finishing)
		return;
	switch (lat.phase) {
	case L_ASLEEP:
		evq_clear(&lat.q);	/* the timer decides */
		return;
	case L_PRESS:
		lat.npress = 0;
		ret = press();
		if (ret < 0) {
			finish(ret, sbrig_errmsg());
			return;
		}
		lat.phase = L_WAKE;
		evq_clear(&lat.q);	/* only what comes after the press */
		lat.wake_deadline_ns = time_add(lat.press_t[0],
						lat.o.timeout_ns);
		wake_poll();
		return;
	case L_WAKE:
		/* the late suspend/enter of the cycle, the rest: skipped */
		while ((it = evq_pop(&lat.q)))
			if (!it->is_edge && !strcmp(it->ev.type, lat.o.until))
				break;
		if (it)
			until_event(&it->ev);
		/* more in the stream: on the next turn */
		if (lat.active && !lat.finishing && lat.phase == L_WAKE &&
		    lat.q.len)
			sched_defer(&lat.next, look, NULL);
		return;
	}
}

static void on_event(void *data, const struct sbrig_event *ev)
{
	evq_push_event(&lat.q, ev);
	if (lat.phase == L_WAKE)
		look(NULL);
}

static const struct rig_observer_ops lat_observer = {
	.event = on_event,
};

/* ---- the handle --------------------------------------------------------- */

static void handle_stop(struct op_handle *h, enum op_stop why)
{
	static const char *const status[] = {
		[OP_STOP_OWN] = "aborted: stopped by the client",
		[OP_STOP_OTHER] = "aborted: stopped by a client",
		[OP_STOP_SHUTDOWN] = "aborted",
	};

	if (!lat.active)
		return;
	/* what was measured so far is the result */
	if (lat.i > 0) {
		lat.o.n = lat.i;
		finish(0, NULL);
	} else {
		finish(-ECANCELED, status[why]);
	}
}

static void handle_detach(struct op_handle *h)
{
	/* nobody to report to: end it, its capture stays */
	lat.ops = NULL;
	lat.ctx = NULL;
	if (lat.active)
		finish(-ECANCELED, "aborted: client disconnected");
}

static const struct op_handle_ops lat_handle_ops = {
	.kind = "latency",
	.stop = handle_stop,
	.detach = handle_detach,
};

/**
 * lat_start() - measure wakeup latency, recording a capture
 * @o: the request (copied)
 * @ops: the client's callbacks
 * @ctx: for @ops
 * @h: out: the measurement's handle
 *
 * Return: 0 (the answer comes through @ops), or -errno with sbrig_errmsg().
 */
int lat_start(const struct lat_opts *o, const struct lat_client_ops *ops,
	      void *ctx, struct op_handle **h)
{
	struct rec_opts ro = { .dir = o->dir,
			       .stats_every_ns = o->stats_every_ns };
	int ret;

	if (o->n == 0 || o->n > LAT_MAX_N)
		return sbrig_set_error(-EINVAL, "n: %u is not 1..%d", o->n,
				       LAT_MAX_N);
	if (o->timeout_ns <= 0)
		return sbrig_set_error(-EINVAL, "timeout: must be positive");
	if (!rig_has_key(o->key))
		return sbrig_set_error(-ENOENT, "key: no key '%s' on rig %s",
				       o->key, rig_config()->name);
	if (!rig_has_link())
		return sbrig_set_error(-ENOTCONN, "no target link on rig %s: "
				       "latency needs the target's events",
				       rig_config()->name);
	ret = op_claim(&lat.handle);
	if (ret < 0)
		return ret;
	lat.active = true;
	lat.o = *o;
	lat.o.dir = NULL;
	lat.i = 0;
	lat.retries = 0;
	lat.err = 0;
	ret = rec_start(&ro, &lat_rec_ops, NULL);
	if (ret < 0) {
		reset();
		return ret;
	}
	lat.obs = (struct rig_observer){ &lat_observer, NULL };
	ret = rig_observe(&lat.obs);
	if (ret < 0) {
		rec_detach();
		rec_stop("failed: no room for the measurement's observer");
		reset();
		return ret;
	}
	lat.ops = ops;
	lat.ctx = ctx;
	*h = &lat.handle;
	if (ops && ops->started)
		ops->started(ctx, o);
	round_start();
	return 0;
}

int lat_init(void)
{
	memset(&lat, 0, sizeof(lat));
	lat.handle.ops = &lat_handle_ops;
	return 0;
}

void lat_fini(void)
{
	if (lat.active)
		handle_stop(&lat.handle, OP_STOP_SHUTDOWN);
	if (lat.active)
		reset();
}
