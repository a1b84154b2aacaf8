/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qmp.h - a non-blocking QEMU Machine Protocol client (private to
 * libsbrig; used by gpio.c's qmp backend to press a QEMU guest's keys).
 *
 * Only qmp_new() waits (bounded): it connects and leaves capabilities
 * mode. Afterwards requests are queued and written at once
 * (qmp_send()), and answers, QEMU's errors, timeouts and a lost connection
 * come out of qmp_process(), which the caller runs from its poll loop on
 * qmp_fd()/qmp_events() and at qmp_deadline(). A lost connection is made
 * again by the next qmp_send() (connect, greeting and capabilities are
 * then driven by qmp_process() too, the request waits for them). At most
 * QMP_MAX_PENDING requests are unanswered at once. JSON is parsed and
 * built with json-c. Not thread-safe: one connection per thread.
 */
#ifndef SBRIG_QMP_H
#define SBRIG_QMP_H

#include <stdbool.h>
#include <stdint.h>

struct json_object;
struct qmp;

/* Unanswered requests at most (qmp_send() fails with -ENOBUFS beyond). */
#define QMP_MAX_PENDING 16
/* qmp_done.tag of a report that belongs to no request (connection lost). */
#define QMP_TAG_NONE UINT64_MAX

/**
 * struct qmp_done - one finished request (or a connection event)
 * @tag: the caller's tag given to qmp_send(), or QMP_TAG_NONE
 * @command: the request's command ("" for QMP_TAG_NONE)
 * @err: 0 (QEMU returned), -EIO (QEMU answered an error), -ETIMEDOUT (no
 *	answer within the timeout: the connection was reset), -ECONNRESET
 *	(QEMU closed the connection), another -errno
 * @msg: for @err != 0: "qmp: PATH: COMMAND: why" (QEMU's "desc" for -EIO)
 * @status: for @err 0, the "status" string of the answer's "return"
 *	object when it has one (query-status: "running", "suspended", ...),
 *	else ""
 */
struct qmp_done {
	uint64_t tag;
	char command[32];
	int err;
	char msg[320];
	char status[32];
};

/**
 * qmp_new() - connect to a QMP unix socket and leave capabilities mode
 * @path: the socket (QEMU's -qmp unix:PATH,server=on,wait=off)
 * @timeout_ms: bound for the greeting and the qmp_capabilities answer, and
 *	later for the answer to every request
 *
 * Return: a connection the caller frees with qmp_free(), or NULL with
 * errno set and sbrig_errmsg() "qmp: PATH: why".
 */
struct qmp *qmp_new(const char *path, int timeout_ms);

/** qmp_free() - close the connection (unanswered requests are dropped); NULL ok */
void qmp_free(struct qmp *q);

/**
 * qmp_send() - queue a request and write it at once if the socket takes it
 * @q: the connection
 * @command: e.g. "input-send-event" (at most 31 bytes)
 * @args: the "arguments" object, or NULL; consumed (freed) in every case
 * @tag: the caller's, returned in its struct qmp_done
 * @sent_ns: out (may be NULL): CLOCK_MONOTONIC when it was written to the
 *	socket, or when it was queued if the connection is being made again
 *
 * Never waits. A connection lost earlier is made again here (a unix
 * socket connects at once or fails).
 *
 * Return: 0, -ENOBUFS (QMP_MAX_PENDING unanswered), or -errno of the
 * reconnection; sbrig_errmsg() names the socket and the command.
 */
int qmp_send(struct qmp *q, const char *command, struct json_object *args,
	     uint64_t tag, int64_t *sent_ns);

/**
 * qmp_process() - do I/O and timeouts; hand out one finished request
 * @q: the connection
 * @revents: the revents of qmp_fd() (0 if only the deadline passed, or to
 *	just try reading)
 * @done: out: filled when 1 is returned
 *
 * Call until it returns 0. Asynchronous events QEMU sends (SUSPEND,
 * WAKEUP, ...) are read and dropped.
 *
 * Return: 1 with @done filled, 0 when nothing (more) is finished.
 */
int qmp_process(struct qmp *q, short revents, struct qmp_done *done);

/** qmp_fd() - the socket to poll, or -1 while disconnected */
int qmp_fd(const struct qmp *q);

/** qmp_events() - what to poll qmp_fd() for (POLLIN, POLLOUT if output waits) */
short qmp_events(const struct qmp *q);

/**
 * qmp_deadline() - when qmp_process() must run even without revents
 *
 * Return: CLOCK_MONOTONIC ns (the first unanswered request's timeout, or a
 * finished request not handed out yet: now), INT64_MAX if none.
 */
int64_t qmp_deadline(const struct qmp *q);

/** qmp_pending() - requests not answered yet */
unsigned int qmp_pending(const struct qmp *q);

/** qmp_path() - the socket path the connection was made to */
const char *qmp_path(const struct qmp *q);

#endif /* SBRIG_QMP_H */
