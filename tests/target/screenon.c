// SPDX-License-Identifier: GPL-2.0
/*
 * screenon - the demo target's display: awake for a while after a wakeup
 *
 *	screenon [NAME [MS]]
 *
 * The virtual target's stand-in for a phone whose screen comes on when a
 * key wakes it. QEMU's PS/2 keyboard loses the key that woke the guest
 * from S3 (the controller is reset on resume), so no input event reaches
 * user space; the wakeup is caught in the kernel instead, as a keypad
 * driver does: sb_test.ko (tests/target/sb_test) blocks suspend with its
 * blocker "sb_test_resume" on the next resume ("hold_after_resumes 1").
 * screenon polls debugfs suspend_blockers every 20 ms (it is frozen while
 * the system sleeps), and once that blocker is active, blocks suspend with
 * its own user-space blocker NAME (default "screen-on") through
 * /dev/suspend_blocker, lets the kernel's go ("release_resume"), re-arms
 * it, and releases NAME MS ms (default 2000) later. While the screen is
 * on, the rig has time to reach the target's agent (its serial line is no
 * wakeup source). Prints "ready" once armed, then "on" and "off"; stdout
 * is flushed after every line. Runs until killed. Needs sb_test.ko and
 * CAP_BLOCK_SUSPEND. Exit: 1 on an error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/suspend_block_dev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define CTL	"/sys/kernel/debug/sb_test/ctl"
#define STATS	"/sys/kernel/debug/" SUSPEND_BLOCK_STATS_FILE
#define KBLOCKER "\"sb_test_resume\"\t"

static int open_blocker(const char *name)
{
	int fd = open("/dev/suspend_blocker", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ioctl(fd, SUSPEND_BLOCKER_IOCTL_INIT(strlen(name)), name) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int ctl(const char *cmd)
{
	int fd = open(CTL, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd);
	close(fd);
	return ok ? 0 : -1;
}

/* 1 if the kernel's resume blocker is active, 0 if not, -1 on error. */
static int resume_blocked(void)
{
	static char buf[1 << 16];
	long long count, wake, since;
	ssize_t n, len = 0;
	char *p;
	int fd = open(STATS, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	p = strstr(buf, KBLOCKER);
	if (!p || sscanf(p + strlen(KBLOCKER), "%lld %lld %lld", &count, &wake,
			 &since) != 3)
		return 0;
	return since != 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "screen-on";
	long ms = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
	int bfd;

	if (argc > 3 || ms <= 0) {
		fprintf(stderr, "usage: screenon [NAME [MS]]\n");
		return 2;
	}
	bfd = open_blocker(name);
	if (bfd < 0 || ctl("hold_after_resumes 1")) {
		perror("screenon");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int r = resume_blocked();

		if (r < 0) {
			perror("screenon: " STATS);
			return 1;
		}
		if (!r) {
			sleep_ms(20);
			continue;
		}
		if (ioctl(bfd, SUSPEND_BLOCKER_IOCTL_BLOCK) < 0 ||
		    ctl("release_resume") || ctl("hold_after_resumes 1")) {
			perror("screenon");
			return 1;
		}
		printf("on\n");
		fflush(stdout);
		sleep_ms(ms);
		ioctl(bfd, SUSPEND_BLOCKER_IOCTL_UNBLOCK);
		printf("off\n");
		fflush(stdout);
	}
}
