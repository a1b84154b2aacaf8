// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own activity in the event log: wakeup sources, the phases
 * of suspend and resume, and slow device PM callbacks.
 *
 * A blocker held by mainline code (gpio-keys, power_supply_changed(),
 * EPOLLWAKEUP, the RTC) is a wakeup source, not one of our blockers, and
 * the time a suspend spends in each phase is only visible in the PM core's
 * trace events. This file attaches probes to those tracepoints and appends
 * what they report to the module's event ring, in the same sequence as
 * the blocker records (so a reader's "lost" line counts them too):
 *
 *	tracepoint			record
 *	wakeup_source_activate		ws_activate "NAME"
 *	wakeup_source_deactivate	ws_relax "NAME"
 *	suspend_resume			phase ACTION VAL begin|end
 *	device_pm_callback_start/end	dev_pm DURATION_NS ERROR VERB DEVICE
 *
 * dev_pm records only callbacks that took at least event_dev_pm_min_us
 * (0, the default, records none). Three kinds of wakeup source are not
 * recorded. Our own (core.c's "suspend_blockers", which only mirrors "a
 * blocker is active"): its activity is the block/unblock records already.
 * And those of the event log's own EPOLLWAKEUP readers: an epoll item's
 * source, named after the file it watches (here the log's file name), and
 * the epoll instance's "eventpoll" source, which epoll_wait() activates
 * for the microseconds in which it hands each ready item's source over to
 * user space. Recorded, every read of such a reader would write the
 * records that make it readable again, for ever; and "eventpoll" says
 * nothing that the item sources, named after their files ("vport0p1"),
 * do not say.
 *
 * Only suspend_resume is exported as a symbol; the others are found by
 * name with for_each_kernel_tracepoint(). A tracepoint that does not exist
 * (a kernel without CONFIG_TRACEPOINTS or with other event names) is
 * reported once at load and its records are simply absent.
 *
 * Locking: the probes run wherever the PM core traces: the wakeup-source
 * tracepoints with that source's ws->lock held (under an epoll item's lock
 * for EPOLLWAKEUP), suspend_resume also inside raw-spinlock sections
 * (s2idle's tick_freeze_lock) and with interrupts hard-disabled (around
 * machine_suspend). So they take only raw spinlocks: the event log's
 * sb_ring_lock, a leaf that never wakes anyone while held (events.c), and
 * sb_dpm_lock. They never take suspend_blockers_lock, so no driver's
 * wakeup source and no event-log reader can come back into the blocker
 * core.
 *
 * Clock: probes may run with timekeeping suspended (machine_suspend on
 * suspend-to-RAM is traced after syscore_suspend()), where ktime_get()
 * must not be called; they read the NMI-safe fast clock instead, which
 * stands still at the moment timekeeping was suspended until it resumes.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/pm.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <uapi/linux/suspend_block_dev.h>
#include "sb_internal.h"

static bool event_wakeup_sources = true;
module_param(event_wakeup_sources, bool, 0644);
MODULE_PARM_DESC(event_wakeup_sources,
		 "Record kernel wakeup source activity (ws_activate/ws_relax)");

static bool event_phases = true;
module_param(event_phases, bool, 0644);
MODULE_PARM_DESC(event_phases,
		 "Record the suspend/resume phases (phase)");

static unsigned int event_dev_pm_min_us;
module_param(event_dev_pm_min_us, uint, 0644);
MODULE_PARM_DESC(event_dev_pm_min_us,
		 "Record device PM callbacks taking at least this many us (dev_pm; 0: none)");

/* Callbacks timed at once; more are not timed (async suspend runs many). */
#define SB_DPM_SLOTS		32

struct sb_dpm_slot {
	const struct device *dev;	/* NULL: free */
	u64 start_ns;
	int event;
};

/* sb_dpm_lock protects sb_dpm_slots (a raw leaf: see "Locking" above). */
static DEFINE_RAW_SPINLOCK(sb_dpm_lock);
static struct sb_dpm_slot sb_dpm_slots[SB_DPM_SLOTS];

static ktime_t sb_kev_now(void)
{
	return ns_to_ktime(ktime_get_mono_fast_ns());
}

/* Append a record whose text is already in @buf (@len may exceed it). */
static void sb_kev_add(enum sb_event_type type, ktime_t now, const char *buf,
		       unsigned int len)
{
	sb_event_add(type, now, buf, len);
}

/*
 * Wakeup source names come from drivers and, for EPOLLWAKEUP, from file
 * names: anything that would break the quoted field becomes '?'.
 */
static void sb_kev_name(enum sb_event_type type, const char *name)
{
	char buf[SB_EVENT_ARG_LEN];
	unsigned int len, i;
	ktime_t now = sb_kev_now();

	len = strlen(name);
	for (i = 0; i < min_t(unsigned int, len, sizeof(buf)); i++)
		buf[i] = name[i] >= 0x20 && name[i] <= 0x7e &&
			 name[i] != '"' && name[i] != '\\' ? name[i] : '?';
	sb_kev_add(type, now, buf, len);
}

/* A wakeup source whose activity is not recorded (see the top). */
static bool sb_kev_ws_ignored(const char *name)
{
	return sb_own_wakeup_source(name) || !strcmp(name, "eventpoll") ||
	       !strcmp(name, SUSPEND_BLOCK_EVENTS_FILE);
}

static void sb_ws_activate_probe(void *unused, const char *name,
				 unsigned int state)
{
	if (READ_ONCE(event_wakeup_sources) && !sb_kev_ws_ignored(name))
		sb_kev_name(SB_EV_WS_ACTIVATE, name);
}

static void sb_ws_deactivate_probe(void *unused, const char *name,
				   unsigned int state)
{
	if (READ_ONCE(event_wakeup_sources) && !sb_kev_ws_ignored(name))
		sb_kev_name(SB_EV_WS_RELAX, name);
}

static void sb_phase_probe(void *unused, const char *action, int val,
			   bool start)
{
	char buf[SB_EVENT_ARG_LEN + 1];
	ktime_t now;
	int n;

	if (!READ_ONCE(event_phases))
		return;
	now = sb_kev_now();
	n = snprintf(buf, sizeof(buf), "%s %d %s", action, val,
		     start ? "begin" : "end");
	sb_kev_add(SB_EV_PHASE, now, buf, n);
}

static void sb_dpm_start_probe(void *unused, struct device *dev,
			       const char *pm_ops, int event)
{
	unsigned long irqflags;
	u64 now;
	int i;

	if (!READ_ONCE(event_dev_pm_min_us))
		return;
	now = ktime_get_mono_fast_ns();
	raw_spin_lock_irqsave(&sb_dpm_lock, irqflags);
	for (i = 0; i < SB_DPM_SLOTS; i++) {
		if (!sb_dpm_slots[i].dev) {
			sb_dpm_slots[i].dev = dev;
			sb_dpm_slots[i].start_ns = now;
			sb_dpm_slots[i].event = event;
			break;
		}
	}
	raw_spin_unlock_irqrestore(&sb_dpm_lock, irqflags);
}

/* The PM core's verb for a PM_EVENT_* (its pm_verb() is static). */
static const char *sb_pm_verb(int event)
{
	switch (event) {
	case PM_EVENT_SUSPEND:
		return "suspend";
	case PM_EVENT_RESUME:
		return "resume";
	case PM_EVENT_FREEZE:
		return "freeze";
	case PM_EVENT_QUIESCE:
		return "quiesce";
	case PM_EVENT_HIBERNATE:
		return "hibernate";
	case PM_EVENT_THAW:
		return "thaw";
	case PM_EVENT_RESTORE:
		return "restore";
	case PM_EVENT_RECOVER:
		return "recover";
	default:
		return "event";
	}
}

static void sb_dpm_end_probe(void *unused, struct device *dev, int error)
{
	char buf[SB_EVENT_ARG_LEN + 1];
	unsigned long irqflags;
	u64 now, start = 0, min_ns;
	bool found = false;
	int i, event = 0, n;

	now = ktime_get_mono_fast_ns();
	raw_spin_lock_irqsave(&sb_dpm_lock, irqflags);
	for (i = 0; i < SB_DPM_SLOTS; i++) {
		if (sb_dpm_slots[i].dev == dev) {
			start = sb_dpm_slots[i].start_ns;
			event = sb_dpm_slots[i].event;
			sb_dpm_slots[i].dev = NULL;
			found = true;
			break;
		}
	}
	raw_spin_unlock_irqrestore(&sb_dpm_lock, irqflags);
	min_ns = (u64)READ_ONCE(event_dev_pm_min_us) * NSEC_PER_USEC;
	if (!found || !min_ns || now - start < min_ns)
		return;
	n = snprintf(buf, sizeof(buf), "%llu %d %s %s", now - start, error,
		     sb_pm_verb(event), dev_name(dev));
	for (i = 0; i < min_t(int, n, SB_EVENT_ARG_LEN); i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			buf[i] = '?';
	sb_kev_add(SB_EV_DEV_PM, ns_to_ktime(now), buf, n);
}

struct sb_kev_probe {
	const char *name;
	void *probe;
	struct tracepoint *tp;	/* found and registered */
};

static struct sb_kev_probe sb_kev_probes[] = {
	{ "wakeup_source_activate", sb_ws_activate_probe },
	{ "wakeup_source_deactivate", sb_ws_deactivate_probe },
	{ "suspend_resume", sb_phase_probe },
	{ "device_pm_callback_start", sb_dpm_start_probe },
	{ "device_pm_callback_end", sb_dpm_end_probe },
};

static void sb_kev_find(struct tracepoint *tp, void *found)
{
	struct tracepoint **tps = found;
	int i;

	for (i = 0; i < ARRAY_SIZE(sb_kev_probes); i++)
		if (!strcmp(tp->name, sb_kev_probes[i].name))
			tps[i] = tp;
}

/**
 * sb_kevents_init() - attach the probes that record kernel activity
 *
 * Missing tracepoints are logged and skipped: their records are absent,
 * nothing else changes.
 *
 * Context: process context.
 */
void sb_kevents_init(void)
{
	struct tracepoint *tps[ARRAY_SIZE(sb_kev_probes)] = { };
	int i, ret;

	for_each_kernel_tracepoint(sb_kev_find, tps);
	for (i = 0; i < ARRAY_SIZE(sb_kev_probes); i++) {
		struct sb_kev_probe *p = &sb_kev_probes[i];

		ret = tps[i] ? tracepoint_probe_register(tps[i], p->probe,
							 NULL) : -ENOENT;
		if (ret) {
			pr_warn("tracepoint %s unavailable (%d): not in the event log\n",
				p->name, ret);
			continue;
		}
		p->tp = tps[i];
	}
}

/**
 * sb_kevents_exit() - detach the probes
 *
 * Returns once no probe runs any more.
 *
 * Context: process context.
 */
void sb_kevents_exit(void)
{
	bool any = false;
	int i;

	for (i = 0; i < ARRAY_SIZE(sb_kev_probes); i++) {
		struct sb_kev_probe *p = &sb_kev_probes[i];

		if (!p->tp)
			continue;
		tracepoint_probe_unregister(p->tp, p->probe, NULL);
		p->tp = NULL;
		any = true;
	}
	if (any)
		tracepoint_synchronize_unregister();
}
