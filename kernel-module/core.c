// SPDX-License-Identifier: GPL-2.0
/*
 * suspend_block.ko core: suspend blockers on today's kernels.
 *
 * How suspend blockers map onto the kernel's wakeup machinery
 * -----------------------------------------------------------
 * The 2010 series made the suspend path itself ask suspend_is_blocked().
 * A module cannot patch the suspend path, but mainline grew an equivalent
 * since then: wakeup sources (drivers/base/power/wakeup.c). While any
 * wakeup source is active, reading /sys/power/wakeup_count blocks, and
 * once the count has been written back ("armed"), pm_wakeup_pending()
 * reports any new or in-progress wakeup event, which makes the freezer,
 * the device suspend phases and the s2idle loop abort the transition.
 *
 * So the module keeps its own blockers, lists and statistics exactly as
 * the seed does, and while the policy is "opportunistic" it mirrors "at
 * least one blocker is active" onto a single wakeup source named
 * "suspend_blockers". The opportunistic worker (policy.c) then suspends
 * with the same protocol as kernel/power/autosleep.c: read wakeup_count
 * (waits until no blocker *and no kernel wakeup source* is active), write
 * it back, pm_suspend(). A blocker activated at any later point aborts
 * the attempt through pm_wakeup_pending(), which sees our source's new
 * event once the count is armed. That alone is not enough: the count may
 * not be armed (wakeup_count unreadable), and a pm_system_wakeup() that
 * suspend_block() issues between PM_SUSPEND_PREPARE and the freezer is
 * cleared by the freezer's pm_wakeup_clear(). So an attempt also
 * remembers sb_current_event_num when it begins (sb_attempt_begin()),
 * and pmhooks.c aborts it at PM_SUSPEND_PREPARE, in its device's prepare
 * and in its suspend_noirq callback if any blocker was activated since,
 * even one released again at once; after that suspend_block() wakes the
 * system itself (pm_system_wakeup()), as mainline's wakeup interrupts do.
 *
 * In the "forced" policy nothing is mirrored: blockers are counted but do
 * not influence suspend at all, as in the seed.
 *
 * One wakeup source instead of one per blocker keeps suspend_blocker_init()
 * and suspend_blocker_destroy() callable in atomic context, as the seed's
 * were (its evdev glue calls them under a spinlock); registering a wakeup
 * source sleeps.
 *
 * Locks, outermost first: sb_policy_lock (policy.c, a mutex), then
 * suspend_blockers_lock (here), then our wakeup source's lock (inside
 * __pm_stay_awake()), then sb_ring_lock (events.c, a raw leaf lock that
 * also the tracepoint probes of kevents.c take). Nothing here waits for
 * or wakes an event-log reader, and no probe takes suspend_blockers_lock,
 * so an EPOLLWAKEUP reader or a driver's wakeup source can never come
 * back into it. suspend_blockers_lock is a spinlock_t, as a wakeup
 * source's own lock is: the API may be called wherever __pm_stay_awake()
 * may (any context, hard interrupts included; on PREEMPT_RT not inside a
 * raw spinlock section or a non-threaded interrupt handler).
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/device.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/pm_wakeup.h>
#include <linux/random.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include "sb_internal.h"

/*
 * suspend_blockers_lock protects the blocker list and, for every blocker,
 * its link, flags, cookie, id and stat; it also protects every static variable
 * below that is not said otherwise, our wakeup source's activity (the
 * mirror) and the marker line's state (marker.c): these change together
 * when the first blocker is activated and the last one released. It is
 * taken with interrupts disabled because suspend_block() and
 * suspend_unblock() may be called from hard interrupt handlers. It is held
 * for constant time: no operation walks the list under it (the statistics
 * table moves a cursor one blocker at a time, see stats.c). (Not
 * "sb_lock": fs/super.c has a lock of that name, which makes lockdep
 * reports confusing.)
 *
 * The seed kept an active and an inactive list, and on every block with
 * "main" inactive walked the active one to charge sleep_time. Here no
 * operation walks any list: sleep_time is read off a "sleep clock" (see
 * sb_sleep_clock_locked()), so block and unblock cost the same however
 * many blockers are registered or active, and one list and a count of
 * active blockers say the rest with fewer writes on the hot path.
 */
DEFINE_SPINLOCK(suspend_blockers_lock);
static LIST_HEAD(sb_blockers);
static unsigned int sb_active_count;
/* Incremented by every suspend_block(): did anything happen since? */
static unsigned int sb_current_event_num;
/* sb_current_event_num when the worker's attempt began. */
static unsigned int sb_attempt_event_num;
/*
 * The sleep clock: how long "main" has been inactive (a sleep state
 * requested in the opportunistic policy) since load, as of
 * sb_sleep_clock_since while it is inactive.
 */
static ktime_t sb_sleep_clock;
static ktime_t sb_sleep_clock_since;
/*
 * Set just before the platform enters a sleep state (pmhooks.c, lockless:
 * interrupts are off and only the boot CPU runs there); the first blocker
 * activated afterwards takes the wakeup and clears it under the lock.
 */
static bool sb_wait_for_wakeup;
/*
 * The last id given to a blocker (struct suspend_blocker's @id): 64 bits,
 * so it never wraps and an id is never reused while the module is loaded.
 */
static u64 sb_next_id;
/* A per-load secret: a live blocker's cookie is its address XOR this. */
static unsigned long sb_cookie_key;
/* Policy is opportunistic: mirror activity onto sb_ws. */
static bool sb_mirror;
/* The worker is attempting a suspend: suspend_is_blocked() is live. */
static bool sb_enabled;
/* Between PM_SUSPEND_PREPARE and PM_POST_SUSPEND. */
static bool sb_suspending;
/*
 * Active iff sb_mirror and a blocker is active, except while the clock is
 * frozen (see sb_mirror_sync_locked()); sb_ws_on says which it is.
 */
static struct wakeup_source *sb_ws;
static bool sb_ws_on;
/*
 * Called each time the last active blocker is released, under the lock:
 * the opportunistic worker's kick (policy.c), which main.c hands to
 * sb_core_init(). Set before the first blocker exists, never changed.
 */
static void (*sb_idle_notify)(void);

struct suspend_blocker sb_main_blocker;
struct suspend_blocker sb_unknown_wakeup;
struct suspend_blocker sb_deleted_blockers;

/*
 * Make our wakeup source's activity what it should be: active iff the
 * policy is opportunistic and a blocker is active. Mainline's wakeup
 * source calls read ktime_get(), which must not be called while
 * timekeeping is suspended: then nothing is done, and the resume of
 * timekeeping catches up (sb_set_clock_frozen()). Nothing is lost: past
 * our syscore callback, no check of the suspend remains to abort, and a
 * blocker activated there wakes the platform like any wakeup interrupt.
 */
static void sb_mirror_sync_locked(void)
{
	bool on = sb_mirror && sb_active_count;

	lockdep_assert_held(&suspend_blockers_lock);
	if (on == sb_ws_on || sb_clock_frozen())
		return;
	if (on)
		__pm_stay_awake(sb_ws);
	else
		__pm_relax(sb_ws);
	sb_ws_on = on;
}

/**
 * sb_set_clock_frozen() - timekeeping is about to be suspended, or resumed
 * @frozen:	true from our syscore suspend callback, false from resume.
 *
 * Context: syscore callbacks (interrupts off, one CPU).
 */
void sb_set_clock_frozen(bool frozen)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_clock_freeze(frozen);
	if (!frozen)
		sb_mirror_sync_locked();
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

static unsigned long sb_cookie(struct suspend_blocker *blocker)
{
	return (unsigned long)blocker ^ sb_cookie_key;
}

/*
 * The sleep clock at @now. A blocker's sleep_time is the sleep clock's
 * advance while the blocker was active: exactly the seed's charging of
 * every active blocker while "main" is inactive, without the walk.
 */
static ktime_t sb_sleep_clock_locked(ktime_t now)
{
	lockdep_assert_held(&suspend_blockers_lock);
	if (sb_main_blocker.flags & SBLK_ACTIVE)
		return sb_sleep_clock;
	return ktime_add(sb_sleep_clock, ktime_sub(now, sb_sleep_clock_since));
}

static void sb_first_active_locked(void)
{
	lockdep_assert_held(&suspend_blockers_lock);
	sb_mirror_sync_locked();
	sb_marker_set_locked(true);
}

static void sb_last_inactive_locked(void)
{
	lockdep_assert_held(&suspend_blockers_lock);
	sb_mirror_sync_locked();
	sb_marker_set_locked(false);
	if (sb_idle_notify)
		sb_idle_notify();
}

static void sb_stat_block_locked(struct suspend_blocker *blocker, ktime_t now)
{
	lockdep_assert_held(&suspend_blockers_lock);
	if (READ_ONCE(sb_wait_for_wakeup)) {
		if (sb_debug_mask & SB_DEBUG_WAKEUP)
			pr_info("wakeup suspend blocker: %s\n", blocker->name);
		WRITE_ONCE(sb_wait_for_wakeup, false);
		blocker->stat.wakeup_count++;
	}
	if (!(blocker->flags & SBLK_ACTIVE)) {
		blocker->stat.last_time = now;
		blocker->stat.sleep_clock = sb_sleep_clock_locked(now);
	}
}

static void sb_stat_unblock_locked(struct suspend_blocker *blocker,
				   ktime_t now)
{
	ktime_t duration;

	lockdep_assert_held(&suspend_blockers_lock);
	if (!(blocker->flags & SBLK_ACTIVE))
		return;
	blocker->stat.count++;
	duration = ktime_sub(now, blocker->stat.last_time);
	blocker->stat.total_time = ktime_add(blocker->stat.total_time, duration);
	if (ktime_after(duration, blocker->stat.max_time))
		blocker->stat.max_time = duration;
	blocker->stat.last_time = now;
	duration = ktime_sub(sb_sleep_clock_locked(now),
			     blocker->stat.sleep_clock);
	blocker->stat.prevent_suspend_time =
		ktime_add(blocker->stat.prevent_suspend_time, duration);
}

/*
 * "main" changes state at @now: the sleep clock stops while it is active
 * and runs while it is not.
 */
static void sb_main_changed_locked(bool active, ktime_t now)
{
	lockdep_assert_held(&suspend_blockers_lock);
	if (active)
		sb_sleep_clock = sb_sleep_clock_locked(now);
	else
		sb_sleep_clock_since = now;
}

static void sb_stat_destroy_locked(struct suspend_blocker *blocker)
{
	struct suspend_blocker *del = &sb_deleted_blockers;

	lockdep_assert_held(&suspend_blockers_lock);
	if (!blocker->stat.count)
		return;
	del->stat.count += blocker->stat.count;
	del->stat.total_time = ktime_add(del->stat.total_time,
					 blocker->stat.total_time);
	del->stat.prevent_suspend_time =
		ktime_add(del->stat.prevent_suspend_time,
			  blocker->stat.prevent_suspend_time);
	/* The seed sums max_time too: it bounds the worst single holder. */
	del->stat.max_time = ktime_add(del->stat.max_time,
				       blocker->stat.max_time);
}

/*
 * The seed's DEBUG_SUSPEND report when "main" is released. The only walk
 * of the list under the lock, and only with that debug bit set.
 */
static void sb_print_active_blockers_locked(void)
{
	struct suspend_blocker *pos;

	lockdep_assert_held(&suspend_blockers_lock);
	list_for_each_entry(pos, &sb_blockers, link)
		if (pos->flags & SBLK_ACTIVE)
			pr_info("active suspend blocker %s\n", pos->name);
}

/**
 * suspend_blocker_init() - initialise a suspend blocker
 * @blocker:	The suspend blocker to initialise.
 * @name:	The name shown in debugfs ``suspend_blockers`` and in the event
 *		log. It is not copied.
 *
 * The blocker starts inactive with zeroed statistics. @blocker and @name
 * must stay valid until suspend_blocker_destroy() has been called.
 * Initialising a blocker that is already initialised (and not destroyed
 * since) is a bug: it warns and leaves the blocker as it is.
 *
 * Context: any context; does not sleep. On PREEMPT_RT, where
 * __pm_stay_awake() may be called.
 */
void suspend_blocker_init(struct suspend_blocker *blocker, const char *name)
{
	unsigned long irqflags;
	bool live;

	if (WARN_ON(!name))
		name = "(null)";
	if (sb_debug_mask & SB_DEBUG_SUSPEND_BLOCKER)
		pr_info("%s name=%s\n", __func__, name);

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	/*
	 * Memory that was never initialised may have the flag set by
	 * chance: only a blocker with its cookie too is live.
	 */
	live = (blocker->flags & SBLK_INITIALIZED) &&
	       blocker->cookie == sb_cookie(blocker);
	if (!live) {
		memset(&blocker->stat, 0, sizeof(blocker->stat));
		blocker->name = name;
		blocker->name_len = strlen(name);
		blocker->flags = SBLK_INITIALIZED;
		blocker->cookie = sb_cookie(blocker);
		blocker->id = ++sb_next_id;
		list_add(&blocker->link, &sb_blockers);
	}
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	WARN(live, "%s: %s is already initialised\n", __func__, name);
}
EXPORT_SYMBOL(suspend_blocker_init);

/**
 * suspend_blocker_destroy() - destroy a suspend blocker
 * @blocker:	The suspend blocker to destroy.
 *
 * An active blocker is deactivated first (its running activation is
 * counted), then its statistics are folded into the
 * ``deleted_suspend_blockers`` entry. Destroying the last active blocker
 * lets opportunistic suspend proceed. Destroying an uninitialised blocker
 * is a bug and only warns.
 *
 * Context: any context; does not sleep. On PREEMPT_RT, where
 * __pm_stay_awake() may be called.
 */
void suspend_blocker_destroy(struct suspend_blocker *blocker)
{
	unsigned long irqflags;
	bool was_active;
	ktime_t now;

	if (WARN_ON(!(blocker->flags & SBLK_INITIALIZED)))
		return;
	if (sb_debug_mask & SB_DEBUG_SUSPEND_BLOCKER)
		pr_info("%s name=%s\n", __func__,
			blocker->name);

	now = sb_now();
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	was_active = blocker->flags & SBLK_ACTIVE;
	if (was_active) {
		sb_stat_unblock_locked(blocker, now);
		sb_event_add_irqs_off(SB_EV_UNBLOCK, now, blocker->name,
				      blocker->name_len, blocker->id);
	}
	sb_stat_destroy_locked(blocker);
	blocker->flags &= ~(SBLK_INITIALIZED | SBLK_ACTIVE);
	blocker->cookie = 0;
	list_del_init(&blocker->link);
	if (was_active && !--sb_active_count)
		sb_last_inactive_locked();
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}
EXPORT_SYMBOL(suspend_blocker_destroy);

/**
 * suspend_block() - block opportunistic suspend
 * @blocker:	The suspend blocker to activate.
 *
 * Activates @blocker. Calls do not nest: blocking an active blocker only
 * updates the wakeup statistics. If the opportunistic worker is suspending
 * the system, the suspend is aborted (unless the platform has already
 * entered the sleep state, in which case it wakes as usual).
 *
 * Context: any context, including hard interrupt handlers; on PREEMPT_RT
 * where __pm_stay_awake() may be called (not in raw-spinlock sections,
 * HRTIMER_MODE_*_HARD callbacks or IRQF_NO_THREAD handlers).
 */
void suspend_block(struct suspend_blocker *blocker)
{
	unsigned long irqflags;
	ktime_t now;

	if (WARN_ON(!(blocker->flags & SBLK_INITIALIZED)))
		return;

	now = sb_now();
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_stat_block_locked(blocker, now);
	if (!(blocker->flags & SBLK_ACTIVE)) {
		if (!sb_active_count++)
			sb_first_active_locked();
		if (blocker == &sb_main_blocker)
			sb_main_changed_locked(true, now);
		blocker->flags |= SBLK_ACTIVE;
		sb_event_add_irqs_off(SB_EV_BLOCK, now, blocker->name,
				      blocker->name_len, blocker->id);
		if (sb_enabled && sb_suspending)
			pm_system_wakeup();
	}
	if (sb_debug_mask & SB_DEBUG_SUSPEND_BLOCKER)
		pr_info("%s: %s\n", __func__, blocker->name);

	sb_current_event_num++;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}
EXPORT_SYMBOL(suspend_block);

/**
 * suspend_unblock() - allow opportunistic suspend again
 * @blocker:	The suspend blocker to deactivate.
 *
 * Deactivates @blocker; unblocking an inactive blocker does nothing. When
 * no other blocker is active, the opportunistic worker (if the policy is
 * opportunistic and a sleep state is requested) suspends the system.
 *
 * Context: any context, including hard interrupt handlers; on PREEMPT_RT
 * where __pm_stay_awake() may be called (not in raw-spinlock sections,
 * HRTIMER_MODE_*_HARD callbacks or IRQF_NO_THREAD handlers).
 */
void suspend_unblock(struct suspend_blocker *blocker)
{
	unsigned long irqflags;
	ktime_t now;

	if (WARN_ON(!(blocker->flags & SBLK_INITIALIZED)))
		return;

	now = sb_now();
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	if (sb_debug_mask & SB_DEBUG_SUSPEND_BLOCKER)
		pr_info("%s: %s\n", __func__, blocker->name);
	if (blocker->flags & SBLK_ACTIVE) {
		sb_stat_unblock_locked(blocker, now);
		blocker->flags &= ~SBLK_ACTIVE;
		if (blocker == &sb_main_blocker)
			sb_main_changed_locked(false, now);
		sb_event_add_irqs_off(SB_EV_UNBLOCK, now, blocker->name,
				      blocker->name_len, blocker->id);
		if (!--sb_active_count)
			sb_last_inactive_locked();
	}
	if (blocker == &sb_main_blocker && (sb_debug_mask & SB_DEBUG_SUSPEND))
		sb_print_active_blockers_locked();
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}
EXPORT_SYMBOL(suspend_unblock);

/**
 * suspend_blocker_is_active() - test whether a blocker is active
 * @blocker:	The suspend blocker to check.
 *
 * Context: any context.
 * Return: true if @blocker is active.
 */
bool suspend_blocker_is_active(struct suspend_blocker *blocker)
{
	WARN_ON(!(blocker->flags & SBLK_INITIALIZED));
	return !!(READ_ONCE(blocker->flags) & SBLK_ACTIVE);
}
EXPORT_SYMBOL(suspend_blocker_is_active);

/**
 * suspend_is_blocked() - should the suspend under way be aborted?
 *
 * For compatibility with code that calls it in forced suspends, this
 * returns false unless the opportunistic worker is suspending the system,
 * exactly as in the seed.
 *
 * Context: any context.
 * Return: true if the worker is suspending and a blocker is active.
 */
bool suspend_is_blocked(void)
{
	if (!READ_ONCE(sb_enabled))
		return false;
	return READ_ONCE(sb_active_count) > 0;
}
EXPORT_SYMBOL(suspend_is_blocked);

/* True if any blocker, "main" included, is active. */
bool sb_any_active(void)
{
	unsigned long irqflags;
	bool ret;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	ret = sb_active_count > 0;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	return ret;
}

/**
 * sb_own_wakeup_source() - is this our mirror's wakeup source?
 * @name:	The name a wakeup-source tracepoint reported.
 *
 * Compares the pointer, not the text: a driver's source may have the same
 * name. Valid while the core is initialised.
 *
 * Context: any context, also with suspend_blockers_lock held.
 * Return: true for the "suspend_blockers" source of sb_core_init().
 */
bool sb_own_wakeup_source(const char *name)
{
	return sb_ws && name == sb_ws->name;
}

unsigned int sb_event_num(void)
{
	return READ_ONCE(sb_current_event_num);
}

/**
 * sb_kernel_wakeup_events() - events signalled by the kernel's wakeup sources
 *
 * The sum of the event counts of every wakeup source except ours (whose
 * events are blocker activity, counted by sb_event_num()). Like
 * /sys/power/wakeup_count it changes whenever a driver, the RTC,
 * EPOLLWAKEUP or power_supply_changed() reports a wakeup event, but it is
 * read without waiting for events in progress. A source unregistered
 * meanwhile changes it too, which only makes a wakeup look explained.
 *
 * Context: process context.
 * Return: the sum, to compare with an earlier one.
 */
unsigned long sb_kernel_wakeup_events(void)
{
	struct wakeup_source *ws;
	unsigned long sum = 0;
	int idx;

	idx = wakeup_sources_read_lock();
	for_each_wakeup_source(ws)
		if (ws != sb_ws)
			sum += READ_ONCE(ws->event_count);
	wakeup_sources_read_unlock(idx);
	return sum;
}

/**
 * sb_note_enter_suspend() - the platform is about to enter the sleep state
 *
 * The next blocker activated gets the wakeup (its wake_count).
 *
 * Context: the machine_suspend tracepoint or a noirq callback: interrupts
 * off (hard-disabled on suspend-to-RAM), timekeeping perhaps suspended;
 * takes no lock.
 */
void sb_note_enter_suspend(void)
{
	WRITE_ONCE(sb_wait_for_wakeup, true);
}

/**
 * sb_attempt_begin() - the worker is about to try a suspend
 * @entry_num:	sb_event_num() read before the attempt's wakeup-count check.
 *
 * From now until sb_attempt_end(), suspend_is_blocked() is live and any
 * blocker activated since @entry_num aborts the attempt (pmhooks.c).
 *
 * Context: the worker.
 */
void sb_attempt_begin(unsigned int entry_num)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_attempt_event_num = entry_num;
	sb_enabled = true;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

/**
 * sb_attempt_end() - the worker's attempt is over
 *
 * Context: the worker.
 */
void sb_attempt_end(void)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_enabled = false;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

static bool sb_attempt_interrupted_locked(void)
{
	lockdep_assert_held(&suspend_blockers_lock);
	return sb_enabled && (sb_active_count ||
			      sb_current_event_num != sb_attempt_event_num);
}

/**
 * sb_attempt_interrupted() - must the worker's suspend be aborted?
 *
 * Context: any context.
 * Return: true if the worker is suspending and a blocker is active or was
 * activated since its attempt began (even if released again since).
 */
bool sb_attempt_interrupted(void)
{
	unsigned long irqflags;
	bool ret;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	ret = sb_attempt_interrupted_locked();
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	return ret;
}

/**
 * sb_attempt_enter() - log "enter" unless the attempt is interrupted
 * @state:	The sleep state's name, the record's argument.
 * @note:	Also sb_note_enter_suspend() (no machine_suspend probe).
 *
 * The check and the record are one step under suspend_blockers_lock, as
 * a blocker's activation and its "block" record are: a blocker activated
 * from an interrupt (a timer) while our noirq callback runs is logged
 * either before the check, which then aborts the attempt and no "enter"
 * is logged, or after "enter".
 *
 * Context: a noirq callback (interrupts on: timers still fire).
 * Return: true if "enter" was logged, false if the attempt must be
 * aborted (sb_attempt_interrupted()).
 */
bool sb_attempt_enter(const char *state, bool note)
{
	unsigned long irqflags;
	bool ok;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	ok = !sb_attempt_interrupted_locked();
	if (ok) {
		if (note)
			sb_note_enter_suspend();
		sb_event_add_irqs_off(SB_EV_ENTER, sb_now(), state,
				      strlen(state), 0);
	}
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	return ok;
}

void sb_set_suspend_in_progress(bool on)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_suspending = on;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

/**
 * sb_core_set_mirror() - start or stop mirroring blockers onto sb_ws
 * @on:	true for the opportunistic policy.
 *
 * Context: process context.
 */
void sb_core_set_mirror(bool on)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_mirror = on;
	sb_mirror_sync_locked();
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

/**
 * sb_stats_cursor_reset() - put a statistics cursor before the first blocker
 * @cursor:	A blocker-sized placeholder with SBLK_CURSOR set, linked
 *		(after a previous reset) or not.
 *
 * Cursors sit in the blocker list between reads of the debugfs table, so
 * each row costs one short lock hold whatever the number of blockers.
 *
 * Context: process context.
 */
void sb_stats_cursor_reset(struct suspend_blocker *cursor)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	if (!list_empty(&cursor->link))
		list_del(&cursor->link);
	list_add(&cursor->link, &sb_blockers);
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

/**
 * sb_stats_cursor_del() - take a statistics cursor off the list
 * @cursor:	The cursor (linked or not).
 *
 * Context: process context.
 */
void sb_stats_cursor_del(struct suspend_blocker *cursor)
{
	unsigned long irqflags;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	list_del_init(&cursor->link);
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
}

/**
 * sb_stats_cursor_next() - copy the next blocker's row, move the cursor past it
 * @cursor:	A linked cursor.
 * @row:	Filled with the row's values (the seed's arithmetic: an active
 *		blocker counts its running activation) and its name, if the
 *		name fits in @row->name (@row->cap bytes with the NUL).
 *
 * Blockers destroyed meanwhile are never seen; those initialised after the
 * cursor was reset are not either (they are added before it).
 *
 * Context: process context.
 * Return: 1 with a row, 0 at the end of the list (the cursor stays at the
 * end), or -ENOSPC with @row->name_len set and the cursor not moved: grow
 * @row->name and call again.
 */
int sb_stats_cursor_next(struct suspend_blocker *cursor,
			 struct sb_stats_row *row)
{
	struct suspend_blocker *b;
	unsigned long irqflags;
	ktime_t now;
	int ret = 1;

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	now = sb_now();
	b = cursor;
	do {
		if (list_is_last(&b->link, &sb_blockers)) {
			ret = 0;
			goto out;
		}
		b = list_next_entry(b, link);
	} while (b->flags & SBLK_CURSOR);

	row->name_len = b->name_len;
	if (b->name_len >= row->cap) {
		ret = -ENOSPC;
		goto out;
	}
	memcpy(row->name, b->name, b->name_len + 1);
	row->count = b->stat.count;
	row->wake_count = b->stat.wakeup_count;
	row->active_time = 0;
	row->total_time = b->stat.total_time;
	row->sleep_time = b->stat.prevent_suspend_time;
	row->max_time = b->stat.max_time;
	row->last_change = b->stat.last_time;
	if (b->flags & SBLK_ACTIVE) {
		ktime_t add_time = ktime_sub(now, b->stat.last_time);

		row->count++;
		row->active_time = add_time;
		row->total_time = ktime_add(row->total_time, add_time);
		row->sleep_time = ktime_add(row->sleep_time,
					    ktime_sub(sb_sleep_clock_locked(now),
						      b->stat.sleep_clock));
		if (ktime_after(add_time, row->max_time))
			row->max_time = add_time;
	}
	list_move(&cursor->link, &b->link);
out:
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	return ret;
}

/**
 * sb_core_init() - register the wakeup source, set up the core's blockers
 * @idle_notify: Called, with suspend_blockers_lock held and interrupts
 *		disabled, each time the last active blocker is released
 *		(the worker's kick, sb_worker_kick()); may be NULL.
 *
 * "main" is left active: no sleep state is requested yet.
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int sb_core_init(void (*idle_notify)(void))
{
	sb_idle_notify = idle_notify;
	sb_ws = wakeup_source_register(NULL, "suspend_blockers");
	if (!sb_ws)
		return -ENOMEM;

	sb_cookie_key = get_random_long();
	sb_sleep_clock_since = ktime_get();
	suspend_blocker_init(&sb_main_blocker, "main");
	suspend_block(&sb_main_blocker);
	suspend_blocker_init(&sb_unknown_wakeup, "unknown_wakeups");
	suspend_blocker_init(&sb_deleted_blockers, "deleted_suspend_blockers");
	return 0;
}

void sb_core_exit(void)
{
	sb_core_set_mirror(false);
	suspend_blocker_destroy(&sb_deleted_blockers);
	suspend_blocker_destroy(&sb_unknown_wakeup);
	suspend_blocker_destroy(&sb_main_blocker);
	WARN_ON(sb_active_count);
	WARN_ON(!list_empty(&sb_blockers));
	wakeup_source_unregister(sb_ws);
	sb_ws = NULL;
}
