/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uri.h - the one parser of each URI scheme (private; see uri.c). The
 * backends that open a URI parse it with these, the public checks
 * (sbrig_link_check_uri(), sbrig_power_check_uri(),
 * sbrig_gpio_check_chip(), sbrig_machine_check_uri()) call them too. Each returns 0 or -EINVAL with
 * the message "'URI': expected SYNTAX".
 */
#ifndef SBRIG_URI_H
#define SBRIG_URI_H

#include <stddef.h>

#define SBRIG_URI_DEFAULT_BAUD 115200

/* serial:/dev/TTY[:BAUD] -> the device path and the baud rate */
int sbrig_uri_parse_serial(const char *uri, char *dev, size_t size,
			   unsigned int *baud);

/* tcp:HOST:PORT ([V6] allowed) -> HOST without brackets and PORT */
int sbrig_uri_parse_tcp(const char *uri, char *host, size_t size,
			unsigned int *port);

/* qmp:PATH -> the unix socket path (fits a sockaddr_un) */
int sbrig_uri_parse_qmp(const char *chip, char *path, size_t size);

/*
 * The public checks, defined in uri.c and declared for users in link.h,
 * power.h and gpio.h. config.c sits below those modules (gpio.h includes
 * config.h), so it takes them from here.
 */
int sbrig_link_check_uri(const char *uri);
int sbrig_power_check_uri(const char *uri);
int sbrig_gpio_check_chip(const char *chip);
int sbrig_machine_check_uri(const char *uri);

#endif /* SBRIG_URI_H */
