/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rec.h - the recorder: the running capture (at most one at a time).
 *
 * While a capture runs, the recorder observes the rig (rig.h) and appends
 * everything it sees or does to the capture directory (libsbrig
 * capture.h). Whoever started the capture (a capture request, a scenario
 * run, a latency measurement) hears of its progress and its end through
 * the struct rec_client_ops it gave.
 */
#ifndef SBRIGD_REC_H
#define SBRIGD_REC_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <sbrig/scenario.h>

#include "op.h"

/* The shortest stats_every accepted: each one is an agent command. */
#define REC_MIN_STATS_EVERY_NS ((int64_t)100 * 1000000)

/**
 * struct rec_counts - what the running capture has recorded so far
 */
struct rec_counts {
	uint64_t samples;
	uint64_t gaps;
	uint64_t missing;
	uint64_t edges;
	uint64_t stimuli;
	uint64_t events;
	uint64_t stats_rows;
	uint64_t clock_rows;
	int64_t sum_current_uA;
};

/**
 * struct rec_result - a capture's summary, now or at its end
 * @dir: the capture directory
 * @n: counts
 * @elapsed_ns: since it started
 * @mean_mA: mean supply current over its samples (0 if none)
 * @status: meta.ini [end] status ("" while it runs): "complete",
 *	"aborted: why", "failed: why"
 */
struct rec_result {
	char dir[PATH_MAX];
	struct rec_counts n;
	int64_t elapsed_ns;
	double mean_mA;
	int64_t tail_lost_ns;	/* the sensor's samples up to the stop lost */
	char status[512];
};

/**
 * struct rec_opts - a capture request
 * @dir: directory to create (absolute)
 * @duration_ns: stop after this long (0: until stopped)
 * @stats_every_ns: ask the agent for a stats snapshot this often (0:
 *	never, else at least REC_MIN_STATS_EVERY_NS)
 * @scenario: the scenario run during the capture (provenance), or NULL
 */
struct rec_opts {
	const char *dir;
	int64_t duration_ns;
	int64_t stats_every_ns;
	const struct sbrig_scenario *scenario;
};

/**
 * struct rec_client_ops - what the capture's owner is told
 * @progress: once a second while it runs (may be NULL)
 * @recording: once, when the sensor's first samples are in (never on a
 *	rig without a sensor; may be NULL)
 * @end: exactly once, after the directory is closed, whatever ended it;
 *	@err is 0 or the -errno of a failure (@res->status says why)
 */
struct rec_client_ops {
	void (*progress)(void *ctx, const struct rec_result *now);
	void (*recording)(void *ctx);
	void (*end)(void *ctx, int err, const struct rec_result *res);
};

int rec_init(void);
void rec_fini(void);

/*
 * Create @o->dir and record into it. Return 0, or -errno with
 * sbrig_errmsg() (-EBUSY: a capture runs; -EINVAL: a bad option).
 */
int rec_start(const struct rec_opts *o, const struct rec_client_ops *ops,
	      void *ctx);
/*
 * End the running capture with @status; its end callback runs before this
 * returns. Return 0, -ENOENT if none runs, or the -errno closing hit.
 */
int rec_stop(const char *status);
/* Call the capture's client callbacks no more. */
void rec_detach(void);
bool rec_active(void);
/* The running capture's summary (status ""); false if none runs. */
bool rec_get_result(struct rec_result *r);
/*
 * The handle of a capture started by a capture request: stop ends it
 * ("complete" for its own client), detach ends an open-ended one
 * ("aborted: client disconnected") and lets one with a duration run on.
 */
struct op_handle *rec_handle(void);

#endif /* SBRIGD_REC_H */
