// SPDX-License-Identifier: GPL-2.0
/*
 * The marker line: a GPIO output asserted while a suspend blocker is active.
 *
 * An instrument outside the system (a logic analyser, a power test rig)
 * can timestamp the line's edges and so see in hardware when the system
 * stops and starts allowing suspend, and pair each edge with the block or
 * unblock record of the event log that caused it. The line is asserted
 * while at least one suspend blocker ("main" included) is active and
 * deasserted while none is. In the opportunistic policy that is "suspend
 * is blocked by a blocker"; kernel wakeup sources that also hold suspend
 * off do not drive it (they have their own records in the event log).
 *
 * The line comes from a device-tree node (compatible "sbrig,suspend-marker",
 * property "marker-gpios"; firmware/bindings/sbrig,suspend-marker.yaml) or,
 * on machines without one, from the module parameter "marker"
 * (CHIP_LABEL:OFFSET), for which the module registers a GPIO lookup table
 * and a platform device of its own. Either way one platform driver binds
 * the device; a second marker device is refused. A chip that does not
 * exist yet defers the probe until it appears (the reason is in debugfs
 * devices_deferred). The marker device is linked to the GPIO controller
 * (a device link, as fw_devlink makes for the device-tree node): it is
 * unbound before the controller goes away, so the descriptor is never
 * used stale, and it suspends before and resumes after the controller.
 *
 * The core calls sb_marker_set_locked() from the state change itself: the
 * first block and the last unblock, under suspend_blockers_lock with
 * interrupts disabled, in whatever context the caller of suspend_block()
 * or suspend_unblock() was. A controller that cannot sleep is written
 * right there, so the edge follows the event record within the time of a
 * register write. A controller that can sleep (I2C expanders, gpio-sim) is
 * written from a work item on system_highpri_wq instead: every change is
 * counted, and the work replays the changes in order, so an observer
 * still sees one edge per transition, each late by the work's scheduling
 * latency (typically tens of microseconds, more under load). If changes
 * pile up faster than the work can write (more than SB_MARKER_REPLAY_MAX
 * at once), the surplus pulses are dropped in pairs, leaving the line at
 * the right level, and a warning says how many.
 *
 * From the marker device's suspend_late to its resume_early callback the
 * controller may be suspended: the line is not written then (the changes
 * in between are not replayed), and resume_early sets it to the level of
 * the moment.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/device.h>
#include <linux/gpio/consumer.h>
#include <linux/gpio/driver.h>
#include <linux/gpio/machine.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "sb_internal.h"

#define SB_MARKER_DRV_NAME	"sbrig-suspend-marker"
#define SB_MARKER_REPLAY_MAX	64	/* even: drops keep the level */

static char *sb_marker_param;
module_param_named(marker, sb_marker_param, charp, 0444);
MODULE_PARM_DESC(marker,
		 "marker line without a device tree: CHIP_LABEL:OFFSET (asserted while a blocker is active)");

/**
 * struct sb_marker - the marker line
 * @level:	The level the core last set (sb_marker_set_locked()), kept
 *		whether a marker is bound or not: "a blocker is active".
 * @desc:	The line; NULL while no marker is bound.
 * @atomic:	Its controller can be written with interrupts disabled.
 * @suspended:	Between our suspend_late and resume_early: not written.
 * @pending:	Deferred mode: changes not yet written by @work.
 * @out:	Deferred mode: the level @work last wrote (only @work and
 *		probe/remove, which exclude it, touch it).
 * @dropped:	Deferred mode: changes dropped in pairs so far.
 * @work:	Deferred mode: writes the changes.
 * @dev:	The bound device, for messages.
 *
 * suspend_blockers_lock protects @level, @desc, @atomic, @suspended and
 * @pending: the core changes the level under it.
 */
struct sb_marker {
	bool level;
	struct gpio_desc *desc;
	bool atomic;
	bool suspended;
	unsigned int pending;
	bool out;
	unsigned long dropped;
	struct work_struct work;
	struct device *dev;
};

static struct sb_marker sb_marker;
static struct platform_device *sb_marker_pdev;
static struct gpiod_lookup_table *sb_marker_lookup;

/**
 * sb_marker_set_locked() - the blocker state changed
 * @active:	A blocker is active now (none was before), or none is now.
 *
 * The core calls it at every such change from its init on, also while no
 * marker is bound: the level it keeps is what probe and resume_early write.
 *
 * Context: suspend_blockers_lock held, interrupts disabled, any context.
 */
void sb_marker_set_locked(bool active)
{
	lockdep_assert_held(&suspend_blockers_lock);
	sb_marker.level = active;
	if (!sb_marker.desc || sb_marker.suspended)
		return;
	if (sb_marker.atomic) {
		gpiod_set_value(sb_marker.desc, active);
		return;
	}
	sb_marker.pending++;
	queue_work(system_highpri_wq, &sb_marker.work);
}

/* Deferred mode: write every change counted so far, in order. */
static void sb_marker_work(struct work_struct *work)
{
	unsigned long irqflags;
	struct gpio_desc *desc;
	unsigned int n;

	for (;;) {
		spin_lock_irqsave(&suspend_blockers_lock, irqflags);
		desc = sb_marker.suspended ? NULL : sb_marker.desc;
		n = sb_marker.pending;
		sb_marker.pending = 0;
		spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
		if (!desc || !n)
			return;
		if (n > SB_MARKER_REPLAY_MAX) {
			unsigned int keep = SB_MARKER_REPLAY_MAX + (n & 1);

			sb_marker.dropped += n - keep;
			dev_warn_ratelimited(sb_marker.dev,
					     "%u marker changes dropped in pairs (%lu so far): the line could not keep up\n",
					     n - keep, sb_marker.dropped);
			n = keep;
		}
		while (n--) {
			sb_marker.out = !sb_marker.out;
			gpiod_set_value_cansleep(desc, sb_marker.out);
		}
	}
}

/*
 * Make the controller a supplier of ours: we are unbound before it goes
 * away and suspended before it. fw_devlink makes the same link for a
 * device-tree node; for the marker parameter nobody else would.
 */
static int sb_marker_link(struct device *dev, struct gpio_desc *desc)
{
	struct gpio_chip *gc = gpiod_to_chip(desc);

	if (!gc || !gc->parent)
		return 0;	/* a chip without a device: nothing to link */
	if (!device_link_add(dev, gc->parent, DL_FLAG_AUTOPROBE_CONSUMER))
		return dev_err_probe(dev, -EINVAL,
				     "cannot link to the marker's GPIO controller %s\n",
				     dev_name(gc->parent));
	return 0;
}

static int sb_marker_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct gpio_desc *desc;
	unsigned long irqflags;
	bool busy;
	int ret;

	desc = devm_gpiod_get(dev, "marker", GPIOD_OUT_LOW);
	if (IS_ERR(desc))
		return dev_err_probe(dev, PTR_ERR(desc),
				     "no usable marker line (marker-gpios or the marker parameter)\n");
	ret = sb_marker_link(dev, desc);
	if (ret)
		return ret;
	gpiod_set_consumer_name(desc, "suspend-marker");

	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	busy = sb_marker.desc;
	if (!busy) {
		sb_marker.dev = dev;
		sb_marker.atomic = !gpiod_cansleep(desc);
		sb_marker.suspended = false;
		sb_marker.dropped = 0;
		sb_marker.desc = desc;
		if (sb_marker.atomic) {
			gpiod_set_value(desc, sb_marker.level);
		} else {
			/* the work's first change writes the current level */
			sb_marker.out = !sb_marker.level;
			sb_marker.pending = 1;
			queue_work(system_highpri_wq, &sb_marker.work);
		}
	}
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	if (busy)
		return dev_err_probe(dev, -EBUSY,
				     "%s already drives the marker\n",
				     dev_name(sb_marker.dev));
	platform_set_drvdata(pdev, &sb_marker);
	dev_info(dev, "marker on GPIO %d, written %s\n", desc_to_gpio(desc),
		 sb_marker.atomic ? "in the state change (atomic)" :
		 "from a work item (the controller sleeps)");
	return 0;
}

static int sb_marker_remove(struct platform_device *pdev)
{
	unsigned long irqflags;
	struct gpio_desc *desc;

	if (!platform_get_drvdata(pdev))
		return 0;
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	desc = sb_marker.desc;
	sb_marker.desc = NULL;
	sb_marker.pending = 0;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	cancel_work_sync(&sb_marker.work);
	/* deasserted when the module goes (the binding says so) */
	gpiod_set_value_cansleep(desc, 0);
	return 0;
}

/* The controller may suspend after this: stop writing the line. */
static int sb_marker_suspend_late(struct device *dev)
{
	unsigned long irqflags;

	if (!dev_get_drvdata(dev))
		return 0;
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_marker.suspended = true;
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	flush_work(&sb_marker.work);
	return 0;
}

/* The controller is back: the line shows the level of the moment. */
static int sb_marker_resume_early(struct device *dev)
{
	unsigned long irqflags;

	if (!dev_get_drvdata(dev))
		return 0;
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_marker.suspended = false;
	if (sb_marker.atomic) {
		gpiod_set_value(sb_marker.desc, sb_marker.level);
	} else if (sb_marker.out != sb_marker.level) {
		/* @work is idle (flushed, and nothing queued it since) */
		sb_marker.pending = 1;
		queue_work(system_highpri_wq, &sb_marker.work);
	}
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	return 0;
}

static const struct dev_pm_ops sb_marker_pm_ops = {
	LATE_SYSTEM_SLEEP_PM_OPS(sb_marker_suspend_late,
				 sb_marker_resume_early)
};

static const struct of_device_id sb_marker_of_match[] = {
	{ .compatible = "sbrig,suspend-marker" },
	{ }
};
MODULE_DEVICE_TABLE(of, sb_marker_of_match);

static struct platform_driver sb_marker_driver = {
	.probe	= sb_marker_probe,
	.remove	= sb_marker_remove,
	.driver	= {
		.name		= SB_MARKER_DRV_NAME,
		.of_match_table	= sb_marker_of_match,
		.pm		= pm_sleep_ptr(&sb_marker_pm_ops),
	},
};

/*
 * The marker parameter: a lookup table that maps our own platform
 * device's "marker" GPIO to OFFSET on the chip labelled CHIP_LABEL.
 */
static int sb_marker_from_param(const char *spec)
{
	struct gpiod_lookup_table *t;
	const char *colon = strrchr(spec, ':');
	unsigned int offset;
	char *label;

	if (!colon || colon == spec || kstrtouint(colon + 1, 10, &offset) ||
	    offset > U16_MAX) {
		pr_err("marker=%s: expected CHIP_LABEL:OFFSET, e.g. gpio-sim.0-node0:3\n",
		       spec);
		return -EINVAL;
	}
	t = kzalloc(struct_size(t, table, 2), GFP_KERNEL);
	label = kstrndup(spec, colon - spec, GFP_KERNEL);
	if (!t || !label) {
		kfree(label);
		kfree(t);
		return -ENOMEM;
	}
	t->dev_id = SB_MARKER_DRV_NAME;
	t->table[0] = GPIO_LOOKUP(label, offset, "marker", GPIO_ACTIVE_HIGH);
	gpiod_add_lookup_table(t);
	sb_marker_lookup = t;

	sb_marker_pdev = platform_device_register_simple(SB_MARKER_DRV_NAME,
							 PLATFORM_DEVID_NONE,
							 NULL, 0);
	if (IS_ERR(sb_marker_pdev)) {
		int ret = PTR_ERR(sb_marker_pdev);

		sb_marker_pdev = NULL;
		gpiod_remove_lookup_table(t);
		kfree(label);
		kfree(t);
		sb_marker_lookup = NULL;
		return ret;
	}
	return 0;
}

static void sb_marker_param_exit(void)
{
	platform_device_unregister(sb_marker_pdev);	/* NULL is fine */
	sb_marker_pdev = NULL;
	if (sb_marker_lookup) {
		gpiod_remove_lookup_table(sb_marker_lookup);
		kfree(sb_marker_lookup->table[0].key);
		kfree(sb_marker_lookup);
		sb_marker_lookup = NULL;
	}
}

/**
 * sb_marker_init() - register the marker driver (and the parameter's device)
 *
 * Context: process context.
 * Return: 0 or a negative errno (-EINVAL for a malformed parameter).
 */
int sb_marker_init(void)
{
	int ret;

	INIT_WORK(&sb_marker.work, sb_marker_work);
	ret = platform_driver_register(&sb_marker_driver);
	if (ret || !sb_marker_param || !*sb_marker_param)
		return ret;
	ret = sb_marker_from_param(sb_marker_param);
	if (ret)
		platform_driver_unregister(&sb_marker_driver);
	return ret;
}

/**
 * sb_marker_exit() - unbind the marker (deasserting it) and unregister
 *
 * Context: process context.
 */
void sb_marker_exit(void)
{
	sb_marker_param_exit();
	platform_driver_unregister(&sb_marker_driver);
}
