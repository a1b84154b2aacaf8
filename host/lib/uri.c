// SPDX-License-Identifier: GPL-2.0
/*
 * uri.c - the syntax of every URI and chip spelling a rig description
 * names, in one place (issue 7: config.c and each transport used to parse
 * them separately, with different rules and different messages).
 *
 * Each scheme has one parser here. The public checks
 * (sbrig_link_check_uri(), sbrig_power_check_uri(), sbrig_gpio_check_chip())
 * and the backends that open the URI (link-serial.c, link-tcp.c, power.c,
 * gpio.c's qmp backend) call the same parser, so a URI that passes the
 * check opens, and a bad one gets the same message wherever it is found:
 * "'URI': expected SYNTAX" (config.c prefixes "section.key: " and the file
 * position, the link "link: ").
 *
 * This file depends on libc only: config.c can call it without linking
 * libserialport, libiio or libgpiod.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "internal.h"
#include "uri.h"

/* room for what a check parses out of a URI (config's URIs are shorter) */
#define URI_BUF 256

#define SYNTAX_SERIAL	"serial:/dev/TTY[:BAUD]"
#define SYNTAX_TCP	"tcp:HOST:PORT"
#define SYNTAX_LOCAL	"local:"
#define SYNTAX_IP	"ip:HOST[:PORT]"
#define SYNTAX_QMP	"qmp:PATH"

/* A decimal port 1..65535 filling all of @s. */
static bool parse_port(const char *s, unsigned int *port)
{
	unsigned long n;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	n = strtoul(s, &end, 10);
	if (*end || n < 1 || n > 65535)
		return false;
	*port = (unsigned int)n;
	return true;
}

/*
 * HOST (letters, digits, . - _) or [V6ADDR] at @s; its text (without the
 * brackets) into @host; @rest points after it.
 */
static bool parse_host(const char *s, char *host, size_t size,
		       const char **rest)
{
	const char *h = s;
	size_t n;

	if (*s == '[') {
		h = s + 1;
		n = strspn(h, "0123456789abcdefABCDEF:.");
		if (!n || h[n] != ']')
			return false;
		*rest = h + n + 1;
	} else {
		n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			      "0123456789.-_");
		if (!n)
			return false;
		*rest = s + n;
	}
	if (n >= size)
		return false;
	memcpy(host, h, n);
	host[n] = '\0';
	return true;
}

static int bad(const char *uri, const char *syntax)
{
	return sbrig_set_error(-EINVAL, "'%s': expected %s", uri, syntax);
}

int sbrig_uri_parse_serial(const char *uri, char *dev, size_t size,
			   unsigned int *baud)
{
	const char *d, *colon;
	unsigned long b = SBRIG_URI_DEFAULT_BAUD;
	char *end;
	size_t n;

	if (strncmp(uri, "serial:", 7))
		return bad(uri, SYNTAX_SERIAL);
	d = uri + 7;
	colon = strrchr(d, ':');
	n = colon ? (size_t)(colon - d) : strlen(d);
	if (colon) {
		if (colon[1] < '1' || colon[1] > '9')
			return bad(uri, SYNTAX_SERIAL);
		b = strtoul(colon + 1, &end, 10);
		if (*end || b > 4000000)
			return bad(uri, SYNTAX_SERIAL);
	}
	if (n < 2 || d[0] != '/' || n >= size)
		return bad(uri, SYNTAX_SERIAL);
	memcpy(dev, d, n);
	dev[n] = '\0';
	*baud = (unsigned int)b;
	return 0;
}

int sbrig_uri_parse_tcp(const char *uri, char *host, size_t size,
			unsigned int *port)
{
	const char *rest;

	if (strncmp(uri, "tcp:", 4) || !parse_host(uri + 4, host, size, &rest) ||
	    *rest != ':' || !parse_port(rest + 1, port))
		return bad(uri, SYNTAX_TCP);
	return 0;
}

int sbrig_uri_parse_qmp(const char *chip, char *path, size_t size)
{
	const char *p = chip + 4;
	size_t n = strlen(p);

	if (strncmp(chip, "qmp:", 4) || !n ||
	    n >= sizeof(((struct sockaddr_un *)0)->sun_path) || n >= size)
		return sbrig_set_error(-EINVAL,
			"'%s': expected %s (a unix socket path of 1-%zu bytes)",
			chip, SYNTAX_QMP,
			sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	memcpy(path, p, n + 1);
	return 0;
}

struct scheme {
	const char *prefix;
	int (*check)(const char *uri);
};

/* Report "unknown scheme (expected A or B)". */
static int unknown(const char *uri, const char *const *syntaxes, size_t n)
{
	char want[128];
	size_t off = 0, i;

	for (i = 0; i < n && off < sizeof(want); i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off, "%s%s",
					i ? " or " : "", syntaxes[i]);
	return sbrig_set_error(-EINVAL, "'%s': unknown scheme (expected %s)",
			       uri, want);
}

static int check_serial(const char *uri)
{
	char dev[URI_BUF];
	unsigned int baud;

	return sbrig_uri_parse_serial(uri, dev, sizeof(dev), &baud);
}

static int check_tcp(const char *uri)
{
	char host[URI_BUF];
	unsigned int port;

	return sbrig_uri_parse_tcp(uri, host, sizeof(host), &port);
}

int sbrig_link_check_uri(const char *uri)
{
	static const char *const syntaxes[] = { SYNTAX_SERIAL, SYNTAX_TCP };

	if (!uri)
		return sbrig_set_error(-EINVAL, "no URI");
	if (!strncmp(uri, "serial:", 7))
		return check_serial(uri);
	if (!strncmp(uri, "tcp:", 4))
		return check_tcp(uri);
	return unknown(uri, syntaxes, SBRIG_ARRAY_SIZE(syntaxes));
}

int sbrig_power_check_uri(const char *uri)
{
	static const char *const syntaxes[] = { SYNTAX_LOCAL, SYNTAX_IP };
	char host[URI_BUF];
	unsigned int port;
	const char *rest;

	if (!uri)
		return sbrig_set_error(-EINVAL, "no URI");
	if (!strncmp(uri, "local:", 6))
		return uri[6] ? bad(uri, SYNTAX_LOCAL) : 0;
	if (!strncmp(uri, "ip:", 3)) {
		if (!parse_host(uri + 3, host, sizeof(host), &rest) ||
		    (*rest && (*rest != ':' || !parse_port(rest + 1, &port))))
			return bad(uri, SYNTAX_IP);
		return 0;
	}
	return unknown(uri, syntaxes, SBRIG_ARRAY_SIZE(syntaxes));
}

int sbrig_machine_check_uri(const char *uri)
{
	static const char *const syntaxes[] = { SYNTAX_QMP };
	char path[URI_BUF];

	if (!uri)
		return sbrig_set_error(-EINVAL, "no URI");
	if (!strncmp(uri, "qmp:", 4))
		return sbrig_uri_parse_qmp(uri, path, sizeof(path));
	return unknown(uri, syntaxes, SBRIG_ARRAY_SIZE(syntaxes));
}

int sbrig_gpio_check_chip(const char *chip)
{
	char path[URI_BUF];

	if (!chip || !*chip)
		return sbrig_set_error(-EINVAL, "no chip");
	if (!strncmp(chip, "qmp:", 4))
		return sbrig_uri_parse_qmp(chip, path, sizeof(path));
	return 0;	/* a path, a name or a label: gpiod finds it or not */
}
