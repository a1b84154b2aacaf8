// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/suspend_blocker: suspend blockers for user space, with the seed's
 * ioctls (include/uapi/linux/suspend_block_dev.h).
 *
 * One blocker per open file: INIT names it, BLOCK/UNBLOCK toggle it and
 * release() destroys it. Beyond the seed, BLOCK requires CAP_BLOCK_SUSPEND
 * (as mainline's wake_lock and EPOLLWAKEUP do) and names that would break
 * the debugfs table are rejected with EINVAL.
 *
 * The node is mode 0666 and INIT needs no capability, so everything here
 * must be safe against any local user: INIT copies, checks and allocates
 * the name before it touches anything shared (a name in a page that never
 * faults in only holds up its own caller).
 * There is no lock on the ioctl path: a file's blocker pointer is set once
 * (cmpxchg) and lives until release(), when no ioctl can be running.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/suspend_block_dev.h>
#include "sb_internal.h"

struct sb_user_blocker {
	struct suspend_blocker blocker;
	char name[];
};

/**
 * sb_name_valid() - may this name appear in the debugfs table?
 * @name:	The name (not necessarily NUL-terminated).
 * @len:	Its length.
 *
 * Return: true for 1..NAME_MAX bytes of printable ASCII (0x20..0x7e)
 * other than '"' and '\\'.
 */
bool sb_name_valid(const char *name, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		if (name[i] < 0x20 || name[i] > 0x7e || name[i] == '"' ||
		    name[i] == '\\')
			return false;
	}
	return true;
}

static long sb_user_create(struct file *file, void __user *uname, size_t len)
{
	struct sb_user_blocker *bl;

	if (READ_ONCE(file->private_data))
		return -EBUSY;
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	bl = kzalloc(struct_size(bl, name, len + 1), GFP_KERNEL);
	if (!bl)
		return -ENOMEM;
	if (copy_from_user(bl->name, uname, len)) {
		kfree(bl);
		return -EFAULT;
	}
	if (!sb_name_valid(bl->name, len)) {
		kfree(bl);
		return -EINVAL;
	}
	suspend_blocker_init(&bl->blocker, bl->name);
	/* Publish it (fully ordered); a concurrent INIT on this file won. */
	if (cmpxchg(&file->private_data, NULL, bl)) {
		suspend_blocker_destroy(&bl->blocker);
		kfree(bl);
		return -EBUSY;
	}
	return 0;
}

static long sb_user_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct sb_user_blocker *bl;
	long ret;

	if ((cmd & ~IOCSIZE_MASK) == SUSPEND_BLOCKER_IOCTL_INIT(0)) {
		ret = sb_user_create(file, (void __user *)arg, _IOC_SIZE(cmd));
		goto out;
	}
	/* Pairs with the cmpxchg() in sb_user_create(). */
	bl = smp_load_acquire(&file->private_data);
	switch (cmd) {
	case SUSPEND_BLOCKER_IOCTL_BLOCK:
		if (!bl) {
			ret = -ENOENT;
		} else if (!capable(CAP_BLOCK_SUSPEND)) {
			ret = -EPERM;
		} else {
			suspend_block(&bl->blocker);
			ret = 0;
		}
		break;
	case SUSPEND_BLOCKER_IOCTL_UNBLOCK:
		if (!bl) {
			ret = -ENOENT;
		} else {
			suspend_unblock(&bl->blocker);
			ret = 0;
		}
		break;
	default:
		ret = -ENOTTY;
	}
out:
	if (ret && (sb_debug_mask & SB_DEBUG_FAILURE))
		pr_err("ioctl: cmd %x failed, %ld\n", cmd, ret);
	return ret;
}

/*
 * The misc core points private_data at the miscdevice on open; the seed
 * tests private_data for "no blocker yet", so clear it.
 */
static int sb_user_open(struct inode *inode, struct file *file)
{
	file->private_data = NULL;
	return nonseekable_open(inode, file);
}

static int sb_user_release(struct inode *inode, struct file *file)
{
	struct sb_user_blocker *bl = file->private_data;

	if (!bl)
		return 0;
	suspend_blocker_destroy(&bl->blocker);
	kfree(bl);
	return 0;
}

static const struct file_operations sb_user_fops = {
	.owner		= THIS_MODULE,
	.open		= sb_user_open,
	.release	= sb_user_release,
	.unlocked_ioctl	= sb_user_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= no_llseek,
};

static struct miscdevice sb_user_device = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "suspend_blocker",
	.fops	= &sb_user_fops,
	.mode	= 0666,
};

int sb_userdev_init(void)
{
	return misc_register(&sb_user_device);
}

void sb_userdev_exit(void)
{
	misc_deregister(&sb_user_device);
}
