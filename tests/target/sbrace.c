// SPDX-License-Identifier: GPL-2.0
/*
 * sbrace - a user-space suspend blocker that races the opportunistic worker
 *
 *	sbrace CYCLE DELAY_US persist|transient
 *
 * For the suspend-cycle campaign (tests/test_module_campaign.py), with
 * sb_campaign.ko loaded: creates the blocker "sbc_user" on
 * /dev/suspend_blocker and blocks; releases sb_campaign's "sbc_hold"
 * (writes "release" to its ctl), so that "sbc_user" is the last active
 * blocker; unblocks it (the worker starts reading and arming
 * /sys/power/wakeup_count); waits DELAY_US microseconds (0: none) and
 * blocks again. "transient" unblocks at once and exits; "persist" writes
 * "user CYCLE" to the ctl (sb_campaign logs it) and keeps the blocker
 * until it is killed (closing the file destroys it).
 *
 * Exit status: 0, 1 on an error (named on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/suspend_block_dev.h>

#define CTL	"/sys/kernel/debug/sb_campaign/ctl"
#define NAME	"sbc_user"

static int ctl(const char *cmd)
{
	int fd = open(CTL, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, cmd, strlen(cmd));
	close(fd);
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

static int fail(const char *what)
{
	fprintf(stderr, "sbrace: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	struct timespec delay;
	unsigned long us;
	char cmd[32];
	int fd, persist;

	if (argc != 4 || (strcmp(argv[3], "persist") &&
			  strcmp(argv[3], "transient"))) {
		fprintf(stderr, "usage: sbrace CYCLE DELAY_US persist|transient\n");
		return 2;
	}
	persist = !strcmp(argv[3], "persist");
	us = strtoul(argv[2], NULL, 0);
	delay.tv_sec = us / 1000000;
	delay.tv_nsec = (us % 1000000) * 1000;

	fd = open("/dev/suspend_blocker", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail("/dev/suspend_blocker");
	if (ioctl(fd, SUSPEND_BLOCKER_IOCTL_INIT(strlen(NAME)), NAME) ||
	    ioctl(fd, SUSPEND_BLOCKER_IOCTL_BLOCK))
		return fail("init/block");
	if (ctl("release"))
		return fail("release");
	if (ioctl(fd, SUSPEND_BLOCKER_IOCTL_UNBLOCK))
		return fail("unblock");
	if (us)
		while (nanosleep(&delay, &delay) && errno == EINTR)
			;
	if (ioctl(fd, SUSPEND_BLOCKER_IOCTL_BLOCK))
		return fail("block");
	if (!persist)
		return ioctl(fd, SUSPEND_BLOCKER_IOCTL_UNBLOCK) ? fail("unblock") : 0;
	snprintf(cmd, sizeof(cmd), "user %s", argv[1]);
	if (ctl(cmd))
		return fail("user");
	for (;;)
		pause();
}
