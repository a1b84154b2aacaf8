/* SPDX-License-Identifier: GPL-2.0 */
/*
 * run.h - the scenario runner: a parsed scenario (sbrig/scenario.h)
 * executed step by step on the poll() loop, with a capture around it.
 */
#ifndef SBRIGD_RUN_H
#define SBRIGD_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include <sbrig/scenario.h>

#include "op.h"
#include "rec.h"

/* How long the agent may take to answer a hold/burn step. */
#define RUN_REPLY_TIMEOUT_NS ((int64_t)10 * 1000000000)

/**
 * struct run_client_ops - what the run's client is told
 * @started: the capture is open and the first step comes next
 * @step: step @index of @sc starts (steps that take no time come in
 *	bursts: a client that renders them should coalesce)
 * @capture: the capture's progress, once a second
 * @done: exactly once: the capture is closed. @err is 0 (complete), the
 *	-errno of a failed step (@res->status: "failed: FILE:LINE: why"), or
 *	-ECANCELED (stopped; @res->status says by whom); @res is the capture
 */
struct run_client_ops {
	void (*started)(void *ctx, const char *dir,
			const struct sbrig_scenario *sc);
	void (*step)(void *ctx, size_t index, const struct sbrig_scenario *sc);
	void (*capture)(void *ctx, const struct rec_result *now);
	void (*done)(void *ctx, int err, const struct rec_result *res);
};

int run_init(void);
void run_fini(void);

/*
 * Run @sc (the runner owns it from now on, even on error) with a capture
 * @o (its scenario member is set here). On success *@h is the run's handle
 * and the answer comes through @ops. Return 0, or -errno with
 * sbrig_errmsg() (-EBUSY: an operation or a capture runs).
 */
int run_start(struct sbrig_scenario *sc, const struct rec_opts *o,
	      const struct run_client_ops *ops, void *ctx,
	      struct op_handle **h);

#endif /* SBRIGD_RUN_H */
