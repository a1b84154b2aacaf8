// SPDX-License-Identifier: GPL-2.0
/*
 * vkeypad - the virtual rig's key controller, on the target
 *
 *	vkeypad PORT
 *
 * On the virtual rig (rig/virtual/vrig.py, README.md "The virtual rig's
 * keypad interrupt") the rig writes key transitions to the virtio-serial
 * port PORT (e.g. /dev/vport0p1), one line each:
 *
 *	d CODE		key CODE (a Linux input key code) went down
 *	u CODE		key CODE went up
 *
 * vkeypad reports each as a key event of a uinput keyboard, "sbrig
 * virtual keypad", so the key reaches an input device of the guest and
 * every input handler (suspend_block's keypad_scan, its sbevent queues).
 *
 * The port is read as vport.h describes (EPOLLWAKEUP): opportunistic
 * suspend waits for the key as for a real keypad's wake interrupt
 * (gpio-keys also holds a wakeup source from its interrupt).
 *
 * Prints "vkeypad ready" once the uinput device exists. Unknown lines are
 * ignored (with -v, logged). Exit: 0 on SIGTERM/SIGINT, 1 error, 2 usage.
 */
#include "vport.h"

#include <stdlib.h>
#include <sys/ioctl.h>

#include <linux/input.h>
#include <linux/uinput.h>

struct vkeypad {
	int ui;
	int verbose;
};

static int emit(int fd, int type, int code, int value)
{
	struct input_event ie = { .type = type, .code = code, .value = value };

	return write(fd, &ie, sizeof(ie)) == sizeof(ie) ? 0 : -1;
}

static int keyboard(void)
{
	struct uinput_setup us = { .id = { .bustype = BUS_VIRTUAL,
					   .vendor = 0x5b, .product = 0x2 },
				   .name = "sbrig virtual keypad" };
	int fd = open("/dev/uinput", O_WRONLY | O_CLOEXEC), code;

	if (fd < 0)
		return -1;
	if (ioctl(fd, UI_SET_EVBIT, EV_KEY))
		goto fail;
	for (code = 1; code < BTN_MISC; code++)
		if (ioctl(fd, UI_SET_KEYBIT, code))
			goto fail;
	if (ioctl(fd, UI_DEV_SETUP, &us) || ioctl(fd, UI_DEV_CREATE))
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

static void ready(void *ctx)
{
	(void)ctx;
	printf("vkeypad ready\n");
	fflush(stdout);
}

static void line(const char *s, void *ctx)
{
	const struct vkeypad *kp = ctx;
	int ui = kp->ui, verbose = kp->verbose;
	unsigned int code;
	char cmd;

	if (sscanf(s, "%c %u", &cmd, &code) != 2 || (cmd != 'd' && cmd != 'u') ||
	    !code || code >= BTN_MISC) {
		if (verbose)
			fprintf(stderr, "vkeypad: ignored '%s'\n", s);
		return;
	}
	if (emit(ui, EV_KEY, (int)code, cmd == 'd') || emit(ui, EV_SYN, SYN_REPORT, 0))
		perror("vkeypad: uinput");
	else if (verbose)
		fprintf(stderr, "vkeypad: key %u %s\n", code, cmd == 'd' ? "down" : "up");
}

int main(int argc, char **argv)
{
	struct vkeypad kp = { .verbose = 0 };
	int ret;

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		kp.verbose = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: vkeypad [-v] PORT\n");
		return 2;
	}
	kp.ui = keyboard();
	if (kp.ui < 0) {
		fprintf(stderr, "vkeypad: /dev/uinput: %s\n", strerror(errno));
		return 1;
	}
	ret = vport_run("vkeypad", argv[1], ready, line, &kp);
	ioctl(kp.ui, UI_DEV_DESTROY);
	return ret;
}
