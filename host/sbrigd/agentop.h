/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agentop.h - a command for the target agent (link-protocol.md), waited
 * for until it is complete: its REPLY; for the asynchronous verbs (hold,
 * burn, state on) its DONE; and for a state that puts the target to
 * sleep (mem, standby, freeze), the sleep itself as the rig sees it
 * (sleepwatch.h): a frozen agent cannot answer.
 */
#ifndef SBRIGD_AGENTOP_H
#define SBRIGD_AGENTOP_H

#include <stdbool.h>
#include <stdint.h>

#include <sbrig/records.h>

#include "op.h"
#include "sleepwatch.h"

/**
 * struct agentop_result - how a command ended
 * @err: 0, or -errno (-ETIMEDOUT, -ECANCELED, the agent's error)
 * @text: the agent's text (its DONE's, else its REPLY's), or why it failed
 * @slept: a sleep state was requested and the target went to sleep
 * @sleep: how that was seen (valid with @slept)
 * @accepted_text: the agent's REPLY when it took the request ("" if it
 *	never answered)
 * @elapsed_ns: from the request to its end
 */
struct agentop_result {
	int err;
	const char *text;
	bool slept;
	struct sleepwatch_result sleep;
	const char *accepted_text;
	int64_t elapsed_ns;
};

/**
 * struct agentop_client_ops - what the client is told (any may be NULL)
 * @accepted: a command that is not complete with its REPLY was accepted
 *	(the agent's reply text)
 * @row: a row of the agent's stats snapshot (the "stats" verb), in order;
 *	@index of @count
 * @done: exactly once, with the result
 */
struct agentop_client_ops {
	void (*accepted)(void *ctx, const char *text);
	void (*row)(void *ctx, const struct sbrig_blocker_stats *st,
		    uint32_t index, uint32_t count);
	void (*done)(void *ctx, const struct agentop_result *r);
};

int agentop_init(void);
void agentop_fini(void);

/*
 * Send @cmd ("hold \"x\" 2000") to the agent; give up after @timeout_ns
 * (counted from now, saturating). On success *@h is the operation's
 * handle. Return 0, or -errno with sbrig_errmsg().
 */
int agentop_start(const char *cmd, int64_t timeout_ns,
		  const struct agentop_client_ops *ops, void *ctx,
		  struct op_handle **h);

#endif /* SBRIGD_AGENTOP_H */
