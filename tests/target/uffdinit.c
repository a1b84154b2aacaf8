// SPDX-License-Identifier: GPL-2.0
/*
 * uffdinit - start a /dev/suspend_blocker INIT that never finishes
 *
 *	uffdinit [LEN]
 *
 * Issues SUSPEND_BLOCKER_IOCTL_INIT(LEN) (default 8) with the name in a
 * page that never faults in (userfaultfd), so the ioctl stays inside the
 * kernel's copy_from_user() until the process is killed. A child process
 * serves the userfaultfd: it prints "fault" once the kernel has touched
 * the page (the ioctl is then certainly under way) and waits forever.
 * A test then checks that other processes' ioctls are not held up.
 * Exit status: 1 on a setup error or if the ioctl ever returns.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <linux/suspend_block_dev.h>
#include "uffd.h"

int main(int argc, char **argv)
{
	unsigned long len = argc > 1 ? strtoul(argv[1], NULL, 0) : 8;
	void *page;
	int uffd, fd, ret;
	pid_t pid;

	fd = open("/dev/suspend_blocker", O_RDWR | O_CLOEXEC);
	uffd = uffd_page(&page);
	if (fd < 0 || uffd < 0) {
		perror("uffdinit: setup");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("uffdinit: fork");
		return 1;
	}
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (uffd_wait_fault(uffd, -1))
			_exit(1);
		printf("fault\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	ret = ioctl(fd, SUSPEND_BLOCKER_IOCTL_INIT(len), page);
	printf("init returned %d (errno %d)\n", ret, ret ? errno : 0);
	kill(pid, SIGKILL);
	return 1;
}
