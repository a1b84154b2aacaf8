// SPDX-License-Identifier: GPL-2.0
/*
 * engine.c - operations that take time: scenario runs, wakeup-latency
 * measurements and agent commands. One runs at a time.
 *
 * The scenario engine executes the flat program of a parsed scenario
 * (sbrig/scenario.h) step by step on the poll() loop: a step starts an
 * action (a press with its release timer, a settle timer, an agent
 * command) and the loop calls back into the engine when it completes.
 *
 * Waits are expect-like: target events and marker edges that arrive during
 * a run form a stream, and "wait event TYPE [ARG]" consumes the stream up
 * to and including the first match. So in "press power / wait event
 * resume", a resume that arrives while the key is still held is not missed,
 * and an event older than the run never matches. A wait that times out
 * ends the run: the capture is closed with status "failed: FILE:LINE: wait
 * ... timed out after D" and the client gets "err 110 ...".
 *
 * "Asleep" is the link's silence: a real target freezes its user space
 * (the agent) before it suspends, so its events of a suspend cycle reach
 * the host only after it wakes. The target counts as asleep once no frame
 * has come from the agent for the rig's quiet_ms after the link was up
 * (the agent sends a BEAT a second and answers each ping while it runs).
 * "wait asleep" polls that with the engine's timer and, once it holds,
 * consumes the event stream up to that moment.
 *
 * A latency measurement repeats N times: wait until the target is asleep,
 * press the key, and measure from the press (the host time the GPIO line
 * changed) to the first UNTIL event ("resume") stamped after it, on host
 * time through the link's clock model; each result and its clock
 * uncertainty is sent as a progress line, the statistics end the request.
 * Events stamped before the press (the late "suspend"/"enter" of the cycle
 * the press ends) are skipped. A round is not measured but started again
 * (with a progress line saying why) when an UNTIL event is stamped before
 * the press: the target woke by itself just before it. A target that
 * nothing holds awake may suspend again before its agent ran (the events
 * of the wake then wait in the target): when the link stays quiet for
 * quiet_ms after the press, the key is pressed again ("nudge") so that
 * they come out; a measurement counts from the last press before UNTIL.
 * An UNTIL event the link could not map to host time within
 * LAT_MAX_UNCERT_NS (the target slept again before enough clock exchanges
 * after its wake) also starts the round again; LAT_MAX_RETRIES rounds in a
 * row not measured end the request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbrigd.h"
#include "internal.h"

#define ENG_QUEUE 256
#define ENG_DEFAULT_TIMEOUT_NS (10 * NS_PER_S)
#define ENG_REPLY_TIMEOUT_NS (10 * NS_PER_S)
#define LAT_MAX_PRESS 8
#define LAT_MAX_UNCERT_NS (250 * NS_PER_MS)
#define LAT_MAX_RETRIES 20

enum eng_kind { ENG_IDLE, ENG_RUN, ENG_LATENCY, ENG_AGENT };

/* What the current step or phase waits for. */
enum eng_wait {
	W_NONE,
	W_TIMER,	/* settle */
	W_PRESS,	/* release of our press */
	W_REPLY,	/* agent REPLY to cmd_id */
	W_DONE,		/* agent DONE of cmd_id */
	W_EVENT,	/* a matching event in the stream */
	W_EDGE,		/* a matching edge in the stream */
	W_ASLEEP,	/* the link quiet for quiet_ms */
};

enum lat_phase { L_ASLEEP, L_PRESS, L_WAKE };

struct eng_item {
	bool is_edge;
	union {
		struct sbrig_event ev;
		struct sbrig_edge edge;
	};
};

static struct {
	enum eng_kind kind;
	struct op_sink *sink;
	enum eng_wait wait;
	struct sched_timer timer;	/* settle / timeout */
	uint32_t cmd_id;
	/* the stream of events and edges for waits */
	struct eng_item queue[ENG_QUEUE];
	unsigned int qhead, qlen;
	/* ENG_RUN */
	struct sbrig_scenario *sc;
	size_t pc;
	uint32_t *remaining;	/* per REPEAT step */
	bool finishing;
	int fail_err;
	char fail_msg[600];
	/* ENG_LATENCY */
	unsigned int lat_n, lat_i;
	char lat_key[SBRIG_ID_MAX];
	char lat_until[12];
	int64_t lat_press_ns, lat_timeout_ns;
	enum lat_phase lat_phase;
	int64_t lat_press_t[LAT_MAX_PRESS];	/* this round's presses */
	unsigned int lat_npress;
	unsigned int lat_retries;	/* rounds in a row not measured */
	int64_t lat_wake_deadline_ns;
	int64_t *lat_ns;
	int64_t lat_uncert_max;
	/* wait asleep (runs and latency rounds) */
	int64_t asleep_deadline_ns;
	/* ENG_AGENT */
	int64_t agent_timeout_ns;
	bool agent_async;
} eng;

bool eng_busy(void)
{
	return eng.kind != ENG_IDLE;
}

static void fmt_duration(char *buf, size_t size, int64_t ns)
{
	if (ns % NS_PER_S == 0)
		snprintf(buf, size, "%" PRId64 "s", ns / NS_PER_S);
	else if (ns % NS_PER_MS == 0)
		snprintf(buf, size, "%" PRId64 "ms", ns / NS_PER_MS);
	else
		snprintf(buf, size, "%" PRId64 "ns", ns);
}

static void reset(void)
{
	sched_timer_stop(&eng.timer);
	rig_forget(&eng);
	sbrig_scenario_free(eng.sc);
	eng.sc = NULL;
	free(eng.remaining);
	eng.remaining = NULL;
	free(eng.lat_ns);
	eng.lat_ns = NULL;
	eng.kind = ENG_IDLE;
	eng.wait = W_NONE;
	eng.sink = NULL;
	eng.qlen = 0;
	eng.finishing = false;
	eng.fail_err = 0;
	eng.fail_msg[0] = '\0';
}

/* ---- asleep ------------------------------------------------------------- */

/*
 * Is the target asleep (link quiet for quiet_ms)? 1: yes; -ETIMEDOUT:
 * eng.asleep_deadline_ns has passed; 0: not yet, eng.timer will call @fn
 * at the next moment the answer can change.
 */
static int asleep_poll(sched_timer_fn fn)
{
	int64_t now = sbrig_now_ns(), at = rig_link_asleep_at(), next;

	if (at >= 0 && now >= at)
		return 1;
	if (now >= eng.asleep_deadline_ns)
		return -ETIMEDOUT;
	next = eng.asleep_deadline_ns;
	if (at >= 0 && at < next)
		next = at;
	sched_timer_start(&eng.timer, next, fn, NULL);
	return 0;
}

/* ---- scenario runs ------------------------------------------------------ */

static void run_step(void);

static void describe(const struct sbrig_step *s, char *buf, size_t size)
{
	char d[32], t[32];

	fmt_duration(d, sizeof(d), s->duration_ns);
	fmt_duration(t, sizeof(t), s->timeout_ns ? s->timeout_ns :
		     ENG_DEFAULT_TIMEOUT_NS);
	switch (s->op) {
	case SBRIG_STEP_SETTLE:
		snprintf(buf, size, "settle %s", d);
		break;
	case SBRIG_STEP_PRESS:
		snprintf(buf, size, "press %s %s", s->name,
			 s->duration_ns ? d : "default");
		break;
	case SBRIG_STEP_PLUG:
		snprintf(buf, size, "plug");
		break;
	case SBRIG_STEP_UNPLUG:
		snprintf(buf, size, "unplug");
		break;
	case SBRIG_STEP_HOLD:
		snprintf(buf, size, "hold \"%s\" %s", s->name, d);
		break;
	case SBRIG_STEP_BURN:
		snprintf(buf, size, "burn %s", d);
		break;
	case SBRIG_STEP_WAIT_EVENT:
		snprintf(buf, size, "wait event %s%s%s%s timeout %s", s->name,
			 s->arg[0] ? " \"" : "", s->arg, s->arg[0] ? "\"" : "",
			 t);
		break;
	case SBRIG_STEP_WAIT_EDGE:
		snprintf(buf, size, "wait edge %s %s timeout %s", s->name,
			 s->rising ? "rising" : "falling", t);
		break;
	case SBRIG_STEP_WAIT_ASLEEP:
		snprintf(buf, size, "wait asleep timeout %s", t);
		break;
	case SBRIG_STEP_REPEAT:
		snprintf(buf, size, "repeat %" PRIu32, s->count);
		break;
	case SBRIG_STEP_END:
		snprintf(buf, size, "end");
		break;
	}
}

static void run_capture_end(int err, const char *summary, void *data)
{
	struct op_sink *sink = eng.sink;

	if (eng.kind != ENG_RUN)
		return;
	if (eng.fail_err)
		op_done(sink, eng.fail_err, "%s; %s", eng.fail_msg, summary);
	else if (!eng.finishing && !err)
		op_done(sink, -ECANCELED, "%s", summary);
	else
		op_done(sink, err, "%s", summary);
	reset();
}

/* End the run: close the capture with @status; the answer follows. */
static void run_finish(int err, const char *status)
{
	eng.finishing = true;
	if (err) {
		eng.fail_err = err;
		snprintf(eng.fail_msg, sizeof(eng.fail_msg), "%s", status);
	}
	sched_timer_stop(&eng.timer);
	eng.wait = W_NONE;
	if (rec_stop(status) < 0 && eng.kind == ENG_RUN) {
		/* the capture had already ended: answer here */
		op_done(eng.sink, err ? err : -EIO, "%s", status);
		reset();
	}
}

static void run_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void run_fail(int err, const char *fmt, ...)
{
	const struct sbrig_step *s = &eng.sc->steps[eng.pc];
	char msg[400], status[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(status, sizeof(status), "failed: %s:%u: %s", eng.sc->path,
		 s->line, msg);
	sbrig_warn("run: %s", status);
	run_finish(err, status);
}

static void run_next(void)
{
	eng.wait = W_NONE;
	sched_timer_stop(&eng.timer);
	eng.pc++;
	run_step();
}

static void run_timer(void *data)
{
	const struct sbrig_step *s = &eng.sc->steps[eng.pc];
	char step[600], t[32];
	int ret;

	switch (eng.wait) {
	case W_TIMER:
		run_next();
		return;
	case W_ASLEEP:
		ret = asleep_poll(run_timer);
		if (ret == 1) {
			eng.qlen = 0;	/* what it said before it slept */
			run_next();
		}
		if (ret != -ETIMEDOUT)
			return;
		fmt_duration(t, sizeof(t), s->timeout_ns ? s->timeout_ns :
			     ENG_DEFAULT_TIMEOUT_NS);
		run_fail(-ETIMEDOUT, "wait asleep timed out after %s (the "
			 "target's agent was never quiet for quiet_ms %u ms)",
			 t, rig_config()->quiet_ms);
		return;
	case W_EVENT:
	case W_EDGE:
		describe(s, step, sizeof(step));
		fmt_duration(t, sizeof(t), s->timeout_ns ? s->timeout_ns :
			     ENG_DEFAULT_TIMEOUT_NS);
		/* "wait event X ... timed out after 2s" */
		*strstr(step, " timeout ") = '\0';
		run_fail(-ETIMEDOUT, "%s timed out after %s", step, t);
		return;
	case W_REPLY: {
		int64_t at = rig_link_asleep_at();

		if (at >= 0 && sbrig_now_ns() >= at)
			run_fail(-ETIMEDOUT, "the agent did not answer in %"
				 PRId64 " s: the target is asleep (the command "
				 "reaches it when it wakes)",
				 ENG_REPLY_TIMEOUT_NS / NS_PER_S);
		else
			run_fail(-ETIMEDOUT, "the agent did not answer in %"
				 PRId64 " s", ENG_REPLY_TIMEOUT_NS / NS_PER_S);
		return;
	}
	default:
		return;
	}
}

static bool event_matches(const struct sbrig_step *s,
			  const struct sbrig_event *ev)
{
	return strcmp(ev->type, s->name) == 0 &&
		(!s->arg[0] || strcmp(ev->arg, s->arg) == 0);
}

static bool edge_matches(const struct sbrig_step *s,
			 const struct sbrig_edge *e)
{
	return strcmp(e->line, s->name) == 0 && e->rising == s->rising;
}

/* Consume the stream up to the first item that satisfies the wait. */
static bool consume(void)
{
	const struct sbrig_step *s = &eng.sc->steps[eng.pc];

	while (eng.qlen) {
		struct eng_item *it = &eng.queue[eng.qhead];
		bool hit;

		if (eng.wait == W_EVENT)
			hit = !it->is_edge && event_matches(s, &it->ev);
		else
			hit = it->is_edge && edge_matches(s, &it->edge);
		eng.qhead = (eng.qhead + 1) % ENG_QUEUE;
		eng.qlen--;
		if (hit)
			return true;
	}
	return false;
}

static void run_press_done(int err, int64_t press_ns, void *data)
{
	if (eng.kind != ENG_RUN || eng.wait != W_PRESS)
		return;
	if (err)
		run_fail(err, "release: %s", sbrig_errmsg());
	else
		run_next();
}

static void run_agent(const char *cmd)
{
	int ret = rig_link_command(cmd, &eng.cmd_id);

	if (ret < 0) {
		run_fail(ret, "%s", sbrig_errmsg());
		return;
	}
	eng.wait = W_REPLY;
	sched_timer_start(&eng.timer, sbrig_now_ns() + ENG_REPLY_TIMEOUT_NS,
			  run_timer, NULL);
}

static void run_step(void)
{
	const struct sbrig_step *s;
	char desc[600], cmd[400];
	int ret;

	while (eng.kind == ENG_RUN && !eng.finishing) {
		if (eng.pc >= eng.sc->nsteps) {
			run_finish(0, "complete");
			return;
		}
		s = &eng.sc->steps[eng.pc];
		describe(s, desc, sizeof(desc));
		op_line(eng.sink, "progress step=%zu/%zu line=%u %s",
			eng.pc + 1, eng.sc->nsteps, s->line, desc);
		switch (s->op) {
		case SBRIG_STEP_SETTLE:
			eng.wait = W_TIMER;
			sched_timer_start(&eng.timer,
					  sbrig_now_ns() + s->duration_ns,
					  run_timer, NULL);
			return;
		case SBRIG_STEP_PRESS:
			eng.wait = W_PRESS;
			ret = rig_press(s->name, s->duration_ns, NULL,
					run_press_done, &eng);
			if (ret < 0)
				run_fail(ret, "press %s: %s", s->name,
					 sbrig_errmsg());
			return;
		case SBRIG_STEP_PLUG:
		case SBRIG_STEP_UNPLUG:
			ret = rig_set_line("charger", s->op == SBRIG_STEP_PLUG,
					   s->op == SBRIG_STEP_PLUG ? "plug" :
					   "unplug", NULL);
			if (ret < 0) {
				run_fail(ret, "%s", sbrig_errmsg());
				return;
			}
			eng.pc++;
			continue;
		case SBRIG_STEP_HOLD:
			snprintf(cmd, sizeof(cmd), "hold \"%s\" %" PRId64,
				 s->name, s->duration_ns / NS_PER_MS);
			rig_stimulus("hold", s->name, sbrig_now_ns());
			run_agent(cmd);
			return;
		case SBRIG_STEP_BURN:
			snprintf(cmd, sizeof(cmd), "burn %" PRId64,
				 s->duration_ns / NS_PER_MS);
			snprintf(desc, sizeof(desc), "%" PRId64 "ms",
				 s->duration_ns / NS_PER_MS);
			rig_stimulus("burn", desc, sbrig_now_ns());
			run_agent(cmd);
			return;
		case SBRIG_STEP_WAIT_EVENT:
		case SBRIG_STEP_WAIT_EDGE:
			eng.wait = s->op == SBRIG_STEP_WAIT_EVENT ? W_EVENT :
				W_EDGE;
			if (consume()) {
				eng.wait = W_NONE;
				eng.pc++;
				continue;
			}
			sched_timer_start(&eng.timer, sbrig_now_ns() +
					  (s->timeout_ns ? s->timeout_ns :
					   ENG_DEFAULT_TIMEOUT_NS),
					  run_timer, NULL);
			return;
		case SBRIG_STEP_WAIT_ASLEEP:
			if (!rig_has_link()) {
				run_fail(-ENOTCONN, "wait asleep: no target "
					 "link on rig %s", rig_config()->name);
				return;
			}
			eng.wait = W_ASLEEP;
			eng.asleep_deadline_ns = sbrig_now_ns() +
				(s->timeout_ns ? s->timeout_ns :
				 ENG_DEFAULT_TIMEOUT_NS);
			run_timer(NULL);
			return;
		case SBRIG_STEP_REPEAT:
			eng.remaining[eng.pc] = s->count;
			eng.pc = s->count ? eng.pc + 1 : s->match + 1;
			continue;
		case SBRIG_STEP_END:
			if (--eng.remaining[s->match] > 0)
				eng.pc = s->match + 1;
			else
				eng.pc++;
			continue;
		}
	}
}

/**
 * eng_run() - run a scenario with a capture around it
 * @sc: the parsed scenario; the engine owns it from now on (even on error)
 * @opts: capture directory and stats period
 * @sink: the client; gets progress lines and the final answer
 *
 * Return: 0 (the answer comes later), or -errno with sbrig_errmsg().
 */
int eng_run(const struct sbrig_scenario *sc, const struct rec_opts *opts,
	    struct op_sink *sink)
{
	struct rec_opts o = *opts;
	int ret;

	if (eng.kind != ENG_IDLE) {
		sbrig_scenario_free((struct sbrig_scenario *)sc);
		return sbrig_set_error(-EBUSY, "an operation is running");
	}
	eng.remaining = calloc(sc->nsteps + 1, sizeof(*eng.remaining));
	if (!eng.remaining) {
		sbrig_scenario_free((struct sbrig_scenario *)sc);
		return -ENOMEM;
	}
	eng.sc = (struct sbrig_scenario *)sc;
	eng.kind = ENG_RUN;
	eng.sink = sink;
	eng.pc = 0;
	eng.qlen = 0;
	o.scenario = sc;
	o.duration_ns = 0;
	ret = rec_start(&o, sink, run_capture_end, NULL);
	if (ret < 0) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", sbrig_errmsg());
		reset();
		return sbrig_set_error(ret, "%s", msg);
	}
	op_line(sink, "progress started dir=%s scenario=%s steps=%zu",
		o.dir, sc->path, sc->nsteps);
	run_step();
	return 0;
}

/* ---- latency ------------------------------------------------------------ */

static void lat_step(void);

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void lat_finish(void)
{
	int64_t *v = eng.lat_ns;
	unsigned int n = eng.lat_i;
	size_t p95;

	qsort(v, n, sizeof(*v), cmp_i64);
	p95 = (size_t)((n * 95 + 99) / 100);
	if (p95 > 0)
		p95--;
	op_done(eng.sink, 0, "n=%u min_ns=%" PRId64 " median_ns=%" PRId64
		" p95_ns=%" PRId64 " max_ns=%" PRId64 " uncert_ns=%" PRId64,
		n, v[0], n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2,
		v[p95], v[n - 1], eng.lat_uncert_max);
	reset();
}

static void lat_fail(int err, const char *msg)
{
	op_done(eng.sink, err, "%u/%u measured: %s", eng.lat_i, eng.lat_n,
		msg);
	reset();
}

static void lat_press_done(int err, int64_t press_ns, void *data);
static void lat_timeout(void *data);

/* Press for this round (the first press or a nudge). */
static int lat_press(void)
{
	int ret = rig_press(eng.lat_key, eng.lat_press_ns,
			    &eng.lat_press_t[eng.lat_npress], lat_press_done,
			    &eng);

	if (ret < 0)
		return ret;
	eng.lat_npress++;
	return 0;
}

/*
 * After a press: time out at the deadline; press again when the target
 * has been quiet for quiet_ms since the last press. Return true if the
 * round goes on (timer armed), false at the deadline.
 */
static bool lat_wake_poll(void)
{
	int64_t now = sbrig_now_ns(), at = rig_link_asleep_at(), next;
	int64_t last = eng.lat_press_t[eng.lat_npress - 1];
	int64_t quiet = (int64_t)rig_config()->quiet_ms * NS_PER_MS;
	int ret;

	if (now >= eng.lat_wake_deadline_ns)
		return false;
	if (at >= 0 && at < last + quiet)
		at = last + quiet;
	if (at >= 0 && now >= at && eng.lat_npress < LAT_MAX_PRESS) {
		ret = lat_press();
		if (ret < 0) {
			lat_fail(ret, sbrig_errmsg());
			return true;
		}
		op_line(eng.sink, "progress i=%u/%u nudge=%u", eng.lat_i + 1,
			eng.lat_n, eng.lat_npress - 1);
		at = now + quiet;
	}
	next = eng.lat_wake_deadline_ns;
	if (at >= 0 && at < next && eng.lat_npress < LAT_MAX_PRESS)
		next = at;
	sched_timer_start(&eng.timer, next, lat_timeout, NULL);
	return true;
}

static void lat_timeout(void *data)
{
	char t[32], msg[200];
	int ret;

	fmt_duration(t, sizeof(t), eng.lat_timeout_ns);
	if (eng.lat_phase == L_ASLEEP) {
		ret = asleep_poll(lat_timeout);
		if (ret == 1) {
			eng.lat_phase = L_PRESS;
			lat_step();
		}
		if (ret != -ETIMEDOUT)
			return;
		snprintf(msg, sizeof(msg), "the target did not fall asleep "
			 "within %s (its agent quiet for %u ms)", t,
			 rig_config()->quiet_ms);
	} else {
		if (lat_wake_poll())
			return;
		snprintf(msg, sizeof(msg), "no '%s' event within %s of the "
			 "press", eng.lat_until, t);
	}
	lat_fail(-ETIMEDOUT, msg);
}

/* Start a round: wait (up to the timeout) until the target is asleep. */
static void lat_round(void)
{
	eng.lat_phase = L_ASLEEP;
	eng.asleep_deadline_ns = sbrig_now_ns() + eng.lat_timeout_ns;
	lat_timeout(NULL);
}

/* The target woke without our press: wait until it sleeps again. */
static void lat_retry(const char *why, const struct sbrig_event *ev)
{
	if (++eng.lat_retries == LAT_MAX_RETRIES) {
		lat_fail(-EAGAIN, "no round could be measured in "
			 "20 attempts in a row");
		return;
	}
	op_line(eng.sink, "progress i=%u/%u retry=%s event=%s", eng.lat_i + 1,
		eng.lat_n, why, ev->type);
	lat_round();
}

static void lat_press_done(int err, int64_t press_ns, void *data)
{
	if (eng.kind != ENG_LATENCY)
		return;
	if (err)
		lat_fail(err, "release failed");
}

/* Look at the stream for what the current phase waits for. */
static void lat_step(void)
{
	unsigned int k;
	int ret;

	while (eng.kind == ENG_LATENCY) {
		struct eng_item *it;

		switch (eng.lat_phase) {
		case L_ASLEEP:
			/* the timer decides; what it says meanwhile is past */
			eng.qlen = 0;
			return;
		case L_WAKE:
			if (!eng.qlen)
				return;
			it = &eng.queue[eng.qhead];
			eng.qhead = (eng.qhead + 1) % ENG_QUEUE;
			eng.qlen--;
			/* the late suspend/enter of the cycle, the rest */
			if (it->is_edge || strcmp(it->ev.type, eng.lat_until))
				continue;
			if (it->ev.uncert_ns < 0 ||
			    it->ev.uncert_ns > LAT_MAX_UNCERT_NS) {
				/* it slept again before (enough) clock
				 * exchanges: no good host time for it */
				lat_retry("no_clock", &it->ev);
				continue;
			}
			/* the last press it may have followed */
			for (k = eng.lat_npress; k > 0; k--)
				if (eng.lat_press_t[k - 1] <=
				    it->ev.host_t_ns + it->ev.uncert_ns)
					break;
			if (!k) {
				lat_retry("woke_before_press", &it->ev);
				continue;
			}
			eng.lat_ns[eng.lat_i] = it->ev.host_t_ns -
				eng.lat_press_t[k - 1];
			if (it->ev.uncert_ns > eng.lat_uncert_max)
				eng.lat_uncert_max = it->ev.uncert_ns;
			op_line(eng.sink, "progress i=%u/%u latency_ns=%" PRId64
				" uncert_ns=%" PRId64, eng.lat_i + 1, eng.lat_n,
				eng.lat_ns[eng.lat_i], it->ev.uncert_ns);
			eng.lat_retries = 0;
			if (++eng.lat_i == eng.lat_n) {
				lat_finish();
				return;
			}
			lat_round();
			continue;
		case L_PRESS:
			eng.lat_npress = 0;
			ret = lat_press();
			if (ret < 0) {
				lat_fail(ret, sbrig_errmsg());
				return;
			}
			eng.lat_phase = L_WAKE;
			/* only what comes after the press counts */
			eng.qlen = 0;
			eng.lat_wake_deadline_ns = eng.lat_press_t[0] +
				eng.lat_timeout_ns;
			lat_wake_poll();
			continue;
		}
	}
}

/**
 * eng_latency() - measure wakeup latency @n times
 * @n: measurements
 * @key: key to press
 * @press_ns: press duration (0: the rig's press_ms)
 * @until: event type that ends a measurement ("resume")
 * @timeout_ns: how long each wait may take
 * @sink: the client
 *
 * Return: 0 (the answer comes later) or -errno.
 */
int eng_latency(unsigned int n, const char *key, int64_t press_ns,
		const char *until, int64_t timeout_ns, struct op_sink *sink)
{
	if (eng.kind != ENG_IDLE)
		return sbrig_set_error(-EBUSY, "an operation is running");
	if (!rig_has_output(key) || !strcmp(key, "charger"))
		return sbrig_set_error(-ENOENT, "key: no key '%s' on rig %s",
				       key, rig_config()->name);
	if (!rig_has_link())
		return sbrig_set_error(-ENOTCONN, "no target link on rig %s: "
				       "latency needs the target's events",
				       rig_config()->name);
	if (strlen(until) >= sizeof(eng.lat_until))
		return sbrig_set_error(-EINVAL, "until: bad event type '%s'",
				       until);
	eng.lat_ns = calloc(n, sizeof(*eng.lat_ns));
	if (!eng.lat_ns)
		return -ENOMEM;
	eng.kind = ENG_LATENCY;
	eng.sink = sink;
	eng.lat_n = n;
	eng.lat_i = 0;
	eng.lat_retries = 0;
	eng.lat_uncert_max = 0;
	snprintf(eng.lat_key, sizeof(eng.lat_key), "%s", key);
	snprintf(eng.lat_until, sizeof(eng.lat_until), "%s", until);
	eng.lat_press_ns = press_ns;
	eng.lat_timeout_ns = timeout_ns;
	eng.qlen = 0;
	op_line(sink, "progress started n=%u key=%s until=%s", n, key, until);
	lat_round();
	return 0;
}

/* ---- agent commands ----------------------------------------------------- */

/*
 * Verbs the agent answers with REPLY at the start and DONE at the end
 * (link-protocol.md); for the others (stats, release, policy, input) the
 * REPLY is the end.
 */
static bool agent_verb_async(const char *verb)
{
	static const char *const async[] = { "hold", "burn", "state" };
	size_t i;

	for (i = 0; i < sizeof(async) / sizeof(async[0]); i++)
		if (!strcmp(verb, async[i]))
			return true;
	return false;
}

static void agent_timeout(void *data)
{
	op_done(eng.sink, -ETIMEDOUT, "the agent did not finish in time");
	reset();
}

/**
 * eng_agent() - send @cmd to the target agent and wait for its DONE
 * @cmd: command line as in link-protocol.md
 * @timeout_ns: give up after this long
 * @sink: the client
 *
 * Return: 0 (the answer comes later) or -errno.
 */
int eng_agent(const char *cmd, int64_t timeout_ns, struct op_sink *sink)
{
	char verb[16] = "", arg[SBRIG_NAME_MAX] = "";
	int ret;

	if (eng.kind != ENG_IDLE)
		return sbrig_set_error(-EBUSY, "an operation is running");
	ret = rig_link_command(cmd, &eng.cmd_id);
	if (ret < 0)
		return ret;
	sscanf(cmd, "%15s %255[^\n]", verb, arg);
	rig_stimulus(verb, arg, sbrig_now_ns());
	eng.kind = ENG_AGENT;
	eng.sink = sink;
	eng.wait = W_REPLY;
	eng.agent_timeout_ns = timeout_ns;
	eng.agent_async = agent_verb_async(verb);
	sched_timer_start(&eng.timer, sbrig_now_ns() + timeout_ns,
			  agent_timeout, NULL);
	return 0;
}

void eng_link_reply(const struct sbrig_link_msg *m)
{
	if (eng.kind == ENG_IDLE || m->type == SBRIG_LINK_STATS ||
	    m->cmd_id != eng.cmd_id)
		return;
	if (eng.kind == ENG_RUN && eng.wait == W_REPLY &&
	    m->type == SBRIG_LINK_REPLY) {
		if (m->err)
			run_fail(m->err, "agent: %s", m->text);
		else
			run_next();
	} else if (eng.kind == ENG_AGENT) {
		if (m->err) {
			op_done(eng.sink, m->err, "agent: %s", m->text);
			reset();
		} else if (m->type == SBRIG_LINK_DONE || !eng.agent_async) {
			op_done(eng.sink, 0, "%s", m->text);
			reset();
		} else {
			op_line(eng.sink, "progress accepted %s", m->text);
			eng.wait = W_DONE;
		}
	}
}

/* ---- feeds and control -------------------------------------------------- */

static void enqueue(const struct eng_item *it)
{
	if (eng.kind != ENG_RUN && eng.kind != ENG_LATENCY)
		return;
	if (eng.qlen == ENG_QUEUE) {	/* drop the oldest */
		eng.qhead = (eng.qhead + 1) % ENG_QUEUE;
		eng.qlen--;
	}
	eng.queue[(eng.qhead + eng.qlen++) % ENG_QUEUE] = *it;
	if (eng.kind == ENG_RUN && (eng.wait == W_EVENT || eng.wait == W_EDGE)) {
		if (consume())
			run_next();
	} else if (eng.kind == ENG_LATENCY) {
		lat_step();
	}
}

void eng_event(const struct sbrig_event *ev)
{
	struct eng_item it = { .is_edge = false, .ev = *ev };

	enqueue(&it);
}

void eng_edge(const struct sbrig_edge *edge)
{
	struct eng_item it = { .is_edge = true, .edge = *edge };

	enqueue(&it);
}

/**
 * eng_abort() - stop the running operation
 * @why: capture status for a run ("aborted: ...")
 */
void eng_abort(const char *why)
{
	switch (eng.kind) {
	case ENG_RUN:
		eng.fail_err = -ECANCELED;
		snprintf(eng.fail_msg, sizeof(eng.fail_msg), "%s", why);
		run_finish(-ECANCELED, why);
		break;
	case ENG_LATENCY:
		if (eng.lat_i > 0) {
			eng.lat_n = eng.lat_i;
			lat_finish();
		} else {
			lat_fail(-ECANCELED, why);
		}
		break;
	case ENG_AGENT:
		op_done(eng.sink, -ECANCELED, "%s", why);
		reset();
		break;
	case ENG_IDLE:
		break;
	}
}

void eng_sink_gone(struct op_sink *sink)
{
	if (eng.kind == ENG_IDLE || eng.sink != sink)
		return;
	/* a run goes on to its end (its capture stays useful); the others
	 * have nobody to report to */
	if (eng.kind == ENG_RUN) {
		eng.sink = NULL;
		return;
	}
	eng.sink = NULL;
	reset();
}

int eng_init(void)
{
	memset(&eng, 0, sizeof(eng));
	return 0;
}

void eng_fini(void)
{
	eng_abort("aborted");
	reset();
}
