/* SPDX-License-Identifier: GPL-2.0 */
/*
 * util.h - what every sbrigd module uses: logging, time units and
 * saturating time arithmetic. Header only, includes only libsbrig's public
 * sbrig.h: it sits below every other module of the daemon.
 */
#ifndef SBRIGD_UTIL_H
#define SBRIGD_UTIL_H

#include <stdint.h>

#include <sbrig/sbrig.h>

#define NS_PER_US ((int64_t)1000)
#define NS_PER_MS ((int64_t)1000000)
#define NS_PER_S ((int64_t)1000000000)

/* A deadline that never comes: timers armed for it never fire. */
#define TIME_NEVER INT64_MAX

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define log_err(...) sbrig_log(SBRIG_LOG_ERR, __VA_ARGS__)
#define log_warn(...) sbrig_log(SBRIG_LOG_WARN, __VA_ARGS__)
#define log_info(...) sbrig_log(SBRIG_LOG_INFO, __VA_ARGS__)
#define log_dbg(...) sbrig_log(SBRIG_LOG_DEBUG, __VA_ARGS__)

/**
 * time_add() - @t_ns + @d_ns, saturated to [INT64_MIN, TIME_NEVER]
 * @t_ns: a time (CLOCK_MONOTONIC ns)
 * @d_ns: a duration, any sign
 *
 * Every deadline in the daemon is computed with this, so a duration of
 * 9223372036854775807 ns means "never", not a time in the past.
 */
static inline int64_t time_add(int64_t t_ns, int64_t d_ns)
{
	int64_t r;

	if (__builtin_add_overflow(t_ns, d_ns, &r))
		return d_ns > 0 ? TIME_NEVER : INT64_MIN;
	return r;
}

/** time_after() - the saturated deadline @d_ns from now */
static inline int64_t time_after(int64_t d_ns)
{
	return time_add(sbrig_now_ns(), d_ns);
}

/** time_sub() - @a_ns - @b_ns, saturated */
static inline int64_t time_sub(int64_t a_ns, int64_t b_ns)
{
	int64_t r;

	if (__builtin_sub_overflow(a_ns, b_ns, &r))
		return b_ns < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

#endif /* SBRIGD_UTIL_H */
