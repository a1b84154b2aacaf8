// SPDX-License-Identifier: GPL-2.0
/*
 * link-serial.c - serial:/dev/ttyS1[:BAUD] transport of the target link
 * (libserialport). libserialport's errors are translated here, once, by
 * sp_to_errno().
 *
 * libserialport 0.1.1 quirks this relies on (see FACTS.md): it refuses
 * pseudo-terminals; a hang-up reads as 0 bytes, like an idle line (link.c
 * tells them apart by poll(): a hung-up tty polls readable, or POLLHUP,
 * and reads nothing); stale input is drained when the port opens.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libserialport.h>

#include "internal.h"
#include "link-transport.h"
#include "uri.h"

struct serial_tr {
	struct sp_port *port;
	int fd;
	char uri[256];
};

/* The one place libserialport results become -errno + message. */
static int sp_to_errno(enum sp_return r, const char *uri, const char *what)
{
	char *msg;
	int err;

	switch (r) {
	case SP_ERR_ARG:
		return sbrig_set_error(-EINVAL, "link %s: %s: invalid argument",
				       uri, what);
	case SP_ERR_MEM:
		return sbrig_set_error(-ENOMEM, "link %s: %s: out of memory",
				       uri, what);
	case SP_ERR_SUPP:
		return sbrig_set_error(-ENOTSUP, "link %s: %s: not supported",
				       uri, what);
	case SP_ERR_FAIL:
	default:
		err = sp_last_error_code();
		msg = sp_last_error_message();
		sbrig_set_error(err > 0 ? -err : -EIO, "link %s: %s: %s", uri,
				what, msg ? msg : "failed");
		sp_free_error_message(msg);
		return err > 0 ? -err : -EIO;
	}
}

static int serial_parse(const char *uri, char *dev, size_t size, int *baud)
{
	unsigned int b;
	int ret = sbrig_uri_parse_serial(uri, dev, size, &b);

	if (ret) {
		sbrig_prefix_error("link");
		return ret;
	}
	*baud = (int)b;
	return 0;
}

static int serial_check(const char *uri)
{
	char dev[256];
	int baud;

	return serial_parse(uri, dev, sizeof(dev), &baud);
}

static void serial_close(void *tr)
{
	struct serial_tr *s = tr;

	if (!s)
		return;
	if (s->port) {
		sp_close(s->port);
		sp_free_port(s->port);
	}
	free(s);
}

static int serial_open(const char *uri, void **tr)
{
	struct serial_tr *s;
	char dev[256];
	int baud, ret;
	enum sp_return r;

	ret = serial_parse(uri, dev, sizeof(dev), &baud);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return sbrig_set_error(-ENOMEM, "link %s: out of memory", uri);
	snprintf(s->uri, sizeof(s->uri), "%s", uri);
	r = sp_get_port_by_name(dev, &s->port);
	if (r != SP_OK) {
		s->port = NULL;
		ret = sp_to_errno(r, uri, "no such serial port");
		goto err_free;
	}
	r = sp_open(s->port, SP_MODE_READ_WRITE);
	if (r != SP_OK) {
		ret = sp_to_errno(r, uri, "open");
		sp_free_port(s->port);
		s->port = NULL;
		goto err_free;
	}
	if ((r = sp_set_baudrate(s->port, baud)) != SP_OK ||
	    (r = sp_set_bits(s->port, 8)) != SP_OK ||
	    (r = sp_set_parity(s->port, SP_PARITY_NONE)) != SP_OK ||
	    (r = sp_set_stopbits(s->port, 1)) != SP_OK ||
	    (r = sp_set_flowcontrol(s->port, SP_FLOWCONTROL_NONE)) != SP_OK) {
		ret = sp_to_errno(r, uri, "configure");
		goto err_free;
	}
	sp_flush(s->port, SP_BUF_BOTH);
	r = sp_get_port_handle(s->port, &s->fd);
	if (r != SP_OK) {
		ret = sp_to_errno(r, uri, "get handle");
		goto err_free;
	}
	*tr = s;
	return 1;

err_free:
	serial_close(s);
	return ret;
}

static int serial_connected(void *tr)
{
	return 1;
}

static ssize_t serial_read(void *tr, void *buf, size_t len)
{
	struct serial_tr *s = tr;
	enum sp_return r = sp_nonblocking_read(s->port, buf, len);

	if (r >= 0)
		return r;
	return sp_to_errno(r, s->uri, "read");
}

static ssize_t serial_write(void *tr, const void *buf, size_t len)
{
	struct serial_tr *s = tr;
	enum sp_return r = sp_nonblocking_write(s->port, buf, len);

	if (r >= 0)
		return r;
	return sp_to_errno(r, s->uri, "write");
}

static int serial_fd(void *tr)
{
	return ((struct serial_tr *)tr)->fd;
}

const struct link_transport_ops link_serial_ops = {
	.prefix = "serial:",
	.check = serial_check,
	.open = serial_open,
	.connected = serial_connected,
	.read = serial_read,
	.write = serial_write,
	.fd = serial_fd,
	.close = serial_close,
	.reopen_on_silence = true,
};
