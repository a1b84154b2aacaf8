// SPDX-License-Identifier: GPL-2.0
/*
 * error.c - the thread-local error message, logging and the host clock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define ERRMSG_LEN 512

static _Thread_local char errmsg[ERRMSG_LEN];

const char *sbrig_errmsg(void)
{
	return errmsg;
}

int sbrig_set_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return err > 0 ? -err : err;
}

void sbrig_prefix_error(const char *fmt, ...)
{
	char old[ERRMSG_LEN];
	int n;
	va_list ap;

	memcpy(old, errmsg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(errmsg))
		snprintf(errmsg + n, sizeof(errmsg) - n, ": %s", old);
}

static void log_stderr(enum sbrig_log_level level, const char *msg,
		       void *data)
{
	static const char *const names[] = {
		[SBRIG_LOG_ERR] = "error",
		[SBRIG_LOG_WARN] = "warning",
		[SBRIG_LOG_INFO] = "info",
		[SBRIG_LOG_DEBUG] = "debug",
	};

	(void)data;
	fprintf(stderr, "sbrig: %s: %s\n", names[level], msg);
}

/* The sink is set once at start-up; the mutex only serialises output. */
static sbrig_log_fn log_fn = log_stderr;
static void *log_data;
static enum sbrig_log_level log_max = SBRIG_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void sbrig_log_set_sink(sbrig_log_fn fn, void *data,
			enum sbrig_log_level max_level)
{
	log_fn = fn ? fn : log_stderr;
	log_data = data;
	log_max = max_level;
}

void sbrig_log(enum sbrig_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	log_fn(level, msg, log_data);
	pthread_mutex_unlock(&log_lock);
}

int64_t sbrig_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
