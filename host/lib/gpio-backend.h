/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpio-backend.h - the backends behind gpio.c (private).
 *
 * gpio.c groups the configured lines by chip and hands each chip to the
 * backend its spelling selects, as link.c hands a URI to a transport:
 * gpio-gpiod.c (libgpiod v2: real chips and gpio-sim) and gpio-qmp.c
 * ("qmp:/path/to/qmp.sock": the keys and charger of a QEMU target). What
 * a backend does not have (the qmp backend has no edges, libgpiod needs
 * no poll of its own) it leaves NULL.
 */
#ifndef SBRIG_GPIO_BACKEND_H
#define SBRIG_GPIO_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <sbrig/config.h>
#include <sbrig/records.h>

#define GPIO_MAX_LINES (SBRIG_MAX_KEYS + 2)

struct sbrig_gpio;
struct gpio_line;
struct gpio_chip_req;

/**
 * struct gpio_backend - how the lines of one chip are driven
 * @prefix: the chip spelling that selects it ("qmp:"); NULL: the default
 * @open: open the chip once, before any request, and say which device it
 *	is (*@id: two spellings of one chip have one id; 0: unknown). A
 *	failure is not reported here: @request says it. Optional.
 * @request: take every line of chip @ci (outputs inactive); 0 or -errno
 * @set: drive output line @l; 0 or -errno with the message set; *@t_ns:
 *	when it took effect (or, for qmp, when the request was sent)
 * @get: read line @l; 0, 1 or -errno with the message set
 * @release: let go of the chip, and close what @open opened (after the
 *	outputs were set inactive); called once @open or @request ran
 * @fd: the descriptor to poll and its events, -1 none (optional)
 * @process: handle what @fd reported; 0 or the first -errno (optional)
 * @deadline: when @process is due without @fd (optional)
 * @pending: requests without their answer (optional)
 * @edge_fd: the marker line's edges' descriptor (optional)
 * @read_edges: take up to @max of the marker line's edges (optional)
 */
struct gpio_backend {
	const char *prefix;
	void (*open)(struct gpio_chip_req *c, uint64_t *id);
	int (*request)(struct sbrig_gpio *gpio, unsigned int ci,
		       const char *consumer);
	int (*set)(struct gpio_chip_req *c, struct gpio_line *l, bool active,
		   int64_t *t_ns);
	int (*get)(struct gpio_chip_req *c, struct gpio_line *l);
	void (*release)(struct gpio_chip_req *c);
	int (*fd)(struct gpio_chip_req *c, short *events);
	int (*process)(struct gpio_chip_req *c, short revents);
	int64_t (*deadline)(struct gpio_chip_req *c);
	unsigned int (*pending)(struct gpio_chip_req *c);
	int (*edge_fd)(struct gpio_chip_req *c);
	ssize_t (*read_edges)(struct gpio_chip_req *c, struct gpio_line *m,
			      struct sbrig_edge *edges, size_t max);
};

extern const struct gpio_backend gpio_gpiod_backend;
extern const struct gpio_backend gpio_qmp_backend;

/**
 * struct gpio_chip_req - one chip and what holds its lines
 * @spec: the chip as the config first named it (for messages)
 * @path: resolved /dev path (libgpiod) or socket path (qmp)
 * @be: its backend
 * @requested: @be->request succeeded
 * @priv: the backend's state (owned by it; NULL: nothing to release)
 * @gpio: the object the chip belongs to
 */
struct gpio_chip_req {
	char spec[sizeof(((struct sbrig_line_cfg *)0)->chip)];
	char path[PATH_MAX];
	const struct gpio_backend *be;
	bool requested;
	void *priv;
	struct sbrig_gpio *gpio;
};

/**
 * struct gpio_line - one rig line
 * @cfg: copy of its config
 * @output: key or charger (false: the marker input)
 * @chip: index into sbrig_gpio.chips
 * @value: last logical value set (qmp backend: what get() answers)
 * @qcode: QEMU key name (qmp backend; "charger" for its charger line)
 */
struct gpio_line {
	struct sbrig_line_cfg cfg;
	bool output;
	unsigned int chip;
	bool value;
	const char *qcode;
};

/**
 * struct sbrig_gpio - the rig's lines
 * @chips: the chips, @nchips of them
 * @lines: the lines, @nlines of them
 * @marker: index into @lines, -1: none
 * @deferred_err: an error found outside sbrig_gpio_process(), for it to
 *	return; @deferred_msg its message
 */
struct sbrig_gpio {
	struct gpio_chip_req chips[GPIO_MAX_LINES];
	unsigned int nchips;
	struct gpio_line lines[GPIO_MAX_LINES];
	unsigned int nlines;
	int marker;
	int deferred_err;
	char deferred_msg[384];
};

/* Keep an error found outside sbrig_gpio_process() for it to return. */
void gpio_defer_error(struct sbrig_gpio *gpio, int err);

#endif /* SBRIG_GPIO_BACKEND_H */
