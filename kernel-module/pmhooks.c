// SPDX-License-Identifier: GPL-2.0
/*
 * Where a suspend really is: a PM notifier brackets the whole transition,
 * the noirq callbacks of a small platform device mark (for the event log)
 * the moment the platform enters and leaves the sleep state, and the
 * "machine_suspend" trace event marks (for the wake_count statistic) the
 * moment it really enters it.
 *
 * The seed patched suspend_enter() to note "about to enter" just before
 * suspend_ops->enter() and to skip it when a blocker was active. A module
 * gets closest with a device's suspend_noirq callback: it runs for s2idle
 * and suspend-to-RAM alike, after all ordinary device callbacks. Our
 * device registers last, so its suspend_noirq is among the first noirq
 * callbacks and its resume_noirq among the last; the gap to the real
 * enter is the other devices' noirq callbacks.
 *
 * Where the worker's attempt is aborted: a blocker activated since the
 * attempt began (sb_attempt_interrupted(), even one released again) fails
 * the PM_SUSPEND_PREPARE notifier with -EBUSY, before any task is frozen.
 * Later, our device's prepare callback (after the freezer, whose
 * pm_wakeup_clear() forgets any pm_system_wakeup() issued before it) and
 * its suspend_noirq callback check again; there the callback reports a
 * wakeup (pm_system_wakeup()) and succeeds, so the PM core aborts as for
 * any wakeup, without blaming our device for a failed suspend.
 *
 * A suspend can still be aborted after our noirq callback (another
 * device, syscore, a wakeup, pm_test). So "about to enter" is noted where
 * the seed noted it: the suspend_resume trace event "machine_suspend"
 * (start), which the PM core emits right before suspend_ops->enter() and
 * when s2idle parks the CPUs. Only without tracepoints does the noirq
 * callback note it.
 *
 * Our syscore callbacks bracket the stretch of suspend-to-RAM in which
 * timekeeping may be suspended (ours run before timekeeping's suspend and
 * after its resume), so sb_now() reads a clock that is safe there.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/platform_device.h>
#include <linux/string.h>
#include <linux/suspend.h>
#include <linux/syscore_ops.h>
#include <linux/tracepoint.h>
#include <trace/events/power.h>
#include "sb_internal.h"

static struct platform_device *sb_pdev;
/* The machine_suspend probe is registered (set at init only). */
static bool sb_enter_probe;
/*
 * Our suspend_noirq logged "enter", so resume_noirq logs "exit". Only the
 * two noirq callbacks use it, and the PM core runs them one at a time.
 */
static bool sb_enter_logged;

static int sb_pm_notify(struct notifier_block *nb, unsigned long action,
			void *unused)
{
	switch (action) {
	case PM_SUSPEND_PREPARE:
		/* Failing here, we get no PM_POST_SUSPEND: not in progress. */
		if (sb_attempt_interrupted()) {
			if (sb_debug_mask & SB_DEBUG_SUSPEND)
				pr_info("suspend blocked before freezing\n");
			return notifier_from_errno(-EBUSY);
		}
		sb_set_suspend_in_progress(true);
		break;
	case PM_POST_SUSPEND:
		sb_set_suspend_in_progress(false);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block sb_pm_nb = {
	.notifier_call = sb_pm_notify,
};

/*
 * The platform is about to enter the sleep state (irqs off, and for
 * suspend-to-RAM timekeeping already suspended: no clock reads here).
 */
static void sb_machine_suspend_probe(void *unused, const char *action,
				     int val, bool start)
{
	if (start && !strcmp(action, "machine_suspend"))
		sb_note_enter_suspend();
}

/*
 * After the freezer: an abort reported before it was forgotten, so ask
 * again. A wakeup, not a device failure.
 */
static int sb_prepare(struct device *dev)
{
	if (sb_attempt_interrupted()) {
		if (sb_debug_mask & SB_DEBUG_SUSPEND)
			pr_info("suspend blocked in prepare phase\n");
		pm_system_wakeup();
	}
	return 0;
}

static int sb_suspend_noirq(struct device *dev)
{
	const char *state = sb_state_name(pm_suspend_target_state);

	/* checked and logged at once: a timer's block is on one side */
	sb_enter_logged = sb_attempt_enter(state, !sb_enter_probe);
	if (!sb_enter_logged) {
		if (sb_debug_mask & SB_DEBUG_SUSPEND)
			pr_info("suspend blocked in noirq phase\n");
		/* A wakeup, not a device failure (suspend_stats, the log). */
		pm_system_wakeup();
	}
	return 0;
}

static int sb_resume_noirq(struct device *dev)
{
	sb_events_resync_clock();
	if (sb_enter_logged)
		sb_event(SB_EV_EXIT, sb_state_name(pm_suspend_target_state));
	sb_enter_logged = false;
	return 0;
}

/* Suspend-to-RAM: runs right before timekeeping is suspended. */
static int sb_syscore_suspend(void)
{
	sb_set_clock_frozen(true);
	return 0;
}

/* Suspend-to-RAM: runs right after timekeeping has resumed. */
static void sb_syscore_resume(void)
{
	sb_set_clock_frozen(false);
	sb_events_resync_clock();
}

static struct syscore_ops sb_syscore_ops = {
	.suspend = sb_syscore_suspend,
	.resume = sb_syscore_resume,
};

static const struct dev_pm_ops sb_pm_ops = {
	.prepare	= sb_prepare,
	.suspend_noirq	= sb_suspend_noirq,
	.resume_noirq	= sb_resume_noirq,
};

static struct platform_driver sb_pdrv = {
	.driver = {
		.name	= "suspend_block",
		.pm	= &sb_pm_ops,
	},
};

int sb_pmhooks_init(void)
{
	int ret;

	ret = platform_driver_register(&sb_pdrv);
	if (ret)
		return ret;
	sb_pdev = platform_device_register_simple("suspend_block",
						  PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(sb_pdev)) {
		ret = PTR_ERR(sb_pdev);
		goto unregister_driver;
	}
	ret = register_pm_notifier(&sb_pm_nb);
	if (ret)
		goto unregister_device;
	register_syscore_ops(&sb_syscore_ops);
	ret = register_trace_suspend_resume(sb_machine_suspend_probe, NULL);
	if (ret)
		pr_warn("no suspend_resume tracepoint (%d): wake_count is noted in the noirq phase\n",
			ret);
	sb_enter_probe = !ret;
	return 0;

unregister_device:
	platform_device_unregister(sb_pdev);
unregister_driver:
	platform_driver_unregister(&sb_pdrv);
	return ret;
}

void sb_pmhooks_exit(void)
{
	if (sb_enter_probe) {
		unregister_trace_suspend_resume(sb_machine_suspend_probe, NULL);
		tracepoint_synchronize_unregister();
	}
	unregister_syscore_ops(&sb_syscore_ops);
	unregister_pm_notifier(&sb_pm_nb);
	platform_device_unregister(sb_pdev);
	platform_driver_unregister(&sb_pdrv);
}
