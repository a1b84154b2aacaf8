// SPDX-License-Identifier: GPL-2.0
/*
 * sleepwatch.c - has the target gone to sleep? See sleepwatch.h.
 *
 * The watch asks the rig's witnesses when rig_asleep_poll() says one
 * could tell (a timer on the loop, never a busy poll), and listens to
 * the rig's events for an "exit" meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sleepwatch.h"
#include "util.h"

static void finish(struct sleepwatch *w, int err,
		   const struct sleepwatch_result *r)
{
	sleepwatch_fn fn = w->fn;
	void *ctx = w->ctx;

	sleepwatch_stop(w);
	if (fn)
		fn(ctx, err, r);
}

static void look(void *data)
{
	struct sleepwatch *w = data;
	struct sleepwatch_result r = { .how = SLEEPWATCH_QUIET };
	int64_t next = TIME_NEVER;
	int ret;

	if (!w->active)
		return;
	ret = rig_asleep_poll(TIME_NEVER, &next, &r.why);
	if (ret == 0) {
		sched_timer_start(&w->timer, next, look, w);
		return;
	}
	if (ret == 1) {
		if (r.why.witness != RIG_WITNESS_LINK)
			r.how = SLEEPWATCH_ASLEEP;
		r.quiet_since_ns = rig_link_last_rx_ns();
		finish(w, 0, &r);
		return;
	}
	finish(w, ret, NULL);	/* -ENOTCONN, with sbrig_errmsg() */
}

static void on_event(void *data, const struct sbrig_event *ev)
{
	struct sleepwatch *w = data;
	struct sleepwatch_result r = { .how = SLEEPWATCH_RESUMED };

	if (!w->active || strcmp(ev->type, "exit") != 0)
		return;
	snprintf(r.state, sizeof(r.state), "%s", ev->arg);
	finish(w, 0, &r);
}

static const struct rig_observer_ops sleepwatch_observer = {
	.event = on_event,
};

/**
 * sleepwatch_start() - watch for the target to go to sleep from now on
 * @w: the watch (its owner's storage)
 * @fn: called once when the sleep is seen
 * @ctx: for @fn
 *
 * Context: the loop. @fn is never called from this function: the first
 * look is on a later turn of the loop.
 *
 * Return: 0, or -errno with sbrig_errmsg().
 */
int sleepwatch_start(struct sleepwatch *w, sleepwatch_fn fn, void *ctx)
{
	int ret;

	sleepwatch_stop(w);
	w->obs = (struct rig_observer){ &sleepwatch_observer, w };
	ret = rig_observe(&w->obs);
	if (ret < 0)
		return ret;
	w->fn = fn;
	w->ctx = ctx;
	w->active = true;
	sched_defer(&w->timer, look, w);
	return 0;
}

/**
 * sleepwatch_stop() - stop watching
 * @w: the watch; stopped or zeroed storage is fine
 */
void sleepwatch_stop(struct sleepwatch *w)
{
	sched_timer_stop(&w->timer);
	if (w->obs.ops)
		rig_unobserve(&w->obs);
	w->active = false;
	w->fn = NULL;
	w->ctx = NULL;
}
