// SPDX-License-Identifier: GPL-2.0
/*
 * sb_campaign.ko: takes a suspend blocker at a chosen point of the suspend
 * path, for the suspend-cycle campaign (tests/test_module_campaign.py).
 *
 * One cycle of the campaign: the test arms a hook, then releases the
 * blocker "sbc_hold" that kept the system up; the opportunistic worker of
 * suspend_block.ko starts an attempt; when the attempt reaches the hook,
 * the hook activates "sbc_hit", either in the hook's own context or from
 * an hrtimer (hard interrupt context without PREEMPT_RT) a given number
 * of microseconds later, and
 * either keeps it active ("persist") or releases it at once
 * ("transient"). Hooks:
 *
 * - any action of the suspend_resume tracepoint, at its begin or its end
 *   (suspend_enter, sync_filesystems, freeze_processes, dpm_prepare,
 *   dpm_suspend, dpm_suspend_late, dpm_suspend_noirq, machine_suspend,
 *   ...), the way the PM core traces them;
 * - PM_SUSPEND_PREPARE, in a notifier that runs before every other one
 *   ("pm_prepare_early") or after every other one ("pm_prepare_late");
 * - the prepare, suspend, suspend_late and suspend_noirq callbacks of a
 *   platform device of this module ("dev_prepare", ...), registered after
 *   suspend_block's own device: its prepare runs after suspend_block's,
 *   its suspend_noirq before suspend_block's;
 * - "kick": no hook; the hrtimer is started when the hold is released, so
 *   that the activation races the worker's wakeup_count read and write.
 *
 * The next PM_POST_SUSPEND after arming takes "sbc_hold" again (from the
 * notifier that runs first, which sees every attempt that reached
 * PM_SUSPEND_PREPARE, also one that a later notifier failed), so the
 * attempt that the hook interrupted, or the next one that really slept
 * and was woken by the test, ends the cycle with the system held up.
 *
 * The kernel log says what happened, for the test to follow on the
 * console while the guest's shell may be frozen or asleep:
 * "sb_campaign: rehold C" (the hold is back, cycle C is over),
 * "sb_campaign: hit C" (a kick's persistent activation),
 * "sb_campaign: user C" (a user-space client says it blocked), and on
 * suspend-to-idle "sb_campaign: idle begin|end C" around each
 * machine_suspend (the platform parks in between).
 *
 * debugfs sb_campaign/ctl, commands:
 *	arm C WHERE EDGE DELAY_US persist|transient
 *	kick C DELAY_US persist|transient	(releases the hold itself)
 *	release, hold, unhit			(sbc_hold, sbc_hit)
 *	user C					(see above)
 *	disarm
 * Reading it gives the state.
 */

#define pr_fmt(fmt) "sb_campaign: " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/suspend.h>
#include <linux/suspend_blocker.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <trace/events/power.h>

#define SBC_WHERE_LEN	32

enum sbc_mode { SBC_PERSIST, SBC_TRANSIENT };

static struct suspend_blocker sbc_hold;
static struct suspend_blocker sbc_hit;
static struct hrtimer sbc_timer;
static struct dentry *sbc_dir;
static struct platform_device *sbc_pdev;
static bool sbc_probe_registered;

/*
 * The armed hook. Written by ctl commands only while disarmed (sbc_armed
 * 0), read by the hooks after they have claimed it (sbc_armed 1 -> 0).
 */
static char sbc_where[SBC_WHERE_LEN];
static bool sbc_edge_begin;
static u64 sbc_delay_us;
static enum sbc_mode sbc_mode;
static unsigned int sbc_cycle;
static atomic_t sbc_armed = ATOMIC_INIT(0);
static atomic_t sbc_rehold = ATOMIC_INIT(0);
static atomic_t sbc_fired = ATOMIC_INIT(0);	/* hooks that fired */
static atomic_t sbc_hits = ATOMIC_INIT(0);	/* activations of sbc_hit */
static atomic_t sbc_prepares = ATOMIC_INIT(0);
static atomic_t sbc_posts = ATOMIC_INIT(0);
static bool sbc_kick_print;	/* the timer's activation says "hit C" */

static void sbc_hit_now(void)
{
	suspend_block(&sbc_hit);
	if (sbc_mode == SBC_TRANSIENT)
		suspend_unblock(&sbc_hit);
	atomic_inc(&sbc_hits);
}

static enum hrtimer_restart sbc_timer_fn(struct hrtimer *t)
{
	sbc_hit_now();
	if (sbc_kick_print && sbc_mode == SBC_PERSIST)
		pr_info("hit %u\n", sbc_cycle);
	return HRTIMER_NORESTART;
}

/* A hook was reached: fire if it is the armed one. Any context. */
static void sbc_hook(const char *where, bool begin)
{
	if (strcmp(where, sbc_where) || begin != sbc_edge_begin)
		return;
	if (atomic_cmpxchg(&sbc_armed, 1, 0) != 1)
		return;
	atomic_inc(&sbc_fired);
	if (sbc_delay_us)
		hrtimer_start(&sbc_timer, ns_to_ktime(sbc_delay_us * NSEC_PER_USEC),
			      HRTIMER_MODE_REL);
	else
		sbc_hit_now();
}

/* The tracepoint's value: an int, here the suspend_state_t of s2idle. */
#define SBC_VAL_S2IDLE	((__force int)PM_SUSPEND_TO_IDLE)

static void sbc_phase_probe(void *unused, const char *action, int val,
			    bool start)
{
	if (!strcmp(action, "machine_suspend") && val == SBC_VAL_S2IDLE)
		pr_info("idle %s %u\n", start ? "begin" : "end",
			READ_ONCE(sbc_cycle));
	if (atomic_read(&sbc_armed))
		sbc_hook(action, start);
}

static int sbc_pm_early(struct notifier_block *nb, unsigned long action,
			void *unused)
{
	if (action == PM_SUSPEND_PREPARE) {
		atomic_inc(&sbc_prepares);
		if (atomic_read(&sbc_armed))
			sbc_hook("pm_prepare_early", true);
	} else if (action == PM_POST_SUSPEND) {
		atomic_inc(&sbc_posts);
		if (atomic_xchg(&sbc_rehold, 0)) {
			suspend_block(&sbc_hold);
			pr_info("rehold %u\n", READ_ONCE(sbc_cycle));
		}
	}
	return NOTIFY_DONE;
}

static int sbc_pm_late(struct notifier_block *nb, unsigned long action,
		       void *unused)
{
	if (action == PM_SUSPEND_PREPARE && atomic_read(&sbc_armed))
		sbc_hook("pm_prepare_late", true);
	return NOTIFY_DONE;
}

static struct notifier_block sbc_nb_early = {
	.notifier_call = sbc_pm_early,
	.priority = INT_MAX,
};

static struct notifier_block sbc_nb_late = {
	.notifier_call = sbc_pm_late,
	.priority = INT_MIN,
};

static int sbc_dev_prepare(struct device *dev)
{
	sbc_hook("dev_prepare", true);
	return 0;
}

static int sbc_dev_suspend(struct device *dev)
{
	sbc_hook("dev_suspend", true);
	return 0;
}

static int sbc_dev_suspend_late(struct device *dev)
{
	sbc_hook("dev_suspend_late", true);
	return 0;
}

static int sbc_dev_suspend_noirq(struct device *dev)
{
	sbc_hook("dev_suspend_noirq", true);
	return 0;
}

static const struct dev_pm_ops sbc_pm_ops = {
	.prepare	= sbc_dev_prepare,
	.suspend	= sbc_dev_suspend,
	.suspend_late	= sbc_dev_suspend_late,
	.suspend_noirq	= sbc_dev_suspend_noirq,
};

static struct platform_driver sbc_pdrv = {
	.driver = {
		.name	= "sb_campaign",
		.pm	= &sbc_pm_ops,
	},
};

static int sbc_mode_parse(const char *s, enum sbc_mode *mode)
{
	if (!strcmp(s, "persist"))
		*mode = SBC_PERSIST;
	else if (!strcmp(s, "transient"))
		*mode = SBC_TRANSIENT;
	else
		return -EINVAL;
	return 0;
}

/* Stop a pending kick or delayed hit, disarm: no stale activation. */
static void sbc_disarm(void)
{
	atomic_set(&sbc_armed, 0);
	hrtimer_cancel(&sbc_timer);
}

static int sbc_arm(const char *buf)
{
	char where[SBC_WHERE_LEN], edge[8], mode[12];
	unsigned long long delay;
	unsigned int cycle;
	enum sbc_mode m;

	if (sscanf(buf, "%*s %u %31s %7s %llu %11s", &cycle, where, edge,
		   &delay, mode) != 5 || sbc_mode_parse(mode, &m) ||
	    (strcmp(edge, "begin") && strcmp(edge, "end")) || delay > 1000000)
		return -EINVAL;
	/* no hrtimer while timekeeping may be suspended (suspend-to-RAM) */
	if (delay && !strcmp(where, "machine_suspend"))
		return -EINVAL;
	sbc_disarm();
	strscpy(sbc_where, where, sizeof(sbc_where));
	sbc_edge_begin = !strcmp(edge, "begin");
	sbc_delay_us = delay;
	sbc_mode = m;
	sbc_kick_print = false;
	WRITE_ONCE(sbc_cycle, cycle);
	atomic_set(&sbc_rehold, 1);
	atomic_set(&sbc_armed, 1);
	return 0;
}

static int sbc_kick(const char *buf)
{
	unsigned long long delay;
	unsigned int cycle;
	char mode[12];
	enum sbc_mode m;

	if (sscanf(buf, "%*s %u %llu %11s", &cycle, &delay, mode) != 3 ||
	    sbc_mode_parse(mode, &m) || delay > 1000000)
		return -EINVAL;
	sbc_disarm();
	sbc_where[0] = '\0';
	sbc_mode = m;
	sbc_kick_print = true;
	WRITE_ONCE(sbc_cycle, cycle);
	atomic_set(&sbc_rehold, 1);
	suspend_unblock(&sbc_hold);
	hrtimer_start(&sbc_timer, ns_to_ktime(delay * NSEC_PER_USEC),
		      HRTIMER_MODE_REL);
	return 0;
}

static ssize_t sbc_ctl_write(struct file *f, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char buf[128], word[16];
	unsigned int cycle;
	int ret = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%15s", word) != 1)
		return -EINVAL;
	if (!strcmp(word, "arm")) {
		ret = sbc_arm(buf);
	} else if (!strcmp(word, "kick")) {
		ret = sbc_kick(buf);
	} else if (!strcmp(word, "disarm")) {
		sbc_disarm();
		atomic_set(&sbc_rehold, 0);
	} else if (!strcmp(word, "release")) {
		suspend_unblock(&sbc_hold);
	} else if (!strcmp(word, "hold")) {
		suspend_block(&sbc_hold);
	} else if (!strcmp(word, "unhit")) {
		suspend_unblock(&sbc_hit);
	} else if (!strcmp(word, "user")) {
		if (sscanf(buf, "%*s %u", &cycle) != 1)
			return -EINVAL;
		pr_info("user %u\n", cycle);
	} else {
		ret = -EINVAL;
	}
	return ret ? ret : len;
}

static int sbc_ctl_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "cycle %u\narmed %d\nrehold %d\nfired %d\nhits %d\nhold %d\nhit %d\nprepares %d\nposts %d\n",
		   READ_ONCE(sbc_cycle), atomic_read(&sbc_armed),
		   atomic_read(&sbc_rehold), atomic_read(&sbc_fired),
		   atomic_read(&sbc_hits), suspend_blocker_is_active(&sbc_hold),
		   suspend_blocker_is_active(&sbc_hit),
		   atomic_read(&sbc_prepares), atomic_read(&sbc_posts));
	return 0;
}

static int sbc_ctl_open(struct inode *inode, struct file *file)
{
	return single_open(file, sbc_ctl_show, NULL);
}

static const struct file_operations sbc_ctl_fops = {
	.owner		= THIS_MODULE,
	.open		= sbc_ctl_open,
	.read		= seq_read,
	.write		= sbc_ctl_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static int __init sbc_init(void)
{
	int ret;

	suspend_blocker_init(&sbc_hold, "sbc_hold");
	suspend_blocker_init(&sbc_hit, "sbc_hit");
	suspend_block(&sbc_hold);
	hrtimer_init(&sbc_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	sbc_timer.function = sbc_timer_fn;

	ret = platform_driver_register(&sbc_pdrv);
	if (ret)
		goto destroy;
	sbc_pdev = platform_device_register_simple("sb_campaign",
						   PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(sbc_pdev)) {
		ret = PTR_ERR(sbc_pdev);
		goto unregister_driver;
	}
	ret = register_pm_notifier(&sbc_nb_early);
	if (ret)
		goto unregister_device;
	ret = register_pm_notifier(&sbc_nb_late);
	if (ret)
		goto unregister_early;
	ret = register_trace_suspend_resume(sbc_phase_probe, NULL);
	if (ret)
		pr_warn("no suspend_resume tracepoint (%d): phase hooks never fire\n",
			ret);
	sbc_probe_registered = !ret;
	sbc_dir = debugfs_create_dir("sb_campaign", NULL);
	debugfs_create_file("ctl", 0600, sbc_dir, NULL, &sbc_ctl_fops);
	return 0;

unregister_early:
	unregister_pm_notifier(&sbc_nb_early);
unregister_device:
	platform_device_unregister(sbc_pdev);
unregister_driver:
	platform_driver_unregister(&sbc_pdrv);
destroy:
	suspend_blocker_destroy(&sbc_hit);
	suspend_blocker_destroy(&sbc_hold);
	return ret;
}

static void __exit sbc_exit(void)
{
	debugfs_remove_recursive(sbc_dir);
	if (sbc_probe_registered) {
		unregister_trace_suspend_resume(sbc_phase_probe, NULL);
		tracepoint_synchronize_unregister();
	}
	unregister_pm_notifier(&sbc_nb_late);
	unregister_pm_notifier(&sbc_nb_early);
	platform_device_unregister(sbc_pdev);
	platform_driver_unregister(&sbc_pdrv);
	sbc_disarm();
	suspend_blocker_destroy(&sbc_hit);
	suspend_blocker_destroy(&sbc_hold);
}

module_init(sbc_init);
module_exit(sbc_exit);
MODULE_DESCRIPTION("Blocks suspend at a chosen point of the suspend path (tests only)");
MODULE_LICENSE("GPL");
