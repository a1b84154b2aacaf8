/* SPDX-License-Identifier: GPL-2.0 */
/*
 * latency.h - wakeup-latency measurement: N rounds of "wait until the
 * target is asleep, press a key, time the first resume", recorded in a
 * capture like every other operation. The daemon times each round (on
 * the link's online clock model) to steer the rounds and to show them as
 * they come; the statistics are computed from the capture.
 */
#ifndef SBRIGD_LATENCY_H
#define SBRIGD_LATENCY_H

#include <stdint.h>

#include <sbrig/records.h>

#include "op.h"
#include "rec.h"

/* An UNTIL event with a clock uncertainty above this is not measured. */
#define LAT_MAX_UNCERT_NS ((int64_t)250 * 1000000)
/* Rounds in a row not measured before the measurement gives up. */
#define LAT_MAX_RETRIES 20
#define LAT_MAX_N 100000

/**
 * struct lat_opts - a latency request
 * @dir: capture directory (absolute)
 * @stats_every_ns: stats snapshots into the capture (0: none)
 * @n: rounds to measure (1..LAT_MAX_N)
 * @key: the key to press
 * @press_ns: press duration (0: the rig's press_ms)
 * @until: the event type that ends a round ("resume")
 * @timeout_ns: longest wait for sleep, and for @until after a press
 */
struct lat_opts {
	const char *dir;
	int64_t stats_every_ns;
	unsigned int n;
	char key[SBRIG_ID_MAX];
	int64_t press_ns;
	char until[12];
	int64_t timeout_ns;
};

/** enum lat_round_kind - what a round report says */
enum lat_round_kind {
	LAT_MEASURED,	/* @latency_ns, @uncert_ns */
	LAT_RETRY,	/* not measured: @why, @event */
	LAT_NUDGE,	/* the key was pressed again (@nudge-th time) */
};

/**
 * struct lat_round - one round's report
 * @kind: see enum lat_round_kind
 * @i: round (1-based)
 * @n: rounds asked for
 * @latency_ns: press to UNTIL, on host time (LAT_MEASURED)
 * @uncert_ns: the clock model's uncertainty of it (LAT_MEASURED)
 * @why: "woke_before_press" or "no_clock" (LAT_RETRY)
 * @event: the event type that made the round not count (LAT_RETRY)
 * @nudge: presses so far this round minus one (LAT_NUDGE)
 */
struct lat_round {
	enum lat_round_kind kind;
	unsigned int i, n;
	int64_t latency_ns;
	int64_t uncert_ns;
	const char *why;
	const char *event;
	unsigned int nudge;
};

/**
 * struct lat_client_ops - what the latency client is told
 * @started: the capture is open, the first round starts
 * @round: a round's report
 * @done: exactly once, after the capture is closed: @err 0, or -errno
 *	(@res->status says why); @measured rounds were measured (all of
 *	them, or fewer if it was stopped or failed); @res is the capture.
 *	The statistics are not the daemon's: they are computed from the
 *	capture (libsbrig-analysis), where the whole clock is known
 */
struct lat_client_ops {
	void (*started)(void *ctx, const struct lat_opts *o);
	void (*round)(void *ctx, const struct lat_round *r);
	void (*done)(void *ctx, int err, unsigned int measured,
		     const struct rec_result *res);
};

int lat_init(void);
void lat_fini(void);

/*
 * Start measuring (@o is copied). On success *@h is the measurement's
 * handle. Return 0, or -errno with sbrig_errmsg().
 */
int lat_start(const struct lat_opts *o, const struct lat_client_ops *ops,
	      void *ctx, struct op_handle **h);

#endif /* SBRIGD_LATENCY_H */
