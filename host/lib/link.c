// SPDX-License-Identifier: GPL-2.0
/*
 * link.c - the host end of the target link (see sbrig/link.h and
 * host/doc/link-protocol.md).
 *
 * Layers, bottom up:
 *
 *  - transports (link-serial.c, link-tcp.c): an ops table chosen by URI
 *    prefix; open (possibly in progress), read, write, close;
 *  - framing: received bytes are cut into lines; each line is decoded by
 *    proto.c (the frame may follow a kernel message on the same line);
 *  - the session: a small state machine
 *
 *	DOWN --reconnect timer--> CONNECTING --open--> HELLO_SENT
 *	HELLO_SENT --agent HELLO--> UP; any state --EOF/error--> DOWN
 *	UP --silence--> HELLO_SENT (TCP: the connection stays open)
 *	HELLO_SENT, UP --silence--> DOWN (serial: reopened)
 *
 *    A target that suspends goes silent with its user space frozen; when
 *    it wakes, its agent goes on streaming as if nothing happened. So
 *    while the host waits for the answer to its HELLO, any frame from the
 *    agent (which means it runs again) makes the host say HELLO again at
 *    once (at most every HELLO_KICK_NS) rather than at its next retry.
 *
 *    The session
 *    acknowledges events cumulatively, asks for retransmission when
 *    a seq is skipped or a BEAT says more was sent than arrived, pings
 *    for the clock model and retries commands until their R arrives.
 *
 * The target's clock across a suspend: CLOCK_BOOTTIME goes on counting
 * during the sleep, but the kernel adds the sleep time as measured by a
 * persistent clock (on x86 the CMOS RTC, whole seconds), so after a wake
 * the target clock can be off by up to a second from the model fitted
 * before. The model is suspect once an "enter" event arrives (the target
 * was in a sleep state: it sends that event only after it woke) or a frame
 * ends a silence longer than two ping periods plus 500 ms (the agent was
 * frozen: the target slept; a short sleep hides in the silence between
 * two pings, hence "enter") or one in which a ping went unanswered for
 * SLEPT_PING_NS while the model settles (pings sent to a sleeping target
 * may be answered after the wake, with its new clock): events up to the
 * cycle's "exit"/"resume" (the suspend/enter sent late) are still mapped
 * with it, then the model is reset, and later events are held until
 * CLOCK_SETTLE_SAMPLES fresh PONGs (pinged every FAST_PING_NS) map them.
 * PONGs that come first are stamped after the wake: they are dropped
 * for SUSPECT_HOLD_NS, then one resets the model too. Held events are
 * let go without waiting for more samples (mapped with the samples
 * there are, if any) when the agent falls silent
 * for SETTLE_QUIET_NS (the target slept again before the model settled),
 * when the model is reset again (mapped before the reset: a later model
 * belongs to a later wake) or after the timeout.
 *
 * Everything the caller sees goes through a queue of struct
 * sbrig_link_msg; the link never blocks and never calls back.
 *
 * The queue is bounded (SBRIG_LINK_QUEUE_MAX): a line yields at most one
 * message and a frame is at least SBRIG_MIN_LINE bytes, so do_read() reads
 * no more bytes than the free slots can take (back-pressure) and stops
 * asking for POLLIN while the queue is full; the bytes wait in the
 * transport (the kernel's socket or tty buffer) and, when those overflow,
 * in the agent's ring, from which RESEND recovers what a UART dropped.
 * Events held for the clock are let go when the queue is full, so the
 * PONGs they wait for can be read. The ring grows by doubling and shrinks
 * by half when it is a quarter full, so a burst's memory is given back.
 *
 * Input from the agent is checked beyond its CRC: a target time outside
 * 0..SBRIG_TARGET_T_MAX (EV, PONG, BEAT) and a seq at or above
 * SBRIG_LINK_SEQ_MAX (EV, GAP, HELLO, BEAT) are impossible and refused,
 * counted in bad_times / bad_seqs; the link stays up. An EV refused for
 * its time that is next in order is consumed (no RESEND loop) and reported
 * as a GAP of that one seq. No seq can reach SBRIG_LINK_SEQ_MAX, so
 * next_seq never wraps (a wrap made old records acceptable again).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbrig/link.h>
#include <sbrig/proto.h>

#include "internal.h"
#include "link-transport.h"

#define MS			1000000LL
#define RX_MAX			(2 * SBRIG_PROTO_FRAME_MAX)
#define TX_MAX			(64 * 1024)
#define CMD_MAX			64
#define PING_MAX		4
#define ACK_EVERY		32
#define RECONNECT_MAX_FACTOR	8
#define HELLO_KICK_NS		(200 * MS)
#define CLOCK_SETTLE_SAMPLES	4	/* after a restart, before events */
#define FAST_PING_NS		(250 * MS)
#define SETTLE_QUIET_NS		(1000 * MS)	/* pinged at FAST_PING_NS */
#define SLEPT_PING_NS		(2 * FAST_PING_NS)	/* no answer: it slept */
#define SUSPECT_HOLD_NS		(2000 * MS)	/* PONGs wait for "exit" */
#define Q_MIN			64	/* queue ring slots at least */
#define Q_RESERVE		8	/* slots not filled by reading (DOWN) */
/* shortest line that yields a message: "@sb1 R" ... " *xxxxxxxx\n" */
#define SBRIG_MIN_LINE		16

enum link_state {
	LINK_DOWN,
	LINK_CONNECTING,
	LINK_HELLO_SENT,
	LINK_UP,
};

struct pending_cmd {
	uint32_t cmd_id;
	char text[SBRIG_PROTO_FRAME_MAX / 2];
	int64_t sent_ns;	/* 0: not sent on this connection */
};

struct ping {
	uint64_t token;
	int64_t sent_ns;
};

struct sbrig_link {
	char *uri;
	struct sbrig_link_opts opts;
	const struct link_transport_ops *ops;
	void *tr;			/* transport state */
	enum link_state state;
	bool ever_connected;

	int64_t reconnect_at_ns;
	int64_t reconnect_delay_ns;
	int64_t last_rx_ns;		/* silence is measured from here */
	int64_t up_ns;			/* when the link last came up */
	int64_t clock_reset_ns;		/* when the clock model was last reset */
	bool clock_suspect;		/* the target slept: see the top */
	int64_t suspect_ns;		/* since when */
	unsigned int fast_pings;	/* pings left at FAST_PING_NS */
	unsigned int settle_pongs;	/* PONGs since the clock restart */
	int64_t opened_ns;
	int64_t hello_sent_ns;
	bool hello_kick;		/* say HELLO again at hello_sent + kick */
	int64_t next_ping_ns;
	int64_t last_resend_ns;
	uint64_t last_resend_seq;
	uint64_t acked_seq_plus1;	/* 0: nothing acknowledged yet */

	char rx[RX_MAX];
	size_t rx_len;
	bool rx_discard;		/* in an oversize line */
	char tx[TX_MAX];
	size_t tx_len;

	struct pending_cmd cmds[CMD_MAX];
	unsigned int n_cmds;
	uint32_t next_cmd_id;

	struct ping pings[PING_MAX];
	uint64_t next_token;

	struct sbrig_clock *clock;
	struct sbrig_link_status st;

	struct sbrig_link_msg *q;	/* ring of decoded messages */
	size_t q_cap, q_head, q_len;
	size_t q_release;		/* head entries let go without a hold */
	bool rx_paused;			/* the queue is full: not reading */
};

/* ------------------------------------------------------------- queue -- */

/* Move the ring into @cap slots (>= q_len), oldest first. */
static int q_resize(struct sbrig_link *l, size_t cap)
{
	struct sbrig_link_msg *n = calloc(cap, sizeof(*n));
	size_t i;

	if (!n)
		return -ENOMEM;
	for (i = 0; i < l->q_len; i++)
		n[i] = l->q[(l->q_head + i) % l->q_cap];
	free(l->q);
	l->q = n;
	l->q_cap = cap;
	l->q_head = 0;
	return 0;
}

/* Free slots that reading may fill (the reserve is for the link's news). */
static size_t q_room(const struct sbrig_link *l)
{
	size_t used = l->q_len + Q_RESERVE;

	return used >= SBRIG_LINK_QUEUE_MAX ? 0 : SBRIG_LINK_QUEUE_MAX - used;
}

/* After a dequeue: give memory back once the ring is a quarter full. */
static void q_shrink(struct sbrig_link *l)
{
	if (l->q_cap > Q_MIN && l->q_len <= l->q_cap / 4)
		q_resize(l, l->q_cap / 2);	/* ENOMEM: keep the big one */
}

static struct sbrig_link_msg *q_push(struct sbrig_link *l,
				     enum sbrig_link_msg_type type)
{
	struct sbrig_link_msg *m;

	if (l->q_len >= SBRIG_LINK_QUEUE_MAX) {
		/* cannot happen: reading stops while the queue is full */
		l->st.queue_drops++;
		sbrig_err("link %s: queue full, message dropped", l->uri);
		return NULL;
	}
	if (l->q_len == l->q_cap) {
		size_t cap = l->q_cap ? l->q_cap * 2 : Q_MIN;

		if (cap > SBRIG_LINK_QUEUE_MAX)
			cap = SBRIG_LINK_QUEUE_MAX;
		if (q_resize(l, cap)) {
			l->st.queue_drops++;
			sbrig_err("link %s: out of memory, message dropped",
				  l->uri);
			return NULL;
		}
	}
	m = &l->q[(l->q_head + l->q_len++) % l->q_cap];
	memset(m, 0, sizeof(*m));
	m->type = type;
	return m;
}

/*
 * Events decoded before the clock model had its first sample (the HELLO
 * retransmission arrives before the first PONG) are mapped when they are
 * dequeued; while the link is up and young, the queue waits for that
 * first PONG rather than hand out events without host time.
 */
/*
 * After a restart (the target slept) the model needs a few samples before
 * it maps well (the first PONGs of a waking target can be slow): events
 * wait for CLOCK_SETTLE_SAMPLES of them, or the timeout. PONGs are counted,
 * not samples retained: one with a short round trip can drop the others
 * from the model's band, and the count would go down again.
 */
static bool clock_settling(struct sbrig_link *l, int64_t now)
{
	struct sbrig_clock_state cs;

	if (!l->clock_reset_ns ||
	    now - l->clock_reset_ns >= (int64_t)l->opts.timeout_ms * MS)
		return false;
	sbrig_clock_get_state(l->clock, &cs);
	return !cs.samples || l->settle_pongs < CLOCK_SETTLE_SAMPLES;
}

static bool hold_for_clock(struct sbrig_link *l, struct sbrig_link_msg *m)
{
	struct sbrig_event *e = &m->event;
	int64_t now = sbrig_now_ns();

	if (m->type != SBRIG_LINK_EVENT || e->uncert_ns != -1)
		return false;
	if (l->q_release)	/* older than the model: see clock_restart() */
		return false;
	if (!clock_settling(l, now) &&
	    sbrig_clock_to_host(l->clock, e->target_t_ns, &e->host_t_ns,
				&e->uncert_ns) == 0)
		return false;
	/* a full queue cannot wait: the PONGs are behind it, unread */
	if (q_room(l) > 1 && !l->rx_paused && l->state == LINK_UP &&
	    strcmp(e->boot_id, l->st.boot_id) == 0 &&
	    now - l->last_rx_ns < SETTLE_QUIET_NS &&
	    now - (l->up_ns > l->clock_reset_ns ? l->up_ns :
		   l->clock_reset_ns) < (int64_t)l->opts.timeout_ms * MS)
		return true;
	/* let go: with the samples there are (a model settling has a few) */
	if (sbrig_clock_to_host(l->clock, e->target_t_ns, &e->host_t_ns,
				&e->uncert_ns)) {
		e->host_t_ns = 0;
		e->uncert_ns = -1;
	}
	return false;
}

/*
 * Take out the first command answer or clock sample from behind events
 * held for the clock: a command's answer does not wait for the clock.
 * Events (and the link's news: HELLO, GAP, DOWN) keep their order.
 */
static int next_past_held(struct sbrig_link *l, struct sbrig_link_msg *msg)
{
	enum sbrig_link_msg_type t;
	size_t i, j;

	for (i = 1; i < l->q_len; i++) {
		t = l->q[(l->q_head + i) % l->q_cap].type;
		if (t == SBRIG_LINK_REPLY || t == SBRIG_LINK_DONE ||
		    t == SBRIG_LINK_STATS || t == SBRIG_LINK_CLOCK)
			break;
	}
	if (i == l->q_len)
		return 0;
	*msg = l->q[(l->q_head + i) % l->q_cap];
	for (j = i; j + 1 < l->q_len; j++)
		l->q[(l->q_head + j) % l->q_cap] =
			l->q[(l->q_head + j + 1) % l->q_cap];
	l->q_len--;
	if (l->q_release > i)
		l->q_release--;
	q_shrink(l);
	return 1;
}

int sbrig_link_next(struct sbrig_link *l, struct sbrig_link_msg *msg)
{
	if (!l->q_len)
		return 0;
	if (hold_for_clock(l, &l->q[l->q_head]))
		return next_past_held(l, msg);
	*msg = l->q[l->q_head];
	l->q_head = (l->q_head + 1) % l->q_cap;
	l->q_len--;
	if (l->q_release)
		l->q_release--;
	q_shrink(l);
	return 1;
}

/* ---------------------------------------------------------- transmit -- */

static void send_msg(struct sbrig_link *l, const struct sbrig_proto_msg *m)
{
	char buf[SBRIG_PROTO_FRAME_MAX + 1];
	int n;

	if (l->state < LINK_HELLO_SENT)
		return;
	n = sbrig_proto_encode(m, buf, sizeof(buf));
	if (n < 0) {
		sbrig_warn("link %s: cannot encode %s frame", l->uri,
			   sbrig_proto_type_name(m->type));
		return;
	}
	if (l->tx_len + (size_t)n > sizeof(l->tx)) {
		/* the target does not read: drop, retries will recover */
		sbrig_dbg("link %s: transmit buffer full", l->uri);
		return;
	}
	memcpy(l->tx + l->tx_len, buf, (size_t)n);
	l->tx_len += (size_t)n;
}

static void send_hello(struct sbrig_link *l, int64_t now)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_HELLO };

	m.hhello.proto = SBRIG_PROTO_REVISION;
	snprintf(m.hhello.boot_id, sizeof(m.hhello.boot_id), "%s",
		 l->st.boot_id);
	m.hhello.next_seq = l->st.next_seq;
	send_msg(l, &m);
	l->hello_sent_ns = now;
	l->hello_kick = false;
}

static void send_ack(struct sbrig_link *l)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_ACK };

	if (!l->st.next_seq || l->acked_seq_plus1 == l->st.next_seq)
		return;
	m.ack.seq = l->st.next_seq - 1;
	send_msg(l, &m);
	l->acked_seq_plus1 = l->st.next_seq;
}

/* Ask for a retransmission from next_seq, at most once per retry period. */
static void request_resend(struct sbrig_link *l, int64_t now)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_RESEND };

	if (l->last_resend_seq == l->st.next_seq &&
	    now - l->last_resend_ns < (int64_t)l->opts.cmd_retry_ms * MS)
		return;
	m.ack.seq = l->st.next_seq;
	send_msg(l, &m);
	l->last_resend_seq = l->st.next_seq;
	l->last_resend_ns = now;
	l->st.resends++;
}

static void send_cmds(struct sbrig_link *l, int64_t now)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_CMD };
	const char *p;
	unsigned int i;

	if (l->state != LINK_UP)
		return;
	for (i = 0; i < l->n_cmds; i++) {
		struct pending_cmd *c = &l->cmds[i];

		if (c->sent_ns &&
		    now - c->sent_ns < (int64_t)l->opts.cmd_retry_ms * MS)
			continue;
		m.cmd.cmd_id = c->cmd_id;
		p = c->text;
		sbrig_proto_token(&p, m.cmd.verb, sizeof(m.cmd.verb));
		while (*p == ' ')
			p++;
		snprintf(m.cmd.args, sizeof(m.cmd.args), "%s", p);
		send_msg(l, &m);
		c->sent_ns = now;
	}
}

static void send_ping(struct sbrig_link *l, int64_t now)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_H_PING };
	struct ping *slot;

	m.ping.token = ++l->next_token;
	slot = &l->pings[m.ping.token % PING_MAX];
	slot->token = m.ping.token;
	send_msg(l, &m);
	/* stamp after queuing: flush happens right after, in this call */
	slot->sent_ns = now;
	if (l->fast_pings) {
		l->fast_pings--;
		l->next_ping_ns = now + FAST_PING_NS;
	} else {
		l->next_ping_ns = now + (int64_t)l->opts.ping_interval_ms * MS;
	}
}

static int flush_tx(struct sbrig_link *l)
{
	ssize_t n;

	while (l->tx_len) {
		n = l->ops->write(l->tr, l->tx, l->tx_len);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		memmove(l->tx, l->tx + n, l->tx_len - (size_t)n);
		l->tx_len -= (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------ session -- */

/*
 * Close the transport; reconnect after the current delay, which doubles
 * (up to a maximum) when @backoff: the open failed or the peer hung up.
 */
static void link_down_ex(struct sbrig_link *l, int64_t now, const char *why,
			 bool backoff)
{
	struct sbrig_link_msg *m;
	int64_t max = (int64_t)l->opts.reconnect_ms * MS * RECONNECT_MAX_FACTOR;

	if (l->tr)
		l->ops->close(l->tr);
	l->tr = NULL;
	if (l->state == LINK_UP) {
		m = q_push(l, SBRIG_LINK_DOWN);
		if (m)
			snprintf(m->text, sizeof(m->text), "%s", why);
		sbrig_info("link %s down: %s", l->uri, why);
	}
	sbrig_dbg("link %s: closed (%s)", l->uri, why);
	l->state = LINK_DOWN;
	l->st.connected = false;
	l->rx_len = 0;
	l->rx_discard = false;
	l->rx_paused = false;
	l->tx_len = 0;
	l->reconnect_at_ns = now + l->reconnect_delay_ns;
	if (!backoff)
		return;
	l->reconnect_delay_ns *= 2;
	if (l->reconnect_delay_ns > max)
		l->reconnect_delay_ns = max;
}

static void link_down(struct sbrig_link *l, int64_t now, const char *why)
{
	link_down_ex(l, now, why, true);
}

/*
 * The agent has been silent for the timeout. The session is over (the
 * caller hears SBRIG_LINK_DOWN); a transport that reports its own failures
 * stays open and the host keeps saying HELLO until the agent runs again,
 * the others are reopened (at the base delay: opening them worked).
 */
static void link_silent(struct sbrig_link *l, int64_t now)
{
	struct sbrig_link_msg *m;
	unsigned int i;

	if (l->ops->reopen_on_silence || l->state != LINK_UP) {
		link_down_ex(l, now, "timeout: the agent is silent", false);
		return;
	}
	m = q_push(l, SBRIG_LINK_DOWN);
	if (m)
		snprintf(m->text, sizeof(m->text), "%s",
			 "timeout: the agent is silent");
	sbrig_info("link %s down: the agent is silent (connection kept)",
		   l->uri);
	l->state = LINK_HELLO_SENT;
	l->st.connected = false;
	for (i = 0; i < l->n_cmds; i++)
		l->cmds[i].sent_ns = 0;
	send_hello(l, now);
}

static void on_open(struct sbrig_link *l, int64_t now)
{
	unsigned int i;

	l->state = LINK_HELLO_SENT;
	l->opened_ns = now;
	l->last_rx_ns = now;
	if (l->ever_connected)
		l->st.reconnects++;
	l->ever_connected = true;
	for (i = 0; i < l->n_cmds; i++)
		l->cmds[i].sent_ns = 0;
	l->acked_seq_plus1 = 0;
	send_hello(l, now);
}

/*
 * The target woke: fit the clock model afresh, ping at once. Events still
 * held for the old model (the target slept again before it settled) are
 * mapped with what it has and let go: the new one is for a later wake.
 */
static void clock_restart(struct sbrig_link *l, int64_t now)
{
	size_t i;

	sbrig_dbg("link %s: target slept: clock model restarted", l->uri);
	for (i = 0; i < l->q_len; i++) {
		struct sbrig_link_msg *m = &l->q[(l->q_head + i) % l->q_cap];
		struct sbrig_event *e = &m->event;

		if (m->type == SBRIG_LINK_EVENT && e->uncert_ns == -1 &&
		    sbrig_clock_to_host(l->clock, e->target_t_ns,
					&e->host_t_ns, &e->uncert_ns)) {
			e->host_t_ns = 0;
			e->uncert_ns = -1;
		}
	}
	l->q_release = l->q_len;
	sbrig_clock_reset(l->clock);
	l->clock_reset_ns = now;
	l->clock_suspect = false;
	l->next_ping_ns = now;
	l->fast_pings = 2 * CLOCK_SETTLE_SAMPLES;
	l->settle_pongs = 0;
}

/* The model may no longer fit the target's clock: see the top. */
static void clock_suspect(struct sbrig_link *l, int64_t now)
{
	if (!l->clock_suspect) {
		sbrig_dbg("link %s: the target may have slept", l->uri);
		l->suspect_ns = now;
	}
	l->clock_suspect = true;
}

static void handle_hello(struct sbrig_link *l, const struct sbrig_proto_msg *p,
			 int64_t now)
{
	struct sbrig_link_msg *m;
	bool changed = strcmp(p->hello.boot_id, l->st.boot_id) != 0;
	bool new_boot = changed && l->st.boot_id[0];
	bool log_restart = false;

	if (changed) {
		if (new_boot)
			l->st.reboots++;
		snprintf(l->st.boot_id, sizeof(l->st.boot_id), "%s",
			 p->hello.boot_id);
		l->st.next_seq = 0;
		l->acked_seq_plus1 = 0;
		sbrig_clock_reset(l->clock);
	} else if (p->hello.next_seq < l->st.next_seq) {
		/*
		 * Same boot, but the agent (which reads the whole log before
		 * it says HELLO) holds fewer events than we have seen: the
		 * module was reloaded and numbers its records from 0 again.
		 * Take its log from the start instead of dropping it all as
		 * duplicates; the clock is the same boot's.
		 */
		l->st.log_restarts++;
		l->st.next_seq = p->hello.oldest_seq;
		l->acked_seq_plus1 = 0;
		log_restart = true;
	}
	m = q_push(l, SBRIG_LINK_HELLO);
	if (m) {
		snprintf(m->hello.boot_id, sizeof(m->hello.boot_id), "%s",
			 p->hello.boot_id);
		snprintf(m->hello.agent, sizeof(m->hello.agent), "%s",
			 p->hello.agent);
		snprintf(m->hello.kernel, sizeof(m->hello.kernel), "%s",
			 p->hello.kernel);
		snprintf(m->hello.module, sizeof(m->hello.module), "%s",
			 p->hello.module);
		m->hello.new_boot = new_boot;
		m->hello.log_restart = log_restart;
	}
	if (!p->hello.answer) {
		/* the agent (re)started and waits for us: tell it where we
		 * are (it streams only after a host HELLO) */
		l->state = LINK_HELLO_SENT;
		l->st.connected = false;
		send_hello(l, now);
		return;
	}
	if (l->state != LINK_UP)
		l->up_ns = now;
	l->state = LINK_UP;
	l->st.connected = true;
	l->reconnect_delay_ns = (int64_t)l->opts.reconnect_ms * MS;
	l->next_ping_ns = now;
	send_cmds(l, now);
}

/* A target CLOCK_BOOTTIME that can be (see SBRIG_TARGET_T_MAX). */
static bool target_time_ok(int64_t t_ns)
{
	return t_ns >= 0 && t_ns <= SBRIG_TARGET_T_MAX;
}

static void handle_ev(struct sbrig_link *l, const struct sbrig_proto_msg *p,
		      int64_t now)
{
	struct sbrig_link_msg *m;
	struct sbrig_event *e;

	if (p->ev.seq >= SBRIG_LINK_SEQ_MAX) {
		l->st.bad_seqs++;	/* would wrap next_seq: see the top */
		return;
	}
	if (p->ev.seq < l->st.next_seq)
		return;			/* duplicate (retransmission) */
	if (p->ev.seq > l->st.next_seq) {
		request_resend(l, now);	/* go back: drop until it arrives */
		return;
	}
	l->st.next_seq++;
	if (!target_time_ok(p->ev.t_ns)) {
		/* consumed (a RESEND would bring it back), reported lost */
		l->st.bad_times++;
		l->st.events_lost++;
		sbrig_warn("link %s: event %" PRIu64 " refused: impossible "
			   "target time %" PRId64 " ns", l->uri, p->ev.seq,
			   p->ev.t_ns);
		m = q_push(l, SBRIG_LINK_GAP);
		if (m)
			m->gap.from_seq = m->gap.to_seq = p->ev.seq;
		return;
	}
	if (l->clock_suspect && (!strcmp(p->ev.type, "exit") ||
				 !strcmp(p->ev.type, "resume")))
		clock_restart(l, now);
	m = q_push(l, SBRIG_LINK_EVENT);
	if (!m)
		return;
	e = &m->event;
	e->seq = p->ev.seq;
	e->target_t_ns = p->ev.t_ns;
	snprintf(e->boot_id, sizeof(e->boot_id), "%s", l->st.boot_id);
	snprintf(e->type, sizeof(e->type), "%s", p->ev.type);
	snprintf(e->arg, sizeof(e->arg), "%s", p->ev.arg);
	e->cut = p->ev.cut;
	e->obj = p->ev.obj;
	if (clock_settling(l, now) || sbrig_clock_to_host(l->clock, e->target_t_ns, &e->host_t_ns,
				&e->uncert_ns)) {
		e->host_t_ns = 0;
		e->uncert_ns = -1;
	}
	if (!strcmp(e->type, "lost"))
		l->st.events_lost += strtoull(e->arg, NULL, 10);
	/* the target was in a sleep state (its agent, frozen until the
	 * wake, sends this late): its clock steps at the wake */
	if (!strcmp(e->type, "enter"))
		clock_suspect(l, now);
	if (l->st.next_seq - l->acked_seq_plus1 >= ACK_EVERY)
		send_ack(l);
}

static void handle_gap(struct sbrig_link *l, const struct sbrig_proto_msg *p,
		       int64_t now)
{
	struct sbrig_link_msg *m;

	if (p->gap.to_seq >= SBRIG_LINK_SEQ_MAX) {
		l->st.bad_seqs++;	/* would wrap next_seq */
		return;
	}
	if (p->gap.to_seq < l->st.next_seq)
		return;			/* already past it */
	if (p->gap.from_seq > l->st.next_seq) {
		request_resend(l, now);
		return;
	}
	m = q_push(l, SBRIG_LINK_GAP);
	if (m) {
		m->gap.from_seq = l->st.next_seq;
		m->gap.to_seq = p->gap.to_seq;
	}
	l->st.events_lost += p->gap.to_seq + 1 - l->st.next_seq;
	l->st.next_seq = p->gap.to_seq + 1;
}

static void handle_reply(struct sbrig_link *l, const struct sbrig_proto_msg *p)
{
	struct sbrig_link_msg *m;
	unsigned int i;
	bool known = false;

	if (p->type == SBRIG_PROTO_T_R) {
		for (i = 0; i < l->n_cmds; i++) {
			if (l->cmds[i].cmd_id != p->reply.cmd_id)
				continue;
			l->cmds[i] = l->cmds[--l->n_cmds];
			known = true;
			break;
		}
		if (!known)
			return;		/* a duplicate reply to a retry */
	}
	m = q_push(l, p->type == SBRIG_PROTO_T_R ? SBRIG_LINK_REPLY :
						   SBRIG_LINK_DONE);
	if (!m)
		return;
	m->cmd_id = p->reply.cmd_id;
	m->err = -p->reply.err;
	snprintf(m->text, sizeof(m->text), "%s", p->reply.text);
}

static void handle_st(struct sbrig_link *l, const struct sbrig_proto_msg *p)
{
	struct sbrig_link_msg *m;
	struct sbrig_blocker_stats *s;
	unsigned int i;

	for (i = 0; i < l->n_cmds; i++)
		if (l->cmds[i].cmd_id == p->st.cmd_id)
			break;
	if (i == l->n_cmds)
		return;			/* rows of a snapshot already answered */
	m = q_push(l, SBRIG_LINK_STATS);
	if (!m)
		return;
	m->snapshot = p->st.cmd_id;
	m->index = p->st.idx;
	m->count = p->st.n;
	s = &m->stats;
	snprintf(s->name, sizeof(s->name), "%s", p->st.name);
	s->count = p->st.count;
	s->wake_count = p->st.wake_count;
	s->active_since_ns = p->st.active_since;
	s->total_time_ns = p->st.total_time;
	s->sleep_time_ns = p->st.sleep_time;
	s->max_time_ns = p->st.max_time;
	s->last_change_ns = p->st.last_change;
}

static void handle_pong(struct sbrig_link *l, const struct sbrig_proto_msg *p,
			int64_t now)
{
	struct ping *slot = &l->pings[p->pong.token % PING_MAX];
	struct sbrig_link_msg *m;
	int ret;

	if (slot->token != p->pong.token || !slot->sent_ns)
		return;			/* stale or duplicate */
	if (!target_time_ok(p->pong.t_boot_ns)) {
		l->st.bad_times++;
		slot->sent_ns = 0;
		return;
	}
	if (slot->sent_ns < l->clock_reset_ns) {
		slot->sent_ns = 0;	/* asked before the target slept */
		return;
	}
	if (l->clock_suspect) {
		/* stamped after the wake: not for the model of before, which
		 * maps the records logged before the sleep that may still
		 * come; the wake's "exit" restarts the model. A PONG after
		 * SUSPECT_HOLD_NS without one does (no "exit" comes where
		 * the agent was only silent, or its log lost it). */
		if (now - l->suspect_ns < SUSPECT_HOLD_NS) {
			sbrig_dbg("link %s: clock sample after a sleep dropped "
				  "(round trip %" PRId64 " us)", l->uri,
				  (now - slot->sent_ns) / 1000);
			slot->sent_ns = 0;
			return;
		}
		clock_restart(l, now);
	}
	ret = sbrig_clock_add_ping(l->clock, slot->sent_ns, now,
				   p->pong.t_boot_ns);
	l->settle_pongs++;
	m = q_push(l, SBRIG_LINK_CLOCK);
	if (m) {
		m->clock.host_send_ns = slot->sent_ns;
		m->clock.host_recv_ns = now;
		m->clock.target_ns = p->pong.t_boot_ns;
		m->clock.retained = ret == 0;
	}
	slot->sent_ns = 0;
}

/*
 * HELLO and BEAT with impossible numbers are refused whole (EV, GAP and
 * PONG are checked where they are handled: some of them are consumed).
 */
static bool frame_values_ok(struct sbrig_link *l,
			    const struct sbrig_proto_msg *p)
{
	switch (p->type) {
	case SBRIG_PROTO_T_HELLO:
		if (p->hello.next_seq >= SBRIG_LINK_SEQ_MAX ||
		    p->hello.oldest_seq > p->hello.next_seq) {
			l->st.bad_seqs++;
			return false;
		}
		return true;
	case SBRIG_PROTO_T_BEAT:
		if (p->beat.next_seq >= SBRIG_LINK_SEQ_MAX) {
			l->st.bad_seqs++;
			return false;
		}
		if (!target_time_ok(p->beat.t_boot_ns)) {
			l->st.bad_times++;
			return false;
		}
		return true;
	default:
		return true;
	}
}

static void handle_frame(struct sbrig_link *l, const struct sbrig_proto_msg *p,
			 int64_t now)
{
	if (l->state < LINK_HELLO_SENT)
		return;
	/* the agent runs (again: e.g. its target woke) but has not answered
	 * our HELLO, which it may never have received: say it again now */
	if (l->state == LINK_HELLO_SENT && p->type != SBRIG_PROTO_T_HELLO) {
		if (now - l->hello_sent_ns >= HELLO_KICK_NS)
			send_hello(l, now);
		else
			l->hello_kick = true;	/* at hello_sent + kick */
	}
	if (!frame_values_ok(l, p))
		return;
	/* the event stream needs the HELLO handshake; replies and pongs
	 * do not (an agent restarting mid-command still answers) */
	if ((p->type == SBRIG_PROTO_T_EV || p->type == SBRIG_PROTO_T_GAP ||
	     p->type == SBRIG_PROTO_T_BEAT) && l->state != LINK_UP)
		return;
	switch (p->type) {
	case SBRIG_PROTO_T_HELLO:
		handle_hello(l, p, now);
		break;
	case SBRIG_PROTO_T_EV:
		handle_ev(l, p, now);
		break;
	case SBRIG_PROTO_T_GAP:
		handle_gap(l, p, now);
		break;
	case SBRIG_PROTO_T_BEAT:
		if (p->beat.next_seq > l->st.next_seq)
			request_resend(l, now);
		send_ack(l);
		break;
	case SBRIG_PROTO_T_R:
	case SBRIG_PROTO_T_D:
		handle_reply(l, p);
		break;
	case SBRIG_PROTO_T_ST:
		handle_st(l, p);
		break;
	case SBRIG_PROTO_T_PONG:
		handle_pong(l, p, now);
		break;
	default:
		break;
	}
}

/*
 * Was a ping left unanswered, with nothing else heard, for longer than an
 * awake agent takes (SLEPT_PING_NS)? Then the target slept since it was
 * sent, and whatever comes now (its PONG first, from a port that kept the
 * ping) is stamped with the target's clock after the wake, which steps:
 * the model is suspect. Asked only while the model settles, pinged every
 * FAST_PING_NS (a short sleep between two pings at the ping interval
 * leaves no such trace: hence "enter"); a loaded host's slow answer then
 * costs a restart, not a wrong mapping.
 */
static bool unanswered_ping(struct sbrig_link *l, int64_t now)
{
	if (!clock_settling(l, now))
		return false;
	for (unsigned int i = 0; i < PING_MAX; i++) {
		const struct ping *p = &l->pings[i];

		if (p->sent_ns && p->sent_ns >= l->st.last_rx_ns &&
		    now - p->sent_ns > SLEPT_PING_NS)
			return true;
	}
	return false;
}

static void handle_line(struct sbrig_link *l, const char *line, size_t len,
			int64_t now)
{
	struct sbrig_proto_msg p;
	size_t off = 0;
	int ret;

	ret = sbrig_proto_decode(line, len, true, &p, &off);
	if (ret == 0) {
		l->st.noise_bytes += len + 1;
		return;
	}
	l->st.noise_bytes += off;
	if (ret < 0) {
		l->st.frames_bad++;
		sbrig_dbg("link %s: bad frame (%s): %.*s", l->uri,
			  ret == SBRIG_PROTO_EVERSION ? "version" : "crc/syntax",
			  (int)(len > 200 ? 200 : len), line);
		/* whatever it was, something may be missing now */
		if (l->state == LINK_UP)
			request_resend(l, now);
		return;
	}
	l->st.frames_ok++;
	if (l->st.last_rx_ns && (now - l->st.last_rx_ns >
				 2 * (int64_t)l->opts.ping_interval_ms * MS +
				 500 * MS ||
				 unanswered_ping(l, now))) {
		unsigned int i;

		/* the target slept and runs again, maybe briefly: commands
		 * sent meanwhile were lost, send them now */
		clock_suspect(l, now);
		for (i = 0; i < l->n_cmds; i++)
			l->cmds[i].sent_ns = 0;
	}
	l->last_rx_ns = now;
	l->st.last_rx_ns = now;
	handle_frame(l, &p, now);
}

/*
 * Read and handle what the transport has, no more than the queue can take:
 * a line yields at most one message and is at least SBRIG_MIN_LINE bytes
 * (the first line completed may have started in an earlier read: hence
 * room - 1). With the queue full, l->rx_paused is set and nothing is read.
 * *@got says whether any byte came (or the read paused with bytes waiting).
 */
static int do_read(struct sbrig_link *l, int64_t now, bool *got)
{
	char buf[4096];
	ssize_t n;
	size_t i, room, want;

	*got = false;
	for (;;) {
		room = q_room(l);
		if (room <= 1) {
			if (!l->rx_paused)
				l->st.rx_pauses++;
			l->rx_paused = true;
			*got = true;
			return 0;
		}
		l->rx_paused = false;
		want = (room - 1) * SBRIG_MIN_LINE;
		if (want > sizeof(buf))
			want = sizeof(buf);
		n = l->ops->read(l->tr, buf, want);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return 0;
		*got = true;
		for (i = 0; i < (size_t)n; i++) {
			char c = buf[i];

			if (c == '\n') {
				if (l->rx_discard) {
					l->rx_discard = false;
					l->st.noise_bytes++;
				} else {
					handle_line(l, l->rx, l->rx_len, now);
				}
				l->rx_len = 0;
				continue;
			}
			if (l->rx_discard) {
				l->st.noise_bytes++;
				continue;
			}
			if (l->rx_len == SBRIG_PROTO_FRAME_MAX) {
				/* oversize: keep only the tail that may still
				 * hold a frame after a long kernel message */
				size_t keep = SBRIG_PROTO_FRAME_MAX / 2;
				char *at = memmem(l->rx + keep, l->rx_len - keep,
						  "@sb", 3);

				if (!at) {
					l->st.noise_bytes += l->rx_len;
					l->rx_len = 0;
				} else {
					size_t drop = (size_t)(at - l->rx);

					l->st.noise_bytes += drop;
					memmove(l->rx, at, l->rx_len - drop);
					l->rx_len -= drop;
					if (l->rx_len == SBRIG_PROTO_FRAME_MAX) {
						l->st.frames_bad++;
						l->rx_len = 0;
						l->rx_discard = true;
						l->st.noise_bytes++;
						continue;
					}
				}
			}
			l->rx[l->rx_len++] = c;
		}
	}
}

/* ---------------------------------------------------------------- API -- */

static const struct link_transport_ops *const transports[] = {
	&link_serial_ops,
	&link_tcp_ops,
};

int link_transport_lookup(const char *uri,
			  const struct link_transport_ops **ops)
{
	size_t i, n;
	int ret;

	for (i = 0; i < SBRIG_ARRAY_SIZE(transports); i++) {
		n = strlen(transports[i]->prefix);
		if (!strncmp(uri, transports[i]->prefix, n)) {
			*ops = transports[i];
			return 0;
		}
	}
	ret = sbrig_link_check_uri(uri);	/* says why */
	if (!ret)
		ret = sbrig_set_error(-EINVAL, "'%s': no transport", uri);
	sbrig_prefix_error("link");
	return ret;
}

struct sbrig_link *sbrig_link_new(const char *uri,
				  const struct sbrig_link_opts *opts)
{
	struct sbrig_link *l;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l) {
		sbrig_set_error(-ENOMEM, "link %s: out of memory", uri);
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		l->opts = *opts;
	if (!l->opts.ping_interval_ms)
		l->opts.ping_interval_ms = 1000;
	if (!l->opts.timeout_ms)
		l->opts.timeout_ms = 3000;
	if (!l->opts.reconnect_ms)
		l->opts.reconnect_ms = 500;
	if (!l->opts.cmd_retry_ms)
		l->opts.cmd_retry_ms = 1000;
	l->reconnect_delay_ns = (int64_t)l->opts.reconnect_ms * MS;
	l->uri = strdup(uri);
	l->clock = sbrig_clock_new();
	if (!l->uri || !l->clock) {
		ret = -ENOMEM;
		sbrig_set_error(ret, "link %s: out of memory", uri);
		goto err_free;
	}
	ret = link_transport_lookup(uri, &l->ops);
	if (ret)
		goto err_free;
	ret = l->ops->check(uri);
	if (ret)
		goto err_free;
	/* ids survive a host restart without colliding with the agent's
	 * memory of recent commands */
	l->next_cmd_id = (uint32_t)(sbrig_now_ns() / 1000) * 2654435761u;
	if (!l->next_cmd_id)
		l->next_cmd_id = 1;
	l->state = LINK_DOWN;
	l->reconnect_at_ns = 0;
	return l;

err_free:
	sbrig_link_free(l);
	errno = -ret;
	return NULL;
}

void sbrig_link_free(struct sbrig_link *l)
{
	if (!l)
		return;
	if (l->tr)
		l->ops->close(l->tr);
	sbrig_clock_free(l->clock);
	free(l->q);
	free(l->uri);
	free(l);
}

int sbrig_link_pollfd(struct sbrig_link *l, struct pollfd *pfd)
{
	if (l->state == LINK_DOWN || !l->tr)
		return 0;
	pfd->fd = l->ops->fd(l->tr);
	/* back-pressure: with the queue full, the bytes wait in the kernel */
	pfd->events = q_room(l) > 1 ? POLLIN : 0;
	pfd->revents = 0;
	if (l->state == LINK_CONNECTING || l->tx_len)
		pfd->events |= POLLOUT;
	return pfd->fd >= 0;
}

/* Does the silence timeout apply in the current state? */
static bool silence_matters(const struct sbrig_link *l)
{
	return l->state == LINK_UP ||
	       (l->state == LINK_HELLO_SENT && l->ops->reopen_on_silence);
}

int64_t sbrig_link_deadline(struct sbrig_link *l)
{
	int64_t d, retry = (int64_t)l->opts.cmd_retry_ms * MS;
	unsigned int i;

	switch (l->state) {
	case LINK_DOWN:
		return l->reconnect_at_ns;
	case LINK_CONNECTING:
		return l->opened_ns + (int64_t)l->opts.timeout_ms * MS;
	case LINK_HELLO_SENT:
		d = l->hello_sent_ns + (l->hello_kick ? HELLO_KICK_NS : retry);
		break;
	case LINK_UP:
	default:
		d = l->next_ping_ns;
		for (i = 0; i < l->n_cmds; i++)
			if (l->cmds[i].sent_ns + retry < d)
				d = l->cmds[i].sent_ns + retry;
		break;
	}
	if (silence_matters(l) &&
	    l->last_rx_ns + (int64_t)l->opts.timeout_ms * MS < d)
		d = l->last_rx_ns + (int64_t)l->opts.timeout_ms * MS;
	return d;
}

static void try_open(struct sbrig_link *l, int64_t now)
{
	int ret;

	ret = l->ops->open(l->uri, &l->tr);
	if (ret < 0) {
		l->tr = NULL;
		link_down(l, now, sbrig_errmsg());
		return;
	}
	l->opened_ns = now;
	if (ret == 0) {
		l->state = LINK_CONNECTING;
		return;
	}
	on_open(l, now);
}

int sbrig_link_process(struct sbrig_link *l, short revents, int64_t now)
{
	short polled;
	bool got;
	int ret;

	if (l->state == LINK_DOWN) {
		if (now >= l->reconnect_at_ns)
			try_open(l, now);
		if (l->state == LINK_DOWN)
			return 0;
	}
	if (l->state == LINK_CONNECTING) {
		if (!(revents & (POLLOUT | POLLERR | POLLHUP))) {
			if (now - l->opened_ns >= (int64_t)l->opts.timeout_ms * MS)
				link_down(l, now, "connect timed out");
			return 0;
		}
		ret = l->ops->connected(l->tr);
		if (ret < 0) {
			link_down(l, now, sbrig_errmsg());
			return 0;
		}
		if (ret == 0)
			return 0;
		on_open(l, now);
		revents = 0;
	}
	polled = revents;
	if (l->rx_paused) {
		/* the caller did not take the messages: bytes are waiting
		 * unread, so the agent is not silent */
		l->last_rx_ns = now;
		l->st.last_rx_ns = now;
		if (q_room(l) > 1)
			revents |= POLLIN;	/* read what waited */
	}
	if (revents & (POLLIN | POLLERR | POLLHUP)) {
		ret = do_read(l, now, &got);
		if (ret < 0) {
			link_down(l, now, sbrig_errmsg());
			return 0;
		}
		/*
		 * A hung-up port (a USB serial adapter unplugged: the kernel
		 * hangs its tty up) polls readable and reads nothing, for
		 * ever: without this the loop would spin until a write
		 * failed. What it still had was read above.
		 */
		if ((polled & POLLHUP) ||
		    ((polled & POLLIN) && !got && l->ops->reopen_on_silence)) {
			link_down(l, now, (polled & POLLHUP) ?
				  "hung up (the port was unplugged or closed)" :
				  "hung up (readable, but nothing to read: the port was unplugged?)");
			return 0;
		}
	}
	if (silence_matters(l) &&
	    now - l->last_rx_ns >= (int64_t)l->opts.timeout_ms * MS) {
		link_silent(l, now);
		if (l->state == LINK_DOWN)
			return 0;
	}
	if (l->state == LINK_HELLO_SENT &&
	    now - l->hello_sent_ns >= (l->hello_kick ? HELLO_KICK_NS :
				      (int64_t)l->opts.cmd_retry_ms * MS))
		send_hello(l, now);
	if (l->state == LINK_UP) {
		send_cmds(l, now);
		if (now >= l->next_ping_ns)
			send_ping(l, now);
	}
	if (flush_tx(l) < 0)
		link_down(l, now, sbrig_errmsg());
	return 0;
}

void sbrig_link_cancel(struct sbrig_link *l, uint32_t cmd_id)
{
	for (unsigned int i = 0; i < l->n_cmds; i++) {
		if (l->cmds[i].cmd_id != cmd_id)
			continue;
		l->cmds[i] = l->cmds[--l->n_cmds];
		return;
	}
}

int sbrig_link_command(struct sbrig_link *l, const char *cmd,
		       uint32_t *cmd_id)
{
	struct pending_cmd *c;
	char verb[16];
	const char *p = cmd;
	size_t i;

	if (l->n_cmds == CMD_MAX)
		return sbrig_set_error(-ENOBUFS, "link %s: %u commands pending",
				       l->uri, CMD_MAX);
	if (strlen(cmd) >= sizeof(c->text))
		return sbrig_set_error(-EINVAL, "link %s: command too long",
				       l->uri);
	for (i = 0; cmd[i]; i++)
		if ((unsigned char)cmd[i] < 0x20 || (unsigned char)cmd[i] > 0x7e)
			return sbrig_set_error(-EINVAL,
					       "link %s: command has a control byte at %zu",
					       l->uri, i);
	if (sbrig_proto_token(&p, verb, sizeof(verb)) != 1)
		return sbrig_set_error(-EINVAL, "link %s: bad verb in '%s'",
				       l->uri, cmd);
	for (i = 0; verb[i]; i++)
		if (verb[i] < 'a' || verb[i] > 'z')
			return sbrig_set_error(-EINVAL,
					       "link %s: bad verb '%s'", l->uri,
					       verb);
	c = &l->cmds[l->n_cmds++];
	memset(c, 0, sizeof(*c));
	c->cmd_id = l->next_cmd_id++;
	if (!l->next_cmd_id)
		l->next_cmd_id = 1;
	snprintf(c->text, sizeof(c->text), "%s", cmd);
	if (cmd_id)
		*cmd_id = c->cmd_id;
	return 0;
}

void sbrig_link_get_status(struct sbrig_link *l, struct sbrig_link_status *st)
{
	*st = l->st;
	st->queued = (uint32_t)l->q_len;
	st->queue_slots = (uint32_t)l->q_cap;
	st->rx_paused = l->rx_paused;
}

struct sbrig_clock *sbrig_link_clock(struct sbrig_link *l)
{
	return l->clock;
}
