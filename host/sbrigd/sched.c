// SPDX-License-Identifier: GPL-2.0
/*
 * sched.c - the daemon's single poll() loop.
 *
 * Modules register file descriptors (with a callback per fd) and one-shot
 * timers embedded in their own structs. Each iteration polls every fd with
 * the earliest timer's deadline as timeout, then runs the callbacks of the
 * ready fds and of the expired timers. Callbacks may add and remove fds and
 * timers freely: a removed fd's pending revents are dropped.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "sbrigd.h"
#include "internal.h"

#define SCHED_MAX_FDS 128

struct sched_fd {
	int fd;
	short events;
	sched_fd_fn fn;
	void *data;
};

static struct sched_fd fds[SCHED_MAX_FDS];
static unsigned int nfds;
static struct sched_timer *timers;	/* sorted by when_ns */
static volatile int quit;

int sched_init(void)
{
	nfds = 0;
	timers = NULL;
	quit = 0;
	return 0;
}

void sched_fini(void)
{
	nfds = 0;
	timers = NULL;
}

int sched_fd_add(int fd, short events, sched_fd_fn fn, void *data)
{
	if (nfds == SCHED_MAX_FDS)
		return sbrig_set_error(-EMFILE, "sched: too many descriptors");
	fds[nfds++] = (struct sched_fd){ fd, events, fn, data };
	return 0;
}

void sched_fd_events(int fd, short events)
{
	for (unsigned int i = 0; i < nfds; i++)
		if (fds[i].fd == fd)
			fds[i].events = events;
}

void sched_fd_del(int fd)
{
	for (unsigned int i = 0; i < nfds; i++) {
		if (fds[i].fd == fd) {
			fds[i] = fds[--nfds];
			return;
		}
	}
}

void sched_timer_stop(struct sched_timer *t)
{
	struct sched_timer **pp;

	if (!t->armed)
		return;
	for (pp = &timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	t->armed = false;
	t->next = NULL;
}

void sched_timer_start(struct sched_timer *t, int64_t when_ns,
		       sched_timer_fn fn, void *data)
{
	struct sched_timer **pp;

	sched_timer_stop(t);
	t->when_ns = when_ns;
	t->fn = fn;
	t->data = data;
	for (pp = &timers; *pp && (*pp)->when_ns <= when_ns; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	t->armed = true;
}

/**
 * sched_quit() - make sched_run() return after the current iteration
 *
 * Safe to call from a signal handler (it only sets a flag), though the
 * daemon's handler writes a self-pipe instead so that poll() wakes up.
 */
void sched_quit(void)
{
	quit = 1;
}

static void run_timers(void)
{
	int64_t now = sbrig_now_ns();

	while (timers && timers->when_ns <= now && !quit) {
		struct sched_timer *t = timers;

		timers = t->next;
		t->next = NULL;
		t->armed = false;
		t->fn(t->data);
	}
}

/**
 * sched_run() - run the loop until sched_quit()
 *
 * Return: 0, or -errno if poll() failed.
 */
int sched_run(void)
{
	struct pollfd pfds[SCHED_MAX_FDS];
	struct sched_fd snap[SCHED_MAX_FDS];

	while (!quit) {
		unsigned int n = nfds;
		int timeout = -1;

		for (unsigned int i = 0; i < n; i++) {
			snap[i] = fds[i];
			pfds[i] = (struct pollfd){ fds[i].fd, fds[i].events, 0 };
		}
		if (timers) {
			int64_t dt = timers->when_ns - sbrig_now_ns();

			if (dt <= 0)
				timeout = 0;
			else
				timeout = (int)((dt + NS_PER_MS - 1) / NS_PER_MS);
		}
		if (poll(pfds, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return sbrig_set_error(-errno, "poll: %s",
					       strerror(errno));
		}
		for (unsigned int i = 0; i < n && !quit; i++) {
			bool still = false;

			if (!pfds[i].revents)
				continue;
			/* skip fds a callback removed (or replaced) */
			for (unsigned int j = 0; j < nfds; j++)
				if (fds[j].fd == snap[i].fd &&
				    fds[j].fn == snap[i].fn &&
				    fds[j].data == snap[i].data)
					still = true;
			if (still)
				snap[i].fn(snap[i].fd, pfds[i].revents,
					   snap[i].data);
		}
		run_timers();
	}
	return 0;
}
