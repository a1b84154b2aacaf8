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
 * The port is watched by epoll with EPOLLWAKEUP: when the rig's bytes
 * arrive while the guest is resuming (QEMU hands them over once the
 * virtio-console driver has resumed) and this process is still frozen,
 * the kernel activates the epoll item's wakeup source from the port's
 * interrupt, and holds it until the next epoll_wait(), that is until the
 * key has been reported. So opportunistic suspend waits for the key as
 * for a real keypad's wake interrupt (gpio-keys also holds a wakeup
 * source from its interrupt). Needs CAP_BLOCK_SUSPEND (root).
 *
 * Prints "vkeypad ready" once the uinput device exists. Unknown lines are
 * ignored (with -v, logged). Exit: 0 on SIGTERM/SIGINT, 1 error, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/input.h>
#include <linux/uinput.h>

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

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

static void line(int ui, const char *s, int verbose)
{
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
	struct epoll_event ev = { .events = EPOLLIN | EPOLLWAKEUP };
	int verbose = 0, port, ui, ep;
	char buf[256];
	size_t len = 0;

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verbose = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: vkeypad [-v] PORT\n");
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	port = open(argv[1], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ui = keyboard();
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (port < 0 || ui < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, port, &ev)) {
		fprintf(stderr, "vkeypad: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("vkeypad ready\n");
	fflush(stdout);
	while (!quit) {
		ssize_t n;
		char *nl;

		/* the previous batch is reported: this releases the source */
		if (epoll_wait(ep, &ev, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("vkeypad: epoll_wait");
			return 1;
		}
		while ((n = read(port, buf + len, sizeof(buf) - 1 - len)) > 0) {
			len += (size_t)n;
			buf[len] = '\0';
			while ((nl = strchr(buf, '\n'))) {
				*nl = '\0';
				line(ui, buf, verbose);
				len -= (size_t)(nl + 1 - buf);
				memmove(buf, nl + 1, len + 1);
			}
			if (len == sizeof(buf) - 1)
				len = 0;	/* an overlong line: dropped */
		}
		if (n == 0)		/* nobody on the host side: wait a bit */
			usleep(20000);
	}
	ioctl(ui, UI_DEV_DESTROY);
	return 0;
}
