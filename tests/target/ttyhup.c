// SPDX-License-Identifier: GPL-2.0
/*
 * ttyhup - hang a tty up, as the kernel does when a USB serial adapter is
 * unplugged (usb-serial's disconnect calls tty_vhangup()): every open file
 * of it then polls readable (POLLHUP) and reads nothing, for ever; a new
 * open works again. Needs CAP_SYS_ADMIN.
 *
 *   ttyhup /dev/ttyS1
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: ttyhup /dev/TTY\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || ioctl(fd, TIOCVHANGUP) < 0) {
		fprintf(stderr, "ttyhup: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}
