// SPDX-License-Identifier: GPL-2.0
/*
 * server.c - the daemon's Unix socket: clients and their requests.
 *
 * The protocol is text lines (host/doc/daemon-protocol.md): a request is
 * "VERB ARGS...\n" with shell-like double quotes for arguments that contain
 * spaces; the answer is zero or more "data ..." / "progress ..." lines and
 * one final "ok [text]" or "err ERRNO message". A client has at most one
 * request in progress; while it is, the only request handled is "stop"
 * (end its own capture, run or latency measurement; the final
 * answer of the interrupted request follows); other requests wait for
 * their turn. Requests are dispatched
 * through one table; a bad request gets "err" naming the argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sbrig/scenario.h>

#include "sbrigd.h"
#include "internal.h"

#define SRV_MAX_CLIENTS 32
#define SRV_LINE_MAX 8192
#define SRV_MAX_ARGS 16
#define SRV_OUT_MAX (4 << 20)		/* a client this far behind is dropped */
#define SRV_SCENARIO_MAX (1 << 20)

/**
 * struct op_sink - a client connection, as the modules see it
 * @fd: the connection
 * @in: bytes received, not yet a complete line (or a scenario body)
 * @nin: bytes in @in
 * @out: answer bytes not yet written
 * @nout: bytes in @out
 * @busy: a request is in progress (its final answer is still due)
 * @in_input: client_input() runs (it goes on with the next request itself)
 * @body: bytes of a "run" request's scenario still to read
 * @run_dir: the pending "run" request's capture directory
 * @run_origin: its scenario path (for messages and provenance)
 * @run_stats_ns: its stats period
 * @dead: the connection is closed or broken; freed by the loop
 */
struct op_sink {
	int fd;
	char in[SRV_LINE_MAX + 1];
	size_t nin;
	char *out;
	size_t nout, out_size;
	bool busy;
	bool in_input;
	size_t body;
	char *body_buf;
	size_t nbody;
	char run_dir[PATH_MAX];
	char run_origin[PATH_MAX];
	int64_t run_stats_ns;
	bool dead;
};

static struct {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	struct op_sink *clients[SRV_MAX_CLIENTS];
} srv = { .fd = -1 };

static void client_flush(struct op_sink *c);
static void client_input(struct op_sink *c);

/* ---- output ------------------------------------------------------------- */

static void client_put(struct op_sink *c, const char *line)
{
	size_t len = strlen(line);

	if (c->dead)
		return;
	if (c->nout + len + 1 > c->out_size) {
		size_t size = c->out_size ? c->out_size : 4096;
		char *p;

		while (size < c->nout + len + 1)
			size *= 2;
		if (size > SRV_OUT_MAX) {
			sbrig_warn("client %d: too far behind, dropped", c->fd);
			c->dead = true;
			return;
		}
		p = realloc(c->out, size);
		if (!p) {
			c->dead = true;
			return;
		}
		c->out = p;
		c->out_size = size;
	}
	memcpy(c->out + c->nout, line, len);
	c->out[c->nout + len] = '\n';
	c->nout += len + 1;
	client_flush(c);
}

void op_line(struct op_sink *sink, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	if (!sink)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one request line, one answer line: no newlines inside */
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	client_put(sink, line);
}

void op_done(struct op_sink *sink, int err, const char *fmt, ...)
{
	char msg[1800];
	va_list ap;

	if (!sink)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err)
		op_line(sink, "err %d %s", err < 0 ? -err : err, msg);
	else
		op_line(sink, msg[0] ? "ok %s" : "ok", msg);
	sink->busy = false;
	/* requests that arrived meanwhile */
	if (!sink->dead && sink->nin && !sink->in_input)
		client_input(sink);
}

/* ---- request helpers ---------------------------------------------------- */

/* Split @line in place into words; "..." quotes, \ escapes. */
static int split(char *line, char **argv, int max)
{
	int argc = 0;
	char *r = line, *w;

	for (;;) {
		bool quoted = false;

		while (*r == ' ' || *r == '\t')
			r++;
		if (!*r)
			return argc;
		if (argc == max)
			return -E2BIG;
		argv[argc++] = w = r;
		for (; *r; r++) {
			if (*r == '\\' && r[1]) {
				*w++ = *++r;
			} else if (*r == '"') {
				quoted = !quoted;
			} else if (!quoted && (*r == ' ' || *r == '\t')) {
				r++;
				break;
			} else {
				*w++ = *r;
			}
		}
		if (quoted)
			return -EINVAL;
		*w = '\0';
	}
}

/* Parse "name=value" options into @vals, names from @names. */
static int options(struct op_sink *c, int argc, char **argv,
		   const char *const *names, const char **vals, int nnames)
{
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		int j;

		if (!eq) {
			op_done(c, -EINVAL, "unexpected argument '%s'", argv[i]);
			return -EINVAL;
		}
		*eq = '\0';
		for (j = 0; j < nnames; j++)
			if (strcmp(argv[i], names[j]) == 0)
				break;
		if (j == nnames) {
			op_done(c, -EINVAL, "unknown option '%s'", argv[i]);
			return -EINVAL;
		}
		vals[j] = eq + 1;
	}
	return 0;
}

static int duration_arg(struct op_sink *c, const char *name, const char *s,
			int64_t *ns)
{
	if (!s)
		return 0;
	if (sbrig_parse_duration(s, ns) < 0) {
		op_done(c, -EINVAL, "%s: bad duration '%s' (e.g. 250ms, 2s)",
			name, s);
		return -EINVAL;
	}
	return 0;
}

/* ---- requests ----------------------------------------------------------- */

static void req_status(struct op_sink *c, int argc, char **argv)
{
	rig_status(c);
	rec_status(c);
	op_line(c, "data operation: %s", eng_busy() ? "running" : "none");
	op_done(c, 0, "%s", "");
}

static void press_done(int err, int64_t press_ns, void *data)
{
	struct op_sink *c = data;

	if (err)
		op_done(c, err, "release failed: %s", sbrig_errmsg());
	else
		op_done(c, 0, "pressed_ns=%" PRId64 " released_ns=%" PRId64,
			press_ns, sbrig_now_ns());
}

static void req_press(struct op_sink *c, int argc, char **argv)
{
	int64_t dur = 0;
	int ret;

	if (argc < 2 || argc > 3) {
		op_done(c, -EINVAL, "usage: press KEY [DURATION]");
		return;
	}
	if (argc == 3 && duration_arg(c, "DURATION", argv[2], &dur) < 0)
		return;
	if (argc == 3 && dur <= 0) {
		op_done(c, -EINVAL, "DURATION: must be positive");
		return;
	}
	ret = rig_press(argv[1], dur, NULL, press_done, c);
	if (ret < 0)
		op_done(c, ret, "%s", sbrig_errmsg());
}

static void req_plug(struct op_sink *c, int argc, char **argv)
{
	bool in;
	int64_t t;
	int ret;

	if (argc != 2 || (strcmp(argv[1], "in") && strcmp(argv[1], "out"))) {
		op_done(c, -EINVAL, "usage: plug in|out");
		return;
	}
	in = strcmp(argv[1], "in") == 0;
	ret = rig_set_line("charger", in, in ? "plug" : "unplug", &t);
	if (ret < 0)
		op_done(c, ret, "%s", sbrig_errmsg());
	else
		op_done(c, 0, "t_ns=%" PRId64, t);
}

static void capture_end(int err, const char *summary, void *data)
{
	op_done(data, err, "%s", summary);
}

static void req_capture(struct op_sink *c, int argc, char **argv)
{
	static const char *const names[] = { "duration", "stats_every" };
	const char *vals[2] = { NULL, NULL };
	struct rec_opts o = { 0 };
	int ret;

	if (argc < 2 || argv[1][0] != '/') {
		op_done(c, -EINVAL, "DIR: an absolute directory is required");
		return;
	}
	o.dir = argv[1];
	if (options(c, argc - 2, argv + 2, names, vals, 2) < 0 ||
	    duration_arg(c, "duration", vals[0], &o.duration_ns) < 0 ||
	    duration_arg(c, "stats_every", vals[1], &o.stats_every_ns) < 0)
		return;
	ret = rec_start(&o, c, capture_end, c);
	if (ret < 0)
		op_done(c, ret, "%s", sbrig_errmsg());
	else
		op_line(c, "progress started dir=%s", o.dir);
}

/* "run DIR bytes=N origin=PATH [stats_every=D]" + N bytes of scenario */
static void req_run(struct op_sink *c, int argc, char **argv)
{
	static const char *const names[] = { "bytes", "origin", "stats_every" };
	const char *vals[3] = { NULL, NULL, NULL };
	char *end;
	unsigned long n;

	if (argc < 2 || argv[1][0] != '/') {
		op_done(c, -EINVAL, "DIR: an absolute directory is required");
		return;
	}
	if (options(c, argc - 2, argv + 2, names, vals, 3) < 0)
		return;
	if (!vals[0] || !vals[1]) {
		op_done(c, -EINVAL, "bytes= and origin= are required");
		return;
	}
	errno = 0;
	n = strtoul(vals[0], &end, 10);
	if (errno || *end || n == 0 || n > SRV_SCENARIO_MAX) {
		op_done(c, -EINVAL, "bytes: '%s' is not 1..%d", vals[0],
			SRV_SCENARIO_MAX);
		return;
	}
	c->run_stats_ns = 0;
	if (duration_arg(c, "stats_every", vals[2], &c->run_stats_ns) < 0)
		return;
	c->body_buf = malloc(n + 1);
	if (!c->body_buf) {
		op_done(c, -ENOMEM, "no memory for the scenario");
		return;
	}
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", argv[1]);
	snprintf(c->run_origin, sizeof(c->run_origin), "%s", vals[1]);
	c->body = n;
	c->nbody = 0;
}

/* The scenario body of a "run" request is complete. */
static void run_body(struct op_sink *c)
{
	struct sbrig_scenario *sc;
	struct rec_opts o = { 0 };
	int ret;

	c->body_buf[c->nbody] = '\0';
	sc = sbrig_scenario_parse(c->body_buf, c->run_origin);
	free(c->body_buf);
	c->body_buf = NULL;
	if (!sc) {
		op_done(c, errno ? -errno : -EINVAL, "%s", sbrig_errmsg());
		return;
	}
	o.dir = c->run_dir;
	o.stats_every_ns = c->run_stats_ns;
	ret = eng_run(sc, &o, c);	/* takes @sc */
	if (ret < 0)
		op_done(c, ret, "%s", sbrig_errmsg());
}

static void req_latency(struct op_sink *c, int argc, char **argv)
{
	static const char *const names[] = { "n", "key", "press", "until",
					     "timeout" };
	const char *vals[5] = { "10", "power", NULL, "resume", "30s" };
	int64_t press_ns = 0, timeout_ns = 0;
	unsigned long n;
	char *end;
	int ret;

	if (options(c, argc - 1, argv + 1, names, vals, 5) < 0 ||
	    duration_arg(c, "press", vals[2], &press_ns) < 0 ||
	    duration_arg(c, "timeout", vals[4], &timeout_ns) < 0)
		return;
	errno = 0;
	n = strtoul(vals[0], &end, 10);
	if (errno || *end || n == 0 || n > 100000) {
		op_done(c, -EINVAL, "n: '%s' is not 1..100000", vals[0]);
		return;
	}
	if (timeout_ns <= 0) {
		op_done(c, -EINVAL, "timeout: must be positive");
		return;
	}
	ret = eng_latency(n, vals[1], press_ns, vals[3], timeout_ns, c);
	if (ret < 0)
		op_done(c, ret, "%s", sbrig_errmsg());
}

/* "agent TIMEOUT CMD..." : a command for the target agent, until DONE */
static void req_agent(struct op_sink *c, int argc, char **argv)
{
	char cmd[512] = "";
	int64_t timeout_ns;
	size_t len = 0;
	int ret;

	if (argc < 3) {
		op_done(c, -EINVAL, "usage: agent TIMEOUT COMMAND [ARGS...]");
		return;
	}
	if (duration_arg(c, "TIMEOUT", argv[1], &timeout_ns) < 0)
		return;
	for (int i = 2; i < argc; i++) {
		bool q = strchr(argv[i], ' ') != NULL;

		len += snprintf(cmd + len, sizeof(cmd) - len, "%s%s%s%s",
				i > 2 ? " " : "", q ? "\"" : "", argv[i],
				q ? "\"" : "");
		if (len >= sizeof(cmd)) {
			op_done(c, -E2BIG, "command too long");
			return;
		}
	}
	ret = eng_agent(cmd, timeout_ns, c);
	if (ret < 0)
		op_done(c, ret, "%s", sbrig_errmsg());
}

static void req_stop(struct op_sink *c, int argc, char **argv)
{
	/* not the client's own operation (that is handled in client_line) */
	if (eng_busy()) {
		eng_abort("aborted: stopped by a client");
		op_done(c, 0, "stopped the running operation");
	} else if (rec_active()) {
		rec_stop("aborted: stopped by a client");
		op_done(c, 0, "stopped the running capture");
	} else {
		op_done(c, -ENOENT, "nothing is running");
	}
}

static void req_version(struct op_sink *c, int argc, char **argv)
{
	op_done(c, 0, "sbrigd %s", sbrig_version);
}

static const struct {
	const char *verb;
	void (*fn)(struct op_sink *c, int argc, char **argv);
} requests[] = {
	{ "status", req_status },
	{ "press", req_press },
	{ "plug", req_plug },
	{ "capture", req_capture },
	{ "run", req_run },
	{ "latency", req_latency },
	{ "agent", req_agent },
	{ "stop", req_stop },
	{ "version", req_version },
};

static void client_line(struct op_sink *c, char *line)
{
	char *argv[SRV_MAX_ARGS];
	int argc;

	if (c->busy) {
		/*
		 * Stop what this client started; its final answer follows. A
		 * bare capture without a duration normally ends this way
		 * (Ctrl-C): it is complete. A scenario cut short is not.
		 */
		if (eng_busy())
			eng_abort("aborted: stopped by the client");
		else if (rec_active())
			rec_stop("complete");
		return;
	}
	argc = split(line, argv, SRV_MAX_ARGS);
	if (argc == 0)
		return;		/* empty line: ignored */
	c->busy = true;
	if (argc < 0) {
		op_done(c, argc, argc == -E2BIG ? "too many arguments" :
			"unterminated quote");
		return;
	}
	for (size_t i = 0; i < SBRIG_ARRAY_SIZE(requests); i++) {
		if (strcmp(argv[0], requests[i].verb) == 0) {
			requests[i].fn(c, argc, argv);
			return;
		}
	}
	op_done(c, -EINVAL, "unknown request '%.40s'", argv[0]);
}

static void client_input_loop(struct op_sink *c);

/* Handle what @c->in holds: complete lines, or a scenario body. */
static void client_input(struct op_sink *c)
{
	c->in_input = true;
	client_input_loop(c);
	c->in_input = false;
}

static void client_input_loop(struct op_sink *c)
{
	while (!c->dead && c->nin) {
		bool nul;
		char *nl;
		size_t len;

		if (c->body) {
			size_t take = c->nin < c->body ? c->nin : c->body;

			memcpy(c->body_buf + c->nbody, c->in, take);
			c->nbody += take;
			c->body -= take;
			memmove(c->in, c->in + take, c->nin - take);
			c->nin -= take;
			if (!c->body)
				run_body(c);
			continue;
		}
		if (c->busy) {
			/*
			 * While a request runs, "stop" is handled at once; any
			 * other request waits in the buffer for its turn.
			 */
			nl = memchr(c->in, '\n', c->nin);
			if (!nl)
				return;
			len = nl + 1 - c->in;
			if (strncmp(c->in, "stop\n", len) &&
			    strncmp(c->in, "stop\r\n", len))
				return;
			memmove(c->in, nl + 1, c->nin - len);
			c->nin -= len;
			{
				char stop[] = "stop";

				client_line(c, stop);
			}
			continue;
		}
		nl = memchr(c->in, '\n', c->nin);
		if (!nl) {
			if (c->nin >= SRV_LINE_MAX) {
				op_line(c, "err %d request line longer than %d "
					"bytes", E2BIG, SRV_LINE_MAX);
				c->dead = true;
			}
			return;
		}
		nul = memchr(c->in, '\0', nl - c->in) != NULL;
		*nl = '\0';
		len = nl + 1 - c->in;
		if (nl > c->in && nl[-1] == '\r')
			nl[-1] = '\0';
		{
			char line[SRV_LINE_MAX + 1];

			memcpy(line, c->in, len);
			memmove(c->in, nl + 1, c->nin - len);
			c->nin -= len;
			if (nul)
				op_line(c, "err %d bad request: NUL byte", EINVAL);
			else
				client_line(c, line);
		}
	}
}

/* ---- connections -------------------------------------------------------- */

static void client_free(struct op_sink *c)
{
	for (int i = 0; i < SRV_MAX_CLIENTS; i++)
		if (srv.clients[i] == c)
			srv.clients[i] = NULL;
	/* nobody reports to this client any more */
	rig_forget(c);
	rec_sink_gone(c);
	eng_sink_gone(c);
	sched_fd_del(c->fd);
	close(c->fd);
	free(c->out);
	free(c->body_buf);
	free(c);
}

static void client_flush(struct op_sink *c)
{
	while (c->nout && !c->dead) {
		ssize_t n = send(c->fd, c->out, c->nout, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			c->dead = true;
			return;
		}
		memmove(c->out, c->out + n, c->nout - n);
		c->nout -= n;
	}
	/* a full input buffer waits for the request in progress to end */
	if (!c->dead)
		sched_fd_events(c->fd, (c->nin < SRV_LINE_MAX ? POLLIN : 0) |
				(c->nout ? POLLOUT : 0));
}

static void client_io(int fd, short revents, void *data)
{
	struct op_sink *c = data;

	if (revents & POLLOUT)
		client_flush(c);
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = recv(fd, c->in + c->nin, SRV_LINE_MAX - c->nin, 0);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			c->dead = true;
		} else if (n > 0) {
			c->nin += n;
			client_input(c);
		}
		client_flush(c);	/* follow the input buffer's room */
	}
	if (c->dead)
		client_free(c);
}

static void listener_io(int fd, short revents, void *data)
{
	struct op_sink *c;
	int cfd, slot = -1;

	cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	for (int i = 0; i < SRV_MAX_CLIENTS; i++)
		if (!srv.clients[i] && slot < 0)
			slot = i;
	if (slot < 0) {
		static const char busy[] = "err 24 too many clients\n";

		(void)!send(cfd, busy, sizeof(busy) - 1, MSG_NOSIGNAL);
		close(cfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || sched_fd_add(cfd, POLLIN, client_io, c) < 0) {
		free(c);
		close(cfd);
		return;
	}
	c->fd = cfd;
	srv.clients[slot] = c;
}

/* Refuse a live socket; remove a stale one. */
static int check_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, ret;

	if (lstat(sa->sun_path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return sbrig_set_error(-EEXIST, "%s exists and is not a socket",
				       sa->sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sbrig_set_error(-errno, "socket: %s", strerror(errno));
	ret = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (ret == 0)
		return sbrig_set_error(-EADDRINUSE, "another sbrigd is serving "
				       "%s", sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return sbrig_set_error(-errno, "cannot remove stale %s: %s",
				       sa->sun_path, strerror(errno));
	sbrig_info("removed stale socket %s", sa->sun_path);
	return 0;
}

static int make_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return sbrig_set_error(-errno, "mkdir %s: %s", dir,
					       strerror(errno));
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return sbrig_set_error(-errno, "mkdir %s: %s", dir,
				       strerror(errno));
	return 0;
}

/**
 * srv_init() - listen on the Unix socket @path (mode 0660)
 * @path: socket path; its parent directory is created if missing
 *
 * Return: 0, or -errno with sbrig_errmsg() (-EADDRINUSE: another daemon
 * answers on @path).
 */
int srv_init(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return sbrig_set_error(-ENAMETOOLONG, "socket path too long: "
				       "%s", path);
	strcpy(sa.sun_path, path);
	ret = make_parent(path);
	if (ret < 0)
		return ret;
	ret = check_stale(&sa);
	if (ret < 0)
		return ret;
	srv.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv.fd < 0)
		return sbrig_set_error(-errno, "socket: %s", strerror(errno));
	old = umask(0117);
	ret = bind(srv.fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret < 0) {
		ret = sbrig_set_error(-errno, "bind %s: %s", path,
				      strerror(errno));
		goto close_fd;
	}
	if (chmod(path, 0660) < 0 || stat(path, &st) < 0 ||
	    listen(srv.fd, 16) < 0) {
		ret = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		goto unlink_path;
	}
	srv.dev = st.st_dev;
	srv.ino = st.st_ino;
	snprintf(srv.path, sizeof(srv.path), "%s", path);
	ret = sched_fd_add(srv.fd, POLLIN, listener_io, NULL);
	if (ret < 0)
		goto unlink_path;
	sbrig_info("listening on %s", path);
	return 0;

unlink_path:
	unlink(path);
close_fd:
	close(srv.fd);
	srv.fd = -1;
	return ret;
}

void srv_fini(void)
{
	struct stat st;

	for (int i = 0; i < SRV_MAX_CLIENTS; i++) {
		if (!srv.clients[i])
			continue;
		/* say goodbye to whoever still waits for an answer */
		if (srv.clients[i]->busy)
			op_done(srv.clients[i], -ESHUTDOWN, "sbrigd is shutting down");
		client_flush(srv.clients[i]);
		client_free(srv.clients[i]);
	}
	if (srv.fd < 0)
		return;
	sched_fd_del(srv.fd);
	close(srv.fd);
	srv.fd = -1;
	/* remove the socket only if it is still ours */
	if (stat(srv.path, &st) == 0 && st.st_dev == srv.dev &&
	    st.st_ino == srv.ino)
		unlink(srv.path);
}
