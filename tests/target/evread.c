// SPDX-License-Identifier: GPL-2.0
/*
 * evread - read debugfs suspend_blocker_events the way a slow reader would
 *
 *	evread [-b BYTES] [-p MS] PHASE...
 *
 * Opens the event log once, then for each PHASE: "drain" reads with
 * O_NONBLOCK until EAGAIN and prints every line; "poll" waits up to -p MS
 * (default 2000) for POLLIN and prints "poll=1" or "poll=0"; "wait" reads
 * a line from stdin and "sleep:MS" sleeps (so a test can make events
 * happen meanwhile);
 * "epoll" waits up to -p MS in epoll_wait() on an epoll set that holds the
 * log with EPOLLIN|EPOLLWAKEUP (a reader that keeps the system awake until
 * it has read, as Android's suspend daemons do; needs CAP_BLOCK_SUSPEND)
 * and prints "epoll=1" or "epoll=0";
 * "small" issues one read with a buffer of -b BYTES and prints the result
 * or "errno=N"; "fault:N" issues one read of 4096 bytes into a buffer
 * whose first N bytes are mapped and the rest is not, and prints
 * "fault=RET" or "fault errno=N", then the lines it got. Lines are printed as read; stdout is flushed after each
 * phase. Exit status: 0, 1 on an unexpected error, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#define EVENTS "/sys/kernel/debug/suspend_blocker_events"

static int drain(int fd)
{
	char buf[8192];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			fprintf(stderr, "evread: read: %s\n",
				n ? strerror(errno) : "EOF");
			return 1;
		}
		fwrite(buf, 1, n, stdout);
	}
}

/* A read whose buffer ends after @valid bytes, at an unmapped page. */
static int fault_read(int fd, size_t valid)
{
	long psize = sysconf(_SC_PAGESIZE);
	size_t span = (valid + psize - 1) / psize * psize;
	char *base, *buf;
	ssize_t n;

	base = mmap(NULL, span + psize, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED || munmap(base + span, psize)) {
		perror("evread: mmap");
		return 1;
	}
	buf = base + span - valid;
	n = read(fd, buf, 4096);
	if (n < 0) {
		printf("fault errno=%d\n", errno);
	} else {
		printf("fault=%zd\n", n);
		fwrite(buf, 1, n, stdout);
	}
	munmap(base, span);
	return 0;
}

int main(int argc, char **argv)
{
	size_t small = 64;
	int poll_ms = 2000, opt, fd, i, ret = 0, ep = -1;
	char line[256];

	while ((opt = getopt(argc, argv, "b:p:h")) != -1) {
		switch (opt) {
		case 'b':
			small = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			poll_ms = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: evread [-b BYTES] [-p MS] drain|poll|epoll|wait|sleep:MS|small|fault:N...\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	fd = open(EVENTS, O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		perror("evread: " EVENTS);
		return 1;
	}
	for (i = optind; i < argc && !ret; i++) {
		if (!strcmp(argv[i], "drain")) {
			ret = drain(fd);
		} else if (!strcmp(argv[i], "poll")) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			printf("poll=%d\n", poll(&p, 1, poll_ms) == 1 &&
			       (p.revents & POLLIN));
		} else if (!strcmp(argv[i], "epoll")) {
			struct epoll_event ev = {
				.events = EPOLLIN | EPOLLWAKEUP,
			};

			if (ep < 0) {
				ep = epoll_create1(EPOLL_CLOEXEC);
				if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
					perror("evread: epoll");
					ret = 1;
					break;
				}
			}
			printf("epoll=%d\n", epoll_wait(ep, &ev, 1, poll_ms) == 1);
		} else if (!strcmp(argv[i], "wait")) {
			if (!fgets(line, sizeof(line), stdin))
				line[0] = '\0';
		} else if (!strncmp(argv[i], "sleep:", 6)) {
			usleep(atoi(argv[i] + 6) * 1000);
		} else if (!strncmp(argv[i], "fault:", 6)) {
			ret = fault_read(fd, strtoul(argv[i] + 6, NULL, 0));
		} else if (!strcmp(argv[i], "small")) {
			char *buf = malloc(small);
			ssize_t n = buf ? read(fd, buf, small) : -1;

			if (n < 0)
				printf("errno=%d\n", errno);
			else
				printf("read=%zd\n", n);
			free(buf);
		} else {
			fprintf(stderr, "evread: unknown phase '%s'\n", argv[i]);
			ret = 2;
		}
		fflush(stdout);
	}
	if (ep >= 0)
		close(ep);
	close(fd);
	return ret;
}
