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
 * faults in only holds up its own caller), the blocker is charged to the
 * creator's memory cgroup (GFP_KERNEL_ACCOUNT), every user may own at most
 * max_user_blockers blockers, and failures are logged rate-limited.
 * There is no lock on the ioctl path: a file's blocker pointer is set once
 * (cmpxchg) and lives until release(), when no ioctl can be running.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/lockdep.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>
#include <uapi/linux/suspend_block_dev.h>
#include "sb_internal.h"

static unsigned int sb_max_user_blockers = 256;
module_param_named(max_user_blockers, sb_max_user_blockers, uint, 0644);
MODULE_PARM_DESC(max_user_blockers,
		 "Blockers one user (real uid) may own through /dev/suspend_blocker; CAP_SYS_RESOURCE is exempt (0: no limit)");

/* How many user blockers one uid owns. */
struct sb_user_quota {
	struct hlist_node node;
	kuid_t uid;
	unsigned int count;
};

/*
 * sb_quota_lock protects sb_quotas (the table and every entry's count).
 * Taken in process context only, never across user copies or allocations.
 */
static DEFINE_SPINLOCK(sb_quota_lock);
static DEFINE_HASHTABLE(sb_quotas, 6);

struct sb_user_blocker {
	struct suspend_blocker blocker;
	struct sb_user_quota *quota;	/* charged for this blocker */
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

/* Context: sb_quota_lock held. */
static struct sb_user_quota *sb_quota_find_locked(kuid_t uid)
{
	struct sb_user_quota *q;

	lockdep_assert_held(&sb_quota_lock);
	hash_for_each_possible(sb_quotas, q, node, __kuid_val(uid))
		if (uid_eq(q->uid, uid))
			return q;
	return NULL;
}

/*
 * Charge one blocker to the calling user (its real uid, as RLIMIT_NPROC
 * counts). Returns the user's entry, or NULL when the user owns
 * max_user_blockers already and lacks CAP_SYS_RESOURCE (checked only
 * then, as other limits do), or no entry could be allocated.
 */
static struct sb_user_quota *sb_quota_charge(void)
{
	kuid_t uid = current_uid();
	unsigned int max = READ_ONCE(sb_max_user_blockers);
	struct sb_user_quota *q, *fresh;
	bool exempt = false;

	/* Allocated before the lock; freed below if the uid has an entry. */
	fresh = kmalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	for (;;) {
		spin_lock(&sb_quota_lock);
		q = sb_quota_find_locked(uid);
		if (!q || !max || q->count < max || exempt)
			break;
		spin_unlock(&sb_quota_lock);
		if (!capable(CAP_SYS_RESOURCE)) {
			kfree(fresh);
			return NULL;
		}
		exempt = true;
	}
	if (!q && fresh) {
		q = fresh;
		fresh = NULL;
		q->uid = uid;
		q->count = 0;
		hash_add(sb_quotas, &q->node, __kuid_val(uid));
	}
	if (q)
		q->count++;
	spin_unlock(&sb_quota_lock);
	kfree(fresh);
	return q;
}

static void sb_quota_uncharge(struct sb_user_quota *q)
{
	spin_lock(&sb_quota_lock);
	if (--q->count)
		q = NULL;
	else
		hash_del(&q->node);
	spin_unlock(&sb_quota_lock);
	kfree(q);
}

static long sb_user_create(struct file *file, void __user *uname, size_t len)
{
	struct sb_user_blocker *bl;

	if (READ_ONCE(file->private_data))
		return -EBUSY;
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	bl = kzalloc(struct_size(bl, name, len + 1), GFP_KERNEL_ACCOUNT);
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
	/* Over the per-user limit: the seed's "could not allocate" errno. */
	bl->quota = sb_quota_charge();
	if (!bl->quota) {
		kfree(bl);
		return -ENOMEM;
	}
	suspend_blocker_init(&bl->blocker, bl->name);
	/* Publish it (fully ordered); a concurrent INIT on this file won. */
	if (cmpxchg(&file->private_data, NULL, bl)) {
		suspend_blocker_destroy(&bl->blocker);
		sb_quota_uncharge(bl->quota);
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
	if (!bl) {
		ret = -ENOENT;		/* as the seed: before INIT, any cmd */
		goto out;
	}
	switch (cmd) {
	case SUSPEND_BLOCKER_IOCTL_BLOCK:
		if (!capable(CAP_BLOCK_SUSPEND)) {
			ret = -EPERM;
		} else {
			suspend_block(&bl->blocker);
			ret = 0;
		}
		break;
	case SUSPEND_BLOCKER_IOCTL_UNBLOCK:
		suspend_unblock(&bl->blocker);
		ret = 0;
		break;
	default:
		ret = -ENOTTY;
	}
out:
	/* Any user can make ioctls fail: never flood the log. */
	if (ret && (sb_debug_mask & SB_DEBUG_FAILURE))
		pr_err_ratelimited("ioctl: cmd %x failed, %ld\n", cmd, ret);
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
	sb_quota_uncharge(bl->quota);
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
