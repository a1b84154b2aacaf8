// SPDX-License-Identifier: GPL-2.0
/*
 * agentop.c - agent commands waited for, see agentop.h.
 *
 * What completes a command depends on its verb (verb_ends[] below,
 * link-protocol.md): the REPLY for most; the DONE for the asynchronous
 * ones (hold, burn, and state on: the agent writes the state from a child
 * process); and for a state that puts the target to sleep, the sleep: once
 * the agent has taken the request (its REPLY), the request succeeds when
 * the rig sees the target asleep or back from a sleep (sleepwatch.h). Its
 * DONE may come after the wake (forced policy: the write returns on
 * resume) or before the sleep (opportunistic: it returns at once), so it
 * ends the request only when it is an error (an aborted suspend, a state
 * the kernel cannot enter).
 *
 * A command to a sleeping target is resent by the link and delivered when
 * the target wakes; the timeout counts from the request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sbrig/proto.h>
#include <sbrig/scenario.h>

#include "agentop.h"
#include "rig.h"
#include "sched.h"
#include "util.h"

/** enum ag_end - what completes a command */
enum ag_end {
	AG_REPLY,	/* its REPLY */
	AG_DONE,	/* its DONE (the REPLY says it was accepted) */
	AG_ASLEEP,	/* the target asleep after the REPLY, or an error */
};

/* Verbs not listed here are complete with their REPLY. */
static const struct {
	const char *verb;
	enum ag_end end;
} verb_ends[] = {
	{ "hold", AG_DONE },
	{ "burn", AG_DONE },
	{ "state", AG_DONE },	/* AG_ASLEEP for a sleep state: verb_end() */
};

/* the operation: only the loop's thread touches it */
static struct {
	bool active;
	enum ag_end end;
	bool accepted;		/* the agent took it (its REPLY came) */
	struct op_handle handle;
	const struct agentop_client_ops *ops;
	void *ctx;
	uint32_t cmd_id;
	int64_t start_ns;
	int64_t timeout_ns;
	char accepted_text[256];
	char done_text[256];
	struct sched_timer timer;
	struct sleepwatch sw;
} ag;

static enum ag_end verb_end(const char *verb, const char *args)
{
	char word[32];

	if (!strcmp(verb, "state") &&
	    sbrig_proto_token(&args, word, sizeof(word)) == 1 &&
	    sbrig_proto_state_sleeps(word))
		return AG_ASLEEP;
	for (size_t i = 0; i < ARRAY_SIZE(verb_ends); i++)
		if (!strcmp(verb, verb_ends[i].verb))
			return verb_ends[i].end;
	return AG_REPLY;
}

static void finish_result(struct agentop_result *r)
{
	const struct agentop_client_ops *ops = ag.ops;
	void *ctx = ag.ctx;

	sched_timer_stop(&ag.timer);
	sleepwatch_stop(&ag.sw);
	rig_link_forget(ag.cmd_id);
	ag.cmd_id = 0;
	ag.ops = NULL;
	ag.ctx = NULL;
	ag.active = false;
	op_release(&ag.handle);
	r->accepted_text = ag.accepted_text;
	r->elapsed_ns = time_sub(sbrig_now_ns(), ag.start_ns);
	if (ops && ops->done)
		ops->done(ctx, r);
}

static void finish(int err, const char *text)
{
	struct agentop_result r = { .err = err, .text = text };

	finish_result(&r);
}

static void timeout(void *data)
{
	char d[32], text[300], why[200];
	int64_t next;

	sbrig_format_duration(ag.timeout_ns, d, sizeof(d));
	if (ag.end == AG_ASLEEP && ag.accepted)
		snprintf(text, sizeof(text), "the target did not fall asleep "
			 "within %s: %s (is a blocker active?)", d,
			 rig_awake_why(why, sizeof(why)));
	else if (rig_asleep_poll(sbrig_now_ns(), &next, NULL) == 1)
		snprintf(text, sizeof(text), "the agent did not finish in %s: "
			 "the target is asleep (the command reaches it when it "
			 "wakes)", d);
	else
		snprintf(text, sizeof(text), "the agent did not finish in %s",
			 d);
	finish(-ETIMEDOUT, text);
}

static void slept(void *ctx, int err, const struct sleepwatch_result *sr)
{
	struct agentop_result r = { .err = err };

	if (err) {
		finish(err, sbrig_errmsg());
		return;
	}
	r.slept = true;
	r.sleep = *sr;
	r.text = ag.done_text[0] ? ag.done_text : ag.accepted_text;
	finish_result(&r);
}

/* The agent took the command (or finished it first): now the sleep. */
static void accept(const char *text)
{
	int ret;

	if (ag.accepted)
		return;
	ag.accepted = true;
	snprintf(ag.accepted_text, sizeof(ag.accepted_text), "%s", text);
	if (ag.ops && ag.ops->accepted)
		ag.ops->accepted(ag.ctx, text);
	if (ag.end != AG_ASLEEP || !ag.active)
		return;
	ret = sleepwatch_start(&ag.sw, slept, NULL);
	if (ret < 0)
		finish(ret, sbrig_errmsg());
}

static void reply(const struct sbrig_link_msg *m, void *data)
{
	char text[300];

	if (!ag.active)
		return;
	if (m->type == SBRIG_LINK_STATS) {
		if (ag.ops && ag.ops->row)
			ag.ops->row(ag.ctx, &m->stats, m->index, m->count);
		return;
	}
	if (m->err) {
		snprintf(text, sizeof(text), "agent: %s", m->text);
		finish(m->err, text);
		return;
	}
	switch (ag.end) {
	case AG_REPLY:
		finish(0, m->text);
		break;
	case AG_DONE:
		if (m->type == SBRIG_LINK_DONE)
			finish(0, m->text);
		else
			accept(m->text);
		break;
	case AG_ASLEEP:
		if (m->type == SBRIG_LINK_DONE)
			snprintf(ag.done_text, sizeof(ag.done_text), "%s",
				 m->text);
		accept(m->text);
		break;
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
	ag.end = verb_end(verb, arg);
	ag.accepted = false;
	ag.accepted_text[0] = '\0';
	ag.done_text[0] = '\0';
	ag.ops = ops;
	ag.ctx = ctx;
	ag.start_ns = sbrig_now_ns();
	ag.timeout_ns = timeout_ns;
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
