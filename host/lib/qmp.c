// SPDX-License-Identifier: GPL-2.0
/*
 * qmp.c - a non-blocking QEMU Machine Protocol client, see qmp.h.
 *
 * QMP is line-oriented JSON on a stream socket: QEMU greets with
 * {"QMP": {...}}, the client sends {"execute": "qmp_capabilities"} and then
 * commands, each with an "id" that QEMU copies into its answer: an object
 * with a "return" or an "error" member. Asynchronous events ({"event":
 * ...}) may come at any time. Every received line is parsed with json-c
 * and classified by its top-level members; requests are built with json-c.
 *
 * The connection is a small state machine driven by qmp_process():
 *
 *	DOWN --qmp_send(): connect--> GREETING --{"QMP"}--> CAPS
 *	CAPS --return--> READY; any state --EOF/error/timeout--> DOWN
 *
 * Requests wait in reqs[] (a FIFO of at most QMP_MAX_PENDING) until their
 * answer; they are written as soon as the state is READY (output that the
 * socket does not take at once waits in out[] for POLLOUT). An answer
 * finishes the request with its id; anything that makes the two ends lose
 * step (a timeout, a lost connection, an answer to no request) fails every
 * unanswered request and closes the socket; the next qmp_send() connects
 * again. Finished requests wait in done[] until qmp_process() hands them
 * out one by one.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "qmp.h"

#define QMP_IN_MAX	65536	/* longest line kept (others are dropped) */
#define QMP_OUT_MAX	(QMP_MAX_PENDING * 512 + 512)
#define QMP_DONE_MAX	(QMP_MAX_PENDING + 2)
#define MS		1000000LL

enum qmp_state { Q_DOWN, Q_GREETING, Q_CAPS, Q_READY };

/**
 * struct qmp_req - one request not answered yet
 * @id: its "id"
 * @tag: the caller's
 * @command: its command
 * @line: its JSON text with "\n" (owned)
 * @sent_ns: when it was written into @out (0: not yet)
 */
struct qmp_req {
	unsigned int id;
	uint64_t tag;
	char command[32];
	char *line;
	int64_t sent_ns;
};

/**
 * struct qmp - one QMP connection
 * @path: the socket
 * @fd: the socket, -1 while DOWN
 * @state: where the connection is
 * @timeout_ns: longest wait for the greeting, the capabilities answer and
 *	every request's answer
 * @state_ns: when @state was entered (GREETING and CAPS time out)
 * @in: received bytes not yet a complete line
 * @nin: their count
 * @in_discard: in a line longer than @in (dropped up to its newline)
 * @out: bytes to write
 * @nout: their count
 * @reqs: unanswered requests, oldest first
 * @nreqs: their count
 * @next_id: id of the next request
 * @done: finished requests not handed out yet
 * @ndone: their count
 */
struct qmp {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd;
	enum qmp_state state;
	int64_t timeout_ns;
	int64_t state_ns;
	char in[QMP_IN_MAX];
	size_t nin;
	bool in_discard;
	char out[QMP_OUT_MAX];
	size_t nout;
	struct qmp_req reqs[QMP_MAX_PENDING];
	unsigned int nreqs;
	unsigned int next_id;
	struct qmp_done done[QMP_DONE_MAX];
	unsigned int ndone;
};

/* ---- finishing --------------------------------------------------------- */

static void SBRIG_PRINTF(5, 6)
push_done(struct qmp *q, uint64_t tag, const char *command, int err,
	  const char *fmt, ...)
{
	struct qmp_done *d;
	char cmd[32], msg[sizeof(d->msg)];
	va_list ap;
	int n;

	if (q->ndone == QMP_DONE_MAX) {	/* cannot happen: one per request */
		sbrig_warn("qmp: %s: too many reports, one dropped", q->path);
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s", command);	/* may be in q */
	d = &q->done[q->ndone++];
	memset(d, 0, sizeof(*d));
	d->tag = tag;
	memcpy(d->command, cmd, sizeof(d->command));
	d->err = err;
	if (!err)
		return;
	n = snprintf(msg, sizeof(msg), "qmp: %s: %s%s", q->path, cmd,
		     *cmd ? ": " : "");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	memcpy(d->msg, msg, sizeof(d->msg));
}

/* Take request @i out of reqs[] (keeping the order of the others). */
static void req_remove(struct qmp *q, unsigned int i)
{
	free(q->reqs[i].line);
	memmove(&q->reqs[i], &q->reqs[i + 1],
		(q->nreqs - i - 1) * sizeof(q->reqs[0]));
	q->nreqs--;
}

/* Close the socket; every unanswered request fails with @err, @why. */
static void go_down(struct qmp *q, int err, const char *why)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	q->state = Q_DOWN;
	q->nin = 0;
	q->in_discard = false;
	q->nout = 0;
	if (!q->nreqs) {
		push_done(q, QMP_TAG_NONE, "", err, "%s", why);
		return;
	}
	while (q->nreqs) {
		push_done(q, q->reqs[0].tag, q->reqs[0].command, err, "%s", why);
		req_remove(q, 0);
	}
}

/* ---- output ------------------------------------------------------------ */

static void flush_out(struct qmp *q)
{
	ssize_t n;

	while (q->nout && q->fd >= 0) {
		n = send(q->fd, q->out, q->nout, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			char why[96];

			snprintf(why, sizeof(why), "write: %s",
				 n < 0 ? strerror(errno) : "nothing written");
			go_down(q, n < 0 ? -errno : -EIO, why);
			return;
		}
		memmove(q->out, q->out + n, q->nout - (size_t)n);
		q->nout -= (size_t)n;
	}
}

/* Put @text into out[] if it fits; false if not. */
static bool out_add(struct qmp *q, const char *text, size_t len)
{
	if (q->nout + len > sizeof(q->out))
		return false;
	memcpy(q->out + q->nout, text, len);
	q->nout += len;
	return true;
}

/* READY: move every request not yet written into out[], then write. */
static void send_queued(struct qmp *q)
{
	unsigned int i;

	if (q->state != Q_READY)
		return;
	for (i = 0; i < q->nreqs; i++) {
		struct qmp_req *r = &q->reqs[i];

		if (r->sent_ns)
			continue;
		if (!out_add(q, r->line, strlen(r->line)))
			break;	/* out[] is full: the rest after POLLOUT */
		r->sent_ns = sbrig_now_ns();
	}
	flush_out(q);
}

/* ---- input ------------------------------------------------------------- */

static void enter(struct qmp *q, enum qmp_state st)
{
	q->state = st;
	q->state_ns = sbrig_now_ns();
}

static void send_capabilities(struct qmp *q)
{
	static const char caps[] = "{\"execute\":\"qmp_capabilities\"}\n";

	enter(q, Q_CAPS);
	if (!out_add(q, caps, sizeof(caps) - 1)) {
		go_down(q, -ENOBUFS, "no room for qmp_capabilities");
		return;
	}
	flush_out(q);
}

/* An answer ({"return"} or {"error"}, with our "id") to a request. */
static void handle_answer(struct qmp *q, struct json_object *obj,
			  struct json_object *error)
{
	struct json_object *id, *desc;
	unsigned int i, want;

	if (!json_object_object_get_ex(obj, "id", &id) ||
	    !json_object_is_type(id, json_type_int)) {
		go_down(q, -EPROTO, "an answer without our id: out of step");
		return;
	}
	want = (unsigned int)json_object_get_int64(id);
	for (i = 0; i < q->nreqs; i++)
		if (q->reqs[i].id == want && q->reqs[i].sent_ns)
			break;
	if (i == q->nreqs) {
		go_down(q, -EPROTO, "an answer to no request: out of step");
		return;
	}
	if (!error) {
		struct json_object *ret, *status;

		push_done(q, q->reqs[i].tag, q->reqs[i].command, 0, "%s", "");
		if (q->ndone && q->done[q->ndone - 1].tag == q->reqs[i].tag &&
		    json_object_object_get_ex(obj, "return", &ret) &&
		    json_object_object_get_ex(ret, "status", &status) &&
		    json_object_is_type(status, json_type_string))
			snprintf(q->done[q->ndone - 1].status,
				 sizeof(q->done[0].status), "%s",
				 json_object_get_string(status));
	} else {
		const char *d = "error (no description)";

		if (json_object_object_get_ex(error, "desc", &desc) &&
		    json_object_is_type(desc, json_type_string))
			d = json_object_get_string(desc);
		push_done(q, q->reqs[i].tag, q->reqs[i].command, -EIO, "%s", d);
	}
	req_remove(q, i);
}

/* One complete line from QEMU (without its line end). */
static void handle_line(struct qmp *q, const char *line, size_t len)
{
	enum json_tokener_error jerr;
	struct json_tokener *tok;
	struct json_object *obj, *v, *error = NULL;

	if (!len)
		return;
	tok = json_tokener_new();
	if (!tok) {
		go_down(q, -ENOMEM, "out of memory");
		return;
	}
	obj = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (!obj || jerr != json_tokener_success ||
	    !json_object_is_type(obj, json_type_object)) {
		/* QEMU writes only JSON objects: this is not a QMP socket */
		json_object_put(obj);
		go_down(q, -EPROTO, "not a QMP object (is this a QMP socket?)");
		return;
	}
	if (json_object_object_get_ex(obj, "event", &v)) {
		;	/* SUSPEND, WAKEUP, ...: not ours */
	} else if (q->state == Q_GREETING) {
		if (json_object_object_get_ex(obj, "QMP", &v))
			send_capabilities(q);
		else
			go_down(q, -EPROTO, "no QMP greeting");
	} else if (q->state == Q_CAPS) {
		if (json_object_object_get_ex(obj, "return", &v)) {
			enter(q, Q_READY);
			send_queued(q);
		} else {
			go_down(q, -EPROTO, "qmp_capabilities refused");
		}
	} else if (json_object_object_get_ex(obj, "return", &v) ||
		   json_object_object_get_ex(obj, "error", &error)) {
		handle_answer(q, obj, error);
	}
	json_object_put(obj);
}

static void read_input(struct qmp *q)
{
	char buf[4096];
	ssize_t n;
	size_t i, start;

	while (q->fd >= 0) {
		n = recv(q->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			char why[96];

			int err = n == 0 ? ECONNRESET : errno;

			/* a QEMU killed with our bytes unread resets it */
			if (err == ECONNRESET || err == EPIPE)
				snprintf(why, sizeof(why),
					 "QEMU closed the connection%s%s%s",
					 n ? " (" : "", n ? strerror(err) : "",
					 n ? ")" : "");
			else
				snprintf(why, sizeof(why), "read: %s",
					 strerror(err));
			go_down(q, -err, why);
			return;
		}
		for (i = 0, start = 0; i < (size_t)n && q->fd >= 0; i++) {
			if (buf[i] != '\n')
				continue;
			if (q->in_discard) {
				q->in_discard = false;
			} else if (q->nin + (i - start) <= sizeof(q->in)) {
				memcpy(q->in + q->nin, buf + start, i - start);
				q->nin += i - start;
				if (q->nin && q->in[q->nin - 1] == '\r')
					q->nin--;
				handle_line(q, q->in, q->nin);
			}
			q->nin = 0;
			start = i + 1;
		}
		if (q->fd < 0)
			return;
		if (q->in_discard)
			continue;
		if (q->nin + ((size_t)n - start) > sizeof(q->in)) {
			q->nin = 0;	/* a line longer than we care for */
			q->in_discard = true;
			continue;
		}
		memcpy(q->in + q->nin, buf + start, (size_t)n - start);
		q->nin += (size_t)n - start;
	}
}

/* ---- connection -------------------------------------------------------- */

/* Start a connection (a unix stream connect completes or fails at once). */
static int start_connect(struct qmp *q)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", q->path);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->fd < 0)
		return sbrig_set_error(-errno, "qmp: %s: socket: %s", q->path,
				       strerror(errno));
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno;
		close(q->fd);
		q->fd = -1;
		return sbrig_set_error(-err, "qmp: %s: connect: %s%s", q->path,
				       strerror(err), err == EAGAIN ?
				       " (QEMU's monitor has a client already?)" :
				       "");
	}
	q->nin = 0;
	q->in_discard = false;
	q->nout = 0;
	enter(q, Q_GREETING);
	return 0;
}

static void check_timeouts(struct qmp *q, int64_t now)
{
	if ((q->state == Q_GREETING || q->state == Q_CAPS) &&
	    now - q->state_ns >= q->timeout_ns) {
		go_down(q, -ETIMEDOUT, q->state == Q_GREETING ?
			"no greeting in time (QEMU's monitor has a client already?)" :
			"no answer to qmp_capabilities in time");
		return;
	}
	if (q->nreqs && q->reqs[0].sent_ns &&
	    now - q->reqs[0].sent_ns >= q->timeout_ns)
		go_down(q, -ETIMEDOUT, "no answer in time");
}

int qmp_process(struct qmp *q, short revents, struct qmp_done *done)
{
	if (q->fd >= 0) {
		if (revents & POLLOUT)
			flush_out(q);
		read_input(q);	/* also after POLLHUP/POLLERR: finds EOF */
		if (q->fd >= 0)
			check_timeouts(q, sbrig_now_ns());
	}
	if (!q->ndone)
		return 0;
	*done = q->done[0];
	memmove(&q->done[0], &q->done[1], (q->ndone - 1) * sizeof(q->done[0]));
	q->ndone--;
	return 1;
}

int qmp_send(struct qmp *q, const char *command, struct json_object *args,
	     uint64_t tag, int64_t *sent_ns)
{
	struct json_object *obj = NULL;
	struct qmp_req *r;
	const char *text;
	size_t len;
	int ret;

	if (q->nreqs == QMP_MAX_PENDING) {
		ret = sbrig_set_error(-ENOBUFS, "qmp: %s: %s: %u requests unanswered",
				      q->path, command, QMP_MAX_PENDING);
		goto put_args;
	}
	if (strlen(command) >= sizeof(r->command)) {
		ret = sbrig_set_error(-EINVAL, "qmp: %s: %s: command too long",
				      q->path, command);
		goto put_args;
	}
	if (q->fd < 0) {
		ret = start_connect(q);
		if (ret) {
			sbrig_prefix_error("%s", command);
			goto put_args;
		}
	}
	obj = json_object_new_object();
	if (!obj) {
		ret = -ENOMEM;
		goto no_mem;
	}
	if (json_object_object_add(obj, "execute",
				   json_object_new_string(command)))
		goto no_mem_obj;
	if (args) {
		ret = json_object_object_add(obj, "arguments", args);
		args = NULL;	/* owned by obj now, even on failure */
		if (ret)
			goto no_mem_obj;
	}
	if (json_object_object_add(obj, "id",
				   json_object_new_int64(++q->next_id)))
		goto no_mem_obj;
	text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	if (!text)
		goto no_mem_obj;
	len = strlen(text);
	r = &q->reqs[q->nreqs];
	memset(r, 0, sizeof(*r));
	r->line = malloc(len + 2);
	if (!r->line)
		goto no_mem_obj;
	memcpy(r->line, text, len);
	memcpy(r->line + len, "\n", 2);
	r->id = q->next_id;
	r->tag = tag;
	snprintf(r->command, sizeof(r->command), "%s", command);
	q->nreqs++;
	json_object_put(obj);
	send_queued(q);
	if (sent_ns)
		*sent_ns = r->sent_ns ? r->sent_ns : sbrig_now_ns();
	return 0;

no_mem_obj:
	json_object_put(obj);
no_mem:
	ret = sbrig_set_error(-ENOMEM, "qmp: %s: %s: out of memory", q->path,
			      command);
put_args:
	json_object_put(args);
	return ret;
}

struct qmp *qmp_new(const char *path, int timeout_ms)
{
	struct qmp_done d;
	struct qmp *q;
	int ret;

	if (strlen(path) >= sizeof(q->path)) {
		sbrig_set_error(-ENAMETOOLONG,
				"qmp: %s: path too long for a unix socket", path);
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
	q->timeout_ns = (int64_t)timeout_ms * MS;
	ret = start_connect(q);
	if (ret)
		goto fail;
	/* the one bounded wait: until READY (a timeout goes DOWN) */
	while (q->state != Q_READY) {
		struct pollfd pfd = { .fd = q->fd, .events = qmp_events(q) };
		int64_t left = q->state_ns + q->timeout_ns - sbrig_now_ns();

		if (q->fd >= 0 && left > 0 &&
		    poll(&pfd, 1, (int)((left + MS - 1) / MS)) < 0 &&
		    errno != EINTR) {
			ret = sbrig_set_error(-errno, "qmp: %s: poll: %s", path,
					      strerror(errno));
			goto fail;
		}
		/* no request is queued: anything done is a failure */
		if (qmp_process(q, pfd.revents, &d) == 1) {
			ret = sbrig_set_error(d.err ? d.err : -EPROTO, "%s",
					      d.msg);
			goto fail;
		}
	}
	return q;

fail:
	qmp_free(q);
	errno = -ret;
	return NULL;
}

void qmp_free(struct qmp *q)
{
	if (!q)
		return;
	if (q->fd >= 0)
		close(q->fd);
	while (q->nreqs)
		req_remove(q, 0);
	free(q);
}

int qmp_fd(const struct qmp *q)
{
	return q->fd;
}

short qmp_events(const struct qmp *q)
{
	return q->fd < 0 ? 0 : (short)(POLLIN | (q->nout ? POLLOUT : 0));
}

int64_t qmp_deadline(const struct qmp *q)
{
	if (q->ndone)
		return 0;	/* due now */
	if (q->state == Q_GREETING || q->state == Q_CAPS)
		return q->state_ns + q->timeout_ns;
	if (q->nreqs && q->reqs[0].sent_ns)
		return q->reqs[0].sent_ns + q->timeout_ns;
	return INT64_MAX;
}

unsigned int qmp_pending(const struct qmp *q)
{
	return q->nreqs;
}

const char *qmp_path(const struct qmp *q)
{
	return q->path;
}
