// SPDX-License-Identifier: GPL-2.0
/*
 * gpio-qmp.c - the QMP backend of gpio.c (gpio-backend.h): the keys and
 * the charger of a QEMU target.
 *
 * A chip spelled "qmp:/path/to/qmp.sock" is a virtual target's keyboard: a
 * key's line number is a Linux input key code (116 = KEY_POWER), and
 * setting the line active/inactive sends QMP input-send-event key
 * down/up for the matching QEMU qcode. A qmp: chip also has one charger
 * line, line 0 of a [charger] section: setting it sends the downstream QMP
 * command "__org.sbrig_charger-set" {"plugged": B}, which the virtual
 * rig's QMP socket serves (rig/virtual/README.md, "The virtual rig's
 * charger-detect line"); QEMU itself has no charger.
 *
 * The backend never waits (only the request's connect does, bounded):
 * setting a key sends the request and returns (qmp.h). Its answer, an
 * error QEMU answered, a timeout (GPIO_QMP_TIMEOUT_MS) and a lost
 * connection are found by sbrig_gpio_process() from the caller's poll
 * loop (sbrig_gpio_fds(), sbrig_gpio_deadline()); each set also reads what
 * has arrived, so a caller that never calls sbrig_gpio_process() still
 * has its answers read (and their errors logged, and returned by the next
 * sbrig_gpio_process()). A key whose "down" QEMU refused or never
 * answered is taken as up again. A lost connection is made again by the
 * next set.
 */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpio-backend.h"
#include "internal.h"
#include "qmp.h"
#include "uri.h"

#define GPIO_QMP_TIMEOUT_MS 1000
#define QMP(c) ((struct qmp *)(c)->priv)

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
	c->priv = qmp_new(c->path, GPIO_QMP_TIMEOUT_MS);
	if (!c->priv) {
		int ret = -errno;

		sbrig_prefix_error("gpio: chip '%s'", c->spec);
		return ret;
	}
	return 0;
}

/* A request's tag: the line and the value it sets. */
#define QMP_TAG(li, active) (((uint64_t)(li) << 1) | (active))

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
	struct sbrig_gpio *gpio = c->gpio;
	struct qmp_done d;
	int first = 0;

	while (qmp_process(QMP(c), revents, &d) == 1) {
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

/* The charger: {"plugged": B}, the downstream command of a virtual rig. */
static int qmp_set_charger(struct gpio_chip_req *c, struct gpio_line *l,
			   bool active, int64_t *t_ns)
{
	struct sbrig_gpio *gpio = c->gpio;
	struct json_object *args = json_object_new_object();
	int ret;

	if (!args || json_object_object_add(args, "plugged",
					    json_object_new_boolean(active))) {
		json_object_put(args);
		return sbrig_set_error(-ENOMEM, "gpio: charger %s: out of memory",
				       l->cfg.name);
	}
	ret = qmp_send(QMP(c), QMP_CHARGER_COMMAND, args,
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
	struct sbrig_gpio *gpio = c->gpio;
	struct json_object *args = NULL, *events, *ev, *data, *key;
	int ret;

	/* answers that came meanwhile (the caller may not poll us) */
	ret = qmp_collect(c, 0);
	if (ret)
		gpio_defer_error(gpio, ret);
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
	ret = qmp_send(QMP(c), "input-send-event", args,
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

	while (qmp_pending(QMP(c)) && qmp_fd(QMP(c)) >= 0) {
		struct pollfd pfd = { .fd = qmp_fd(QMP(c)),
				      .events = qmp_events(QMP(c)) };
		int64_t left = end - sbrig_now_ns();

		if (left <= 0)
			break;
		poll(&pfd, 1, (int)(left / 1000000) + 1);
		ret = qmp_collect(c, pfd.revents);
		if (ret)
			sbrig_warn("%s", sbrig_errmsg());
	}
	qmp_free(QMP(c));
	c->priv = NULL;
}

static int qmp_chip_fd(struct gpio_chip_req *c, short *events)
{
	if (!QMP(c) || qmp_fd(QMP(c)) < 0)
		return -1;
	*events = qmp_events(QMP(c));
	return qmp_fd(QMP(c));
}

static int64_t qmp_chip_deadline(struct gpio_chip_req *c)
{
	return QMP(c) ? qmp_deadline(QMP(c)) : INT64_MAX;
}

static unsigned int qmp_chip_pending(struct gpio_chip_req *c)
{
	return QMP(c) ? qmp_pending(QMP(c)) : 0;
}

static int qmp_chip_process(struct gpio_chip_req *c, short revents)
{
	return QMP(c) ? qmp_collect(c, revents) : 0;
}

const struct gpio_backend gpio_qmp_backend = {
	.prefix = "qmp:",
	.request = qmp_request,
	.set = qmp_set,
	.get = qmp_get,
	.release = qmp_release,
	.fd = qmp_chip_fd,
	.process = qmp_chip_process,
	.deadline = qmp_chip_deadline,
	.pending = qmp_chip_pending,
};
