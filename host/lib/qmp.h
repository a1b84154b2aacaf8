/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qmp.h - a minimal QEMU Machine Protocol client (private to libsbrig).
 *
 * Used by gpio.c's qmp backend to press the keys of a virtual target.
 * Every exchange is a short, bounded, blocking one: the socket itself is
 * non-blocking and each wait is a poll() with the caller's timeout, so a
 * daemon's poll loop stalls at most that long (a local QEMU answers in
 * well under a millisecond; a key press is two requests). Asynchronous
 * events QEMU sends between requests (SUSPEND, WAKEUP, ...) are read and
 * dropped. Not thread-safe: one connection per thread.
 */
#ifndef SBRIG_QMP_H
#define SBRIG_QMP_H

struct qmp;

/**
 * qmp_new() - connect to a QMP unix socket and leave capabilities mode
 * @path: the socket (QEMU's -qmp unix:PATH,server=on,wait=off)
 * @timeout_ms: bound for the greeting and the qmp_capabilities answer
 *
 * Return: a connection the caller frees with qmp_free(), or NULL with
 * errno set and sbrig_errmsg() "qmp: PATH: why".
 */
struct qmp *qmp_new(const char *path, int timeout_ms);

/** qmp_free() - close the connection; NULL ok */
void qmp_free(struct qmp *q);

/**
 * qmp_execute() - run one command and wait for its answer
 * @q: the connection
 * @command: e.g. "input-send-event"
 * @args_json: the "arguments" object as JSON text, or NULL
 * @timeout_ms: longest wait for the answer
 *
 * Events received meanwhile are dropped. If the connection was lost
 * (QEMU restarted), it is opened again once before giving up.
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the socket path and the
 * command (-EIO: QEMU answered with an error, its "desc" is in the
 * message; -ETIMEDOUT: no answer in time).
 */
int qmp_execute(struct qmp *q, const char *command, const char *args_json,
		int timeout_ms);

/** qmp_path() - the socket path the connection was made to */
const char *qmp_path(const struct qmp *q);

#endif /* SBRIG_QMP_H */
