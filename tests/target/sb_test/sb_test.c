// SPDX-License-Identifier: GPL-2.0
/*
 * sb_test.ko: a test-only kernel client of suspend_block.ko.
 *
 * It plays the kernel drivers of the tests: it blocks suspend from a hard
 * interrupt (an hrtimer, also armed to fire a given time after a suspend
 * starts), holds a mainline wakeup source, blocks on the Nth resume (as a
 * keypad driver does on its wake interrupt), runs suspend-blocking work,
 * keeps a task unfreezable, registers many idle blockers, has a device
 * whose suspend callback fails with -EAGAIN or whose noirq callback
 * blocks or whose suspend callback is slow (and as many more such devices,
 * suspended in parallel, as a test asks), registers a power supply fed
 * from test_power's test_ac whose change handling is slow, and times the
 * API against mainline's wakeup-source calls.
 * Everything is driven through /sys/kernel/debug/sb_test/; write "help"
 * to any file to see nothing: the commands are listed at each file's
 * handler below.
 */

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/power_supply.h>
#include <linux/pm_wakeup.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/suspend.h>
#include <linux/suspend_blocker.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <trace/events/power.h>

static struct dentry *dir;
static struct suspend_blocker blocker;	/* "sb_test" */
static struct suspend_blocker resume_blocker;	/* "sb_test_resume" */
static struct suspend_blocker bench_blocker;	/* "sb_test_bench" */
static struct wakeup_source *ws;	/* "sb_test_ws" */
static struct wakeup_source *bench_ws;	/* "sb_test_bench_ws" */
static struct hrtimer timer;

enum timer_action { TIMER_BLOCK, TIMER_UNBLOCK, TIMER_WS_ON };
static enum timer_action timer_action;	/* what the timer does */
static s64 timer_fired_ns;		/* CLOCK_BOOTTIME when it last did */
/* Armed by *_on_prepare_ms: start the timer at the next PM_SUSPEND_PREPARE. */
static enum timer_action prepare_action;
static atomic_t prepare_ms = ATOMIC_INIT(-1);
/* The device's suspend callback fails with -EAGAIN this many more times. */
static atomic_t fail_suspends = ATOMIC_INIT(0);
/*
 * sb_test_supply, supplied from test_power's "test_ac": its
 * external_power_changed() (called from test_ac's power_supply_changed()
 * work, before that work releases test_ac's wakeup source) sleeps this
 * many ms, so the supply's wakeup source stays active that long.
 */
static atomic_t psy_delay_ms = ATOMIC_INIT(0);
static struct power_supply *psy;
/* The device's suspend callback sleeps this many ms. */
static atomic_t slow_suspend_ms = ATOMIC_INIT(0);
/* One shot: the device's suspend_noirq callback blocks "sb_test". */
static atomic_t block_in_noirq = ATOMIC_INIT(0);
/*
 * One shot: block "sb_test" at the suspend_resume trace event
 * "machine_suspend" (start): interrupts hard-disabled and, on
 * suspend-to-RAM, timekeeping already suspended.
 */
static atomic_t block_at_machine_suspend = ATOMIC_INIT(0);
static bool probe_registered;
static struct platform_device *pdev;
/* "idle_blockers N": N registered, never activated blockers. */
static struct suspend_blocker *idle;
static char (*idle_names)[24];
static unsigned int idle_n;
static atomic_t hold_after_resumes = ATOMIC_INIT(0);
static bool refuse_release;
static DECLARE_WAIT_QUEUE_HEAD(refuse_wait);
static atomic_t refusing = ATOMIC_INIT(0);
static struct suspend_blocking_work sbwork;	/* "sb_test_work" */
static unsigned int work_ms;
static atomic_t work_runs = ATOMIC_INIT(0);
static u64 bench_sb_ps, bench_ws_ps, bench_iters;
/* "lat N": percentiles of how late a blocking timer interrupt fires */
static u64 lat_p50_ns, lat_p99_ns, lat_max_ns;
/* "garbage_init N": ns per init of a blocker whose memory is not zeroed */
static u64 garbage_init_ns;

static enum hrtimer_restart timer_fn(struct hrtimer *t)
{
	WRITE_ONCE(timer_fired_ns, ktime_get_boottime_ns());
	switch (timer_action) {
	case TIMER_BLOCK:
		suspend_block(&blocker);
		break;
	case TIMER_UNBLOCK:
		suspend_unblock(&blocker);
		break;
	case TIMER_WS_ON:
		__pm_stay_awake(ws);
		break;
	}
	return HRTIMER_NORESTART;
}

/*
 * The timers run in hard interrupt context on a kernel without
 * PREEMPT_RT. Not HRTIMER_MODE_*_HARD: on RT those stay in hard interrupt
 * context, where the API may not be called (as __pm_stay_awake() may not),
 * and lockdep's raw-lock nesting check says so on any kernel.
 */
static void start_timer(enum timer_action action, u64 ms)
{
	timer_action = action;
	hrtimer_start(&timer, ms_to_ktime(ms), HRTIMER_MODE_REL);
}

static int pm_notify(struct notifier_block *nb, unsigned long action,
		     void *unused)
{
	int ms;

	if (action == PM_SUSPEND_PREPARE) {
		ms = atomic_xchg(&prepare_ms, -1);
		if (ms >= 0)
			start_timer(prepare_action, ms);
	}
	if (action == PM_POST_SUSPEND &&
	    atomic_read(&hold_after_resumes) > 0 &&
	    atomic_dec_and_test(&hold_after_resumes))
		suspend_block(&resume_blocker);
	return NOTIFY_DONE;
}

static struct notifier_block pm_nb = { .notifier_call = pm_notify };

static void machine_suspend_probe(void *unused, const char *action, int val,
				  bool start)
{
	if (start && !strcmp(action, "machine_suspend") &&
	    atomic_xchg(&block_at_machine_suspend, 0))
		suspend_block(&blocker);
}

static void psy_external_power_changed(struct power_supply *p)
{
	int ms = atomic_read(&psy_delay_ms);

	if (ms)
		msleep(ms);
}

static int psy_get_property(struct power_supply *p,
			    enum power_supply_property prop,
			    union power_supply_propval *val)
{
	val->intval = 1;
	return 0;
}

static enum power_supply_property psy_props[] = { POWER_SUPPLY_PROP_PRESENT };
static char *psy_supplied_from[] = { "test_ac" };

static const struct power_supply_desc psy_desc = {
	.name			= "sb_test_supply",
	.type			= POWER_SUPPLY_TYPE_BATTERY,
	.properties		= psy_props,
	.num_properties		= ARRAY_SIZE(psy_props),
	.get_property		= psy_get_property,
	.external_power_changed	= psy_external_power_changed,
};

/*
 * The device's suspend callback: sleeps slow_suspend_ms, fails while
 * fail_suspends > 0.
 */
static int dev_suspend(struct device *dev)
{
	int ms = atomic_read(&slow_suspend_ms);

	if (ms)
		msleep(ms);
	return atomic_dec_if_positive(&fail_suspends) >= 0 ? -EAGAIN : 0;
}

/* The device's suspend_noirq callback (it runs before suspend_block's). */
static int dev_suspend_noirq(struct device *dev)
{
	if (atomic_xchg(&block_in_noirq, 0))
		suspend_block(&blocker);
	return 0;
}

static const struct dev_pm_ops dev_pm_ops = {
	.suspend	= dev_suspend,
	.suspend_noirq	= dev_suspend_noirq,
};

/*
 * "release_at_shutdown": the device's shutdown callback (a reboot or
 * power-off under way) releases "sb_test", as a driver releases its
 * blocker when its device goes, then gives other threads half a second.
 */
static bool release_at_shutdown;

static void dev_shutdown(struct platform_device *p)
{
	if (!READ_ONCE(release_at_shutdown))
		return;
	pr_info("sb_test: shutdown: releasing sb_test\n");
	suspend_unblock(&blocker);
	msleep(500);
	pr_info("sb_test: shutdown: done\n");
}

static struct platform_driver pdrv = {
	.shutdown = dev_shutdown,
	.driver = {
		.name	= "sb_test",
		.pm	= &dev_pm_ops,
	},
};

/*
 * "async_devs N": N more devices of this driver, "sb_test.<i>", suspended
 * asynchronously (in parallel, each in its own async thread), their
 * suspend callback sleeping slow_suspend_ms as sb_test's does.
 */
#define ASYNC_DEVS_MAX 64
static struct platform_device *async_devs[ASYNC_DEVS_MAX];
static unsigned int async_n;

static void async_devs_destroy(void)
{
	while (async_n)
		platform_device_unregister(async_devs[--async_n]);
}

/* Replace the async devices by @n new ones. */
static int async_devs_create(unsigned int n)
{
	struct platform_device *p;

	async_devs_destroy();
	while (async_n < n) {
		p = platform_device_register_simple("sb_test", async_n, NULL, 0);
		if (IS_ERR(p)) {
			async_devs_destroy();
			return PTR_ERR(p);
		}
		device_enable_async_suspend(&p->dev);
		async_devs[async_n++] = p;
	}
	return 0;
}

static void idle_destroy(void)
{
	unsigned int i;

	for (i = 0; i < idle_n; i++)
		suspend_blocker_destroy(&idle[i]);
	kvfree(idle);
	kvfree(idle_names);
	idle = NULL;
	idle_names = NULL;
	idle_n = 0;
}

/* Replace the idle blockers by @n new ones, "sb_test_idle_<i>". */
static int idle_create(unsigned int n)
{
	unsigned int i;

	idle_destroy();
	if (!n)
		return 0;
	idle = kvcalloc(n, sizeof(*idle), GFP_KERNEL);
	idle_names = kvcalloc(n, sizeof(*idle_names), GFP_KERNEL);
	if (!idle || !idle_names) {
		kvfree(idle);
		kvfree(idle_names);
		idle = NULL;
		idle_names = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		snprintf(idle_names[i], sizeof(idle_names[i]), "sb_test_idle_%u",
			 i);
		suspend_blocker_init(&idle[i], idle_names[i]);
		idle_n = i + 1;
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

static void work_fn(struct work_struct *w)
{
	msleep(READ_ONCE(work_ms));
	atomic_inc(&work_runs);
}

#define BENCH_ROUNDS	64

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Time @n block/unblock pairs and @n stay_awake/relax pairs, in
 * BENCH_ROUNDS rounds that alternate which goes first. Each round's
 * per-pair cost is kept and the median is reported, so a round disturbed
 * by the host (TCG shares its cores) does not skew the figure.
 */
static void run_bench(u64 n)
{
	static u64 sb[BENCH_ROUNDS], wsr[BENCH_ROUNDS];
	u64 i, t0, t1, t2, per = div_u64(n, BENCH_ROUNDS);
	unsigned int round;

	for (round = 0; round < BENCH_ROUNDS; round++) {
		preempt_disable();
		if (round & 1) {
			t0 = ktime_get_ns();
			for (i = 0; i < per; i++) {
				__pm_stay_awake(bench_ws);
				__pm_relax(bench_ws);
			}
			t1 = ktime_get_ns();
			for (i = 0; i < per; i++) {
				suspend_block(&bench_blocker);
				suspend_unblock(&bench_blocker);
			}
			t2 = ktime_get_ns();
			wsr[round] = div64_u64((t1 - t0) * 1000, per);
			sb[round] = div64_u64((t2 - t1) * 1000, per);
		} else {
			t0 = ktime_get_ns();
			for (i = 0; i < per; i++) {
				suspend_block(&bench_blocker);
				suspend_unblock(&bench_blocker);
			}
			t1 = ktime_get_ns();
			for (i = 0; i < per; i++) {
				__pm_stay_awake(bench_ws);
				__pm_relax(bench_ws);
			}
			t2 = ktime_get_ns();
			sb[round] = div64_u64((t1 - t0) * 1000, per);
			wsr[round] = div64_u64((t2 - t1) * 1000, per);
		}
		preempt_enable();
		cond_resched();
	}
	sort(sb, BENCH_ROUNDS, sizeof(u64), cmp_u64, NULL);
	sort(wsr, BENCH_ROUNDS, sizeof(u64), cmp_u64, NULL);
	bench_iters = per * BENCH_ROUNDS;
	/* medians, in picoseconds per pair */
	bench_sb_ps = sb[BENCH_ROUNDS / 2];
	bench_ws_ps = wsr[BENCH_ROUNDS / 2];
}

/* Parse "WORD [NUMBER]" from user space. */
static int get_cmd(const char __user *ubuf, size_t len, char *word,
		   size_t wlen, u64 *num)
{
	char buf[64];
	int n;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	*num = 0;
	n = sscanf(buf, "%31s %llu", word, num);
	return n >= 1 ? 0 : -EINVAL;
}

#define LAT_MAX		20000

static struct hrtimer lat_timer;
static DECLARE_COMPLETION(lat_done);
static u64 lat_late_ns;

/* A driver's interrupt: late by how much, and a block+unblock pair. */
static enum hrtimer_restart lat_timer_fn(struct hrtimer *t)
{
	lat_late_ns = ktime_to_ns(ktime_sub(ktime_get(), hrtimer_get_expires(t)));
	suspend_block(&bench_blocker);
	suspend_unblock(&bench_blocker);
	complete(&lat_done);
	return HRTIMER_NORESTART;
}

/*
 * "lat N": N hard-interrupt timers, each set 200 us ahead, that block and
 * unblock sb_test_bench: how late each fires (percentiles). Something
 * that holds the blockers' lock with interrupts off (a reader of the
 * statistics table) makes them late by as long as it holds it, on one
 * CPU as on several.
 */
static int run_lat(u64 n)
{
	u64 *d, i;

	d = kvmalloc_array(n, sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		reinit_completion(&lat_done);
		hrtimer_start(&lat_timer, ktime_add_us(ktime_get(), 200),
			      HRTIMER_MODE_ABS);
		wait_for_completion(&lat_done);
		d[i] = lat_late_ns;
	}
	sort(d, n, sizeof(u64), cmp_u64, NULL);
	lat_p50_ns = d[n / 2];
	lat_p99_ns = d[n - 1 - div_u64(n, 100)];
	lat_max_ns = d[n - 1];
	kvfree(d);
	return 0;
}

/*
 * "garbage_init N": initialise (and destroy) a blocker N times whose
 * memory, as kmalloc() left it, has the module's "initialised" flag bit
 * (BIT(8), a private value this test knows) set by chance: the module
 * must tell it from a live blocker without looking at the others.
 */
static int run_garbage_init(u64 n)
{
	struct suspend_blocker *b;
	u64 i, t0, total = 0;

	b = kmalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		memset(b, 0xa5, sizeof(*b));
		b->flags = BIT(8);
		t0 = ktime_get_ns();
		suspend_blocker_init(b, "sb_test_garbage");
		total += ktime_get_ns() - t0;
		suspend_blocker_destroy(b);
		cond_resched();
	}
	kfree(b);
	garbage_init_ns = div64_u64(total, n);
	return 0;
}

/*
 * ctl: block | unblock | block_after_ms N | unblock_after_ms N |
 *      ws_on_after_ms N | block_on_prepare_ms N | ws_on_prepare_ms N |
 *      ws_on | ws_off | ws_event_ms N | hold_after_resumes N |
 *      release_resume | release_refuse | work_queue MS | work_schedule MS |
 *      work_cancel | bench N | idle_blockers N | fail_suspend N |
 *      slow_suspend_ms N | psy_delay_ms N | block_in_noirq | reinit |
 *      lat N | garbage_init N | block_at_machine_suspend |
 *      release_at_shutdown | async_devs N
 *
 * *_on_prepare_ms N: start the timer N ms after the next suspend starts
 * (PM_SUSPEND_PREPARE, just before the freezer), once.
 */
static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len,
			 loff_t *ppos)
{
	char word[32];
	u64 num;
	int ret = get_cmd(ubuf, len, word, sizeof(word), &num);

	if (ret)
		return ret;
	if (!strcmp(word, "block")) {
		suspend_block(&blocker);
	} else if (!strcmp(word, "unblock")) {
		suspend_unblock(&blocker);
	} else if (!strcmp(word, "block_after_ms")) {
		start_timer(TIMER_BLOCK, num);
	} else if (!strcmp(word, "unblock_after_ms")) {
		start_timer(TIMER_UNBLOCK, num);
	} else if (!strcmp(word, "ws_on_after_ms")) {
		start_timer(TIMER_WS_ON, num);
	} else if (!strcmp(word, "block_on_prepare_ms") ||
		   !strcmp(word, "ws_on_prepare_ms")) {
		if (num > INT_MAX)
			return -ERANGE;
		prepare_action = word[0] == 'b' ? TIMER_BLOCK : TIMER_WS_ON;
		atomic_set(&prepare_ms, num);
	} else if (!strcmp(word, "ws_on")) {
		__pm_stay_awake(ws);
	} else if (!strcmp(word, "ws_off")) {
		__pm_relax(ws);
	} else if (!strcmp(word, "ws_event_ms")) {
		pm_wakeup_ws_event(ws, num, false);
	} else if (!strcmp(word, "hold_after_resumes")) {
		atomic_set(&hold_after_resumes, num);
	} else if (!strcmp(word, "release_resume")) {
		suspend_unblock(&resume_blocker);
	} else if (!strcmp(word, "release_refuse")) {
		WRITE_ONCE(refuse_release, true);
		wake_up(&refuse_wait);
	} else if (!strcmp(word, "work_queue")) {
		WRITE_ONCE(work_ms, num);
		queue_suspend_blocking_work(system_long_wq, &sbwork);
	} else if (!strcmp(word, "work_schedule")) {
		WRITE_ONCE(work_ms, num);
		schedule_suspend_blocking_work(&sbwork);
	} else if (!strcmp(word, "work_cancel")) {
		ret = cancel_suspend_blocking_work_sync(&sbwork);
		pr_info("sb_test: work_cancel returned %d\n", ret);
	} else if (!strcmp(word, "bench")) {
		if (num < BENCH_ROUNDS || num > 100000000)
			return -ERANGE;
		run_bench(num);
	} else if (!strcmp(word, "lat")) {
		if (num < 100 || num > LAT_MAX)
			return -ERANGE;
		ret = run_lat(num);
		if (ret)
			return ret;
	} else if (!strcmp(word, "garbage_init")) {
		if (!num || num > 1000000)
			return -ERANGE;
		ret = run_garbage_init(num);
		if (ret)
			return ret;
	} else if (!strcmp(word, "idle_blockers")) {
		if (num > 1000000)
			return -ERANGE;
		ret = idle_create(num);
		if (ret)
			return ret;
	} else if (!strcmp(word, "fail_suspend")) {
		if (num > INT_MAX)
			return -ERANGE;
		atomic_set(&fail_suspends, num);
	} else if (!strcmp(word, "psy_delay_ms")) {
		if (num > 5000)
			return -ERANGE;
		atomic_set(&psy_delay_ms, num);
	} else if (!strcmp(word, "async_devs")) {
		if (num > ASYNC_DEVS_MAX)
			return -ERANGE;
		ret = async_devs_create(num);
		if (ret)
			return ret;
	} else if (!strcmp(word, "slow_suspend_ms")) {
		if (num > 10000)
			return -ERANGE;
		atomic_set(&slow_suspend_ms, num);
	} else if (!strcmp(word, "block_in_noirq")) {
		atomic_set(&block_in_noirq, 1);
	} else if (!strcmp(word, "release_at_shutdown")) {
		WRITE_ONCE(release_at_shutdown, true);
	} else if (!strcmp(word, "block_at_machine_suspend")) {
		if (!probe_registered)
			return -ENODEV;
		atomic_set(&block_at_machine_suspend, 1);
	} else if (!strcmp(word, "reinit")) {
		/* a bug on purpose: initialise the live blocker again */
		suspend_blocker_init(&blocker, "sb_test");
	} else {
		return -EINVAL;
	}
	return len;
}

static ssize_t ctl_read(struct file *f, char __user *ubuf, size_t len,
			loff_t *ppos)
{
	char buf[768];
	int n;

	n = scnprintf(buf, sizeof(buf),
		      "blocker %d\nresume_blocker %d\nwork_blocker %d\nwork_runs %d\nis_blocked %d\nrefusing %d\nbench_iters %llu\nbench_sb_pair_ps %llu\nbench_ws_pair_ps %llu\ntimer_fired_ns %lld\nidle_blockers %u\nfail_suspends %d\nblock_in_noirq %d\nlat_p50_ns %llu\nlat_p99_ns %llu\nlat_max_ns %llu\ngarbage_init_ns %llu\n",
		      suspend_blocker_is_active(&blocker),
		      suspend_blocker_is_active(&resume_blocker),
		      suspend_blocker_is_active(&sbwork.suspend_blocker),
		      atomic_read(&work_runs), suspend_is_blocked(),
		      atomic_read(&refusing), bench_iters, bench_sb_ps,
		      bench_ws_ps, READ_ONCE(timer_fired_ns), idle_n,
		      atomic_read(&fail_suspends),
		      atomic_read(&block_in_noirq), lat_p50_ns, lat_p99_ns,
		      lat_max_ns, garbage_init_ns);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations ctl_fops = {
	.owner	= THIS_MODULE,
	.write	= ctl_write,
	.read	= ctl_read,
	.llseek	= default_llseek,
};

/* Reading "refuse" sleeps uninterruptibly (unfreezable) until released. */
static ssize_t refuse_read(struct file *f, char __user *ubuf, size_t len,
			   loff_t *ppos)
{
	WRITE_ONCE(refuse_release, false);
	atomic_inc(&refusing);
	wait_event(refuse_wait, READ_ONCE(refuse_release));
	atomic_dec(&refusing);
	return 0;
}

static const struct file_operations refuse_fops = {
	.owner	= THIS_MODULE,
	.read	= refuse_read,
	.llseek	= default_llseek,
};

static int __init sb_test_init(void)
{
	int ret;

	ws = wakeup_source_register(NULL, "sb_test_ws");
	bench_ws = wakeup_source_register(NULL, "sb_test_bench_ws");
	if (!ws || !bench_ws) {
		ret = -ENOMEM;
		goto unregister_ws;
	}
	suspend_blocker_init(&blocker, "sb_test");
	suspend_blocker_init(&resume_blocker, "sb_test_resume");
	suspend_blocker_init(&bench_blocker, "sb_test_bench");
	suspend_blocking_work_init(&sbwork, work_fn, "sb_test_work");
	hrtimer_init(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	hrtimer_init(&lat_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	lat_timer.function = lat_timer_fn;
	timer.function = timer_fn;
	ret = platform_driver_register(&pdrv);
	if (ret)
		goto destroy;
	pdev = platform_device_register_simple("sb_test", PLATFORM_DEVID_NONE,
					       NULL, 0);
	if (IS_ERR(pdev)) {
		ret = PTR_ERR(pdev);
		goto unregister_driver;
	}
	ret = register_pm_notifier(&pm_nb);
	if (ret)
		goto unregister_device;
	psy = power_supply_register(&pdev->dev, &psy_desc, NULL);
	if (IS_ERR(psy)) {
		ret = PTR_ERR(psy);
		goto unregister_pm;
	}
	/* supplied from test_ac (what DT's power-supplies would give) */
	psy->supplied_from = psy_supplied_from;
	psy->num_supplies = ARRAY_SIZE(psy_supplied_from);
	probe_registered = !register_trace_suspend_resume(machine_suspend_probe,
							   NULL);
	dir = debugfs_create_dir("sb_test", NULL);
	debugfs_create_file("ctl", 0600, dir, NULL, &ctl_fops);
	debugfs_create_file("refuse", 0400, dir, NULL, &refuse_fops);
	return 0;

unregister_pm:
	unregister_pm_notifier(&pm_nb);
unregister_device:
	platform_device_unregister(pdev);
unregister_driver:
	platform_driver_unregister(&pdrv);
destroy:
	suspend_blocking_work_destroy(&sbwork);
	suspend_blocker_destroy(&bench_blocker);
	suspend_blocker_destroy(&resume_blocker);
	suspend_blocker_destroy(&blocker);
unregister_ws:
	wakeup_source_unregister(bench_ws);
	wakeup_source_unregister(ws);
	return ret;
}

static void __exit sb_test_exit(void)
{
	debugfs_remove_recursive(dir);
	if (probe_registered) {
		unregister_trace_suspend_resume(machine_suspend_probe, NULL);
		tracepoint_synchronize_unregister();
	}
	WRITE_ONCE(refuse_release, true);
	wake_up(&refuse_wait);
	power_supply_unregister(psy);
	unregister_pm_notifier(&pm_nb);
	async_devs_destroy();
	platform_device_unregister(pdev);
	platform_driver_unregister(&pdrv);
	hrtimer_cancel(&timer);
	hrtimer_cancel(&lat_timer);
	idle_destroy();
	suspend_blocking_work_destroy(&sbwork);
	suspend_blocker_destroy(&bench_blocker);
	suspend_blocker_destroy(&resume_blocker);
	suspend_blocker_destroy(&blocker);
	wakeup_source_unregister(bench_ws);
	wakeup_source_unregister(ws);
}

module_init(sb_test_init);
module_exit(sb_test_exit);
MODULE_DESCRIPTION("Test client of suspend_block.ko (tests only)");
MODULE_LICENSE("GPL");
