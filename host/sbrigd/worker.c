// SPDX-License-Identifier: GPL-2.0
/*
 * worker.c - a thread for what waits on hardware or a disk, see worker.h.
 *
 * The queue of works to run and the list of works that ran are both
 * under @lock; the thread writes an eventfd when it moves a work to the
 * ran list, and the loop's fd handler takes the list and calls done() in
 * order.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "sched.h"
#include "util.h"
#include "worker.h"

struct worker {
	char name[32];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int efd;
	bool quit;
	bool ended;			/* the thread has returned */
	struct work *todo, **todo_tail;	/* to run, in order */
	struct work *ran, **ran_tail;	/* done() due, in order */
	struct work *running;		/* in run() */
	int64_t running_since_ns;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	sigset_t all;
	uint64_t one = 1;

	/* signals are the loop's (signalfd); SIGPIPE from libiio is EPIPE */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&wk->lock);
	for (;;) {
		struct work *w = wk->todo;

		if (!w) {
			if (wk->quit)
				break;
			pthread_cond_wait(&wk->cond, &wk->lock);
			continue;
		}
		wk->todo = w->next;
		if (!wk->todo)
			wk->todo_tail = &wk->todo;
		wk->running = w;
		wk->running_since_ns = sbrig_now_ns();
		pthread_mutex_unlock(&wk->lock);

		w->run(w);

		pthread_mutex_lock(&wk->lock);
		wk->running = NULL;
		w->next = NULL;
		*wk->ran_tail = w;
		wk->ran_tail = &w->next;
		pthread_cond_broadcast(&wk->cond);
		if (write(wk->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("worker %s: eventfd: %s", wk->name,
				 strerror(errno));
	}
	wk->ended = true;
	pthread_cond_broadcast(&wk->cond);
	pthread_mutex_unlock(&wk->lock);
	return NULL;
}

/* Call done() of the works that ran, in order. */
static void run_done(struct worker *wk)
{
	struct work *list;

	pthread_mutex_lock(&wk->lock);
	list = wk->ran;
	wk->ran = NULL;
	wk->ran_tail = &wk->ran;
	pthread_mutex_unlock(&wk->lock);
	while (list) {
		struct work *w = list;

		list = w->next;
		w->next = NULL;
		if (w->done)
			w->done(w);	/* may free w */
	}
}

static void worker_io(int fd, short revents, void *data)
{
	uint64_t cnt;

	if (read(fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		log_warn("worker: eventfd: %s", strerror(errno));
	run_done(data);
}

struct worker *worker_new(const char *name)
{
	struct worker *wk = calloc(1, sizeof(*wk));
	int ret;

	if (!wk) {
		sbrig_set_error(-ENOMEM, "worker %s: out of memory", name);
		return NULL;
	}
	snprintf(wk->name, sizeof(wk->name), "%s", name);
	wk->todo_tail = &wk->todo;
	wk->ran_tail = &wk->ran;
	wk->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wk->efd < 0) {
		sbrig_set_error(-errno, "worker %s: eventfd: %s", name,
				strerror(errno));
		free(wk);
		return NULL;
	}
	pthread_mutex_init(&wk->lock, NULL);
	pthread_cond_init(&wk->cond, NULL);
	ret = pthread_create(&wk->thread, NULL, worker_main, wk);
	if (ret) {
		sbrig_set_error(-ret, "worker %s: pthread_create: %s", name,
				strerror(ret));
		goto err_destroy;
	}
	pthread_setname_np(wk->thread, wk->name);
	if (sched_fd_add(wk->efd, POLLIN, worker_io, wk) < 0) {
		pthread_mutex_lock(&wk->lock);
		wk->quit = true;
		pthread_cond_signal(&wk->cond);
		pthread_mutex_unlock(&wk->lock);
		pthread_join(wk->thread, NULL);
		sbrig_set_error(-EMFILE, "worker %s: too many fds", name);
		goto err_destroy;
	}
	return wk;
err_destroy:
	pthread_cond_destroy(&wk->cond);
	pthread_mutex_destroy(&wk->lock);
	close(wk->efd);
	free(wk);
	return NULL;
}

void worker_submit(struct worker *wk, struct work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&wk->lock);
	*wk->todo_tail = w;
	wk->todo_tail = &w->next;
	pthread_cond_signal(&wk->cond);
	pthread_mutex_unlock(&wk->lock);
}

const char *worker_busy(struct worker *wk, int64_t *since_ns)
{
	const char *what = NULL;

	pthread_mutex_lock(&wk->lock);
	if (wk->running) {
		what = wk->running->what;
		*since_ns = wk->running_since_ns;
	}
	pthread_mutex_unlock(&wk->lock);
	return what;
}

bool worker_drain(struct worker *wk, int64_t timeout_ns)
{
	struct timespec until;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (until.tv_nsec + timeout_ns) / 1000000000;
	until.tv_nsec = (until.tv_nsec + timeout_ns) % 1000000000;
	for (;;) {
		pthread_mutex_lock(&wk->lock);
		while ((wk->todo || wk->running) && !wk->ran &&
		       pthread_cond_timedwait(&wk->cond, &wk->lock,
					      &until) == 0)
			;
		idle = !wk->todo && !wk->running;
		pthread_mutex_unlock(&wk->lock);
		run_done(wk);		/* may queue more */
		pthread_mutex_lock(&wk->lock);
		idle = idle && !wk->todo && !wk->running && !wk->ran;
		pthread_mutex_unlock(&wk->lock);
		if (idle)
			return true;
		{
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			if (now.tv_sec > until.tv_sec ||
			    (now.tv_sec == until.tv_sec &&
			     now.tv_nsec >= until.tv_nsec))
				return false;
		}
	}
}

void worker_free(struct worker *wk)
{
	bool stuck;

	if (!wk)
		return;
	sched_fd_del(wk->efd);
	pthread_mutex_lock(&wk->lock);
	wk->quit = true;
	pthread_cond_signal(&wk->cond);
	stuck = wk->running != NULL;
	pthread_mutex_unlock(&wk->lock);
	if (stuck) {
		/* in a device that never answers: leave it (and wk) behind */
		log_warn("worker %s: still waiting in: %s", wk->name,
			 wk->running->what);
		pthread_detach(wk->thread);
		return;
	}
	pthread_join(wk->thread, NULL);
	pthread_cond_destroy(&wk->cond);
	pthread_mutex_destroy(&wk->lock);
	close(wk->efd);
	free(wk);
}
