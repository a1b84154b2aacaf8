// SPDX-License-Identifier: GPL-2.0
/*
 * server.c - the daemon's Unix socket: clients and their requests.
 *
 * The protocol is text lines (host/doc/daemon-protocol.md): a request is
 * "VERB ARGS...\n" with shell-like double quotes for arguments that contain
 * spaces; the answer is zero or more "data ..." / "progress ..." lines and
 * one final "ok [text]" or "err ERRNO message". Requests are dispatched
 * through one table; a bad request gets "err" naming the argument.
 *
 * A client has at most one request in progress. A request that takes time
 * hands the server a struct op_handle (op.h): while it runs, the only line
 * handled is "stop" (the handle's stop: the final answer follows), other
 * requests wait in the input buffer for their turn; if the client goes
 * away, the handle is detached. The operations tell the server what
 * happens through the client callbacks below, with structs; this file is
 * the only one that writes protocol text.
 *
 * Fairness: a client's next request is taken on a later turn of the loop
 * (a deferred timer), never from inside the answer to the previous one,
 * and one request per turn: a client that pipelines thousands of requests
 * cannot starve the others. Progress lines of step bursts and capture
 * progress are coalesced while a client reads slower than they come (the
 * newest replaces the queued one), so its output buffer stays small.
 *
 * Limits, so that a person can always run "status" and "stop" on the
 * rig, whatever other clients do:
 *
 *  - SRV_MAX_CLIENTS connections. When all are taken, the one idle the
 *    longest is closed to make room ("idle": no request in progress, or
 *    a run request whose scenario body is still coming). A connection
 *    idle for SRV_IDLE_NS is closed.
 *  - Requests that last are bounded: the followers of "target events"
 *    (SRV_MAX_FOLLOWERS in all, SRV_FOLLOWERS_PER_PEER per peer process;
 *    beyond the first bound the one following the longest is ended to
 *    make room, beyond the second the request is refused), the capture
 *    and the operation (one each, rig-wide), a press per key. So at most
 *    SRV_MAX_LASTING connections are ever busy, and the other slots are
 *    always there for new clients (SRV_MAX_CLIENTS - SRV_MAX_LASTING,
 *    checked at build time).
 *  - A run's scenario body is kept as it arrives (SRV_SCENARIO_MAX at
 *    most), not allocated at its announced size.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <sbrig/proto.h>
#include <sbrig/scenario.h>

#include "agentop.h"
#include "evlog.h"
#include "latency.h"
#include "op.h"
#include "rec.h"
#include "rig.h"
#include "run.h"
#include "sched.h"
#include "server.h"
#include "util.h"

#define SRV_MAX_CLIENTS 64
#define SRV_MAX_FOLLOWERS 16
#define SRV_FOLLOWERS_PER_PEER 4
/* connections that can be busy at once: the followers, the capture, the
 * operation (run, latency, agent or target request), a press per key */
#define SRV_MAX_LASTING (SRV_MAX_FOLLOWERS + 2 + SBRIG_MAX_KEYS)
#define SRV_RESERVED 16
_Static_assert(SRV_MAX_CLIENTS - SRV_MAX_LASTING >= SRV_RESERVED,
	       "no room left for status and stop when every lasting request "
	       "is taken");
#define SRV_LINE_MAX 8192
#define SRV_MAX_ARGS 16
#define SRV_OUT_MAX (4 << 20)		/* a client this far behind is dropped */
#define SRV_COALESCE_AT (64 << 10)	/* progress coalesced beyond this */
#define SRV_SCENARIO_MAX (1 << 20)
#define SRV_IDLE_NS (60 * NS_PER_S)
#define SRV_ACCEPT_BATCH 16
#define SRV_ANSWER_MAX 16384

/* the kinds of progress lines a newer one of the same kind replaces */
enum progress_kind { PROGRESS_STEP, PROGRESS_CAPTURE, PROGRESS_KINDS };

/**
 * struct client - one connection
 * @fd: the connection
 * @peer_pid: the peer's process (SO_PEERCRED; 0: unknown)
 * @in: bytes received, not yet handled (lines, or a scenario body)
 * @nin: bytes in @in
 * @out: answer bytes not yet written
 * @nout: bytes in @out
 * @out_size: allocated size of @out
 * @pending: coalesced progress lines waiting for room, one per kind
 *	(enum progress_kind; "" = none), sent in the order they were parked
 *	(@pending_first: the kind parked first)
 * @busy: a request is in progress (its final answer is still due)
 * @status_wait: a status waits for the sensor (rig_sensor_settle())
 * @op: the handle of that request, if it takes time
 * @press_h: the handle of a press request (stop releases the key)
 * @follow_h: the handle of a "target events follow=yes" request
 * @follower: its registration with the event log
 * @follow_since_ns: when it started following
 * @follow_sent: events it was sent
 * @follow_dropped: events it was not sent (it read too slowly)
 * @follow_owed: of those, not yet reported with a "data dropped" line
 * @agent_verb: the target request in progress ("state", "blockers", ...)
 * @agent_arg: its argument (the state, the policy, the blocker)
 * @agent_rows: stats rows of a "target blockers" so far
 * @lat_n: rounds a latency request asked for
 * @body: bytes of a "run" request's scenario still to read
 * @body_buf: the scenario read so far
 * @nbody: bytes in @body_buf
 * @body_size: allocated size of @body_buf
 * @run_dir: the pending "run" request's capture directory
 * @run_origin: its scenario path (for messages and provenance)
 * @run_stats_ns: its stats period
 * @kick: deferred work: the next request, or freeing a dead client
 * @idle: closes the connection after SRV_IDLE_NS idle (client_idle())
 * @idle_since_ns: when it last became idle, or last sent a byte while
 *	idle
 * @dead: the connection is closed or broken; freed from the loop
 */
struct client {
	int fd;
	pid_t peer_pid;
	char in[SRV_LINE_MAX + 1];
	size_t nin;
	char *out;
	size_t nout, out_size;
	char pending[PROGRESS_KINDS][SRV_ANSWER_MAX];
	int pending_first;
	bool busy;
	bool status_wait;
	struct op_handle *op;
	struct op_handle press_h;
	struct op_handle follow_h;
	struct evlog_follower follower;
	int64_t follow_since_ns;
	uint64_t follow_sent, follow_dropped, follow_owed;
	const char *agent_verb;
	char agent_arg[SBRIG_NAME_MAX];
	uint32_t agent_rows;
	unsigned int lat_n;
	size_t body;
	char *body_buf;
	size_t nbody, body_size;
	char run_dir[PATH_MAX];
	char run_origin[PATH_MAX];
	int64_t run_stats_ns;
	struct sched_timer kick;
	struct sched_timer idle;
	int64_t idle_since_ns;
	bool dead;
};

/* the server: only the loop's thread touches it */
static struct {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	bool closing;		/* shutting down: no new requests */
	int spare;		/* kept to answer "err 24" with no fd left */
	struct sched_timer listen_again;	/* accept paused: no fd */
	struct client *clients[SRV_MAX_CLIENTS];
} srv = { .fd = -1, .spare = -1 };

static void client_flush(struct client *c);
static void client_kick(void *data);
static void client_idle(void *data);

/* ---- lines -------------------------------------------------------------- */

/** struct line - an answer line being built */
struct line {
	char buf[SRV_ANSWER_MAX];
	size_t len;
};

static void line_add(struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
	if (l->len >= sizeof(l->buf))
		l->len = sizeof(l->buf) - 1;
}

static bool safe_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		(ch >= '0' && ch <= '9') || strchr("_-./:+,@%", ch);
}

/*
 * " key=value": a value that is empty or holds anything but [A-Za-z0-9]
 * and _-./:+,@% is written in double quotes with \" and \\ escaped, so a
 * value can never pose as another key (a directory named "x status=ok").
 */
static void line_kv(struct line *l, const char *key, const char *value)
{
	bool quote = !*value;

	for (const char *p = value; *p && !quote; p++)
		quote = !safe_char(*p);
	line_add(l, "%s%s=%s", l->len ? " " : "", key, quote ? "\"" : "");
	for (const char *p = value; *p && l->len < sizeof(l->buf) - 3; p++) {
		if (quote && (*p == '"' || *p == '\\'))
			l->buf[l->len++] = '\\';
		l->buf[l->len++] = *p;
	}
	l->buf[l->len] = '\0';
	if (quote)
		line_add(l, "\"");
}

static void line_kvf(struct line *l, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void line_kvf(struct line *l, const char *key, const char *fmt, ...)
{
	char v[SRV_ANSWER_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	line_kv(l, key, v);
}

/* "dir=... elapsed_ms=... ... status=..." of a capture */
static void line_summary(struct line *l, const struct rec_result *r)
{
	line_kv(l, "dir", r->dir);
	line_kvf(l, "elapsed_ms", "%" PRId64, r->elapsed_ns / NS_PER_MS);
	line_kvf(l, "samples", "%" PRIu64, r->n.samples);
	line_kvf(l, "gaps", "%" PRIu64, r->n.gaps);
	line_kvf(l, "missing", "%" PRIu64, r->n.missing);
	line_kvf(l, "edges", "%" PRIu64, r->n.edges);
	line_kvf(l, "stimuli", "%" PRIu64, r->n.stimuli);
	line_kvf(l, "events", "%" PRIu64, r->n.events);
	line_kvf(l, "stats_rows", "%" PRIu64, r->n.stats_rows);
	line_kvf(l, "clock_rows", "%" PRIu64, r->n.clock_rows);
	line_kvf(l, "mean_mA", "%.3f", r->mean_mA);
	if (r->tail_lost_ns > 0)	/* the capture ends early */
		line_kvf(l, "tail_lost_ms", "%" PRId64,
			 (r->tail_lost_ns + NS_PER_MS / 2) / NS_PER_MS);
	if (r->status[0])
		line_kv(l, "status", r->status);
}

/* ---- output ------------------------------------------------------------- */

static void client_kill(struct client *c)
{
	c->dead = true;
	sched_defer(&c->kick, client_kick, c);
}

static void client_put(struct client *c, const char *text, size_t len)
{
	if (c->dead)
		return;
	if (c->nout + len + 1 > c->out_size) {
		size_t size = c->out_size ? c->out_size : 4096;
		char *p;

		while (size < c->nout + len + 1)
			size *= 2;
		if (size > SRV_OUT_MAX) {
			log_warn("client %d: too far behind, dropped", c->fd);
			client_kill(c);
			return;
		}
		p = realloc(c->out, size);
		if (!p) {
			client_kill(c);
			return;
		}
		c->out = p;
		c->out_size = size;
	}
	memcpy(c->out + c->nout, text, len);
	c->out[c->nout + len] = '\n';
	c->nout += len + 1;
}

/* One answer line (newlines inside become spaces). */
static void client_send(struct client *c, struct line *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (l->buf[i] == '\n' || l->buf[i] == '\r')
			l->buf[i] = ' ';
	client_put(c, l->buf, l->len);
	client_flush(c);
}

static void client_sendf(struct client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void client_sendf(struct client *c, const char *fmt, ...)
{
	struct line l = { .len = 0 };
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l.buf, sizeof(l.buf), fmt, ap);
	va_end(ap);
	l.len = n < 0 ? 0 : (size_t)n >= sizeof(l.buf) ? sizeof(l.buf) - 1 :
		(size_t)n;
	client_send(c, &l);
}

/*
 * A progress line that a newer one may replace: sent at once while the
 * client keeps up, else parked in @pending (the newest wins) until its
 * output drains.
 */
static bool any_pending(const struct client *c)
{
	return c->pending[0][0] || c->pending[1][0];
}

/* The next parked line to send (its kind), -1: none. */
static int next_pending(const struct client *c)
{
	int other = !c->pending_first;

	if (c->pending[c->pending_first][0])
		return c->pending_first;
	return c->pending[other][0] ? other : -1;
}

static void client_progress_coalesced(struct client *c, struct line *l,
				      enum progress_kind kind)
{
	if (c->nout < SRV_COALESCE_AT && !any_pending(c)) {
		client_send(c, l);
		return;
	}
	/* a newer line of one kind makes only that kind's line obsolete */
	if (!any_pending(c))
		c->pending_first = kind;
	snprintf(c->pending[kind], sizeof(c->pending[kind]), "%s", l->buf);
	client_flush(c);
}

/* The request is over: "ok TEXT" or "err ERRNO TEXT". */
static void client_final(struct client *c, int err, const char *text)
{
	/* the last progress lines go before the answer */
	for (int k; (k = next_pending(c)) >= 0;) {
		client_sendf(c, "%s", c->pending[k]);
		c->pending[k][0] = '\0';
		c->pending_first = !k;
	}
	if (err)
		client_sendf(c, "err %d %s", err < 0 ? -err : err, text);
	else
		client_sendf(c, text[0] ? "ok %s" : "ok", text);
	c->busy = false;
	c->op = NULL;
	c->idle_since_ns = sbrig_now_ns();
	if (!c->dead) {
		sched_timer_start(&c->idle, time_add(c->idle_since_ns,
						     SRV_IDLE_NS),
				  client_idle, c);
		/* the next request, on a later turn of the loop */
		if (c->nin && !srv.closing)
			sched_defer(&c->kick, client_kick, c);
	}
}

static void client_finalf(struct client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void client_finalf(struct client *c, int err, const char *fmt, ...)
{
	char text[SRV_ANSWER_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	client_final(c, err, text);
}

/* Fail the request with what the failing call recorded. */
static void client_error(struct client *c, int err)
{
	client_final(c, err, sbrig_errmsg());
}

/* ---- request helpers ---------------------------------------------------- */

/* Split @line in place into words; "..." quotes, \ escapes. */
static int split(char *line, char **argv, int max)
{
	int argc = 0;
	char *r = line, *w;

	for (;;) {
		bool quoted = false;

		while (*r == ' ' || *r == '\t')
			r++;
		if (!*r)
			return argc;
		if (argc == max)
			return -E2BIG;
		argv[argc++] = w = r;
		for (; *r; r++) {
			if (*r == '\\' && r[1]) {
				*w++ = *++r;
			} else if (*r == '"') {
				quoted = !quoted;
			} else if (!quoted && (*r == ' ' || *r == '\t')) {
				r++;
				break;
			} else {
				*w++ = *r;
			}
		}
		if (quoted)
			return -EINVAL;
		*w = '\0';
	}
}

/* Parse "name=value" options into @vals, names from @names. */
static int options(struct client *c, int argc, char **argv,
		   const char *const *names, const char **vals, int nnames)
{
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		int j;

		if (!eq) {
			client_finalf(c, -EINVAL, "unexpected argument '%.200s'",
				      argv[i]);
			return -EINVAL;
		}
		*eq = '\0';
		for (j = 0; j < nnames; j++)
			if (strcmp(argv[i], names[j]) == 0)
				break;
		if (j == nnames) {
			client_finalf(c, -EINVAL, "unknown option '%.200s'",
				      argv[i]);
			return -EINVAL;
		}
		vals[j] = eq + 1;
	}
	return 0;
}

static int duration_arg(struct client *c, const char *name, const char *s,
			int64_t *ns)
{
	if (!s)
		return 0;
	if (sbrig_parse_duration(s, ns) < 0) {
		client_finalf(c, -EINVAL, "%s: bad duration '%.200s' (e.g. "
			      "250ms, 2s)", name, s);
		return -EINVAL;
	}
	return 0;
}

static int dir_arg(struct client *c, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] != '/') {
		client_final(c, -EINVAL, "DIR: an absolute directory is "
			     "required");
		return -EINVAL;
	}
	if (strlen(argv[1]) >= PATH_MAX) {
		client_final(c, -ENAMETOOLONG, "DIR: too long");
		return -EINVAL;
	}
	return 0;
}

/* ---- status ------------------------------------------------------------- */

static bool following(const struct client *c);

static void status_rig(struct client *c, const struct rig_status *st)
{
	const struct sbrig_config *cfg = st->cfg;
	unsigned int clients = 0, followers = 0;

	for (int i = 0; i < SRV_MAX_CLIENTS; i++) {
		clients += srv.clients[i] && !srv.clients[i]->dead;
		followers += following(srv.clients[i]);
	}
	client_sendf(c, "data rig.name: %s", cfg->name);
	client_sendf(c, "data rig.config: %s", cfg->path);
	client_sendf(c, "data rig.config_sha256: %s", cfg->sha256);
	client_sendf(c, "data daemon.version: %s", sbrig_version);
	client_sendf(c, "data daemon.clients: %u", clients);
	client_sendf(c, "data daemon.followers: %u", followers);
	for (unsigned int i = 0; i < st->nlines; i++) {
		const struct rig_line_status *l = &st->lines[i];
		const char *dir = l->dir == RIG_LINE_IN ? "in" : "out";

		if (l->value < 0)
			client_sendf(c, "data line.%s: %s error %s", l->name,
				     dir, l->err);
		else
			client_sendf(c, "data line.%s: %s %s", l->name, dir,
				     l->value ? "active" : "inactive");
	}
}

static void status_sensor(struct client *c, const struct rig_status *st)
{
	if (!st->has_power) {
		client_sendf(c, "data sensor: none");
		return;
	}
	client_sendf(c, "data sensor.uri: %s", st->cfg->power_uri);
	if (st->sensor_busy[0]) {
		client_sendf(c, "data sensor.busy: %s", st->sensor_busy);
		client_sendf(c, "data sensor.busy_ms: %" PRId64,
			     st->sensor_busy_ns / NS_PER_MS);
	}
	if (st->sensor_ok) {
		client_sendf(c, "data sensor.device: %s", st->sensor.device);
		client_sendf(c, "data sensor.rate_hz: %.1f",
			     st->sensor.sample_rate_hz);
		client_sendf(c, "data sensor.shunt_uohm: %" PRIu32,
			     st->sensor.shunt_uohm);
		client_sendf(c, "data sensor.buffer_samples: %" PRIu32,
			     st->sensor.buffer_samples);
	}
	if (st->have_reading) {
		client_sendf(c, "data sensor.current_mA: %.3f",
			     st->reading.current_uA / 1000.0);
		client_sendf(c, "data sensor.bus_mV: %.3f",
			     st->reading.bus_uV / 1000.0);
	} else if (st->sensor_err[0]) {
		client_sendf(c, "data sensor.error: %s", st->sensor_err);
	}
}

static void status_link(struct client *c, const struct rig_status *st)
{
	if (!st->has_link) {
		client_sendf(c, "data link: none");
		return;
	}
	client_sendf(c, "data link.uri: %s", st->cfg->target_uri);
	client_sendf(c, "data link.connected: %s",
		     st->link.connected ? "yes" : "no");
	client_sendf(c, "data link.asleep: %s", st->asleep ? "yes" : "no");
	client_sendf(c, "data asleep.witness: %s",
		     rig_witness_name(st->why.witness));
	client_sendf(c, "data asleep.detail: %s", st->why.detail);
	if (st->link.last_rx_ns)
		client_sendf(c, "data link.silent_ms: %" PRId64,
			     time_sub(sbrig_now_ns(), st->link.last_rx_ns) /
			     NS_PER_MS);
	if (st->target.known) {
		client_sendf(c, "data link.boot_id: %s", st->target.boot_id);
		client_sendf(c, "data link.kernel: %s", st->target.kernel);
		client_sendf(c, "data link.module: %s", st->target.module);
		client_sendf(c, "data link.agent: %s", st->target.agent);
	}
	client_sendf(c, "data link.frames_ok: %" PRIu64, st->link.frames_ok);
	client_sendf(c, "data link.frames_bad: %" PRIu64, st->link.frames_bad);
	client_sendf(c, "data link.reconnects: %" PRIu64, st->link.reconnects);
	client_sendf(c, "data link.events_lost: %" PRIu64,
		     st->link.events_lost);
	client_sendf(c, "data clock.samples: %u", st->clock.samples);
	if (st->clock.samples) {
		client_sendf(c, "data clock.offset_ns: %" PRId64,
			     st->clock.offset_ns);
		client_sendf(c, "data clock.uncert_ns: %" PRId64,
			     st->clock.uncert_ns);
		client_sendf(c, "data clock.drift_ppb: %" PRId64,
			     st->clock.drift_ppb);
	}
}

/* The status, now that the sensor has settled (rig_sensor_settle()). */
static void status_answer(void *data)
{
	struct client *c = data;
	struct rig_status st;
	struct rec_result r;
	struct line l = { .len = 0 };
	struct op_handle *op = op_current();

	c->status_wait = false;
	rig_get_status(&st);
	status_rig(c, &st);
	status_sensor(c, &st);
	status_link(c, &st);
	if (rec_get_result(&r)) {
		line_summary(&l, &r);
		client_sendf(c, "data capture: %s", l.buf);
	} else {
		client_sendf(c, "data capture: none");
	}
	client_sendf(c, "data operation: %s%s%s", op ? "running (" : "none",
		     op ? op->ops->kind : "", op ? ")" : "");
	client_final(c, 0, "");
}

/*
 * A fresh reading of the sensor is taken on its own thread: the answer
 * waits for it (at most a second), other clients do not.
 */
static void req_status(struct client *c, int argc, char **argv)
{
	if (argc != 1) {
		client_final(c, -EINVAL, "usage: status");
		return;
	}
	if (rig_sensor_settle(status_answer, c)) {
		status_answer(c);
		return;
	}
	c->status_wait = true;
}

/* ---- press and plug ----------------------------------------------------- */

static struct client *press_client(struct op_handle *h)
{
	return (struct client *)((char *)h - offsetof(struct client, press_h));
}

static void press_stop(struct op_handle *h, enum op_stop why)
{
	rig_release(press_client(h));	/* press_done() answers */
}

static void press_detach(struct op_handle *h)
{
	rig_forget(press_client(h));	/* the key is still released */
}

static const struct op_handle_ops press_handle_ops = {
	.kind = "press",
	.stop = press_stop,
	.detach = press_detach,
};

static void press_done(int err, int64_t press_ns, void *data)
{
	struct client *c = data;

	if (err)
		client_finalf(c, err, "release failed: %s", sbrig_errmsg());
	else
		client_finalf(c, 0, "pressed_ns=%" PRId64 " released_ns=%"
			      PRId64, press_ns, sbrig_now_ns());
}

static void req_press(struct client *c, int argc, char **argv)
{
	int64_t dur = 0;
	int ret;

	if (argc < 2 || argc > 3) {
		client_final(c, -EINVAL, "usage: press KEY [DURATION]");
		return;
	}
	if (argc == 3 && duration_arg(c, "DURATION", argv[2], &dur) < 0)
		return;
	if (argc == 3 && dur <= 0) {
		client_final(c, -EINVAL, "DURATION: must be positive");
		return;
	}
	ret = rig_press(argv[1], dur, NULL, press_done, c);
	if (ret < 0) {
		client_error(c, ret);
		return;
	}
	c->press_h.ops = &press_handle_ops;
	c->op = &c->press_h;
}

static void req_plug(struct client *c, int argc, char **argv)
{
	int64_t t;
	int ret;

	if (argc != 2 || (strcmp(argv[1], "in") && strcmp(argv[1], "out"))) {
		client_final(c, -EINVAL, "usage: plug in|out");
		return;
	}
	ret = rig_plug(strcmp(argv[1], "in") == 0, &t);
	if (ret < 0)
		client_error(c, ret);
	else
		client_finalf(c, 0, "t_ns=%" PRId64, t);
}

/* ---- capture ------------------------------------------------------------ */

static void send_capture_progress(struct client *c, const struct rec_result *r)
{
	struct line l = { .len = 0 };

	line_add(&l, "progress");
	line_kvf(&l, "elapsed_ms", "%" PRId64, r->elapsed_ns / NS_PER_MS);
	line_kvf(&l, "samples", "%" PRIu64, r->n.samples);
	line_kvf(&l, "gaps", "%" PRIu64, r->n.gaps);
	line_kvf(&l, "events", "%" PRIu64, r->n.events);
	line_kvf(&l, "mean_mA", "%.3f", r->mean_mA);
	client_progress_coalesced(c, &l, PROGRESS_CAPTURE);
}

/*
 * The final answer of a request that recorded a capture: its summary,
 * whose status says why it failed if it did.
 */
static void final_summary(struct client *c, int err,
			  const struct rec_result *res)
{
	struct line l = { .len = 0 };

	line_summary(&l, res);
	client_final(c, err, l.buf);
}

static void capture_progress(void *ctx, const struct rec_result *now)
{
	send_capture_progress(ctx, now);
}

static void capture_end(void *ctx, int err, const struct rec_result *res)
{
	final_summary(ctx, err, res);
}

static const struct rec_client_ops capture_ops = {
	.progress = capture_progress,
	.end = capture_end,
};

static void req_capture(struct client *c, int argc, char **argv)
{
	static const char *const names[] = { "duration", "stats_every" };
	const char *vals[2] = { NULL, NULL };
	struct rec_opts o = { 0 };
	struct line l = { .len = 0 };
	int ret;

	if (dir_arg(c, argc, argv) < 0)
		return;
	o.dir = argv[1];
	if (options(c, argc - 2, argv + 2, names, vals, 2) < 0 ||
	    duration_arg(c, "duration", vals[0], &o.duration_ns) < 0 ||
	    duration_arg(c, "stats_every", vals[1], &o.stats_every_ns) < 0)
		return;
	ret = rec_start(&o, &capture_ops, c);
	if (ret < 0) {
		client_error(c, ret);
		return;
	}
	c->op = rec_handle();
	line_add(&l, "progress started");
	line_kv(&l, "dir", o.dir);
	client_send(c, &l);
}

/* ---- run ---------------------------------------------------------------- */

static void run_started(void *ctx, const char *dir,
			const struct sbrig_scenario *sc)
{
	struct line l = { .len = 0 };

	line_add(&l, "progress started");
	line_kv(&l, "dir", dir);
	line_kv(&l, "scenario", sc->path);
	line_kvf(&l, "steps", "%zu", sc->nsteps);
	client_send(ctx, &l);
}

static void run_step(void *ctx, size_t index, const struct sbrig_scenario *sc)
{
	const struct sbrig_step *s = &sc->steps[index];
	struct line l = { .len = 0 };
	char desc[600];

	sbrig_step_describe(s, true, desc, sizeof(desc));
	line_add(&l, "progress step=%zu/%zu line=%u %s", index + 1,
		 sc->nsteps, s->line, desc);
	client_progress_coalesced(ctx, &l, PROGRESS_STEP);
}

static void run_capture(void *ctx, const struct rec_result *now)
{
	send_capture_progress(ctx, now);
}

static void run_done(void *ctx, int err, const struct rec_result *res)
{
	final_summary(ctx, err, res);
}

static const struct run_client_ops run_ops = {
	.started = run_started,
	.step = run_step,
	.capture = run_capture,
	.done = run_done,
};

/* "run DIR bytes=N origin=PATH [stats_every=D]" + N bytes of scenario */
static void req_run(struct client *c, int argc, char **argv)
{
	static const char *const names[] = { "bytes", "origin", "stats_every" };
	const char *vals[3] = { NULL, NULL, NULL };
	char *end;
	unsigned long n;

	if (dir_arg(c, argc, argv) < 0 ||
	    options(c, argc - 2, argv + 2, names, vals, 3) < 0)
		return;
	if (!vals[0] || !vals[1]) {
		client_final(c, -EINVAL, "bytes= and origin= are required");
		return;
	}
	errno = 0;
	n = strtoul(vals[0], &end, 10);
	if (errno || *end || n == 0 || n > SRV_SCENARIO_MAX) {
		client_finalf(c, -EINVAL, "bytes: '%.40s' is not 1..%d",
			      vals[0], SRV_SCENARIO_MAX);
		return;
	}
	c->run_stats_ns = 0;
	if (duration_arg(c, "stats_every", vals[2], &c->run_stats_ns) < 0)
		return;
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", argv[1]);
	snprintf(c->run_origin, sizeof(c->run_origin), "%s", vals[1]);
	/* the body is kept as it comes (client_process()); while it does,
	 * the connection counts as idle: a client that announces a body
	 * and sends none holds no slot and no memory */
	c->body = n;
	c->nbody = 0;
	c->idle_since_ns = sbrig_now_ns();
	sched_timer_start(&c->idle, time_add(c->idle_since_ns, SRV_IDLE_NS),
			  client_idle, c);
}

/* The scenario body of a "run" request is complete. */
static void run_body(struct client *c)
{
	struct sbrig_scenario *sc;
	struct rec_opts o = { 0 };
	int ret;

	/* every byte counts: a NUL is an error at its line:col */
	sc = sbrig_scenario_parse_buf(c->body_buf, c->nbody, c->run_origin);
	free(c->body_buf);
	c->body_buf = NULL;
	c->body_size = 0;
	if (!sc) {
		client_error(c, errno ? -errno : -EINVAL);
		return;
	}
	o.dir = c->run_dir;
	o.stats_every_ns = c->run_stats_ns;
	ret = run_start(sc, &o, &run_ops, c, &c->op);	/* takes @sc */
	if (ret < 0)
		client_error(c, ret);
}

/* ---- latency ------------------------------------------------------------ */

static void lat_started(void *ctx, const struct lat_opts *o)
{
	struct client *c = ctx;
	struct line l = { .len = 0 };

	line_add(&l, "progress started");
	line_kvf(&l, "n", "%u", o->n);
	line_kv(&l, "key", o->key);
	line_kv(&l, "until", o->until);
	line_kv(&l, "dir", c->run_dir);
	client_send(c, &l);
}

static void lat_round(void *ctx, const struct lat_round *r)
{
	struct line l = { .len = 0 };

	line_add(&l, "progress i=%u/%u", r->i, r->n);
	switch (r->kind) {
	case LAT_MEASURED:
		line_kvf(&l, "latency_ns", "%" PRId64, r->latency_ns);
		line_kvf(&l, "uncert_ns", "%" PRId64, r->uncert_ns);
		break;
	case LAT_RETRY:
		line_kv(&l, "retry", r->why);
		line_kv(&l, "event", r->event);
		break;
	case LAT_NUDGE:
		line_kvf(&l, "nudge", "%u", r->nudge);
		break;
	}
	client_send(ctx, &l);
}

static void lat_done(void *ctx, int err, unsigned int measured,
		     const struct rec_result *res)
{
	struct client *c = ctx;
	struct line l = { .len = 0 };

	line_kvf(&l, "n", "%u", measured);
	line_kvf(&l, "requested", "%u", c->lat_n);
	line_summary(&l, res);
	client_final(c, err, l.buf);
}

static const struct lat_client_ops lat_ops = {
	.started = lat_started,
	.round = lat_round,
	.done = lat_done,
};

static void req_latency(struct client *c, int argc, char **argv)
{
	static const char *const names[] = { "n", "key", "press", "until",
					     "timeout", "stats_every" };
	const char *vals[6] = { "10", "power", NULL, "resume", "30s", NULL };
	struct lat_opts o = { 0 };
	unsigned long n;
	char *end;
	int ret;

	if (dir_arg(c, argc, argv) < 0 ||
	    options(c, argc - 2, argv + 2, names, vals, 6) < 0 ||
	    duration_arg(c, "press", vals[2], &o.press_ns) < 0 ||
	    duration_arg(c, "timeout", vals[4], &o.timeout_ns) < 0 ||
	    duration_arg(c, "stats_every", vals[5], &o.stats_every_ns) < 0)
		return;
	errno = 0;
	n = strtoul(vals[0], &end, 10);
	if (errno || *end || n == 0 || n > LAT_MAX_N) {
		client_finalf(c, -EINVAL, "n: '%.40s' is not 1..%d", vals[0],
			      LAT_MAX_N);
		return;
	}
	if (strlen(vals[1]) >= sizeof(o.key)) {
		client_finalf(c, -ENOENT, "key: no key '%.40s' on rig %s",
			      vals[1], rig_config()->name);
		return;
	}
	if (strlen(vals[3]) >= sizeof(o.until)) {
		client_finalf(c, -EINVAL, "until: bad event type '%.40s'",
			      vals[3]);
		return;
	}
	o.n = (unsigned int)n;
	snprintf(o.key, sizeof(o.key), "%s", vals[1]);
	snprintf(o.until, sizeof(o.until), "%s", vals[3]);
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", argv[1]);
	o.dir = c->run_dir;
	c->lat_n = o.n;
	ret = lat_start(&o, &lat_ops, c, &c->op);
	if (ret < 0)
		client_error(c, ret);
}

/* ---- agent -------------------------------------------------------------- */

static void agent_accepted(void *ctx, const char *text)
{
	struct line l = { .len = 0 };

	line_add(&l, "progress accepted %s", text);
	client_send(ctx, &l);
}

/*
 * " slept=quiet witness=link quiet_since_ns=T", " slept=asleep
 * witness=W detail=TEXT quiet_since_ns=T" (another witness saw it), or
 * " slept=resumed witness=event exit=STATE"
 */
static void line_slept(struct line *l, const struct agentop_result *r)
{
	const struct sleepwatch_result *s = &r->sleep;

	if (s->how == SLEEPWATCH_RESUMED) {
		line_kv(l, "slept", "resumed");
		line_kv(l, "witness", "event");
		line_kv(l, "exit", s->state);
		return;
	}
	line_kv(l, "slept", s->how == SLEEPWATCH_QUIET ? "quiet" : "asleep");
	line_kv(l, "witness", rig_witness_name(s->why.witness));
	if (s->how == SLEEPWATCH_ASLEEP)
		line_kv(l, "detail", s->why.detail);
	line_kvf(l, "quiet_since_ns", "%" PRId64, s->quiet_since_ns);
}

static void agent_done(void *ctx, const struct agentop_result *r)
{
	struct line l = { .len = 0 };

	if (r->err || !r->slept) {
		client_final(ctx, r->err, r->text);
		return;
	}
	line_slept(&l, r);
	line_kvf(&l, "elapsed_ms", "%" PRId64, r->elapsed_ns / NS_PER_MS);
	line_kv(&l, "text", r->text);
	client_final(ctx, 0, l.buf);
}

static const struct agentop_client_ops agent_ops = {
	.accepted = agent_accepted,
	.done = agent_done,
};

/* "agent TIMEOUT CMD..." : a command for the target agent, until DONE */
static void req_agent(struct client *c, int argc, char **argv)
{
	char cmd[512] = "";
	int64_t timeout_ns;
	size_t len = 0;
	int ret;

	if (argc < 3) {
		client_final(c, -EINVAL, "usage: agent TIMEOUT COMMAND "
			     "[ARGS...]");
		return;
	}
	if (duration_arg(c, "TIMEOUT", argv[1], &timeout_ns) < 0)
		return;
	for (int i = 2; i < argc; i++) {
		bool q = strchr(argv[i], ' ') != NULL;

		len += snprintf(cmd + len, sizeof(cmd) - len, "%s%s%s%s",
				i > 2 ? " " : "", q ? "\"" : "", argv[i],
				q ? "\"" : "");
		if (len >= sizeof(cmd)) {
			client_final(c, -E2BIG, "command too long");
			return;
		}
	}
	ret = agentop_start(cmd, timeout_ns, &agent_ops, c, &c->op);
	if (ret < 0)
		client_error(c, ret);
}

/* ---- target ------------------------------------------------------------- */

/*
 * "target VERB ARGS...": the target agent's commands with checked
 * arguments (and the sleep a state request causes, agentop.h), and the
 * target's recent events (evlog.h).
 */

/* Default timeouts of the target requests (timeout=D overrides). */
#define SRV_TARGET_TIMEOUT_NS (10 * NS_PER_S)
#define SRV_TARGET_STATE_TIMEOUT_NS (30 * NS_PER_S)
/* A hold's answer may come this long after its duration. */
#define SRV_HOLD_SLACK_NS (10 * NS_PER_S)

/* @w must be a word of @words; else answer "err 22 WHAT: ..." */
static int word_arg(struct client *c, const char *what,
		    const char *const *words, const char *w)
{
	char list[128];

	if (sbrig_proto_word(words, w) >= 0)
		return 0;
	client_finalf(c, -EINVAL, "%s: unknown %s '%.40s' (%s)", what, what,
		      w, sbrig_proto_words(words, ", ", list, sizeof(list)));
	return -EINVAL;
}

/* An optional "timeout=D" (only option of the agent's target requests). */
static int timeout_opt(struct client *c, int argc, char **argv,
		       int64_t *timeout_ns)
{
	static const char *const names[] = { "timeout" };
	const char *vals[1] = { NULL };

	if (options(c, argc, argv, names, vals, 1) < 0 ||
	    duration_arg(c, "timeout", vals[0], timeout_ns) < 0)
		return -EINVAL;
	if (vals[0] && *timeout_ns <= 0) {
		client_final(c, -EINVAL, "timeout: must be positive");
		return -EINVAL;
	}
	return 0;
}

static void target_row(void *ctx, const struct sbrig_blocker_stats *st,
		       uint32_t index, uint32_t count)
{
	struct client *c = ctx;
	struct line l = { .len = 0 };

	line_add(&l, "data blocker");
	line_kv(&l, "name", st->name);
	line_kvf(&l, "count", "%" PRIu64, st->count);
	line_kvf(&l, "wake_count", "%" PRIu64, st->wake_count);
	line_kvf(&l, "active_since_ns", "%" PRId64, st->active_since_ns);
	line_kvf(&l, "total_time_ns", "%" PRId64, st->total_time_ns);
	line_kvf(&l, "sleep_time_ns", "%" PRId64, st->sleep_time_ns);
	line_kvf(&l, "max_time_ns", "%" PRId64, st->max_time_ns);
	line_kvf(&l, "last_change_ns", "%" PRId64, st->last_change_ns);
	client_send(c, &l);
	c->agent_rows++;
}

static void target_done(void *ctx, const struct agentop_result *r)
{
	struct client *c = ctx;
	struct line l = { .len = 0 };
	const char *verb = c->agent_verb;

	c->agent_verb = NULL;
	if (r->err) {
		client_final(c, r->err, r->text);
		return;
	}
	if (!strcmp(verb, "blockers")) {
		line_kvf(&l, "rows", "%" PRIu32, c->agent_rows);
	} else {
		line_kv(&l, verb, c->agent_arg);	/* state=mem ... */
		if (r->slept)
			line_slept(&l, r);
		line_kvf(&l, "elapsed_ms", "%" PRId64,
			 r->elapsed_ns / NS_PER_MS);
		line_kv(&l, "text", r->text);
	}
	client_final(c, 0, l.buf);
}

static const struct agentop_client_ops target_ops = {
	.accepted = agent_accepted,
	.row = target_row,
	.done = target_done,
};

/* Send @cmd to the agent for the target request @verb (its argument @arg). */
static void target_agent(struct client *c, const char *verb, const char *arg,
			 const char *cmd, int64_t timeout_ns)
{
	int ret;

	c->agent_verb = verb;
	snprintf(c->agent_arg, sizeof(c->agent_arg), "%s", arg);
	c->agent_rows = 0;
	ret = agentop_start(cmd, timeout_ns, &target_ops, c, &c->op);
	if (ret < 0) {
		c->agent_verb = NULL;
		client_error(c, ret);
	}
}

static void target_policy(struct client *c, int argc, char **argv)
{
	int64_t timeout_ns = SRV_TARGET_TIMEOUT_NS;
	char cmd[64];

	if (argc < 1) {
		client_final(c, -EINVAL, "usage: target policy "
			     "forced|opportunistic [timeout=D]");
		return;
	}
	if (word_arg(c, "policy", sbrig_proto_policies, argv[0]) < 0 ||
	    timeout_opt(c, argc - 1, argv + 1, &timeout_ns) < 0)
		return;
	snprintf(cmd, sizeof(cmd), "policy %s", argv[0]);
	target_agent(c, "policy", argv[0], cmd, timeout_ns);
}

static void target_state(struct client *c, int argc, char **argv)
{
	int64_t timeout_ns = SRV_TARGET_STATE_TIMEOUT_NS;
	char cmd[64];

	if (argc < 1) {
		client_final(c, -EINVAL, "usage: target state "
			     "on|mem|standby|freeze [timeout=D]");
		return;
	}
	if (word_arg(c, "state", sbrig_proto_states, argv[0]) < 0 ||
	    timeout_opt(c, argc - 1, argv + 1, &timeout_ns) < 0)
		return;
	snprintf(cmd, sizeof(cmd), "state %s", argv[0]);
	target_agent(c, "state", argv[0], cmd, timeout_ns);
}

/* A blocker name the link carries unchanged (link-protocol.md). */
static bool blocker_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > SBRIG_PROTO_STR_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
			return false;
	return true;
}

static void target_hold(struct client *c, int argc, char **argv)
{
	char cmd[SBRIG_PROTO_STR_MAX + 64];
	int64_t dur = 0;

	if (argc != 2) {
		client_final(c, -EINVAL, "usage: target hold NAME DURATION");
		return;
	}
	if (!blocker_name_ok(argv[0])) {
		client_finalf(c, -EINVAL, "NAME: '%.40s' is not a blocker name "
			      "(1-%d printable ASCII characters, no '\"' or "
			      "'\\\\')", argv[0], SBRIG_PROTO_STR_MAX);
		return;
	}
	if (duration_arg(c, "DURATION", argv[1], &dur) < 0)
		return;
	if (dur < NS_PER_MS) {
		client_final(c, -EINVAL, "DURATION: must be at least 1ms");
		return;
	}
	snprintf(cmd, sizeof(cmd), "hold \"%s\" %" PRId64, argv[0],
		 dur / NS_PER_MS);
	target_agent(c, "hold", argv[0], cmd, time_add(dur,
						       SRV_HOLD_SLACK_NS));
}

static void target_blockers(struct client *c, int argc, char **argv)
{
	int64_t timeout_ns = SRV_TARGET_TIMEOUT_NS;

	if (timeout_opt(c, argc, argv, &timeout_ns) < 0)
		return;
	target_agent(c, "blockers", "", "stats", timeout_ns);
}

/* "data event seq=N ... arg=A cut=0 obj=N" */
static void send_event(struct client *c, const struct sbrig_event *ev)
{
	struct line l = { .len = 0 };

	line_add(&l, "data event");
	line_kvf(&l, "seq", "%" PRIu64, ev->seq);
	line_kvf(&l, "target_t_ns", "%" PRId64, ev->target_t_ns);
	line_kvf(&l, "host_t_ns", "%" PRId64, ev->host_t_ns);
	line_kvf(&l, "uncert_ns", "%" PRId64, ev->uncert_ns);
	line_kv(&l, "boot_id", ev->boot_id);
	line_kv(&l, "type", ev->type);
	line_kv(&l, "arg", ev->arg);
	line_kvf(&l, "cut", "%d", ev->cut ? 1 : 0);
	line_kvf(&l, "obj", "%" PRIu64, ev->obj);
	client_send(c, &l);
}

static struct client *follow_client(struct op_handle *h)
{
	return (struct client *)((char *)h - offsetof(struct client, follow_h));
}

/*
 * A new event for a follower: sent while the client keeps up; dropped and
 * counted while its output holds more than SRV_COALESCE_AT bytes, and the
 * count reported ("data dropped events=K") before the next one sent.
 */
static void follow_event(void *ctx, const struct sbrig_event *ev)
{
	struct client *c = ctx;
	struct line l = { .len = 0 };

	if (c->dead)
		return;
	if (c->nout >= SRV_COALESCE_AT) {
		c->follow_dropped++;
		c->follow_owed++;
		return;
	}
	if (c->follow_owed) {
		line_add(&l, "data dropped");
		line_kvf(&l, "events", "%" PRIu64, c->follow_owed);
		client_send(c, &l);
		c->follow_owed = 0;
	}
	send_event(c, ev);
	c->follow_sent++;
}

/* End a follower's request; @evicted: to make room for a new one. */
static void follow_end(struct client *c, bool evicted)
{
	evlog_unfollow(&c->follower);
	client_finalf(c, 0, "events=%" PRIu64 " dropped=%" PRIu64 "%s",
		      c->follow_sent, c->follow_dropped,
		      evicted ? " evicted=yes" : "");
}

static void follow_stop(struct op_handle *h, enum op_stop why)
{
	follow_end(follow_client(h), false);
}

static void follow_detach(struct op_handle *h)
{
	evlog_unfollow(&follow_client(h)->follower);
}

static const struct op_handle_ops follow_handle_ops = {
	.kind = "events",
	.stop = follow_stop,
	.detach = follow_detach,
};

static bool following(const struct client *c)
{
	return c && !c->dead && c->busy && c->op == &c->follow_h;
}

/*
 * Room for a new follower of @c's process: refused beyond
 * SRV_FOLLOWERS_PER_PEER of one process (err 16); beyond
 * SRV_MAX_FOLLOWERS in all, the follower following the longest is ended
 * ("ok ... evicted=yes"). 0 or -EBUSY (answered).
 */
static int follow_room(struct client *c)
{
	struct client *oldest = NULL;
	unsigned int all = 0, mine = 0;

	for (int i = 0; i < SRV_MAX_CLIENTS; i++) {
		struct client *f = srv.clients[i];

		if (!following(f))
			continue;
		all++;
		if (c->peer_pid && f->peer_pid == c->peer_pid)
			mine++;
		if (!oldest || f->follow_since_ns < oldest->follow_since_ns)
			oldest = f;
	}
	if (mine >= SRV_FOLLOWERS_PER_PEER) {
		client_finalf(c, -EBUSY, "follow: this process (pid %ld) "
			      "follows %u times already (at most %d)",
			      (long)c->peer_pid, mine, SRV_FOLLOWERS_PER_PEER);
		return -EBUSY;
	}
	if (all >= SRV_MAX_FOLLOWERS) {
		log_info("client %d: follower ended to make room for client "
			 "%d (%d followers at most)", oldest->fd, c->fd,
			 SRV_MAX_FOLLOWERS);
		follow_end(oldest, true);
	}
	return 0;
}

static void target_events(struct client *c, int argc, char **argv)
{
	static const char *const names[] = { "n", "follow" };
	const char *vals[2] = { NULL, "no" };
	size_t kept = evlog_count(), from = 0;
	unsigned long n = kept;
	char *end;

	if (options(c, argc, argv, names, vals, 2) < 0)
		return;
	if (vals[0]) {
		errno = 0;
		n = strtoul(vals[0], &end, 10);
		if (errno || *end || vals[0][0] < '0' || vals[0][0] > '9' ||
		    n > EVLOG_LEN) {
			client_finalf(c, -EINVAL, "n: '%.40s' is not 0..%d",
				      vals[0], EVLOG_LEN);
			return;
		}
	}
	if (strcmp(vals[1], "yes") && strcmp(vals[1], "no")) {
		client_finalf(c, -EINVAL, "follow: '%.40s' is not yes or no",
			      vals[1]);
		return;
	}
	if (!strcmp(vals[1], "yes") && follow_room(c) < 0)
		return;
	if (n < kept)
		from = kept - n;
	c->follow_sent = c->follow_dropped = c->follow_owed = 0;
	for (size_t i = from; i < kept; i++) {
		send_event(c, evlog_get(i));
		c->follow_sent++;
	}
	if (!strcmp(vals[1], "no")) {
		client_finalf(c, 0, "events=%" PRIu64 " kept=%zu "
			      "dropped=%" PRIu64, c->follow_sent, kept,
			      evlog_dropped());
		return;
	}
	/* until "stop": the client's own, or the daemon's shutdown */
	c->follower = (struct evlog_follower){ .event = follow_event,
					       .ctx = c };
	evlog_follow(&c->follower);
	c->follow_since_ns = sbrig_now_ns();
	c->follow_h.ops = &follow_handle_ops;
	c->op = &c->follow_h;
}

static const struct {
	const char *verb;
	void (*fn)(struct client *c, int argc, char **argv);
} target_requests[] = {
	{ "policy", target_policy },
	{ "state", target_state },
	{ "hold", target_hold },
	{ "blockers", target_blockers },
	{ "events", target_events },
};

static void req_target(struct client *c, int argc, char **argv)
{
	if (argc >= 2) {
		for (size_t i = 0; i < ARRAY_SIZE(target_requests); i++) {
			if (!strcmp(argv[1], target_requests[i].verb)) {
				target_requests[i].fn(c, argc - 2, argv + 2);
				return;
			}
		}
	}
	client_finalf(c, -EINVAL, "usage: target policy|state|hold|blockers|"
		      "events ...%s%.40s%s", argc >= 2 ? " (not '" : "",
		      argc >= 2 ? argv[1] : "", argc >= 2 ? "')" : "");
}

/* ---- stop and version --------------------------------------------------- */

static void req_stop(struct client *c, int argc, char **argv)
{
	/* not the client's own operation (that is handled in client_line) */
	struct op_handle *h = op_current();
	const char *kind;

	if (!h)
		h = rec_handle();
	if (!h) {
		client_final(c, -ENOENT, "nothing is running");
		return;
	}
	kind = h->ops->kind;
	h->ops->stop(h, OP_STOP_OTHER);
	client_finalf(c, 0, "stopped the running %s", kind);
}

static void req_version(struct client *c, int argc, char **argv)
{
	client_finalf(c, 0, "sbrigd %s", sbrig_version);
}

static const struct {
	const char *verb;
	void (*fn)(struct client *c, int argc, char **argv);
} requests[] = {
	{ "status", req_status },
	{ "press", req_press },
	{ "plug", req_plug },
	{ "capture", req_capture },
	{ "run", req_run },
	{ "latency", req_latency },
	{ "agent", req_agent },
	{ "target", req_target },
	{ "stop", req_stop },
	{ "version", req_version },
};

/* ---- input -------------------------------------------------------------- */

static void client_line(struct client *c, char *line)
{
	char *argv[SRV_MAX_ARGS];
	int argc;

	argc = split(line, argv, SRV_MAX_ARGS);
	if (argc == 0)
		return;		/* empty line: ignored */
	c->busy = true;
	sched_timer_stop(&c->idle);
	if (argc < 0) {
		client_final(c, argc, argc == -E2BIG ? "too many arguments" :
			     "unterminated quote");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
		if (strcmp(argv[0], requests[i].verb) == 0) {
			requests[i].fn(c, argc, argv);
			return;
		}
	}
	client_finalf(c, -EINVAL, "unknown request '%.40s'", argv[0]);
}

/*
 * Room for @need bytes of a run's body (the scenario, at most
 * SRV_SCENARIO_MAX): doubled as it arrives. 0 or -ENOMEM.
 */
static int body_reserve(struct client *c, size_t need)
{
	size_t size = c->body_size ? c->body_size : 4096;
	char *p;

	if (need <= c->body_size)
		return 0;
	while (size < need)
		size *= 2;
	p = realloc(c->body_buf, size);
	if (!p)
		return -ENOMEM;
	c->body_buf = p;
	c->body_size = size;
	return 0;
}

/* Remove the first @len bytes of the input buffer. */
static void consume_input(struct client *c, size_t len)
{
	memmove(c->in, c->in + len, c->nin - len);
	c->nin -= len;
}

/*
 * Handle what the input buffer holds, at most one request: scenario body
 * bytes, a "stop" for the request in progress, or the next request.
 */
static void client_process(struct client *c)
{
	char line[SRV_LINE_MAX + 1];
	char *nl;
	size_t len;

	if (c->dead || !c->nin)
		return;
	if (c->body) {
		size_t take = c->nin < c->body ? c->nin : c->body;

		if (body_reserve(c, c->nbody + take) < 0) {
			c->body = 0;
			client_final(c, -ENOMEM, "no memory for the scenario");
			client_kill(c);	/* the rest of the body is no request */
			return;
		}
		memcpy(c->body_buf + c->nbody, c->in, take);
		c->nbody += take;
		c->body -= take;
		consume_input(c, take);
		if (!c->body) {
			sched_timer_stop(&c->idle);	/* busy from now on */
			run_body(c);
		}
		return;
	}
	nl = memchr(c->in, '\n', c->nin);
	if (!nl) {
		if (c->nin >= SRV_LINE_MAX && !c->busy) {
			client_sendf(c, "err %d request line longer than %d "
				     "bytes", E2BIG, SRV_LINE_MAX);
			client_kill(c);
		}
		return;
	}
	len = (size_t)(nl + 1 - c->in);
	if (c->busy) {
		/*
		 * While a request runs, "stop" as the next line stops it (its
		 * final answer follows); any other request waits its turn.
		 */
		if (strncmp(c->in, "stop\n", len) &&
		    strncmp(c->in, "stop\r\n", len))
			return;
		consume_input(c, len);
		if (c->op)
			c->op->ops->stop(c->op, OP_STOP_OWN);
		return;
	}
	if (srv.closing)
		return;
	memcpy(line, c->in, len);
	consume_input(c, len);
	/* the request is what precedes "\n", or "\r\n" (a trailing \r is
	 * ignored): look for a NUL in that, then end the string there */
	len--;
	if (len && line[len - 1] == '\r')
		len--;
	line[len] = '\0';
	if (memchr(line, '\0', len)) {
		c->busy = true;
		client_finalf(c, -EINVAL, "bad request: NUL byte");
	} else {
		client_line(c, line);
	}
	/* the next request (after an empty line, too), or the body of this
	 * one, on a later turn */
	if (c->nin && !c->dead && (!c->busy || c->body))
		sched_defer(&c->kick, client_kick, c);
}

/* ---- connections -------------------------------------------------------- */

static void client_free(struct client *c)
{
	for (int i = 0; i < SRV_MAX_CLIENTS; i++)
		if (srv.clients[i] == c)
			srv.clients[i] = NULL;
	/* nobody reports to this client any more */
	if (c->status_wait)
		rig_sensor_forget(c);
	if (c->op)
		c->op->ops->detach(c->op);
	c->op = NULL;
	sched_timer_stop(&c->kick);
	sched_timer_stop(&c->idle);
	sched_fd_del(c->fd);
	close(c->fd);
	free(c->out);
	free(c->body_buf);
	free(c);
}

static void client_kick(void *data)
{
	struct client *c = data;

	if (c->dead) {
		client_free(c);
		return;
	}
	client_process(c);
	client_flush(c);
}

/*
 * Idle: no request in progress, or a run request whose body is still
 * coming (the client's own transfer). Idle connections are closed after
 * SRV_IDLE_NS, and the one idle the longest makes room for a new one.
 */
static bool client_is_idle(const struct client *c)
{
	return !c->dead && (!c->busy || c->body);
}

static void client_idle(void *data)
{
	struct client *c = data;

	if (!client_is_idle(c))
		return;
	log_dbg("client %d: idle for %" PRId64 " s, closed", c->fd,
		SRV_IDLE_NS / NS_PER_S);
	client_kill(c);
}

static void client_flush(struct client *c)
{
	int k;

	while (!c->dead) {
		while (c->nout) {
			ssize_t n = send(c->fd, c->out, c->nout,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				if (errno == EINTR)
					continue;
				client_kill(c);
				return;
			}
			memmove(c->out, c->out + n, c->nout - (size_t)n);
			c->nout -= (size_t)n;
		}
		/* a coalesced progress line, once there is room */
		k = next_pending(c);
		if (k < 0 || c->nout >= SRV_COALESCE_AT)
			break;
		client_put(c, c->pending[k], strlen(c->pending[k]));
		c->pending[k][0] = '\0';
		c->pending_first = !k;
	}
	if (c->nout == 0 && c->out_size > 65536) {	/* after a burst */
		free(c->out);
		c->out = NULL;
		c->out_size = 0;
	}
	/* a full input buffer waits for the request in progress to end */
	if (!c->dead)
		sched_fd_events(c->fd, (c->nin < SRV_LINE_MAX ? POLLIN : 0) |
				(c->nout ? POLLOUT : 0));
}

static void client_io(int fd, short revents, void *data)
{
	struct client *c = data;

	if (revents & POLLOUT)
		client_flush(c);
	if (!c->dead && (revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = recv(fd, c->in + c->nin, SRV_LINE_MAX - c->nin, 0);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			c->dead = true;
		} else if (n > 0) {
			c->nin += (size_t)n;
			if (client_is_idle(c)) {
				c->idle_since_ns = sbrig_now_ns();
				sched_timer_start(&c->idle,
						  time_add(c->idle_since_ns,
							   SRV_IDLE_NS),
						  client_idle, c);
			}
			client_process(c);
		}
		if (!c->dead)
			client_flush(c);	/* follow the input buffer's room */
	}
	if (c->dead)
		client_free(c);
}

/* Close the connection idle the longest to make room; false if none is. */
static bool evict_idle(void)
{
	struct client *victim = NULL;

	for (int i = 0; i < SRV_MAX_CLIENTS; i++) {
		struct client *c = srv.clients[i];

		if (c && client_is_idle(c) &&
		    (!victim || c->idle_since_ns < victim->idle_since_ns))
			victim = c;
	}
	if (!victim)
		return false;
	log_info("client %d: closed to make room for a new one (idle %" PRId64
		 " ms)", victim->fd,
		 (sbrig_now_ns() - victim->idle_since_ns) / NS_PER_MS);
	client_sendf(victim, "err %d closed: too many clients, this one idle",
		     EUSERS);
	client_free(victim);
	return true;
}

/* The process at the other end of @fd (0: unknown). */
static pid_t peer_pid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return 0;
	return cred.pid;
}

static int free_slot(void)
{
	for (int i = 0; i < SRV_MAX_CLIENTS; i++)
		if (!srv.clients[i])
			return i;
	return -1;
}

static const char srv_busy[] = "err 24 too many clients\n";

static void listener_resume(void *data)
{
	if (srv.fd >= 0)
		sched_fd_events(srv.fd, POLLIN);
}

/*
 * No file descriptor left for a new connection (EMFILE, ENFILE): give
 * the spare one up to take the connection, tell it "err 24" and close
 * it, so that the client is answered and the connection leaves the
 * listen queue (left there, it would keep the listener readable and the
 * loop spinning). Without a spare, accepting pauses for 100 ms.
 */
static void refuse_no_fd(int fd)
{
	int cfd;

	if (srv.spare >= 0) {
		close(srv.spare);
		srv.spare = -1;
		cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd >= 0) {
			(void)!send(cfd, srv_busy, sizeof(srv_busy) - 1,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
			close(cfd);
		}
		srv.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		log_warn("a new client refused: no file descriptor left");
		return;
	}
	log_warn("no file descriptor left: accepting paused for 100 ms");
	sched_fd_events(fd, 0);
	sched_timer_start(&srv.listen_again,
			  time_add(sbrig_now_ns(), 100 * NS_PER_MS),
			  listener_resume, NULL);
}

static void listener_io(int fd, short revents, void *data)
{
	for (int k = 0; k < SRV_ACCEPT_BATCH; k++) {
		struct client *c;
		int cfd, slot;

		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				refuse_no_fd(fd);
			return;
		}
		slot = free_slot();
		if (slot < 0 && evict_idle())
			slot = free_slot();
		c = slot < 0 ? NULL : calloc(1, sizeof(*c));
		if (!c || sched_fd_add(cfd, POLLIN, client_io, c) < 0) {
			/* every slot busy (cannot happen: SRV_RESERVED), or
			 * the daemon's own failure: no memory */
			(void)!send(cfd, srv_busy, sizeof(srv_busy) - 1,
				    MSG_NOSIGNAL);
			free(c);
			close(cfd);
			continue;
		}
		c->fd = cfd;
		c->peer_pid = peer_pid(cfd);
		c->idle_since_ns = sbrig_now_ns();
		sched_timer_start(&c->idle, time_add(c->idle_since_ns,
						     SRV_IDLE_NS),
				  client_idle, c);
		srv.clients[slot] = c;
	}
}

/* Refuse a live socket; remove a stale one. */
static int check_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, ret;

	if (lstat(sa->sun_path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return sbrig_set_error(-EEXIST, "%s exists and is not a socket",
				       sa->sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sbrig_set_error(-errno, "socket: %s", strerror(errno));
	ret = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (ret == 0)
		return sbrig_set_error(-EADDRINUSE, "another sbrigd is serving "
				       "%s", sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return sbrig_set_error(-errno, "cannot remove stale %s: %s",
				       sa->sun_path, strerror(errno));
	log_info("removed stale socket %s", sa->sun_path);
	return 0;
}

/**
 * srv_init() - listen on the Unix socket @path (mode 0660)
 * @path: socket path; its parent directory is created if missing
 *
 * Return: 0, or -errno with sbrig_errmsg() (-EADDRINUSE: another daemon
 * answers on @path).
 */
int srv_init(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int ret;

	srv.closing = false;
	if (strlen(path) >= sizeof(sa.sun_path))
		return sbrig_set_error(-ENAMETOOLONG, "socket path too long: "
				       "%s", path);
	strcpy(sa.sun_path, path);
	ret = sbrig_mkdir_parent(path, 0755);
	if (ret < 0)
		return ret;
	ret = check_stale(&sa);
	if (ret < 0)
		return ret;
	srv.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv.fd < 0)
		return sbrig_set_error(-errno, "socket: %s", strerror(errno));
	old = umask(0117);
	ret = bind(srv.fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret < 0) {
		ret = sbrig_set_error(-errno, "bind %s: %s", path,
				      strerror(errno));
		goto close_fd;
	}
	if (chmod(path, 0660) < 0 || stat(path, &st) < 0 ||
	    listen(srv.fd, 64) < 0) {
		ret = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		goto unlink_path;
	}
	srv.dev = st.st_dev;
	srv.ino = st.st_ino;
	snprintf(srv.path, sizeof(srv.path), "%s", path);
	ret = sched_fd_add(srv.fd, POLLIN, listener_io, NULL);
	if (ret < 0)
		goto unlink_path;
	srv.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	log_info("listening on %s", path);
	return 0;

unlink_path:
	unlink(path);
close_fd:
	close(srv.fd);
	srv.fd = -1;
	return ret;
}

void srv_shutdown(void)
{
	struct op_handle *h;

	srv.closing = true;
	/* stop what runs while the clients can still hear about it */
	h = op_current();
	if (h)
		h->ops->stop(h, OP_STOP_SHUTDOWN);
	h = rec_handle();
	if (h)
		h->ops->stop(h, OP_STOP_SHUTDOWN);
	for (int i = 0; i < SRV_MAX_CLIENTS; i++) {
		struct client *c = srv.clients[i];

		if (c && c->busy && c->op)
			c->op->ops->stop(c->op, OP_STOP_SHUTDOWN);
	}
}

void srv_fini(void)
{
	struct stat st;

	srv.closing = true;
	for (int i = 0; i < SRV_MAX_CLIENTS; i++) {
		struct client *c = srv.clients[i];

		if (!c)
			continue;
		/* say goodbye to whoever still waits for an answer (an
		 * operation that has not ended reports to it no more) */
		if (c->busy && !c->dead) {
			if (c->op)
				c->op->ops->detach(c->op);
			client_final(c, -ESHUTDOWN, "sbrigd is shutting down");
		}
		client_flush(c);
		client_free(c);
	}
	sched_timer_stop(&srv.listen_again);
	if (srv.spare >= 0)
		close(srv.spare);
	srv.spare = -1;
	if (srv.fd < 0)
		return;
	sched_fd_del(srv.fd);
	close(srv.fd);
	srv.fd = -1;
	/* remove the socket only if it is still ours */
	if (stat(srv.path, &st) == 0 && st.st_dev == srv.dev &&
	    st.st_ino == srv.ino)
		unlink(srv.path);
}
