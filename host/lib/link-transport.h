/* SPDX-License-Identifier: GPL-2.0 */
/*
 * link-transport.h - byte transports of the target link (private).
 *
 * One ops table per URI scheme; link.c picks one by prefix. Every
 * transport is non-blocking and translates its library's errors into
 * -errno + sbrig_set_error() message itself.
 */
#ifndef SBRIG_LINK_TRANSPORT_H
#define SBRIG_LINK_TRANSPORT_H

#include <stdbool.h>
#include <sys/types.h>

/**
 * struct link_transport_ops - one transport
 * @prefix: URI prefix ("tcp:")
 * @check: validate the URI syntax (0 or -EINVAL)
 * @open: start opening; *tr is the state (freed by @close). Return 1 if
 *	open, 0 if in progress (poll POLLOUT, then call @connected), -errno
 * @connected: 1 open, 0 still in progress, -errno failed
 * @read: bytes read (>0), 0 if nothing now, -errno on error or end of file
 * @write: bytes written (>= 0), -errno on error
 * @fd: the descriptor to poll
 * @close: close and free; NULL ok
 * @reopen_on_silence: a silent agent may mean a dead transport that only a
 *	reopen repairs (a USB serial adapter unplugged and plugged again: the
 *	old descriptor reads nothing forever). False where the transport
 *	reports its own failures (TCP: end of file, reset, TCP_USER_TIMEOUT)
 *	and silence is only the target's (a suspended target)
 */
struct link_transport_ops {
	const char *prefix;
	int (*check)(const char *uri);
	int (*open)(const char *uri, void **tr);
	int (*connected)(void *tr);
	ssize_t (*read)(void *tr, void *buf, size_t len);
	ssize_t (*write)(void *tr, const void *buf, size_t len);
	int (*fd)(void *tr);
	void (*close)(void *tr);
	bool reopen_on_silence;
};

extern const struct link_transport_ops link_serial_ops;
extern const struct link_transport_ops link_tcp_ops;

int link_transport_lookup(const char *uri,
			  const struct link_transport_ops **ops);

#endif /* SBRIG_LINK_TRANSPORT_H */
