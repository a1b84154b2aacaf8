// SPDX-License-Identifier: GPL-2.0
/*
 * gpio.c - the rig's GPIO lines: keys and charger (outputs), the marker
 * (an input with edge events).
 *
 * Every configured line is grouped by chip, and each chip is served by
 * the backend its spelling selects (gpio-backend.h), as libiio chooses a
 * backend by URI prefix: gpio-qmp.c for "qmp:/path/to/qmp.sock" (the keys
 * and charger of a QEMU target), gpio-gpiod.c (libgpiod v2) for every
 * other spelling. Each chip is opened once: the backend's open() also
 * says which device it is, so that two spellings of one chip (a path and
 * a label) share one request instead of colliding. Errors carry -errno
 * and a message naming the chip and line, made once by the backend.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/gpio.h>

#include "gpio-backend.h"
#include "internal.h"

static const struct gpio_backend *const backends[] = {
	&gpio_qmp_backend,
	&gpio_gpiod_backend,	/* the default: last */
};

/* The backend that serves a chip spelled @spec. */
static const struct gpio_backend *backend_for(const char *spec)
{
	size_t i;

	for (i = 0; i < SBRIG_ARRAY_SIZE(backends); i++)
		if (!backends[i]->prefix ||
		    !strncmp(spec, backends[i]->prefix,
			     strlen(backends[i]->prefix)))
			return backends[i];
	return &gpio_gpiod_backend;
}

void gpio_defer_error(struct sbrig_gpio *gpio, int err)
{
	sbrig_warn("%s", sbrig_errmsg());
	if (gpio->deferred_err)
		return;
	gpio->deferred_err = err;
	snprintf(gpio->deferred_msg, sizeof(gpio->deferred_msg), "%s",
		 sbrig_errmsg());
}

/*
 * Add @cfg as a line of @gpio, grouping by chip spelling (exact). The role
 * is the one of the struct sbrig_config member the line came from (a
 * config built by hand need not have set it).
 */
static void add_line(struct sbrig_gpio *gpio, const struct sbrig_line_cfg *cfg,
		     enum sbrig_line_role role)
{
	struct gpio_line *l = &gpio->lines[gpio->nlines++];
	unsigned int ci;

	l->cfg = *cfg;
	l->cfg.role = role;
	l->output = role != SBRIG_LINE_MARKER;
	for (ci = 0; ci < gpio->nchips; ci++)
		if (strcmp(gpio->chips[ci].spec, cfg->chip) == 0)
			break;
	if (ci == gpio->nchips) {
		snprintf(gpio->chips[ci].spec, sizeof(gpio->chips[ci].spec), "%s",
			 cfg->chip);
		gpio->chips[ci].gpio = gpio;
		gpio->chips[ci].be = backend_for(cfg->chip);
		gpio->nchips++;
	}
	l->chip = ci;
}

static void release_chip(struct gpio_chip_req *c)
{
	if (c->requested || c->priv)
		c->be->release(c);
	c->requested = false;
}

/*
 * Open every chip once; two spellings of one chip would make two requests
 * that collide: their lines move to the first, the second is closed.
 */
static void open_chips(struct sbrig_gpio *gpio)
{
	uint64_t id[GPIO_MAX_LINES] = { 0 };
	unsigned int a, b, i;

	for (a = 0; a < gpio->nchips; a++) {
		struct gpio_chip_req *c = &gpio->chips[a];

		if (!c->be->open)
			continue;
		c->be->open(c, &id[a]);	/* a failure: request() says it */
		for (b = 0; b < a && id[a]; b++) {
			if (id[b] != id[a] || gpio->chips[b].be != c->be)
				continue;
			for (i = 0; i < gpio->nlines; i++)
				if (gpio->lines[i].chip == a)
					gpio->lines[i].chip = b;
			release_chip(c);	/* chip a is now empty */
			id[a] = 0;
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
			add_line(gpio, &cfg->keys[i], SBRIG_LINE_KEY);
	if (cfg->charger.present)
		add_line(gpio, &cfg->charger, SBRIG_LINE_CHARGER);
	if (cfg->marker.present) {
		gpio->marker = gpio->nlines;
		add_line(gpio, &cfg->marker, SBRIG_LINE_MARKER);
	}
	open_chips(gpio);

	for (ci = 0; ci < gpio->nchips; ci++) {
		bool used = false;

		for (i = 0; i < gpio->nlines; i++)
			used |= gpio->lines[i].chip == ci;
		if (!used)
			continue;
		ret = gpio->chips[ci].be->request(gpio, ci,
						  consumer ? consumer : "sbrig");
		if (ret)
			goto free_gpio;
		gpio->chips[ci].requested = true;
	}
	if (gpio->marker >= 0 &&
	    !gpio->chips[gpio->lines[gpio->marker].chip].be->read_edges) {
		const struct gpio_line *m = &gpio->lines[gpio->marker];

		ret = sbrig_set_error(-EINVAL,
			"gpio: chip '%s' line %u (%s): the marker needs a GPIO chip with edges",
			m->cfg.chip, m->cfg.offset, m->cfg.name);
		goto free_gpio;
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
		struct gpio_chip_req *c = &gpio->chips[l->chip];

		if (l->output && c->requested)
			c->be->set(c, l, false, NULL);
	}
	for (i = 0; i < gpio->nchips; i++)
		release_chip(&gpio->chips[i]);
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
	return c->be->set(c, l, active, t_ns);
}

int sbrig_gpio_get(struct sbrig_gpio *gpio, const char *name)
{
	struct gpio_line *l = find_line(gpio, name);
	struct gpio_chip_req *c;

	if (!l)
		return sbrig_set_error(-ENOENT, "gpio: no line '%s'", name);
	c = &gpio->chips[l->chip];
	return c->be->get(c, l);
}

/* --- the poll loop's view ------------------------------------------------ */

int sbrig_gpio_fds(struct sbrig_gpio *gpio, struct pollfd *pfds, size_t max)
{
	size_t n = 0;
	unsigned int i;
	int fd = sbrig_gpio_event_fd(gpio);

	if (fd >= 0) {
		if (n == max)
			return sbrig_set_error(-ENOSPC, "gpio: more than %zu fds",
					       max);
		pfds[n].fd = fd;
		pfds[n].events = POLLIN;
		pfds[n++].revents = 0;
	}
	for (i = 0; i < gpio->nchips; i++) {
		struct gpio_chip_req *c = &gpio->chips[i];
		short events = 0;

		if (!c->requested || !c->be->fd)
			continue;
		fd = c->be->fd(c, &events);
		if (fd < 0)
			continue;
		if (n == max)
			return sbrig_set_error(-ENOSPC, "gpio: more than %zu fds",
					       max);
		pfds[n].fd = fd;
		pfds[n].events = events;
		pfds[n++].revents = 0;
	}
	return (int)n;
}

int sbrig_gpio_process(struct sbrig_gpio *gpio, const struct pollfd *pfds,
		       size_t n)
{
	unsigned int i;
	size_t j;
	int first = 0, ret;

	for (i = 0; i < gpio->nchips; i++) {
		struct gpio_chip_req *c = &gpio->chips[i];
		short revents = 0, events;
		int fd;

		if (!c->requested || !c->be->process)
			continue;
		fd = c->be->fd ? c->be->fd(c, &events) : -1;
		for (j = 0; j < n; j++)
			if (fd >= 0 && pfds[j].fd == fd)
				revents |= pfds[j].revents;
		ret = c->be->process(c, revents);
		if (ret && !first)
			first = ret;
		else if (ret)
			sbrig_warn("%s", sbrig_errmsg());
	}
	if (gpio->deferred_err) {
		char msg[sizeof(gpio->deferred_msg)];
		int err = gpio->deferred_err;

		gpio->deferred_err = 0;
		if (first) {
			sbrig_warn("%s", gpio->deferred_msg);
			/* the message of @first is still the current one */
			return first;
		}
		snprintf(msg, sizeof(msg), "%s", gpio->deferred_msg);
		return sbrig_set_error(err, "%s", msg);
	}
	return first;
}

int64_t sbrig_gpio_deadline(struct sbrig_gpio *gpio)
{
	int64_t d = gpio->deferred_err ? 0 : INT64_MAX, q;
	unsigned int i;

	for (i = 0; i < gpio->nchips; i++) {
		struct gpio_chip_req *c = &gpio->chips[i];

		if (!c->requested || !c->be->deadline)
			continue;
		q = c->be->deadline(c);
		if (q < d)
			d = q;
	}
	return d;
}

unsigned int sbrig_gpio_pending(struct sbrig_gpio *gpio)
{
	unsigned int i, n = 0;

	for (i = 0; i < gpio->nchips; i++) {
		struct gpio_chip_req *c = &gpio->chips[i];

		if (c->requested && c->be->pending)
			n += c->be->pending(c);
	}
	return n;
}

/* --- the marker ---------------------------------------------------------- */

int sbrig_gpio_event_fd(struct sbrig_gpio *gpio)
{
	struct gpio_chip_req *c;

	if (!gpio || gpio->marker < 0)
		return -1;
	c = &gpio->chips[gpio->lines[gpio->marker].chip];
	return c->requested && c->be->edge_fd ? c->be->edge_fd(c) : -1;
}

ssize_t sbrig_gpio_read_edges(struct sbrig_gpio *gpio,
			      struct sbrig_edge *edges, size_t max)
{
	struct gpio_line *m;
	struct gpio_chip_req *c;

	if (gpio->marker < 0)
		return sbrig_set_error(-ENOENT, "gpio: no marker line configured");
	m = &gpio->lines[gpio->marker];
	c = &gpio->chips[m->chip];
	if (!max)
		return 0;
	return c->be->read_edges(c, m, edges, max);
}
