/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Suspend blockers: the in-kernel API of suspend_block.ko.
 *
 * This is the API of the 2010 "suspend block api" series (version 5),
 * provided by a loadable module for current kernels. A module that uses it
 * depends on suspend_block.ko (modpost resolves the symbols from its
 * Module.symvers).
 */
#ifndef _LINUX_SUSPEND_BLOCKER_H
#define _LINUX_SUSPEND_BLOCKER_H

#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

/**
 * struct suspend_blocker - prevents opportunistic suspend while active
 * @link:	Entry in the module's list of blockers (protected by the
 *		module's list lock).
 * @flags:	Initialized, active and stats state (SB_* bits, private).
 * @cookie:	Set while initialised: tells a live blocker from memory
 *		that only happens to have the initialised flag set.
 * @name:	Name shown in debugfs and the event log; not copied, so it
 *		must stay valid until suspend_blocker_destroy().
 * @name_len:	strlen(@name), cached for the event log.
 * @id:		The object's number in the event log's ``block``/``unblock``
 *		records, given by suspend_blocker_init(): from 1 at module
 *		load, never reused while the module stays loaded, so that two
 *		blockers of one name can be told apart.
 * @stat:	Statistics, reported in debugfs ``suspend_blockers``:
 * @stat.count:		times the blocker was deactivated;
 * @stat.wakeup_count:	times it was the first blocker activated after a
 *			resume;
 * @stat.total_time:	time it has been active;
 * @stat.prevent_suspend_time: time it was active while suspend was
 *			requested (the ``sleep_time`` column);
 * @stat.max_time:	longest continuous activation;
 * @stat.last_time:	CLOCK_MONOTONIC time of the last state change;
 * @stat.sleep_clock:	the module's sleep clock (time a sleep state has
 *			been requested) when it was last activated.
 *
 * Initialise with suspend_blocker_init(); all fields are private to the
 * module.
 */
struct suspend_blocker {
	struct list_head link;
	unsigned int flags;
	unsigned long cookie;
	const char *name;
	unsigned int name_len;
	u64 id;
	struct {
		unsigned int count;
		unsigned int wakeup_count;
		ktime_t total_time;
		ktime_t prevent_suspend_time;
		ktime_t max_time;
		ktime_t last_time;
		ktime_t sleep_clock;
	} stat;
};

/**
 * struct suspend_blocking_work - work that blocks suspend while pending or
 *	running
 * @work:		The work item queued on a workqueue.
 * @suspend_blocker:	Held while @active is non-zero.
 * @func:		The caller's callback.
 * @lock:		Protects @active and the block/unblock decisions.
 * @active:		Number of queued or running instances.
 *
 * Initialise with suspend_blocking_work_init().
 */
struct suspend_blocking_work {
	struct work_struct work;
	struct suspend_blocker suspend_blocker;
	work_func_t func;
	spinlock_t lock;	/* protects active */
	int active;
};

static inline struct suspend_blocking_work *
to_suspend_blocking_work(struct work_struct *work)
{
	return container_of(work, struct suspend_blocking_work, work);
}

void suspend_blocker_init(struct suspend_blocker *blocker, const char *name);
void suspend_blocker_destroy(struct suspend_blocker *blocker);
void suspend_block(struct suspend_blocker *blocker);
void suspend_unblock(struct suspend_blocker *blocker);
bool suspend_blocker_is_active(struct suspend_blocker *blocker);
bool suspend_is_blocked(void);

void suspend_blocking_work_init(struct suspend_blocking_work *work,
				work_func_t func, const char *name);
void suspend_blocking_work_destroy(struct suspend_blocking_work *work);
int queue_suspend_blocking_work(struct workqueue_struct *wq,
				struct suspend_blocking_work *work);
int schedule_suspend_blocking_work(struct suspend_blocking_work *work);
int cancel_suspend_blocking_work_sync(struct suspend_blocking_work *work);

#endif /* _LINUX_SUSPEND_BLOCKER_H */
