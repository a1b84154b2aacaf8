// SPDX-License-Identifier: GPL-2.0
/*
 * sb_torture.ko: a torture client of suspend_block.ko, for tests.
 *
 * For a given time, actors call the suspend blocker API at random, each on
 * blockers of its own, from every context the API allows:
 *
 * - kthreads: init, block, unblock, destroy and is_active, each plain or
 *   with preemption, bottom halves or interrupts disabled, or under a
 *   spinlock;
 * - hrtimers (hard interrupt context on a kernel without PREEMPT_RT; not
 *   HRTIMER_MODE_*_HARD, which the API, like __pm_stay_awake(), does not
 *   allow on RT: lockdep's raw-lock nesting check says so) and timer_list
 *   timers in softirq context: the same operations;
 * - work kthreads: suspend-blocking work queued (from the kthread or from
 *   a hard interrupt), queued again while pending or while running,
 *   cancelled, flushed, destroyed and initialised again, on three
 *   workqueues.
 *
 * A blocker has one owner, which alone touches it, so the owner knows
 * exactly what the statistics table must say about it: the activations
 * that ended in its current incarnation (the table's count, plus one while
 * active), and for every destroy the count folded into
 * deleted_suspend_blockers. A work sequence leaves its work idle, so each
 * sequence that queued the work is exactly one activation of its blocker.
 *
 * Actors run in bursts separated by short pauses, and at the end of a
 * burst often release all their blockers. Every TT_PERIOD_MS begins with
 * a quiet window of random length (up to TT_QUIET_MAX_MS, one in four
 * TT_QUIET_LONG_MS; the same for all actors) in which they all release
 * their blockers and wait: opportunistic suspend attempts start there and,
 * when the window ends first, are aborted at random points. The actors are not freezable: they
 * keep running while the system suspends.
 *
 * debugfs sb_torture/:
 *
 * ctl
 *	write "start MS KTHREADS HRTIMERS TIMERS WORKERS SEED" (once per
 *	load), "join" (stop the actors now if still running, and wait for
 *	them), "release" (unblock every active blocker), "destroy" (destroy
 *	every live blocker and work); read: the state ("running N" actors
 *	still running, ...).
 * blockers
 *	one line per blocker: name live active count deleted inits destroys
 *	blocks unblocks (count: what the table's count must be).
 * summary
 *	operations by kind and by context, elapsed time, errors.
 */

#define pr_fmt(fmt) "sb_torture: " fmt

#include <linux/bottom_half.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/prandom.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/suspend_blocker.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#define TT_MAX_ACTORS	8	/* of each kind */
#define TT_BLOCKERS	4	/* per blocker actor */
#define TT_WORKS	3	/* per work actor */
#define TT_NAME_LEN	24
#define TT_GATE_TIMEOUT	(5 * HZ)
#define TT_PERIOD_MS	400
#define TT_QUIET_MAX_MS	150
#define TT_QUIET_LONG_MS	350

enum tt_kind { TT_KTHREAD, TT_HRTIMER, TT_TIMER, TT_WORKER, TT_KINDS };

static const char * const tt_kind_names[TT_KINDS] = {
	"kthread", "hrtimer", "timer", "work",
};

enum tt_op {
	TT_OP_INIT, TT_OP_DESTROY, TT_OP_BLOCK, TT_OP_UNBLOCK, TT_OP_CHECK,
	TT_OP_QUEUE, TT_OP_QUEUE_IRQ, TT_OP_REQUEUE, TT_OP_CANCEL,
	TT_OP_FLUSH, TT_OPS,
};

static const char * const tt_op_names[TT_OPS] = {
	"init", "destroy", "block", "unblock", "is_active", "queue",
	"queue_irq", "requeue", "cancel_sync", "flush",
};

/* Contexts of the blocker operations (hrtimer and timer: their own). */
enum tt_ctx {
	TT_CTX_TASK, TT_CTX_NOPREEMPT, TT_CTX_BH, TT_CTX_IRQSOFF,
	TT_CTX_SPINLOCK, TT_CTX_HARDIRQ, TT_CTX_SOFTIRQ, TT_CTXS,
};

static const char * const tt_ctx_names[TT_CTXS] = {
	"task", "preempt_off", "bh_off", "irqs_off", "spinlock", "hardirq",
	"softirq",
};

/* What the owner knows about one of its blockers. */
struct tt_count {
	char name[TT_NAME_LEN];
	bool live;
	bool active;
	unsigned int count;	/* activations ended in this incarnation */
	u64 deleted;		/* counts folded in by destroys */
	u64 inits, destroys, blocks, unblocks;
};

struct tt_blocker {
	struct suspend_blocker sb;
	struct tt_count c;
};

struct tt_actor;

struct tt_work {
	struct suspend_blocking_work sbw;
	struct tt_count c;
	struct tt_actor *actor;
	struct workqueue_struct *wq;	/* of the current sequence */
	struct hrtimer qtimer;		/* queues the work in hard irq */
	int qtimer_ret;			/* what that queueing returned */
	bool gate_open;
	atomic_t entered;		/* runs of the callback begun */
};

struct tt_actor {
	enum tt_kind kind;
	int id;
	struct rnd_state rnd;
	struct task_struct *task;
	struct hrtimer hrt;
	struct timer_list tl;
	spinlock_t lock;		/* TT_CTX_SPINLOCK */
	wait_queue_head_t wait;		/* work actors: gate events */
	int burst;			/* operations left in this burst */
	bool done;
	struct tt_blocker b[TT_BLOCKERS];
	struct tt_work w[TT_WORKS];
	u64 ops[TT_OPS];
	u64 ctx[TT_CTXS];
	atomic_long_t errors;		/* also counted by work callbacks */
};

static DEFINE_MUTEX(tt_mutex);		/* ctl commands */
static struct tt_actor *tt_actors;
static unsigned int tt_nr_actors;
static struct workqueue_struct *tt_wq;
static bool tt_started, tt_joined;
static ktime_t tt_start, tt_deadline, tt_end;
static bool tt_stop;
static atomic_t tt_running = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(tt_done_wait);
static u64 tt_seed;
static struct dentry *tt_dir;

static u32 tt_rand(struct tt_actor *a, u32 n)
{
	return prandom_u32_state(&a->rnd) % n;
}

/* Something the API did not do as documented: counted and said. */
static void tt_error(struct tt_actor *a, const char *what)
{
	atomic_long_inc(&a->errors);
	pr_warn_ratelimited("%s%d: %s\n", tt_kind_names[a->kind], a->id, what);
}

static ktime_t tt_us(u64 us)
{
	return ns_to_ktime(us * NSEC_PER_USEC);
}

/*
 * The end of the quiet window that now lies in, or 0 outside one. The
 * window of each period has a length drawn from the period's number and
 * the seed, so that every actor sees the same windows.
 */
static ktime_t tt_quiet_until(void)
{
	u64 t = ktime_to_ns(ktime_sub(ktime_get(), tt_start));
	u64 period = div64_u64(t, TT_PERIOD_MS * NSEC_PER_MSEC);
	u64 begin = period * TT_PERIOD_MS * NSEC_PER_MSEC;
	u32 h = hash_64(period ^ tt_seed, 32);
	u64 quiet = (h & 3 ? h % TT_QUIET_MAX_MS : TT_QUIET_LONG_MS) *
		    NSEC_PER_MSEC;

	if (t - begin >= quiet)
		return 0;
	return ktime_add_ns(tt_start, begin + quiet);
}

static bool tt_expired(void)
{
	return READ_ONCE(tt_stop) || ktime_after(ktime_get(), tt_deadline);
}

static void tt_actor_done(struct tt_actor *a)
{
	if (a->done)
		return;
	a->done = true;
	if (atomic_dec_and_test(&tt_running)) {
		tt_end = ktime_get();
		wake_up_all(&tt_done_wait);
	}
}

/* ------------------------------------------------------------ blockers -- */

static void tt_init(struct tt_actor *a, struct tt_blocker *b)
{
	suspend_blocker_init(&b->sb, b->c.name);
	b->c.live = true;
	b->c.active = false;
	b->c.count = 0;
	b->c.inits++;
	a->ops[TT_OP_INIT]++;
}

static void tt_destroy(struct tt_actor *a, struct tt_blocker *b)
{
	suspend_blocker_destroy(&b->sb);
	/* an active blocker's running activation is counted first */
	if (b->c.active)
		b->c.count++;
	b->c.deleted += b->c.count;
	b->c.live = false;
	b->c.active = false;
	b->c.destroys++;
	a->ops[TT_OP_DESTROY]++;
}

static void tt_block(struct tt_actor *a, struct tt_blocker *b)
{
	suspend_block(&b->sb);
	b->c.active = true;
	b->c.blocks++;
	a->ops[TT_OP_BLOCK]++;
}

static void tt_unblock(struct tt_actor *a, struct tt_blocker *b)
{
	suspend_unblock(&b->sb);
	if (b->c.active)
		b->c.count++;
	b->c.active = false;
	b->c.unblocks++;
	a->ops[TT_OP_UNBLOCK]++;
}

/* One random operation on one of @a's blockers, in the caller's context. */
static void tt_blocker_op(struct tt_actor *a)
{
	struct tt_blocker *b = &a->b[tt_rand(a, TT_BLOCKERS)];
	u32 r = tt_rand(a, 32);

	if (!b->c.live) {
		tt_init(a, b);
		return;
	}
	if (r < 14) {
		tt_block(a, b);
	} else if (r < 28) {
		tt_unblock(a, b);
	} else if (r < 30) {
		/* blocking an active blocker changes nothing */
		tt_block(a, b);
		tt_block(a, b);
	} else if (r < 31) {
		tt_destroy(a, b);
	} else {
		a->ops[TT_OP_CHECK]++;
		if (suspend_blocker_is_active(&b->sb) != b->c.active)
			tt_error(a, "is_active disagrees with the owner");
	}
}

static void tt_release_own(struct tt_actor *a)
{
	int i;

	for (i = 0; i < TT_BLOCKERS; i++)
		if (a->b[i].c.live && a->b[i].c.active)
			tt_unblock(a, &a->b[i]);
}

/* End of a burst: often release everything, so suspend attempts start. */
static void tt_burst_end(struct tt_actor *a)
{
	if (tt_rand(a, 4))
		tt_release_own(a);
}

/* In a quiet window: release everything, sleep until its end. */
static bool tt_kthread_quiet(struct tt_actor *a)
{
	ktime_t until = tt_quiet_until();
	s64 us;

	if (!until)
		return false;
	tt_release_own(a);
	us = ktime_us_delta(until, ktime_get());
	if (us > 0)
		usleep_range(us, us + 100);
	return true;
}

/* A kthread's operation, in a random context. */
static void tt_kthread_op(struct tt_actor *a)
{
	enum tt_ctx ctx = tt_rand(a, TT_CTX_SPINLOCK + 1);
	unsigned long flags;

	a->ctx[ctx]++;
	switch (ctx) {
	case TT_CTX_NOPREEMPT:
		preempt_disable();
		tt_blocker_op(a);
		preempt_enable();
		break;
	case TT_CTX_BH:
		local_bh_disable();
		tt_blocker_op(a);
		local_bh_enable();
		break;
	case TT_CTX_IRQSOFF:
		local_irq_save(flags);
		tt_blocker_op(a);
		local_irq_restore(flags);
		break;
	case TT_CTX_SPINLOCK:
		spin_lock_irqsave(&a->lock, flags);
		tt_blocker_op(a);
		spin_unlock_irqrestore(&a->lock, flags);
		break;
	default:
		tt_blocker_op(a);
		break;
	}
}

static int tt_kthread_fn(void *data)
{
	struct tt_actor *a = data;

	while (!kthread_should_stop()) {
		if (tt_expired()) {
			tt_actor_done(a);
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule();
			__set_current_state(TASK_RUNNING);
			continue;
		}
		if (tt_kthread_quiet(a))
			continue;
		if (a->burst-- > 0) {
			tt_kthread_op(a);
			if (!tt_rand(a, 8))
				udelay(tt_rand(a, 20));
			else
				cond_resched();
			continue;
		}
		tt_burst_end(a);
		a->burst = 1 + tt_rand(a, 200);
		usleep_range(100, 100 + tt_rand(a, 20000));
	}
	tt_actor_done(a);
	return 0;
}

/*
 * Next expiry of a timer actor: soon within a burst, later after one, at
 * the end of a quiet window within one.
 */
static u64 tt_timer_next_us(struct tt_actor *a)
{
	ktime_t until = tt_quiet_until();

	if (until) {
		tt_release_own(a);
		return max_t(s64, ktime_us_delta(until, ktime_get()), 1);
	}
	if (a->burst-- > 0)
		return 50 + tt_rand(a, 450);
	tt_burst_end(a);
	a->burst = 1 + tt_rand(a, 50);
	return 1000 + tt_rand(a, 20000);
}

static enum hrtimer_restart tt_hrtimer_fn(struct hrtimer *t)
{
	struct tt_actor *a = container_of(t, struct tt_actor, hrt);
	int n;

	if (tt_expired()) {
		tt_actor_done(a);
		return HRTIMER_NORESTART;
	}
	for (n = tt_quiet_until() ? 0 : 1 + tt_rand(a, 4); n; n--) {
		a->ctx[TT_CTX_HARDIRQ]++;
		tt_blocker_op(a);
	}
	hrtimer_forward_now(t, tt_us(tt_timer_next_us(a)));
	return HRTIMER_RESTART;
}

static void tt_timer_fn(struct timer_list *t)
{
	struct tt_actor *a = from_timer(a, t, tl);
	int n;

	if (tt_expired()) {
		tt_actor_done(a);
		return;
	}
	for (n = tt_quiet_until() ? 0 : 1 + tt_rand(a, 4); n; n--) {
		a->ctx[TT_CTX_SOFTIRQ]++;
		tt_blocker_op(a);
	}
	mod_timer(&a->tl, jiffies + 1 + usecs_to_jiffies(tt_timer_next_us(a)));
}

/* ---------------------------------------------------------------- work -- */

static void tt_work_fn(struct work_struct *work)
{
	struct tt_work *w = container_of(to_suspend_blocking_work(work),
					 struct tt_work, sbw);

	atomic_inc(&w->entered);
	wake_up(&w->actor->wait);
	if (!wait_event_timeout(w->actor->wait, READ_ONCE(w->gate_open),
				TT_GATE_TIMEOUT))
		tt_error(w->actor, "the work's gate stayed closed");
}

static enum hrtimer_restart tt_qtimer_fn(struct hrtimer *t)
{
	struct tt_work *w = container_of(t, struct tt_work, qtimer);

	w->qtimer_ret = queue_suspend_blocking_work(w->wq, &w->sbw);
	return HRTIMER_NORESTART;
}

static void tt_work_init(struct tt_actor *a, struct tt_work *w)
{
	suspend_blocking_work_init(&w->sbw, tt_work_fn, w->c.name);
	w->c.live = true;
	w->c.active = false;
	w->c.count = 0;
	w->c.inits++;
	a->ops[TT_OP_INIT]++;
}

static void tt_work_destroy(struct tt_actor *a, struct tt_work *w)
{
	suspend_blocking_work_destroy(&w->sbw);
	w->c.deleted += w->c.count;
	w->c.live = false;
	w->c.destroys++;
	a->ops[TT_OP_DESTROY]++;
}

static bool tt_queue(struct tt_actor *a, struct tt_work *w)
{
	a->ops[TT_OP_QUEUE]++;
	w->c.blocks++;
	return queue_suspend_blocking_work(w->wq, &w->sbw);
}

static void tt_gate(struct tt_actor *a, struct tt_work *w, bool open)
{
	WRITE_ONCE(w->gate_open, open);
	if (open)
		wake_up_all(&a->wait);
}

/* Wait until the callback has begun its @n-th run. */
static void tt_wait_entered(struct tt_actor *a, struct tt_work *w, int n)
{
	if (!wait_event_timeout(a->wait, atomic_read(&w->entered) >= n,
				TT_GATE_TIMEOUT))
		tt_error(a, "the work's callback never ran");
}

/*
 * One sequence on an idle, live work; it leaves the work idle again. If
 * it queued the work, its blocker was activated exactly once: a pending
 * or running work keeps the blocker active, and nothing here lets the
 * work go idle before the sequence's final flush or cancel.
 */
static void tt_work_sequence(struct tt_actor *a, struct tt_work *w)
{
	struct workqueue_struct * const wqs[] = {
		system_wq, system_highpri_wq, tt_wq,
	};
	bool queued = true;
	int n;

	w->wq = wqs[tt_rand(a, ARRAY_SIZE(wqs))];
	n = atomic_read(&w->entered);
	switch (tt_rand(a, 5)) {
	case 0:	/* queue, then flush */
		if (!tt_queue(a, w))
			tt_error(a, "an idle work was not queued");
		if (tt_rand(a, 2))
			usleep_range(10, 10 + tt_rand(a, 500));
		flush_work(&w->sbw.work);
		a->ops[TT_OP_FLUSH]++;
		break;
	case 1:	/* queue, then cancel (pending, running or done) */
		if (!tt_queue(a, w))
			tt_error(a, "an idle work was not queued");
		if (tt_rand(a, 2))
			udelay(tt_rand(a, 100));
		cancel_suspend_blocking_work_sync(&w->sbw);
		a->ops[TT_OP_CANCEL]++;
		w->c.unblocks++;
		break;
	case 2:	/* queue again while the callback runs */
		tt_gate(a, w, false);
		if (!tt_queue(a, w))
			tt_error(a, "an idle work was not queued");
		tt_wait_entered(a, w, n + 1);
		a->ops[TT_OP_REQUEUE]++;
		if (!tt_queue(a, w))	/* running, not pending: queued */
			tt_error(a, "a running work was not queued again");
		tt_gate(a, w, true);
		flush_work(&w->sbw.work);
		a->ops[TT_OP_FLUSH]++;
		break;
	case 3:	/* queue twice at once (the second usually finds it pending) */
		tt_gate(a, w, false);
		if (!tt_queue(a, w))
			tt_error(a, "an idle work was not queued");
		a->ops[TT_OP_REQUEUE]++;
		tt_queue(a, w);
		tt_gate(a, w, true);
		if (tt_rand(a, 2)) {
			flush_work(&w->sbw.work);
			a->ops[TT_OP_FLUSH]++;
		} else {
			cancel_suspend_blocking_work_sync(&w->sbw);
			a->ops[TT_OP_CANCEL]++;
			w->c.unblocks++;
		}
		break;
	default: /* queued from a hard interrupt, or not at all */
		w->qtimer_ret = -1;
		hrtimer_start(&w->qtimer, tt_us(tt_rand(a, 300)),
			      HRTIMER_MODE_REL);
		usleep_range(50, 350);
		a->ops[TT_OP_QUEUE_IRQ]++;
		if (hrtimer_cancel(&w->qtimer)) {
			queued = false;		/* it never fired */
		} else {
			w->c.blocks++;
			if (w->qtimer_ret != 1)
				tt_error(a, "an idle work was not queued from hard irq");
		}
		if (tt_rand(a, 2)) {
			flush_work(&w->sbw.work);
			a->ops[TT_OP_FLUSH]++;
		} else {
			cancel_suspend_blocking_work_sync(&w->sbw);
			a->ops[TT_OP_CANCEL]++;
		}
		break;
	}
	tt_gate(a, w, true);
	if (queued)
		w->c.count++;
	a->ops[TT_OP_CHECK]++;
	if (suspend_blocker_is_active(&w->sbw.suspend_blocker) ||
	    w->sbw.active)
		tt_error(a, "an idle work still blocks suspend");
}

static int tt_worker_fn(void *data)
{
	struct tt_actor *a = data;

	while (!kthread_should_stop()) {
		struct tt_work *w = &a->w[tt_rand(a, TT_WORKS)];

		if (tt_expired()) {
			tt_actor_done(a);
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule();
			__set_current_state(TASK_RUNNING);
			continue;
		}
		if (tt_kthread_quiet(a))
			continue;
		a->ctx[TT_CTX_TASK]++;
		if (!w->c.live)
			tt_work_init(a, w);
		else if (!tt_rand(a, 16))
			tt_work_destroy(a, w);
		else
			tt_work_sequence(a, w);
		if (a->burst-- <= 0) {
			a->burst = 1 + tt_rand(a, 50);
			usleep_range(100, 100 + tt_rand(a, 20000));
		}
	}
	tt_actor_done(a);
	return 0;
}

/* ------------------------------------------------------------- control -- */

static void tt_actor_setup(struct tt_actor *a, enum tt_kind kind, int id)
{
	int i;

	a->kind = kind;
	a->id = id;
	prandom_seed_state(&a->rnd, tt_seed * 1000003 + kind * 100 + id);
	spin_lock_init(&a->lock);
	init_waitqueue_head(&a->wait);
	hrtimer_init(&a->hrt, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	a->hrt.function = tt_hrtimer_fn;
	timer_setup(&a->tl, tt_timer_fn, 0);
	for (i = 0; i < TT_BLOCKERS; i++)
		snprintf(a->b[i].c.name, TT_NAME_LEN, "tt_%c%d_b%d",
			 tt_kind_names[kind][0], id, i);
	for (i = 0; i < TT_WORKS; i++) {
		struct tt_work *w = &a->w[i];

		snprintf(w->c.name, TT_NAME_LEN, "tt_w%d_%d", id, i);
		w->actor = a;
		w->gate_open = true;
		atomic_set(&w->entered, 0);
		hrtimer_init(&w->qtimer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL);
		w->qtimer.function = tt_qtimer_fn;
	}
}

static int tt_start_run(unsigned int ms, const unsigned int nr[TT_KINDS])
{
	unsigned int i, k, n = 0;

	for (k = 0; k < TT_KINDS; k++) {
		if (nr[k] > TT_MAX_ACTORS)
			return -ERANGE;
		n += nr[k];
	}
	if (!n || !ms || ms > 3600 * 1000)
		return -ERANGE;
	if (tt_started)
		return -EBUSY;
	tt_actors = kcalloc(n, sizeof(*tt_actors), GFP_KERNEL);
	if (!tt_actors)
		return -ENOMEM;
	tt_nr_actors = n;
	n = 0;
	for (k = 0; k < TT_KINDS; k++)
		for (i = 0; i < nr[k]; i++)
			tt_actor_setup(&tt_actors[n++], k, i);
	tt_started = true;
	tt_stop = false;
	tt_start = ktime_get();
	tt_deadline = ktime_add_ms(tt_start, ms);
	atomic_set(&tt_running, tt_nr_actors);
	for (n = 0; n < tt_nr_actors; n++) {
		struct tt_actor *a = &tt_actors[n];

		switch (a->kind) {
		case TT_KTHREAD:
		case TT_WORKER:
			a->task = kthread_run(a->kind == TT_KTHREAD ?
					      tt_kthread_fn : tt_worker_fn, a,
					      "sb_torture/%c%d",
					      tt_kind_names[a->kind][0], a->id);
			if (IS_ERR(a->task)) {
				a->task = NULL;
				tt_error(a, "kthread_run failed");
				tt_actor_done(a);
			} else {
				get_task_struct(a->task);
			}
			break;
		case TT_HRTIMER:
			hrtimer_start(&a->hrt, tt_us(100 + n),
				      HRTIMER_MODE_REL);
			break;
		default:
			mod_timer(&a->tl, jiffies + 1);
			break;
		}
	}
	return 0;
}

/* Stop the actors (if still running) and wait for every one of them. */
static void tt_join(void)
{
	unsigned int n;

	if (!tt_started || tt_joined)
		return;
	WRITE_ONCE(tt_stop, true);
	for (n = 0; n < tt_nr_actors; n++) {
		struct tt_actor *a = &tt_actors[n];

		if (a->task) {
			kthread_stop(a->task);
			put_task_struct(a->task);
			a->task = NULL;
		}
		hrtimer_cancel(&a->hrt);
		del_timer_sync(&a->tl);
		/* an actor whose timer was stopped before it saw the end */
		if (!a->done)
			tt_actor_done(a);
	}
	tt_joined = true;
}

static void tt_release_all(void)
{
	unsigned int n, i;

	for (n = 0; n < tt_nr_actors; n++)
		for (i = 0; i < TT_BLOCKERS; i++) {
			struct tt_blocker *b = &tt_actors[n].b[i];

			if (b->c.live && b->c.active)
				tt_unblock(&tt_actors[n], b);
		}
}

static void tt_destroy_all(void)
{
	unsigned int n, i;

	for (n = 0; n < tt_nr_actors; n++) {
		struct tt_actor *a = &tt_actors[n];

		for (i = 0; i < TT_BLOCKERS; i++)
			if (a->b[i].c.live)
				tt_destroy(a, &a->b[i]);
		for (i = 0; i < TT_WORKS; i++)
			if (a->w[i].c.live)
				tt_work_destroy(a, &a->w[i]);
	}
}

/* Every live work is idle after the join; its blocker must be too. */
static bool tt_actor_has_blockers(const struct tt_actor *a)
{
	return a->kind != TT_WORKER;
}

static ssize_t tt_ctl_write(struct file *f, const char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	unsigned int ms, nr[TT_KINDS];
	char buf[96], word[16];
	unsigned long long seed;
	int ret = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%15s", word) != 1)
		return -EINVAL;

	mutex_lock(&tt_mutex);
	if (!strcmp(word, "start")) {
		if (sscanf(buf, "%*s %u %u %u %u %u %llu", &ms, &nr[TT_KTHREAD],
			   &nr[TT_HRTIMER], &nr[TT_TIMER], &nr[TT_WORKER],
			   &seed) != 6) {
			ret = -EINVAL;
		} else {
			tt_seed = seed;
			ret = tt_start_run(ms, nr);
		}
	} else if (!strcmp(word, "join")) {
		tt_join();
	} else if (!strcmp(word, "release") || !strcmp(word, "destroy")) {
		if (!tt_joined)
			ret = -EBUSY;
		else if (word[0] == 'r')
			tt_release_all();
		else
			tt_destroy_all();
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&tt_mutex);
	return ret ? ret : len;
}

static int tt_ctl_show(struct seq_file *m, void *unused)
{
	mutex_lock(&tt_mutex);
	seq_printf(m, "started %d\njoined %d\nrunning %d\nactors %u\nseed %llu\n",
		   tt_started, tt_joined, atomic_read(&tt_running),
		   tt_nr_actors, tt_seed);
	mutex_unlock(&tt_mutex);
	return 0;
}

static void tt_show_count(struct seq_file *m, const struct tt_count *c)
{
	seq_printf(m, "%s %d %d %u %llu %llu %llu %llu %llu\n", c->name,
		   c->live, c->active, c->count + c->active, c->deleted,
		   c->inits, c->destroys, c->blocks, c->unblocks);
}

static int tt_blockers_show(struct seq_file *m, void *unused)
{
	unsigned int n, i;

	mutex_lock(&tt_mutex);
	seq_puts(m, "name live active count deleted inits destroys blocks unblocks\n");
	for (n = 0; n < tt_nr_actors; n++) {
		const struct tt_actor *a = &tt_actors[n];

		if (tt_actor_has_blockers(a))
			for (i = 0; i < TT_BLOCKERS; i++)
				tt_show_count(m, &a->b[i].c);
		else
			for (i = 0; i < TT_WORKS; i++)
				tt_show_count(m, &a->w[i].c);
	}
	mutex_unlock(&tt_mutex);
	return 0;
}

static int tt_summary_show(struct seq_file *m, void *unused)
{
	u64 ops[TT_OPS] = {}, ctx[TT_CTXS] = {}, kind_ops[TT_KINDS] = {};
	u64 errors = 0, total = 0;
	ktime_t end;
	unsigned int n, i;

	mutex_lock(&tt_mutex);
	for (n = 0; n < tt_nr_actors; n++) {
		const struct tt_actor *a = &tt_actors[n];

		for (i = 0; i < TT_OPS; i++) {
			ops[i] += a->ops[i];
			kind_ops[a->kind] += a->ops[i];
			total += a->ops[i];
		}
		for (i = 0; i < TT_CTXS; i++)
			ctx[i] += a->ctx[i];
		errors += atomic_long_read(&a->errors);
	}
	end = atomic_read(&tt_running) ? ktime_get() : tt_end;
	seq_printf(m, "elapsed_ms %lld\nops %llu\nerrors %llu\n",
		   tt_started ? ktime_ms_delta(end, tt_start) : 0LL, total,
		   errors);
	for (i = 0; i < TT_OPS; i++)
		seq_printf(m, "op_%s %llu\n", tt_op_names[i], ops[i]);
	for (i = 0; i < TT_CTXS; i++)
		seq_printf(m, "ctx_%s %llu\n", tt_ctx_names[i], ctx[i]);
	for (i = 0; i < TT_KINDS; i++)
		seq_printf(m, "actor_%s %llu\n", tt_kind_names[i], kind_ops[i]);
	mutex_unlock(&tt_mutex);
	return 0;
}

static int tt_ctl_open(struct inode *inode, struct file *file)
{
	return single_open(file, tt_ctl_show, NULL);
}

static const struct file_operations tt_ctl_fops = {
	.owner		= THIS_MODULE,
	.open		= tt_ctl_open,
	.read		= seq_read,
	.write		= tt_ctl_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

DEFINE_SHOW_ATTRIBUTE(tt_blockers);
DEFINE_SHOW_ATTRIBUTE(tt_summary);

static int __init tt_init_module(void)
{
	tt_wq = alloc_workqueue("sb_torture", 0, 0);
	if (!tt_wq)
		return -ENOMEM;
	tt_dir = debugfs_create_dir("sb_torture", NULL);
	debugfs_create_file("ctl", 0600, tt_dir, NULL, &tt_ctl_fops);
	debugfs_create_file("blockers", 0400, tt_dir, NULL, &tt_blockers_fops);
	debugfs_create_file("summary", 0400, tt_dir, NULL, &tt_summary_fops);
	return 0;
}

static void __exit tt_exit_module(void)
{
	debugfs_remove_recursive(tt_dir);
	mutex_lock(&tt_mutex);
	tt_join();
	tt_destroy_all();
	mutex_unlock(&tt_mutex);
	destroy_workqueue(tt_wq);
	kfree(tt_actors);
}

module_init(tt_init_module);
module_exit(tt_exit_module);
MODULE_DESCRIPTION("Torture client of suspend_block.ko (tests only)");
MODULE_LICENSE("GPL");
