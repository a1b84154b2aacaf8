// SPDX-License-Identifier: GPL-2.0
/*
 * sbevtool - drive suspend_block's /dev/input/sbevent<N> nodes, for tests
 *
 *	sbevtool OP [OP...]
 *
 * Runs the operations in order and prints one line for each, flushed:
 *
 *   uinput:NAME   create a uinput keyboard NAME (keys 1..KEY_MAX/2), wait
 *                 for its sbevent node: "uinput node=sbeventN"
 *   pointer:NAME  the same with absolute axes too (ABS_X, ABS_Y): a
 *                 touch controller with keys, not a keypad
 *   node:NAME     find the sbevent node of the input device NAME
 *   open[:N]      open N (default 1) clients of the node, O_NONBLOCK
 *   optin, optout EVIOCSSUSPENDBLOCK 1 / 0 on every open client: "rc=0"
 *                 or "errno=N" (of the first failure)
 *   get           EVIOCGSUSPENDBLOCK of the first client: "get=V"
 *   id            "id name=... bustype=... version=V evbit_key=0|1"
 *   press:CODE, release:CODE   an EV_KEY event and SYN_REPORT (uinput)
 *   keys:N        N press+release packets of KEY_A
 *   read          read what the first client has: "read n=N syn_dropped=0|1
 *                 keys=CODE:VAL,..." or "read errno=N"
 *   readone       read exactly one event (a short buffer)
 *   blockread     fork a child that blocks in read() on a blocking fd;
 *                 "blockread started"; its result shows at "wait"
 *   wait          wait for the blockread child: "wait read errno=N" or
 *                 "wait read n=N"
 *   unplug        destroy the uinput device
 *   close         close every client
 *   uid:N         setuid(N): drops every capability (CAP_BLOCK_SUSPEND)
 *   sleep:MS      sleep
 *   line          wait for a line on stdin (the test acts meanwhile)
 *
 * Exit status: 0 (the lines are the result), 1 setup failure, 2 usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/input.h>
#include <linux/uinput.h>
#include <linux/suspend_block_dev.h>

#define MAX_CLIENTS	256

static int uifd = -1;
static int fds[MAX_CLIENTS];
static int nfds;
static char node[256];
static pid_t child;

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The sbevent node whose input device is called name, or "". */
static int find_node(const char *name)
{
	char path[512], buf[256];
	struct dirent *de;
	DIR *d = opendir("/sys/class/input");
	FILE *f;

	node[0] = '\0';
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, SUSPEND_BLOCK_EVDEV_PREFIX,
			    strlen(SUSPEND_BLOCK_EVDEV_PREFIX)))
			continue;
		snprintf(path, sizeof(path), "/sys/class/input/%s/device/name",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = '\0';
			if (!strcmp(buf, name))
				snprintf(node, sizeof(node), "%s", de->d_name);
		}
		fclose(f);
	}
	closedir(d);
	return node[0] ? 0 : -1;
}

static int emit(int type, int code, int value)
{
	struct input_event ie = { .type = type, .code = code, .value = value };

	return write(uifd, &ie, sizeof(ie)) == sizeof(ie) ? 0 : -1;
}

static void op_uinput(const char *name, int pointer)
{
	struct uinput_setup us = { .id = { .bustype = BUS_VIRTUAL,
					   .vendor = 0x5b, .product = 0x1 } };
	int i;

	uifd = open("/dev/uinput", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (uifd < 0) {
		perror("sbevtool: /dev/uinput");
		exit(1);
	}
	ioctl(uifd, UI_SET_EVBIT, EV_KEY);
	for (i = 1; i < KEY_MAX / 2; i++)
		ioctl(uifd, UI_SET_KEYBIT, i);
	for (i = 0; pointer && i < 2; i++) {
		struct uinput_abs_setup abs = {
			.code = i ? ABS_Y : ABS_X,
			.absinfo = { .maximum = 1023 },
		};

		if (ioctl(uifd, UI_SET_EVBIT, EV_ABS) ||
		    ioctl(uifd, UI_SET_ABSBIT, abs.code) ||
		    ioctl(uifd, UI_ABS_SETUP, &abs)) {
			perror("sbevtool: uinput axes");
			exit(1);
		}
	}
	snprintf(us.name, sizeof(us.name), "%s", name);
	if (ioctl(uifd, UI_DEV_SETUP, &us) || ioctl(uifd, UI_DEV_CREATE)) {
		perror("sbevtool: uinput setup");
		exit(1);
	}
	for (i = 0; i < 500 && find_node(name); i++)
		msleep(10);
	printf("uinput node=%s\n", node[0] ? node : "none");
}

static int open_node(int flags)
{
	char path[300];

	snprintf(path, sizeof(path), "/dev/input/%s", node);
	return open(path, flags | O_CLOEXEC);
}

static void op_open(int n)
{
	int i, err = 0;

	for (i = 0; i < n && nfds < MAX_CLIENTS; i++) {
		int fd = open_node(O_RDONLY | O_NONBLOCK);

		if (fd < 0) {
			err = errno;
			break;
		}
		fds[nfds++] = fd;
	}
	if (err)
		printf("open errno=%d clients=%d\n", err, nfds);
	else
		printf("open clients=%d\n", nfds);
}

static void op_optin(const char *what, int on)
{
	int i;

	for (i = 0; i < nfds; i++)
		if (ioctl(fds[i], EVIOCSSUSPENDBLOCK, on)) {
			printf("%s errno=%d\n", what, errno);
			return;
		}
	printf("%s rc=0\n", what);
}

static void op_get(void)
{
	int v = -1;

	if (ioctl(fds[0], EVIOCGSUSPENDBLOCK, &v))
		printf("get errno=%d\n", errno);
	else
		printf("get=%d\n", v);
}

static void op_id(void)
{
	unsigned long evbit[(EV_MAX + 8 * sizeof(long)) / (8 * sizeof(long))];
	char name[256] = "";
	struct input_id id;
	int version = 0;

	memset(evbit, 0, sizeof(evbit));
	if (ioctl(fds[0], EVIOCGNAME(sizeof(name)), name) < 0 ||
	    ioctl(fds[0], EVIOCGID, &id) || ioctl(fds[0], EVIOCGVERSION, &version) ||
	    ioctl(fds[0], EVIOCGBIT(0, sizeof(evbit)), evbit) < 0) {
		printf("id errno=%d\n", errno);
		return;
	}
	printf("id name=%s bustype=%d vendor=%d version=0x%x evbit_key=%d\n",
	       name, id.bustype, id.vendor, version,
	       !!(evbit[0] & (1UL << EV_KEY)));
}

static void print_events(const char *what, const struct input_event *ie,
			 ssize_t r)
{
	int i, n = (int)(r / (ssize_t)sizeof(*ie)), dropped = 0, first = 1;

	printf("%s n=%d", what, n);
	for (i = 0; i < n; i++)
		dropped |= ie[i].type == EV_SYN && ie[i].code == SYN_DROPPED;
	printf(" syn_dropped=%d keys=", dropped);
	for (i = 0; i < n; i++) {
		if (ie[i].type != EV_KEY)
			continue;
		printf("%s%d:%d", first ? "" : ",", ie[i].code, ie[i].value);
		first = 0;
	}
	printf("\n");
}

static void op_read(size_t max)
{
	static struct input_event ie[4096];
	ssize_t r = read(fds[0], ie, max * sizeof(ie[0]));

	if (r < 0)
		printf("read errno=%d\n", errno);
	else
		print_events("read", ie, r);
}

static void op_blockread(void)
{
	struct input_event ie[64];
	int fd = open_node(O_RDONLY);
	ssize_t r;

	if (fd < 0) {
		printf("blockread errno=%d\n", errno);
		return;
	}
	child = fork();
	if (child == 0) {
		r = read(fd, ie, sizeof(ie));
		_exit(r < 0 ? errno : 200 + (int)(r / sizeof(ie[0])));
	}
	close(fd);
	printf("blockread started\n");
}

static void op_wait(void)
{
	int status;

	if (child <= 0 || waitpid(child, &status, 0) != child ||
	    !WIFEXITED(status)) {
		printf("wait failed\n");
		return;
	}
	child = 0;
	if (WEXITSTATUS(status) >= 200)
		printf("wait read n=%d\n", WEXITSTATUS(status) - 200);
	else
		printf("wait read errno=%d\n", WEXITSTATUS(status));
}

static void op_close(void)
{
	while (nfds)
		close(fds[--nfds]);
	printf("close\n");
}

int main(int argc, char **argv)
{
	char line[64];
	int i, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		const char *op = argv[i], *arg = strchr(op, ':');

		arg = arg ? arg + 1 : "";
		if (!strncmp(op, "uinput:", 7)) {
			op_uinput(arg, 0);
		} else if (!strncmp(op, "pointer:", 8)) {
			op_uinput(arg, 1);
		} else if (!strncmp(op, "node:", 5)) {
			printf("node %s\n", find_node(arg) ? "none" : node);
		} else if (!strncmp(op, "open", 4)) {
			op_open(*arg ? atoi(arg) : 1);
		} else if (!strcmp(op, "optin")) {
			op_optin(op, 1);
		} else if (!strcmp(op, "optout")) {
			op_optin(op, 0);
		} else if (!strcmp(op, "get") && nfds) {
			op_get();
		} else if (!strcmp(op, "id") && nfds) {
			op_id();
		} else if (!strncmp(op, "press:", 6) || !strncmp(op, "release:", 8)) {
			n = emit(EV_KEY, atoi(arg), op[0] == 'p') ||
			    emit(EV_SYN, SYN_REPORT, 0);
			printf("%.*s %s\n", (int)(arg - op - 1), op, n ? "failed" : "ok");
		} else if (!strncmp(op, "keys:", 5)) {
			for (n = atoi(arg); n > 0; n--)
				if (emit(EV_KEY, KEY_A, 1) || emit(EV_SYN, SYN_REPORT, 0) ||
				    emit(EV_KEY, KEY_A, 0) || emit(EV_SYN, SYN_REPORT, 0))
					break;
			printf("keys %s\n", n ? "failed" : "ok");
		} else if (!strcmp(op, "read") && nfds) {
			op_read(4096);
		} else if (!strcmp(op, "readone") && nfds) {
			op_read(1);
		} else if (!strcmp(op, "blockread")) {
			op_blockread();
		} else if (!strcmp(op, "wait")) {
			op_wait();
		} else if (!strcmp(op, "unplug")) {
			ioctl(uifd, UI_DEV_DESTROY);
			close(uifd);
			uifd = -1;
			printf("unplug\n");
		} else if (!strncmp(op, "uid:", 4)) {
			printf("uid %s\n", setuid(atoi(arg)) ? "failed" : "ok");
		} else if (!strcmp(op, "close")) {
			op_close();
		} else if (!strncmp(op, "sleep:", 6)) {
			msleep(atol(arg));
			printf("sleep\n");
		} else if (!strcmp(op, "line")) {
			if (!fgets(line, sizeof(line), stdin))
				return 1;
			printf("line\n");
		} else {
			fprintf(stderr, "sbevtool: bad operation '%s'\n", op);
			return 2;
		}
	}
	return 0;
}
