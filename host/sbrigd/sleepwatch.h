/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sleepwatch.h - has the target gone to sleep? For a request whose effect
 * is that the target sleeps (the agent's "state mem"), answered by what
 * the rig sees, not by a reply: a frozen agent cannot send one.
 *
 * A suspending target freezes its user space, the agent included, so the
 * rig hears nothing from it while it sleeps, and the events of the cycle
 * (suspend, enter) reach the rig only after it wakes, with exit and
 * resume. So the target has gone to sleep once either holds, counted from
 * sleepwatch_start() (the owner starts the watch once the agent has
 * taken the request, so an earlier silence cannot count):
 *
 *  - the rig's witnesses see it asleep (rig_asleep_poll(): the machine's
 *    run state, the supply, the marker, else the link quiet for the
 *    rig's [timing] quiet_ms): it sleeps now;
 *  - an "exit" event arrived: it slept and woke again before they saw it
 *    (a short forced suspend, a key that woke it at once).
 *
 * The watch has no deadline of its own: its owner has one.
 */
#ifndef SBRIGD_SLEEPWATCH_H
#define SBRIGD_SLEEPWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <sbrig/records.h>

#include "rig.h"
#include "sched.h"

/** enum sleepwatch_how - how the sleep was seen */
enum sleepwatch_how {
	SLEEPWATCH_QUIET,	/* the link is quiet: asleep now */
	SLEEPWATCH_ASLEEP,	/* another witness sees it asleep now */
	SLEEPWATCH_RESUMED,	/* an exit event: it slept, and woke again */
};

/**
 * struct sleepwatch_result - what was seen
 * @how: see enum sleepwatch_how
 * @quiet_since_ns: SLEEPWATCH_QUIET: the host time of the agent's last
 *	frame (the target fell silent then)
 * @state: SLEEPWATCH_RESUMED: the exit event's state ("deep", "s2idle")
 * @why: QUIET, ASLEEP: the rig's verdict (its witness, what it saw)
 */
struct sleepwatch_result {
	enum sleepwatch_how how;
	int64_t quiet_since_ns;
	char state[16];
	struct rig_asleep why;
};

/*
 * Called once, from the loop, when the sleep is seen (@err 0), or when it
 * cannot be (@err -ENOTCONN: the rig has no target link). The watch is
 * stopped before the call.
 */
typedef void (*sleepwatch_fn)(void *ctx, int err,
			      const struct sleepwatch_result *r);

/**
 * struct sleepwatch - one watch, embedded in its owner (zeroed: stopped)
 * @active: it watches
 * @timer: the next look at the link
 * @obs: its rig observer (exit events)
 * @fn: its owner's callback
 * @ctx: for @fn
 */
struct sleepwatch {
	bool active;
	struct sched_timer timer;
	struct rig_observer obs;
	sleepwatch_fn fn;
	void *ctx;
};

/*
 * Watch for the target to go to sleep from now on; @fn tells. Return 0,
 * or -errno with sbrig_errmsg() (-ENOSPC: no room for another rig
 * observer). A running watch is started again.
 */
int sleepwatch_start(struct sleepwatch *w, sleepwatch_fn fn, void *ctx);
/* Stop watching (no-op if it is not); @fn is not called. */
void sleepwatch_stop(struct sleepwatch *w);

#endif /* SBRIGD_SLEEPWATCH_H */
