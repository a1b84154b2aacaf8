// SPDX-License-Identifier: GPL-2.0
/*
 * config.c - the rig description (rig/<name>.conf), see sbrig.conf(5).
 *
 * One table (cfg_keys[]) says which keys exist, in which section, of which
 * type, where they live in struct sbrig_config and which values they take.
 * The libinih handler and sbrig_config_set() both look a key up there and
 * store it with the same function, so a command-line override is checked
 * exactly like the file.
 *
 * libinih only reports "key = value" lines to its handler, so the line
 * reader we hand it (cfg_reader) also watches section headers: that is how
 * unknown or duplicate sections are caught even when they are empty, and
 * how errors get their line numbers (Debian's libinih has no
 * INI_HANDLER_LINENO).
 *
 * The reader also makes sure libinih and it read every line the same way
 * (they used to disagree): it drops a UTF-8 BOM at the start of the file,
 * strips leading blanks (libinih would take an indented line as the
 * continuation of the previous value, where we saw a section header),
 * refuses text after a section header's ']' other than a comment, and
 * refuses a carriage return that is not part of a CRLF line end (a file
 * with CR-only line ends is one long line to libinih). CRLF line ends are
 * fine: libinih strips the '\r' as trailing blank.
 */
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sha256.h>	/* libmd */

#include <sbrig/config.h>
#include <sbrig/power.h>	/* sbrig_power_max_rate() */

#include "internal.h"
#include "uri.h"

#define CFG_MAX_BYTES (1 << 20)

enum cfg_section {
	SEC_RIG,
	SEC_KEY,	/* [key:NAME], one line each */
	SEC_CHARGER,
	SEC_MARKER,
	SEC_POWER,
	SEC_TARGET,
	SEC_TIMING,
	SEC_NR,
};

static const char *const section_names[SEC_NR] = {
	[SEC_RIG] = "rig",
	[SEC_KEY] = "key",
	[SEC_CHARGER] = "charger",
	[SEC_MARKER] = "marker",
	[SEC_POWER] = "power",
	[SEC_TARGET] = "target",
	[SEC_TIMING] = "timing",
};

static bool is_line_section(enum cfg_section sec)
{
	return sec == SEC_KEY || sec == SEC_CHARGER || sec == SEC_MARKER;
}

enum cfg_type {
	T_ID,		/* name: [A-Za-z0-9_-]+ */
	T_STR,		/* printable, no spaces, not empty */
	T_U32,
	T_BOOL,
	T_URI_POWER,	/* local: ip: or empty */
	T_URI_TARGET,	/* serial: tcp: or empty */
	T_URI_MACHINE,	/* qmp: or empty (sbrig_machine_check_uri) */
	T_CHIP,		/* a gpiochip, or qmp:PATH (sbrig_gpio_check_chip) */
};

/**
 * struct cfg_key - one key of the rig description
 * @sec: its section
 * @key: its name
 * @type: how the value is parsed
 * @offset: where it goes: in struct sbrig_line_cfg for line sections, in
 *	struct sbrig_config for the others
 * @size: storage size (strings) or sizeof(uint32_t)/sizeof(bool)
 * @min: smallest accepted value (T_U32)
 * @max: largest accepted value (T_U32)
 */
struct cfg_key {
	enum cfg_section sec;
	const char *key;
	enum cfg_type type;
	size_t offset;
	size_t size;
	uint32_t min, max;
};

#define CFG(s, k, t, field, lo, hi) \
	{ s, k, t, offsetof(struct sbrig_config, field), \
	  sizeof(((struct sbrig_config *)0)->field), lo, hi }
#define LINE(s, k, t, field, lo, hi) \
	{ s, k, t, offsetof(struct sbrig_line_cfg, field), \
	  sizeof(((struct sbrig_line_cfg *)0)->field), lo, hi }
#define LINE_KEYS(s) \
	LINE(s, "chip", T_CHIP, chip, 0, 0), \
	LINE(s, "line", T_U32, offset, 0, 1023), \
	LINE(s, "active_low", T_BOOL, active_low, 0, 0)

static const struct cfg_key cfg_keys[] = {
	CFG(SEC_RIG, "name", T_ID, name, 0, 0),
	LINE_KEYS(SEC_KEY),
	LINE_KEYS(SEC_CHARGER),
	LINE_KEYS(SEC_MARKER),
	CFG(SEC_POWER, "uri", T_URI_POWER, power_uri, 0, 0),
	CFG(SEC_POWER, "device", T_STR, power_device, 0, 0),
	CFG(SEC_POWER, "shunt_uohm", T_U32, shunt_uohm, 0, 100000000),
	/* at most the bus's ceiling: check_config() */
	CFG(SEC_POWER, "sample_rate_hz", T_U32, sample_rate_hz, 0, 1000000),
	/* standard mode to the INA226's high-speed mode */
	CFG(SEC_POWER, "i2c_hz", T_U32, i2c_hz, 10000, 2940000),
	/* 0: a quarter second's worth at the sensor's rate (power.c) */
	CFG(SEC_POWER, "buffer_samples", T_U32, buffer_samples, 0, 1 << 20),
	CFG(SEC_POWER, "asleep_uA", T_U32, asleep_uA, 0, 100000000),
	CFG(SEC_TARGET, "uri", T_URI_TARGET, target_uri, 0, 0),
	CFG(SEC_TARGET, "state_uri", T_URI_MACHINE, machine_uri, 0, 0),
	CFG(SEC_TIMING, "press_ms", T_U32, press_ms, 1, 60000),
	CFG(SEC_TIMING, "settle_ms", T_U32, settle_ms, 0, 3600000),
	CFG(SEC_TIMING, "ping_interval_ms", T_U32, ping_interval_ms, 10, 60000),
	CFG(SEC_TIMING, "link_timeout_ms", T_U32, link_timeout_ms, 100, 600000),
	CFG(SEC_TIMING, "quiet_ms", T_U32, quiet_ms, 100, 600000),
};

static const struct cfg_key *key_lookup(enum cfg_section sec, const char *key)
{
	size_t i;

	for (i = 0; i < SBRIG_ARRAY_SIZE(cfg_keys); i++)
		if (cfg_keys[i].sec == sec && !strcmp(cfg_keys[i].key, key))
			return &cfg_keys[i];
	return NULL;
}

static bool is_id(const char *s, size_t max)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");

	return n > 0 && n < max && s[n] == '\0';
}

/* Splits "name" or "key:NAME" into a section and (for keys) the key name. */
static int section_lookup(const char *name, enum cfg_section *sec,
			  const char **keyname)
{
	unsigned int i;

	*keyname = NULL;
	if (!strncmp(name, "key:", 4)) {
		*sec = SEC_KEY;
		*keyname = name + 4;
		if (!is_id(*keyname, SBRIG_ID_MAX))
			return sbrig_set_error(-EINVAL,
				"[%s]: key name must be 1-%d characters of A-Z a-z 0-9 _ -",
				name, SBRIG_ID_MAX - 1);
		if (!strcmp(*keyname, "charger") || !strcmp(*keyname, "marker"))
			return sbrig_set_error(-EINVAL,
				"[%s]: '%s' is the name of a rig line, not a key",
				name, *keyname);
		return 0;
	}
	for (i = 0; i < SEC_NR; i++)
		if (i != SEC_KEY && !strcmp(name, section_names[i])) {
			*sec = i;
			return 0;
		}
	return sbrig_set_error(-EINVAL,
		"[%s]: unknown section (expected rig, key:NAME, charger, marker, power, target or timing)",
		name);
}

/* --- value parsers: return 0 or -EINVAL with the reason in @why --------- */

static int parse_u32(const char *v, const struct cfg_key *k, uint32_t *out,
		     const char **why)
{
	unsigned long long n;
	char *end;

	if (*v < '0' || *v > '9') {
		*why = "not a decimal number";
		return -EINVAL;
	}
	errno = 0;
	n = strtoull(v, &end, 10);
	if (*end) {
		*why = "not a decimal number";
		return -EINVAL;
	}
	if (errno || n < k->min || n > k->max) {
		*why = "out of range";
		return -ERANGE;
	}
	*out = (uint32_t)n;
	return 0;
}

static int parse_bool(const char *v, bool *out, const char **why)
{
	static const struct { const char *s; bool b; } words[] = {
		{ "true", true }, { "yes", true }, { "on", true }, { "1", true },
		{ "false", false }, { "no", false }, { "off", false },
		{ "0", false },
	};
	size_t i;

	for (i = 0; i < SBRIG_ARRAY_SIZE(words); i++)
		if (!strcasecmp(v, words[i].s)) {
			*out = words[i].b;
			return 0;
		}
	*why = "not a boolean (true/false, yes/no, on/off, 1/0)";
	return -EINVAL;
}

static bool is_printable_word(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

/*
 * Stores @value for @k into @base (a struct sbrig_config or, for line
 * sections, a struct sbrig_line_cfg). On failure nothing is stored and
 * the message is "section.key: why" without a location.
 */
static int cfg_store(const struct cfg_key *k, void *base, const char *secname,
		     const char *value)
{
	char *dst = (char *)base + k->offset;
	const char *why = NULL;
	char expected[96];
	int ret = 0;

	switch (k->type) {
	case T_ID:
		if (!is_id(value, k->size))
			why = "must be 1-63 characters of A-Z a-z 0-9 _ -";
		break;
	case T_STR:
		if (!*value)
			why = "must not be empty";
		else if (strlen(value) >= k->size)
			why = "too long";
		else if (!is_printable_word(value))
			why = "must not contain spaces or control characters";
		break;
	case T_U32:
		ret = parse_u32(value, k, (uint32_t *)dst, &why);
		if (ret == -ERANGE) {
			snprintf(expected, sizeof(expected),
				 "out of range (%u..%u)", k->min, k->max);
			why = expected;
		}
		break;
	case T_BOOL:
		ret = parse_bool(value, (bool *)dst, &why);
		break;
	case T_URI_POWER:
	case T_URI_TARGET:
	case T_URI_MACHINE:
		if (strlen(value) >= k->size) {
			why = "too long";
			break;
		}
		if (!*value)
			break;	/* not used on this rig */
		/* the modules' own checks, with their message */
		ret = k->type == T_URI_POWER ? sbrig_power_check_uri(value) :
		      k->type == T_URI_TARGET ? sbrig_link_check_uri(value) :
						sbrig_machine_check_uri(value);
		if (ret) {
			sbrig_prefix_error("%s.%s", secname, k->key);
			return ret;
		}
		break;
	case T_CHIP:
		if (!*value) {
			why = "must not be empty";
		} else if (strlen(value) >= k->size) {
			why = "too long";
		} else if (!is_printable_word(value)) {
			why = "must not contain spaces or control characters";
		} else if (sbrig_gpio_check_chip(value)) {
			sbrig_prefix_error("%s.%s", secname, k->key);
			return -EINVAL;
		}
		break;
	}
	if (why)
		return sbrig_set_error(-EINVAL, "%s.%s: '%s': %s", secname,
				       k->key, value, why);
	if (k->type == T_ID || k->type == T_STR || k->type == T_URI_POWER ||
	    k->type == T_URI_TARGET || k->type == T_URI_MACHINE ||
	    k->type == T_CHIP)
		snprintf(dst, k->size, "%s", value);
	return 0;
}

/* --- whole-config checks ------------------------------------------------ */

static int check_lines(const struct sbrig_config *cfg)
{
	const struct sbrig_line_cfg *all[SBRIG_MAX_KEYS + 2];
	unsigned int n = 0, i, j;

	for (i = 0; i < cfg->nkeys; i++)
		all[n++] = &cfg->keys[i];
	all[n++] = &cfg->charger;
	all[n++] = &cfg->marker;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (all[i]->present && all[j]->present &&
			    all[i]->offset == all[j]->offset &&
			    !strcmp(all[i]->chip, all[j]->chip))
				return sbrig_set_error(-EINVAL,
					"%s and %s both use %s line %u",
					all[i]->name, all[j]->name,
					all[i]->chip, all[i]->offset);
	return 0;
}

static int check_config(const struct sbrig_config *cfg)
{
	if (cfg->link_timeout_ms <= cfg->ping_interval_ms)
		return sbrig_set_error(-EINVAL,
			"timing.link_timeout_ms (%u) must exceed timing.ping_interval_ms (%u)",
			cfg->link_timeout_ms, cfg->ping_interval_ms);
	if (cfg->quiet_ms <= cfg->ping_interval_ms)
		return sbrig_set_error(-EINVAL,
			"timing.quiet_ms (%u) must exceed timing.ping_interval_ms (%u)",
			cfg->quiet_ms, cfg->ping_interval_ms);
	if (cfg->sample_rate_hz > sbrig_power_max_rate(cfg->i2c_hz))
		return sbrig_set_error(-EINVAL,
			"power.sample_rate_hz (%u) is above what ina2xx-adc reads without losses over a %u Hz bus (power.i2c_hz): %u S/s",
			cfg->sample_rate_hz, cfg->i2c_hz,
			sbrig_power_max_rate(cfg->i2c_hz));
	return check_lines(cfg);
}

static void cfg_defaults(struct sbrig_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->power_device, sizeof(cfg->power_device), "ina226");
	cfg->i2c_hz = SBRIG_POWER_DEFAULT_I2C_HZ;
	cfg->press_ms = 100;
	cfg->settle_ms = 1000;
	cfg->ping_interval_ms = 1000;
	cfg->link_timeout_ms = 3000;
	cfg->quiet_ms = 2500;
	snprintf(cfg->charger.name, sizeof(cfg->charger.name), "charger");
	cfg->charger.role = SBRIG_LINE_CHARGER;
	snprintf(cfg->marker.name, sizeof(cfg->marker.name), "marker");
	cfg->marker.role = SBRIG_LINE_MARKER;
}

/* --- the file parser ---------------------------------------------------- */

/* What was seen of one line section: both chip and line make it present. */
struct line_seen {
	unsigned int header_line;
	bool chip, line;
};

/**
 * struct cfg_parser - state of one sbrig_config_load()
 * @cfg: being filled in
 * @path: for messages
 * @buf: the file's bytes (NUL-terminated copy)
 * @len: their count
 * @pos: next byte for cfg_reader()
 * @lineno: line last handed to libinih
 * @err: first error (0 = none); its message is in sbrig_errmsg()
 * @err_line: its line
 * @sec: current section
 * @sec_ok: the current section header was valid
 * @cur: current line section's storage (NULL outside line sections)
 * @cur_seen: its bookkeeping
 * @keys_seen: bitmap of cfg_keys[] entries set in the current section
 * @sections_seen: bitmap of (non-key) sections seen so far
 * @seen: bookkeeping of keys[], then charger, then marker
 */
struct cfg_parser {
	struct sbrig_config *cfg;
	const char *path;
	const char *buf;
	size_t len, pos;
	unsigned int lineno;
	int err;
	unsigned int err_line;
	enum cfg_section sec;
	bool sec_ok;
	struct sbrig_line_cfg *cur;
	struct line_seen *cur_seen;
	uint64_t keys_seen;
	unsigned int sections_seen;
	struct line_seen seen[SBRIG_MAX_KEYS + 2];
};

static int parser_fail(struct cfg_parser *p, int err)
{
	if (!p->err) {
		sbrig_prefix_error("%s:%u", p->path, p->lineno);
		p->err = err;
		p->err_line = p->lineno;
	}
	return err;
}

/* A section header line: check it and switch the current section. */
static int enter_section(struct cfg_parser *p, const char *name)
{
	struct sbrig_config *cfg = p->cfg;
	const char *keyname;
	enum cfg_section sec;
	unsigned int i;
	int ret;

	p->sec_ok = false;
	p->cur = NULL;
	p->cur_seen = NULL;
	p->keys_seen = 0;
	ret = section_lookup(name, &sec, &keyname);
	if (ret)
		return ret;
	p->sec = sec;
	if (sec == SEC_KEY) {
		for (i = 0; i < cfg->nkeys; i++)
			if (!strcmp(cfg->keys[i].name, keyname))
				return sbrig_set_error(-EINVAL,
					"[%s]: duplicate key (first at line %u)",
					name, p->seen[i].header_line);
		if (cfg->nkeys == SBRIG_MAX_KEYS)
			return sbrig_set_error(-EINVAL,
				"[%s]: more than %d keys", name, SBRIG_MAX_KEYS);
		i = cfg->nkeys++;
		snprintf(cfg->keys[i].name, sizeof(cfg->keys[i].name), "%s",
			 keyname);
		cfg->keys[i].role = SBRIG_LINE_KEY;
		p->cur = &cfg->keys[i];
		p->cur_seen = &p->seen[i];
	} else {
		if (p->sections_seen & (1u << sec))
			return sbrig_set_error(-EINVAL, "[%s]: duplicate section",
					       name);
		p->sections_seen |= 1u << sec;
		if (sec == SEC_CHARGER) {
			p->cur = &cfg->charger;
			p->cur_seen = &p->seen[SBRIG_MAX_KEYS];
		} else if (sec == SEC_MARKER) {
			p->cur = &cfg->marker;
			p->cur_seen = &p->seen[SBRIG_MAX_KEYS + 1];
		}
	}
	if (p->cur_seen)
		p->cur_seen->header_line = p->lineno;
	p->sec_ok = true;
	return 0;
}

/*
 * libinih's line source: hands out the file one line at a time, counting
 * lines and checking section headers before libinih sees them. Returning
 * NULL ends the parse (used to stop at the first error).
 */
static char *cfg_reader(char *str, int num, void *stream)
{
	struct cfg_parser *p = stream;
	const char *line, *nl, *s, *cr;
	size_t n, blanks;

	if (p->pos == 0 && p->len >= 3 && !memcmp(p->buf, "\xef\xbb\xbf", 3))
		p->pos = 3;	/* a UTF-8 BOM (libinih would skip it too) */
	line = p->buf + p->pos;
	if (p->err || p->pos >= p->len)
		return NULL;
	nl = memchr(line, '\n', p->len - p->pos);
	n = nl ? (size_t)(nl - line) + 1 : p->len - p->pos;
	p->lineno++;
	if (memchr(line, '\0', n)) {
		parser_fail(p, sbrig_set_error(-EINVAL, "NUL byte in line"));
		return NULL;
	}
	cr = memchr(line, '\r', n);
	if (cr && cr + 1 != line + n && cr[1] != '\n') {
		parser_fail(p, sbrig_set_error(-EINVAL,
			"carriage return without a newline (CR line ends are not supported; use LF or CRLF)"));
		return NULL;
	}
	p->pos += n;
	/* indented lines are plain lines (never libinih continuations) */
	blanks = strspn(line, " \t");
	if (blanks > n)
		blanks = n;
	line += blanks;
	n -= blanks;
	/* libinih needs room for "\r\n\0" after the longest line */
	if (n + 3 > (size_t)num) {
		parser_fail(p, sbrig_set_error(-EINVAL,
			"line longer than %d characters", num - 3));
		return NULL;
	}
	memcpy(str, line, n);
	str[n] = '\0';

	s = str;
	if (*s == '[') {
		const char *end = strchr(s, ']'), *rest;
		char name[64];

		if (!end)
			return str;	/* libinih reports the syntax error */
		if ((size_t)(end - s - 1) >= sizeof(name)) {
			parser_fail(p, sbrig_set_error(-EINVAL,
				"section name too long"));
			return NULL;
		}
		memcpy(name, s + 1, end - s - 1);
		name[end - s - 1] = '\0';
		rest = end + 1 + strspn(end + 1, " \t\r\n");
		if (*rest && *rest != ';' && *rest != '#') {
			parser_fail(p, sbrig_set_error(-EINVAL,
				"[%s]: text after the section header (only a comment may follow it)",
				name));
			return NULL;
		}
		if (enter_section(p, name)) {
			parser_fail(p, -EINVAL);
			return NULL;
		}
	}
	return str;
}

/* libinih's handler: one "key = value" of the current section. */
static int cfg_handler(void *user, const char *section, const char *name,
		       const char *value)
{
	struct cfg_parser *p = user;
	const struct cfg_key *k;
	unsigned int bit;
	void *base;

	if (p->err)
		return 0;
	if (!*section) {
		parser_fail(p, sbrig_set_error(-EINVAL,
			"%s: key outside of any section", name));
		return 0;
	}
	if (!p->sec_ok)
		return 0;
	k = key_lookup(p->sec, name);
	if (!k) {
		parser_fail(p, sbrig_set_error(-EINVAL, "%s.%s: unknown key",
					       section, name));
		return 0;
	}
	bit = (unsigned int)(k - cfg_keys);
	if (p->keys_seen & (1ull << bit)) {
		parser_fail(p, sbrig_set_error(-EINVAL,
			"%s.%s: set twice in this section", section, name));
		return 0;
	}
	p->keys_seen |= 1ull << bit;
	base = is_line_section(p->sec) ? (void *)p->cur : (void *)p->cfg;
	if (cfg_store(k, base, section, value)) {
		parser_fail(p, -EINVAL);
		return 0;
	}
	if (p->cur_seen && !strcmp(name, "chip"))
		p->cur_seen->chip = true;
	if (p->cur_seen && !strcmp(name, "line"))
		p->cur_seen->line = true;
	return 1;
}

/* After the last line: chip and line come in pairs. */
static int check_line_sections(struct cfg_parser *p)
{
	struct sbrig_config *cfg = p->cfg;
	struct sbrig_line_cfg *lines[SBRIG_MAX_KEYS + 2];
	unsigned int n = 0, i;

	for (i = 0; i < cfg->nkeys; i++)
		lines[n++] = &cfg->keys[i];
	lines[SBRIG_MAX_KEYS] = &cfg->charger;
	lines[SBRIG_MAX_KEYS + 1] = &cfg->marker;
	for (i = 0; i < SBRIG_MAX_KEYS + 2; i++) {
		struct line_seen *s = &p->seen[i];
		const char *sec;

		if (i >= n && i < SBRIG_MAX_KEYS)
			continue;
		sec = i < SBRIG_MAX_KEYS ? "key:" : "";
		if (s->chip && s->line) {
			lines[i]->present = true;
			continue;
		}
		/* an empty [charger]/[marker] means "not wired" */
		if (!s->chip && !s->line && i >= SBRIG_MAX_KEYS)
			continue;
		if (!s->header_line)
			continue;
		p->lineno = s->header_line;
		return parser_fail(p, sbrig_set_error(-EINVAL,
			"[%s%s]: %s", sec, lines[i]->name,
			s->chip ? "chip without line" :
			s->line ? "line without chip" : "needs chip and line"));
	}
	return 0;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, ret;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > CFG_MAX_BYTES) {
		ret = sbrig_set_error(-EINVAL, "%s: not a regular file of at most %d bytes",
				      path, CFG_MAX_BYTES);
		goto close_fd;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", path);
		goto close_fd;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, *buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = sbrig_set_error(-errno, "%s: %s", path,
					      strerror(errno));
			goto free_buf;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	(*buf)[got] = '\0';
	*len = got;
	close(fd);
	return 0;

free_buf:
	free(*buf);
	*buf = NULL;
close_fd:
	close(fd);
	return ret;
}

int sbrig_config_load(const char *path, struct sbrig_config *cfg)
{
	struct cfg_parser *p;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	cfg_defaults(cfg);
	if (strlen(path) >= sizeof(cfg->path))
		return sbrig_set_error(-ENAMETOOLONG, "%s: path too long", path);
	ret = read_file(path, &buf, &len);
	if (ret)
		return ret;
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	SHA256Data((const uint8_t *)buf, len, cfg->sha256);

	p = calloc(1, sizeof(*p));
	if (!p) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", path);
		goto free_buf;
	}
	p->cfg = cfg;
	p->path = path;
	p->buf = buf;
	p->len = len;
	ret = ini_parse_stream(cfg_reader, p, cfg_handler, p);
	if (p->err && (ret <= 0 || (unsigned int)ret >= p->err_line)) {
		ret = p->err;
		goto free_parser;
	}
	if (ret > 0) {
		ret = sbrig_set_error(-EINVAL,
			"%s:%d: syntax error (expected [section], key = value or a comment)",
			path, ret);
		goto free_parser;
	}
	if (ret < 0) {
		ret = sbrig_set_error(-ENOMEM, "%s: libinih failed (%d)",
				      path, ret);
		goto free_parser;
	}
	ret = check_line_sections(p);
	if (ret)
		goto free_parser;
	if (!cfg->name[0])
		sbrig_path_stem(cfg->name, sizeof(cfg->name), path);
	ret = check_config(cfg);
	if (ret)
		sbrig_prefix_error("%s", path);

free_parser:
	free(p);
free_buf:
	free(buf);
	return ret;
}

int sbrig_config_set(struct sbrig_config *cfg, const char *assignment)
{
	struct sbrig_config *tmp;
	const struct cfg_key *k;
	const char *eq, *dot, *keyname;
	char secname[64], key[32];
	enum cfg_section sec;
	void *base = NULL;
	unsigned int i;
	int ret;

	eq = strchr(assignment, '=');
	dot = strchr(assignment, '.');
	if (!eq || !dot || dot > eq || dot == assignment ||
	    (size_t)(dot - assignment) >= sizeof(secname) ||
	    (size_t)(eq - dot - 1) >= sizeof(key))
		return sbrig_set_error(-EINVAL,
			"override '%s': expected section.key=value", assignment);
	memcpy(secname, assignment, dot - assignment);
	secname[dot - assignment] = '\0';
	memcpy(key, dot + 1, eq - dot - 1);
	key[eq - dot - 1] = '\0';

	ret = section_lookup(secname, &sec, &keyname);
	if (ret)
		goto fail;
	k = key_lookup(sec, key);
	if (!k) {
		ret = sbrig_set_error(-EINVAL, "%s.%s: unknown key", secname, key);
		goto fail;
	}
	tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return sbrig_set_error(-ENOMEM, "override: out of memory");
	*tmp = *cfg;
	switch (sec) {
	case SEC_KEY:
		for (i = 0; i < tmp->nkeys; i++)
			if (!strcmp(tmp->keys[i].name, keyname))
				base = &tmp->keys[i];
		break;
	case SEC_CHARGER:
		base = tmp->charger.present ? &tmp->charger : NULL;
		break;
	case SEC_MARKER:
		base = tmp->marker.present ? &tmp->marker : NULL;
		break;
	default:
		base = tmp;
		break;
	}
	if (!base) {
		ret = sbrig_set_error(-ENOENT,
			"[%s]: not in the rig description (lines are added in the file)",
			secname);
		goto free_tmp;
	}
	ret = cfg_store(k, base, secname, eq + 1);
	if (!ret)
		ret = check_config(tmp);
	if (!ret)
		*cfg = *tmp;
free_tmp:
	free(tmp);
	if (!ret)
		return 0;
fail:
	sbrig_prefix_error("override '%s'", assignment);
	return ret;
}

const struct sbrig_line_cfg *sbrig_config_line(const struct sbrig_config *cfg,
					       const char *name)
{
	const struct sbrig_line_cfg *l = NULL;
	unsigned int i;

	if (!strcmp(name, "charger"))
		l = &cfg->charger;
	else if (!strcmp(name, "marker"))
		l = &cfg->marker;
	for (i = 0; !l && i < cfg->nkeys; i++)
		if (!strcmp(cfg->keys[i].name, name))
			l = &cfg->keys[i];
	return l && l->present ? l : NULL;
}
