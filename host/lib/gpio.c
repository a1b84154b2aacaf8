// SPDX-License-Identifier: GPL-2.0
/*
 * gpio.c - the rig's GPIO lines through libgpiod v2.
 *
 * Every configured line (keys, charger: outputs; marker: input with edge
 * events) is grouped by chip: one gpiod_line_request per chip holds all of
 * that chip's lines. Chips are named in the config by path (/dev/gpiochip2),
 * by name (gpiochip2) or by label (gpio-sim.0-node0, 4804c000.gpio); two
 * spellings of the same chip share one request. Outputs are requested
 * inactive; active_low is handed to the kernel, so every value and edge
 * here is logical. The marker's edges carry the kernel's CLOCK_MONOTONIC
 * timestamps (the event clock is set explicitly).
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
#include <time.h>

#include <sbrig/gpio.h>

#include "internal.h"

#define GPIO_MAX_LINES (SBRIG_MAX_KEYS + 2)
#define GPIO_EVENT_BUF 64

/**
 * struct gpio_chip_req - one chip and the request holding its lines
 * @spec: the chip as the config first named it (for messages)
 * @path: resolved /dev path
 * @req: the line request (owned)
 */
struct gpio_chip_req {
	char spec[64];
	char path[PATH_MAX];
	struct gpiod_line_request *req;
};

/**
 * struct gpio_line - one rig line
 * @cfg: copy of its config
 * @output: key or charger (false: the marker input)
 * @chip: index into sbrig_gpio.chips
 */
struct gpio_line {
	struct sbrig_line_cfg cfg;
	bool output;
	unsigned int chip;
};

struct sbrig_gpio {
	struct gpio_chip_req chips[GPIO_MAX_LINES];
	unsigned int nchips;
	struct gpio_line lines[GPIO_MAX_LINES];
	unsigned int nlines;
	int marker;		/* index into lines, -1: none */
	struct gpiod_edge_event_buffer *events;
};

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

/* Request every line of chip @ci in one request. */
static int chip_request(struct sbrig_gpio *gpio, unsigned int ci,
			const char *consumer)
{
	struct gpio_chip_req *c = &gpio->chips[ci];
	struct gpiod_request_config *rcfg = NULL;
	struct gpiod_line_settings *s = NULL;
	struct gpiod_line_config *lcfg = NULL;
	struct gpiod_chip_info *info = NULL;
	struct gpiod_chip *chip;
	const struct gpio_line *first = NULL;
	unsigned int i, nlines;
	int ret;

	for (i = 0; i < gpio->nlines && !first; i++)
		if (gpio->lines[i].chip == ci)
			first = &gpio->lines[i];

	chip = chip_open(c->spec, c->path, sizeof(c->path));
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
	c->req = gpiod_chip_request_lines(chip, rcfg, lcfg);
	if (!c->req) {
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

/* Add @cfg as a line of @gpio, grouping by chip spelling (exact). */
static void add_line(struct sbrig_gpio *gpio, const struct sbrig_line_cfg *cfg,
		     bool output)
{
	struct gpio_line *l = &gpio->lines[gpio->nlines++];
	unsigned int ci;

	l->cfg = *cfg;
	l->output = output;
	for (ci = 0; ci < gpio->nchips; ci++)
		if (strcmp(gpio->chips[ci].spec, cfg->chip) == 0)
			break;
	if (ci == gpio->nchips) {
		snprintf(gpio->chips[ci].spec, sizeof(gpio->chips[ci].spec), "%s",
			 cfg->chip);
		gpio->nchips++;
	}
	l->chip = ci;
}

/* Two spellings of one chip would make two requests that collide: merge. */
static void merge_same_chips(struct sbrig_gpio *gpio)
{
	struct stat st[GPIO_MAX_LINES];
	char path[PATH_MAX];
	unsigned int a, b, i;

	for (a = 0; a < gpio->nchips; a++) {
		struct gpiod_chip *chip = chip_open(gpio->chips[a].spec, path,
						    sizeof(path));

		if (!chip || stat(path, &st[a])) {
			gpiod_chip_close(chip);
			memset(&st[a], 0, sizeof(st[a]));
			continue;	/* chip_request() reports it */
		}
		gpiod_chip_close(chip);
		for (b = 0; b < a; b++) {
			if (!st[b].st_rdev || st[b].st_rdev != st[a].st_rdev)
				continue;
			for (i = 0; i < gpio->nlines; i++)
				if (gpio->lines[i].chip == a)
					gpio->lines[i].chip = b;
			st[a].st_rdev = 0;	/* chip a is now empty */
			break;
		}
	}
}

struct sbrig_gpio *sbrig_gpio_new(const struct sbrig_config *cfg,
				  const char *consumer)
{
	struct sbrig_gpio *gpio;
	unsigned int i, ci;
	int ret;

	gpio = calloc(1, sizeof(*gpio));
	if (!gpio) {
		sbrig_set_error(-ENOMEM, "gpio: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	gpio->marker = -1;
	for (i = 0; i < cfg->nkeys; i++)
		if (cfg->keys[i].present)
			add_line(gpio, &cfg->keys[i], true);
	if (cfg->charger.present)
		add_line(gpio, &cfg->charger, true);
	if (cfg->marker.present) {
		gpio->marker = gpio->nlines;
		add_line(gpio, &cfg->marker, false);
	}
	merge_same_chips(gpio);

	for (ci = 0; ci < gpio->nchips; ci++) {
		bool used = false;

		for (i = 0; i < gpio->nlines; i++)
			used |= gpio->lines[i].chip == ci;
		if (!used)
			continue;
		ret = chip_request(gpio, ci, consumer ? consumer : "sbrig");
		if (ret)
			goto free_gpio;
	}
	if (gpio->marker >= 0) {
		gpio->events = gpiod_edge_event_buffer_new(GPIO_EVENT_BUF);
		if (!gpio->events) {
			ret = sbrig_set_error(-ENOMEM, "gpio: out of memory");
			goto free_gpio;
		}
	}
	return gpio;

free_gpio:
	sbrig_gpio_free(gpio);
	errno = -ret;
	return NULL;
}

void sbrig_gpio_free(struct sbrig_gpio *gpio)
{
	unsigned int i;

	if (!gpio)
		return;
	for (i = 0; i < gpio->nlines; i++) {
		struct gpio_line *l = &gpio->lines[i];
		struct gpiod_line_request *req = gpio->chips[l->chip].req;

		if (l->output && req)
			gpiod_line_request_set_value(req, l->cfg.offset,
						     GPIOD_LINE_VALUE_INACTIVE);
	}
	for (i = 0; i < gpio->nchips; i++)
		gpiod_line_request_release(gpio->chips[i].req);
	gpiod_edge_event_buffer_free(gpio->events);
	free(gpio);
}

static struct gpio_line *find_line(struct sbrig_gpio *gpio, const char *name)
{
	unsigned int i;

	for (i = 0; i < gpio->nlines; i++)
		if (strcmp(gpio->lines[i].cfg.name, name) == 0)
			return &gpio->lines[i];
	return NULL;
}

int sbrig_gpio_set(struct sbrig_gpio *gpio, const char *name, bool active,
		   int64_t *t_ns)
{
	struct gpio_line *l = find_line(gpio, name);
	struct gpio_chip_req *c;

	if (!l || !l->output)
		return sbrig_set_error(-ENOENT, "gpio: no output line '%s'", name);
	c = &gpio->chips[l->chip];
	if (gpiod_line_request_set_value(c->req, l->cfg.offset,
			active ? GPIOD_LINE_VALUE_ACTIVE :
				 GPIOD_LINE_VALUE_INACTIVE))
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): set %d: %s",
				       c->spec, l->cfg.offset, name, active,
				       strerror(errno));
	if (t_ns)
		*t_ns = sbrig_now_ns();
	return 0;
}

int sbrig_gpio_get(struct sbrig_gpio *gpio, const char *name)
{
	struct gpio_line *l = find_line(gpio, name);
	struct gpio_chip_req *c;
	enum gpiod_line_value v;

	if (!l)
		return sbrig_set_error(-ENOENT, "gpio: no line '%s'", name);
	c = &gpio->chips[l->chip];
	v = gpiod_line_request_get_value(c->req, l->cfg.offset);
	if (v == GPIOD_LINE_VALUE_ERROR)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): get: %s",
				       c->spec, l->cfg.offset, name,
				       strerror(errno));
	return v == GPIOD_LINE_VALUE_ACTIVE;
}

int sbrig_gpio_event_fd(struct sbrig_gpio *gpio)
{
	if (!gpio || gpio->marker < 0)
		return -1;
	return gpiod_line_request_get_fd(
		gpio->chips[gpio->lines[gpio->marker].chip].req);
}

ssize_t sbrig_gpio_read_edges(struct sbrig_gpio *gpio,
			      struct sbrig_edge *edges, size_t max)
{
	struct gpiod_line_request *req;
	struct gpio_line *m;
	struct gpio_chip_req *c;
	size_t want = max < GPIO_EVENT_BUF ? max : GPIO_EVENT_BUF;
	int n, i, ret;

	if (gpio->marker < 0)
		return sbrig_set_error(-ENOENT, "gpio: no marker line configured");
	m = &gpio->lines[gpio->marker];
	c = &gpio->chips[m->chip];
	req = c->req;
	if (!want)
		return 0;
	ret = gpiod_line_request_wait_edge_events(req, 0);
	if (ret < 0)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): wait: %s",
				       c->spec, m->cfg.offset, m->cfg.name,
				       strerror(errno));
	if (ret == 0)
		return 0;
	n = gpiod_line_request_read_edge_events(req, gpio->events, want);
	if (n < 0)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): read: %s",
				       c->spec, m->cfg.offset, m->cfg.name,
				       strerror(errno));
	for (i = 0; i < n; i++) {
		struct gpiod_edge_event *ev =
			gpiod_edge_event_buffer_get_event(gpio->events, i);
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
