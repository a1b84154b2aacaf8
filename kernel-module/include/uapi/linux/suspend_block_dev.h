/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * User-space interface of suspend_block.ko: the /dev/suspend_blocker ioctls.
 *
 * The ioctl numbers are those of the 2010 "suspend block api" series
 * (include/linux/suspend_block_dev.h), so programs written for it work
 * unchanged:
 *
 *	fd = open("/dev/suspend_blocker", O_RDWR | O_CLOEXEC);
 *	ioctl(fd, SUSPEND_BLOCKER_IOCTL_INIT(strlen(name)), name);
 *	ioctl(fd, SUSPEND_BLOCKER_IOCTL_BLOCK);
 *	ioctl(fd, SUSPEND_BLOCKER_IOCTL_UNBLOCK);
 *	close(fd);	(destroys the blocker)
 *
 * The name passed to INIT is not NUL-terminated; its length is encoded in
 * the ioctl number. Errors: EBUSY (second INIT on one fd), ENAMETOOLONG
 * (len > NAME_MAX), EINVAL (empty name, or a byte outside printable ASCII
 * 0x20..0x7e, or a double quote or backslash: such names would corrupt the
 * debugfs table, so they are rejected, never escaped), EFAULT (bad
 * pointer), ENOMEM (no memory, or the caller's user already owns the
 * module's max_user_blockers blockers), ENOENT
 * (any ioctl but INIT before INIT, as in the seed), EPERM (BLOCK without
 * CAP_BLOCK_SUSPEND), ENOTTY (unknown ioctl after INIT).
 */
#ifndef _UAPI_LINUX_SUSPEND_BLOCK_DEV_H
#define _UAPI_LINUX_SUSPEND_BLOCK_DEV_H

#include <linux/ioctl.h>

#define SUSPEND_BLOCKER_IOCTL_INIT(len)		_IOC(_IOC_WRITE, 's', 0, len)
#define SUSPEND_BLOCKER_IOCTL_BLOCK		_IO('s', 1)
#define SUSPEND_BLOCKER_IOCTL_UNBLOCK		_IO('s', 2)

/*
 * The seed's input ioctls (patch 7), on the module's /dev/input/sbevent<N>
 * nodes only: the set number is mainline evdev's EVIOCREVOKE, so never
 * send it to a /dev/input/event<N>. As in the seed, the set ioctl takes
 * its value as the argument itself (ioctl(fd, EVIOCSSUSPENDBLOCK, 1)):
 * nonzero opts the file in to a suspend blocker named "evdev" that is
 * active while its event queue is not empty; 0 opts out. Opting in needs
 * CAP_BLOCK_SUSPEND (EPERM). The get ioctl writes 0 or 1 to an int.
 */
#define EVIOCGSUSPENDBLOCK		_IOR('E', 0x91, int)
#define EVIOCSSUSPENDBLOCK		_IOW('E', 0x91, int)
/* The class device name of the node of input device N's handler. */
#define SUSPEND_BLOCK_EVDEV_PREFIX	"sbevent"

/* Where the module puts the seed's /sys/power/policy and /sys/power/state. */
#define SUSPEND_BLOCK_SYSFS_DIR		"/sys/kernel/suspend_block"
/* debugfs files, relative to the debugfs mount point. */
#define SUSPEND_BLOCK_STATS_FILE	"suspend_blockers"
#define SUSPEND_BLOCK_EVENTS_FILE	"suspend_blocker_events"

#endif /* _UAPI_LINUX_SUSPEND_BLOCK_DEV_H */
