// SPDX-License-Identifier: GPL-2.0
/*
 * agentop.c - agent commands waited for, see agentop.h.
 *
 * The verbs the agent answers with a REPLY at the start and a DONE at the
 * end (link-protocol.md: hold, burn, state) are complete with their DONE;
 * for the others (stats, release, policy, input) the REPLY is the end. A
 * command to a sleeping target is resent by the link and delivered when
 * the target wakes; the timeout counts from the request.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agentop.h"
#include "rig.h"
#include "sched.h"
#include "util.h"

/* the operation: only the loop's thread touches it */
static struct {
	bool active;
	bool async;		/* complete with its DONE */
	struct op_handle handle;
	const struct agentop_client_ops *ops;
	void *ctx;
	uint32_t cmd_id;
	struct sched_timer timer;
} ag;

static bool verb_async(const char *verb)
{
	static const char *const async[] = { "hold", "burn", "state" };

	for (size_t i = 0; i < ARRAY_SIZE(async); i++)
		if (!strcmp(verb, async[i]))
			return true;
	return false;
}

static void finish(int err, const char *text)
{
	const struct agentop_client_ops *ops = ag.ops;
	void *ctx = ag.ctx;

	sched_timer_stop(&ag.timer);
	rig_link_forget(ag.cmd_id);
	ag.cmd_id = 0;
	ag.ops = NULL;
	ag.ctx = NULL;
	ag.active = false;
	op_release(&ag.handle);
	if (ops && ops->done)
		ops->done(ctx, err, text);
}

static void timeout(void *data)
{
	finish(-ETIMEDOUT, "the agent did not finish in time");
}

static void reply(const struct sbrig_link_msg *m, void *data)
{
	char text[300];

	if (!ag.active || m->type == SBRIG_LINK_STATS)
		return;
	if (m->err) {
		snprintf(text, sizeof(text), "agent: %s", m->text);
		finish(m->err, text);
	} else if (m->type == SBRIG_LINK_DONE || !ag.async) {
		finish(0, m->text);
	} else if (ag.ops && ag.ops->accepted) {
		ag.ops->accepted(ag.ctx, m->text);
	}
}

static void handle_stop(struct op_handle *h, enum op_stop why)
{
	static const char *const text[] = {
		[OP_STOP_OWN] = "aborted: stopped by the client",
		[OP_STOP_OTHER] = "aborted: stopped by a client",
		[OP_STOP_SHUTDOWN] = "aborted",
	};

	if (ag.active)
		finish(-ECANCELED, text[why]);
}

static void handle_detach(struct op_handle *h)
{
	/* nobody waits for the answer; the target does what it was told */
	ag.ops = NULL;
	ag.ctx = NULL;
	if (ag.active)
		finish(-ECANCELED, "aborted: client disconnected");
}

static const struct op_handle_ops agentop_handle_ops = {
	.kind = "agent",
	.stop = handle_stop,
	.detach = handle_detach,
};

/**
 * agentop_start() - send @cmd to the target agent and wait for its end
 * @cmd: command line as in link-protocol.md
 * @timeout_ns: give up after this long
 * @ops: the client's callbacks
 * @ctx: for @ops
 * @h: out: the operation's handle
 *
 * Return: 0 (the answer comes through @ops) or -errno.
 */
int agentop_start(const char *cmd, int64_t timeout_ns,
		  const struct agentop_client_ops *ops, void *ctx,
		  struct op_handle **h)
{
	char verb[16] = "", arg[300] = "";
	int ret;

	if (timeout_ns <= 0)
		return sbrig_set_error(-EINVAL, "TIMEOUT: must be positive");
	ret = op_claim(&ag.handle);
	if (ret < 0)
		return ret;
	ret = rig_link_command(cmd, reply, NULL, &ag.cmd_id);
	if (ret < 0) {
		op_release(&ag.handle);
		return ret;
	}
	sscanf(cmd, "%15s %299[^\n]", verb, arg);
	rig_stimulus(verb, arg, sbrig_now_ns());
	ag.active = true;
	ag.async = verb_async(verb);
	ag.ops = ops;
	ag.ctx = ctx;
	sched_timer_start(&ag.timer, time_after(timeout_ns), timeout, NULL);
	*h = &ag.handle;
	return 0;
}

int agentop_init(void)
{
	memset(&ag, 0, sizeof(ag));
	ag.handle.ops = &agentop_handle_ops;
	return 0;
}

void agentop_fini(void)
{
	if (ag.active)
		handle_stop(&ag.handle, OP_STOP_SHUTDOWN);
}
