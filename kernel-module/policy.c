// SPDX-License-Identifier: GPL-2.0
/*
 * Policy, requested state and the opportunistic suspend worker.
 *
 * The seed added /sys/power/policy and changed /sys/power/state. A module
 * cannot add files to /sys/power (power_kobj is not exported), so the two
 * live in /sys/kernel/suspend_block/:
 *
 *	seed				this module
 *	/sys/power/policy		/sys/kernel/suspend_block/policy
 *	/sys/power/state (opportunistic) /sys/kernel/suspend_block/state
 *	-				/sys/kernel/suspend_block/requested
 *
 * /sys/power/state itself is left exactly as mainline has it. In the
 * forced policy our state file is a pass-through to it. In the
 * opportunistic policy, writing a sleep state to our state file returns at
 * once and the worker below enters that state whenever no blocker and no
 * kernel wakeup source is active, again after every wakeup; writing "on"
 * activates the "main" blocker, which stops it. Leaving the opportunistic
 * policy requests "on" first, as the seed does.
 *
 * The worker follows kernel/power/autosleep.c: it reads
 * /sys/power/wakeup_count, which blocks until no wakeup event is in
 * progress, writes the value back to arm the wakeup-event check, then
 * calls pm_suspend(). It goes through the sysfs files because
 * pm_get_wakeup_count() and pm_save_wakeup_count() are not exported.
 * When pm_suspend() returns and no blocker was activated meanwhile, and
 * for a failed attempt no kernel wakeup source reported an event either
 * (autosleep compares the wakeup count the same way), the wakeup is
 * "unknown": the seed's unknown_wakeups blocker is activated and
 * released. While suspend keeps failing for no known reason, or the
 * wakeup_count write keeps failing, the worker backs off
 * (SB_BACKOFF_MIN_MS doubling to SB_BACKOFF_MAX_MS; a kick ends a wait
 * early). The kernel's own autosleep would fight with us: the
 * opportunistic policy is refused while it is on.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/kthread.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/suspend.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include "sb_internal.h"

#define SB_SYS_STATE		"/sys/power/state"
#define SB_SYS_MEM_SLEEP	"/sys/power/mem_sleep"
#define SB_SYS_WAKEUP_COUNT	"/sys/power/wakeup_count"
#define SB_SYS_AUTOSLEEP	"/sys/power/autosleep"
#define SB_STATE_LEN		16
#define SB_BACKOFF_MIN_MS	10
#define SB_BACKOFF_MAX_MS	1000

enum sb_policy {
	SB_POLICY_FORCED,
	SB_POLICY_OPPORTUNISTIC,
};

static const char * const sb_policy_names[] = {
	[SB_POLICY_FORCED]		= "forced",
	[SB_POLICY_OPPORTUNISTIC]	= "opportunistic",
};

/* What the opportunistic policy accepts: "on", then the sleep states. */
static const char * const sb_request_names[] = {
	"on", "freeze", "standby", "mem",
};

/*
 * sb_policy_lock protects sb_policy (written only under it; the worker and
 * sysfs readers read it with READ_ONCE), sb_requested and sb_armed, and
 * serialises policy and state changes.
 */
static DEFINE_MUTEX(sb_policy_lock);
static int sb_policy = SB_POLICY_FORCED;
static char sb_requested[SB_STATE_LEN] = "mem";

static struct kobject *sb_kobj;
static struct task_struct *sb_worker_task;
static DECLARE_WAIT_QUEUE_HEAD(sb_worker_wait);
/* Bumped by every kick: lets the worker's back-off end early. */
static atomic_t sb_kick_gen = ATOMIC_INIT(0);
/* The worker armed the wakeup-count check. */
static bool sb_armed;

/*
 * How long unknown_wakeups stays active after a wakeup no blocker claimed.
 * Not in the seed: see "unknown_wakeup_hold_ms" in
 * Documentation/suspend-block.rst.
 */
static unsigned int sb_unknown_wakeup_hold_ms;
module_param_named(unknown_wakeup_hold_ms, sb_unknown_wakeup_hold_ms, uint,
		   0644);
MODULE_PARM_DESC(unknown_wakeup_hold_ms,
		 "ms to keep unknown_wakeups active after a wakeup no blocker claimed (0: release at once, as the seed)");

/**
 * sb_worker_kick() - make the worker re-evaluate
 *
 * Context: any context.
 */
void sb_worker_kick(void)
{
	atomic_inc(&sb_kick_gen);
	wake_up(&sb_worker_wait);
}

/* Also interrupt a worker blocked reading wakeup_count. */
static void sb_worker_interrupt(void)
{
	sb_worker_kick();
	if (sb_worker_task)
		send_sig(SIGUSR1, sb_worker_task, 1);
}

/**
 * sb_state_name() - the kernel's name for a sleep state
 * @state:	A suspend_state_t.
 *
 * Return: "s2idle", "shallow" or "deep" (the /sys/power/mem_sleep names),
 * "on", or "unknown".
 */
const char *sb_state_name(suspend_state_t state)
{
	switch (state) {
	case PM_SUSPEND_ON:
		return "on";
	case PM_SUSPEND_TO_IDLE:
		return "s2idle";
	case PM_SUSPEND_STANDBY:
		return "shallow";
	case PM_SUSPEND_MEM:
		return "deep";
	default:
		return "unknown";
	}
}

static ssize_t sb_file_read(const char *path, char *buf, size_t size)
{
	struct file *file;
	loff_t pos = 0;
	ssize_t n;

	file = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(file))
		return PTR_ERR(file);
	n = kernel_read(file, buf, size - 1, &pos);
	filp_close(file, NULL);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static ssize_t sb_file_write(const char *path, const char *buf, size_t len)
{
	struct file *file;
	loff_t pos = 0;
	ssize_t n;

	file = filp_open(path, O_WRONLY, 0);
	if (IS_ERR(file))
		return PTR_ERR(file);
	n = kernel_write(file, buf, len, &pos);
	filp_close(file, NULL);
	return n;
}

/* Is @name (a word of /sys/power/state) currently available? */
static bool sb_state_available(const char *name)
{
	char buf[64], *p = buf, *tok;

	if (sb_file_read(SB_SYS_STATE, buf, sizeof(buf)) <= 0)
		return false;
	while ((tok = strsep(&p, "\n ")))
		if (*tok && !strcmp(tok, name))
			return true;
	return false;
}

/* Map a requested state name to a suspend_state_t, as mainline does. */
static int sb_resolve_state(const char *name, suspend_state_t *state)
{
	char buf[64], *open, *close;

	if (!strcmp(name, "freeze")) {
		*state = PM_SUSPEND_TO_IDLE;
		return 0;
	}
	if (!strcmp(name, "standby")) {
		*state = PM_SUSPEND_STANDBY;
		return 0;
	}
	if (strcmp(name, "mem"))
		return -EINVAL;
	/* "mem" means whatever /sys/power/mem_sleep selects. */
	*state = PM_SUSPEND_MEM;
	if (sb_file_read(SB_SYS_MEM_SLEEP, buf, sizeof(buf)) <= 0)
		return 0;
	open = strchr(buf, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close)
		return 0;
	*close = '\0';
	if (!strcmp(open + 1, "s2idle"))
		*state = PM_SUSPEND_TO_IDLE;
	else if (!strcmp(open + 1, "shallow"))
		*state = PM_SUSPEND_STANDBY;
	return 0;
}

static int sb_wakeup_count_read(unsigned int *count)
{
	char buf[24];
	ssize_t n;

	n = sb_file_read(SB_SYS_WAKEUP_COUNT, buf, sizeof(buf));
	if (n < 0)
		return n;
	return kstrtouint(strim(buf), 10, count);
}

/*
 * Write @count back to arm the wakeup-event check. Returns 0 or the
 * write's error: -EINVAL if a wakeup event came in since the read (or one
 * is in progress), -EBUSY while the kernel's autosleep is on.
 * Context: sb_policy_lock held.
 */
static int sb_wakeup_count_arm(unsigned int count)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", count);
	ssize_t n;

	lockdep_assert_held(&sb_policy_lock);
	n = sb_file_write(SB_SYS_WAKEUP_COUNT, buf, len);
	sb_armed = n == len;
	if (n < 0)
		return n;
	return sb_armed ? 0 : -EIO;
}

/*
 * Is the kernel's own opportunistic sleep (CONFIG_PM_AUTOSLEEP) on? Its
 * state goes to @buf ("off" or a state; empty without the file).
 */
static bool sb_autosleep_active(char *buf, size_t size)
{
	if (sb_file_read(SB_SYS_AUTOSLEEP, buf, size) <= 0) {
		buf[0] = '\0';
		return false;
	}
	strim(buf);
	return *buf && strcmp(buf, "off");
}

/*
 * Turn the wakeup-event check off again so that a forced suspend is not
 * aborted by wakeup sources because of an arming we did: saving a count
 * that can never match clears events_check_enabled.
 * Context: sb_policy_lock held.
 */
static void sb_wakeup_count_disarm(void)
{
	lockdep_assert_held(&sb_policy_lock);
	if (!sb_armed)
		return;
	sb_file_write(SB_SYS_WAKEUP_COUNT, "4294967295", 10);
	sb_armed = false;
}

static bool sb_should_try(void)
{
	return READ_ONCE(sb_policy) == SB_POLICY_OPPORTUNISTIC &&
	       !sb_any_active();
}

/* Log the policy and requested state. Context: sb_policy_lock held. */
static void sb_policy_event_locked(void)
{
	char buf[40];

	lockdep_assert_held(&sb_policy_lock);
	snprintf(buf, sizeof(buf), "%s %s", sb_policy_names[sb_policy],
		 sb_requested);
	sb_event(SB_EV_POLICY, buf);
}

/* Context: sb_policy_lock held. */
static void sb_request_locked(const char *name)
{
	lockdep_assert_held(&sb_policy_lock);
	if (sb_debug_mask & SB_DEBUG_USER_STATE)
		pr_info("request_suspend_state: %s -> %s\n", sb_requested,
			name);
	strscpy(sb_requested, name, sizeof(sb_requested));
	if (!strcmp(name, "on"))
		suspend_block(&sb_main_blocker);
	else
		suspend_unblock(&sb_main_blocker);
	sb_policy_event_locked();
	sb_worker_kick();
}

/* What one attempt of the worker came to. */
enum sb_attempt {
	SB_SKIPPED,	/* not tried: interrupted, a blocker, the policy */
	SB_ARM_FAILED,	/* writing wakeup_count failed */
	SB_SUSPENDED,	/* pm_suspend() was called */
};

/*
 * One opportunistic suspend attempt. *@err is the wakeup_count write's
 * error (SB_ARM_FAILED) or pm_suspend()'s result (SB_SUSPENDED), and
 * *@unknown tells (SB_SUSPENDED) whether nothing explains the return: no
 * blocker was activated and, if pm_suspend() failed, no kernel wakeup
 * source reported an event.
 */
static enum sb_attempt sb_try_suspend(int *err, bool *unknown)
{
	char requested[SB_STATE_LEN], arg[40];
	unsigned long entry_ws;
	unsigned int entry_num;
	suspend_state_t state;
	unsigned int count;
	int ret;

	ret = sb_wakeup_count_read(&count);
	if (ret == -EINTR || ret == -ERESTARTSYS)
		return SB_SKIPPED;
	if (ret)
		pr_warn_once("cannot read %s (%d): suspending without the wakeup-event check\n",
			     SB_SYS_WAKEUP_COUNT, ret);
	if (!sb_should_try())
		return SB_SKIPPED;

	mutex_lock(&sb_policy_lock);
	strscpy(requested, sb_requested, sizeof(requested));
	if (sb_policy != SB_POLICY_OPPORTUNISTIC ||
	    sb_resolve_state(requested, &state)) {
		mutex_unlock(&sb_policy_lock);
		return SB_SKIPPED;
	}
	if (!ret) {
		*err = sb_wakeup_count_arm(count);
		if (*err) {
			mutex_unlock(&sb_policy_lock);
			return SB_ARM_FAILED;
		}
	}
	mutex_unlock(&sb_policy_lock);

	entry_num = sb_event_num();
	entry_ws = sb_kernel_wakeup_events();
	sb_set_suspend_blockers_enabled(true);
	if (suspend_is_blocked()) {
		sb_set_suspend_blockers_enabled(false);
		return SB_SKIPPED;
	}
	snprintf(arg, sizeof(arg), "%s %s", requested, sb_state_name(state));
	if (sb_debug_mask & SB_DEBUG_SUSPEND)
		pr_info("enter suspend (%s)\n", arg);
	sb_event(SB_EV_SUSPEND, arg);
	*err = pm_suspend(state);
	sb_set_suspend_blockers_enabled(false);
	sb_event_int(*err ? SB_EV_ABORT : SB_EV_RESUME, *err);
	if (sb_debug_mask & SB_DEBUG_EXIT_SUSPEND)
		pr_info("exit suspend, ret = %d\n", *err);
	/*
	 * A blocker activation explains any return. A failed attempt is
	 * also explained by a kernel wakeup source's event (the wakeup
	 * count changed: autosleep decides so). A resume is not: drivers
	 * report wakeup events that hold nothing up (ACPI reports one on the
	 * power button after such S3 wakes), and unknown_wakeups is there
	 * to give user space its chance after exactly those.
	 */
	*unknown = sb_event_num() == entry_num &&
		   (!*err || sb_kernel_wakeup_events() == entry_ws);
	return SB_SUSPENDED;
}

/* The next back-off after one more failure in a row. */
static unsigned int sb_backoff_next(unsigned int ms)
{
	return clamp(ms * 2, SB_BACKOFF_MIN_MS, SB_BACKOFF_MAX_MS);
}

/*
 * Say why the wakeup_count write failed. The caller says it only while
 * the back-off grows, so a write that keeps failing is said a few times.
 */
static void sb_warn_arm_failed(int err, unsigned int backoff_ms)
{
	char autosleep[16];

	if (err == -EBUSY && sb_autosleep_active(autosleep, sizeof(autosleep)))
		pr_warn_ratelimited("cannot arm %s (%d): the kernel's autosleep is on (%s: %s); retrying in %u ms\n",
				    SB_SYS_WAKEUP_COUNT, err, SB_SYS_AUTOSLEEP,
				    autosleep, backoff_ms);
	else if (err != -EINVAL)	/* EINVAL: an event came in, a race */
		pr_warn_ratelimited("cannot arm %s (%d): retrying in %u ms\n",
				    SB_SYS_WAKEUP_COUNT, err, backoff_ms);
}

/* Sleep @ms, or less if something kicks the worker. */
static void sb_worker_backoff(unsigned int ms)
{
	int gen = atomic_read(&sb_kick_gen);

	wait_event_interruptible_timeout(sb_worker_wait,
					 kthread_should_stop() ||
					 atomic_read(&sb_kick_gen) != gen,
					 msecs_to_jiffies(ms));
}

/**
 * sb_worker_hold_unknown_wakeup() - keep the system up after an unclaimed wakeup
 *
 * Activates unknown_wakeups and, if the unknown_wakeup_hold_ms parameter
 * is not 0, keeps it active for that many ms, or until the worker must
 * stop or the policy is no longer opportunistic, whichever comes first;
 * then releases it. Other blockers may be activated
 * and released meanwhile; they do not end the hold. The wait is
 * TASK_IDLE: a SIGUSR1 from sb_worker_interrupt() does not end it (a
 * stale one must not cut a hold short), the policy change that sent it
 * does, through the kick that follows it.
 *
 * Context: the worker thread; sleeps.
 */
static void sb_worker_hold_unknown_wakeup(void)
{
	unsigned int ms = READ_ONCE(sb_unknown_wakeup_hold_ms);

	suspend_block(&sb_unknown_wakeup);
	if (ms)
		wait_event_idle_timeout(sb_worker_wait,
					kthread_should_stop() ||
					READ_ONCE(sb_policy) !=
					SB_POLICY_OPPORTUNISTIC,
					msecs_to_jiffies(ms));
	suspend_unblock(&sb_unknown_wakeup);
}

static int sb_worker_fn(void *unused)
{
	unsigned int backoff_ms = 0;

	allow_signal(SIGUSR1);
	while (!kthread_should_stop()) {
		unsigned int prev = backoff_ms;
		enum sb_attempt what;
		bool unknown = false;
		int err = 0;

		flush_signals(current);
		wait_event_interruptible(sb_worker_wait,
					 kthread_should_stop() ||
					 sb_should_try());
		if (kthread_should_stop() || !sb_should_try())
			continue;

		what = sb_try_suspend(&err, &unknown);
		if (what == SB_SKIPPED)
			continue;
		if (what == SB_SUSPENDED) {
			if (unknown) {
				if (sb_debug_mask & SB_DEBUG_SUSPEND)
					pr_info("pm_suspend returned with no event\n");
				sb_worker_hold_unknown_wakeup();
			}
			/* Back off only while it fails for no reason. */
			if (!err || !unknown) {
				backoff_ms = 0;
				continue;
			}
		}
		backoff_ms = sb_backoff_next(backoff_ms);
		if (what == SB_ARM_FAILED && backoff_ms != prev)
			sb_warn_arm_failed(err, backoff_ms);
		sb_worker_backoff(backoff_ms);
	}
	return 0;
}

static ssize_t policy_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	int cur = READ_ONCE(sb_policy);
	int i, len = 0;

	for (i = 0; i < ARRAY_SIZE(sb_policy_names); i++)
		len += sysfs_emit_at(buf, len, i == cur ? "[%s] " : "%s ",
				     sb_policy_names[i]);
	buf[len - 1] = '\n';
	return len;
}

static ssize_t policy_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t n)
{
	int i = sysfs_match_string(sb_policy_names, buf);
	char autosleep[16];
	ssize_t ret = n;

	if (i < 0)
		return -EINVAL;
	mutex_lock(&sb_policy_lock);
	if (i == SB_POLICY_OPPORTUNISTIC && i != sb_policy &&
	    sb_autosleep_active(autosleep, sizeof(autosleep))) {
		pr_warn("opportunistic policy refused: the kernel's autosleep is on (%s: %s); write off there first\n",
			SB_SYS_AUTOSLEEP, autosleep);
		ret = -EBUSY;
		goto out;
	}
	/* As the seed: first request "on" under the current policy. */
	if (sb_policy == SB_POLICY_OPPORTUNISTIC)
		sb_request_locked("on");
	if (i != sb_policy) {
		if (sb_policy == SB_POLICY_OPPORTUNISTIC) {
			sb_core_set_mirror(false);
			sb_worker_interrupt();
		}
		WRITE_ONCE(sb_policy, i);
		if (i == SB_POLICY_OPPORTUNISTIC)
			sb_core_set_mirror(true);
		else
			sb_wakeup_count_disarm();
		sb_policy_event_locked();
		sb_worker_kick();
	}
out:
	mutex_unlock(&sb_policy_lock);
	return ret;
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	char states[64], *p = states, *tok;
	ssize_t n;
	int len = 0;

	n = sb_file_read(SB_SYS_STATE, states, sizeof(states));
	if (n < 0)
		return n;
	if (READ_ONCE(sb_policy) == SB_POLICY_FORCED)
		return sysfs_emit(buf, "%s\n", strim(states));
	len = sysfs_emit_at(buf, len, "on");
	while ((tok = strsep(&p, "\n ")))
		if (*tok && strcmp(tok, "disk"))
			len += sysfs_emit_at(buf, len, " %s", tok);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

static ssize_t state_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t n)
{
	ssize_t ret;
	int i;

	mutex_lock(&sb_policy_lock);
	if (sb_policy == SB_POLICY_FORCED) {
		mutex_unlock(&sb_policy_lock);
		/* Exactly what /sys/power/state does, with its errors. */
		ret = sb_file_write(SB_SYS_STATE, buf, n);
		return ret < 0 ? ret : n;
	}
	i = sysfs_match_string(sb_request_names, buf);
	if (i < 0) {
		ret = -EINVAL;
	} else if (i > 0 && !sb_state_available(sb_request_names[i])) {
		ret = -ENODEV;
	} else {
		sb_request_locked(sb_request_names[i]);
		ret = n;
	}
	mutex_unlock(&sb_policy_lock);
	return ret;
}

static ssize_t requested_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	ssize_t ret;

	mutex_lock(&sb_policy_lock);
	ret = sysfs_emit(buf, "%s\n", sb_requested);
	mutex_unlock(&sb_policy_lock);
	return ret;
}

static struct kobj_attribute sb_policy_attr = __ATTR_RW(policy);
static struct kobj_attribute sb_state_attr = __ATTR_RW(state);
static struct kobj_attribute sb_requested_attr = __ATTR_RO(requested);

static struct attribute *sb_attrs[] = {
	&sb_policy_attr.attr,
	&sb_state_attr.attr,
	&sb_requested_attr.attr,
	NULL,
};

static const struct attribute_group sb_attr_group = {
	.attrs = sb_attrs,
};

int sb_policy_init(void)
{
	int ret;

	sb_kobj = kobject_create_and_add("suspend_block", kernel_kobj);
	if (!sb_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(sb_kobj, &sb_attr_group);
	if (ret)
		goto put_kobj;
	sb_worker_task = kthread_run(sb_worker_fn, NULL, "suspend_block");
	if (IS_ERR(sb_worker_task)) {
		ret = PTR_ERR(sb_worker_task);
		sb_worker_task = NULL;
		goto put_kobj;
	}
	return 0;

put_kobj:
	kobject_del(sb_kobj);
	kobject_put(sb_kobj);
	return ret;
}

void sb_policy_exit(void)
{
	/*
	 * No more policy writes once the files are gone: kobject_del()
	 * removes them now and waits for writers in progress, whoever else
	 * may still hold a reference to the kobject.
	 */
	kobject_del(sb_kobj);
	mutex_lock(&sb_policy_lock);
	if (sb_policy == SB_POLICY_OPPORTUNISTIC)
		sb_request_locked("on");
	WRITE_ONCE(sb_policy, SB_POLICY_FORCED);
	sb_core_set_mirror(false);
	mutex_unlock(&sb_policy_lock);
	sb_worker_interrupt();
	kthread_stop(sb_worker_task);
	sb_worker_task = NULL;
	mutex_lock(&sb_policy_lock);
	sb_wakeup_count_disarm();
	mutex_unlock(&sb_policy_lock);
	kobject_put(sb_kobj);
	sb_kobj = NULL;
}
