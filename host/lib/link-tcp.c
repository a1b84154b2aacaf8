// SPDX-License-Identifier: GPL-2.0
/*
 * link-tcp.c - tcp:HOST:PORT transport of the target link: a raw TCP
 * console (ser2net, a QEMU "-serial tcp:...,server" port, a LAVA console
 * server). Non-blocking connect; end of file is an error (the link then
 * reconnects with backoff). Silence is not: a suspended target says nothing
 * for minutes while the console server's connection stays fine, so the
 * link keeps the connection (reopen_on_silence false). A peer that vanished
 * without a FIN/RST is found by TCP itself: keepalive probes on an idle
 * connection and TCP_USER_TIMEOUT on unacknowledged data (the link's
 * HELLOs) fail the socket after TCP_DEAD_MS. A host name is resolved off
 * the caller's thread (tcp_resolve_start()): every reconnect resolves it
 * again (the target's address may change), and a DNS server that does not
 * answer must not stall the daemon's loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "link-transport.h"
#include "uri.h"

#define TCP_DEAD_MS	20000

/* Split tcp:HOST:PORT (HOST may be [v6]) into host and port (uri.c). */
static int tcp_parse(const char *uri, char *host, size_t hsize, char *port,
		     size_t psize)
{
	unsigned int p;
	int ret = sbrig_uri_parse_tcp(uri, host, hsize, &p);

	if (ret) {
		sbrig_prefix_error("link");
		return ret;
	}
	snprintf(port, psize, "%u", p);
	return 0;
}

static int tcp_check(const char *uri)
{
	char host[256], port[8];

	return tcp_parse(uri, host, sizeof(host), port, sizeof(port));
}

/*
 * A host name is resolved on a thread of its own (getaddrinfo() can take
 * seconds: a dead DNS server), so that an open never blocks the caller's
 * loop. The thread's result is handed over through this shared, reference
 * counted struct; it closes the pipe's write end when done, which makes
 * the read end (the transport's fd meanwhile) report POLLHUP: the link
 * then calls tcp_connected(), which starts the connect. A transport closed
 * before that just drops its reference.
 */
struct tcp_resolve {
	char host[256], port[8];
	struct addrinfo *ai;
	int gai_err;
	int wfd;
	atomic_bool done;
	atomic_int refs;
};

static void resolve_put(struct tcp_resolve *r)
{
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->ai)
		freeaddrinfo(r->ai);
	free(r);
}

static void *resolve_main(void *arg)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct tcp_resolve *r = arg;

	r->gai_err = getaddrinfo(r->host, r->port, &hints, &r->ai);
	atomic_store(&r->done, true);
	close(r->wfd);		/* POLLHUP on the read end */
	resolve_put(r);
	return NULL;
}

/*
 * A name with several addresses (localhost: ::1 and 127.0.0.1) is tried
 * address after address until one connects (@ai, @next).
 */
struct tcp_tr {
	int fd;				/* the socket, or the pipe's read end */
	struct tcp_resolve *res;	/* resolving a name (else NULL) */
	struct addrinfo *ai;		/* the name's addresses */
	struct addrinfo *next;		/* the one to try after this one */
	char uri[256];
};

static void tcp_close(void *tr)
{
	struct tcp_tr *t = tr;

	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	if (t->res)
		resolve_put(t->res);
	if (t->ai)
		freeaddrinfo(t->ai);
	free(t);
}

/* Best effort: without these a vanished peer is only found much later. */
static void tcp_dead_peer_detection(int fd)
{
	int one = 1, idle_s = 5, intvl_s = 5, cnt = 3;
	unsigned int user_ms = TCP_DEAD_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl_s, sizeof(intvl_s));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms,
		   sizeof(user_ms));
}

/*
 * Start connecting to t->next, else the addresses after it; t->fd becomes
 * the socket. Return: 1 connected, 0 in progress, -errno (the last
 * address's error).
 */
static int tcp_connect(struct tcp_tr *t)
{
	const struct addrinfo *ai;
	int one = 1, fd;

again:
	ai = t->next;
	if (!ai)
		return sbrig_set_error(-EHOSTUNREACH, "link %s: no address",
				       t->uri);
	t->next = ai->ai_next;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return sbrig_set_error(-errno, "link %s: socket: %s", t->uri,
				       strerror(errno));
	if (t->fd >= 0)
		close(t->fd);	/* the resolver's pipe */
	t->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tcp_dead_peer_detection(fd);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 1;
	if (errno == EINPROGRESS)
		return 0;
	if (t->next)
		goto again;
	return sbrig_set_error(-errno, "link %s: connect: %s", t->uri,
			       strerror(errno));
}

/* Resolve @host on a thread; t->fd is the pipe to poll. 0 or -errno. */
static int tcp_resolve_start(struct tcp_tr *t, const char *host,
			     const char *port)
{
	struct tcp_resolve *r = calloc(1, sizeof(*r));
	pthread_attr_t attr;
	pthread_t th;
	int pfd[2], ret;

	if (!r)
		return sbrig_set_error(-ENOMEM, "link %s: out of memory",
				       t->uri);
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		ret = sbrig_set_error(-errno, "link %s: pipe: %s", t->uri,
				      strerror(errno));
		free(r);
		return ret;
	}
	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->port, sizeof(r->port), "%s", port);
	r->wfd = pfd[1];
	atomic_init(&r->done, false);
	atomic_init(&r->refs, 2);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &attr, resolve_main, r);
	pthread_attr_destroy(&attr);
	if (ret) {
		close(pfd[0]);
		close(pfd[1]);
		free(r);
		return sbrig_set_error(-ret, "link %s: pthread_create: %s",
				       t->uri, strerror(ret));
	}
	t->fd = pfd[0];
	t->res = r;
	return 0;
}

static int tcp_open(const char *uri, void **tr)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char host[256], port[8];
	struct tcp_tr *t;
	int ret;

	ret = tcp_parse(uri, host, sizeof(host), port, sizeof(port));
	if (ret)
		return ret;
	t = calloc(1, sizeof(*t));
	if (!t)
		return sbrig_set_error(-ENOMEM, "link %s: out of memory", uri);
	t->fd = -1;
	snprintf(t->uri, sizeof(t->uri), "%s", uri);
	/* an address needs no resolver: connect at once */
	if (getaddrinfo(host, port, &hints, &ai) == 0) {
		t->ai = t->next = ai;
		ret = tcp_connect(t);
	} else {
		ret = tcp_resolve_start(t, host, port);
	}
	if (ret < 0) {
		tcp_close(t);
		return ret;
	}
	*tr = t;
	return ret;
}

static int tcp_connected(void *tr)
{
	struct tcp_tr *t = tr;
	int err = 0;
	socklen_t len = sizeof(err);

	if (t->res) {
		struct tcp_resolve *r = t->res;

		if (!atomic_load(&r->done))
			return 0;
		t->res = NULL;
		if (r->gai_err) {
			err = r->gai_err;
			resolve_put(r);
			return sbrig_set_error(-EHOSTUNREACH, "link %s: %s",
					       t->uri, gai_strerror(err));
		}
		t->ai = t->next = r->ai;	/* ours now */
		r->ai = NULL;
		resolve_put(r);
		return tcp_connect(t);
	}
	if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return 0;
	if (err && t->next)
		return tcp_connect(t);	/* the name's next address */
	if (err)
		return sbrig_set_error(-err, "link %s: connect: %s", t->uri,
				       strerror(err));
	return 1;
}

static ssize_t tcp_read(void *tr, void *buf, size_t len)
{
	struct tcp_tr *t = tr;
	ssize_t n = recv(t->fd, buf, len, 0);

	if (n > 0)
		return n;
	if (n == 0)
		return sbrig_set_error(-ECONNRESET, "link %s: connection closed",
				       t->uri);
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	return sbrig_set_error(-errno, "link %s: read: %s", t->uri,
			       strerror(errno));
}

static ssize_t tcp_write(void *tr, const void *buf, size_t len)
{
	struct tcp_tr *t = tr;
	ssize_t n = send(t->fd, buf, len, MSG_NOSIGNAL);

	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	return sbrig_set_error(-errno, "link %s: write: %s", t->uri,
			       strerror(errno));
}

static int tcp_fd(void *tr)
{
	return ((struct tcp_tr *)tr)->fd;
}

const struct link_transport_ops link_tcp_ops = {
	.prefix = "tcp:",
	.check = tcp_check,
	.open = tcp_open,
	.connected = tcp_connected,
	.read = tcp_read,
	.write = tcp_write,
	.fd = tcp_fd,
	.close = tcp_close,
	.reopen_on_silence = false,
};
