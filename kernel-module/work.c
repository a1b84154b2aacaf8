// SPDX-License-Identifier: GPL-2.0
/*
 * Suspend-blocking work: a work item that blocks suspend while it is
 * queued or running, as in the seed's "PM: Add suspend blocking work".
 */

#include <linux/module.h>
#include <linux/workqueue.h>
#include "sb_internal.h"

static void sb_work_complete(struct suspend_blocking_work *work)
{
	unsigned long flags;

	spin_lock_irqsave(&work->lock, flags);
	if (!WARN_ON(!work->active) && !--work->active)
		suspend_unblock(&work->suspend_blocker);
	spin_unlock_irqrestore(&work->lock, flags);
}

static void sb_work_func(struct work_struct *work)
{
	struct suspend_blocking_work *sbwork = to_suspend_blocking_work(work);

	sbwork->func(work);
	sb_work_complete(sbwork);
}

/**
 * suspend_blocking_work_init() - initialise suspend-blocking work
 * @work:	The work item.
 * @func:	The callback; it receives &@work->work.
 * @name:	Name of the work's suspend blocker; not copied.
 *
 * Context: any context.
 */
void suspend_blocking_work_init(struct suspend_blocking_work *work,
				work_func_t func, const char *name)
{
	INIT_WORK(&work->work, sb_work_func);
	suspend_blocker_init(&work->suspend_blocker, name);
	work->func = func;
	spin_lock_init(&work->lock);
	work->active = 0;
}
EXPORT_SYMBOL_GPL(suspend_blocking_work_init);

/**
 * cancel_suspend_blocking_work_sync() - cancel work and wait for it
 * @work:	The work item.
 *
 * If the work was pending, it is cancelled and stops blocking suspend; if
 * it was running, this waits for the callback to finish.
 *
 * Context: process context; sleeps.
 * Return: true if the work was pending.
 */
int cancel_suspend_blocking_work_sync(struct suspend_blocking_work *work)
{
	int ret = cancel_work_sync(&work->work);

	if (ret)
		sb_work_complete(work);
	return ret;
}
EXPORT_SYMBOL_GPL(cancel_suspend_blocking_work_sync);

/**
 * suspend_blocking_work_destroy() - cancel work and destroy its blocker
 * @work:	The work item.
 *
 * If the work was ever queued on more than one workqueue, all but the last
 * must have been flushed before this is called.
 *
 * Context: process context; sleeps.
 */
void suspend_blocking_work_destroy(struct suspend_blocking_work *work)
{
	cancel_suspend_blocking_work_sync(work);
	WARN_ON(work->active);
	suspend_blocker_destroy(&work->suspend_blocker);
}
EXPORT_SYMBOL_GPL(suspend_blocking_work_destroy);

/**
 * queue_suspend_blocking_work() - queue work that blocks suspend
 * @wq:		The workqueue.
 * @work:	The work item.
 *
 * The work's blocker is activated now and released when the callback has
 * returned (or the work is cancelled).
 *
 * Context: any context.
 * Return: false if @work was already queued, true otherwise.
 */
int queue_suspend_blocking_work(struct workqueue_struct *wq,
				struct suspend_blocking_work *work)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&work->lock, flags);
	suspend_block(&work->suspend_blocker);
	ret = queue_work(wq, &work->work);
	if (ret)
		work->active++;
	spin_unlock_irqrestore(&work->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(queue_suspend_blocking_work);

/**
 * schedule_suspend_blocking_work() - queue work on the system workqueue
 * @work:	The work item.
 *
 * Context: any context.
 * Return: false if @work was already queued, true otherwise.
 */
int schedule_suspend_blocking_work(struct suspend_blocking_work *work)
{
	return queue_suspend_blocking_work(system_wq, work);
}
EXPORT_SYMBOL_GPL(schedule_suspend_blocking_work);
