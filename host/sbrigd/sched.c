// SPDX-License-Identifier: GPL-2.0
/*
 * sched.c - the daemon's single poll() loop, see sched.h.
 *
 * Each turn polls every fd with the earliest timer's deadline as timeout
 * (clamped to what poll() takes), then runs the callbacks of the ready fds
 * and of the timers that were due when the turn started and were armed
 * before it. Callbacks may add and remove fds and timers freely: a removed
 * fd's pending revents are dropped, and a timer a callback arms for "now"
 * runs on the next turn, after poll() (with timeout 0) has looked at the
 * fds again.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "util.h"

#define SCHED_MAX_FDS 128

struct sched_fd {
	int fd;
	short events;
	sched_fd_fn fn;
	void *data;
};

/* the loop's state: only the loop's thread touches it */
static struct sched_fd fds[SCHED_MAX_FDS];
static unsigned int nfds;
static struct sched_timer *timers;	/* sorted by when_ns */
static uint64_t gen;			/* turns of the loop so far */
static bool quit;

int sched_init(void)
{
	nfds = 0;
	timers = NULL;
	gen = 1;
	quit = false;
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
		return sbrig_set_error(-EMFILE, "sched: more than %d descriptors",
				       SCHED_MAX_FDS);
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
	t->gen = gen;
	for (pp = &timers; *pp && (*pp)->when_ns <= when_ns; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	t->armed = true;
}

void sched_defer(struct sched_timer *t, sched_timer_fn fn, void *data)
{
	sched_timer_start(t, INT64_MIN, fn, data);
}

/**
 * sched_quit() - make sched_run() return after the current callback
 *
 * The daemon's signal handler does not call this: it writes a self-pipe,
 * whose callback does.
 */
void sched_quit(void)
{
	quit = true;
}

bool sched_quitting(void)
{
	return quit;
}

/* Run the timers due at @now that were armed before this turn. */
static void run_timers(int64_t now, uint64_t turn)
{
	struct sched_timer **pp = &timers;

	while (*pp && (*pp)->when_ns <= now && !quit) {
		struct sched_timer *t = *pp;

		if (t->gen >= turn) {	/* armed during this turn: next one */
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		t->next = NULL;
		t->armed = false;
		t->fn(t->data);
		pp = &timers;	/* the callback may have changed the list */
	}
}

/* poll()'s timeout for the earliest timer: 0 if due, -1 if none. */
static int poll_timeout(void)
{
	int64_t dt, ms;

	if (!timers || timers->when_ns == TIME_NEVER)
		return -1;
	dt = time_sub(timers->when_ns, sbrig_now_ns());
	if (dt <= 0)
		return 0;
	ms = dt / NS_PER_MS + (dt % NS_PER_MS != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
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
		uint64_t turn = ++gen;

		for (unsigned int i = 0; i < n; i++) {
			snap[i] = fds[i];
			pfds[i] = (struct pollfd){ fds[i].fd, fds[i].events, 0 };
		}
		if (poll(pfds, n, poll_timeout()) < 0) {
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
		run_timers(sbrig_now_ns(), turn);
	}
	return 0;
}
