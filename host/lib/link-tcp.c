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
 * HELLOs) fail the socket after TCP_DEAD_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "link-transport.h"
#include "uri.h"

#define TCP_DEAD_MS	20000

struct tcp_tr {
	int fd;
	char uri[256];
};

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

static void tcp_close(void *tr)
{
	struct tcp_tr *t = tr;

	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
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

static int tcp_open(const char *uri, void **tr)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char host[256], port[8];
	struct tcp_tr *t;
	int ret, one = 1;

	ret = tcp_parse(uri, host, sizeof(host), port, sizeof(port));
	if (ret)
		return ret;
	t = calloc(1, sizeof(*t));
	if (!t)
		return sbrig_set_error(-ENOMEM, "link %s: out of memory", uri);
	t->fd = -1;
	snprintf(t->uri, sizeof(t->uri), "%s", uri);
	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		ret = sbrig_set_error(-EHOSTUNREACH, "link %s: %s", uri,
				      gai_strerror(ret));
		goto err_free;
	}
	t->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, ai->ai_protocol);
	if (t->fd < 0) {
		ret = sbrig_set_error(-errno, "link %s: socket: %s", uri,
				      strerror(errno));
		goto err_addr;
	}
	setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tcp_dead_peer_detection(t->fd);
	if (connect(t->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		ret = 1;
	} else if (errno == EINPROGRESS) {
		ret = 0;
	} else {
		ret = sbrig_set_error(-errno, "link %s: connect: %s", uri,
				      strerror(errno));
		goto err_addr;
	}
	freeaddrinfo(ai);
	*tr = t;
	return ret;

err_addr:
	freeaddrinfo(ai);
err_free:
	tcp_close(t);
	return ret;
}

static int tcp_connected(void *tr)
{
	struct tcp_tr *t = tr;
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return 0;
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
