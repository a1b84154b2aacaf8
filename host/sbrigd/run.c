// SPDX-License-Identifier: GPL-2.0
/*
 * cur.c - the scenario runner, see cur.h.
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
/* the longest the first step waits for the sensor's first samples */
#define RUN_SENSOR_WAIT_NS (5 * NS_PER_S)

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

/* the current run: only the loop's thread touches it */
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
	bool sensor_wait;		/* the first waits for samples */
	uint32_t cmd_id;		/* agent command in flight, or 0 */
	int64_t asleep_deadline_ns;
	struct sleepwatch sw;		/* W_SLEEP, once the agent took it */
	struct evq q;
	struct rig_observer obs;
	int fail_err;
} cur;

static int64_t step_timeout(const struct sbrig_step *s)
{
	return s->timeout_ns ? s->timeout_ns : SBRIG_STEP_DEFAULT_TIMEOUT_NS;
}

static void reset(void)
{
	sched_timer_stop(&cur.timer);
	sched_timer_stop(&cur.next);
	sleepwatch_stop(&cur.sw);
	if (cur.cmd_id)
		rig_link_forget(cur.cmd_id);
	cur.cmd_id = 0;
	rig_forget(&cur);
	rig_unobserve(&cur.obs);
	sbrig_scenario_free(cur.sc);
	cur.sc = NULL;
	free(cur.remaining);
	cur.remaining = NULL;
	cur.ops = NULL;
	cur.ctx = NULL;
	cur.wait = W_NONE;
	cur.sensor_wait = false;
	evq_clear(&cur.q);
	cur.finishing = false;
	cur.fail_err = 0;
	op_release(&cur.handle);
	cur.active = false;
}

/* ---- the end ------------------------------------------------------------ */

static void capture_progress(void *ctx, const struct rec_result *now)
{
	if (cur.ops && cur.ops->capture)
		cur.ops->capture(cur.ctx, now);
}

/* The capture is closed: the run is over, whatever ended it. */
static void capture_end(void *ctx, int err, const struct rec_result *res)
{
	const struct run_client_ops *ops = cur.ops;
	void *octx = cur.ctx;

	if (!cur.active)
		return;
	if (cur.fail_err)
		err = cur.fail_err;
	else if (!cur.finishing && !err)
		err = -ECANCELED;	/* the capture ended under the run */
	reset();
	if (ops && ops->done)
		ops->done(octx, err, res);
}

static void run_steps(void *data);

/*
 * The power is recorded: the first step may start. A sensor's buffer
 * starts sampling some milliseconds after the capture (7 ms on the
 * virtual rig): a stimulus in between would wake the target where the
 * capture has no power, and the wake could not be placed by it.
 */
static void capture_recording(void *ctx)
{
	if (!cur.sensor_wait)
		return;
	cur.sensor_wait = false;
	sched_defer(&cur.next, run_steps, NULL);
}

/* No samples yet: the steps start anyway, the capture says why later. */
static void sensor_late(void *data)
{
	log_warn("run: no samples from the sensor %d s after the capture "
		 "started: the steps start without them",
		 (int)(RUN_SENSOR_WAIT_NS / NS_PER_S));
	cur.sensor_wait = false;
	run_steps(NULL);
}

static const struct rec_client_ops run_rec_ops = {
	.progress = capture_progress,
	.recording = capture_recording,
	.end = capture_end,
};

/* End the run: close the capture with @status; the answer follows. */
static void finish(int err, const char *status)
{
	if (cur.finishing)
		return;
	cur.finishing = true;
	cur.fail_err = err;
	sched_timer_stop(&cur.timer);
	sched_timer_stop(&cur.next);
	sleepwatch_stop(&cur.sw);
	cur.wait = W_NONE;
	rig_release(&cur);	/* a key the run holds goes up now */
	rec_stop(status);	/* capture_end() follows, once the sensor stopped */
}

static void fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(int err, const char *fmt, ...)
{
	const struct sbrig_step *s = &cur.sc->steps[cur.pc];
	char msg[400], status[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(status, sizeof(status), "failed: %s:%u: %s", cur.sc->path,
		 s->line, msg);
	log_warn("run: %s", status);
	finish(err, status);
}

/* ---- steps -------------------------------------------------------------- */


/* The current step is over: the next one starts on the next loop turn. */
static void step_done(void)
{
	cur.wait = W_NONE;
	sched_timer_stop(&cur.timer);
	sleepwatch_stop(&cur.sw);
	if (cur.cmd_id)
		rig_link_forget(cur.cmd_id);
	cur.cmd_id = 0;
	cur.pc++;
	sched_defer(&cur.next, run_steps, NULL);
}

static void on_timer(void *data)
{
	const struct sbrig_step *s = &cur.sc->steps[cur.pc];
	char step[600], t[32];
	int64_t next;
	int ret;

	sbrig_format_duration(step_timeout(s), t, sizeof(t));
	switch (cur.wait) {
	case W_TIMER:
		step_done();
		return;
	case W_ASLEEP:
		ret = rig_asleep_poll(cur.asleep_deadline_ns, &next, NULL);
		if (ret == 1) {
			evq_clear(&cur.q);	/* what it said before it slept */
			step_done();
		} else if (ret == 0) {
			sched_timer_start(&cur.timer, next, on_timer, NULL);
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
		if (cur.sw.active) {
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
			     cur.wait == W_DONE ? "finish" : "answer", t);
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
	const struct sbrig_step *s = &cur.sc->steps[cur.pc];
	const struct evq_item *it;

	while ((it = evq_pop(&cur.q)))
		if (matches(s, it))
			return true;
	return false;
}

static void press_done(int err, int64_t press_ns, void *data)
{
	if (!cur.active || cur.finishing || cur.wait != W_PRESS)
		return;
	if (err)
		fail(err, "release: %s", sbrig_errmsg());
	else
		step_done();
}

static void slept(void *ctx, int err, const struct sleepwatch_result *r)
{
	if (!cur.active || cur.finishing || cur.wait != W_SLEEP)
		return;
	if (err) {
		fail(err, "%s", sbrig_errmsg());
		return;
	}
	if (r->how != SLEEPWATCH_RESUMED)
		evq_clear(&cur.q);	/* what it said before it slept */
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

	if (m->type == SBRIG_LINK_STATS || m->cmd_id != cur.cmd_id)
		return;
	if (!cur.active || cur.finishing ||
	    (cur.wait != W_REPLY && cur.wait != W_DONE &&
	     cur.wait != W_SLEEP)) {
		rig_link_forget(cur.cmd_id);
		cur.cmd_id = 0;
		return;
	}
	if (m->err) {
		fail(m->err, "agent: %s", m->text);
		return;
	}
	if (cur.wait == W_REPLY ||
	    (cur.wait == W_DONE && m->type == SBRIG_LINK_DONE)) {
		step_done();
	} else if (cur.wait == W_SLEEP && !cur.sw.active) {
		ret = sleepwatch_start(&cur.sw, slept, NULL);
		if (ret < 0)
			fail(ret, "%s", sbrig_errmsg());
	}
}

static void agent_step(const char *cmd, enum run_wait wait, int64_t timeout_ns)
{
	int ret = rig_link_command(cmd, agent_reply, NULL, &cur.cmd_id);

	if (ret < 0) {
		fail(ret, "%s", sbrig_errmsg());
		return;
	}
	cur.wait = wait;
	sched_timer_start(&cur.timer, time_after(timeout_ns), on_timer, NULL);
}

/*
 * Start the current step. Return true if it is over already (the next
 * one may start at once), false if it waits (or the run ended).
 */
static bool start_step(void)
{
	const struct sbrig_step *s = &cur.sc->steps[cur.pc];
	char arg[64], cmd[400];
	int64_t next;
	int ret;

	if (cur.ops && cur.ops->step)
		cur.ops->step(cur.ctx, cur.pc, cur.sc);
	switch (s->op) {
	case SBRIG_STEP_SETTLE:
		cur.wait = W_TIMER;
		sched_timer_start(&cur.timer, time_after(s->rig_default ?
			(int64_t)rig_config()->settle_ms * NS_PER_MS :
			s->duration_ns), on_timer, NULL);
		return false;
	case SBRIG_STEP_PRESS:
		cur.wait = W_PRESS;
		ret = rig_press(s->name, s->duration_ns, NULL, press_done, &cur);
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
		cur.pc++;
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
		cur.wait = s->op == SBRIG_STEP_WAIT_EVENT ? W_EVENT : W_EDGE;
		if (consume()) {
			cur.wait = W_NONE;
			cur.pc++;
			return true;
		}
		sched_timer_start(&cur.timer, time_after(step_timeout(s)),
				  on_timer, NULL);
		return false;
	case SBRIG_STEP_WAIT_ASLEEP:
		cur.wait = W_ASLEEP;
		cur.asleep_deadline_ns = time_after(step_timeout(s));
		ret = rig_asleep_poll(cur.asleep_deadline_ns, &next, NULL);
		if (ret == -ENOTCONN) {
			fail(ret, "wait asleep: %s", sbrig_errmsg());
			return false;
		}
		/* the timer decides, also when it holds already */
		sched_timer_start(&cur.timer, ret == 0 ? next : INT64_MIN,
				  on_timer, NULL);
		return false;
	case SBRIG_STEP_REPEAT:
		cur.remaining[cur.pc] = s->count;
		cur.pc = s->count ? cur.pc + 1 : s->match + 1;
		return true;
	case SBRIG_STEP_END:
		if (--cur.remaining[s->match] > 0)
			cur.pc = s->match + 1;
		else
			cur.pc++;
		return true;
	}
	return false;
}

/* Run steps until one waits, at most RUN_BATCH of them this turn. */
static void run_steps(void *data)
{
	for (unsigned int n = 0; cur.active && !cur.finishing; n++) {
		if (cur.pc >= cur.sc->nsteps) {
			finish(0, "complete");
			return;
		}
		if (n == RUN_BATCH) {
			sched_defer(&cur.next, run_steps, NULL);
			return;
		}
		if (!start_step())
			return;
	}
}

/* ---- the stream --------------------------------------------------------- */

static void on_event(void *data, const struct sbrig_event *ev)
{
	evq_push_event(&cur.q, ev);
	if (cur.wait == W_EVENT && consume())
		step_done();
}

static void on_edge(void *data, const struct sbrig_edge *edge)
{
	evq_push_edge(&cur.q, edge);
	if (cur.wait == W_EDGE && consume())
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

	if (cur.active)
		finish(-ECANCELED, status[why]);
}

static void handle_detach(struct op_handle *h)
{
	/* a run goes on to its end: its capture stays useful */
	cur.ops = NULL;
	cur.ctx = NULL;
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

	ret = op_claim(&cur.handle);
	if (ret < 0) {
		sbrig_scenario_free(sc);
		return ret;
	}
	cur.active = true;
	cur.sc = sc;
	cur.remaining = calloc(sc->nsteps + 1, sizeof(*cur.remaining));
	if (!cur.remaining) {
		reset();
		return sbrig_set_error(-ENOMEM, "out of memory");
	}
	cur.pc = 0;
	ro.scenario = sc;
	ro.duration_ns = 0;
	ret = rec_start(&ro, &run_rec_ops, NULL);
	if (ret < 0) {
		reset();
		return ret;	/* sbrig_errmsg() is rec_start()'s */
	}
	cur.obs = (struct rig_observer){ &run_observer, NULL };
	ret = rig_observe(&cur.obs);
	if (ret < 0) {
		rec_detach();
		rec_stop("failed: no room for the run's observer");
		reset();
		return ret;
	}
	cur.ops = ops;
	cur.ctx = ctx;
	*h = &cur.handle;
	if (ops && ops->started)
		ops->started(ctx, ro.dir, sc);
	cur.sensor_wait = rig_has_power();
	if (cur.sensor_wait)	/* capture_recording() brings it forward */
		sched_timer_start(&cur.next, time_after(RUN_SENSOR_WAIT_NS),
				  sensor_late, NULL);
	else
		sched_defer(&cur.next, run_steps, NULL);
	return 0;
}

int run_init(void)
{
	memset(&cur, 0, sizeof(cur));
	cur.handle.ops = &run_handle_ops;
	return 0;
}

void run_fini(void)
{
	if (cur.active)
		handle_stop(&cur.handle, OP_STOP_SHUTDOWN);
	if (cur.active)
		reset();
}
