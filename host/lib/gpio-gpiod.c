// SPDX-License-Identifier: GPL-2.0
/*
 * gpio-gpiod.c - the libgpiod v2 backend of gpio.c (gpio-backend.h).
 *
 * One gpiod_line_request per chip holds all of that chip's lines. Chips
 * are named in the config by path (/dev/gpiochip2), by name (gpiochip2)
 * or by label (gpio-sim.0-node0, 4804c000.gpio); each is opened once
 * (gpiod_open(): its device number lets gpio.c merge two spellings of one
 * chip) and closed once its lines are requested. Outputs are requested
 * inactive; active_low is handed to the kernel, so every value and edge
 * here is logical. The marker's edges carry the kernel's CLOCK_MONOTONIC
 * timestamps (the event clock is set explicitly), in a kernel buffer of
 * GPIO_KERNEL_EDGE_BUF.
 *
 * libgpiod reports errors through errno only; they are turned into -errno
 * plus a message naming the chip and line here, once.
 */
#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpio-backend.h"
#include "internal.h"

#define GPIO_EVENT_BUF 64
/*
 * The kernel's edge buffer of the marker line's request: its largest
 * (Linux clamps to 16 per line of the 64 a request may hold). The
 * default, 16 for one line, overflows after a 200 ms stall of the rig's
 * loop while blockers toggle faster than 80 Hz; a jump in the edges'
 * seqno says how many were lost anyway (marker.c restarts its pairing).
 */
#define GPIO_KERNEL_EDGE_BUF 1024

/**
 * struct gpiod_state - one chip's libgpiod objects
 * @chip: open from gpiod_open() until the request holds the lines
 * @req: the line request
 * @events: the marker's edge buffer (its chip only)
 */
struct gpiod_state {
	struct gpiod_chip *chip;
	struct gpiod_line_request *req;
	struct gpiod_edge_event_buffer *events;
};

/* The chip's state, made on first use; NULL: out of memory. */
static struct gpiod_state *state(struct gpio_chip_req *c)
{
	if (!c->priv)
		c->priv = calloc(1, sizeof(struct gpiod_state));
	return c->priv;
}

/* Open @spec as a path, a chip name or a chip label; sets @path. */
static struct gpiod_chip *chip_open(const char *spec, char *path,
				    size_t size)
{
	struct gpiod_chip *chip;
	struct dirent *de;
	DIR *dir;
	int err = ENOENT;

	if (spec[0] == '/') {
		snprintf(path, size, "%s", spec);
		return gpiod_chip_open(path);
	}
	snprintf(path, size, "/dev/%s", spec);
	if (strncmp(spec, "gpiochip", 8) == 0 && gpiod_is_gpiochip_device(path))
		return gpiod_chip_open(path);

	dir = opendir("/dev");
	if (!dir)
		return NULL;
	while ((de = readdir(dir))) {
		struct gpiod_chip_info *info;
		bool match;

		if (strncmp(de->d_name, "gpiochip", 8) != 0)
			continue;
		snprintf(path, size, "/dev/%s", de->d_name);
		if (!gpiod_is_gpiochip_device(path))
			continue;
		chip = gpiod_chip_open(path);
		if (!chip) {
			err = errno;
			continue;
		}
		info = gpiod_chip_get_info(chip);
		match = info && strcmp(gpiod_chip_info_get_label(info), spec) == 0;
		gpiod_chip_info_free(info);
		if (match) {
			closedir(dir);
			return chip;
		}
		gpiod_chip_close(chip);
	}
	closedir(dir);
	errno = err;
	return NULL;
}

/* Fill in the settings of one line. */
static int line_settings(struct gpiod_line_settings *s,
			 const struct gpio_line *l)
{
	gpiod_line_settings_set_active_low(s, l->cfg.active_low);
	if (l->output) {
		if (gpiod_line_settings_set_direction(s,
				GPIOD_LINE_DIRECTION_OUTPUT) ||
		    gpiod_line_settings_set_output_value(s,
				GPIOD_LINE_VALUE_INACTIVE))
			return -errno;
		return 0;
	}
	if (gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_INPUT) ||
	    gpiod_line_settings_set_edge_detection(s, GPIOD_LINE_EDGE_BOTH) ||
	    gpiod_line_settings_set_event_clock(s,
				GPIOD_LINE_CLOCK_MONOTONIC))
		return -errno;
	return 0;
}

/* Open the chip once; its device number merges two spellings of it. */
static void gpiod_open(struct gpio_chip_req *c, uint64_t *id)
{
	struct gpiod_state *st = state(c);
	struct stat sb;

	*id = 0;
	if (!st)
		return;
	st->chip = chip_open(c->spec, c->path, sizeof(c->path));
	if (st->chip && !stat(c->path, &sb))
		*id = (uint64_t)sb.st_rdev;
}

/* libgpiod backend: request every line of chip @ci in one request. */
static int gpiod_request(struct sbrig_gpio *gpio, unsigned int ci,
			 const char *consumer)
{
	struct gpio_chip_req *c = &gpio->chips[ci];
	struct gpiod_request_config *rcfg = NULL;
	struct gpiod_line_settings *s = NULL;
	struct gpiod_line_config *lcfg = NULL;
	struct gpiod_chip_info *info = NULL;
	struct gpiod_state *st = state(c);
	struct gpiod_chip *chip;
	const struct gpio_line *first = NULL;
	unsigned int i, nlines;
	int ret;

	for (i = 0; i < gpio->nlines && !first; i++)
		if (gpio->lines[i].chip == ci)
			first = &gpio->lines[i];

	if (!st)
		return sbrig_set_error(-ENOMEM, "gpio: chip '%s': out of memory",
				       c->spec);
	/* opened by gpiod_open() (once), or again to say why it cannot be */
	chip = st->chip ? st->chip : chip_open(c->spec, c->path,
					       sizeof(c->path));
	st->chip = NULL;
	if (!chip)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): %s",
				       c->spec, first->cfg.offset,
				       first->cfg.name,
				       errno == ENOENT ? "no such chip" :
				       strerror(errno));
	info = gpiod_chip_get_info(chip);
	if (!info) {
		ret = sbrig_set_error(-errno, "gpio: chip '%s' (%s): info: %s",
				      c->spec, c->path, strerror(errno));
		goto close_chip;
	}
	nlines = gpiod_chip_info_get_num_lines(info);

	s = gpiod_line_settings_new();
	lcfg = gpiod_line_config_new();
	rcfg = gpiod_request_config_new();
	if (!s || !lcfg || !rcfg) {
		ret = sbrig_set_error(-ENOMEM, "gpio: chip '%s': out of memory",
				      c->spec);
		goto free_configs;
	}
	gpiod_request_config_set_consumer(rcfg, consumer);
	if (gpio->marker >= 0 && gpio->lines[gpio->marker].chip == ci)
		gpiod_request_config_set_event_buffer_size(rcfg,
							   GPIO_KERNEL_EDGE_BUF);
	for (i = 0; i < gpio->nlines; i++) {
		const struct gpio_line *l = &gpio->lines[i];
		unsigned int off = l->cfg.offset;

		if (l->chip != ci)
			continue;
		if (off >= nlines) {
			ret = sbrig_set_error(-EINVAL,
				"gpio: chip '%s' line %u (%s): the chip has %u lines",
				c->spec, off, l->cfg.name, nlines);
			goto free_configs;
		}
		gpiod_line_settings_reset(s);
		ret = line_settings(s, l);
		if (!ret && gpiod_line_config_add_line_settings(lcfg, &off, 1, s))
			ret = -errno;
		if (ret) {
			sbrig_set_error(ret, "gpio: chip '%s' line %u (%s): settings: %s",
					c->spec, off, l->cfg.name, strerror(-ret));
			goto free_configs;
		}
	}
	if (gpio->marker >= 0 && gpio->lines[gpio->marker].chip == ci) {
		st->events = gpiod_edge_event_buffer_new(GPIO_EVENT_BUF);
		if (!st->events) {
			ret = sbrig_set_error(-ENOMEM,
					      "gpio: chip '%s': out of memory",
					      c->spec);
			goto free_configs;
		}
	}
	st->req = gpiod_chip_request_lines(chip, rcfg, lcfg);
	if (!st->req) {
		ret = -errno;
		/* name the lines: the kernel does not say which one is busy */
		sbrig_set_error(ret, "gpio: chip '%s' line %u (%s)%s: request: %s",
				c->spec, first->cfg.offset, first->cfg.name,
				gpiod_line_config_get_num_configured_offsets(lcfg) > 1 ?
				" and others" : "",
				ret == -EBUSY ? "line busy (used by another consumer)" :
				strerror(-ret));
		goto free_configs;
	}
	ret = 0;
free_configs:
	gpiod_request_config_free(rcfg);
	gpiod_line_config_free(lcfg);
	gpiod_line_settings_free(s);
	gpiod_chip_info_free(info);
close_chip:
	gpiod_chip_close(chip);
	return ret;
}

static int gpiod_set(struct gpio_chip_req *c, struct gpio_line *l, bool active,
		     int64_t *t_ns)
{
	if (gpiod_line_request_set_value(state(c)->req, l->cfg.offset,
			active ? GPIOD_LINE_VALUE_ACTIVE :
				 GPIOD_LINE_VALUE_INACTIVE))
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): set %d: %s",
				       c->spec, l->cfg.offset, l->cfg.name,
				       active, strerror(errno));
	if (t_ns)
		*t_ns = sbrig_now_ns();
	l->value = active;
	return 0;
}

static int gpiod_get(struct gpio_chip_req *c, struct gpio_line *l)
{
	enum gpiod_line_value v;

	v = gpiod_line_request_get_value(state(c)->req, l->cfg.offset);
	if (v == GPIOD_LINE_VALUE_ERROR)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): get: %s",
				       c->spec, l->cfg.offset, l->cfg.name,
				       strerror(errno));
	return v == GPIOD_LINE_VALUE_ACTIVE;
}

static ssize_t gpiod_read_edges(struct gpio_chip_req *c, struct gpio_line *m,
				struct sbrig_edge *edges, size_t max)
{
	struct gpiod_state *st = state(c);
	struct gpiod_line_request *req = st->req;
	size_t want = max < GPIO_EVENT_BUF ? max : GPIO_EVENT_BUF;
	int n, i, ret;

	if (!want)
		return 0;
	ret = gpiod_line_request_wait_edge_events(req, 0);
	if (ret < 0)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): wait: %s",
				       c->spec, m->cfg.offset, m->cfg.name,
				       strerror(errno));
	if (ret == 0)
		return 0;
	n = gpiod_line_request_read_edge_events(req, st->events, want);
	if (n < 0)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): read: %s",
				       c->spec, m->cfg.offset, m->cfg.name,
				       strerror(errno));
	for (i = 0; i < n; i++) {
		struct gpiod_edge_event *ev =
			gpiod_edge_event_buffer_get_event(st->events, i);
		struct sbrig_edge *e = &edges[i];

		memset(e, 0, sizeof(*e));
		e->t_ns = (int64_t)gpiod_edge_event_get_timestamp_ns(ev);
		snprintf(e->line, sizeof(e->line), "%s", m->cfg.name);
		e->rising = gpiod_edge_event_get_event_type(ev) ==
			    GPIOD_EDGE_EVENT_RISING_EDGE;
		e->seqno = gpiod_edge_event_get_line_seqno(ev);
	}
	return n;
}

static void gpiod_release(struct gpio_chip_req *c)
{
	struct gpiod_state *st = c->priv;

	if (!st)
		return;
	if (st->req)
		gpiod_line_request_release(st->req);
	if (st->chip)
		gpiod_chip_close(st->chip);
	gpiod_edge_event_buffer_free(st->events);
	free(st);
	c->priv = NULL;
}

static int gpiod_edge_fd(struct gpio_chip_req *c)
{
	struct gpiod_state *st = c->priv;

	return st && st->req ? gpiod_line_request_get_fd(st->req) : -1;
}

const struct gpio_backend gpio_gpiod_backend = {
	.open = gpiod_open,
	.request = gpiod_request,
	.set = gpiod_set,
	.get = gpiod_get,
	.release = gpiod_release,
	.edge_fd = gpiod_edge_fd,
	.read_edges = gpiod_read_edges,
};
