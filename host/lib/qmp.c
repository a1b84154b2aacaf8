// SPDX-License-Identifier: GPL-2.0
/*
 * qmp.c - a minimal QEMU Machine Protocol client, see qmp.h.
 *
 * QMP is line-oriented JSON on a stream socket: QEMU greets with
 * {"QMP": {...}}, the client sends {"execute": "qmp_capabilities"} and
 * then one command at a time; every answer is an object with a "return"
 * or an "error" member, and asynchronous events ({"event": ...}) may come
 * before it at any time. This client needs no JSON library: it only has
 * to tell those three kinds of objects apart, which it does by scanning
 * the keys at the top level of each line (QEMU does not guarantee the
 * order of members), and to pick an error's "desc" out for the message.
 *
 * The socket is non-blocking; every wait is a poll() bounded by the
 * caller's timeout, so a caller in a poll loop is held up for at most that
 * long.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "qmp.h"

#define QMP_BUF 16384

/**
 * struct qmp - one QMP connection
 * @path: the socket
 * @fd: connected socket, -1 after a failure (reopened on the next command)
 * @buf: received bytes not yet consumed (at most one partial line after
 *	qmp_read_line() returns)
 * @len: bytes used in @buf
 * @id: id of the last command sent
 */
struct qmp {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd;
	char buf[QMP_BUF];
	size_t len;
	unsigned int id;
};

enum qmp_kind { QMP_OTHER, QMP_GREETING, QMP_RETURN, QMP_ERROR, QMP_EVENT };

/* Classify one JSON object by its top-level member names. */
static enum qmp_kind qmp_classify(const char *line)
{
	static const struct { const char *key; enum qmp_kind kind; } keys[] = {
		{ "\"QMP\"", QMP_GREETING }, { "\"return\"", QMP_RETURN },
		{ "\"error\"", QMP_ERROR }, { "\"event\"", QMP_EVENT },
	};
	const char *s, *key = NULL;
	int depth = 0;
	bool in_str = false;
	size_t i;

	for (s = line; *s; s++) {
		if (in_str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				in_str = false;
			continue;
		}
		switch (*s) {
		case '"':
			in_str = true;
			if (depth == 1)
				key = s;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			depth--;
			break;
		case ':':
			if (depth != 1 || !key)
				break;
			for (i = 0; i < SBRIG_ARRAY_SIZE(keys); i++)
				if (!strncmp(key, keys[i].key, strlen(keys[i].key)))
					return keys[i].kind;
			key = NULL;
			break;
		case ',':
			key = NULL;
			break;
		}
	}
	return QMP_OTHER;
}

/* The "desc" string of an error answer, unescaped crudely, into @out. */
static void qmp_error_desc(const char *line, char *out, size_t size)
{
	const char *s = strstr(line, "\"desc\"");
	size_t n = 0;

	snprintf(out, size, "error (no description)");
	if (!s || !(s = strchr(s + 6, '"')))
		return;
	for (s++; *s && *s != '"' && n + 1 < size; s++) {
		if (*s == '\\' && s[1])
			s++;
		out[n++] = *s;
	}
	out[n] = '\0';
}

static void qmp_close_fd(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	q->len = 0;
}

static int64_t deadline_after(int timeout_ms)
{
	return sbrig_now_ns() + (int64_t)timeout_ms * 1000000;
}

static int ms_left(int64_t deadline_ns)
{
	int64_t left = deadline_ns - sbrig_now_ns();

	return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

/*
 * Return the next complete line in @line (NUL-terminated, copied out of
 * the buffer), waiting until @deadline_ns; 0, -ETIMEDOUT or -errno
 * (-ECONNRESET: QEMU closed the socket).
 */
static int qmp_read_line(struct qmp *q, char *line, size_t size,
			 int64_t deadline_ns)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
		ssize_t n;
		int ret;

		if (nl) {
			size_t ln = (size_t)(nl - q->buf);

			snprintf(line, size, "%.*s", (int)ln, q->buf);
			memmove(q->buf, nl + 1, q->len - ln - 1);
			q->len -= ln + 1;
			return 0;
		}
		if (q->len == sizeof(q->buf))
			q->len = 0;	/* a line longer than we care for: drop */
		n = recv(q->fd, q->buf + q->len, sizeof(q->buf) - q->len, 0);
		if (n > 0) {
			q->len += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = poll(&pfd, 1, ms_left(deadline_ns));
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret == 0)
			return -ETIMEDOUT;
	}
}

/* Read and drop whatever QEMU sent since the last answer (events). */
static int qmp_drain(struct qmp *q)
{
	char line[512];
	int ret;

	do
		ret = qmp_read_line(q, line, sizeof(line), 0);
	while (!ret);
	return ret == -ETIMEDOUT ? 0 : ret;
}

static int qmp_send(struct qmp *q, const char *text, int64_t deadline_ns)
{
	size_t off = 0, len = strlen(text);

	while (off < len) {
		struct pollfd pfd = { .fd = q->fd, .events = POLLOUT };
		ssize_t n = send(q->fd, text + off, len - off, MSG_NOSIGNAL);
		int ret;

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = poll(&pfd, 1, ms_left(deadline_ns));
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Send one command and wait for its answer; events are skipped. */
static int qmp_exchange(struct qmp *q, const char *command,
			const char *args_json, int64_t deadline_ns)
{
	char req[1024], line[1024], desc[256];
	int ret;

	q->id++;
	if ((size_t)snprintf(req, sizeof(req),
			     "{\"execute\": \"%s\"%s%s, \"id\": %u}\n", command,
			     args_json ? ", \"arguments\": " : "",
			     args_json ? args_json : "", q->id) >= sizeof(req))
		return sbrig_set_error(-E2BIG, "qmp: %s: %s: request too long",
				       q->path, command);
	ret = qmp_drain(q);
	if (!ret)
		ret = qmp_send(q, req, deadline_ns);
	while (!ret) {
		ret = qmp_read_line(q, line, sizeof(line), deadline_ns);
		if (ret)
			break;
		switch (qmp_classify(line)) {
		case QMP_RETURN:
			return 0;
		case QMP_ERROR:
			qmp_error_desc(line, desc, sizeof(desc));
			return sbrig_set_error(-EIO, "qmp: %s: %s: %s", q->path,
					       command, desc);
		default:
			break;	/* an event, or noise */
		}
	}
	return sbrig_set_error(ret, "qmp: %s: %s: %s", q->path, command,
			       ret == -ETIMEDOUT ? "no answer in time" :
			       ret == -ECONNRESET ? "QEMU closed the connection" :
			       strerror(-ret));
}

/* Connect, read the greeting, leave capabilities negotiation mode. */
static int qmp_connect(struct qmp *q, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = deadline_after(timeout_ms);
	char line[1024];
	int ret;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", q->path);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->fd < 0)
		return sbrig_set_error(-errno, "qmp: %s: socket: %s", q->path,
				       strerror(errno));
	/* a unix stream connect completes or fails at once */
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = sbrig_set_error(-errno, "qmp: %s: connect: %s%s", q->path,
				      strerror(errno), errno == EAGAIN ?
				      " (QEMU's monitor has a client already?)" :
				      "");
		goto close_fd;
	}
	do {
		ret = qmp_read_line(q, line, sizeof(line), deadline);
	} while (!ret && qmp_classify(line) != QMP_GREETING);
	if (ret) {
		sbrig_set_error(ret, "qmp: %s: no greeting: %s%s", q->path,
				ret == -ETIMEDOUT ? "timed out" : strerror(-ret),
				ret == -ETIMEDOUT ?
				" (QEMU's monitor has a client already?)" : "");
		goto close_fd;
	}
	ret = qmp_exchange(q, "qmp_capabilities", NULL, deadline);
	if (ret)
		goto close_fd;
	return 0;

close_fd:
	qmp_close_fd(q);
	return ret;
}

struct qmp *qmp_new(const char *path, int timeout_ms)
{
	struct qmp *q;
	int ret;

	if (strlen(path) >= sizeof(q->path)) {
		sbrig_set_error(-ENAMETOOLONG, "qmp: %s: path too long for a unix socket",
				path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		sbrig_set_error(-ENOMEM, "qmp: %s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(q->path, sizeof(q->path), "%s", path);
	q->fd = -1;
	ret = qmp_connect(q, timeout_ms);
	if (ret) {
		free(q);
		errno = -ret;
		return NULL;
	}
	return q;
}

void qmp_free(struct qmp *q)
{
	if (!q)
		return;
	qmp_close_fd(q);
	free(q);
}

int qmp_execute(struct qmp *q, const char *command, const char *args_json,
		int timeout_ms)
{
	int ret, attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (q->fd < 0) {
			ret = qmp_connect(q, timeout_ms);
			if (ret)
				return ret;
		}
		ret = qmp_exchange(q, command, args_json,
				   deadline_after(timeout_ms));
		if (!ret || ret == -EIO)
			return ret;
		/* out of step (a late answer may still come): start afresh */
		qmp_close_fd(q);
		/* a broken connection (QEMU restarted) is retried once */
		if (ret != -ECONNRESET && ret != -EPIPE)
			return ret;
	}
	return ret;
}

const char *qmp_path(const struct qmp *q)
{
	return q->path;
}
