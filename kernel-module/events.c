// SPDX-License-Identifier: GPL-2.0
/*
 * The event log: debugfs suspend_blocker_events.
 *
 * Every state change the rig cares about (a blocker activated or released,
 * a suspend attempted, the sleep state entered and left, pm_suspend()
 * returning) is recorded with its CLOCK_BOOTTIME timestamp in a ring of
 * fixed-size records. Each open file has its own cursor, starting at the
 * oldest record still held; a reader that falls behind gets one "lost"
 * line saying how many records were overwritten before it could read them.
 * Reads of one open file are serialised, and a read whose buffer faults
 * returns the whole lines copied so far (or EFAULT) and leaves the rest
 * in the ring.
 *
 * Line format (one record a line, tab-separated):
 *
 *	SEQ	T_NS	TYPE	ARG
 *
 *	SEQ	T_NS	TYPE	ARG	ID	(block and unblock)
 *
 * SEQ counts records from 0 at module load; T_NS is CLOCK_BOOTTIME in ns;
 * ARG is a quoted blocker name for block/unblock (followed by the
 * blocker's id, struct suspend_blocker's @id, which tells two blockers of
 * one name apart without showing a kernel address) and a quoted wakeup
 * source name for ws_activate/ws_relax (a name longer than
 * SB_EVENT_ARG_LEN bytes is cut and followed by '+' after the closing
 * quote), a state name for suspend/enter/exit, an errno-style return code
 * for resume/abort, "POLICY STATE" for policy, "ACTION VAL begin|end" for
 * phase, "DURATION_NS ERROR VERB DEVICE" for dev_pm (see the probes), and for
 * lost the number of records lost (its SEQ is the first one lost).
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/lockdep.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <uapi/linux/suspend_block_dev.h>
#include "sb_internal.h"

#define SB_READ_BATCH		32
/*
 * Longest formatted line (131 bytes): SEQ and T_NS 20 each, TYPE 11, the
 * quoted arg and "+" 55, ID 20, 4 tabs and the newline.
 */
#define SB_LINE_MAX		(80 + SB_EVENT_ARG_LEN + 8)

static unsigned int event_log_size = 4096;
module_param(event_log_size, uint, 0444);
MODULE_PARM_DESC(event_log_size,
		 "Records kept in the event log (rounded up to a power of 2)");

static const char * const sb_event_names[SB_EV_NR] = {
	[SB_EV_BLOCK]	= "block",
	[SB_EV_UNBLOCK]	= "unblock",
	[SB_EV_SUSPEND]	= "suspend",
	[SB_EV_ENTER]	= "enter",
	[SB_EV_EXIT]	= "exit",
	[SB_EV_RESUME]	= "resume",
	[SB_EV_ABORT]	= "abort",
	[SB_EV_POLICY]	= "policy",
	[SB_EV_WS_ACTIVATE] = "ws_activate",
	[SB_EV_WS_RELAX] = "ws_relax",
	[SB_EV_PHASE]	= "phase",
	[SB_EV_DEV_PM]	= "dev_pm",
};

/*
 * sb_ring_lock protects the ring (sb_ring, sb_ring_mask), sb_ev_next,
 * sb_offs_boot, sb_ev_hold, sb_ev_held and every reader's cursor (written with the reader's own
 * lock held too, so either lock is enough to read it).
 *
 * It is a raw spinlock and a leaf: nothing is called while it is held.
 * Records come from everywhere: suspend_block() under
 * suspend_blockers_lock in any context, and the tracepoint probes that
 * log the kernel's own activity, which run under other wakeup sources'
 * locks and inside the PM core's raw-spinlock sections (tick_freeze_lock
 * for s2idle, interrupts hard-disabled around machine_suspend for
 * suspend-to-RAM), where only a raw spinlock may be taken (also on
 * PREEMPT_RT).
 *
 * Readers are not woken under the lock: a reader's wait queue entry can
 * be an epoll item with EPOLLWAKEUP, whose wakeup activates a wakeup
 * source, whose tracepoint comes back here to log it. Appending queues
 * sb_ev_irq_work instead, which wakes the readers from a context of its
 * own once the writer has let go of every lock.
 *
 * While the worker's suspend attempt is under way (sb_ev_hold), readers
 * are not woken at all: the records it writes (suspend, the phases, a
 * block that aborts it) are delivered with its resume or abort record.
 * An EPOLLWAKEUP reader's wakeup source, activated by them, would be a
 * wakeup event that aborts the very attempt that wrote them, and the next
 * one too, for ever. sb_ev_held says a record came in meanwhile.
 */
static DEFINE_RAW_SPINLOCK(sb_ring_lock);
static bool sb_ev_hold;
static bool sb_ev_held;
static struct sb_event_rec *sb_ring;
static unsigned int sb_ring_mask;
static u64 sb_ev_next;
static ktime_t sb_offs_boot;
static DECLARE_WAIT_QUEUE_HEAD(sb_ev_wait);
static struct dentry *sb_ev_dentry;

static void sb_ev_wake_readers(struct irq_work *work)
{
	wake_up_interruptible(&sb_ev_wait);
}

static struct irq_work sb_ev_irq_work = IRQ_WORK_INIT(sb_ev_wake_readers);

/**
 * sb_events_resync_clock() - refresh the CLOCK_BOOTTIME offset
 *
 * Records store CLOCK_MONOTONIC plus a cached boot offset (reading the
 * kernel's offset costs a call on every block/unblock). The offset only
 * changes when the system resumes, so this runs at load, from a syscore
 * resume callback (suspend-to-RAM: right after timekeeping resumes) and
 * from the resume_noirq callback (s2idle). Records written in between by
 * IRQF_NO_SUSPEND handlers carry the pre-suspend offset.
 *
 * Context: any context in which timekeeping is not suspended.
 */
void sb_events_resync_clock(void)
{
	unsigned long irqflags;
	ktime_t mono, boot;

	boot = ktime_get_boottime();
	mono = ktime_get();
	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	sb_offs_boot = ktime_sub(boot, mono);
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
}

/*
 * Write one record. Returns whether to wake the readers now.
 * Context: sb_ring_lock held.
 */
static bool sb_event_put_locked(enum sb_event_type type, ktime_t mono,
				const char *arg, unsigned int len, u64 id)
{
	struct sb_event_rec *rec;

	lockdep_assert_held(&sb_ring_lock);
	if (unlikely(!sb_ring))
		return false;
	rec = &sb_ring[sb_ev_next++ & sb_ring_mask];
	rec->t_ns = ktime_to_ns(ktime_add(mono, sb_offs_boot));
	rec->id = id;
	rec->type = type;
	rec->truncated = len > SB_EVENT_ARG_LEN;
	rec->len = rec->truncated ? SB_EVENT_ARG_LEN : len;
	memcpy(rec->arg, arg, rec->len);
	if (unlikely(sb_ev_hold)) {
		sb_ev_held = true;
		return false;
	}
	return true;
}

/* Wake the readers, after sb_ring_lock was dropped. */
static void sb_event_wake(void)
{
	/*
	 * No barrier is needed before looking at the wait queue: readers
	 * queue themselves before they look for records under sb_ring_lock,
	 * so either their look comes after our unlock and sees the record,
	 * or it came before our lock and their entry is visible here.
	 */
	if (waitqueue_active(&sb_ev_wait))
		irq_work_queue(&sb_ev_irq_work);
}

/**
 * sb_event_add() - append a record to the event log
 * @type:	What happened.
 * @mono:	When, on CLOCK_MONOTONIC.
 * @arg:	The argument text, not necessarily NUL-terminated.
 * @len:	Its length (a longer one is cut and marked truncated).
 *
 * Takes only sb_ring_lock, and wakes readers through an irq_work, so it
 * may be called with any other lock held (a wakeup source's lock, a raw
 * spinlock of the PM core).
 *
 * Context: any context.
 */
void sb_event_add(enum sb_event_type type, ktime_t mono, const char *arg,
		  unsigned int len)
{
	unsigned long irqflags;
	bool wake;

	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	wake = sb_event_put_locked(type, mono, arg, len, 0);
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	if (wake)
		sb_event_wake();
}

/**
 * sb_event_add_irqs_off() - sb_event_add() for the block/unblock path
 * @type:	What happened.
 * @mono:	When, on CLOCK_MONOTONIC.
 * @arg:	The argument text, not necessarily NUL-terminated.
 * @len:	Its length.
 * @id:		The blocker's id (struct suspend_blocker's @id).
 *
 * The same without saving and restoring the interrupt state, for callers
 * that hold suspend_blockers_lock (the hot path of every block/unblock),
 * with the blocker's id in the record.
 *
 * Context: interrupts disabled.
 */
void sb_event_add_irqs_off(enum sb_event_type type, ktime_t mono,
			   const char *arg, unsigned int len, u64 id)
{
	bool wake;

	lockdep_assert_irqs_disabled();
	raw_spin_lock(&sb_ring_lock);
	wake = sb_event_put_locked(type, mono, arg, len, id);
	raw_spin_unlock(&sb_ring_lock);
	if (wake)
		sb_event_wake();
}

/**
 * sb_events_hold_wakeups() - hold the readers' wakeups during an attempt
 * @hold:	true when the worker's attempt begins, false when its resume
 *		or abort record is written (readers are woken then if any
 *		record came in meanwhile).
 *
 * Context: the worker.
 */
void sb_events_hold_wakeups(bool hold)
{
	unsigned long irqflags;
	bool wake;

	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	sb_ev_hold = hold;
	wake = !hold && sb_ev_held;
	sb_ev_held = false;
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	if (wake)
		sb_event_wake();
}

/**
 * sb_event() - append a record, now
 * @type:	What happened.
 * @arg:	NUL-terminated argument text.
 *
 * Context: any context.
 */
void sb_event(enum sb_event_type type, const char *arg)
{
	sb_event_add(type, sb_now(), arg, strlen(arg));
}

/**
 * sb_event_int() - append a record whose argument is a number
 * @type:	What happened.
 * @val:	The argument.
 *
 * Context: any context.
 */
void sb_event_int(enum sb_event_type type, int val)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", val);
	sb_event(type, buf);
}

struct sb_ev_reader {
	/*
	 * lock serialises the reads of one open file (read(2) on a shared
	 * file takes the file position lock, io_uring reads do not): it
	 * protects batch and every read-modify-write of cursor. cursor is
	 * written with both lock and sb_ring_lock held, so either is enough
	 * to read it (poll() takes only the latter).
	 */
	struct mutex lock;
	u64 cursor;		/* next SEQ this reader will see */
	struct sb_event_rec batch[SB_READ_BATCH];
};

static int sb_ev_open(struct inode *inode, struct file *file)
{
	struct sb_ev_reader *r;
	unsigned long irqflags;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	mutex_init(&r->lock);
	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	if (sb_ev_next > sb_ring_mask + 1)
		r->cursor = sb_ev_next - (sb_ring_mask + 1);
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	file->private_data = r;
	return nonseekable_open(inode, file);
}

static int sb_ev_release(struct inode *inode, struct file *file)
{
	struct sb_ev_reader *r = file->private_data;

	mutex_destroy(&r->lock);
	kfree(r);
	return 0;
}

static bool sb_ev_available(struct sb_ev_reader *r)
{
	unsigned long irqflags;
	bool ret;

	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	ret = r->cursor < sb_ev_next;
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	return ret;
}

/* Context: r->lock held. */
static void sb_ev_set_cursor(struct sb_ev_reader *r, u64 cursor)
{
	unsigned long irqflags;

	lockdep_assert_held(&r->lock);
	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	r->cursor = cursor;
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
}

/*
 * Copy up to @max records from the ring into the reader's batch, the
 * first one being *@first_seq. Returns the number copied; *@lost is set
 * to the number of records overwritten before this reader got to them
 * (the cursor skips them, and one record fewer is copied to leave room
 * for the "lost" line).
 *
 * Context: r->lock held.
 */
static unsigned int sb_ev_fetch(struct sb_ev_reader *r, unsigned int max,
				u64 *lost, u64 *lost_seq, u64 *first_seq)
{
	unsigned long irqflags;
	unsigned int n = 0;
	u64 oldest = 0;

	lockdep_assert_held(&r->lock);
	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	if (sb_ev_next > sb_ring_mask + 1)
		oldest = sb_ev_next - (sb_ring_mask + 1);
	*lost = 0;
	if (r->cursor < oldest) {
		*lost = oldest - r->cursor;
		*lost_seq = r->cursor;
		r->cursor = oldest;
		max--;
	}
	*first_seq = r->cursor;
	while (n < max && r->cursor < sb_ev_next) {
		r->batch[n++] = sb_ring[r->cursor & sb_ring_mask];
		r->cursor++;
	}
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	return n;
}

static int sb_ev_format(char *buf, size_t size, u64 seq,
			const struct sb_event_rec *rec)
{
	const char *name = rec->type < SB_EV_NR ? sb_event_names[rec->type] :
			   "unknown";

	if (rec->type == SB_EV_BLOCK || rec->type == SB_EV_UNBLOCK)
		return scnprintf(buf, size, "%llu\t%lld\t%s\t\"%.*s\"%s\t%llu\n",
				 seq, rec->t_ns, name, rec->len, rec->arg,
				 rec->truncated ? "+" : "", rec->id);
	if (rec->type == SB_EV_WS_ACTIVATE || rec->type == SB_EV_WS_RELAX)
		return scnprintf(buf, size, "%llu\t%lld\t%s\t\"%.*s\"%s\n",
				 seq, rec->t_ns, name, rec->len, rec->arg,
				 rec->truncated ? "+" : "");
	return scnprintf(buf, size, "%llu\t%lld\t%s\t%.*s\n", seq,
			 rec->t_ns, name, rec->len, rec->arg);
}

/* Take r->lock once a record is available (or fail as read() must). */
static int sb_ev_lock_available(struct file *file, struct sb_ev_reader *r)
{
	bool nonblock = file->f_flags & O_NONBLOCK;
	int ret;

	for (;;) {
		if (nonblock) {
			if (!mutex_trylock(&r->lock))
				return -EAGAIN;
		} else if (mutex_lock_interruptible(&r->lock)) {
			return -ERESTARTSYS;
		}
		if (sb_ev_available(r))
			return 0;
		mutex_unlock(&r->lock);
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(sb_ev_wait, sb_ev_available(r));
		if (ret)
			return ret;
	}
}

static ssize_t sb_ev_read(struct file *file, char __user *ubuf, size_t count,
			  loff_t *ppos)
{
	struct sb_ev_reader *r = file->private_data;
	unsigned int ends[SB_READ_BATCH];	/* where each line ends */
	unsigned int n, i, lines = 0, max;
	u64 lost, lost_seq = 0, first_seq, start;
	size_t done = 0, left;
	ssize_t ret;
	char *kbuf;

	if (count < SB_LINE_MAX)
		return -EINVAL;
	max = min_t(size_t, count / SB_LINE_MAX, SB_READ_BATCH);
	kbuf = kmalloc(max * SB_LINE_MAX, GFP_KERNEL);
	if (!kbuf)
		return -ENOMEM;
	ret = sb_ev_lock_available(file, r);
	if (ret)
		goto out_free;

	start = r->cursor;
	n = sb_ev_fetch(r, max, &lost, &lost_seq, &first_seq);
	if (lost) {
		done += scnprintf(kbuf, SB_LINE_MAX, "%llu\t%lld\tlost\t%llu\n",
				  lost_seq, ktime_get_boottime_ns(), lost);
		ends[lines++] = done;
	}
	for (i = 0; i < n; i++) {
		done += sb_ev_format(kbuf + done, SB_LINE_MAX, first_seq + i,
				     &r->batch[i]);
		ends[lines++] = done;
	}

	left = copy_to_user(ubuf, kbuf, done);
	ret = done;
	if (left) {
		/*
		 * Deliver the whole lines that made it and give the rest back
		 * to the ring (a record overwritten meanwhile then shows up in
		 * a "lost" line), so a bad buffer never loses records silently.
		 */
		for (i = lines; i && ends[i - 1] > done - left; i--)
			;
		if (!i) {
			sb_ev_set_cursor(r, start);
			ret = -EFAULT;
		} else {
			sb_ev_set_cursor(r, first_seq + i - !!lost);
			ret = ends[i - 1];
		}
	}
	mutex_unlock(&r->lock);
out_free:
	kfree(kbuf);
	return ret;
}

static __poll_t sb_ev_poll(struct file *file, poll_table *wait)
{
	struct sb_ev_reader *r = file->private_data;

	poll_wait(file, &sb_ev_wait, wait);
	return sb_ev_available(r) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations sb_ev_fops = {
	.owner		= THIS_MODULE,
	.open		= sb_ev_open,
	.release	= sb_ev_release,
	.read		= sb_ev_read,
	.poll		= sb_ev_poll,
	.llseek		= no_llseek,
};

/**
 * sb_events_init() - allocate the ring and create the debugfs file
 * @dir:	debugfs directory (NULL: the debugfs root).
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int sb_events_init(struct dentry *dir)
{
	unsigned int size = roundup_pow_of_two(clamp(event_log_size, 64U,
						     1U << 20));
	struct sb_event_rec *ring;
	unsigned long irqflags;

	ring = vzalloc(array_size(size, sizeof(*ring)));
	if (!ring)
		return -ENOMEM;
	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	sb_ring_mask = size - 1;
	sb_ring = ring;
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	sb_events_resync_clock();
	sb_ev_dentry = debugfs_create_file(SUSPEND_BLOCK_EVENTS_FILE, 0400, dir,
					   NULL, &sb_ev_fops);
	return 0;
}

void sb_events_exit(void)
{
	struct sb_event_rec *ring;
	unsigned long irqflags;

	debugfs_remove(sb_ev_dentry);
	raw_spin_lock_irqsave(&sb_ring_lock, irqflags);
	ring = sb_ring;
	sb_ring = NULL;
	raw_spin_unlock_irqrestore(&sb_ring_lock, irqflags);
	irq_work_sync(&sb_ev_irq_work);
	vfree(ring);
}
