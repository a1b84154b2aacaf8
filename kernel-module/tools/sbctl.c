// SPDX-License-Identifier: GPL-2.0
/*
 * sbctl - inspect and control suspend blockers of suspend_block.ko
 *
 * Target-side CLI for engineers. It only uses the module's public files:
 *
 *	/dev/suspend_blocker			ioctls of <linux/suspend_block_dev.h>
 *	SYSFS/policy, SYSFS/state, SYSFS/requested
 *	DEBUGFS/suspend_blockers		statistics table
 *	DEBUGFS/suspend_blocker_events	event stream
 *
 * SYSFS defaults to SUSPEND_BLOCK_SYSFS_DIR and DEBUGFS to /sys/kernel/debug;
 * the environment variables SBCTL_SYSFS and SBCTL_DEBUGFS override them so
 * the parsing and printing can be tested against fixture directories.
 *
 * Structure: one table of subcommands, each with its own option table; one
 * generic parser fills a struct sb_args from those tables. Signals only set
 * flags; every wait is a ppoll() that unblocks them atomically, so a signal
 * can never be lost between checking the flag and going to sleep.
 *
 * Exit status: 0 success, 1 runtime error, 2 usage error; "hold -- CMD"
 * exits with CMD's status (128+N if CMD was killed by signal N, 126/127 if
 * it could not be executed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/suspend_block_dev.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum sb_exit {
	SB_EXIT_OK	= 0,
	SB_EXIT_RUNTIME	= 1,
	SB_EXIT_USAGE	= 2,
	SB_EXIT_NOEXEC	= 126,	/* hold -- CMD: CMD found but not executable */
	SB_EXIT_NOENT	= 127,	/* hold -- CMD: CMD not found */
};

#define SB_DEVICE		"/dev/suspend_blocker"
#define SB_DEBUGFS_DEFAULT	"/sys/kernel/debug"
#define SB_STATS_HEADER		"name\tcount\twake_count\tactive_since" \
				"\ttotal_time\tsleep_time\tmax_time\tlast_change"
#define SB_FILE_MAX		(16 << 20)	/* refuse to slurp more */
#define SB_SYSFS_MAX		4096

static const char *prog = "sbctl";

static void __attribute__((format(printf, 1, 2))) sb_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */

static const char *sb_dir(const char *env, const char *def)
{
	const char *d = getenv(env);

	return d && *d ? d : def;
}

static void sb_path(char *buf, size_t size, const char *env, const char *def,
		    const char *file)
{
	snprintf(buf, size, "%s/%s", sb_dir(env, def), file);
}

static void sysfs_path(char *buf, size_t size, const char *file)
{
	sb_path(buf, size, "SBCTL_SYSFS", SUSPEND_BLOCK_SYSFS_DIR, file);
}

static void debugfs_path(char *buf, size_t size, const char *file)
{
	sb_path(buf, size, "SBCTL_DEBUGFS", SB_DEBUGFS_DEFAULT, file);
}

/* A hint for the usual reason a module file cannot be opened. */
static const char *open_hint(int err, bool debugfs)
{
	if (err != ENOENT)
		return "";
	return debugfs ? " (is debugfs mounted and suspend_block.ko loaded?)"
		       : " (is suspend_block.ko loaded?)";
}

/* ------------------------------------------------------------------ */
/* Small file I/O                                                      */

/**
 * read_file() - read a whole (sysfs or debugfs) file
 * @path:	file to read
 * @len:	set to the number of bytes read
 * @debugfs:	for the error hint only
 *
 * Return: a NUL-terminated buffer the caller frees, or NULL after printing
 * an error.
 */
static char *read_file(const char *path, size_t *len, bool debugfs)
{
	size_t size = 4096, n = 0;
	char *buf = NULL, *nbuf;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sb_err("open %s: %s%s", path, strerror(errno),
		       open_hint(errno, debugfs));
		return NULL;
	}
	for (;;) {
		if (!buf || n + 1 >= size) {
			if (buf)
				size *= 2;
			if (size > SB_FILE_MAX) {
				sb_err("%s: larger than %d bytes", path,
				       SB_FILE_MAX);
				goto err;
			}
			nbuf = realloc(buf, size);
			if (!nbuf) {
				sb_err("%s: out of memory", path);
				goto err;
			}
			buf = nbuf;
		}
		r = read(fd, buf + n, size - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			sb_err("read %s: %s", path, strerror(errno));
			goto err;
		}
		if (!r)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
err:
	free(buf);
	close(fd);
	return NULL;
}

/* Read a one-line sysfs attribute into @buf, without the trailing newline. */
static int read_attr(const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	size_t len;
	char *data;

	sysfs_path(path, sizeof(path), file);
	data = read_file(path, &len, false);
	if (!data)
		return -1;
	while (len && (data[len - 1] == '\n' || data[len - 1] == ' '))
		data[--len] = '\0';
	snprintf(buf, size, "%s", data);
	free(data);
	return 0;
}

/* Write @val to a sysfs attribute in one write(), as "echo -n" would. */
static int write_attr(const char *file, const char *val)
{
	size_t len = strlen(val);
	char path[PATH_MAX];
	ssize_t r;
	int fd;

	sysfs_path(path, sizeof(path), file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		sb_err("open %s: %s%s", path, strerror(errno),
		       open_hint(errno, false));
		return -1;
	}
	do {
		r = write(fd, val, len);
	} while (r < 0 && errno == EINTR);
	if (r < 0 || (size_t)r != len) {
		sb_err("write '%s' to %s: %s", val, path,
		       r < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	if (close(fd)) {
		sb_err("close %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Is @word one of the space-separated words in @list? */
static bool word_in_list(const char *list, const char *word)
{
	size_t wlen = strlen(word);
	const char *p = list;

	while (*p) {
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (n && n == wlen && !strncmp(p, word, n))
			return true;
		p += n;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Signals: handlers only set flags                                    */

/*
 * Set by the handler, which only runs inside sb_wait(): everywhere else
 * our signals are blocked, so these need no further care.
 */
static volatile sig_atomic_t sb_quit_sig;	/* last SIGINT/SIGTERM */
static volatile sig_atomic_t sb_forward_count;	/* ... sent by a process */

static const int sb_signals[] = { SIGINT, SIGTERM, SIGCHLD };
static struct sigaction sb_old_act[ARRAY_SIZE(sb_signals)];
static sigset_t sb_old_mask;	/* mask at start, restored for CMD */
static sigset_t sb_wait_mask;	/* mask while waiting: ours unblocked */

static void sb_on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGCHLD)
		return;		/* only to end the ppoll() in hold_while_cmd() */
	sb_quit_sig = sig;
	/* From the tty the child got it too: only forward kill(2)s. */
	if (si->si_code == SI_USER || si->si_code == SI_QUEUE)
		sb_forward_count++;
}

/*
 * Block our signals (so they are only delivered inside sb_wait()) and
 * install the flag-setting handler.
 */
static int signals_setup(void)
{
	struct sigaction sa = { 0 };
	sigset_t block;
	size_t i;

	sigemptyset(&block);
	for (i = 0; i < ARRAY_SIZE(sb_signals); i++)
		sigaddset(&block, sb_signals[i]);
	if (sigprocmask(SIG_BLOCK, &block, &sb_old_mask)) {
		sb_err("sigprocmask: %s", strerror(errno));
		return -1;
	}
	sb_wait_mask = sb_old_mask;
	sa.sa_sigaction = sb_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(sb_signals); i++) {
		sigdelset(&sb_wait_mask, sb_signals[i]);
		if (sigaction(sb_signals[i], &sa, &sb_old_act[i])) {
			sb_err("sigaction: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* In a child about to exec: give back the dispositions and mask we got. */
static void signals_restore(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sb_signals); i++)
		sigaction(sb_signals[i], &sb_old_act[i], NULL);
	sigprocmask(SIG_SETMASK, &sb_old_mask, NULL);
}

/*
 * ppoll() runs the handler of a pending signal only when it returns EINTR,
 * i.e. when no fd is ready. With a fd that is always ready (a flood of
 * input or events) a signal would wait forever: let it in explicitly.
 */
static void deliver_pending(void)
{
	static const struct timespec zero;
	sigset_t pending;
	size_t i;

	if (sigpending(&pending))
		return;
	for (i = 0; i < ARRAY_SIZE(sb_signals); i++) {
		if (sigismember(&pending, sb_signals[i])) {
			ppoll(NULL, 0, &zero, &sb_wait_mask);
			return;
		}
	}
}

/*
 * ppoll() with our signals deliverable: -1/EINTR when one arrived. After a
 * return > 0 the caller still checks the flags: a signal may have come too.
 */
static int sb_wait(struct pollfd *fds, nfds_t nfds, const struct timespec *t)
{
	int n = ppoll(fds, nfds, t, &sb_wait_mask);

	if (n > 0)
		deliver_pending();
	return n;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Command line: tables and one parser                                 */

struct sb_uint {
	bool set;
	unsigned long long val;
};

struct sb_args {
	bool help;
	bool active;
	bool raw;
	bool follow;
	struct sb_uint ms;
	struct sb_uint count;
	int npos;
	char **pos;	/* positional arguments */
	int ncmd;
	char **cmd;	/* after "--", for hold; NULL if none */
};

enum sb_opt_type { OPT_FLAG, OPT_UINT };

struct sb_opt {
	const char *name;		/* "--ms" */
	enum sb_opt_type type;
	size_t off;			/* of the bool/sb_uint in sb_args */
	unsigned long long min, max;	/* OPT_UINT range */
};

#define FLAG(n, f)		{ n, OPT_FLAG, offsetof(struct sb_args, f), 0, 0 }
#define UINT(n, f, lo, hi)	{ n, OPT_UINT, offsetof(struct sb_args, f), lo, hi }

static const struct sb_opt opt_help[] = {
	FLAG("--help", help),
	FLAG("-h", help),
};

static const struct sb_opt opts_list[] = {
	FLAG("--active", active),
	FLAG("--raw", raw),
	{ NULL },
};

static const struct sb_opt opts_none[] = {
	{ NULL },
};

static const struct sb_opt opts_hold[] = {
	UINT("--ms", ms, 0, UINT32_MAX),
	{ NULL },
};

static const struct sb_opt opts_events[] = {
	FLAG("--follow", follow),
	FLAG("--raw", raw),
	UINT("--count", count, 1, UINT64_MAX),
	{ NULL },
};

struct sb_cmd {
	const char *name;
	int (*run)(struct sb_args *a);
	const struct sb_opt *opts;
	int min_pos, max_pos;
	bool takes_cmd;			/* accepts "-- CMD ARGS..." */
	const char *usage;
	const char *summary;
	const char *help;
};

static const struct sb_cmd *cur_cmd;

static void cmd_usage(FILE *f, const struct sb_cmd *c)
{
	fprintf(f, "Usage: %s %s %s\n", prog, c->name, c->usage);
}

static int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", prog, cur_cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cmd_usage(stderr, cur_cmd);
	fprintf(stderr, "Try '%s %s --help'.\n", prog, cur_cmd->name);
	return SB_EXIT_USAGE;
}

static const struct sb_opt *find_opt(const struct sb_opt *tab, size_t n,
				     const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < n && tab[i].name; i++)
		if (strlen(tab[i].name) == len && !strncmp(tab[i].name, name, len))
			return &tab[i];
	return NULL;
}

static int set_uint(const struct sb_opt *o, struct sb_args *a, const char *v)
{
	struct sb_uint *u = (struct sb_uint *)((char *)a + o->off);
	unsigned long long val;
	char *end;

	if (!v)
		return usage_error("option %s needs a value", o->name);
	errno = 0;
	val = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-')
		return usage_error("bad number '%s'", v);
	if (val < o->min || val > o->max)
		return usage_error("%s %llu out of range %llu..%llu", o->name,
				   val, o->min, o->max);
	u->set = true;
	u->val = val;
	return 0;
}

/*
 * Handle argv[*i], an option. "--opt=VAL" and "--opt VAL" both work.
 * Return 0 or an exit status.
 */
static int parse_opt(const struct sb_cmd *c, struct sb_args *a, int argc,
		     char **argv, int *i)
{
	const char *arg = argv[*i], *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct sb_opt *o;

	o = find_opt(opt_help, ARRAY_SIZE(opt_help), arg, len);
	if (!o)
		o = find_opt(c->opts, SIZE_MAX, arg, len);
	if (!o)
		return usage_error("unknown option '%s'", arg);
	if (o->type == OPT_FLAG) {
		if (eq)
			return usage_error("option '%s' takes no value", arg);
		*(bool *)((char *)a + o->off) = true;
		return 0;
	}
	if (eq)
		return set_uint(o, a, eq + 1);
	if (*i + 1 < argc)
		return set_uint(o, a, argv[++*i]);
	return set_uint(o, a, NULL);
}

/* Fill @a from argv (argv[0] is the subcommand). Return 0 or exit status. */
static int parse_args(const struct sb_cmd *c, struct sb_args *a, int argc,
		      char **argv)
{
	int i, ret;

	a->pos = calloc(argc, sizeof(*a->pos));
	if (!a->pos) {
		sb_err("out of memory");
		return SB_EXIT_RUNTIME;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			a->cmd = &argv[i + 1];
			a->ncmd = argc - i - 1;
			break;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			ret = parse_opt(c, a, argc, argv, &i);
			if (ret)
				return ret;
			continue;
		}
		a->pos[a->npos++] = argv[i];
	}
	if (a->help)
		return 0;
	if (a->cmd && !c->takes_cmd) {
		/* Plain end of options: the rest are positionals. */
		for (i = 0; i < a->ncmd; i++)
			a->pos[a->npos++] = a->cmd[i];
		a->cmd = NULL;
		a->ncmd = 0;
	}
	if (a->cmd && !a->ncmd)
		return usage_error("no command after '--'");
	if (a->npos < c->min_pos)
		return usage_error("missing argument");
	if (a->npos > c->max_pos)
		return usage_error("unexpected argument '%s'",
				   a->pos[c->max_pos]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* list: the debugfs statistics table                                  */

struct sb_stat {
	const char *name;	/* without the quotes */
	const char *line;	/* the raw line, for --raw --active */
	unsigned long long count, wake_count;
	long long active_since, total_time, sleep_time, max_time, last_change;
};

/* Numeric columns of the debugfs file, in file and in display order. */
static const struct sb_field {
	const char *title;	/* in the debugfs header */
	const char *shown;	/* in the pretty table */
	size_t off;
	bool is_u32;		/* else a time in ns, shown in ms */
} stat_fields[] = {
#define F(t, s, f, u)	{ t, s, offsetof(struct sb_stat, f), u }
	F("count",		"count",		count,		true),
	F("wake_count",		"wake_count",		wake_count,	true),
	F("active_since",	"active_since_ms",	active_since,	false),
	F("total_time",		"total_time_ms",	total_time,	false),
	F("sleep_time",		"sleep_time_ms",	sleep_time,	false),
	F("max_time",		"max_time_ms",		max_time,	false),
	F("last_change",	"last_change_ms",	last_change,	false),
#undef F
};

#define NR_STAT_FIELDS	ARRAY_SIZE(stat_fields)

static bool stat_active(const struct sb_stat *s)
{
	return s->active_since > 0;
}

static int parse_field(const struct sb_field *f, const char *txt,
		       struct sb_stat *s)
{
	void *dst = (char *)s + f->off;
	char *end;

	errno = 0;
	if (f->is_u32) {
		unsigned long long v = strtoull(txt, &end, 10);

		if (*txt == '-' || v > UINT32_MAX)
			errno = ERANGE;
		*(unsigned long long *)dst = v;
	} else {
		*(long long *)dst = strtoll(txt, &end, 10);
	}
	return !*txt || *end || errno ? -1 : 0;
}

/*
 * Parse one line in place. The numeric fields are split off from the end,
 * so a (kernel-internal) name containing a tab still parses.
 */
static int parse_stat_line(char *line, struct sb_stat *s, const char *path,
			   unsigned int lineno)
{
	char *field[NR_STAT_FIELDS];
	size_t i, len;
	char *tab;

	for (i = NR_STAT_FIELDS; i > 0; i--) {
		tab = strrchr(line, '\t');
		if (!tab) {
			sb_err("%s:%u: %zu fields, expected %zu", path, lineno,
			       NR_STAT_FIELDS - i + 1, NR_STAT_FIELDS + 1);
			return -1;
		}
		*tab = '\0';
		field[i - 1] = tab + 1;
	}
	for (i = 0; i < NR_STAT_FIELDS; i++) {
		if (parse_field(&stat_fields[i], field[i], s)) {
			sb_err("%s:%u: field '%s': bad number '%s'", path,
			       lineno, stat_fields[i].title, field[i]);
			return -1;
		}
	}
	len = strlen(line);
	if (len < 2 || line[0] != '"' || line[len - 1] != '"') {
		sb_err("%s:%u: field 'name': not a quoted name: %s", path,
		       lineno, line);
		return -1;
	}
	line[len - 1] = '\0';
	s->name = line + 1;
	return 0;
}

/*
 * Split @buf (the whole file) into records. The raw lines are kept in
 * @rawbuf (a copy) for --raw --active. Return the number of records or -1.
 */
static int parse_stats(char *buf, const char *rawbuf, const char *path,
		       struct sb_stat **out)
{
	unsigned int lineno = 1, n = 0, max = 1;
	char *line = buf, *nl;
	struct sb_stat *s;

	for (nl = buf; *nl; nl++)
		max += *nl == '\n';
	s = calloc(max, sizeof(*s));
	if (!s) {
		sb_err("%s: out of memory", path);
		return -1;
	}
	nl = strchr(line, '\n');
	if (!*buf || !nl || (size_t)(nl - line) != strlen(SB_STATS_HEADER) ||
	    strncmp(line, SB_STATS_HEADER, nl - line)) {
		if (nl)
			*nl = '\0';
		sb_err("%s:1: unexpected header '%s', expected '%s'", path,
		       line, SB_STATS_HEADER);
		goto err;
	}
	for (line = nl + 1; *line; line = nl + 1) {
		lineno++;
		nl = strchr(line, '\n');
		if (!nl) {
			sb_err("%s:%u: line not terminated", path, lineno);
			goto err;
		}
		*nl = '\0';
		s[n].line = rawbuf + (line - buf);
		if (parse_stat_line(line, &s[n], path, lineno))
			goto err;
		n++;
	}
	*out = s;
	return n;
err:
	free(s);
	return -1;
}

/* ns -> "ms.uuu" (ms with 3 decimals), integer arithmetic only. */
static void fmt_ms(char *buf, size_t size, long long ns)
{
	unsigned long long a = ns < 0 ? -(unsigned long long)ns
					 : (unsigned long long)ns;

	snprintf(buf, size, "%s%llu.%03llu", ns < 0 ? "-" : "",
		 a / 1000000, a / 1000 % 1000);
}

#define CELL_MAX	32

static void fmt_cell(char *buf, const struct sb_field *f,
		     const struct sb_stat *s)
{
	const void *v = (const char *)s + f->off;

	if (f->is_u32)
		snprintf(buf, CELL_MAX, "%llu", *(const unsigned long long *)v);
	else
		fmt_ms(buf, CELL_MAX, *(const long long *)v);
}

static bool list_wanted(const struct sb_args *a, const struct sb_stat *s)
{
	return !a->active || stat_active(s);
}

static void print_row(const char *mark, const char *name, int name_w,
		      char cells[][CELL_MAX], const int *w)
{
	size_t c;

	printf("%s %-*s", mark, name_w, name);
	for (c = 0; c < NR_STAT_FIELDS; c++)
		printf("  %*s", w[c], cells[c]);
	putchar('\n');
}

/* Print the aligned table: "*" marks active blockers. */
static void print_stats(const struct sb_args *a, const struct sb_stat *s,
			int n)
{
	char (*cells)[NR_STAT_FIELDS][CELL_MAX] = calloc(n + 1, sizeof(*cells));
	char title[NR_STAT_FIELDS][CELL_MAX];
	int w[NR_STAT_FIELDS], name_w = 4, i;
	size_t c;

	if (!cells) {
		sb_err("out of memory");
		return;
	}
	for (c = 0; c < NR_STAT_FIELDS; c++) {
		snprintf(title[c], CELL_MAX, "%s", stat_fields[c].shown);
		w[c] = strlen(title[c]);
	}
	for (i = 0; i < n; i++) {
		if (!list_wanted(a, &s[i]))
			continue;
		if ((int)strlen(s[i].name) > name_w)
			name_w = strlen(s[i].name);
		for (c = 0; c < NR_STAT_FIELDS; c++) {
			fmt_cell(cells[i][c], &stat_fields[c], &s[i]);
			if ((int)strlen(cells[i][c]) > w[c])
				w[c] = strlen(cells[i][c]);
		}
	}
	print_row(" ", "name", name_w, title, w);
	for (i = 0; i < n; i++)
		if (list_wanted(a, &s[i]))
			print_row(stat_active(&s[i]) ? "*" : " ", s[i].name,
				  name_w, cells[i], w);
	free(cells);
}

static void print_raw_active(const struct sb_stat *s, int n)
{
	int i;

	printf("%s\n", SB_STATS_HEADER);
	for (i = 0; i < n; i++)
		if (stat_active(&s[i]))
			printf("%.*s\n", (int)strcspn(s[i].line, "\n"),
			       s[i].line);
}

static int cmd_list(struct sb_args *a)
{
	char path[PATH_MAX], *buf, *raw = NULL;
	struct sb_stat *s = NULL;
	int n, ret = SB_EXIT_RUNTIME;
	size_t len;

	debugfs_path(path, sizeof(path), SUSPEND_BLOCK_STATS_FILE);
	buf = read_file(path, &len, true);
	if (!buf)
		return SB_EXIT_RUNTIME;
	if (a->raw && !a->active) {
		fwrite(buf, 1, len, stdout);
		free(buf);
		return SB_EXIT_OK;
	}
	raw = strdup(buf);
	if (!raw) {
		sb_err("out of memory");
		goto out;
	}
	n = parse_stats(buf, raw, path, &s);
	if (n < 0)
		goto out;
	if (a->raw)
		print_raw_active(s, n);
	else
		print_stats(a, s, n);
	ret = SB_EXIT_OK;
out:
	free(s);
	free(raw);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------------ */
/* policy and state                                                    */

static const char *const policies[] = { "forced", "opportunistic" };

/* "[forced] opportunistic" -> "forced" */
static int current_policy(char *buf, size_t size)
{
	char attr[SB_SYSFS_MAX], *open, *close;

	if (read_attr("policy", attr, sizeof(attr)))
		return -1;
	open = strchr(attr, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close) {
		sb_err("policy: no current policy in brackets in '%s'", attr);
		return -1;
	}
	snprintf(buf, size, "%.*s", (int)(close - open - 1), open + 1);
	return 0;
}

static int cmd_policy(struct sb_args *a)
{
	char cur[SB_SYSFS_MAX];
	size_t i;

	if (!a->npos) {
		if (current_policy(cur, sizeof(cur)))
			return SB_EXIT_RUNTIME;
		printf("%s\n", cur);
		return SB_EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(policies); i++)
		if (!strcmp(a->pos[0], policies[i]))
			return write_attr("policy", policies[i]) ?
				SB_EXIT_RUNTIME : SB_EXIT_OK;
	return usage_error("unknown policy '%s' (forced or opportunistic)",
			   a->pos[0]);
}

static int cmd_state(struct sb_args *a)
{
	char valid[SB_SYSFS_MAX], req[SB_SYSFS_MAX];

	if (read_attr("state", valid, sizeof(valid)))
		return SB_EXIT_RUNTIME;
	if (!a->npos) {
		if (read_attr("requested", req, sizeof(req)))
			return SB_EXIT_RUNTIME;
		printf("requested: %s\nvalid: %s\n", req, valid);
		return SB_EXIT_OK;
	}
	if (!word_in_list(valid, a->pos[0])) {
		sb_err("state: '%s' is not valid under the current policy "
		       "(valid: %s)", a->pos[0], valid);
		return SB_EXIT_RUNTIME;
	}
	return write_attr("state", a->pos[0]) ? SB_EXIT_RUNTIME : SB_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* hold: a blocker from /dev/suspend_blocker                           */

/* What an ioctl errno means here (the uapi header's list). */
static const struct {
	int err;
	const char *why;
} ioctl_hints[] = {
	{ ENAMETOOLONG,	"name longer than NAME_MAX" },
	{ EINVAL,	"empty name, or a byte that is not printable ASCII, "
			"or '\"' or '\\'" },
	{ EPERM,	"blocking needs CAP_BLOCK_SUSPEND" },
	{ EBUSY,	"blocker already initialised on this descriptor" },
	{ ENOENT,	"blocker not initialised" },
	{ ENOTTY,	"not a suspend_blocker device" },
};

static const char *ioctl_hint(int err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ioctl_hints); i++)
		if (ioctl_hints[i].err == err)
			return ioctl_hints[i].why;
	return strerror(err);
}

static int sb_ioctl(int fd, unsigned long req, const void *arg,
		    const char *what, const char *name)
{
	if (ioctl(fd, req, arg) == 0)
		return 0;
	sb_err("hold: %s \"%s\": %s (%s)", what, name, strerror(errno),
	       ioctl_hint(errno));
	return -1;
}

/* Open the device and create blocker @name; return the fd or -1. */
static int blocker_create(const char *name)
{
	size_t len = strlen(name);
	int fd;

	fd = open(SB_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		sb_err("open %s: %s%s", SB_DEVICE, strerror(errno),
		       open_hint(errno, false));
		return -1;
	}
	if (sb_ioctl(fd, SUSPEND_BLOCKER_IOCTL_INIT(len), name, "init", name)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Until --ms elapsed or SIGINT/SIGTERM. */
static int hold_for_ms(struct sb_args *a)
{
	int64_t end = now_ns() + (int64_t)a->ms.val * 1000000, left;
	struct timespec t;

	while (!sb_quit_sig && (left = end - now_ns()) > 0) {
		t.tv_sec = left / 1000000000;
		t.tv_nsec = left % 1000000000;
		if (sb_wait(NULL, 0, &t) < 0 && errno != EINTR) {
			sb_err("ppoll: %s", strerror(errno));
			return SB_EXIT_RUNTIME;
		}
	}
	return SB_EXIT_OK;
}

/* Until EOF on stdin or SIGINT/SIGTERM; input is read and discarded. */
static int hold_until_eof(struct sb_args *a)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char junk[256];
	ssize_t r;

	if (isatty(STDIN_FILENO))
		fprintf(stderr, "%s: holding \"%s\": Ctrl-D or Ctrl-C releases it\n",
			prog, a->pos[0]);
	while (!sb_quit_sig) {
		if (sb_wait(&p, 1, NULL) < 0) {
			if (errno == EINTR)
				continue;
			sb_err("ppoll: %s", strerror(errno));
			return SB_EXIT_RUNTIME;
		}
		if (p.revents & POLLNVAL)
			break;		/* no stdin at all: same as EOF */
		r = read(STDIN_FILENO, junk, sizeof(junk));
		if (r == 0)
			break;
		if (r < 0 && errno != EINTR && errno != EAGAIN) {
			sb_err("read stdin: %s", strerror(errno));
			return SB_EXIT_RUNTIME;
		}
	}
	return SB_EXIT_OK;
}

static void exec_child(char **cmd)
{
	signals_restore();
	execvp(cmd[0], cmd);
	sb_err("hold: exec %s: %s", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? SB_EXIT_NOENT : SB_EXIT_NOEXEC);
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* Run CMD while holding; forward SIGINT/SIGTERM sent to us by kill(2). */
static int hold_while_cmd(struct sb_args *a)
{
	sig_atomic_t forwarded = 0;
	pid_t pid, r;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		sb_err("hold: fork: %s", strerror(errno));
		return SB_EXIT_RUNTIME;
	}
	if (!pid)
		exec_child(a->cmd);
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return exit_status(status);
		if (r < 0 && errno != EINTR) {
			sb_err("hold: waitpid: %s", strerror(errno));
			return SB_EXIT_RUNTIME;
		}
		if (sb_forward_count != forwarded) {
			forwarded = sb_forward_count;
			kill(pid, sb_quit_sig);
		}
		if (sb_wait(NULL, 0, NULL) < 0 && errno != EINTR) {
			sb_err("ppoll: %s", strerror(errno));
			return SB_EXIT_RUNTIME;
		}
	}
}

static int cmd_hold(struct sb_args *a)
{
	const char *name = a->pos[0];
	int fd, ret;

	if (a->cmd && a->ms.set)
		return usage_error("--ms and '-- CMD' exclude each other");
	if (strlen(name) > NAME_MAX)
		return usage_error("name longer than NAME_MAX (%d)", NAME_MAX);
	if (signals_setup())
		return SB_EXIT_RUNTIME;
	fd = blocker_create(name);
	if (fd < 0)
		return SB_EXIT_RUNTIME;
	if (sb_ioctl(fd, SUSPEND_BLOCKER_IOCTL_BLOCK, NULL, "block", name)) {
		close(fd);
		return SB_EXIT_RUNTIME;
	}
	if (a->cmd)
		ret = hold_while_cmd(a);
	else if (a->ms.set)
		ret = hold_for_ms(a);
	else
		ret = hold_until_eof(a);
	if (sb_ioctl(fd, SUSPEND_BLOCKER_IOCTL_UNBLOCK, NULL, "unblock", name)
	    && ret == SB_EXIT_OK)
		ret = SB_EXIT_RUNTIME;
	close(fd);	/* destroys the blocker */
	return ret;
}

/* ------------------------------------------------------------------ */
/* events: the debugfs event stream                                    */

#define EV_BUF	8192

struct ev_reader {
	int fd;
	const char *path;
	char buf[EV_BUF];
	size_t len;			/* bytes of an incomplete line */
	unsigned long long printed;
	bool bad;			/* a malformed line was seen */
};

/*
 * "SEQ\tT_NS\tTYPE\tARG[\tID]" -> "SEQ  SECONDS.NANOS  TYPE  ARG[ #ID]"
 * (ID: a block/unblock's blocker object id)
 */
static void print_event(struct ev_reader *r, const struct sb_args *a,
			char *line)
{
	unsigned long long seq;
	char type[16], *arg, *id;
	long long t;
	int n = 0;

	if (a->raw) {
		printf("%s\n", line);
		return;
	}
	if (sscanf(line, "%llu\t%lld\t%15[a-z]\t%n", &seq, &t, type, &n) < 3 ||
	    !n || t < 0) {
		sb_err("%s: malformed event line: %s", r->path, line);
		r->bad = true;
		printf("%s\n", line);
		return;
	}
	arg = line + n;
	id = strchr(arg, '\t');
	if (id)
		*id++ = '\0';
	printf("%10llu %10lld.%09lld  %-7s %s%s%s\n", seq, t / 1000000000,
	       t % 1000000000, type, arg, id ? " #" : "", id ? id : "");
}

/* Print the complete lines in the buffer; false once --count is reached. */
static bool print_lines(struct ev_reader *r, const struct sb_args *a)
{
	char *start = r->buf, *nl;

	while ((nl = memchr(start, '\n', r->len - (start - r->buf)))) {
		if (a->count.set && r->printed >= a->count.val)
			return false;
		*nl = '\0';
		print_event(r, a, start);
		r->printed++;
		start = nl + 1;
	}
	r->len -= start - r->buf;
	memmove(r->buf, start, r->len);
	if (r->len == sizeof(r->buf) - 1) {	/* no newline in a full buffer */
		r->buf[r->len] = '\0';
		sb_err("%s: event line too long: %.40s...", r->path, r->buf);
		r->bad = true;
		r->len = 0;
	}
	return !(a->count.set && r->printed >= a->count.val);
}

/* Read what is there; 1 = more may come, 0 = done, -1 = error. */
static int read_events(struct ev_reader *r, const struct sb_args *a)
{
	ssize_t n;

	for (;;) {
		n = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
		if (n < 0 && errno == EINTR)
			return 1;
		if (n < 0 && errno == EAGAIN)
			return a->follow ? 1 : 0;
		if (n < 0) {
			sb_err("read %s: %s", r->path, strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;	/* a plain file (fixture) ends */
		r->len += n;
		if (!print_lines(r, a))
			return 0;
	}
}

static int cmd_events(struct sb_args *a)
{
	char path[PATH_MAX];
	struct ev_reader *r;
	struct pollfd p;
	int ret = 1;

	debugfs_path(path, sizeof(path), SUSPEND_BLOCK_EVENTS_FILE);
	if (signals_setup())
		return SB_EXIT_RUNTIME;
	r = calloc(1, sizeof(*r));
	if (!r) {
		sb_err("out of memory");
		return SB_EXIT_RUNTIME;
	}
	r->path = path;
	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		sb_err("open %s: %s%s", path, strerror(errno),
		       open_hint(errno, true));
		free(r);
		return SB_EXIT_RUNTIME;
	}
	if (!a->raw)
		printf("%10s %20s  %-7s %s\n", "seq", "time_s", "type", "arg");
	p.fd = r->fd;
	p.events = POLLIN;
	while (ret > 0 && !sb_quit_sig) {
		ret = read_events(r, a);
		fflush(stdout);
		if (ret > 0 && sb_wait(&p, 1, NULL) < 0 && errno != EINTR) {
			sb_err("ppoll: %s", strerror(errno));
			ret = -1;
		}
	}
	close(r->fd);
	ret = ret < 0 || r->bad ? SB_EXIT_RUNTIME : SB_EXIT_OK;
	free(r);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Subcommand table and main                                           */

static const struct sb_cmd commands[] = {
	{
		"list", cmd_list, opts_list, 0, 0, false,
		"[--active] [--raw]",
		"show the suspend blocker statistics table",
		"Print debugfs " SUSPEND_BLOCK_STATS_FILE " as an aligned table,\n"
		"times in milliseconds; '*' marks active blockers.\n"
		"  --active   only active blockers\n"
		"  --raw      the file as is (with --active: header + active lines)\n",
	},
	{
		"policy", cmd_policy, opts_none, 0, 1, false,
		"[forced|opportunistic]",
		"show or set the suspend policy",
		"Without argument print the current policy; with one, set it.\n",
	},
	{
		"state", cmd_state, opts_none, 0, 1, false,
		"[STATE]",
		"show the requested and valid states, or request a state",
		"Without argument print 'requested: STATE' and 'valid: STATES'.\n"
		"With STATE (one of the valid ones) write it to the state file:\n"
		"under 'opportunistic' this is a request that returns at once\n"
		"('on' holds the \"main\" blocker); under 'forced' it suspends\n"
		"now and returns after resume.\n",
	},
	{
		"hold", cmd_hold, opts_hold, 1, 1, true,
		"NAME [--ms N] [-- CMD [ARGS...]]",
		"hold a suspend blocker while waiting or running a command",
		"Create blocker NAME, block suspend, then\n"
		"  --ms N        wait N milliseconds,\n"
		"  -- CMD ARGS   run CMD and exit with its status, or\n"
		"  (neither)     wait for EOF on standard input;\n"
		"SIGINT or SIGTERM ends the wait early (and is passed on to CMD\n"
		"when sent with kill). Then unblock and destroy the blocker.\n"
		"Blocking needs CAP_BLOCK_SUSPEND.\n",
	},
	{
		"events", cmd_events, opts_events, 0, 0, false,
		"[--follow] [--count N] [--raw]",
		"print the suspend blocker event stream",
		"Print the retained events of debugfs " SUSPEND_BLOCK_EVENTS_FILE
		",\none a line: sequence number, CLOCK_BOOTTIME seconds, type, "
		"argument.\n"
		"  --follow   keep waiting for new events (until SIGINT/SIGTERM)\n"
		"  --count N  stop after N events\n"
		"  --raw      the lines as the kernel gives them\n",
	},
};

static void main_usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: %s COMMAND [ARGS...]\n"
		"       %s COMMAND --help\n"
		"Inspect and control suspend blockers of suspend_block.ko.\n\n"
		"Commands:\n", prog, prog);
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nExit status: 0 ok, 1 runtime error, 2 usage error;\n"
		"'hold NAME -- CMD' exits with the status of CMD.\n"
		"For testing, SBCTL_SYSFS and SBCTL_DEBUGFS replace the\n"
		"directories %s and %s.\n",
		SUSPEND_BLOCK_SYSFS_DIR, SB_DEBUGFS_DEFAULT);
}

static const struct sb_cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct sb_args a = { 0 };
	int ret;

	if (argc < 2) {
		main_usage(stderr);
		return SB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		main_usage(stdout);
		return SB_EXIT_OK;
	}
	cur_cmd = find_cmd(argv[1]);
	if (!cur_cmd) {
		sb_err("unknown command '%s'; try '%s --help'", argv[1], prog);
		return SB_EXIT_USAGE;
	}
	ret = parse_args(cur_cmd, &a, argc - 1, argv + 1);
	if (!ret && a.help) {
		cmd_usage(stdout, cur_cmd);
		fputs(cur_cmd->help, stdout);
	} else if (!ret) {
		ret = cur_cmd->run(&a);
	}
	free(a.pos);
	if (fflush(stdout) && !ret) {
		sb_err("write stdout: %s", strerror(errno));
		ret = SB_EXIT_RUNTIME;
	}
	return ret;
}
