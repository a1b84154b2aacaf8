/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agentop.h - a command for the target agent (link-protocol.md), waited
 * for until it is complete: its REPLY, or for the asynchronous verbs
 * (hold, burn, state) its DONE.
 */
#ifndef SBRIGD_AGENTOP_H
#define SBRIGD_AGENTOP_H

#include <stdint.h>

#include "op.h"

/**
 * struct agentop_client_ops - what the client is told
 * @accepted: an asynchronous command was accepted (the agent's reply text)
 * @done: exactly once: @err 0 and the agent's text, or -errno and why
 */
struct agentop_client_ops {
	void (*accepted)(void *ctx, const char *text);
	void (*done)(void *ctx, int err, const char *text);
};

int agentop_init(void);
void agentop_fini(void);

/*
 * Send @cmd ("hold \"x\" 2000") to the agent; give up after @timeout_ns.
 * On success *@h is the operation's handle. Return 0, or -errno with
 * sbrig_errmsg().
 */
int agentop_start(const char *cmd, int64_t timeout_ns,
		  const struct agentop_client_ops *ops, void *ctx,
		  struct op_handle **h);

#endif /* SBRIGD_AGENTOP_H */
