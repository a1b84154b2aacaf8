/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vport.h - the line loop of the virtual rig's target-side pieces
 *
 * vkeypad and vcharger each read one virtio-serial port that the virtual
 * rig (rig/virtual/vrig.py) writes lines to. The port is watched by epoll
 * with EPOLLWAKEUP: when the rig's bytes arrive while the guest resumes
 * (QEMU hands them over once the virtio-console driver has resumed) and
 * the reader is still frozen, the kernel activates the epoll item's
 * wakeup source (named after the port, e.g. "vport0p1") from the port's
 * interrupt and holds it until the next epoll_wait(), that is until the
 * reader has acted on every line it read. So opportunistic suspend waits
 * for the line as for a real device's wake interrupt. Needs
 * CAP_BLOCK_SUSPEND (root).
 *
 * vport_run() opens PORT, calls ready() once it is watched, then calls
 * line() for every complete line (without its newline; an overlong line
 * is dropped) until SIGTERM or SIGINT. Return: 0 on a signal, 1 on an
 * error (reported on stderr with the program's name).
 */
#ifndef VPORT_H
#define VPORT_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile sig_atomic_t vport_quit;

static void vport_on_signal(int sig)
{
	(void)sig;
	vport_quit = 1;
}

static int vport_run(const char *prog, const char *path,
		     void (*ready)(void *ctx),
		     void (*line)(const char *s, void *ctx), void *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLWAKEUP };
	struct sigaction sa = { .sa_handler = vport_on_signal };
	char buf[256];
	size_t len = 0;
	int port, ep;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	port = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (port < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, port, &ev)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	ready(ctx);
	while (!vport_quit) {
		ssize_t n;
		char *nl;

		/* the previous batch is handled: this releases the source */
		if (epoll_wait(ep, &ev, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: epoll_wait: %s\n", prog,
				strerror(errno));
			return 1;
		}
		while ((n = read(port, buf + len, sizeof(buf) - 1 - len)) > 0) {
			len += (size_t)n;
			buf[len] = '\0';
			while ((nl = strchr(buf, '\n'))) {
				*nl = '\0';
				line(buf, ctx);
				len -= (size_t)(nl + 1 - buf);
				memmove(buf, nl + 1, len + 1);
			}
			if (len == sizeof(buf) - 1)
				len = 0;	/* an overlong line: dropped */
		}
		if (n == 0)		/* nobody on the host side: wait a bit */
			usleep(20000);
	}
	return 0;
}

#endif /* VPORT_H */
