// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the link's decoded-message queue (lib/link.c): bounded,
 * with back-pressure on the transport, and its memory given back after a
 * burst; and for its pending commands (a cancelled one is not resent) (issue 7 §4.4: a 40 MB burst of EV frames grew the queue without
 * bound: 334 MB RSS, 222 MB after it).
 *
 * No mock: the link runs over its real tcp: transport on loopback, and this
 * program plays the agent on the other end of the connection with frames
 * from the real codec (proto.c).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <sbrig/link.h>
#include <sbrig/proto.h>
#include <sbrig/sbrig.h>

#define NS_PER_S 1000000000LL

/**
 * struct peer - the agent's end
 * @lfd: listening socket
 * @fd: accepted connection (non-blocking)
 * @in: bytes from the host not yet split into lines
 * @nin: their count
 * @out: frames not yet written
 * @nout: their count
 * @next_seq: next EV seq to generate
 * @cmds: CMD frames received (never answered)
 */
struct peer {
	int lfd, fd;
	char in[65536];
	size_t nin;
	char *out;
	size_t nout, cap;
	uint64_t next_seq;
	unsigned int cmds;
};

static void peer_queue(struct peer *p, const struct sbrig_proto_msg *m)
{
	char buf[SBRIG_PROTO_FRAME_MAX + 1];
	int n = sbrig_proto_encode(m, buf, sizeof(buf));

	assert_true(n > 0);
	if (p->nout + (size_t)n > p->cap) {
		p->cap = 2 * (p->nout + (size_t)n);
		p->out = realloc(p->out, p->cap);
		assert_non_null(p->out);
	}
	memcpy(p->out + p->nout, buf, (size_t)n);
	p->nout += (size_t)n;
}

/* Write what the socket takes now. */
static void peer_flush(struct peer *p)
{
	ssize_t n;

	while (p->nout) {
		n = send(p->fd, p->out, p->nout, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			assert_true(errno == EAGAIN || errno == EINTR);
			return;
		}
		memmove(p->out, p->out + n, p->nout - (size_t)n);
		p->nout -= (size_t)n;
	}
}

/* Answer the host's HELLO and PINGs (an agent's clock is our clock). */
static void peer_serve(struct peer *p)
{
	struct sbrig_proto_msg m, a;
	ssize_t n;
	char *nl;

	for (;;) {
		n = recv(p->fd, p->in + p->nin, sizeof(p->in) - p->nin,
			 MSG_DONTWAIT);
		if (n <= 0)
			break;
		p->nin += (size_t)n;
		while ((nl = memchr(p->in, '\n', p->nin))) {
			size_t len = (size_t)(nl - p->in);

			memset(&a, 0, sizeof(a));
			if (sbrig_proto_decode(p->in, len, false, &m, NULL) == 1) {
				if (m.type == SBRIG_PROTO_H_HELLO) {
					a.type = SBRIG_PROTO_T_HELLO;
					a.hello.proto = 1;
					strcpy(a.hello.boot_id, "boot-q");
					strcpy(a.hello.agent, "test");
					strcpy(a.hello.kernel, "6.1");
					strcpy(a.hello.module, "0.1");
					a.hello.answer = true;
					peer_queue(p, &a);
				} else if (m.type == SBRIG_PROTO_H_PING) {
					a.type = SBRIG_PROTO_T_PONG;
					a.pong.token = m.ping.token;
					a.pong.t_boot_ns = sbrig_now_ns();
					peer_queue(p, &a);
				} else if (m.type == SBRIG_PROTO_H_CMD) {
					p->cmds++;
				}
			}
			memmove(p->in, nl + 1, p->nin - len - 1);
			p->nin -= len + 1;
		}
		if (p->nin == sizeof(p->in))
			p->nin = 0;
	}
	peer_flush(p);
}

static void queue_events(struct peer *p, unsigned int n)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_T_EV };
	unsigned int i;

	for (i = 0; i < n; i++) {
		m.ev.seq = p->next_seq++;
		m.ev.t_ns = sbrig_now_ns();
		snprintf(m.ev.type, sizeof(m.ev.type), "block");
		snprintf(m.ev.arg, sizeof(m.ev.arg), "burst blocker %u", i);
		m.ev.quoted = true;
		peer_queue(p, &m);
	}
}

/* One round of the caller's loop: poll as the link asks, process. */
static void link_round(struct sbrig_link *l, struct peer *p, int timeout_ms)
{
	struct pollfd pfd;
	short revents = 0;

	if (sbrig_link_pollfd(l, &pfd) == 1) {
		if (poll(&pfd, 1, timeout_ms) > 0)
			revents = pfd.revents;
	}
	sbrig_link_process(l, revents, sbrig_now_ns());
	if (p->fd < 0) {
		int sndbuf = 16384;

		p->fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK);
		if (p->fd < 0)
			assert_int_equal(errno, EAGAIN);
		else	/* less in flight: the burst must wait in our buffer */
			setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
				   sizeof(sndbuf));
	}
	if (p->fd >= 0)
		peer_serve(p);
}

static struct sbrig_link *connect_link(struct peer *p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sbrig_link_opts opts = { .timeout_ms = 30000 };
	struct sbrig_link_status st;
	struct sbrig_link_msg msg;
	socklen_t len = sizeof(sa);
	struct sbrig_link *l;
	char uri[64];
	int64_t end;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(p->lfd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(p->lfd, 1), 0);
	assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&sa, &len), 0);
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", ntohs(sa.sin_port));
	l = sbrig_link_new(uri, &opts);
	assert_non_null(l);
	/* up, with a clock sample (so events are not held for the clock) */
	end = sbrig_now_ns() + 10 * NS_PER_S;
	do {
		link_round(l, p, 20);
		while (sbrig_link_next(l, &msg) == 1)
			;
		sbrig_link_get_status(l, &st);
		assert_true(sbrig_now_ns() < end);
	} while (!st.connected || !st.frames_ok || p->nout ||
		 sbrig_clock_to_host(sbrig_link_clock(l), 0, &end, NULL));
	return l;
}

static void peer_close(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	close(p->lfd);
	free(p->out);
}

#define BURST 100000	/* 5 MB of frames */

static void burst_is_bounded_and_nothing_is_lost(void **state)
{
	struct sbrig_link_status st;
	struct sbrig_link_msg msg;
	struct sbrig_link *l;
	struct peer p;
	struct pollfd pfd;
	uint64_t want = 0;
	uint32_t max_queued = 0;
	int64_t end;

	l = connect_link(&p);
	queue_events(&p, BURST);
	/* the caller does not take messages: the link fills its queue, then
	 * stops reading (the rest waits in the kernel and in our buffer) */
	end = sbrig_now_ns() + 20 * NS_PER_S;
	do {
		link_round(l, &p, 20);
		sbrig_link_get_status(l, &st);
		assert_true(st.queued <= SBRIG_LINK_QUEUE_MAX);
		assert_true(sbrig_now_ns() < end);
	} while (!st.rx_paused);
	assert_true(st.queued > SBRIG_LINK_QUEUE_MAX / 2);
	assert_true(st.rx_pauses >= 1);
	assert_int_equal(sbrig_link_pollfd(l, &pfd), 1);
	assert_false(pfd.events & POLLIN);
	assert_true(p.nout > 0);	/* the agent could not send it all */

	/* now the caller takes them: all arrive, in order, none lost */
	end = sbrig_now_ns() + 60 * NS_PER_S;
	while (want < BURST) {
		while (sbrig_link_next(l, &msg) == 1) {
			if (msg.type != SBRIG_LINK_EVENT)
				continue;
			assert_int_equal(msg.event.seq, want);
			assert_true(msg.event.uncert_ns >= 0);
			want++;
		}
		link_round(l, &p, 20);
		sbrig_link_get_status(l, &st);
		if (st.queued > max_queued)
			max_queued = st.queued;
		assert_true(sbrig_now_ns() < end);
	}
	sbrig_link_get_status(l, &st);
	assert_true(max_queued <= SBRIG_LINK_QUEUE_MAX);
	assert_int_equal(st.queue_drops, 0);
	assert_int_equal(st.frames_bad, 0);
	assert_int_equal(st.next_seq, BURST);
	assert_true(st.connected);
	/* the memory of the burst was given back */
	while (sbrig_link_next(l, &msg) == 1)
		;
	sbrig_link_get_status(l, &st);
	assert_int_equal(st.queued, 0);
	assert_true(st.queue_slots <= 64);
	sbrig_link_free(l);
	peer_close(&p);
}

/*
 * A command given up (sbrig_link_cancel()) is not sent again and frees its
 * place: an agent that never answered kept 64 commands resent for ever,
 * and every new one failed with -ENOBUFS (issue 27).
 */
static void cancelled_commands_are_not_resent(void **state)
{
	uint32_t ids[64], id;
	struct sbrig_link *l;
	struct peer p;
	int64_t end;

	l = connect_link(&p);
	for (unsigned int i = 0; i < 64; i++)
		assert_int_equal(sbrig_link_command(l, "stats", &ids[i]), 0);
	assert_int_equal(sbrig_link_command(l, "stats", &id), -ENOBUFS);
	end = sbrig_now_ns() + 10 * NS_PER_S;
	while (p.cmds < 64) {	/* sent, never answered */
		link_round(l, &p, 20);
		assert_true(sbrig_now_ns() < end);
	}
	for (unsigned int i = 0; i < 64; i++)
		sbrig_link_cancel(l, ids[i]);
	sbrig_link_cancel(l, ids[0]);	/* twice, or unknown: ignored */
	p.cmds = 0;
	/* two and a half retry periods (1 s): nothing resent */
	end = sbrig_now_ns() + 2500000000LL;
	while (sbrig_now_ns() < end)
		link_round(l, &p, 20);
	assert_int_equal(p.cmds, 0);
	/* the places are free: 64 new ones are taken, and sent */
	for (unsigned int i = 0; i < 64; i++)
		assert_int_equal(sbrig_link_command(l, "stats", &ids[i]), 0);
	end = sbrig_now_ns() + 10 * NS_PER_S;
	while (p.cmds < 64) {
		link_round(l, &p, 20);
		assert_true(sbrig_now_ns() < end);
	}
	sbrig_link_free(l);
	peer_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(burst_is_bounded_and_nothing_is_lost),
		cmocka_unit_test(cancelled_commands_are_not_resent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
