// SPDX-License-Identifier: GPL-2.0
/*
 * vcharger - the virtual rig's charger-detect line, on the target
 *
 *	vcharger [-v] PORT [PARAM]
 *
 * On the virtual rig (rig/virtual/vrig.py, README.md "The virtual rig's
 * charger-detect line") the rig writes the charger's state to the
 * virtio-serial port PORT (e.g. /dev/vport0p2), one line per change:
 *
 *	c 1		the charger was plugged in
 *	c 0		the charger was unplugged
 *
 * vcharger hands each to a real power-supply driver: it writes "on" or
 * "off" to PARAM (default /sys/module/test_power/parameters/ac_online,
 * the kernel's test_power driver), whose change calls
 * power_supply_changed(), exactly what gpio-charger does from a real
 * charger-detect interrupt: the supply's wakeup source ("test_ac") is
 * held until the change notifications have run, and opportunistic
 * suspend waits for them (seed 009).
 *
 * The port is read as vport.h describes (EPOLLWAKEUP): the port's wakeup
 * source is held from the bytes' arrival until the write to PARAM has
 * returned, by which time the supply's own source is active, so there is
 * no gap in which the guest could suspend with the change unhandled.
 *
 * Prints "vcharger ready" once the port is watched. Unknown lines are
 * ignored (with -v, logged). Exit: 0 on SIGTERM/SIGINT, 1 error, 2 usage.
 */
#include "vport.h"

#include <stdlib.h>

#define VCHARGER_PARAM "/sys/module/test_power/parameters/ac_online"

struct vcharger {
	const char *param;
	int verbose;
};

static void ready(void *ctx)
{
	(void)ctx;
	printf("vcharger ready\n");
	fflush(stdout);
}

static void line(const char *s, void *ctx)
{
	const struct vcharger *ch = ctx;
	const char *val;
	unsigned int on;
	char cmd, end;
	int fd;

	if (sscanf(s, "%c %u%c", &cmd, &on, &end) != 2 || cmd != 'c' || on > 1) {
		if (ch->verbose)
			fprintf(stderr, "vcharger: ignored '%s'\n", s);
		return;
	}
	val = on ? "on\n" : "off\n";
	fd = open(ch->param, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		fprintf(stderr, "vcharger: %s: %s\n", ch->param, strerror(errno));
	else if (ch->verbose)
		fprintf(stderr, "vcharger: charger %s\n", on ? "plugged" : "unplugged");
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	struct vcharger ch = { .param = VCHARGER_PARAM };

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		ch.verbose = 1;
		argv++;
		argc--;
	}
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: vcharger [-v] PORT [PARAM]\n");
		return 2;
	}
	if (argc == 3)
		ch.param = argv[2];
	if (access(ch.param, W_OK)) {
		fprintf(stderr, "vcharger: %s: %s (modprobe test_power)\n",
			ch.param, strerror(errno));
		return 1;
	}
	return vport_run("vcharger", argv[1], ready, line, &ch);
}
