/* SPDX-License-Identifier: GPL-2.0 */
/*
 * worker.h - a thread for what waits on hardware or a disk.
 *
 * The poll loop must never wait on a device: opening a sensor (DNS and a
 * TCP connect for ip:, seconds against a dead host), reading it, setting
 * up and tearing down its IIO buffer (the kernel's kthread_stop() waits
 * for as long as the chip's conversion-ready flag stays low), closing a
 * capture on a slow disk. Such work is a struct work handed to a worker:
 * its run() runs on the worker's thread, one work at a time in the order
 * submitted, then its done() on the loop's thread (from the scheduler, as
 * any fd handler). A worker whose run() never returns delays only the
 * works queued behind it: the loop keeps serving, and worker_busy() says
 * what the thread is stuck in and since when.
 */
#ifndef SBRIGD_WORKER_H
#define SBRIGD_WORKER_H

#include <stdbool.h>
#include <stdint.h>

struct work;

/**
 * struct work - one piece of work
 * @what: what it does, for worker_busy() ("open the sensor", ...)
 * @run: called on the worker's thread
 * @done: called on the loop's thread after @run (may free the work)
 * @next: the queue's (the worker's own)
 */
struct work {
	const char *what;
	void (*run)(struct work *w);
	void (*done)(struct work *w);
	struct work *next;
};

struct worker;

/* A new worker thread named @name; NULL with the error set. */
struct worker *worker_new(const char *name);

/* Queue @w; its done() runs on the loop once its run() has returned. */
void worker_submit(struct worker *wk, struct work *w);

/* The work the thread is running (NULL: idle) and since when. */
const char *worker_busy(struct worker *wk, int64_t *since_ns);

/*
 * The loop has ended: wait up to @timeout_ns for the works queued to run
 * and call their done() here. Return: true if all ran, false if one is
 * still running (a stuck device): its done() never runs.
 */
bool worker_drain(struct worker *wk, int64_t timeout_ns);

/* End the thread (after worker_drain(); a stuck thread is left behind). */
void worker_free(struct worker *wk);

#endif /* SBRIGD_WORKER_H */
