/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: rig GPIO lines (libgpiod v2)
 *
 * Keys and the charger switch are outputs, requested inactive at start;
 * the marker is an input with edge events carrying the kernel's
 * CLOCK_MONOTONIC timestamps. One sbrig_gpio owns every line of a rig.
 *
 * A chip spelled qmp:PATH is the keyboard of a QEMU guest, driven over
 * its QMP socket. Only the connect in sbrig_gpio_new() waits (at most
 * 1 s); afterwards the object is part of the caller's poll loop: poll the
 * fds of sbrig_gpio_fds() (with the deadline of sbrig_gpio_deadline()) and
 * hand the result to sbrig_gpio_process(), which reports what QEMU
 * answered to earlier sbrig_gpio_set() calls.
 */
#ifndef SBRIG_GPIO_H
#define SBRIG_GPIO_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sbrig/config.h>
#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_gpio;

/**
 * sbrig_gpio_new() - request all lines a config describes
 * @cfg: the rig; lines with present == false are skipped
 * @consumer: consumer label shown by gpioinfo (e.g. "sbrigd")
 *
 * Return: a new object the caller frees with sbrig_gpio_free(), or NULL
 * with errno set and sbrig_errmsg() naming the chip and line.
 */
struct sbrig_gpio *sbrig_gpio_new(const struct sbrig_config *cfg,
				  const char *consumer);

/**
 * sbrig_gpio_check_chip() - check a line's chip spelling (config [*] chip)
 * @chip: a gpiochip path, name or label (anything non-empty: whether it
 *	exists shows when it is opened), or qmp:PATH (PATH a unix socket
 *	path that fits a sockaddr_un)
 *
 * Syntax only, libc only (config.c calls it); the qmp backend parses the
 * chip with the same code.
 *
 * Return: 0, or -EINVAL with sbrig_errmsg() "'CHIP': expected qmp:PATH ...".
 */
int sbrig_gpio_check_chip(const char *chip);

/** sbrig_gpio_free() - release all lines (outputs go inactive); NULL ok */
void sbrig_gpio_free(struct sbrig_gpio *gpio);

/**
 * sbrig_gpio_set() - drive an output line
 * @gpio: the rig's lines
 * @name: key name or "charger"
 * @active: logical value (active_low is applied)
 * @t_ns: if not NULL, set to CLOCK_MONOTONIC right after the change; for a
 *	qmp: key, when the request was written to QEMU's socket
 *
 * Never waits. A qmp: key's request is sent and the call returns; its
 * answer is handled by sbrig_gpio_process() (and read by the next set if
 * the caller does not poll). Setting the value a line has sends nothing.
 *
 * Return: 0 or -errno (-ENOENT: no such output line; qmp: -ENOBUFS with 16
 * requests unanswered, or the -errno of connecting again to a QEMU that
 * went away), with sbrig_errmsg() naming the line.
 */
int sbrig_gpio_set(struct sbrig_gpio *gpio, const char *name, bool active,
		   int64_t *t_ns);

/**
 * sbrig_gpio_get() - read a line's logical value (outputs and the marker)
 * @gpio: the rig's lines
 * @name: line name
 *
 * Return: 0 or 1, or -errno.
 */
int sbrig_gpio_get(struct sbrig_gpio *gpio, const char *name);

/**
 * sbrig_gpio_event_fd() - fd that becomes readable when edges are pending
 * @gpio: the rig's lines
 *
 * Return: an fd owned by @gpio, or -1 when no marker is configured.
 */
int sbrig_gpio_event_fd(struct sbrig_gpio *gpio);

/**
 * sbrig_gpio_fds() - every fd the object wants the caller's poll() to watch
 * @gpio: the rig's lines
 * @pfds: out: fd and events of each (revents zeroed)
 * @max: room in @pfds (SBRIG_MAX_KEYS + 2 always suffices)
 *
 * The marker's edge-event fd (POLLIN; read the edges with
 * sbrig_gpio_read_edges()) and the socket of each qmp: chip (POLLIN, and
 * POLLOUT while a request waits to be written). The set changes (a qmp
 * connection lost and made again): call it before every poll().
 *
 * Return: the number of entries filled, or -ENOSPC if @max is too small.
 */
int sbrig_gpio_fds(struct sbrig_gpio *gpio, struct pollfd *pfds, size_t max);

/**
 * sbrig_gpio_process() - handle what poll() found, and timeouts
 * @gpio: the rig's lines
 * @pfds: the entries sbrig_gpio_fds() filled, with their revents (other
 *	entries are ignored: the caller may pass its whole poll set)
 * @n: their count (0: only the deadline passed)
 *
 * Reads the answers to qmp requests. Call it when an fd of
 * sbrig_gpio_fds() has revents and at sbrig_gpio_deadline(). Errors
 * found here belong to earlier sbrig_gpio_set() calls: QEMU answered an
 * error (-EIO, with its description), no answer within 1 s (-ETIMEDOUT:
 * the connection is reset), QEMU closed the connection (-ECONNRESET: the
 * next sbrig_gpio_set() connects again; a key it had down is up). A key
 * whose "down" failed reads as up again.
 *
 * Return: 0, or the first -errno found, with sbrig_errmsg() naming the key,
 * the socket and the command ("gpio: key power (power) down: qmp: PATH:
 * input-send-event: VM not running"); later ones are logged.
 */
int sbrig_gpio_process(struct sbrig_gpio *gpio, const struct pollfd *pfds,
		       size_t n);

/**
 * sbrig_gpio_deadline() - when sbrig_gpio_process() must run without revents
 * @gpio: the rig's lines
 *
 * Return: CLOCK_MONOTONIC ns (an unanswered request's timeout; 0 when an
 * error waits to be returned), or INT64_MAX when nothing is due.
 */
int64_t sbrig_gpio_deadline(struct sbrig_gpio *gpio);

/**
 * sbrig_gpio_pending() - qmp requests sent and not answered yet
 * @gpio: the rig's lines
 *
 * At most 16 per qmp: chip: sbrig_gpio_set() fails with -ENOBUFS beyond.
 *
 * Return: their number (0 without qmp: chips).
 */
unsigned int sbrig_gpio_pending(struct sbrig_gpio *gpio);

/**
 * sbrig_gpio_read_edges() - read pending edges without blocking
 * @gpio: the rig's lines
 * @edges: out array
 * @max: its size
 *
 * Return: number of edges stored (0 if none pending), or -errno.
 */
ssize_t sbrig_gpio_read_edges(struct sbrig_gpio *gpio,
			      struct sbrig_edge *edges, size_t max);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_GPIO_H */
