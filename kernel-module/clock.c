// SPDX-License-Identifier: GPL-2.0
/*
 * The module's clock: CLOCK_MONOTONIC in any context, also while
 * timekeeping is suspended.
 *
 * Below the event log and the core, which both stamp what they record
 * with sb_now(); pmhooks.c says when timekeeping stops and resumes,
 * through the core (sb_set_clock_frozen()), which keeps its wakeup
 * source from reading the clock meanwhile.
 */

#include <linux/compiler.h>
#include <linux/ktime.h>
#include "sb_internal.h"

/*
 * Timekeeping may be suspended (between our syscore suspend and resume
 * callbacks): ktime_get() must not be called. Written only by
 * sb_clock_freeze(); read without a lock.
 */
static bool sb_clock_is_frozen;

/**
 * sb_now() - CLOCK_MONOTONIC now, in any context
 *
 * ktime_get() warns while timekeeping is suspended (suspend-to-RAM runs
 * probes and syscore callbacks then, and drivers may block from them);
 * there the NMI-safe fast clock, which stands still until timekeeping
 * resumes, is read instead.
 *
 * Context: any context.
 * Return: the time.
 */
ktime_t sb_now(void)
{
	if (unlikely(READ_ONCE(sb_clock_is_frozen)))
		return ns_to_ktime(ktime_get_mono_fast_ns());
	return ktime_get();
}

/**
 * sb_clock_freeze() - timekeeping is about to be suspended, or resumed
 * @frozen:	true from our syscore suspend callback, false from resume.
 *
 * The core calls it with suspend_blockers_lock held (sb_set_clock_frozen()),
 * so that its wakeup source sees the change at once.
 *
 * Context: syscore callbacks (interrupts off, one CPU).
 */
void sb_clock_freeze(bool frozen)
{
	WRITE_ONCE(sb_clock_is_frozen, frozen);
}

/**
 * sb_clock_frozen() - is timekeeping suspended?
 *
 * Context: any context.
 * Return: true between sb_clock_freeze(true) and sb_clock_freeze(false).
 */
bool sb_clock_frozen(void)
{
	return READ_ONCE(sb_clock_is_frozen);
}
