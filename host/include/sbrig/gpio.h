/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: rig GPIO lines (libgpiod v2)
 *
 * Keys and the charger switch are outputs, requested inactive at start;
 * the marker is an input with edge events carrying the kernel's
 * CLOCK_MONOTONIC timestamps. One sbrig_gpio owns every line of a rig.
 */
#ifndef SBRIG_GPIO_H
#define SBRIG_GPIO_H

#include <stdbool.h>
#include <stddef.h>
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
 * @t_ns: if not NULL, set to CLOCK_MONOTONIC right after the change
 *
 * Return: 0 or -errno (-ENOENT: no such output line).
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
