// SPDX-License-Identifier: GPL-2.0
/*
 * run.c - the scenario runner, see run.h.
 *
 * The runner executes the flat program of a parsed scenario step by step
 * on the poll() loop: a step starts an action (a press with its release
 * timer, a settle timer, an agent command) and the loop calls back into
 * the runner when it completes. Steps that take no time (repeat/end,
 * plug/unplug, a wait already satisfied) run in batches of at most
 * RUN_BATCH per loop turn, so a scenario of a million empty repeats still
 * lets every client, "stop" and SIGTERM through.
 *
 * Waits are expect-like: target events and marker edges that arrive during
 * a run form a stream (evq.h), and "wait event TYPE [ARG]" consumes the
 * stream up to and including the first match. So in "press power / wait
 * event resume", a resume that arrives while the key is still held is not
 * missed, and an event older than the run never matches. A wait that
 * times out ends the run: the capture is closed with status "failed:
 * FILE:LINE: wait ... timed out after D".
 *
 * "Asleep" is what the rig's witnesses say (rig_asleep_poll(): the
 * machine's run state, the supply, the marker, else the link's silence):
 * a real target freezes its user space (the agent) before it suspends, so
 * its events of a suspend cycle reach the host only after it wakes. "wait asleep" polls
 * that with the runner's timer and, once it holds, consumes the event
 * stream up to that moment. "state mem" (any sleep state) ends the same
 * way once the agent has taken the request, or when the target was
 * already back from the sleep (sleepwatch.h); "state on" ends with the
 * agent's DONE (the write's result), "policy" with its REPLY.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/proto.h>

#include "evq.h"
#include "rig.h"
#include "run.h"
#include "sched.h"
#include "sleepwatch.h"
#include "util.h"

#define RUN_BATCH 64

/* What the current step waits for. */
enum run_wait {
	W_NONE,
	W_TIMER,	/* settle */
	W_PRESS,	/* release of our press */
	W_REPLY,	/* agent REPLY to cmd_id */
	W_DONE,		/* agent DONE to cmd_id (state on) */
	W_SLEEP,	/* agent REPLY to cmd_id, then the target asleep */
	W_EVENT,	/* a matching event in the stream */
	W_EDGE,		/* a matching edge in the stream */
	W_ASLEEP,	/* the link quiet for quiet_ms */
};

/* the runner: only the loop's thread touches it */
static struct {
	bool active;		/* a run holds the operation slot */
	bool finishing;		/* its capture is being closed */
	struct op_handle handle;
	const struct run_client_ops *ops;
	void *ctx;
	struct sbrig_scenario *sc;
	size_t pc;
	uint32_t *remaining;	/* per REPEAT step */
	enum run_wait wait;
	struct sched_timer timer;	/* settle / timeouts */
	struct sched_timer next;	/* the next batch of steps */
	uint32_t cmd_id;		/* agent command in flight, or 0 */
	int64_t asleep_deadline_ns;
	struct sleepwatch sw;		/* W_SLEEP, once the agent took it */
	struct evq q;
	struct rig_observer obs;
	int fail_err;
} run;

static int64_t step_timeout(const struct sbrig_step *s)
{
	return s->timeout_ns ? s->timeout_ns : SBRIG_STEP_DEFAULT_TIMEOUT_NS;
}

static void reset(void)
{
	sched_timer_stop(&run.timer);
	sched_timer_stop(&run.next);
	sleepwatch_stop(&run.sw);
	if (run.cmd_id)
		rig_link_forget(run.cmd_id);
	run.cmd_id = 0;
	rig_forget(&run);
	rig_unobserve(&run.obs);
	sbrig_scenario_free(run.sc);
	run.sc = NULL;
	free(run.remaining);
	run.remaining = NULL;
	run.ops = NULL;
	run.ctx = NULL;
	run.wait = W_NONE;
	evq_clear(&run.q);
	run.finishing = false;
	run.fail_err = 0;
	op_release(&run.handle);
	run.active = false;
}

/* ---- the end ------------------------------------------------------------ */

static void capture_progress(void *ctx, const struct rec_result *now)
{
	if (run.ops && run.ops->capture)
		run.ops->capture(run.ctx, now);
}

/* The capture is closed: the run is over, whatever ended it. */
static void capture_end(void *ctx, int err, const struct rec_result *res)
{
	const struct run_client_ops *ops = run.ops;
	void *octx = run.ctx;

	if (!run.active)
		return;
	if (run.fail_err)
		err = run.fail_err;
	else if (!run.finishing && !err)
		err = -ECANCELED;	/* the capture ended under the run */
	reset();
	if (ops && ops->done)
		ops->done(octx, err, res);
}

static const struct rec_client_ops run_rec_ops = {
	.progress = capture_progress,
	.end = capture_end,
};

/* End the run: close the capture with @status; the answer follows. */
static void finish(int err, const char *status)
{
	if (run.finishing)
		return;
	run.finishing = true;
	run.fail_err = err;
	sched_timer_stop(&run.timer);
	sched_timer_stop(&run.next);
	sleepwatch_stop(&run.sw);
	run.wait = W_NONE;
	rig_release(&run);	/* a key the run holds goes up now */
	rec_stop(status);	/* capture_end() follows, once the sensor stopped */
}

static void fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(int err, const char *fmt, ...)
{
	const struct sbrig_step *s = &run.sc->steps[run.pc];
	char msg[400], status[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(status, sizeof(status), "failed: %s:%u: %s", run.sc->path,
		 s->line, msg);
	log_warn("run: %s", status);
	finish(err, status);
}

/* ---- steps -------------------------------------------------------------- */

static void run_steps(void *data);

/* The current step is over: the next one starts on the next loop turn. */
static void step_done(void)
{
	run.wait = W_NONE;
	sched_timer_stop(&run.timer);
	sleepwatch_stop(&run.sw);
	if (run.cmd_id)
		rig_link_forget(run.cmd_id);
	run.cmd_id = 0;
	run.pc++;
	sched_defer(&run.next, run_steps, NULL);
}

static void on_timer(void *data)
{
	const struct sbrig_step *s = &run.sc->steps[run.pc];
	char step[600], t[32];
	int64_t next;
	int ret;

	sbrig_format_duration(step_timeout(s), t, sizeof(t));
	switch (run.wait) {
	case W_TIMER:
		step_done();
		return;
	case W_ASLEEP:
		ret = rig_asleep_poll(run.asleep_deadline_ns, &next, NULL);
		if (ret == 1) {
			evq_clear(&run.q);	/* what it said before it slept */
			step_done();
		} else if (ret == 0) {
			sched_timer_start(&run.timer, next, on_timer, NULL);
		} else {
			char why[200];

			fail(-ETIMEDOUT, "wait asleep timed out after %s (the "
			     "target's %s)", t, rig_awake_why(why, sizeof(why)));
		}
		return;
	case W_EVENT:
	case W_EDGE:
		/* "wait event X ... timed out after 2s" */
		sbrig_step_describe(s, false, step, sizeof(step));
		fail(-ETIMEDOUT, "%s timed out after %s", step, t);
		return;
	case W_REPLY:
		if (rig_asleep_poll(sbrig_now_ns(), &next, NULL) == 1)
			fail(-ETIMEDOUT, "the agent did not answer in %" PRId64
			     " s: the target is asleep (the command reaches it "
			     "when it wakes)", RUN_REPLY_TIMEOUT_NS / NS_PER_S);
		else
			fail(-ETIMEDOUT, "the agent did not answer in %" PRId64
			     " s", RUN_REPLY_TIMEOUT_NS / NS_PER_S);
		return;
	case W_SLEEP:
	case W_DONE:
		sbrig_step_describe(s, false, step, sizeof(step));
		if (run.sw.active) {
			char why[200];

			fail(-ETIMEDOUT, "%s: the target did not fall asleep "
			     "within %s (%s: is a blocker active?)", step, t,
			     rig_awake_why(why, sizeof(why)));
		}
		else if (rig_asleep_poll(sbrig_now_ns(), &next, NULL) == 1)
			fail(-ETIMEDOUT, "%s: the agent did not answer in %s: "
			     "the target is asleep (the command reaches it when "
			     "it wakes)", step, t);
		else
			fail(-ETIMEDOUT, "%s: the agent did not %s in %s", step,
			     run.wait == W_DONE ? "finish" : "answer", t);
		return;
	default:
		return;
	}
}

static bool matches(const struct sbrig_step *s, const struct evq_item *it)
{
	if (s->op == SBRIG_STEP_WAIT_EVENT)
		return !it->is_edge && strcmp(it->ev.type, s->name) == 0 &&
			(!s->arg[0] || strcmp(it->ev.arg, s->arg) == 0);
	return it->is_edge && strcmp(it->edge.line, s->name) == 0 &&
		it->edge.rising == s->rising;
}

/* Consume the stream up to the first item that satisfies the wait. */
static bool consume(void)
{
	const struct sbrig_step *s = &run.sc->steps[run.pc];
	const struct evq_item *it;

	while ((it = evq_pop(&run.q)))
		if (matches(s, it))
			return true;
	return false;
}

static void press_done(int err, int64_t press_ns, void *data)
{
	if (!run.active || run.finishing || run.wait != W_PRESS)
		return;
	if (err)
		fail(err, "release: %s", sbrig_errmsg());
	else
		step_done();
}

static void slept(void *ctx, int err, const struct sleepwatch_result *r)
{
	if (!run.active || run.finishing || run.wait != W_SLEEP)
		return;
	if (err) {
		fail(err, "%s", sbrig_errmsg());
		return;
	}
	if (r->how != SLEEPWATCH_RESUMED)
		evq_clear(&run.q);	/* what it said before it slept */
	step_done();
}

/*
 * The agent's answers to the step's command: the REPLY ends hold, burn
 * and policy (their DONE is not waited for); state on ends with its DONE;
 * a sleep state starts watching for the sleep once the REPLY came, and
 * only an error DONE ends it (see the top of this file).
 */
static void agent_reply(const struct sbrig_link_msg *m, void *data)
{
	int ret;

	if (m->type == SBRIG_LINK_STATS || m->cmd_id != run.cmd_id)
		return;
	if (!run.active || run.finishing ||
	    (run.wait != W_REPLY && run.wait != W_DONE &&
	     run.wait != W_SLEEP)) {
		rig_link_forget(run.cmd_id);
		run.cmd_id = 0;
		return;
	}
	if (m->err) {
		fail(m->err, "agent: %s", m->text);
		return;
	}
	if (run.wait == W_REPLY ||
	    (run.wait == W_DONE && m->type == SBRIG_LINK_DONE)) {
		step_done();
	} else if (run.wait == W_SLEEP && !run.sw.active) {
		ret = sleepwatch_start(&run.sw, slept, NULL);
		if (ret < 0)
			fail(ret, "%s", sbrig_errmsg());
	}
}

static void agent_step(const char *cmd, enum run_wait wait, int64_t timeout_ns)
{
	int ret = rig_link_command(cmd, agent_reply, NULL, &run.cmd_id);

	if (ret < 0) {
		fail(ret, "%s", sbrig_errmsg());
		return;
	}
	run.wait = wait;
	sched_timer_start(&run.timer, time_after(timeout_ns), on_timer, NULL);
}

/*
 * Start the current step. Return true if it is over already (the next
 * one may start at once), false if it waits (or the run ended).
 */
static bool start_step(void)
{
	const struct sbrig_step *s = &run.sc->steps[run.pc];
	char arg[64], cmd[400];
	int64_t next;
	int ret;

	if (run.ops && run.ops->step)
		run.ops->step(run.ctx, run.pc, run.sc);
	switch (s->op) {
	case SBRIG_STEP_SETTLE:
		run.wait = W_TIMER;
		sched_timer_start(&run.timer, time_after(s->rig_default ?
			(int64_t)rig_config()->settle_ms * NS_PER_MS :
			s->duration_ns), on_timer, NULL);
		return false;
	case SBRIG_STEP_PRESS:
		run.wait = W_PRESS;
		ret = rig_press(s->name, s->duration_ns, NULL, press_done, &run);
		if (ret < 0)
			fail(ret, "press %s: %s", s->name, sbrig_errmsg());
		return false;
	case SBRIG_STEP_PLUG:
	case SBRIG_STEP_UNPLUG:
		ret = rig_plug(s->op == SBRIG_STEP_PLUG, NULL);
		if (ret < 0) {
			fail(ret, "%s", sbrig_errmsg());
			return false;
		}
		run.pc++;
		return true;
	case SBRIG_STEP_HOLD:
		snprintf(cmd, sizeof(cmd), "hold \"%s\" %" PRId64, s->name,
			 s->duration_ns / NS_PER_MS);
		rig_stimulus("hold", s->name, sbrig_now_ns());
		agent_step(cmd, W_REPLY, RUN_REPLY_TIMEOUT_NS);
		return false;
	case SBRIG_STEP_BURN:
		snprintf(cmd, sizeof(cmd), "burn %" PRId64,
			 s->duration_ns / NS_PER_MS);
		snprintf(arg, sizeof(arg), "%" PRId64 "ms",
			 s->duration_ns / NS_PER_MS);
		rig_stimulus("burn", arg, sbrig_now_ns());
		agent_step(cmd, W_REPLY, RUN_REPLY_TIMEOUT_NS);
		return false;
	case SBRIG_STEP_POLICY:
		snprintf(cmd, sizeof(cmd), "policy %s", s->name);
		rig_stimulus("policy", s->name, sbrig_now_ns());
		agent_step(cmd, W_REPLY, RUN_REPLY_TIMEOUT_NS);
		return false;
	case SBRIG_STEP_STATE:
		snprintf(cmd, sizeof(cmd), "state %s", s->name);
		rig_stimulus("state", s->name, sbrig_now_ns());
		agent_step(cmd, sbrig_proto_state_sleeps(s->name) ? W_SLEEP :
			   W_DONE, step_timeout(s));
		return false;
	case SBRIG_STEP_WAIT_EVENT:
	case SBRIG_STEP_WAIT_EDGE:
		run.wait = s->op == SBRIG_STEP_WAIT_EVENT ? W_EVENT : W_EDGE;
		if (consume()) {
			run.wait = W_NONE;
			run.pc++;
			return true;
		}
		sched_timer_start(&run.timer, time_after(step_timeout(s)),
				  on_timer, NULL);
		return false;
	case SBRIG_STEP_WAIT_ASLEEP:
		run.wait = W_ASLEEP;
		run.asleep_deadline_ns = time_after(step_timeout(s));
		ret = rig_asleep_poll(run.asleep_deadline_ns, &next, NULL);
		if (ret == -ENOTCONN) {
			fail(ret, "wait asleep: %s", sbrig_errmsg());
			return false;
		}
		/* the timer decides, also when it holds already */
		sched_timer_start(&run.timer, ret == 0 ? next : INT64_MIN,
				  on_timer, NULL);
		return false;
	case SBRIG_STEP_REPEAT:
		run.remaining[run.pc] = s->count;
		run.pc = s->count ? run.pc + 1 : s->match + 1;
		return true;
	case SBRIG_STEP_END:
		if (--run.remaining[s->match] > 0)
			run.pc = s->match + 1;
		else
			run.pc++;
		return true;
	}
	return false;
}

/* Run steps until one waits, at most RUN_BATCH of them this turn. */
static void run_steps(void *data)
{
	for (unsigned int n = 0; run.active && !run.finishing; n++) {
		if (run.pc >= run.sc->nsteps) {
			finish(0, "complete");
			return;
		}
		if (n == RUN_BATCH) {
			sched_defer(&run.next, run_steps, NULL);
			return;
		}
		if (!start_step())
			return;
	}
}

/* ---- the stream --------------------------------------------------------- */

static void on_event(void *data, const struct sbrig_event *ev)
{
	evq_push_event(&run.q, ev);
	if (run.wait == W_EVENT && consume())
		step_done();
}

static void on_edge(void *data, const struct sbrig_edge *edge)
{
	evq_push_edge(&run.q, edge);
	if (run.wait == W_EDGE && consume())
		step_done();
}

static const struct rig_observer_ops run_observer = {
	.event = on_event,
	.edge = on_edge,
};

/* ---- the handle --------------------------------------------------------- */

static void handle_stop(struct op_handle *h, enum op_stop why)
{
	static const char *const status[] = {
		[OP_STOP_OWN] = "aborted: stopped by the client",
		[OP_STOP_OTHER] = "aborted: stopped by a client",
		[OP_STOP_SHUTDOWN] = "aborted",
	};

	if (run.active)
		finish(-ECANCELED, status[why]);
}

static void handle_detach(struct op_handle *h)
{
	/* a run goes on to its end: its capture stays useful */
	run.ops = NULL;
	run.ctx = NULL;
}

static const struct op_handle_ops run_handle_ops = {
	.kind = "run",
	.stop = handle_stop,
	.detach = handle_detach,
};

/**
 * run_start() - run a scenario with a capture around it
 * @sc: the parsed scenario; the runner owns it from now on (even on error)
 * @o: capture directory and stats period
 * @ops: the client's callbacks
 * @ctx: for @ops
 * @h: out: the run's handle
 *
 * Return: 0 (the answer comes through @ops), or -errno with sbrig_errmsg().
 */
int run_start(struct sbrig_scenario *sc, const struct rec_opts *o,
	      const struct run_client_ops *ops, void *ctx,
	      struct op_handle **h)
{
	struct rec_opts ro = *o;
	int ret;

	ret = op_claim(&run.handle);
	if (ret < 0) {
		sbrig_scenario_free(sc);
		return ret;
	}
	run.active = true;
	run.sc = sc;
	run.remaining = calloc(sc->nsteps + 1, sizeof(*run.remaining));
	if (!run.remaining) {
		reset();
		return sbrig_set_error(-ENOMEM, "out of memory");
	}
	run.pc = 0;
	ro.scenario = sc;
	ro.duration_ns = 0;
	ret = rec_start(&ro, &run_rec_ops, NULL);
	if (ret < 0) {
		reset();
		return ret;	/* sbrig_errmsg() is rec_start()'s */
	}
	run.obs = (struct rig_observer){ &run_observer, NULL };
	ret = rig_observe(&run.obs);
	if (ret < 0) {
		rec_detach();
		rec_stop("failed: no room for the run's observer");
		reset();
		return ret;
	}
	run.ops = ops;
	run.ctx = ctx;
	*h = &run.handle;
	if (ops && ops->started)
		ops->started(ctx, ro.dir, sc);
	sched_defer(&run.next, run_steps, NULL);
	return 0;
}

int run_init(void)
{
	memset(&run, 0, sizeof(run));
	run.handle.ops = &run_handle_ops;
	return 0;
}

void run_fini(void)
{
	if (run.active)
		handle_stop(&run.handle, OP_STOP_SHUTDOWN);
	if (run.active)
		reset();
}
