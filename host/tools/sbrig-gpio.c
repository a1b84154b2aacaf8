// SPDX-License-Identifier: GPL-2.0
/*
 * sbrig-gpio - drive and watch a rig's GPIO lines through libsbrig's gpio
 * module (a debugging tool and the test driver of lib/gpio.c).
 *
 *	sbrig-gpio CONF set LINE 0|1 [HOLD_MS]
 *	sbrig-gpio CONF get LINE
 *	sbrig-gpio CONF edges N TIMEOUT_MS
 *
 * set: drives an output (key or "charger"), prints "LINE VALUE T_NS",
 * holds it for HOLD_MS (default 0), then exits (which releases the lines:
 * outputs go inactive). get: prints the line's logical value. edges:
 * prints "ready" once the lines are requested, then one line per marker
 * edge "LINE rising|falling SEQNO T_NS" until N edges or TIMEOUT_MS.
 *
 * Exit status: 0 ok, 1 runtime error (message on stderr), 2 usage,
 * 3 edges: fewer than N edges before the timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sbrig/config.h>
#include <sbrig/gpio.h>
#include <sbrig/sbrig.h>

static int usage(void)
{
	fprintf(stderr, "usage: sbrig-gpio CONF set LINE 0|1 [HOLD_MS]\n"
			"       sbrig-gpio CONF get LINE\n"
			"       sbrig-gpio CONF edges N TIMEOUT_MS\n");
	return 2;
}

static int edges(struct sbrig_gpio *gpio, long want, long timeout_ms)
{
	int64_t end = sbrig_now_ns() + timeout_ms * 1000000LL;
	struct pollfd pfd = { .fd = sbrig_gpio_event_fd(gpio), .events = POLLIN };
	struct sbrig_edge e[16];
	long seen = 0;

	if (pfd.fd < 0) {
		fprintf(stderr, "sbrig-gpio: no marker line configured\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (seen < want) {
		int64_t left = end - sbrig_now_ns();
		ssize_t n, i;

		if (left <= 0)
			return 3;
		if (poll(&pfd, 1, (int)(left / 1000000) + 1) < 0 && errno != EINTR)
			return 1;
		n = sbrig_gpio_read_edges(gpio, e, 16);
		if (n < 0) {
			fprintf(stderr, "sbrig-gpio: %s\n", sbrig_errmsg());
			return 1;
		}
		for (i = 0; i < n; i++, seen++)
			printf("%s %s %" PRIu64 " %" PRId64 "\n", e[i].line,
			       e[i].rising ? "rising" : "falling", e[i].seqno,
			       e[i].t_ns);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct sbrig_config cfg;
	struct sbrig_gpio *gpio;
	int ret = 0;

	if (argc < 4)
		return usage();
	if (sbrig_config_load(argv[1], &cfg)) {
		fprintf(stderr, "sbrig-gpio: %s\n", sbrig_errmsg());
		return 1;
	}
	gpio = sbrig_gpio_new(&cfg, "sbrig-gpio");
	if (!gpio) {
		fprintf(stderr, "sbrig-gpio: %s\n", sbrig_errmsg());
		return 1;
	}
	if (strcmp(argv[2], "set") == 0 && (argc == 5 || argc == 6)) {
		long hold_ms = argc == 6 ? strtol(argv[5], NULL, 10) : 0;
		struct timespec ts = { hold_ms / 1000, hold_ms % 1000 * 1000000L };
		int64_t t_ns;

		if (sbrig_gpio_set(gpio, argv[3], atoi(argv[4]) != 0, &t_ns)) {
			ret = 1;
		} else {
			printf("%s %d %" PRId64 "\n", argv[3], atoi(argv[4]) != 0, t_ns);
			fflush(stdout);
			nanosleep(&ts, NULL);
		}
	} else if (strcmp(argv[2], "get") == 0 && argc == 4) {
		int v = sbrig_gpio_get(gpio, argv[3]);

		if (v < 0)
			ret = 1;
		else
			printf("%d\n", v);
	} else if (strcmp(argv[2], "edges") == 0 && argc == 5) {
		ret = edges(gpio, strtol(argv[3], NULL, 10),
			    strtol(argv[4], NULL, 10));
	} else {
		ret = usage();
	}
	if (ret == 1)
		fprintf(stderr, "sbrig-gpio: %s\n", sbrig_errmsg());
	sbrig_gpio_free(gpio);
	return ret;
}
