// SPDX-License-Identifier: GPL-2.0
/*
 * nsbind - run a program as an unprivileged user in mount namespace of its
 * own, with files bind-mounted over others (an attack on kernel code that
 * opens files by path)
 *
 *	nsbind [-u UID] [-b SRC:DST]... [-f DST]... -- PROG [ARG...]
 *
 * -u UID drops to UID (and gid UID, no supplementary groups) first. Then
 * nsbind makes a user namespace (mapping UID to 0 in it) and a mount
 * namespace, as any local user of Debian's kernel may, makes every mount
 * private, bind-mounts each SRC over DST (-b) and a fresh FIFO over each
 * DST (-f), and executes PROG. Mounts over sysfs files are allowed there:
 * nothing outside the namespace sees them. Prints "nsbind: ready" on stderr
 * before the exec. Exit: PROG's, or 1 (a step failed, named on stderr),
 * 2 (usage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BINDS	16

struct bind {
	char *src;	/* NULL: a FIFO */
	char *dst;
};

static int fail(const char *what, const char *arg)
{
	fprintf(stderr, "nsbind: %s %s: %s\n", what, arg ? arg : "",
		strerror(errno));
	return 1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: nsbind [-u UID] [-b SRC:DST]... [-f DST]... -- PROG [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct bind binds[MAX_BINDS];
	char map[64], fifodir[] = "/tmp/nsbind.XXXXXX", fifo[64];
	int nbinds = 0, have_dir = 0, opt, i;
	long uid = -1;
	uid_t outer;
	gid_t outer_gid;

	while ((opt = getopt(argc, argv, "+u:b:f:")) != -1) {
		char *colon;

		switch (opt) {
		case 'u':
			uid = strtol(optarg, NULL, 10);
			break;
		case 'b':
		case 'f':
			if (nbinds == MAX_BINDS)
				return usage();
			colon = opt == 'b' ? strchr(optarg, ':') : NULL;
			if (opt == 'b' && !colon)
				return usage();
			if (colon)
				*colon = '\0';
			binds[nbinds].src = colon ? optarg : NULL;
			binds[nbinds].dst = colon ? colon + 1 : optarg;
			nbinds++;
			break;
		default:
			return usage();
		}
	}
	if (optind >= argc)
		return usage();

	/* dumpable again after the uid change: /proc/self is then ours */
	if (uid >= 0 && (setgroups(0, NULL) || setgid(uid) || setuid(uid) ||
			 prctl(PR_SET_DUMPABLE, 1)))
		return fail("drop to uid", NULL);
	outer = getuid();
	outer_gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return fail("unshare", "CLONE_NEWUSER|CLONE_NEWNS");
	if (write_file("/proc/self/setgroups", "deny"))
		return fail("write", "/proc/self/setgroups");
	snprintf(map, sizeof(map), "0 %u 1", outer);
	if (write_file("/proc/self/uid_map", map))
		return fail("write", "/proc/self/uid_map");
	snprintf(map, sizeof(map), "0 %u 1", outer_gid);
	if (write_file("/proc/self/gid_map", map))
		return fail("write", "/proc/self/gid_map");
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return fail("make mounts private", "/");
	for (i = 0; i < nbinds; i++) {
		const char *src = binds[i].src;

		if (!src) {
			if (!have_dir && !mkdtemp(fifodir))
				return fail("mkdtemp", fifodir);
			have_dir = 1;
			snprintf(fifo, sizeof(fifo), "%s/fifo%d", fifodir, i);
			if (mkfifo(fifo, 0600))
				return fail("mkfifo", fifo);
			src = fifo;
		}
		if (mount(src, binds[i].dst, NULL, MS_BIND, NULL))
			return fail("bind-mount over", binds[i].dst);
	}
	fprintf(stderr, "nsbind: ready\n");
	execvp(argv[optind], argv + optind);
	return fail("exec", argv[optind]);
}
