// SPDX-License-Identifier: GPL-2.0
/*
 * sbprobe - scriptable driver of the /dev/suspend_blocker ioctls, for tests
 *
 *	sbprobe OP [OP...]
 *
 * The operations run in order on one file descriptor; each prints one line,
 * "OP rc=0" (an ioctl's own return value if positive) or "OP errno=ENAME"
 * (the number if the name is not in errno_names[]), and stdout is flushed after every line so
 * a test can react to it while sbprobe waits (waitline). All operations are
 * parsed before the first one runs: a bad one exits 2 and runs nothing.
 * Otherwise the exit status is 0 whatever the operations returned: the
 * printed lines are the result.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/suspend_block_dev.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define SB_DEVICE	"/dev/suspend_blocker"
#define SB_BADIOCTL	_IO('s', 99)
#define SB_BAD_PTR	((void *)1)
#define SB_LEN_MAX	_IOC_SIZEMASK	/* largest len INIT(len) can encode */

#ifndef CAP_BLOCK_SUSPEND
#define CAP_BLOCK_SUSPEND	36
#endif

enum { EXIT_OK = 0, EXIT_USAGE = 2 };

/* One parsed operation. */
struct op {
	const struct op_type *type;
	const char *text;	/* as given, for the output line */
	char *name;		/* decoded NAME (may hold NUL bytes) */
	size_t len;		/* bytes passed to INIT */
	unsigned long ms;	/* also: the uid, the count */
};

/* State shared by the operations. */
struct probe {
	int fd;			/* -1 when closed */
};

struct op_type {
	const char *name;	/* "init" matches "init:..." */
	const char *args;	/* "" | "NAME" | "NAME:LEN" | "MS" */
	int (*parse)(struct op *op, char *arg);
	int (*run)(struct probe *p, struct op *op);
	const char *help;
};

/* ------------------------------------------------------------------ */
/* errno names                                                         */

#define E(x)	{ x, #x }
static const struct {
	int err;
	const char *name;
} errno_names[] = {
	E(EPERM), E(ENOENT), E(ESRCH), E(EINTR), E(EIO), E(ENXIO), E(E2BIG),
	E(EBADF), E(ECHILD), E(EAGAIN), E(ENOMEM), E(EACCES), E(EFAULT),
	E(EBUSY), E(EEXIST), E(ENODEV), E(ENOTDIR), E(EISDIR), E(EINVAL),
	E(ENFILE), E(EMFILE), E(ENOTTY), E(ENOSPC), E(EROFS), E(EPIPE),
	E(ERANGE), E(ENAMETOOLONG), E(ENOSYS), E(EOPNOTSUPP), E(ENOTSUP),
	E(ETIMEDOUT), E(ENOLINK), E(EOVERFLOW),
};
#undef E

static void print_result(const struct op *op, int ret)
{
	static char unknown[16];
	const char *name = NULL;
	size_t i;
	int err = errno;

	if (ret >= 0) {
		printf("%s rc=%d\n", op->text, ret);
	} else {
		for (i = 0; i < ARRAY_SIZE(errno_names) && !name; i++)
			if (errno_names[i].err == err)
				name = errno_names[i].name;
		if (!name) {
			snprintf(unknown, sizeof(unknown), "%d", err);
			name = unknown;
		}
		printf("%s errno=%s\n", op->text, name);
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Argument parsing                                                    */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static const struct {
	char esc, val;
} escapes[] = {
	{ 't', '\t' }, { 'n', '\n' }, { '"', '"' }, { '\\', '\\' },
};

/* Decode \t \n \" \\ \xHH in place; return the length or -1. */
static ssize_t unescape(char *s)
{
	char *out = s, *in = s;
	size_t i;

	while (*in) {
		if (*in != '\\') {
			*out++ = *in++;
			continue;
		}
		in++;
		if (*in == 'x' && hexval(in[1]) >= 0 && hexval(in[2]) >= 0) {
			*out++ = hexval(in[1]) << 4 | hexval(in[2]);
			in += 3;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(escapes); i++)
			if (*in == escapes[i].esc)
				break;
		if (i == ARRAY_SIZE(escapes)) {
			fprintf(stderr, "sbprobe: bad escape '\\%.1s' (use \\t \\n \\\" \\\\ \\xHH)\n",
				in);
			return -1;
		}
		*out++ = escapes[i].val;
		in++;
	}
	return out - s;
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *val,
		       const char *what)
{
	char *end;

	errno = 0;
	*val = strtoul(s, &end, 10);
	if (!*s || *end || *s == '-' || errno || *val > max) {
		fprintf(stderr, "sbprobe: bad %s '%s' (0..%lu)\n", what, s, max);
		return -1;
	}
	return 0;
}

static int parse_none(struct op *op, char *arg)
{
	(void)op;
	if (arg) {
		fprintf(stderr, "sbprobe: '%s' takes no argument\n", op->text);
		return -1;
	}
	return 0;
}

static int parse_ms(struct op *op, char *arg)
{
	if (!arg) {
		fprintf(stderr, "sbprobe: '%s' needs :MS\n", op->text);
		return -1;
	}
	return parse_ulong(arg, INT_MAX, &op->ms, "milliseconds");
}

static int parse_name(struct op *op, char *arg)
{
	ssize_t n;

	if (!arg) {
		fprintf(stderr, "sbprobe: '%s' needs :NAME\n", op->text);
		return -1;
	}
	n = unescape(arg);
	if (n < 0)
		return -1;
	op->name = arg;
	op->len = n;
	return 0;
}

/* NAME:LEN; the buffer is LEN bytes (at least), NAME then 'x' padding. */
static int parse_name_len(struct op *op, char *arg)
{
	char *colon = arg ? strrchr(arg, ':') : NULL, *buf;
	unsigned long len;
	ssize_t n;

	if (!colon) {
		fprintf(stderr, "sbprobe: '%s' needs :NAME:LEN\n", op->text);
		return -1;
	}
	*colon = '\0';
	if (parse_ulong(colon + 1, SB_LEN_MAX, &len, "length"))
		return -1;
	n = unescape(arg);
	if (n < 0)
		return -1;
	buf = malloc(len > (size_t)n ? len : (size_t)n + 1);
	if (!buf) {
		fprintf(stderr, "sbprobe: out of memory\n");
		return -1;
	}
	memcpy(buf, arg, n);
	if (len > (size_t)n)
		memset(buf + n, 'x', len - n);
	op->name = buf;
	op->len = len;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */

static int run_open(struct probe *p, struct op *op)
{
	(void)op;
	/* A previous fd stays open (and its blocker alive) until exit. */
	p->fd = open(SB_DEVICE, O_RDWR | O_CLOEXEC);
	return p->fd < 0 ? -1 : 0;
}

static int run_init(struct probe *p, struct op *op)
{
	return ioctl(p->fd, SUSPEND_BLOCKER_IOCTL_INIT(op->len), op->name);
}

static int run_initbad(struct probe *p, struct op *op)
{
	(void)op;
	return ioctl(p->fd, SUSPEND_BLOCKER_IOCTL_INIT(8), SB_BAD_PTR);
}

static int run_block(struct probe *p, struct op *op)
{
	(void)op;
	return ioctl(p->fd, SUSPEND_BLOCKER_IOCTL_BLOCK);
}

static int run_unblock(struct probe *p, struct op *op)
{
	(void)op;
	return ioctl(p->fd, SUSPEND_BLOCKER_IOCTL_UNBLOCK);
}

static int run_badioctl(struct probe *p, struct op *op)
{
	(void)op;
	return ioctl(p->fd, SB_BADIOCTL);
}

static int run_close(struct probe *p, struct op *op)
{
	int fd = p->fd;

	(void)op;
	p->fd = -1;
	return close(fd);
}

static int sleep_ms(unsigned long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))
		if (errno != EINTR)
			return -1;
	return 0;
}

static int run_sleep(struct probe *p, struct op *op)
{
	(void)p;
	return sleep_ms(op->ms);
}

/* Raw capget/capset: no libcap on the target. */
static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	uint32_t bit = 1U << (cap % 32);

	if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
		return -1;
	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[cap / 32].effective &= ~bit;
	data[cap / 32].permitted &= ~bit;
	return syscall(SYS_capset, &hdr, data);
}

static int parse_uid(struct op *op, char *arg)
{
	if (!arg) {
		fprintf(stderr, "sbprobe: '%s' needs :UID\n", op->text);
		return -1;
	}
	return parse_ulong(arg, 65535, &op->ms, "uid");
}

/* Become UID (and its gid): no capabilities left. */
static int run_uid(struct probe *p, struct op *op)
{
	(void)p;
	if (setgroups(0, NULL) || setgid(op->ms))
		return -1;
	return setuid(op->ms);
}

/* PREFIX:N */
static int parse_many(struct op *op, char *arg)
{
	char *colon = arg ? strrchr(arg, ':') : NULL;

	if (!colon) {
		fprintf(stderr, "sbprobe: '%s' needs :PREFIX:N\n", op->text);
		return -1;
	}
	*colon = '\0';
	if (parse_ulong(colon + 1, 100000, &op->ms, "count"))
		return -1;
	op->name = arg;
	op->len = strlen(arg);
	return 0;
}

/* N times: open, INIT("PREFIX<i>"); every fd stays open. */
static int run_initmany(struct probe *p, struct op *op)
{
	char name[300];
	unsigned long i;
	int n;

	for (i = 0; i < op->ms; i++) {
		n = snprintf(name, sizeof(name), "%s%lu", op->name, i);
		p->fd = open(SB_DEVICE, O_RDWR | O_CLOEXEC);
		if (p->fd < 0 ||
		    ioctl(p->fd, SUSPEND_BLOCKER_IOCTL_INIT(n), name))
			return -1;
	}
	return i;
}

static int run_dropcap(struct probe *p, struct op *op)
{
	(void)p;
	(void)op;
	return drop_cap(CAP_BLOCK_SUSPEND);
}

/* Until a whole line or EOF on stdin. */
static int run_waitline(struct probe *p, struct op *op)
{
	ssize_t r;
	char c;

	(void)p;
	(void)op;
	for (;;) {
		r = read(STDIN_FILENO, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r;
		if (c == '\n')
			return 0;
	}
}

static int run_dup(struct probe *p, struct op *op)
{
	int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0), err;

	(void)op;
	if (fd < 0)
		return -1;
	if (close(p->fd)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	p->fd = fd;
	return 0;
}

/* The child keeps only the blocker fd, so it holds no test pipe open. */
static void __attribute__((noreturn)) hold_child(int keep, unsigned long ms)
{
	int fd, max = sysconf(_SC_OPEN_MAX);

	for (fd = 0; fd < max && fd < 1024; fd++)
		if (fd != keep)
			close(fd);
	sleep_ms(ms);
	_exit(0);
}

static int run_fork_hold(struct probe *p, struct op *op)
{
	pid_t pid = fork();

	if (!pid)
		hold_child(p->fd, op->ms);
	return pid < 0 ? -1 : 0;
}

static const struct op_type op_types[] = {
	{ "open", "", parse_none, run_open,
	  "open " SB_DEVICE " O_RDWR|O_CLOEXEC" },
	{ "init", "NAME", parse_name, run_init,
	  "INIT(strlen(NAME)); escapes \\t \\n \\\" \\\\ \\xHH" },
	{ "initlen", "NAME:LEN", parse_name_len, run_init,
	  "INIT(LEN), buffer of LEN bytes: NAME padded with 'x'" },
	{ "initbad", "", parse_none, run_initbad,
	  "INIT(8) with the pointer (void *)1" },
	{ "block", "", parse_none, run_block, "BLOCK" },
	{ "unblock", "", parse_none, run_unblock, "UNBLOCK" },
	{ "badioctl", "", parse_none, run_badioctl, "_IO('s', 99)" },
	{ "close", "", parse_none, run_close, "close the fd" },
	{ "sleep", "MS", parse_ms, run_sleep, "sleep MS milliseconds" },
	{ "dropcap", "", parse_none, run_dropcap,
	  "drop CAP_BLOCK_SUSPEND: bounding, effective, permitted" },
	{ "waitline", "", parse_none, run_waitline,
	  "wait for a line or EOF on stdin" },
	{ "dup", "", parse_none, run_dup,
	  "dup the fd, close the original, go on with the copy" },
	{ "fork-hold", "MS", parse_ms, run_fork_hold,
	  "fork a child that keeps the fd MS ms, then exits" },
	{ "uid", "UID", parse_uid, run_uid,
	  "set uid and gid to UID (drops every capability)" },
	{ "initmany", "PREFIX:N", parse_many, run_initmany,
	  "N x (open, INIT(PREFIX<i>)), fds kept; rc=N" },
};

static void usage(FILE *f)
{
	char spec[32];
	size_t i;

	fprintf(f, "Usage: sbprobe OP [OP...]\n"
		"Run ioctl operations on one %s descriptor, in order;\n"
		"print 'OP rc=0' or 'OP errno=ENAME' for each.\n\nOperations:\n",
		SB_DEVICE);
	for (i = 0; i < ARRAY_SIZE(op_types); i++) {
		snprintf(spec, sizeof(spec), "%s%s%s", op_types[i].name,
			 *op_types[i].args ? ":" : "", op_types[i].args);
		fprintf(f, "  %-17s %s\n", spec, op_types[i].help);
	}
	fprintf(f, "\nExit status: 0 when all operations were run, 2 when one "
		"could not be parsed\n(nothing is run then).\n");
}

static int parse_op(struct op *op, char *text)
{
	char *copy = strdup(text), *colon;
	size_t i;

	if (!copy) {
		fprintf(stderr, "sbprobe: out of memory\n");
		return -1;
	}
	op->text = text;
	colon = strchr(copy, ':');
	if (colon)
		*colon++ = '\0';
	for (i = 0; i < ARRAY_SIZE(op_types); i++) {
		if (!strcmp(copy, op_types[i].name)) {
			op->type = &op_types[i];
			return op->type->parse(op, colon);
		}
	}
	fprintf(stderr, "sbprobe: unknown operation '%s'; try 'sbprobe --help'\n",
		text);
	return -1;
}

int main(int argc, char **argv)
{
	struct probe p = { .fd = -1 };
	struct op *ops;
	int i, ret;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	ops = calloc(argc, sizeof(*ops));
	if (!ops) {
		fprintf(stderr, "sbprobe: out of memory\n");
		return EXIT_USAGE;
	}
	for (i = 1; i < argc; i++)
		if (parse_op(&ops[i], argv[i]))
			return EXIT_USAGE;
	for (i = 1; i < argc; i++) {
		errno = 0;
		ret = ops[i].type->run(&p, &ops[i]);
		print_result(&ops[i], ret);
	}
	return EXIT_OK;
}
