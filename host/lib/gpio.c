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
 *
 * A chip is served by one of two backends (struct gpio_backend), chosen by
 * the chip's spelling as libiio chooses by URI prefix: libgpiod for real
 * (and gpio-sim) chips, and "qmp:/path/to/qmp.sock" for the keys of a
 * virtual target, where a key's line number is a Linux input key code
 * (116 = KEY_POWER) and setting the line active/inactive sends QMP
 * input-send-event key down/up for the matching QEMU qcode. A qmp: chip
 * also has one charger line, line 0 of a [charger] section: setting it
 * sends the downstream QMP command "__org.sbrig_charger-set" {"plugged":
 * B}, which the virtual rig's QMP socket serves (rig/virtual/README.md,
 * "The virtual rig's charger-detect line"); QEMU itself has no charger.
 *
 * The qmp backend never waits (only sbrig_gpio_new()'s connect does,
 * bounded): setting a key sends the request and returns (qmp.h). Its
 * answer, an error QEMU answered, a timeout (GPIO_QMP_TIMEOUT_MS) and a
 * lost connection are found by sbrig_gpio_process() from the caller's
 * poll loop (sbrig_gpio_fds(), sbrig_gpio_deadline()); each set also reads
 * what has arrived, so a caller that never calls sbrig_gpio_process()
 * still has its answers read (and their errors logged, and returned by the
 * next sbrig_gpio_process()). A key whose "down" QEMU refused or never
 * answered is taken as up again. A lost connection is made again by the
 * next set.
 */
#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sbrig/gpio.h>

#include "internal.h"
#include "qmp.h"
#include "uri.h"

#define GPIO_MAX_LINES (SBRIG_MAX_KEYS + 2)
#define GPIO_EVENT_BUF 64
/*
 * The kernel's edge buffer of the marker line's request: its largest
 * (Linux clamps to 16 per line of the 64 a request may hold). The
 * default, 16 for one line, overflows after a 200 ms stall of the rig's
 * loop while blockers toggle faster than 80 Hz; a jump in the edges'
 * seqno says how many were lost anyway (marker.c restarts its pairing).
 */
#define GPIO_KERNEL_EDGE_BUF 1024
#define GPIO_QMP_PREFIX "qmp:"
#define GPIO_QMP_TIMEOUT_MS 1000

struct sbrig_gpio;
struct gpio_line;
struct gpio_chip_req;

/**
 * struct gpio_backend - how the lines of one chip are driven
 * @request: take every line of chip @ci (outputs inactive); 0 or -errno
 * @set: drive output line @l; 0 or -errno with the message set; *@t_ns:
 *	when it took effect (or, for qmp, when the request was sent)
 * @get: read line @l; 0, 1 or -errno with the message set
 * @release: let go of the chip (after outputs were set inactive)
 */
struct gpio_backend {
	int (*request)(struct sbrig_gpio *gpio, unsigned int ci,
		       const char *consumer);
	int (*set)(struct gpio_chip_req *c, struct gpio_line *l, bool active,
		   int64_t *t_ns);
	int (*get)(struct gpio_chip_req *c, struct gpio_line *l);
	void (*release)(struct gpio_chip_req *c);
};

static const struct gpio_backend gpiod_backend, qmp_backend;

/**
 * struct gpio_chip_req - one chip and what holds its lines
 * @spec: the chip as the config first named it (for messages)
 * @path: resolved /dev path (libgpiod) or socket path (qmp)
 * @be: its backend
 * @requested: @be->request succeeded (@be->release is due)
 * @req: the line request (owned; libgpiod backend)
 * @qmp: the QMP connection (owned; qmp backend)
 * @gpio: the object the chip belongs to
 */
struct gpio_chip_req {
	char spec[sizeof(((struct sbrig_line_cfg *)0)->chip)];
	char path[PATH_MAX];
	const struct gpio_backend *be;
	bool requested;
	struct gpiod_line_request *req;
	struct qmp *qmp;
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

struct sbrig_gpio {
	struct gpio_chip_req chips[GPIO_MAX_LINES];
	unsigned int nchips;
	struct gpio_line lines[GPIO_MAX_LINES];
	unsigned int nlines;
	int marker;		/* index into lines, -1: none */
	struct gpiod_edge_event_buffer *events;
	int deferred_err;	/* found outside sbrig_gpio_process() */
	char deferred_msg[384];
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

/* libgpiod backend: request every line of chip @ci in one request. */
static int gpiod_request(struct sbrig_gpio *gpio, unsigned int ci,
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
		gpio->chips[ci].be = strncmp(cfg->chip, GPIO_QMP_PREFIX,
					     strlen(GPIO_QMP_PREFIX)) ?
				     &gpiod_backend : &qmp_backend;
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
		struct gpiod_chip *chip;

		if (gpio->chips[a].be != &gpiod_backend) {
			memset(&st[a], 0, sizeof(st[a]));
			continue;
		}
		chip = chip_open(gpio->chips[a].spec, path, sizeof(path));
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
			add_line(gpio, &cfg->keys[i], SBRIG_LINE_KEY);
	if (cfg->charger.present)
		add_line(gpio, &cfg->charger, SBRIG_LINE_CHARGER);
	if (cfg->marker.present) {
		gpio->marker = gpio->nlines;
		add_line(gpio, &cfg->marker, SBRIG_LINE_MARKER);
	}
	merge_same_chips(gpio);

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
		struct gpio_chip_req *c = &gpio->chips[l->chip];

		if (l->output && c->requested)
			c->be->set(c, l, false, NULL);
	}
	for (i = 0; i < gpio->nchips; i++)
		if (gpio->chips[i].requested)
			gpio->chips[i].be->release(&gpio->chips[i]);
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
	int ret;

	if (!l || !l->output)
		return sbrig_set_error(-ENOENT, "gpio: no output line '%s'", name);
	c = &gpio->chips[l->chip];
	ret = c->be->set(c, l, active, t_ns);
	if (ret)
		return ret;
	return 0;
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

/* --- libgpiod backend ---------------------------------------------------- */

static int gpiod_set(struct gpio_chip_req *c, struct gpio_line *l, bool active,
		     int64_t *t_ns)
{
	if (gpiod_line_request_set_value(c->req, l->cfg.offset,
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

	v = gpiod_line_request_get_value(c->req, l->cfg.offset);
	if (v == GPIOD_LINE_VALUE_ERROR)
		return sbrig_set_error(-errno, "gpio: chip '%s' line %u (%s): get: %s",
				       c->spec, l->cfg.offset, l->cfg.name,
				       strerror(errno));
	return v == GPIOD_LINE_VALUE_ACTIVE;
}

static void gpiod_release(struct gpio_chip_req *c)
{
	gpiod_line_request_release(c->req);
	c->req = NULL;
}

static const struct gpio_backend gpiod_backend = {
	.request = gpiod_request,
	.set = gpiod_set,
	.get = gpiod_get,
	.release = gpiod_release,
};

/* --- qmp backend: keys of a QEMU guest ----------------------------------- */

/*
 * Linux input key codes (include/uapi/linux/input-event-codes.h) and the
 * QEMU qcodes (qapi/ui.json QKeyCode) of the same keys: the keys a rig
 * presses (power, volume, ...) and the keyboard's main block.
 */
static const struct { unsigned int code; const char *qcode; } qmp_keys[] = {
	{ 1, "esc" }, { 2, "1" }, { 3, "2" }, { 4, "3" }, { 5, "4" },
	{ 6, "5" }, { 7, "6" }, { 8, "7" }, { 9, "8" }, { 10, "9" },
	{ 11, "0" }, { 12, "minus" }, { 13, "equal" }, { 14, "backspace" },
	{ 15, "tab" }, { 16, "q" }, { 17, "w" }, { 18, "e" }, { 19, "r" },
	{ 20, "t" }, { 21, "y" }, { 22, "u" }, { 23, "i" }, { 24, "o" },
	{ 25, "p" }, { 26, "bracket_left" }, { 27, "bracket_right" },
	{ 28, "ret" }, { 29, "ctrl" }, { 30, "a" }, { 31, "s" }, { 32, "d" },
	{ 33, "f" }, { 34, "g" }, { 35, "h" }, { 36, "j" }, { 37, "k" },
	{ 38, "l" }, { 39, "semicolon" }, { 40, "apostrophe" },
	{ 41, "grave_accent" }, { 42, "shift" }, { 43, "backslash" },
	{ 44, "z" }, { 45, "x" }, { 46, "c" }, { 47, "v" }, { 48, "b" },
	{ 49, "n" }, { 50, "m" }, { 51, "comma" }, { 52, "dot" },
	{ 53, "slash" }, { 54, "shift_r" }, { 56, "alt" }, { 57, "spc" },
	{ 59, "f1" }, { 60, "f2" }, { 61, "f3" }, { 62, "f4" }, { 63, "f5" },
	{ 64, "f6" }, { 65, "f7" }, { 66, "f8" }, { 67, "f9" }, { 68, "f10" },
	{ 102, "home" }, { 103, "up" }, { 104, "pgup" }, { 105, "left" },
	{ 106, "right" }, { 107, "end" }, { 108, "down" }, { 109, "pgdn" },
	{ 110, "insert" }, { 111, "delete" }, { 113, "audiomute" },
	{ 114, "volumedown" }, { 115, "volumeup" }, { 116, "power" },
	{ 139, "menu" }, { 142, "sleep" }, { 143, "wake" },
};

/* A qmp: chip's one charger line, and the command that sets it. */
#define QMP_CHARGER_LINE	0
#define QMP_CHARGER_COMMAND	"__org.sbrig_charger-set"

static const char *qmp_qcode(unsigned int code)
{
	size_t i;

	for (i = 0; i < SBRIG_ARRAY_SIZE(qmp_keys); i++)
		if (qmp_keys[i].code == code)
			return qmp_keys[i].qcode;
	return NULL;
}

static int qmp_request(struct sbrig_gpio *gpio, unsigned int ci,
		       const char *consumer)
{
	struct gpio_chip_req *c = &gpio->chips[ci];
	unsigned int i;

	if (sbrig_uri_parse_qmp(c->spec, c->path, sizeof(c->path))) {
		sbrig_prefix_error("gpio: chip");
		return -EINVAL;
	}
	for (i = 0; i < gpio->nlines; i++) {
		struct gpio_line *l = &gpio->lines[i];

		if (l->chip != ci)
			continue;
		if (l->cfg.role != SBRIG_LINE_KEY &&
		    l->cfg.role != SBRIG_LINE_CHARGER)
			return sbrig_set_error(-EINVAL,
				"gpio: chip '%s' line %u (%s): a qmp: chip drives keys and a charger only",
				c->spec, l->cfg.offset, l->cfg.name);
		if (l->cfg.active_low)
			return sbrig_set_error(-EINVAL,
				"gpio: chip '%s' line %u (%s): active_low means nothing for a qmp: line",
				c->spec, l->cfg.offset, l->cfg.name);
		if (l->cfg.role == SBRIG_LINE_CHARGER) {
			if (l->cfg.offset != QMP_CHARGER_LINE)
				return sbrig_set_error(-EINVAL,
					"gpio: chip '%s' line %u (%s): a qmp: chip's charger is line %u",
					c->spec, l->cfg.offset, l->cfg.name,
					QMP_CHARGER_LINE);
			l->qcode = "charger";
			continue;
		}
		l->qcode = qmp_qcode(l->cfg.offset);
		if (!l->qcode)
			return sbrig_set_error(-EINVAL,
				"gpio: chip '%s' line %u (%s): no QEMU key for Linux key code %u",
				c->spec, l->cfg.offset, l->cfg.name,
				l->cfg.offset);
	}
	c->qmp = qmp_new(c->path, GPIO_QMP_TIMEOUT_MS);
	if (!c->qmp) {
		int ret = -errno;

		sbrig_prefix_error("gpio: chip '%s'", c->spec);
		return ret;
	}
	return 0;
}

/* A request's tag: the line and the value it sets. */
#define QMP_TAG(li, active) (((uint64_t)(li) << 1) | (active))

static struct sbrig_gpio *chip_gpio(struct gpio_chip_req *c);

static const char *qmp_line_kind(const struct gpio_line *l)
{
	return l->cfg.role == SBRIG_LINE_CHARGER ? "charger" : "key";
}

static const char *qmp_line_verb(const struct gpio_line *l, bool active)
{
	if (l->cfg.role == SBRIG_LINE_CHARGER)
		return active ? "plug" : "unplug";
	return active ? "down" : "up";
}

/*
 * Handle what the connection of @c finished; the first error is returned
 * (-errno, message "gpio: key NAME (QCODE) down: qmp: PATH: COMMAND: why").
 */
static int qmp_collect(struct gpio_chip_req *c, short revents)
{
	struct sbrig_gpio *gpio = chip_gpio(c);
	struct qmp_done d;
	int first = 0;

	while (qmp_process(c->qmp, revents, &d) == 1) {
		struct gpio_line *l = NULL;
		char msg[sizeof(gpio->deferred_msg)];

		revents = 0;
		if (!d.err)
			continue;
		if (d.tag != QMP_TAG_NONE && (d.tag >> 1) < gpio->nlines) {
			l = &gpio->lines[d.tag >> 1];
			/*
			 * Refused or never answered: QEMU has the key up; the
			 * charger stays as it was.
			 */
			if (l->cfg.role == SBRIG_LINE_CHARGER)
				l->value = !(d.tag & 1);
			else if (d.tag & 1)
				l->value = false;
			snprintf(msg, sizeof(msg), "gpio: %s %s (%s) %s: %s",
				 qmp_line_kind(l), l->cfg.name, l->qcode,
				 qmp_line_verb(l, d.tag & 1), d.msg);
		} else {
			snprintf(msg, sizeof(msg), "gpio: chip '%s': %s", c->spec,
				 d.msg);
		}
		if (!first) {
			first = sbrig_set_error(d.err, "%s", msg);
			continue;
		}
		sbrig_warn("%s", msg);
	}
	return first;
}

/* Keep an error found outside sbrig_gpio_process() for it to return. */
static void defer_error(struct sbrig_gpio *gpio, int err)
{
	sbrig_warn("%s", sbrig_errmsg());
	if (gpio->deferred_err)
		return;
	gpio->deferred_err = err;
	snprintf(gpio->deferred_msg, sizeof(gpio->deferred_msg), "%s",
		 sbrig_errmsg());
}

/* The charger: {"plugged": B}, the downstream command of a virtual rig. */
static int qmp_set_charger(struct gpio_chip_req *c, struct gpio_line *l,
			   bool active, int64_t *t_ns)
{
	struct sbrig_gpio *gpio = chip_gpio(c);
	struct json_object *args = json_object_new_object();
	int ret;

	if (!args || json_object_object_add(args, "plugged",
					    json_object_new_boolean(active))) {
		json_object_put(args);
		return sbrig_set_error(-ENOMEM, "gpio: charger %s: out of memory",
				       l->cfg.name);
	}
	ret = qmp_send(c->qmp, QMP_CHARGER_COMMAND, args,
		       QMP_TAG(l - gpio->lines, active), t_ns);
	if (ret) {
		sbrig_prefix_error("gpio: charger %s %s", l->cfg.name,
				   active ? "plug" : "unplug");
		return ret;
	}
	l->value = active;
	return 0;
}

static int qmp_set(struct gpio_chip_req *c, struct gpio_line *l, bool active,
		   int64_t *t_ns)
{
	struct sbrig_gpio *gpio = chip_gpio(c);
	struct json_object *args = NULL, *events, *ev, *data, *key;
	int ret;

	/* answers that came meanwhile (the caller may not poll us) */
	ret = qmp_collect(c, 0);
	if (ret)
		defer_error(gpio, ret);
	if (active == l->value) {
		if (t_ns)
			*t_ns = sbrig_now_ns();
		return 0;	/* no key-up for a key that is not down */
	}
	if (l->cfg.role == SBRIG_LINE_CHARGER)
		return qmp_set_charger(c, l, active, t_ns);
	/* {"events": [{"type": "key", "data": {"down": B, "key":
	 *  {"type": "qcode", "data": QCODE}}}]} */
	args = json_object_new_object();
	events = json_object_new_array();
	ev = json_object_new_object();
	data = json_object_new_object();
	key = json_object_new_object();
	if (!args || !events || !ev || !data || !key) {
		json_object_put(key);
		json_object_put(data);
		json_object_put(ev);
		json_object_put(events);
		json_object_put(args);
		return sbrig_set_error(-ENOMEM, "gpio: key %s: out of memory",
				       l->cfg.name);
	}
	/* each add hands the value to its parent */
	json_object_object_add(key, "type", json_object_new_string("qcode"));
	json_object_object_add(key, "data", json_object_new_string(l->qcode));
	json_object_object_add(data, "down", json_object_new_boolean(active));
	json_object_object_add(data, "key", key);
	json_object_object_add(ev, "type", json_object_new_string("key"));
	json_object_object_add(ev, "data", data);
	json_object_array_add(events, ev);
	json_object_object_add(args, "events", events);
	ret = qmp_send(c->qmp, "input-send-event", args,
		       QMP_TAG(l - gpio->lines, active), t_ns);
	if (ret) {
		sbrig_prefix_error("gpio: key %s (%s) %s", l->cfg.name, l->qcode,
				   active ? "down" : "up");
		return ret;
	}
	l->value = active;
	return 0;
}

static int qmp_get(struct gpio_chip_req *c, struct gpio_line *l)
{
	return l->value;
}

/* After the keys were let go (sbrig_gpio_free()): wait for the answers. */
static void qmp_release(struct gpio_chip_req *c)
{
	int64_t end = sbrig_now_ns() + (int64_t)GPIO_QMP_TIMEOUT_MS * 1000000;
	int ret;

	while (qmp_pending(c->qmp) && qmp_fd(c->qmp) >= 0) {
		struct pollfd pfd = { .fd = qmp_fd(c->qmp),
				      .events = qmp_events(c->qmp) };
		int64_t left = end - sbrig_now_ns();

		if (left <= 0)
			break;
		poll(&pfd, 1, (int)(left / 1000000) + 1);
		ret = qmp_collect(c, pfd.revents);
		if (ret)
			sbrig_warn("%s", sbrig_errmsg());
	}
	qmp_free(c->qmp);
	c->qmp = NULL;
}

static const struct gpio_backend qmp_backend = {
	.request = qmp_request,
	.set = qmp_set,
	.get = qmp_get,
	.release = qmp_release,
};

static struct sbrig_gpio *chip_gpio(struct gpio_chip_req *c)
{
	return c->gpio;
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

		if (!c->qmp || qmp_fd(c->qmp) < 0)
			continue;
		if (n == max)
			return sbrig_set_error(-ENOSPC, "gpio: more than %zu fds",
					       max);
		pfds[n].fd = qmp_fd(c->qmp);
		pfds[n].events = qmp_events(c->qmp);
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
		short revents = 0;

		if (!c->qmp)
			continue;
		for (j = 0; j < n; j++)
			if (pfds[j].fd >= 0 && pfds[j].fd == qmp_fd(c->qmp))
				revents |= pfds[j].revents;
		ret = qmp_collect(c, revents);
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
		if (!gpio->chips[i].qmp)
			continue;
		q = qmp_deadline(gpio->chips[i].qmp);
		if (q < d)
			d = q;
	}
	return d;
}

unsigned int sbrig_gpio_pending(struct sbrig_gpio *gpio)
{
	unsigned int i, n = 0;

	for (i = 0; i < gpio->nchips; i++)
		if (gpio->chips[i].qmp)
			n += qmp_pending(gpio->chips[i].qmp);
	return n;
}

/* --- the marker (libgpiod only) ----------------------------------------- */

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
