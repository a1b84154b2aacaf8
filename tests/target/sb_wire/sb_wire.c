// SPDX-License-Identifier: GPL-2.0
/*
 * sb_wire - a GPIO chip that is a piece of wire, for tests only.
 *
 * On a real rig the target's marker output (a GPIO pin the suspend_block
 * module drives) is wired to one of the rig host's input lines, whose
 * driver timestamps every edge in its interrupt handler. In a test guest
 * the target and the rig host are one kernel, and no GPIO simulator in
 * Linux 6.1 connects two lines (gpio-sim's outputs only show in sysfs),
 * so this chip is the wire:
 *
 *	line 0 "wire-out"	output only: what the target drives
 *	line 1 "wire-in"	input only: reads line 0's level, and raises
 *				its interrupt (rising, falling or both, as
 *				requested) on every change of it
 *
 * The chip does not sleep (a spinlock guards it), so the marker on line 0
 * is written from the module's state change itself (atomic mode), unless
 * it is loaded with can_sleep=1 (deferred mode). The
 * interrupt is raised from an irq_work (hard interrupt context on x86), so
 * libgpiod's edge events on line 1 carry the kernel's timestamp of its
 * handler, microseconds after the write, as on real hardware. A change
 * the consumer of line 1 has not yet collected is not lost: every change
 * counts one interrupt.
 *
 * The chip belongs to a platform device, "sb_wire.0" (driver "sb_wire"),
 * so that a consumer can link to it, and it can be unbound and bound
 * again through the driver's sysfs files, as a real controller goes away.
 * Like a SoC GPIO bank it suspends in the late phase: from its
 * suspend_late to its resume_early callback a write still sets the level
 * (so an observer sees it), but is counted in "suspended_writes", a write
 * that real hardware might have lost.
 *
 * Module parameters: "label" (default "sbrig-wire"); "can_sleep" (load
 * time: the chip says it may sleep, so a consumer must write it from
 * process context, as for an I2C expander); and, read-only, "level" (the
 * wire's level, Y or N, also after every consumer has let go), "edges"
 * (how many times the level changed since load): what a logic analyser
 * on the wire would show; and "suspended_writes".
 */
#include <linux/gpio/driver.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irq_work.h>
#include <linux/irqdomain.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/spinlock.h>

#define WIRE_OUT	0
#define WIRE_IN		1

static char *label = "sbrig-wire";
module_param(label, charp, 0444);
MODULE_PARM_DESC(label, "gpiochip label (default sbrig-wire)");

static bool can_sleep;
module_param(can_sleep, bool, 0444);
MODULE_PARM_DESC(can_sleep, "the chip may sleep (consumers write it from process context)");

struct sb_wire {
	struct gpio_chip gc;
	/*
	 * lock protects level, edges, irq_type, irq_on, nfire, suspended
	 * and suspended_writes
	 */
	spinlock_t lock;
	bool level;
	unsigned int edges;
	bool suspended;
	unsigned int suspended_writes;
	unsigned int irq_type;
	bool irq_on;
	unsigned int nfire;
	struct irq_domain *domain;
	struct fwnode_handle *fwnode;
	struct irq_work work;
};

static struct sb_wire wire;

module_param_named(level, wire.level, bool, 0444);
MODULE_PARM_DESC(level, "the wire's level (read only)");
module_param_named(edges, wire.edges, uint, 0444);
MODULE_PARM_DESC(edges, "level changes since load (read only)");
module_param_named(suspended_writes, wire.suspended_writes, uint, 0444);
MODULE_PARM_DESC(suspended_writes,
		 "writes of line 0 while the chip was suspended (read only)");

static struct platform_device *wire_pdev;

static void sb_wire_fire(struct irq_work *work)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&wire.lock, flags);
	n = wire.nfire;
	wire.nfire = 0;
	spin_unlock_irqrestore(&wire.lock, flags);
	while (n--)
		generic_handle_domain_irq(wire.domain, WIRE_IN);
}

static int sb_wire_get_direction(struct gpio_chip *gc, unsigned int offset)
{
	return offset == WIRE_OUT ? GPIO_LINE_DIRECTION_OUT :
				    GPIO_LINE_DIRECTION_IN;
}

static int sb_wire_direction_input(struct gpio_chip *gc, unsigned int offset)
{
	return offset == WIRE_IN ? 0 : -EPERM;
}

static int sb_wire_direction_output(struct gpio_chip *gc, unsigned int offset,
				    int value)
{
	if (offset != WIRE_OUT)
		return -EPERM;
	gc->set(gc, offset, value);
	return 0;
}

static int sb_wire_get(struct gpio_chip *gc, unsigned int offset)
{
	unsigned long flags;
	int v;

	spin_lock_irqsave(&wire.lock, flags);
	v = wire.level;
	spin_unlock_irqrestore(&wire.lock, flags);
	return v;
}

static void sb_wire_set(struct gpio_chip *gc, unsigned int offset, int value)
{
	unsigned long flags;
	bool fire = false;

	if (offset != WIRE_OUT)
		return;
	spin_lock_irqsave(&wire.lock, flags);
	if (wire.suspended)
		wire.suspended_writes++;
	if (!!value != wire.level) {
		wire.level = !!value;
		wire.edges++;
		if (wire.irq_on &&
		    (wire.irq_type & (value ? IRQ_TYPE_EDGE_RISING :
					      IRQ_TYPE_EDGE_FALLING))) {
			wire.nfire++;
			fire = true;
		}
	}
	spin_unlock_irqrestore(&wire.lock, flags);
	if (fire)
		irq_work_queue(&wire.work);
}

static int sb_wire_to_irq(struct gpio_chip *gc, unsigned int offset)
{
	if (offset != WIRE_IN)
		return -ENXIO;
	return irq_create_mapping(wire.domain, offset);
}

static void sb_wire_irq_mask(struct irq_data *d)
{
	unsigned long flags;

	spin_lock_irqsave(&wire.lock, flags);
	wire.irq_on = false;
	spin_unlock_irqrestore(&wire.lock, flags);
}

static void sb_wire_irq_unmask(struct irq_data *d)
{
	unsigned long flags;

	spin_lock_irqsave(&wire.lock, flags);
	wire.irq_on = true;
	spin_unlock_irqrestore(&wire.lock, flags);
}

static int sb_wire_irq_set_type(struct irq_data *d, unsigned int type)
{
	unsigned long flags;

	if (type & ~IRQ_TYPE_EDGE_BOTH)
		return -EINVAL;		/* a wire has edges, no levels */
	spin_lock_irqsave(&wire.lock, flags);
	wire.irq_type = type;
	spin_unlock_irqrestore(&wire.lock, flags);
	return 0;
}

static struct irq_chip sb_wire_irqchip = {
	.name		= "sbrig-wire",
	.irq_mask	= sb_wire_irq_mask,
	.irq_unmask	= sb_wire_irq_unmask,
	.irq_set_type	= sb_wire_irq_set_type,
	.flags		= IRQCHIP_SKIP_SET_WAKE,
};

static int sb_wire_irq_map(struct irq_domain *d, unsigned int virq,
			   irq_hw_number_t hw)
{
	irq_set_chip_and_handler(virq, &sb_wire_irqchip, handle_simple_irq);
	return 0;
}

static const struct irq_domain_ops sb_wire_domain_ops = {
	.map	= sb_wire_irq_map,
	.xlate	= irq_domain_xlate_twocell,
};

static const char *const sb_wire_names[] = { "wire-out", "wire-in" };

static int sb_wire_probe(struct platform_device *pdev)
{
	wire.gc.label = label;
	wire.gc.parent = &pdev->dev;
	wire.gc.owner = THIS_MODULE;
	wire.gc.base = -1;
	wire.gc.ngpio = 2;
	wire.gc.names = sb_wire_names;
	wire.gc.can_sleep = can_sleep;
	wire.gc.get_direction = sb_wire_get_direction;
	wire.gc.direction_input = sb_wire_direction_input;
	wire.gc.direction_output = sb_wire_direction_output;
	wire.gc.get = sb_wire_get;
	wire.gc.set = sb_wire_set;
	wire.gc.to_irq = sb_wire_to_irq;
	return devm_gpiochip_add_data(&pdev->dev, &wire.gc, &wire);
}

static int sb_wire_suspend_late(struct device *dev)
{
	unsigned long flags;

	spin_lock_irqsave(&wire.lock, flags);
	wire.suspended = true;
	spin_unlock_irqrestore(&wire.lock, flags);
	return 0;
}

static int sb_wire_resume_early(struct device *dev)
{
	unsigned long flags;

	spin_lock_irqsave(&wire.lock, flags);
	wire.suspended = false;
	spin_unlock_irqrestore(&wire.lock, flags);
	return 0;
}

static const struct dev_pm_ops sb_wire_pm_ops = {
	LATE_SYSTEM_SLEEP_PM_OPS(sb_wire_suspend_late, sb_wire_resume_early)
};

static struct platform_driver sb_wire_driver = {
	.probe	= sb_wire_probe,
	.driver	= {
		.name	= "sb_wire",
		.pm	= &sb_wire_pm_ops,
	},
};

static int __init sb_wire_init(void)
{
	int ret;

	spin_lock_init(&wire.lock);
	init_irq_work(&wire.work, sb_wire_fire);
	wire.fwnode = irq_domain_alloc_named_fwnode("sbrig-wire");
	if (!wire.fwnode)
		return -ENOMEM;
	wire.domain = irq_domain_create_linear(wire.fwnode, 2,
					       &sb_wire_domain_ops, &wire);
	if (!wire.domain) {
		ret = -ENOMEM;
		goto free_fwnode;
	}
	ret = platform_driver_register(&sb_wire_driver);
	if (ret)
		goto remove_domain;
	wire_pdev = platform_device_register_simple("sb_wire", 0, NULL, 0);
	if (IS_ERR(wire_pdev)) {
		ret = PTR_ERR(wire_pdev);
		goto unregister_driver;
	}
	return 0;

unregister_driver:
	platform_driver_unregister(&sb_wire_driver);
remove_domain:
	irq_domain_remove(wire.domain);
free_fwnode:
	irq_domain_free_fwnode(wire.fwnode);
	return ret;
}

static void __exit sb_wire_exit(void)
{
	platform_device_unregister(wire_pdev);
	platform_driver_unregister(&sb_wire_driver);
	irq_work_sync(&wire.work);
	irq_dispose_mapping(irq_find_mapping(wire.domain, WIRE_IN));
	irq_domain_remove(wire.domain);
	irq_domain_free_fwnode(wire.fwnode);
}

module_init(sb_wire_init);
module_exit(sb_wire_exit);

MODULE_DESCRIPTION("A GPIO chip that is a piece of wire (sbrig tests only)");
MODULE_LICENSE("GPL");
