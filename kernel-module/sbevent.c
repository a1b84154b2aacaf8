// SPDX-License-Identifier: GPL-2.0
/*
 * sbevent<N>: evdev-like input nodes with the seed's EVIOCSSUSPENDBLOCK.
 *
 * Seed patch 7 ("Input: Block suspend while event queue is not empty")
 * added an ioctl to evdev. A module cannot change evdev, so this input
 * handler gives every input device a node of its own, registered in the
 * input class the way evdev registers event<N>: the class device
 * sbevent<N> (its parent is the input device, so
 * /sys/class/input/sbevent<N>/device is that device) and the char device
 * /dev/input/sbevent<N> (input major, a dynamic input minor; devtmpfs
 * makes the node). N is the handler's own number, the lowest free one
 * (not derived from the minor: the input core's numbering is private).
 *
 * A node reads like evdev: struct input_event records, whole packets (up
 * to SYN_REPORT) at a time, poll(), O_NONBLOCK, and the identity ioctls
 * EVIOCGVERSION, EVIOCGID, EVIOCGNAME, EVIOCGPHYS, EVIOCGUNIQ and
 * EVIOCGBIT. Each open file (client) has its own bounded queue, sized as
 * evdev sizes it; when it overflows, the queued events are dropped and
 * the reader sees SYN_DROPPED followed by the newest event, as from evdev.
 *
 * EVIOCSSUSPENDBLOCK (the argument itself is the value, as in the seed)
 * opts a client in: it then has a suspend blocker named "evdev", created
 * at opt-in, active while its queue is not empty. A read that leaves
 * events queued keeps it active; it is released when the queue is read
 * empty, when the client opts out (destroyed) or closes (destroyed), and
 * when the device goes away. EVIOCGSUSPENDBLOCK writes the setting as an
 * int. Opting in needs CAP_BLOCK_SUSPEND, as blocking through
 * /dev/suspend_blocker does. EVIOCSSUSPENDBLOCK has the number of
 * mainline evdev's EVIOCREVOKE: it means the seed's ioctl on our nodes
 * only.
 *
 * Not provided: writing events, grabs, EVIOCREVOKE, masks, clock
 * selection (timestamps are CLOCK_REALTIME, evdev's default), key/abs
 * state ioctls, force feedback, and 32-bit (compat) callers on 64-bit
 * kernels.
 *
 * keypad-scan (module parameter keypad_scan, off by default): the seed's
 * keypad driver holds "keypad-scan" from its interrupt until no key is
 * down. For keys that come from an existing driver (a PS/2 keyboard, a
 * uinput key controller) this handler does the closest thing: it
 * activates "keypad-scan" when the first key of any device goes down and
 * releases it when the last one is up. It sees a device's events before
 * passing them to the clients and again after, so a press is blocked
 * before its queue's "evdev", and a release is unblocked after it: the
 * order of the seed's timeline. Only keyboard codes count (below
 * BTN_MISC, and KEY_OK and up), not mouse or joystick buttons. To see the
 * keys while no client reads them, the handle of a keypad is kept open:
 * a device with a keyboard key and no pointer axes (EV_REL, EV_ABS).
 * Pointers and touch controllers are left alone, so they can still
 * runtime-suspend while nobody uses them (an open input device is in use).
 *
 * Lifetime follows evdev.c: the input core serialises connect and
 * disconnect; the struct sb_evdev lives until the last open file's
 * reference on its class device is gone; open files pin the module.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/idr.h>
#include <linux/input.h>
#include <linux/major.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <uapi/linux/suspend_block_dev.h>
#include "sb_internal.h"

#define SB_EVDEV_MIN_BUFFER	64U
#define SB_EVDEV_BUF_PACKETS	8U
/* Numbers of the sbevent<N> nodes. */
static DEFINE_IDA(sb_evdev_ida);

struct sb_evdev {
	struct input_handle handle;
	/* mutex protects open and exist, and serialises ioctls. */
	struct mutex mutex;
	int open;		/* clients that opened the input device */
	bool exist;		/* false once the input device is gone */
	/* client_lock protects client_list updates (readers use RCU). */
	spinlock_t client_lock;
	struct list_head client_list;
	struct device dev;
	int num;		/* N of sbevent<N>, from sb_evdev_ida */
	struct cdev cdev;
	/* keypad-scan: the keys down, under sb_keyscan_lock */
	bool keyscan;		/* counts this device's keys (its own open) */
	unsigned long keys_down[BITS_TO_LONGS(KEY_CNT)];
};

static bool keypad_scan;
module_param(keypad_scan, bool, 0444);
MODULE_PARM_DESC(keypad_scan,
		 "Hold keypad-scan while any key of an input device is down");

/* sb_keyscan_lock protects sb_keys_down and every keys_down bitmap. */
static DEFINE_SPINLOCK(sb_keyscan_lock);
static unsigned int sb_keys_down;
static struct suspend_blocker sb_keyscan_blocker;	/* "keypad-scan" */

struct sb_evclient {
	/*
	 * buffer_lock protects buffer, head, tail, packet_head, use_blocker,
	 * gone and the state of blocker. Taken with interrupts disabled: the
	 * input core passes events with the device's event_lock held.
	 */
	spinlock_t buffer_lock;
	unsigned int head;
	unsigned int tail;
	unsigned int packet_head;	/* end of the last whole packet */
	bool use_blocker;		/* opted in: blocker is initialised */
	bool gone;			/* the device went away */
	struct suspend_blocker blocker;	/* "evdev" */
	wait_queue_head_t wait;
	struct sb_evdev *evdev;
	struct list_head node;
	unsigned int bufsize;
	struct input_event buffer[];
};

/* The blocker follows the queue. Context: buffer_lock held. */
static void sb_evclient_sync_blocker(struct sb_evclient *client)
{
	lockdep_assert_held(&client->buffer_lock);
	if (!client->use_blocker)
		return;
	if (client->head != client->tail && !client->gone)
		suspend_block(&client->blocker);
	else
		suspend_unblock(&client->blocker);
}

/* As evdev's __pass_event(). Context: buffer_lock held. */
static void sb_evclient_queue(struct sb_evclient *client,
			      const struct input_event *event)
{
	client->buffer[client->head++] = *event;
	client->head &= client->bufsize - 1;

	if (unlikely(client->head == client->tail)) {
		struct input_event dropped = {
			.input_event_sec = event->input_event_sec,
			.input_event_usec = event->input_event_usec,
			.type = EV_SYN,
			.code = SYN_DROPPED,
		};

		/* Drops every unread event: SYN_DROPPED + the newest stay. */
		client->tail = (client->head - 2) & (client->bufsize - 1);
		client->buffer[client->tail] = dropped;
		client->packet_head = client->tail;
	}
	if (event->type == EV_SYN && event->code == SYN_REPORT)
		client->packet_head = client->head;
}

static void sb_evclient_pass(struct sb_evclient *client,
			     const struct input_value *vals,
			     unsigned int count, ktime_t *ev_time)
{
	struct timespec64 ts = ktime_to_timespec64(ev_time[INPUT_CLK_REAL]);
	struct input_event event = {
		.input_event_sec = ts.tv_sec,
		.input_event_usec = ts.tv_nsec / NSEC_PER_USEC,
	};
	const struct input_value *v;
	bool wakeup = false;

	/* Interrupts are disabled (the device's event_lock). */
	spin_lock(&client->buffer_lock);
	for (v = vals; v != vals + count; v++) {
		if (v->type == EV_SYN && v->code == SYN_REPORT) {
			if (client->packet_head == client->head)
				continue;	/* an empty packet */
			wakeup = true;
		}
		event.type = v->type;
		event.code = v->code;
		event.value = v->value;
		sb_evclient_queue(client, &event);
	}
	sb_evclient_sync_blocker(client);
	spin_unlock(&client->buffer_lock);
	if (wakeup)
		wake_up_interruptible_poll(&client->wait,
					   EPOLLIN | EPOLLRDNORM);
}

static bool sb_keyscan_code(unsigned int code)
{
	return code < BTN_MISC || (code >= KEY_OK && code < KEY_CNT);
}

/* A keypad for keypad-scan: a keyboard key, no pointer axes. */
static bool sb_keyscan_device(struct input_dev *dev)
{
	unsigned int code;

	if (!test_bit(EV_KEY, dev->evbit) || test_bit(EV_REL, dev->evbit) ||
	    test_bit(EV_ABS, dev->evbit))
		return false;
	for_each_set_bit(code, dev->keybit, KEY_CNT)
		if (sb_keyscan_code(code))
			return true;
	return false;
}

/*
 * keypad-scan: presses (@down) are counted before the clients see them,
 * releases after. Context: the device's event_lock held, irqs off.
 */
static void sb_keyscan(struct sb_evdev *evdev, const struct input_value *vals,
		       unsigned int count, bool down)
{
	const struct input_value *v;

	if (!evdev->keyscan)
		return;
	spin_lock(&sb_keyscan_lock);
	for (v = vals; v != vals + count; v++) {
		if (v->type != EV_KEY || !sb_keyscan_code(v->code) ||
		    v->value == 2 || !!v->value != down)
			continue;
		if (down && !__test_and_set_bit(v->code, evdev->keys_down)) {
			if (!sb_keys_down++)
				suspend_block(&sb_keyscan_blocker);
		} else if (!down &&
			   __test_and_clear_bit(v->code, evdev->keys_down)) {
			if (!--sb_keys_down)
				suspend_unblock(&sb_keyscan_blocker);
		}
	}
	spin_unlock(&sb_keyscan_lock);
}

/* A device that goes away forgets its keys. */
static void sb_keyscan_forget(struct sb_evdev *evdev)
{
	unsigned long irqflags;
	unsigned int n;

	spin_lock_irqsave(&sb_keyscan_lock, irqflags);
	n = bitmap_weight(evdev->keys_down, KEY_CNT);
	bitmap_zero(evdev->keys_down, KEY_CNT);
	if (n) {
		sb_keys_down -= n;
		if (!sb_keys_down)
			suspend_unblock(&sb_keyscan_blocker);
	}
	spin_unlock_irqrestore(&sb_keyscan_lock, irqflags);
}

static void sb_evdev_events(struct input_handle *handle,
			    const struct input_value *vals, unsigned int count)
{
	struct sb_evdev *evdev = handle->private;
	ktime_t *ev_time = input_get_timestamp(handle->dev);
	struct sb_evclient *client;

	sb_keyscan(evdev, vals, count, true);
	rcu_read_lock();
	list_for_each_entry_rcu(client, &evdev->client_list, node)
		sb_evclient_pass(client, vals, count, ev_time);
	rcu_read_unlock();
	sb_keyscan(evdev, vals, count, false);
}

static void sb_evdev_event(struct input_handle *handle, unsigned int type,
			   unsigned int code, int value)
{
	struct input_value vals[] = { { type, code, value } };

	sb_evdev_events(handle, vals, 1);
}

static void sb_evdev_free(struct device *dev)
{
	struct sb_evdev *evdev = container_of(dev, struct sb_evdev, dev);

	input_put_device(evdev->handle.dev);
	ida_free(&sb_evdev_ida, evdev->num);
	kfree(evdev);
}

static int sb_evdev_open_device(struct sb_evdev *evdev)
{
	int ret = mutex_lock_interruptible(&evdev->mutex);

	if (ret)
		return ret;
	if (!evdev->exist) {
		ret = -ENODEV;
	} else if (!evdev->open++) {
		ret = input_open_device(&evdev->handle);
		if (ret)
			evdev->open--;
	}
	mutex_unlock(&evdev->mutex);
	return ret;
}

static void sb_evdev_close_device(struct sb_evdev *evdev)
{
	mutex_lock(&evdev->mutex);
	if (evdev->exist && !--evdev->open)
		input_close_device(&evdev->handle);
	mutex_unlock(&evdev->mutex);
}

static void sb_evdev_detach(struct sb_evdev *evdev, struct sb_evclient *client)
{
	spin_lock(&evdev->client_lock);
	list_del_rcu(&client->node);
	spin_unlock(&evdev->client_lock);
	synchronize_rcu();
}

static int sb_evdev_fop_open(struct inode *inode, struct file *file)
{
	struct sb_evdev *evdev = container_of(inode->i_cdev, struct sb_evdev,
					      cdev);
	struct input_dev *dev = evdev->handle.dev;
	struct sb_evclient *client;
	unsigned int bufsize;
	int ret;

	bufsize = roundup_pow_of_two(max(dev->hint_events_per_packet *
					 SB_EVDEV_BUF_PACKETS,
					 SB_EVDEV_MIN_BUFFER));
	client = kvzalloc(struct_size(client, buffer, bufsize),
			  GFP_KERNEL_ACCOUNT);
	if (!client)
		return -ENOMEM;
	spin_lock_init(&client->buffer_lock);
	init_waitqueue_head(&client->wait);
	client->bufsize = bufsize;
	client->evdev = evdev;
	spin_lock(&evdev->client_lock);
	list_add_tail_rcu(&client->node, &evdev->client_list);
	spin_unlock(&evdev->client_lock);

	ret = sb_evdev_open_device(evdev);
	if (ret) {
		sb_evdev_detach(evdev, client);
		kvfree(client);
		return ret;
	}
	file->private_data = client;
	return stream_open(inode, file);
}

static int sb_evdev_fop_release(struct inode *inode, struct file *file)
{
	struct sb_evclient *client = file->private_data;
	struct sb_evdev *evdev = client->evdev;

	mutex_lock(&evdev->mutex);
	if (evdev->exist)
		input_flush_device(&evdev->handle, file);
	mutex_unlock(&evdev->mutex);
	sb_evdev_detach(evdev, client);
	/* No more events can reach the client: its blocker goes. */
	if (client->use_blocker)
		suspend_blocker_destroy(&client->blocker);
	kvfree(client);
	sb_evdev_close_device(evdev);
	return 0;
}

/* One event off the queue; releases the blocker when it empties. */
static bool sb_evclient_fetch(struct sb_evclient *client,
			      struct input_event *event)
{
	bool have;

	spin_lock_irq(&client->buffer_lock);
	have = client->packet_head != client->tail;
	if (have) {
		*event = client->buffer[client->tail++];
		client->tail &= client->bufsize - 1;
		if (client->head == client->tail)
			sb_evclient_sync_blocker(client);
	}
	spin_unlock_irq(&client->buffer_lock);
	return have;
}

static bool sb_evclient_readable(struct sb_evclient *client)
{
	return READ_ONCE(client->packet_head) != READ_ONCE(client->tail);
}

/* A blocked reader has something to do. */
static bool sb_evclient_woken(struct sb_evclient *client)
{
	return sb_evclient_readable(client) || !READ_ONCE(client->evdev->exist);
}

static ssize_t sb_evdev_fop_read(struct file *file, char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct sb_evclient *client = file->private_data;
	struct sb_evdev *evdev = client->evdev;
	struct input_event event;
	size_t done = 0;
	int ret;

	if (count && count < sizeof(event))
		return -EINVAL;
	for (;;) {
		if (!READ_ONCE(evdev->exist))
			return -ENODEV;
		if (!sb_evclient_readable(client) &&
		    (file->f_flags & O_NONBLOCK))
			return -EAGAIN;
		if (!count)
			return 0;
		while (done + sizeof(event) <= count &&
		       sb_evclient_fetch(client, &event)) {
			if (copy_to_user(buf + done, &event, sizeof(event)))
				return -EFAULT;
			done += sizeof(event);
		}
		if (done)
			return done;
		if (!(file->f_flags & O_NONBLOCK)) {
			ret = wait_event_interruptible(client->wait,
						       sb_evclient_woken(client));
			if (ret)
				return ret;
		}
	}
}

static __poll_t sb_evdev_fop_poll(struct file *file, poll_table *wait)
{
	struct sb_evclient *client = file->private_data;
	__poll_t mask;

	poll_wait(file, &client->wait, wait);
	mask = READ_ONCE(client->evdev->exist) ? 0 : EPOLLHUP | EPOLLERR;
	if (sb_evclient_readable(client))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

static int sb_evdev_str_to_user(const char *str, unsigned int maxlen,
				void __user *p)
{
	unsigned int len;

	if (!str)
		return -ENOENT;
	len = strlen(str) + 1;
	if (len > maxlen)
		len = maxlen;
	return copy_to_user(p, str, len) ? -EFAULT : len;
}

static int sb_evdev_bits_to_user(const unsigned long *bits,
				 unsigned int maxbit, unsigned int maxlen,
				 void __user *p)
{
	unsigned int len = BITS_TO_LONGS(maxbit + 1) * sizeof(long);

	if (len > maxlen)
		len = maxlen;
	return copy_to_user(p, bits, len) ? -EFAULT : len;
}

static int sb_evdev_get_bits(struct input_dev *dev, unsigned int type,
			     unsigned int size, void __user *p)
{
	switch (type) {
	case 0:
		return sb_evdev_bits_to_user(dev->evbit, EV_MAX, size, p);
	case EV_KEY:
		return sb_evdev_bits_to_user(dev->keybit, KEY_MAX, size, p);
	case EV_REL:
		return sb_evdev_bits_to_user(dev->relbit, REL_MAX, size, p);
	case EV_ABS:
		return sb_evdev_bits_to_user(dev->absbit, ABS_MAX, size, p);
	case EV_MSC:
		return sb_evdev_bits_to_user(dev->mscbit, MSC_MAX, size, p);
	case EV_LED:
		return sb_evdev_bits_to_user(dev->ledbit, LED_MAX, size, p);
	case EV_SND:
		return sb_evdev_bits_to_user(dev->sndbit, SND_MAX, size, p);
	case EV_FF:
		return sb_evdev_bits_to_user(dev->ffbit, FF_MAX, size, p);
	case EV_SW:
		return sb_evdev_bits_to_user(dev->swbit, SW_MAX, size, p);
	default:
		return -EINVAL;
	}
}

/* EVIOCSSUSPENDBLOCK: the seed's opt-in, under buffer_lock. */
static int sb_evclient_set_blocker(struct sb_evclient *client, bool on)
{
	if (on && !capable(CAP_BLOCK_SUSPEND))
		return -EPERM;
	spin_lock_irq(&client->buffer_lock);
	if (on && !client->use_blocker)
		suspend_blocker_init(&client->blocker, "evdev");
	else if (!on && client->use_blocker)
		suspend_blocker_destroy(&client->blocker);
	client->use_blocker = on;
	sb_evclient_sync_blocker(client);
	spin_unlock_irq(&client->buffer_lock);
	return 0;
}

static long sb_evdev_do_ioctl(struct sb_evclient *client, unsigned int cmd,
			      unsigned long arg)
{
	struct input_dev *dev = client->evdev->handle.dev;
	void __user *p = (void __user *)arg;
	int __user *ip = p;
	unsigned int size;

	switch (cmd) {
	case EVIOCGVERSION:
		return put_user(EV_VERSION, ip);
	case EVIOCGID:
		return copy_to_user(p, &dev->id, sizeof(dev->id)) ? -EFAULT : 0;
	case EVIOCGSUSPENDBLOCK:
		return put_user((int)READ_ONCE(client->use_blocker), ip);
	case EVIOCSSUSPENDBLOCK:
		return sb_evclient_set_blocker(client, !!arg);
	}

	if (_IOC_TYPE(cmd) != 'E' || _IOC_DIR(cmd) != _IOC_READ)
		return -ENOTTY;
	size = _IOC_SIZE(cmd);
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(EVIOCGNAME(0)):
		return sb_evdev_str_to_user(dev->name, size, p);
	case _IOC_NR(EVIOCGPHYS(0)):
		return sb_evdev_str_to_user(dev->phys, size, p);
	case _IOC_NR(EVIOCGUNIQ(0)):
		return sb_evdev_str_to_user(dev->uniq, size, p);
	}
	if ((_IOC_NR(cmd) & ~EV_MAX) == _IOC_NR(EVIOCGBIT(0, 0)))
		return sb_evdev_get_bits(dev, _IOC_NR(cmd) & EV_MAX, size, p);
	return -ENOTTY;
}

static long sb_evdev_fop_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	struct sb_evclient *client = file->private_data;
	struct sb_evdev *evdev = client->evdev;
	long ret;

	ret = mutex_lock_interruptible(&evdev->mutex);
	if (ret)
		return ret;
	ret = evdev->exist ? sb_evdev_do_ioctl(client, cmd, arg) : -ENODEV;
	mutex_unlock(&evdev->mutex);
	return ret;
}

static const struct file_operations sb_evdev_fops = {
	.owner		= THIS_MODULE,
	.open		= sb_evdev_fop_open,
	.release	= sb_evdev_fop_release,
	.read		= sb_evdev_fop_read,
	.poll		= sb_evdev_fop_poll,
	.unlocked_ioctl	= sb_evdev_fop_ioctl,
	.llseek		= no_llseek,
};

/*
 * The device is going away: no new opens, ioctls or reads; blocked
 * readers and pollers wake up; every client's blocker is released (it
 * stays initialised until the client closes or opts out).
 */
static void sb_evdev_cleanup(struct sb_evdev *evdev)
{
	struct sb_evclient *client;

	mutex_lock(&evdev->mutex);
	WRITE_ONCE(evdev->exist, false);
	mutex_unlock(&evdev->mutex);

	spin_lock(&evdev->client_lock);
	list_for_each_entry(client, &evdev->client_list, node) {
		spin_lock_irq(&client->buffer_lock);
		client->gone = true;
		sb_evclient_sync_blocker(client);
		spin_unlock_irq(&client->buffer_lock);
		wake_up_interruptible_poll(&client->wait, EPOLLHUP | EPOLLERR);
	}
	spin_unlock(&evdev->client_lock);

	/* exist is false: nobody else touches open now */
	if (evdev->open) {
		input_flush_device(&evdev->handle, NULL);
		input_close_device(&evdev->handle);
	}
	sb_keyscan_forget(evdev);
}

static int sb_evdev_connect(struct input_handler *handler,
			    struct input_dev *dev,
			    const struct input_device_id *id)
{
	struct sb_evdev *evdev;
	int minor, ret;

	minor = input_get_new_minor(-1, 0, true);
	if (minor < 0)
		return minor;
	evdev = kzalloc(sizeof(*evdev), GFP_KERNEL);
	if (!evdev) {
		ret = -ENOMEM;
		goto free_minor;
	}
	evdev->num = ida_alloc(&sb_evdev_ida, GFP_KERNEL);
	if (evdev->num < 0) {
		ret = evdev->num;
		kfree(evdev);
		goto free_minor;
	}
	INIT_LIST_HEAD(&evdev->client_list);
	spin_lock_init(&evdev->client_lock);
	mutex_init(&evdev->mutex);
	evdev->exist = true;
	dev_set_name(&evdev->dev, "sbevent%d", evdev->num);

	evdev->handle.dev = input_get_device(dev);
	evdev->handle.name = dev_name(&evdev->dev);
	evdev->handle.handler = handler;
	evdev->handle.private = evdev;

	evdev->dev.devt = MKDEV(INPUT_MAJOR, minor);
	evdev->dev.class = &input_class;
	evdev->dev.parent = &dev->dev;
	evdev->dev.release = sb_evdev_free;
	device_initialize(&evdev->dev);

	ret = input_register_handle(&evdev->handle);
	if (ret)
		goto put_dev;
	cdev_init(&evdev->cdev, &sb_evdev_fops);
	ret = cdev_device_add(&evdev->cdev, &evdev->dev);
	if (ret)
		goto cleanup;
	/* keypad-scan needs a keypad's events even while no client reads */
	if (keypad_scan && sb_keyscan_device(dev) &&
	    !sb_evdev_open_device(evdev))
		evdev->keyscan = true;
	return 0;

cleanup:
	sb_evdev_cleanup(evdev);
	input_unregister_handle(&evdev->handle);
put_dev:
	put_device(&evdev->dev);
free_minor:
	input_free_minor(minor);
	return ret;
}

static void sb_evdev_disconnect(struct input_handle *handle)
{
	struct sb_evdev *evdev = handle->private;

	cdev_device_del(&evdev->cdev, &evdev->dev);
	sb_evdev_cleanup(evdev);
	input_free_minor(MINOR(evdev->dev.devt));
	input_unregister_handle(handle);
	put_device(&evdev->dev);
}

static const struct input_device_id sb_evdev_ids[] = {
	{ .driver_info = 1 },	/* every device */
	{ },
};

static struct input_handler sb_evdev_handler = {
	.event		= sb_evdev_event,
	.events		= sb_evdev_events,
	.connect	= sb_evdev_connect,
	.disconnect	= sb_evdev_disconnect,
	.name		= "sbevent",
	.id_table	= sb_evdev_ids,
};

/**
 * sb_sbevent_init() - register the sbevent input handler
 *
 * With keypad_scan set, also creates the "keypad-scan" blocker.
 *
 * Context: process context.
 * Return: 0 or a negative errno from input_register_handler().
 */
int sb_sbevent_init(void)
{
	int ret;

	if (keypad_scan)
		suspend_blocker_init(&sb_keyscan_blocker, "keypad-scan");
	ret = input_register_handler(&sb_evdev_handler);
	if (ret && keypad_scan)
		suspend_blocker_destroy(&sb_keyscan_blocker);
	return ret;
}

/**
 * sb_sbevent_exit() - unregister it (every node goes away)
 *
 * Context: process context; no node is open (they pin the module).
 */
void sb_sbevent_exit(void)
{
	input_unregister_handler(&sb_evdev_handler);
	if (keypad_scan)
		suspend_blocker_destroy(&sb_keyscan_blocker);
}
