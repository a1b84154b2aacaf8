// SPDX-License-Identifier: GPL-2.0
/*
 * The seed's keypad driver: GPIO keys that hold "keypad-scan".
 *
 * Seed 002's walkthrough starts in a keypad driver: its interrupt blocks
 * suspend with the keypad-scan blocker, the driver scans the keys,
 * reports the changes to the input layer and unblocks once no key is
 * down. This is that driver for a device-tree node with compatible
 * "sbrig,keypad" (firmware/bindings/sbrig,keypad.yaml, modelled on
 * gpio-keys): every child node is one key with one GPIO ("gpios"), its
 * "linux,code", an optional "debounce-interval" (ms, default 5, at most
 * 1000), "label" and "wakeup-source".
 *
 * A key's interrupt (both edges) activates keypad-scan and (re)starts the
 * key's debounce timer; when it expires, the key is read and a change is
 * reported (EV_KEY, SYN_REPORT); keypad-scan is released after the report
 * once no key is down and no debounce is pending. So a press holds it
 * from the edge until after the release has been reported: the seed's
 * timeline, with the input queue's blocker starting inside it at both.
 * Keys with wakeup-source arm their interrupt for wakeup while the system
 * sleeps (enable_irq_wake(), as gpio-keys does); a press then wakes it and
 * keypad-scan, taken when the interrupt is handled during resume, claims
 * the wakeup.
 *
 * Probe errors name the node and property; everything is device-managed,
 * so a failed probe leaves nothing registered.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/gpio/consumer.h>
#include <linux/input.h>
#include <linux/interrupt.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_wakeup.h>
#include <linux/property.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include "sb_internal.h"

#define SB_KEYPAD_DEBOUNCE_MS		5
#define SB_KEYPAD_DEBOUNCE_MAX_MS	1000

struct sb_keypad;

struct sb_key {
	struct sb_keypad *kp;
	struct gpio_desc *gpiod;
	struct delayed_work work;
	unsigned int code;
	unsigned int debounce_ms;
	int irq;
	bool wakeup;
	bool pending;		/* debounce work queued, under kp->lock */
	bool down;		/* last reported, under kp->lock */
};

struct sb_keypad {
	struct input_dev *input;
	/*
	 * lock protects npending, ndown and every key's pending and down;
	 * keypad-scan is activated and released under it, so an interrupt
	 * between a key's scan and the release keeps the blocker.
	 */
	spinlock_t lock;
	unsigned int npending;
	unsigned int ndown;
	struct suspend_blocker scan;	/* "keypad-scan" */
	unsigned int nkeys;
	struct sb_key keys[];
};

static irqreturn_t sb_key_irq(int irq, void *data)
{
	struct sb_key *key = data;
	struct sb_keypad *kp = key->kp;
	unsigned long irqflags;

	spin_lock_irqsave(&kp->lock, irqflags);
	suspend_block(&kp->scan);
	if (!key->pending) {
		key->pending = true;
		kp->npending++;
	}
	spin_unlock_irqrestore(&kp->lock, irqflags);
	mod_delayed_work(system_wq, &key->work,
			 msecs_to_jiffies(key->debounce_ms));
	return IRQ_HANDLED;
}

/* The debounce timer expired: scan the key, report, maybe release. */
static void sb_key_work(struct work_struct *work)
{
	struct sb_key *key = container_of(to_delayed_work(work), struct sb_key,
					  work);
	struct sb_keypad *kp = key->kp;
	int val = gpiod_get_value_cansleep(key->gpiod);
	bool changed = false;

	spin_lock_irq(&kp->lock);
	if (key->pending) {
		key->pending = false;
		kp->npending--;
	}
	if (val >= 0 && !!val != key->down) {
		key->down = val;
		if (key->down)
			kp->ndown++;
		else
			kp->ndown--;
		changed = true;
	}
	spin_unlock_irq(&kp->lock);

	if (changed) {
		input_report_key(kp->input, key->code, key->down);
		input_sync(kp->input);
	}

	spin_lock_irq(&kp->lock);
	if (!kp->npending && !kp->ndown)
		suspend_unblock(&kp->scan);
	spin_unlock_irq(&kp->lock);
}

/* devm action: after the interrupts are freed, before the input device. */
static void sb_keypad_release(void *data)
{
	struct sb_keypad *kp = data;
	unsigned int i;

	for (i = 0; i < kp->nkeys; i++)
		cancel_delayed_work_sync(&kp->keys[i].work);
	suspend_blocker_destroy(&kp->scan);
}

static int sb_keypad_parse_key(struct device *dev, struct fwnode_handle *child,
			       struct sb_key *key)
{
	u32 debounce = SB_KEYPAD_DEBOUNCE_MS;

	if (fwnode_property_read_u32(child, "linux,code", &key->code) ||
	    key->code >= KEY_CNT)
		return dev_err_probe(dev, -EINVAL,
				     "%pfwP: missing or bad linux,code\n", child);
	fwnode_property_read_u32(child, "debounce-interval", &debounce);
	if (debounce > SB_KEYPAD_DEBOUNCE_MAX_MS)
		return dev_err_probe(dev, -EINVAL,
				     "%pfwP: debounce-interval %u ms above %u\n",
				     child, debounce, SB_KEYPAD_DEBOUNCE_MAX_MS);
	key->debounce_ms = debounce;
	key->wakeup = fwnode_property_read_bool(child, "wakeup-source");
	key->gpiod = devm_fwnode_gpiod_get(dev, child, NULL, GPIOD_IN, "key");
	if (IS_ERR(key->gpiod))
		return dev_err_probe(dev, PTR_ERR(key->gpiod),
				     "%pfwP: no usable gpios\n", child);
	key->irq = gpiod_to_irq(key->gpiod);
	if (key->irq < 0)
		return dev_err_probe(dev, key->irq,
				     "%pfwP: its GPIO has no interrupt\n", child);
	return 0;
}

static int sb_keypad_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct fwnode_handle *child;
	struct sb_keypad *kp;
	const char *label = "sbrig-keypad";
	unsigned int n, i = 0;
	bool wakeup = false;
	int ret;

	n = device_get_child_node_count(dev);
	if (!n)
		return dev_err_probe(dev, -EINVAL, "no keys (child nodes)\n");
	kp = devm_kzalloc(dev, struct_size(kp, keys, n), GFP_KERNEL);
	if (!kp)
		return -ENOMEM;
	spin_lock_init(&kp->lock);
	device_property_read_string(dev, "label", &label);

	kp->input = devm_input_allocate_device(dev);
	if (!kp->input)
		return -ENOMEM;
	kp->input->name = label;
	kp->input->phys = "sbrig-keypad/input0";
	kp->input->id.bustype = BUS_HOST;
	if (device_property_read_bool(dev, "autorepeat"))
		__set_bit(EV_REP, kp->input->evbit);

	device_for_each_child_node(dev, child) {
		struct sb_key *key = &kp->keys[i];

		key->kp = kp;
		INIT_DELAYED_WORK(&key->work, sb_key_work);
		ret = sb_keypad_parse_key(dev, child, key);
		if (ret) {
			fwnode_handle_put(child);
			return ret;
		}
		input_set_capability(kp->input, EV_KEY, key->code);
		wakeup |= key->wakeup;
		i++;
	}
	kp->nkeys = i;

	/* before the interrupts: released after they are freed */
	suspend_blocker_init(&kp->scan, "keypad-scan");
	ret = devm_add_action_or_reset(dev, sb_keypad_release, kp);
	if (ret)
		return ret;
	ret = input_register_device(kp->input);
	if (ret)
		return dev_err_probe(dev, ret, "input device\n");
	for (i = 0; i < kp->nkeys; i++) {
		struct sb_key *key = &kp->keys[i];

		ret = devm_request_any_context_irq(dev, key->irq, sb_key_irq,
						   IRQF_TRIGGER_RISING |
						   IRQF_TRIGGER_FALLING,
						   "sbrig-keypad", key);
		if (ret < 0)
			return dev_err_probe(dev, ret, "key %u: irq %d\n",
					     key->code, key->irq);
	}
	device_init_wakeup(dev, wakeup);
	platform_set_drvdata(pdev, kp);
	return 0;
}

/*
 * A debounce still pending would read the GPIO after its controller
 * suspended: scan now (keypad-scan still holds an opportunistic suspend
 * off until the scan is reported; a forced one goes on after it). Then
 * arm the wakeup keys; if one cannot be armed, the suspend fails rather
 * than losing that key's wakeups, as gpio-keys does.
 */
static int __maybe_unused sb_keypad_suspend(struct device *dev)
{
	struct sb_keypad *kp = dev_get_drvdata(dev);
	unsigned int i;
	int ret;

	for (i = 0; i < kp->nkeys; i++)
		flush_delayed_work(&kp->keys[i].work);
	if (!device_may_wakeup(dev))
		return 0;
	for (i = 0; i < kp->nkeys; i++) {
		struct sb_key *key = &kp->keys[i];

		if (!key->wakeup)
			continue;
		ret = enable_irq_wake(key->irq);
		if (ret) {
			dev_err(dev, "key %u: cannot arm irq %d for wakeup: %d\n",
				key->code, key->irq, ret);
			while (i--)
				if (kp->keys[i].wakeup)
					disable_irq_wake(kp->keys[i].irq);
			return ret;
		}
	}
	return 0;
}

static int __maybe_unused sb_keypad_resume(struct device *dev)
{
	struct sb_keypad *kp = dev_get_drvdata(dev);
	unsigned int i;

	if (device_may_wakeup(dev))
		for (i = 0; i < kp->nkeys; i++)
			if (kp->keys[i].wakeup)
				disable_irq_wake(kp->keys[i].irq);
	return 0;
}

static SIMPLE_DEV_PM_OPS(sb_keypad_pm, sb_keypad_suspend, sb_keypad_resume);

static const struct of_device_id sb_keypad_of_match[] = {
	{ .compatible = "sbrig,keypad" },
	{ }
};
MODULE_DEVICE_TABLE(of, sb_keypad_of_match);

static struct platform_driver sb_keypad_driver = {
	.probe	= sb_keypad_probe,
	.driver	= {
		.name		= "sbrig-keypad",
		.of_match_table	= sb_keypad_of_match,
		.pm		= &sb_keypad_pm,
	},
};

/**
 * sb_keypad_init() - register the sbrig,keypad platform driver
 *
 * Context: process context.
 * Return: 0 or a negative errno.
 */
int sb_keypad_init(void)
{
	return platform_driver_register(&sb_keypad_driver);
}

/**
 * sb_keypad_exit() - unregister it (every keypad is removed)
 *
 * Context: process context.
 */
void sb_keypad_exit(void)
{
	platform_driver_unregister(&sb_keypad_driver);
}
