// SPDX-License-Identifier: GPL-2.0
/*
 * epwake - hold a mainline wakeup source through EPOLLWAKEUP
 *
 *	epwake MS
 *
 * Registers an eventfd with EPOLLWAKEUP, signals it and collects the event
 * with epoll_wait(): the kernel now holds the epoll item's wakeup source
 * ("[timerfd]"/"eventpoll" in /sys/kernel/debug/wakeup_sources) until the
 * next epoll_wait(). Prints "held", sleeps MS ms, calls epoll_wait() again
 * (which releases it), prints "released" and exits. Needs
 * CAP_BLOCK_SUSPEND, like any EPOLLWAKEUP user. Exit: 0, 1 error, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLWAKEUP };
	struct timespec ts;
	uint64_t one = 1;
	long ms;
	int ep, efd;

	if (argc != 2 || (ms = strtol(argv[1], NULL, 10)) < 0) {
		fprintf(stderr, "usage: epwake MS\n");
		return 2;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ep < 0 || efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) ||
	    write(efd, &one, sizeof(one)) != sizeof(one) ||
	    epoll_wait(ep, &ev, 1, 1000) != 1) {
		perror("epwake");
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	if (read(efd, &one, sizeof(one)) != sizeof(one))
		perror("epwake: read");
	epoll_wait(ep, &ev, 1, 0);
	printf("released\n");
	return 0;
}
