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
 * opportunistic policy is refused while it is on. Nothing is attempted
 * once the system is going down (a reboot notifier, and system_state).
 *
 * The PM core's files
 * -------------------
 * A path opened from kernel code resolves in the mount namespace and root
 * of the calling task, and any local user can make a mount namespace of
 * their own with something else mounted over /sys/power/state (our own
 * state file, which then recurses until the stack overflows; or a FIFO,
 * which blocks the reader while it holds our sysfs file active). So the
 * PM core's files are only ever opened by kernel threads, whose namespace
 * and root are init's: the worker does its own I/O, and everything else
 * (sysfs handlers, module init) hands the request to sb_pm_wq and waits
 * for it (killable; freezable, since a forced suspend runs there). Each
 * opened file must be the PM core's sysfs attribute itself (sysfs, named
 * power/NAME under the sysfs root), or it is refused: not even a mount in
 * init's namespace reaches our own files or a FIFO that way. The sysfs
 * handlers also refuse to run in the kernel threads that do the I/O,
 * should anything still lead there. Reading our state file never does
 * I/O: it shows the states the last access found (sb_pm_states).
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/completion.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/kthread.h>
#include <linux/lockdep.h>
#include <linux/magic.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/reboot.h>
#include <linux/refcount.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/suspend.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "sb_internal.h"

#define SB_PM_DIR		"/sys/power/"
#define SB_PM_BUF		64	/* the longest content of one of them */
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

/* The PM core's files we use, in /sys/power. */
enum sb_pm_file {
	SB_PM_STATE,
	SB_PM_MEM_SLEEP,
	SB_PM_WAKEUP_COUNT,
	SB_PM_AUTOSLEEP,
};

static const char * const sb_pm_file_names[] = {
	[SB_PM_STATE]		= "state",
	[SB_PM_MEM_SLEEP]	= "mem_sleep",
	[SB_PM_WAKEUP_COUNT]	= "wakeup_count",
	[SB_PM_AUTOSLEEP]	= "autosleep",
};

/**
 * struct sb_pm_req - one read or write of a PM core file, done on sb_pm_wq
 * @work:	On sb_pm_wq.
 * @done:	Completed when @ret is set.
 * @ref:	The waiter's and the work's: a killed waiter leaves.
 * @file:	Which file.
 * @write:	Write @len bytes of @buf, or read up to SB_PM_BUF - 1.
 * @len:	Bytes to write.
 * @ret:	Bytes read or written, or a negative errno.
 * @buf:	The data (NUL-terminated after a read).
 */
struct sb_pm_req {
	struct work_struct work;
	struct completion done;
	refcount_t ref;
	enum sb_pm_file file;
	bool write;
	size_t len;
	ssize_t ret;
	char buf[SB_PM_BUF];
};

/* Does the PM core's file I/O for everyone but the worker (ordered). */
static struct workqueue_struct *sb_pm_wq;
/* The kworker running an sb_pm_req, for the re-entry guard. */
static struct task_struct *sb_pm_io_task;

/*
 * sb_pm_states_lock protects sb_pm_states: /sys/power/state as the last
 * read of it found it, which is what reading our state file shows.
 */
static DEFINE_SPINLOCK(sb_pm_states_lock);
static char sb_pm_states[SB_PM_BUF];

/* Set by the reboot notifier: no more attempts. */
static bool sb_going_down;

/*
 * sb_policy_lock protects sb_policy (written only under it; the worker and
 * sysfs readers read it with READ_ONCE), sb_requested and sb_policy_gen,
 * and serialises policy and state changes. It is never held across a
 * read or write of a PM core file: those take the sysfs files' own locks,
 * which lockdep cannot tell from ours (all kernfs files share one class),
 * and our sysfs handlers take sb_policy_lock under them.
 */
static DEFINE_MUTEX(sb_policy_lock);
static int sb_policy = SB_POLICY_FORCED;
static char sb_requested[SB_STATE_LEN] = "mem";

static struct kobject *sb_kobj;
static struct task_struct *sb_worker_task;
static DECLARE_WAIT_QUEUE_HEAD(sb_worker_wait);
/* Bumped by every kick: lets the worker's back-off end early. */
static atomic_t sb_kick_gen = ATOMIC_INIT(0);
/* Bumped by every policy change, so the worker sees one across its arming. */
static unsigned int sb_policy_gen;

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

/*
 * Is @file the PM core's /sys/power/@name attribute? Only sysfs nodes
 * named power/@name right under a sysfs root pass: whatever is mounted
 * over the path (our own files, a FIFO, any other file) does not.
 */
static bool sb_pm_file_is_core(struct file *file, const char *name)
{
	struct dentry *d = file->f_path.dentry, *parent;
	bool ok;

	if (d->d_sb->s_magic != SYSFS_MAGIC || strcmp(d->d_name.name, name))
		return false;
	parent = dget_parent(d);
	ok = !strcmp(parent->d_name.name, "power") &&
	     parent->d_parent == d->d_sb->s_root;
	dput(parent);
	return ok;
}

/*
 * Read (@write false: up to @size - 1 bytes, NUL-terminated) or write
 * @len bytes of the PM core's file @f, in the calling kernel thread.
 * Returns the bytes read or written, or a negative errno (-EPERM if the
 * path leads to anything but the PM core's file).
 * Context: a kernel thread (init's mount namespace and root); sleeps.
 */
static ssize_t sb_pm_file_io(enum sb_pm_file f, bool write, char *buf,
			     size_t len)
{
	const char *name = sb_pm_file_names[f];
	char path[32];
	struct file *file;
	loff_t pos = 0;
	ssize_t n;

	if (WARN_ON_ONCE(!(current->flags & PF_KTHREAD)))
		return -EPERM;
	snprintf(path, sizeof(path), SB_PM_DIR "%s", name);
	/* O_NONBLOCK: a FIFO mounted there opens without waiting for a peer */
	file = filp_open(path, (write ? O_WRONLY : O_RDONLY) | O_NONBLOCK |
			 O_NOFOLLOW, 0);
	if (IS_ERR(file))
		return PTR_ERR(file);
	if (!sb_pm_file_is_core(file, name)) {
		pr_warn_ratelimited("%s is not the PM core's file (something is mounted over it): not used\n",
				    path);
		n = -EPERM;
	} else if (write) {
		n = kernel_write(file, buf, len, &pos);
	} else {
		n = kernel_read(file, buf, len - 1, &pos);
		buf[n > 0 ? n : 0] = '\0';
	}
	filp_close(file, NULL);
	if (f == SB_PM_STATE && !write && n > 0) {
		spin_lock(&sb_pm_states_lock);
		strscpy(sb_pm_states, strim(buf), sizeof(sb_pm_states));
		spin_unlock(&sb_pm_states_lock);
	}
	return n;
}

static void sb_pm_req_put(struct sb_pm_req *req)
{
	if (refcount_dec_and_test(&req->ref))
		kfree(req);
}

static void sb_pm_req_fn(struct work_struct *work)
{
	struct sb_pm_req *req = container_of(work, struct sb_pm_req, work);

	WRITE_ONCE(sb_pm_io_task, current);
	req->ret = sb_pm_file_io(req->file, req->write, req->buf,
				 req->write ? req->len : sizeof(req->buf));
	WRITE_ONCE(sb_pm_io_task, NULL);
	complete(&req->done);
	sb_pm_req_put(req);
}

/*
 * Is the current task one of ours that does PM core file I/O? Then our
 * sysfs handlers must not run in it (re-entry).
 */
static bool sb_in_pm_io(void)
{
	return current == READ_ONCE(sb_pm_io_task) ||
	       current == READ_ONCE(sb_worker_task);
}

/**
 * sb_pm_io() - read or write a PM core file from any task
 * @f:		Which file.
 * @write:	Write @len bytes of @buf, or read into @buf.
 * @buf:	The data; for a read, SB_PM_BUF bytes, NUL-terminated.
 * @len:	Bytes to write (at most SB_PM_BUF).
 *
 * Kernel threads do the I/O themselves; other tasks hand it to sb_pm_wq
 * and wait. The wait is killable, and freezable: a write to state suspends
 * the system from sb_pm_wq while the writer waits here, holding its sysfs
 * file's locks (no one takes those during a suspend, which freezes every
 * user task: hence the _UNSAFE variant, which tells lockdep so).
 *
 * Context: process context; sleeps.
 * Return: bytes read or written, or a negative errno (-EINTR if killed;
 * the request still completes).
 */
static ssize_t sb_pm_io(enum sb_pm_file f, bool write, char *buf, size_t len)
{
	struct sb_pm_req *req;
	ssize_t ret;

	if (current->flags & PF_KTHREAD)
		return sb_pm_file_io(f, write, buf, write ? len : SB_PM_BUF);
	if (write && len > sizeof(req->buf))
		return -EINVAL;
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	INIT_WORK(&req->work, sb_pm_req_fn);
	init_completion(&req->done);
	refcount_set(&req->ref, 2);
	req->file = f;
	req->write = write;
	req->len = len;
	if (write)
		memcpy(req->buf, buf, len);
	queue_work(sb_pm_wq, &req->work);
	if (wait_for_completion_state(&req->done,
				      TASK_KILLABLE | TASK_FREEZABLE_UNSAFE)) {
		ret = -EINTR;
	} else {
		ret = req->ret;
		if (!write)
			memcpy(buf, req->buf, SB_PM_BUF);
	}
	sb_pm_req_put(req);
	return ret;
}

/* The states /sys/power/state listed when last read (@buf: SB_PM_BUF). */
static void sb_pm_states_get(char *buf)
{
	spin_lock(&sb_pm_states_lock);
	memcpy(buf, sb_pm_states, SB_PM_BUF);
	spin_unlock(&sb_pm_states_lock);
}

/* Re-read /sys/power/state; is @name (a word of it) available? */
static bool sb_state_available(const char *name)
{
	char buf[SB_PM_BUF], *p = buf, *tok;

	if (sb_pm_io(SB_PM_STATE, false, buf, 0) <= 0)
		return false;
	while ((tok = strsep(&p, "\n ")))
		if (*tok && !strcmp(tok, name))
			return true;
	return false;
}

/*
 * Map a requested state name to a suspend_state_t, as mainline does; the
 * kernel's label of a "mem" state goes to @label (SB_STATE_LEN bytes).
 * Context: the worker.
 */
static int sb_resolve_state(const char *name, suspend_state_t *state,
			    char *label)
{
	char buf[SB_PM_BUF], *open, *close;

	if (!strcmp(name, "freeze")) {
		*state = PM_SUSPEND_TO_IDLE;
		goto out;
	}
	if (!strcmp(name, "standby")) {
		*state = PM_SUSPEND_STANDBY;
		goto out;
	}
	if (strcmp(name, "mem"))
		return -EINVAL;
	/* "mem" means whatever /sys/power/mem_sleep selects. */
	*state = PM_SUSPEND_MEM;
	if (sb_pm_io(SB_PM_MEM_SLEEP, false, buf, 0) <= 0)
		goto out;
	open = strchr(buf, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close)
		goto out;
	*close = '\0';
	if (!strcmp(open + 1, "s2idle"))
		*state = PM_SUSPEND_TO_IDLE;
	else if (!strcmp(open + 1, "shallow"))
		*state = PM_SUSPEND_STANDBY;
	else if (strcmp(open + 1, "deep"))
		pr_warn_once("/sys/power/mem_sleep selects '%s', a label this module does not know: taken as deep\n",
			     open + 1);
out:
	strscpy(label, sb_state_name(*state), SB_STATE_LEN);
	return 0;
}

static int sb_wakeup_count_read(unsigned int *count)
{
	char buf[SB_PM_BUF];
	ssize_t n;

	n = sb_pm_io(SB_PM_WAKEUP_COUNT, false, buf, 0);
	if (n < 0)
		return n;
	return kstrtouint(strim(buf), 10, count);
}

/*
 * Write @count back to arm the wakeup-event check. Returns 0 or the
 * write's error: -EINVAL if a wakeup event came in since the read (or one
 * is in progress), -EBUSY while the kernel's autosleep is on.
 * Context: the worker.
 */
static int sb_wakeup_count_arm(unsigned int count)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", count);
	ssize_t n;

	n = sb_pm_io(SB_PM_WAKEUP_COUNT, true, buf, len);
	if (n < 0)
		return n;
	return n == len ? 0 : -EIO;
}

/*
 * Is the kernel's own opportunistic sleep (CONFIG_PM_AUTOSLEEP) on? Its
 * state goes to @buf (SB_PM_BUF bytes: "off" or a state; empty without
 * the file).
 */
static bool sb_autosleep_active(char *buf)
{
	if (sb_pm_io(SB_PM_AUTOSLEEP, false, buf, 0) <= 0) {
		buf[0] = '\0';
		return false;
	}
	strim(buf);
	return *buf && strcmp(buf, "off");
}

/*
 * Turn the wakeup-event check off again so that a forced suspend is not
 * aborted by wakeup sources because of an arming we did: saving a count
 * that can never match clears events_check_enabled. Done whenever the
 * policy leaves "opportunistic" (whether or not the worker had armed it),
 * and by the worker if the policy changed while it was arming.
 * Context: process context, sb_policy_lock not held.
 */
static void sb_wakeup_count_disarm(void)
{
	char never[] = "4294967295";

	sb_pm_io(SB_PM_WAKEUP_COUNT, true, never, strlen(never));
}

/* Is the system running normally (not booting, not going down)? */
static bool sb_system_running(void)
{
	return system_state == SYSTEM_RUNNING && !READ_ONCE(sb_going_down);
}

static bool sb_should_try(void)
{
	return READ_ONCE(sb_policy) == SB_POLICY_OPPORTUNISTIC &&
	       sb_system_running() && !sb_any_active();
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
	SB_READ_FAILED,	/* reading wakeup_count failed */
	SB_ARM_FAILED,	/* writing wakeup_count failed */
	SB_SUSPENDED,	/* pm_suspend() was called */
};

/*
 * One opportunistic suspend attempt. *@err is the wakeup_count read's or
 * write's error (SB_READ_FAILED, SB_ARM_FAILED) or pm_suspend()'s result
 * (SB_SUSPENDED), and
 * *@unknown tells (SB_SUSPENDED) whether nothing explains the return: no
 * blocker was activated and, if pm_suspend() failed, no kernel wakeup
 * source reported an event.
 *
 * The attempt begins once the wakeup count has been read (which waits
 * until no wakeup event is in progress): from there on, any blocker
 * activated, even for a moment, aborts it (pmhooks.c) and any kernel
 * wakeup event explains its failure. The write that arms the count fails
 * if a kernel event came in between.
 */
static enum sb_attempt sb_try_suspend(int *err, bool *unknown)
{
	char requested[SB_STATE_LEN], label[SB_STATE_LEN], arg[40];
	unsigned int entry_num, count, gen;
	unsigned long entry_ws;
	suspend_state_t state;
	int policy, ret;

	ret = sb_wakeup_count_read(&count);
	if (ret == -EINTR || ret == -ERESTARTSYS)
		return SB_SKIPPED;
	/* Without the count, kernel wakeup sources would not be honoured. */
	if (ret) {
		*err = ret;
		return SB_READ_FAILED;
	}
	entry_num = sb_event_num();
	entry_ws = sb_kernel_wakeup_events();
	if (!sb_should_try())
		return SB_SKIPPED;

	mutex_lock(&sb_policy_lock);
	strscpy(requested, sb_requested, sizeof(requested));
	policy = sb_policy;
	gen = sb_policy_gen;
	mutex_unlock(&sb_policy_lock);
	if (policy != SB_POLICY_OPPORTUNISTIC ||
	    sb_resolve_state(requested, &state, label))
		return SB_SKIPPED;
	*err = sb_wakeup_count_arm(count);
	/* our own SIGUSR1 (a policy change): not a failure */
	if (*err == -EINTR || *err == -ERESTARTSYS)
		return SB_SKIPPED;
	if (*err)
		return SB_ARM_FAILED;
	/* A policy change while we armed disarmed before we did: undo it. */
	if (READ_ONCE(sb_policy_gen) != gen) {
		sb_wakeup_count_disarm();
		return SB_SKIPPED;
	}

	sb_attempt_begin(entry_num);
	if (sb_attempt_interrupted()) {
		sb_attempt_end();
		return SB_SKIPPED;
	}
	snprintf(arg, sizeof(arg), "%s %s", requested, label);
	if (sb_debug_mask & SB_DEBUG_SUSPEND)
		pr_info("enter suspend (%s)\n", arg);
	/* its records would wake an EPOLLWAKEUP reader, an abort (events.c) */
	sb_events_hold_wakeups(true);
	sb_event(SB_EV_SUSPEND, arg);
	*err = pm_suspend(state);
	sb_attempt_end();
	sb_event_int(*err ? SB_EV_ABORT : SB_EV_RESUME, *err);
	sb_events_hold_wakeups(false);
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
 * Say why the wakeup_count read or write failed. The caller says it only
 * while the back-off grows, so one that keeps failing is said a few times.
 */
static void sb_warn_count_failed(enum sb_attempt what, int err,
				 unsigned int backoff_ms)
{
	char autosleep[SB_PM_BUF];

	if (what == SB_READ_FAILED)
		pr_warn_ratelimited("cannot read %swakeup_count (%d): not suspending without the kernel's wakeup-event check; retrying in %u ms\n",
				    SB_PM_DIR, err, backoff_ms);
	else if (err == -EBUSY && sb_autosleep_active(autosleep))
		pr_warn_ratelimited("cannot arm %swakeup_count (%d): the kernel's autosleep is on (%sautosleep: %s); retrying in %u ms\n",
				    SB_PM_DIR, err, SB_PM_DIR, autosleep,
				    backoff_ms);
	else if (err != -EINVAL)	/* EINVAL: an event came in, a race */
		pr_warn_ratelimited("cannot arm %swakeup_count (%d): retrying in %u ms\n",
				    SB_PM_DIR, err, backoff_ms);
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
		if (what != SB_SUSPENDED && backoff_ms != prev)
			sb_warn_count_failed(what, err, backoff_ms);
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
	char autosleep[SB_PM_BUF], states[SB_PM_BUF];
	bool left = false;

	if (i < 0)
		return -EINVAL;
	if (sb_in_pm_io())
		return -EDEADLK;
	/* the PM core's files first: never read under sb_policy_lock */
	sb_pm_io(SB_PM_STATE, false, states, 0);	/* refresh the list */
	if (i == SB_POLICY_OPPORTUNISTIC &&
	    READ_ONCE(sb_policy) != SB_POLICY_OPPORTUNISTIC &&
	    sb_autosleep_active(autosleep)) {
		pr_warn("opportunistic policy refused: the kernel's autosleep is on (%sautosleep: %s); write off there first\n",
			SB_PM_DIR, autosleep);
		return -EBUSY;
	}
	mutex_lock(&sb_policy_lock);
	/* As the seed: first request "on" under the current policy. */
	if (sb_policy == SB_POLICY_OPPORTUNISTIC)
		sb_request_locked("on");
	if (i != sb_policy) {
		if (sb_policy == SB_POLICY_OPPORTUNISTIC) {
			sb_core_set_mirror(false);
			sb_worker_interrupt();
			left = true;
		}
		WRITE_ONCE(sb_policy, i);
		WRITE_ONCE(sb_policy_gen, sb_policy_gen + 1);
		if (i == SB_POLICY_OPPORTUNISTIC)
			sb_core_set_mirror(true);
		sb_policy_event_locked();
		sb_worker_kick();
	}
	mutex_unlock(&sb_policy_lock);
	if (left)
		sb_wakeup_count_disarm();
	return n;
}

/* Lists what /sys/power/state listed when last read: no I/O here. */
static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	char states[SB_PM_BUF], *p = states, *tok;
	int len = 0;

	if (sb_in_pm_io())
		return -EDEADLK;
	sb_pm_states_get(states);
	if (READ_ONCE(sb_policy) == SB_POLICY_FORCED)
		return sysfs_emit(buf, "%s\n", states);
	len = sysfs_emit_at(buf, len, "on");
	while ((tok = strsep(&p, "\n ")))
		if (*tok && strcmp(tok, "disk"))
			len += sysfs_emit_at(buf, len, " %s", tok);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

/*
 * Forced policy: what /sys/power/state does, with its errors. It reads
 * the word up to the first newline: that part is passed on.
 */
static ssize_t sb_state_store_forced(const char *buf, size_t n)
{
	char word[SB_PM_BUF];
	const char *nl = memchr(buf, '\n', n);
	size_t len = nl ? nl - buf + 1 : n;
	ssize_t ret;

	if (len > sizeof(word))
		return -EINVAL;		/* no state has such a name */
	memcpy(word, buf, len);
	ret = sb_pm_io(SB_PM_STATE, true, word, len);
	return ret < 0 ? ret : n;
}

static ssize_t state_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t n)
{
	ssize_t ret;
	int i;

	if (sb_in_pm_io())
		return -EDEADLK;
	if (READ_ONCE(sb_policy) == SB_POLICY_FORCED)
		return sb_state_store_forced(buf, n);
	i = sysfs_match_string(sb_request_names, buf);
	if (i < 0)
		return -EINVAL;
	/* the PM core's files first: never read under sb_policy_lock */
	if (i > 0 && !sb_state_available(sb_request_names[i]))
		return -ENODEV;
	mutex_lock(&sb_policy_lock);
	if (sb_policy == SB_POLICY_FORCED) {	/* changed meanwhile */
		mutex_unlock(&sb_policy_lock);
		return sb_state_store_forced(buf, n);
	}
	sb_request_locked(sb_request_names[i]);
	ret = n;
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

/*
 * Going down (reboot, halt, power-off): processes that exit release their
 * blockers, which must not put the system to sleep half-way through.
 */
static int sb_reboot_notify(struct notifier_block *nb, unsigned long action,
			    void *unused)
{
	WRITE_ONCE(sb_going_down, true);
	sb_worker_interrupt();
	return NOTIFY_DONE;
}

static struct notifier_block sb_reboot_nb = {
	.notifier_call = sb_reboot_notify,
};

/**
 * sb_policy_init() - create the sysfs files, start the worker
 *
 * Context: process context.
 * Return: 0 or a negative errno.
 */
int sb_policy_init(void)
{
	char states[SB_PM_BUF];
	ssize_t n;
	int ret;

	sb_pm_wq = alloc_ordered_workqueue("suspend_block_io", 0);
	if (!sb_pm_wq)
		return -ENOMEM;
	n = sb_pm_io(SB_PM_STATE, false, states, 0);
	if (n <= 0)
		pr_warn("cannot read %sstate (%zd): the state file lists nothing until it can\n",
			SB_PM_DIR, n);
	sb_kobj = kobject_create_and_add("suspend_block", kernel_kobj);
	if (!sb_kobj) {
		ret = -ENOMEM;
		goto destroy_wq;
	}
	ret = sysfs_create_group(sb_kobj, &sb_attr_group);
	if (ret)
		goto put_kobj;
	sb_worker_task = kthread_run(sb_worker_fn, NULL, "suspend_block");
	if (IS_ERR(sb_worker_task)) {
		ret = PTR_ERR(sb_worker_task);
		sb_worker_task = NULL;
		goto put_kobj;
	}
	register_reboot_notifier(&sb_reboot_nb);
	return 0;

put_kobj:
	kobject_del(sb_kobj);
	kobject_put(sb_kobj);
destroy_wq:
	destroy_workqueue(sb_pm_wq);
	return ret;
}

/**
 * sb_policy_exit() - stop the worker, back to "forced", remove the files
 *
 * Context: process context.
 */
void sb_policy_exit(void)
{
	unregister_reboot_notifier(&sb_reboot_nb);
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
	WRITE_ONCE(sb_policy_gen, sb_policy_gen + 1);
	sb_core_set_mirror(false);
	mutex_unlock(&sb_policy_lock);
	sb_worker_interrupt();
	kthread_stop(sb_worker_task);
	sb_worker_task = NULL;
	sb_wakeup_count_disarm();
	kobject_put(sb_kobj);
	sb_kobj = NULL;
	/* a killed writer's request may still be running: wait for it */
	destroy_workqueue(sb_pm_wq);
}
