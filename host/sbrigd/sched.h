/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sched.h - the daemon's single poll() loop: fd watches and one-shot
 * timers (the bottom module: it calls nobody).
 *
 * Modules register file descriptors with a callback each, and arm timers
 * embedded in their own structs. A timer armed for "now" (sched_defer())
 * runs on the next turn of the loop, after poll() has looked at every fd:
 * that is how long work yields, so that one client, one scenario or one
 * burst of link frames never starves the others.
 */
#ifndef SBRIGD_SCHED_H
#define SBRIGD_SCHED_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*sched_fd_fn)(int fd, short revents, void *data);
typedef void (*sched_timer_fn)(void *data);

/**
 * struct sched_timer - a one-shot timer, embedded in its owner
 * @when_ns: CLOCK_MONOTONIC deadline (TIME_NEVER: never fires)
 * @fn: called from the loop once @when_ns has passed
 * @data: passed to @fn
 * @armed: the timer is in the loop's list
 * @gen: loop turn it was armed in (a timer armed while the loop runs
 *	the timers of a turn waits for the next turn)
 * @next: list link (sorted by @when_ns)
 *
 * Zero-initialised storage is a valid, disarmed timer.
 */
struct sched_timer {
	int64_t when_ns;
	sched_timer_fn fn;
	void *data;
	bool armed;
	uint64_t gen;
	struct sched_timer *next;
};

int sched_init(void);
void sched_fini(void);

/*
 * Watch @fd for @events; @fn runs from the loop with the revents. Return
 * 0, or -EMFILE (with sbrig_errmsg()) when the loop's table is full.
 */
int sched_fd_add(int fd, short events, sched_fd_fn fn, void *data);
/* Change the events watched on @fd (0: keep it registered, silent). */
void sched_fd_events(int fd, short events);
/* Stop watching @fd; its pending revents of this turn are dropped. */
void sched_fd_del(int fd);

/* Arm (or re-arm) @t for @when_ns. */
void sched_timer_start(struct sched_timer *t, int64_t when_ns,
		       sched_timer_fn fn, void *data);
/* Arm @t for the next turn of the loop. */
void sched_defer(struct sched_timer *t, sched_timer_fn fn, void *data);
/* Disarm @t (no-op if it is not armed). */
void sched_timer_stop(struct sched_timer *t);

/* Make sched_run() return after the current callback. */
void sched_quit(void);
/* True once sched_quit() was called. */
bool sched_quitting(void);
/* Run the loop until sched_quit(); 0, or -errno if poll() failed. */
int sched_run(void);

#endif /* SBRIGD_SCHED_H */
