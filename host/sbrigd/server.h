/* SPDX-License-Identifier: GPL-2.0 */
/*
 * server.h - the daemon's Unix socket: clients, their requests and the
 * protocol text (host/doc/daemon-protocol.md). The top module: it calls
 * the operations, the recorder and the rig, and formats what they return;
 * nothing below it writes protocol text.
 */
#ifndef SBRIGD_SERVER_H
#define SBRIGD_SERVER_H

/* Listen on @path (mode 0660). 0, or -errno with sbrig_errmsg(). */
int srv_init(const char *path);
/*
 * The daemon is stopping: take no new request, stop what runs (the
 * clients get their final answers), and send what is queued.
 */
void srv_shutdown(void);
/* Close every connection and remove the socket. */
void srv_fini(void);

#endif /* SBRIGD_SERVER_H */
