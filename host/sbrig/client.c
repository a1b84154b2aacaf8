// SPDX-License-Identifier: GPL-2.0
/*
 * client.c - talking to sbrigd: one request on the daemon's socket and
 * its answer (host/doc/daemon-protocol.md), the answer's key=value words,
 * and the usage errors every command reports the same way. See cli.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <sbrig/sbrig.h>
#include <sbrig/scenario.h>

#include "cli.h"

/* after Ctrl-C, how long to wait for the daemon's final answer */
#define STOP_WAIT_NS (30 * 1000000000LL)

const char *sock_path;
const char *run_dir;
bool tty;
static volatile sig_atomic_t interrupted;

/* ---- talking to the daemon ---------------------------------------------- */

static void on_sigint(int sig)
{
	if (interrupted < 2)
		interrupted++;
}

/*
 * Why the daemon cannot be reached: on stderr (after the progress line on
 * a terminal if @progress), or in @r->error if quiet.
 */
static void client_error(struct reply *r, bool progress, const char *fmt,
			 ...) __attribute__((format(printf, 3, 4)));
static void client_error(struct reply *r, bool progress, const char *fmt,
			 ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (r->quiet) {
		vsnprintf(r->error, sizeof(r->error), fmt, ap);
	} else {
		fprintf(stderr, "%ssbrig: ", progress && tty ? "\n" : "");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

/* the socket @r is sent to */
static const char *reply_sock(const struct reply *r)
{
	return r->sock ? r->sock : sock_path;
}

/*
 * With a timeout the connect does not block: a daemon that is stopped
 * with its listen queue full refuses at once (EAGAIN) instead of hanging.
 */
static int connect_daemon(struct reply *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = reply_sock(r);
	int fd, flags = SOCK_STREAM | SOCK_CLOEXEC;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		client_error(r, false, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (r->timeout_ms)
		flags |= SOCK_NONBLOCK;
	fd = socket(AF_UNIX, flags, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (e == EAGAIN)
			client_error(r, false, "sbrigd at %s does not accept connections "
				     "(its queue is full: is it stopped?)",
				     path);
		else
			client_error(r, false, "cannot reach sbrigd at %s: %s "
				     "(is sbrigd running? see sbrigd(8))",
				     path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (r->timeout_ms)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Send @line (and @body, @nbody bytes) and read the answer until its final
 * line. Return: EXIT_OK, EXIT_FAIL ("err"), or EXIT_DAEMON.
 */
int request(const char *line, const char *body, size_t nbody,
		   struct reply *r)
{
	char buf[65536];
	size_t n = 0;
	bool stop_sent = false;
	int64_t stop_deadline = 0, deadline = 0;
	struct sigaction sa = { .sa_handler = on_sigint }, old_int, old_term;
	int fd, ret = EXIT_DAEMON;

	r->error[0] = '\0';
	if (r->timeout_ms)
		deadline = r->deadline_ns ?: sbrig_now_ns() +
			   r->timeout_ms * 1000000LL;
	fd = connect_daemon(r);
	if (fd < 0)
		return EXIT_DAEMON;
	/* from the moment the request may be sent, Ctrl-C means "stop" */
	sigemptyset(&sa.sa_mask);
	if (!r->no_signals) {
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
	}
	if (send_all(fd, line, strlen(line)) < 0 || send_all(fd, "\n", 1) < 0 ||
	    (nbody && send_all(fd, body, nbody) < 0)) {
		client_error(r, false, "%s: %s", reply_sock(r), strerror(errno));
		goto out;
	}
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		char *nl;
		ssize_t got;
		int64_t left;
		int pr;

		if (interrupted && !stop_sent) {
			/* the daemon closes the capture and answers */
			stop_sent = true;
			stop_deadline = sbrig_now_ns() + STOP_WAIT_NS;
			send_all(fd, "stop\n", 5);
		}
		if (interrupted > 1) {
			fprintf(stderr, "%ssbrig: interrupted again: not waiting "
				"for sbrigd's answer to 'stop'\n",
				tty ? "\n" : "");
			break;
		}
		if (!stop_sent && deadline) {
			left = deadline - sbrig_now_ns();
			if (left <= 0) {
				client_error(r, true, "sbrigd at %s did not answer "
					     "within %d ms", reply_sock(r),
					     r->timeout_ms);
				break;
			}
			pr = poll(&pfd, 1, (int)(left / 1000000 + 1));
			if (pr == 0)
				continue;
		} else {
			left = stop_deadline - sbrig_now_ns();
			pr = poll(&pfd, 1, !stop_sent ? -1 : left <= 0 ? 0 :
				  (int)(left / 1000000 + 1));
		}
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pr == 0 || (stop_sent && sbrig_now_ns() >= stop_deadline)) {
			fprintf(stderr, "%ssbrig: sbrigd did not answer 'stop' "
				"within %d s\n", tty ? "\n" : "",
				(int)(STOP_WAIT_NS / 1000000000));
			break;
		}
		got = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			client_error(r, true, "sbrigd at %s closed the connection "
				     "before answering", reply_sock(r));
			break;
		}
		n += got;
		while ((nl = memchr(buf, '\n', n))) {
			char *l = buf;

			*nl = '\0';
			if (!strncmp(l, "progress ", 9)) {
				if (r->progress)
					r->progress(l + 9, r->ctx);
			} else if (!strncmp(l, "data ", 5)) {
				if (r->data)
					r->data(l + 5, r->ctx);
				else
					printf("%s\n", l + 5);
			} else if (!strcmp(l, "ok") || !strncmp(l, "ok ", 3)) {
				snprintf(r->final, sizeof(r->final), "%s",
					 l[2] ? l + 3 : "");
				r->err = 0;
				ret = EXIT_OK;
				goto out;
			} else if (!strncmp(l, "err ", 4)) {
				char *msg;

				r->err = (int)strtol(l + 4, &msg, 10);
				snprintf(r->final, sizeof(r->final), "%s",
					 *msg ? msg + 1 : "");
				ret = EXIT_FAIL;
				goto out;
			}
			n -= nl + 1 - buf;
			memmove(buf, nl + 1, n);
		}
		if (n == sizeof(buf) - 1)
			n = 0;	/* an absurdly long line: drop it */
	}
out:
	if (!r->no_signals) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	close(fd);
	return ret;
}

/* Append @arg to @line, quoted if needed. Return -1 if it does not fit. */
int add_arg(char *line, size_t size, const char *arg)
{
	size_t len = strlen(line);
	bool q = !*arg || strpbrk(arg, " \t\"\\");

	if (len && len + 1 < size)
		line[len++] = ' ';
	if (q && len + 1 < size)
		line[len++] = '"';
	for (; *arg && len + 3 < size; arg++) {
		if (*arg == '\n' || *arg == '\r')
			return -1;
		if (*arg == '"' || *arg == '\\')
			line[len++] = '\\';
		line[len++] = *arg;
	}
	if (*arg)
		return -1;
	if (q && len + 1 < size)
		line[len++] = '"';
	line[len] = '\0';
	return len + 1 < size ? 0 : -1;
}

/*
 * The next "key=value" of an answer's text at *@p: a value is a run of
 * characters up to a space, or double-quoted with \" and \\ escapes
 * (daemon-protocol.md). Return false at the end or at text that is not a
 * key=value word.
 */
bool kv_next(const char **p, char *key, size_t ksize, char *val,
		    size_t vsize)
{
	const char *s = *p, *k;
	size_t n = 0;
	bool quoted;

	while (*s == ' ')
		s++;
	for (k = s; *s == '_' || (*s >= 'a' && *s <= 'z') ||
	     (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'); s++)
		;
	if (s == k || *s != '=' || (size_t)(s - k) >= ksize)
		return false;
	snprintf(key, ksize, "%.*s", (int)(s - k), k);
	s++;
	quoted = *s == '"';
	if (quoted)
		s++;
	for (; *s && (quoted ? *s != '"' : *s != ' '); s++) {
		if (quoted && *s == '\\' && s[1])
			s++;
		if (n + 1 < vsize)
			val[n++] = *s;
	}
	if (quoted && *s == '"')
		s++;
	val[n] = '\0';
	*p = s;
	return true;
}

/* Find @key in an "ok key=value ..." text; copy its value. */
bool kv_get(const char *text, const char *key, char *out, size_t size)
{
	char k[64], v[4096];

	while (kv_next(&text, k, sizeof(k), v, sizeof(v))) {
		if (!strcmp(k, key)) {
			snprintf(out, size, "%s", v);
			return true;
		}
	}
	return false;
}

/* Print "key=value ..." as "key: value" lines to @f. */
void print_kv(FILE *f, const char *text)
{
	char k[64], v[4096];

	while (kv_next(&text, k, sizeof(k), v, sizeof(v)))
		fprintf(f, "%s: %s\n", k, v);
	while (*text == ' ')
		text++;
	if (*text)
		fprintf(f, "%s\n", text);
}

void warn_tail_lost(const char *what, const char *final)
{
	char ms[32];

	/* a number, or nothing printed: the daemon's words reach a terminal */
	if (kv_get(final, "tail_lost_ms", ms, sizeof(ms)) && ms[0] &&
	    strspn(ms, "0123456789") == strlen(ms))
		fprintf(stderr, "sbrig: %s: warning: the sensor did not deliver "
			"its last %s ms before the stop: the capture ends "
			"early (meta.ini [end] sensor_tail_lost)\n", what, ms);
}

void print_summary(const char *what, const char *final)
{
	print_kv(stdout, final);
	warn_tail_lost(what, final);
}

/*
 * Report an "err" answer. A request that recorded a capture answers with
 * its summary, whose status says what went wrong: that is the message,
 * and the summary goes to stdout as for a success (scripts find the
 * capture either way).
 */
int fail(struct reply *r, int ret, const char *what)
{
	const char *name = strerrorname_np(r->err);
	char status[4096], dir[PATH_MAX];

	if (ret != EXIT_FAIL)
		return ret;
	if (kv_get(r->final, "status", status, sizeof(status)) &&
	    kv_get(r->final, "dir", dir, sizeof(dir))) {
		fprintf(stderr, "%ssbrig: %s: %s (%s%s%s)\n", tty ? "\n" : "",
			what, status, name ? name : "", name ? ": " : "",
			strerror(r->err));
		print_summary(what, r->final);
		return ret;
	}
	fprintf(stderr, "%ssbrig: %s: %s (%s%s%s)\n", tty ? "\n" : "",
		what, r->final, name ? name : "", name ? ": " : "",
		strerror(r->err));
	return ret;
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sbrig %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'sbrig %s --help'.\n", cmd);
	return EXIT_USAGE;
}

int check_duration(const char *cmd, const char *what, const char *s,
			  int64_t *ns)
{
	int64_t v;

	if (sbrig_parse_duration(s, &v) < 0 || v <= 0)
		return usage_error(cmd, "%s: bad duration '%s' (e.g. 250ms, "
				   "2s)", what, s);
	if (ns)
		*ns = v;
	return 0;
}

/* An absolute path for @dir (which need not exist yet). */
int abs_dir(const char *dir, char *out, size_t size)
{
	char cwd[PATH_MAX];

	if (dir[0] == '/') {
		snprintf(out, size, "%s", dir);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	if ((size_t)snprintf(out, size, "%s/%s", cwd, dir) >= size)
		return -ENAMETOOLONG;
	return 0;
}
