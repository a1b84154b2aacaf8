// SPDX-License-Identifier: GPL-2.0
/*
 * sbagent - the target end of the sbrig target link
 *
 * Streams the module's event log (debugfs suspend_blocker_events) to the
 * rig host as checksummed line frames, answers clock pings, and runs the
 * host's commands (stats snapshot, hold/release a blocker, burn CPU, set
 * policy/state, act as the article's input-event handler on the module's
 * /dev/input/sbevent<N> nodes). The protocol
 * is host/doc/link-protocol.md; its codec, host/lib/proto.c, is compiled
 * in (the #include below), so both ends share one implementation.
 *
 * Structure: one poll() loop over the link fd (UART, TCP listener/client
 * or stdin/stdout), the event log, and the input epoll fd; timers are the
 * poll timeout. Events read from the module go into a ring indexed by seq
 * (RING_CAP records); the stream position send_pos walks the ring as the
 * output queue has room, so a slow line back-pressures nothing but the
 * ring, and what the ring no longer holds is announced with GAP. The
 * agent streams only after a host HELLO (which sets send_pos); until one
 * arrives it says HELLO once a second instead of BEAT, so a connected
 * host notices a restart (and a host HELLO lost before the agent opened
 * the line is asked for again).
 *
 * Long-running work (burn, writing a sleep state, which blocks in forced
 * policy) runs in a child process so the loop keeps answering pings.
 *
 * Exit status: 0 on SIGINT/SIGTERM or end of stdin, 1 runtime error,
 * 2 usage error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/input.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/suspend_block_dev.h>

/* the shared codec (host/include/sbrig/proto.h) */
#include "../../host/lib/proto.c"

#define AGENT_VERSION	"0.1.0"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MS		1000000LL
#define RING_CAP	65536
#define OUTQ_MAX	(256 * 1024)
#define INBUF_MAX	(2 * SBRIG_PROTO_FRAME_MAX)
#define BEAT_NS		(1000 * MS)
#define RETRY_OPEN_NS	(1000 * MS)
#define MAX_HOLDS	16
#define MAX_CHILDREN	8
#define REPLY_CACHE	64
#define MAX_INPUTS	32
#define INPUT_BLOCKER	"process-input-events"
#define LINGER_BLOCKER	"sbagent report"
#define LINGER_NS	(300 * MS)

enum link_mode { MODE_STDIO, MODE_SERIAL, MODE_TCP };

struct ev_rec {
	uint64_t seq;
	int64_t t_ns;
	bool valid;
	bool quoted;
	bool cut;
	uint64_t obj;		/* block/unblock: the blocker's id, 0: none */
	char type[12];
	char arg[80];
};

struct hold {
	bool used;
	uint32_t cmd_id;
	int fd;
	int64_t end_ns;
	char name[SBRIG_PROTO_STR_MAX + 1];
};

struct child {
	pid_t pid;
	uint32_t cmd_id;
	const char *what;
};

struct cached_reply {
	uint32_t cmd_id;
	bool used;
	char frame[SBRIG_PROTO_FRAME_MAX + 1];
};

static struct {
	/* options */
	enum link_mode mode;
	const char *dev;
	int tcp_port;
	int baud;
	const char *debugfs;
	const char *sysfs;
	const char *blocker_dev;
	int verbose;
	bool input_at_start;

	/* link */
	int in_fd, out_fd, listen_fd;
	char inbuf[INBUF_MAX];
	size_t in_len;
	bool in_discard;
	char *outq;
	size_t out_len;
	bool synced;		/* a host HELLO set send_pos */
	unsigned int host_rev;	/* the host HELLO's proto: ids from 2 on */
	uint64_t send_pos;
	int64_t next_beat_ns;

	/* identity */
	char boot_id[40];
	char kernel[96];
	char module[32];

	/* event log */
	int ev_fd;
	int64_t ev_retry_ns;
	char evbuf[8192];
	size_t ev_len;
	struct ev_rec *ring;
	uint64_t head;		/* next seq from the module */

	struct hold holds[MAX_HOLDS];
	struct child children[MAX_CHILDREN];
	struct cached_reply replies[REPLY_CACHE];
	unsigned int next_reply;

	/* input handler */
	int epfd;
	int input_fds[MAX_INPUTS];
	unsigned int n_inputs;
	int input_blocker;
	const char *input_kind;		/* "sbevent" or "event" */
	uint64_t input_events;
	uint32_t input_cmd;

	/* keeps the target up briefly after a hold ends (linger_start) */
	int linger_fd;
	int64_t linger_end_ns;	/* 0: not active */
} g = {
	.in_fd = -1, .out_fd = -1, .listen_fd = -1, .ev_fd = -1, .epfd = -1,
	.input_blocker = -1, .linger_fd = -1,
};

static volatile sig_atomic_t quit;

static void on_signal(int sig __attribute__((unused)))
{
	quit = 1;
}

static void __attribute__((format(printf, 1, 2))) vlog(const char *fmt, ...)
{
	va_list ap;

	if (!g.verbose)
		return;
	fprintf(stderr, "sbagent: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_small(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

/* ------------------------------------------------------------- output -- */

/* Queue one frame; false if there is no room (nothing queued). */
static bool send_frame(const struct sbrig_proto_msg *m)
{
	char buf[SBRIG_PROTO_FRAME_MAX + 1];
	int n = sbrig_proto_encode(m, buf, sizeof(buf));

	if (n < 0)
		return false;
	if (g.out_fd < 0)
		return true;		/* nobody listening: dropped */
	if (g.out_len + (size_t)n > OUTQ_MAX)
		return false;
	memcpy(g.outq + g.out_len, buf, (size_t)n);
	g.out_len += (size_t)n;
	return true;
}

static void send_raw(const char *frame)
{
	size_t n = strlen(frame);

	if (g.out_fd >= 0 && g.out_len + n <= OUTQ_MAX) {
		memcpy(g.outq + g.out_len, frame, n);
		g.out_len += n;
	}
}

static void drop_client(void);

static void flush_out(void)
{
	ssize_t n;

	while (g.out_len && g.out_fd >= 0) {
		n = write(g.out_fd, g.outq, g.out_len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			vlog("write: %s", strerror(errno));
			if (g.mode == MODE_TCP)
				drop_client();
			else
				g.out_len = 0;
			return;
		}
		memmove(g.outq, g.outq + n, g.out_len - (size_t)n);
		g.out_len -= (size_t)n;
	}
}

static bool out_room(size_t n)
{
	return g.out_len + n <= OUTQ_MAX / 2;
}

/* Build an R or D frame; store R frames for duplicate commands. */
static void reply(enum sbrig_proto_type type, uint32_t cmd_id, int err,
		  const char *fmt, ...)
{
	struct sbrig_proto_msg m = { .type = type };
	struct cached_reply *c;
	va_list ap;

	m.reply.cmd_id = cmd_id;
	m.reply.err = err < 0 ? -err : err;
	va_start(ap, fmt);
	vsnprintf(m.reply.text, sizeof(m.reply.text), fmt, ap);
	va_end(ap);
	if (type == SBRIG_PROTO_T_R) {
		c = &g.replies[g.next_reply++ % REPLY_CACHE];
		c->used = true;
		c->cmd_id = cmd_id;
		if (sbrig_proto_encode(&m, c->frame, sizeof(c->frame)) < 0)
			c->used = false;
	}
	send_frame(&m);
}

/* ------------------------------------------------------------ identity -- */

static void read_identity(void)
{
	struct utsname u;
	char path[512];

	if (read_small("/proc/sys/kernel/random/boot_id", g.boot_id,
		       sizeof(g.boot_id)) || !g.boot_id[0])
		snprintf(g.boot_id, sizeof(g.boot_id), "unknown");
	if (uname(&u) == 0)
		snprintf(g.kernel, sizeof(g.kernel), "%s", u.release);
	snprintf(path, sizeof(path), "/sys/module/suspend_block/version");
	if (read_small(path, g.module, sizeof(g.module)) || !g.module[0])
		snprintf(g.module, sizeof(g.module), "%s",
			 g.ev_fd >= 0 ? "unknown" : "-");
}

static uint64_t oldest_held(void)
{
	uint64_t lo = g.head > RING_CAP ? g.head - RING_CAP : 0;

	while (lo < g.head && !(g.ring[lo % RING_CAP].valid &&
				g.ring[lo % RING_CAP].seq == lo))
		lo++;
	return lo;
}

static void send_hello(bool answer)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_T_HELLO };

	read_identity();
	m.hello.proto = SBRIG_PROTO_REVISION;
	snprintf(m.hello.boot_id, sizeof(m.hello.boot_id), "%s", g.boot_id);
	snprintf(m.hello.agent, sizeof(m.hello.agent), "%s", AGENT_VERSION);
	snprintf(m.hello.kernel, sizeof(m.hello.kernel), "%s", g.kernel);
	snprintf(m.hello.module, sizeof(m.hello.module), "%s", g.module);
	m.hello.oldest_seq = oldest_held();
	m.hello.next_seq = g.head;
	m.hello.answer = answer;
	send_frame(&m);
}

/* ----------------------------------------------------------- event log -- */

static void ev_open(int64_t now)
{
	char path[512];

	if (g.ev_fd >= 0 || now < g.ev_retry_ns)
		return;
	g.ev_retry_ns = now + RETRY_OPEN_NS;
	snprintf(path, sizeof(path), "%s/%s", g.debugfs,
		 SUSPEND_BLOCK_EVENTS_FILE);
	g.ev_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (g.ev_fd >= 0) {
		vlog("event log %s open", path);
		g.ev_len = 0;
	}
}

static void ev_line(char *line)
{
	char *f[5], *save = NULL, *arg, *q;
	struct ev_rec *r;
	unsigned long long seq, n;
	int i;

	for (i = 0; i < 4; i++) {
		f[i] = strtok_r(i ? NULL : line, "\t", &save);
		if (!f[i])
			return;
	}
	/* block/unblock: the object id (a module from before it: none) */
	f[4] = strtok_r(NULL, "\t", &save);
	arg = f[3];
	seq = strtoull(f[0], NULL, 10);
	if (!strcmp(f[2], "lost")) {
		n = strtoull(arg, NULL, 10);
		if (seq + n > g.head)
			g.head = seq + n;
		return;
	}
	if (seq < g.head && g.ring[seq % RING_CAP].valid &&
	    g.ring[seq % RING_CAP].seq == seq)
		return;			/* already have it */
	r = &g.ring[seq % RING_CAP];
	memset(r, 0, sizeof(*r));
	r->seq = seq;
	r->t_ns = strtoll(f[1], NULL, 10);
	snprintf(r->type, sizeof(r->type), "%s", f[2]);
	if (arg[0] == '"') {
		q = strrchr(arg + 1, '"');
		r->quoted = true;
		if (q) {
			r->cut = q[1] == '+';
			*q = '\0';
		}
		snprintf(r->arg, sizeof(r->arg), "%s", arg + 1);
		if (f[4])
			r->obj = strtoull(f[4], NULL, 10);
	} else {
		snprintf(r->arg, sizeof(r->arg), "%s", arg);
	}
	r->valid = true;
	if (seq + 1 > g.head)
		g.head = seq + 1;
}

static void ev_read(void)
{
	ssize_t n;
	char *nl, *p;

	for (;;) {
		n = read(g.ev_fd, g.evbuf + g.ev_len,
			 sizeof(g.evbuf) - 1 - g.ev_len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			vlog("event log: %s", n ? strerror(errno) : "end");
			close(g.ev_fd);
			g.ev_fd = -1;
			return;
		}
		g.ev_len += (size_t)n;
		g.evbuf[g.ev_len] = '\0';
		p = g.evbuf;
		while ((nl = strchr(p, '\n'))) {
			*nl = '\0';
			ev_line(p);
			p = nl + 1;
		}
		g.ev_len -= (size_t)(p - g.evbuf);
		memmove(g.evbuf, p, g.ev_len);
		if (g.ev_len == sizeof(g.evbuf) - 1)
			g.ev_len = 0;
	}
}

/* Send from send_pos while the output queue has room. */
static void stream(void)
{
	struct sbrig_proto_msg m;
	struct ev_rec *r;
	uint64_t j;

	while (g.synced && g.send_pos < g.head && out_room(SBRIG_PROTO_FRAME_MAX)) {
		r = &g.ring[g.send_pos % RING_CAP];
		memset(&m, 0, sizeof(m));
		if (r->valid && r->seq == g.send_pos) {
			m.type = SBRIG_PROTO_T_EV;
			m.ev.seq = r->seq;
			m.ev.t_ns = r->t_ns;
			snprintf(m.ev.type, sizeof(m.ev.type), "%s", r->type);
			snprintf(m.ev.arg, sizeof(m.ev.arg), "%s", r->arg);
			m.ev.quoted = r->quoted;
			m.ev.cut = r->cut;
			/* only a host that announced revision 2 reads it */
			if (g.host_rev >= 2)
				m.ev.obj = r->obj;
			if (!send_frame(&m))
				return;
			g.send_pos++;
			continue;
		}
		j = g.send_pos;
		while (j < g.head && !(g.ring[j % RING_CAP].valid &&
				       g.ring[j % RING_CAP].seq == j))
			j++;
		m.type = SBRIG_PROTO_T_GAP;
		m.gap.from_seq = g.send_pos;
		m.gap.to_seq = j - 1;
		if (!send_frame(&m))
			return;
		g.send_pos = j;
	}
}

/* ------------------------------------------------------------ commands -- */

static int blocker_open(const char *name)
{
	size_t len = strlen(name);
	int fd = open(g.blocker_dev, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, SUSPEND_BLOCKER_IOCTL_INIT(len), name) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/*
 * Before a hold's blocker goes (and before process-input-events is
 * released), activate our own for LINGER_NS: in the opportunistic policy
 * the release may let the target suspend at once, before we have read
 * its unblock record and sent it, and the host would only learn of it
 * after the next wakeup. Our own release is that late
 * instead (nobody waits for it). Best effort: without it the hold still
 * ends.
 */
static void linger_start(void)
{
	if (g.linger_fd < 0)
		g.linger_fd = blocker_open(LINGER_BLOCKER);
	if (g.linger_fd < 0 || ioctl(g.linger_fd, SUSPEND_BLOCKER_IOCTL_BLOCK) < 0)
		return;
	g.linger_end_ns = now_ns(CLOCK_MONOTONIC) + LINGER_NS;
}

static void hold_end(struct hold *h, bool released)
{
	linger_start();
	close(h->fd);
	h->used = false;
	reply(SBRIG_PROTO_T_D, h->cmd_id, 0, "%s %s",
	      released ? "released" : "expired", h->name);
}

static void cmd_hold(uint32_t id, const char *args)
{
	char name[SBRIG_PROTO_STR_MAX + 1], ms_s[24], *e;
	struct hold *h = NULL;
	unsigned long ms;
	unsigned int i;
	int fd;

	if (sbrig_proto_token(&args, name, sizeof(name)) != 1 || !name[0] ||
	    sbrig_proto_token(&args, ms_s, sizeof(ms_s)) != 1)
		return reply(SBRIG_PROTO_T_R, id, EINVAL, "usage: hold NAME MS");
	ms = strtoul(ms_s, &e, 10);
	if (*e)
		return reply(SBRIG_PROTO_T_R, id, EINVAL, "bad ms '%s'", ms_s);
	for (i = 0; i < MAX_HOLDS; i++)
		if (!g.holds[i].used) {
			h = &g.holds[i];
			break;
		}
	if (!h)
		return reply(SBRIG_PROTO_T_R, id, EBUSY, "too many holds");
	fd = blocker_open(name);
	if (fd < 0)
		return reply(SBRIG_PROTO_T_R, id, -fd, "%s: %s", g.blocker_dev,
			     strerror(-fd));
	if (ioctl(fd, SUSPEND_BLOCKER_IOCTL_BLOCK) < 0) {
		int err = errno;

		close(fd);
		return reply(SBRIG_PROTO_T_R, id, err, "block: %s", strerror(err));
	}
	h->used = true;
	h->cmd_id = id;
	h->fd = fd;
	h->end_ns = now_ns(CLOCK_MONOTONIC) + (int64_t)ms * MS;
	snprintf(h->name, sizeof(h->name), "%s", name);
	reply(SBRIG_PROTO_T_R, id, 0, "holding %s %lu ms", name, ms);
}

static void cmd_release(uint32_t id, const char *args)
{
	char name[SBRIG_PROTO_STR_MAX + 1];
	unsigned int i, n = 0;

	if (sbrig_proto_token(&args, name, sizeof(name)) != 1)
		return reply(SBRIG_PROTO_T_R, id, EINVAL, "usage: release NAME");
	for (i = 0; i < MAX_HOLDS; i++)
		if (g.holds[i].used && !strcmp(g.holds[i].name, name)) {
			hold_end(&g.holds[i], true);
			n++;
		}
	if (!n)
		return reply(SBRIG_PROTO_T_R, id, ENOENT, "not held: %s", name);
	reply(SBRIG_PROTO_T_R, id, 0, "released %u", n);
}

static struct child *child_slot(void)
{
	unsigned int i;

	for (i = 0; i < MAX_CHILDREN; i++)
		if (!g.children[i].pid)
			return &g.children[i];
	return NULL;
}

static void cmd_burn(uint32_t id, const char *args)
{
	char ms_s[24], *e;
	unsigned long ms;
	struct child *c = child_slot();
	int64_t end;
	pid_t pid;

	if (sbrig_proto_token(&args, ms_s, sizeof(ms_s)) != 1)
		return reply(SBRIG_PROTO_T_R, id, EINVAL, "usage: burn MS");
	ms = strtoul(ms_s, &e, 10);
	if (*e)
		return reply(SBRIG_PROTO_T_R, id, EINVAL, "bad ms '%s'", ms_s);
	if (!c)
		return reply(SBRIG_PROTO_T_R, id, EBUSY, "too many children");
	end = now_ns(CLOCK_MONOTONIC) + (int64_t)ms * MS;
	pid = fork();
	if (pid < 0)
		return reply(SBRIG_PROTO_T_R, id, errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		volatile uint64_t x = 0;

		while (now_ns(CLOCK_MONOTONIC) < end)
			for (int i = 0; i < 10000; i++)
				x += (uint64_t)i;
		_exit(0);
	}
	c->pid = pid;
	c->cmd_id = id;
	c->what = "burn";
	reply(SBRIG_PROTO_T_R, id, 0, "burning %lu ms", ms);
}

static void cmd_policy(uint32_t id, const char *args)
{
	char val[32], path[512];
	int ret;

	if (sbrig_proto_token(&args, val, sizeof(val)) != 1 ||
	    (strcmp(val, "forced") && strcmp(val, "opportunistic")))
		return reply(SBRIG_PROTO_T_R, id, EINVAL,
			     "usage: policy forced|opportunistic");
	snprintf(path, sizeof(path), "%s/policy", g.sysfs);
	ret = write_small(path, val);
	reply(SBRIG_PROTO_T_R, id, ret, ret ? "%s: %s" : "policy %s",
	      ret ? path : val, strerror(-ret));
}

/*
 * Send what is queued and wait (at most 200 ms) until the line or socket
 * has sent it: before a write that may put the target to sleep, which
 * freezes this process with the REPLY still queued (the rig would wait
 * for it until the next wake).
 */
static void drain_out(void)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + 200 * MS;
	int queued;

	for (;;) {
		flush_out();
		if (!g.out_len && (g.out_fd < 0 ||
				   ioctl(g.out_fd, TIOCOUTQ, &queued) < 0 ||
				   queued <= 0))
			return;
		if (now_ns(CLOCK_MONOTONIC) >= end)
			return;
		usleep(1000);
	}
}

/*
 * Writing a state may block until resume (forced policy): in a child. A
 * sleep state's REPLY goes out before the child writes it (drain_out());
 * the write's result comes with the DONE.
 */
static void cmd_state(uint32_t id, const char *args)
{
	static const char *const states[] = { "on", "mem", "standby", "freeze" };
	char val[32], path[512];
	struct child *c = child_slot();
	unsigned int i;
	pid_t pid;

	if (sbrig_proto_token(&args, val, sizeof(val)) != 1)
		val[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(states); i++)
		if (!strcmp(val, states[i]))
			break;
	if (i == ARRAY_SIZE(states))
		return reply(SBRIG_PROTO_T_R, id, EINVAL,
			     "usage: state on|mem|standby|freeze");
	if (!c)
		return reply(SBRIG_PROTO_T_R, id, EBUSY, "too many children");
	snprintf(path, sizeof(path), "%s/state", g.sysfs);
	if (i == 0) {			/* on: it only wakes */
		pid = fork();
		if (pid < 0)
			return reply(SBRIG_PROTO_T_R, id, errno, "fork: %s",
				     strerror(errno));
		if (pid == 0)
			_exit(-write_small(path, val) & 0xff);
		reply(SBRIG_PROTO_T_R, id, 0, "writing state %s", val);
	} else {
		reply(SBRIG_PROTO_T_R, id, 0, "writing state %s", val);
		drain_out();
		pid = fork();
		if (pid < 0)
			return reply(SBRIG_PROTO_T_D, id, errno, "state %s: fork: %s",
				     val, strerror(errno));
		if (pid == 0)
			_exit(-write_small(path, val) & 0xff);
	}
	c->pid = pid;
	c->cmd_id = id;
	c->what = "state";
}

static void input_close(void)
{
	unsigned int i;

	for (i = 0; i < g.n_inputs; i++)
		close(g.input_fds[i]);
	g.n_inputs = 0;
	if (g.epfd >= 0)
		close(g.epfd);
	g.epfd = -1;
	if (g.input_blocker >= 0)
		close(g.input_blocker);
	g.input_blocker = -1;
}

/*
 * Open every /dev/input/<prefix>* node and add it to the epoll set.
 * sbevent nodes (suspend_block's evdev-like handler) are opted in to
 * their queue blocker ("evdev", active while events are queued); plain
 * event nodes instead get EPOLLWAKEUP, whose wakeup source keeps the
 * system up from the event until the next epoll_wait().
 */
static unsigned int input_open_nodes(const char *prefix, bool sbevent)
{
	struct epoll_event ee = { .events = EPOLLIN };
	unsigned int n = 0;
	char path[300];
	struct dirent *de;
	DIR *d = opendir("/dev/input");
	int fd;

	if (!d)
		return 0;
	if (!sbevent)
		ee.events |= EPOLLWAKEUP;
	while ((de = readdir(d)) && g.n_inputs < MAX_INPUTS) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) ||
		    (!sbevent && !strncmp(de->d_name, SUSPEND_BLOCK_EVDEV_PREFIX,
					  strlen(SUSPEND_BLOCK_EVDEV_PREFIX))))
			continue;
		snprintf(path, sizeof(path), "/dev/input/%s", de->d_name);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (sbevent && ioctl(fd, EVIOCSSUSPENDBLOCK, 1) < 0)
			vlog("%s: EVIOCSSUSPENDBLOCK: %s", path, strerror(errno));
		ee.data.fd = fd;
		if (epoll_ctl(g.epfd, EPOLL_CTL_ADD, fd, &ee) < 0) {
			close(fd);
			continue;
		}
		g.input_fds[g.n_inputs++] = fd;
		n++;
	}
	closedir(d);
	return n;
}

/* Become the input handler (again): 0 or -errno. */
static int input_start(void)
{
	int fd;

	input_close();
	fd = blocker_open(INPUT_BLOCKER);
	if (fd < 0)
		return fd;
	g.input_blocker = fd;
	g.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g.epfd < 0) {
		int err = -errno;

		input_close();
		return err;
	}
	/* the module's nodes, else (no module handler) evdev's */
	g.input_kind = SUSPEND_BLOCK_EVDEV_PREFIX;
	if (!input_open_nodes(SUSPEND_BLOCK_EVDEV_PREFIX, true)) {
		g.input_kind = "event";
		input_open_nodes("event", false);
	}
	vlog("input on, %u devices, %s", g.n_inputs, g.input_kind);
	return 0;
}

static void cmd_input(uint32_t id, const char *args)
{
	char val[8];
	int err;

	if (sbrig_proto_token(&args, val, sizeof(val)) != 1 ||
	    (strcmp(val, "on") && strcmp(val, "off")))
		return reply(SBRIG_PROTO_T_R, id, EINVAL, "usage: input on|off");
	if (!strcmp(val, "off")) {
		input_close();
		return reply(SBRIG_PROTO_T_R, id, 0, "input off, %" PRIu64 " events",
			     g.input_events);
	}
	err = input_start();
	if (err)
		return reply(SBRIG_PROTO_T_R, id, -err, "input: %s", strerror(-err));
	g.input_cmd = id;
	reply(SBRIG_PROTO_T_R, id, 0, "input on, %u devices, %s", g.n_inputs,
	      g.input_kind);
}

/*
 * One batch of input events, as in the seed's walkthrough: poll() has
 * returned; block process-input-events, then read. Reading a queue empty
 * releases its "evdev" blocker (or, on plain event nodes, the next
 * epoll_wait() releases the EPOLLWAKEUP source); process-input-events is
 * released once what was read has been handled.
 */
static void input_batch(void)
{
	struct epoll_event ev[MAX_INPUTS];
	struct input_event ie[32];
	int n, i;
	ssize_t r;

	ioctl(g.input_blocker, SUSPEND_BLOCKER_IOCTL_BLOCK);
	n = epoll_wait(g.epfd, ev, MAX_INPUTS, 0);
	for (i = 0; i < n; i++)
		while ((r = read(ev[i].data.fd, ie, sizeof(ie))) > 0)
			g.input_events += (uint64_t)r / sizeof(ie[0]);
	/* as after a hold: stay up to report the batch's records */
	if (n > 0)
		linger_start();
	ioctl(g.input_blocker, SUSPEND_BLOCKER_IOCTL_UNBLOCK);
}

static void cmd_stats(uint32_t id, const char *args __attribute__((unused)))
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_T_ST };
	char path[512], *buf, *line, *save = NULL, *q;
	unsigned int rows = 0, idx = 0;
	ssize_t n;
	size_t len = 0, cap = 1 << 20;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", g.debugfs,
		 SUSPEND_BLOCK_STATS_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reply(SBRIG_PROTO_T_R, id, errno, "%s: %s", path,
			     strerror(errno));
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return reply(SBRIG_PROTO_T_R, id, ENOMEM, "out of memory");
	}
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	for (q = buf; *q; q++)
		rows += *q == '\n' && q[1] == '"';
	if (!out_room((size_t)(rows + 2) * 400)) {
		free(buf);
		return reply(SBRIG_PROTO_T_R, id, ENOBUFS, "link busy, retry");
	}
	m.st.cmd_id = id;
	m.st.n = rows;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end;

		if (line[0] != '"' || !(end = strchr(line + 1, '"')))
			continue;	/* header */
		*end = '\0';
		snprintf(m.st.name, sizeof(m.st.name), "%s", line + 1);
		if (sscanf(end + 1, "%" SCNu64 "%" SCNu64 "%" SCNd64 "%" SCNd64
			   "%" SCNd64 "%" SCNd64 "%" SCNd64, &m.st.count,
			   &m.st.wake_count, &m.st.active_since,
			   &m.st.total_time, &m.st.sleep_time, &m.st.max_time,
			   &m.st.last_change) != 7)
			continue;
		m.st.idx = idx++;
		send_frame(&m);
	}
	free(buf);
	reply(SBRIG_PROTO_T_R, id, 0, "%u rows", idx);
}

static const struct {
	const char *verb;
	void (*fn)(uint32_t id, const char *args);
	bool rerun;	/* a duplicate runs again instead of replaying R */
} commands[] = {
	{ "stats", cmd_stats, true },
	{ "hold", cmd_hold, false },
	{ "release", cmd_release, false },
	{ "burn", cmd_burn, false },
	{ "policy", cmd_policy, false },
	{ "state", cmd_state, false },
	{ "input", cmd_input, false },
};

static void run_cmd(const struct sbrig_proto_msg *m)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].verb, m->cmd.verb))
			break;
	if (i < ARRAY_SIZE(commands) && !commands[i].rerun) {
		for (unsigned int k = 0; k < REPLY_CACHE; k++)
			if (g.replies[k].used &&
			    g.replies[k].cmd_id == m->cmd.cmd_id) {
				vlog("duplicate command %u", m->cmd.cmd_id);
				send_raw(g.replies[k].frame);
				return;
			}
	}
	if (i == ARRAY_SIZE(commands))
		return reply(SBRIG_PROTO_T_R, m->cmd.cmd_id, EINVAL,
			     "unknown verb '%s'", m->cmd.verb);
	vlog("command %u: %s %s", m->cmd.cmd_id, m->cmd.verb, m->cmd.args);
	commands[i].fn(m->cmd.cmd_id, m->cmd.args);
}

/* -------------------------------------------------------------- input -- */

static void handle_frame(const struct sbrig_proto_msg *m)
{
	struct sbrig_proto_msg r = { 0 };

	switch (m->type) {
	case SBRIG_PROTO_H_HELLO:
		read_identity();
		g.host_rev = m->hhello.proto;
		g.send_pos = !strcmp(m->hhello.boot_id, g.boot_id) ?
			     m->hhello.next_seq : 0;
		if (g.send_pos > g.head)
			g.send_pos = g.head;
		g.synced = true;
		send_hello(true);
		break;
	case SBRIG_PROTO_H_ACK:
		break;		/* the ring overwrites by seq: nothing to free */
	case SBRIG_PROTO_H_RESEND:
		if (g.synced && m->ack.seq < g.send_pos)
			g.send_pos = m->ack.seq;
		break;
	case SBRIG_PROTO_H_PING:
		r.type = SBRIG_PROTO_T_PONG;
		r.pong.token = m->ping.token;
		r.pong.t_boot_ns = now_ns(CLOCK_BOOTTIME);
		send_frame(&r);
		break;
	case SBRIG_PROTO_H_CMD:
		run_cmd(m);
		break;
	default:
		break;
	}
}

static void handle_input(void)
{
	struct sbrig_proto_msg m;
	ssize_t n;
	size_t i, start = 0;

	n = read(g.in_fd, g.inbuf + g.in_len, sizeof(g.inbuf) - g.in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		vlog("link input: %s", n ? strerror(errno) : "end of file");
		if (g.mode == MODE_TCP)
			drop_client();
		else if (g.mode == MODE_STDIO)
			quit = 1;
		return;		/* serial: a hang-up is not fatal */
	}
	g.in_len += (size_t)n;
	for (i = 0; i < g.in_len; i++) {
		if (g.inbuf[i] != '\n')
			continue;
		if (!g.in_discard &&
		    sbrig_proto_decode(g.inbuf + start, i - start, false, &m,
				       NULL) == 1)
			handle_frame(&m);
		g.in_discard = false;
		start = i + 1;
	}
	memmove(g.inbuf, g.inbuf + start, g.in_len - start);
	g.in_len -= start;
	if (g.in_len == sizeof(g.inbuf)) {
		/* oversize line: skip to its end */
		g.in_len = 0;
		g.in_discard = true;
	}
}

/* ---------------------------------------------------------- transport -- */

static void drop_client(void)
{
	if (g.in_fd >= 0)
		close(g.in_fd);
	g.in_fd = g.out_fd = -1;
	g.out_len = g.in_len = 0;
	g.synced = false;
	vlog("client gone");
}

static void accept_client(void)
{
	int fd = accept4(g.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int one = 1;

	if (fd < 0)
		return;
	if (g.in_fd >= 0)
		drop_client();	/* the newest host wins */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	g.in_fd = g.out_fd = fd;
	vlog("client connected");
}

static speed_t baud_const(int baud)
{
	static const struct { int baud; speed_t c; } t[] = {
		{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 },
		{ 57600, B57600 }, { 115200, B115200 }, { 230400, B230400 },
		{ 460800, B460800 }, { 921600, B921600 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		if (t[i].baud == baud)
			return t[i].c;
	return 0;
}

static int open_link(void)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
	struct termios tio;
	int one = 1;

	switch (g.mode) {
	case MODE_STDIO:
		g.in_fd = 0;
		g.out_fd = 1;
		fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
		fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
		return 0;
	case MODE_SERIAL:
		g.in_fd = open(g.dev, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (g.in_fd < 0) {
			fprintf(stderr, "sbagent: %s: %s\n", g.dev, strerror(errno));
			return -1;
		}
		g.out_fd = g.in_fd;
		if (tcgetattr(g.in_fd, &tio) == 0) {
			cfmakeraw(&tio);
			tio.c_cflag |= CLOCAL | CREAD;
			tio.c_cflag &= ~CRTSCTS;
			cfsetspeed(&tio, baud_const(g.baud));
			if (tcsetattr(g.in_fd, TCSANOW, &tio))
				fprintf(stderr, "sbagent: %s: raw mode: %s\n",
					g.dev, strerror(errno));
			tcflush(g.in_fd, TCIFLUSH);
		}
		return 0;
	case MODE_TCP:
		g.listen_fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK |
				     SOCK_CLOEXEC, 0);
		if (g.listen_fd < 0) {
			/* no IPv6 in this kernel: IPv4 only */
			struct sockaddr_in s4 = { .sin_family = AF_INET,
						  .sin_port = htons(g.tcp_port) };

			g.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
					     SOCK_CLOEXEC, 0);
			setsockopt(g.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (g.listen_fd < 0 ||
			    bind(g.listen_fd, (struct sockaddr *)&s4, sizeof(s4)))
				goto err_sock;
		} else {
			setsockopt(g.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			sa.sin6_port = htons(g.tcp_port);
			sa.sin6_addr = in6addr_any;
			if (bind(g.listen_fd, (struct sockaddr *)&sa, sizeof(sa)))
				goto err_sock;
		}
		if (listen(g.listen_fd, 2))
			goto err_sock;
		return 0;
	}
	return -1;
err_sock:
	fprintf(stderr, "sbagent: tcp port %d: %s\n", g.tcp_port, strerror(errno));
	return -1;
}

/* ---------------------------------------------------------------- main -- */

static void timers(int64_t now)
{
	struct sbrig_proto_msg m = { .type = SBRIG_PROTO_T_BEAT };
	unsigned int i;
	int status;
	pid_t pid;

	for (i = 0; i < MAX_HOLDS; i++)
		if (g.holds[i].used && now >= g.holds[i].end_ns)
			hold_end(&g.holds[i], false);
	if (g.linger_end_ns && now >= g.linger_end_ns) {
		ioctl(g.linger_fd, SUSPEND_BLOCKER_IOCTL_UNBLOCK);
		g.linger_end_ns = 0;
	}
	for (i = 0; i < MAX_CHILDREN; i++) {
		struct child *c = &g.children[i];

		if (!c->pid)
			continue;
		pid = waitpid(c->pid, &status, WNOHANG);
		if (pid != c->pid)
			continue;
		c->pid = 0;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
		reply(SBRIG_PROTO_T_D, c->cmd_id, status, "%s %s", c->what,
		      status ? strerror(status) : "done");
	}
	if (now >= g.next_beat_ns) {
		g.next_beat_ns = now + BEAT_NS;
		if (g.synced) {
			m.beat.next_seq = g.send_pos;
			m.beat.t_boot_ns = now_ns(CLOCK_BOOTTIME);
			send_frame(&m);
		} else {
			/* no host HELLO yet (or it was lost): keep saying
			 * HELLO, a connected host answers with its own */
			send_hello(false);
		}
	}
}

static int poll_timeout(int64_t now)
{
	int64_t dl = g.next_beat_ns;
	unsigned int i;

	if (g.ev_fd < 0 && g.ev_retry_ns < dl)
		dl = g.ev_retry_ns;
	for (i = 0; i < MAX_HOLDS; i++)
		if (g.holds[i].used && g.holds[i].end_ns < dl)
			dl = g.holds[i].end_ns;
	if (g.linger_end_ns && g.linger_end_ns < dl)
		dl = g.linger_end_ns;
	for (i = 0; i < MAX_CHILDREN; i++)
		if (g.children[i].pid && now + 50 * MS < dl)
			dl = now + 50 * MS;	/* reap promptly */
	return dl <= now ? 0 : (int)((dl - now + MS - 1) / MS);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: sbagent [-d DEVICE | -t PORT | --stdio] [-b BAUD] [--debugfs DIR]\n"
"               [--sysfs DIR] [--blocker-dev PATH] [-i] [-v]\n"
"Target agent of the sbrig rig: streams suspend_block's event log and runs\n"
"the host's commands over a framed line protocol.\n"
"\n"
"  -d, --device DEV     serial line (raw mode), e.g. /dev/ttyS1\n"
"  -t, --tcp PORT       listen on TCP PORT (one host at a time)\n"
"      --stdio          use stdin/stdout (default)\n"
"  -b, --baud BAUD      serial speed (default 115200)\n"
"      --debugfs DIR    debugfs mount (default /sys/kernel/debug)\n"
"      --sysfs DIR      module sysfs dir (default %s)\n"
"      --blocker-dev P  user blocker device (default /dev/suspend_blocker)\n"
"  -i, --input          be the input-event handler from the start (as\n"
"                       after the command 'input on')\n"
"  -v, --verbose        log to stderr\n"
"  -h, --help           this help\n", SUSPEND_BLOCK_SYSFS_DIR);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "tcp", required_argument, NULL, 't' },
		{ "stdio", no_argument, NULL, 'S' },
		{ "baud", required_argument, NULL, 'b' },
		{ "debugfs", required_argument, NULL, 'D' },
		{ "sysfs", required_argument, NULL, 'Y' },
		{ "blocker-dev", required_argument, NULL, 'B' },
		{ "input", no_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pollfd pfd[4];
	int c, n, i_link, i_ev, i_in;
	int64_t now;
	char *e;

	g.mode = MODE_STDIO;
	g.baud = 115200;
	g.debugfs = "/sys/kernel/debug";
	g.sysfs = SUSPEND_BLOCK_SYSFS_DIR;
	g.blocker_dev = "/dev/suspend_blocker";
	while ((c = getopt_long(argc, argv, "d:t:b:ivh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			g.mode = MODE_SERIAL;
			g.dev = optarg;
			break;
		case 't':
			g.mode = MODE_TCP;
			g.tcp_port = (int)strtol(optarg, &e, 10);
			if (*e || g.tcp_port <= 0 || g.tcp_port > 65535)
				goto bad;
			break;
		case 'S':
			g.mode = MODE_STDIO;
			break;
		case 'b':
			g.baud = (int)strtol(optarg, &e, 10);
			if (*e || !baud_const(g.baud))
				goto bad;
			break;
		case 'D':
			g.debugfs = optarg;
			break;
		case 'Y':
			g.sysfs = optarg;
			break;
		case 'B':
			g.blocker_dev = optarg;
			break;
		case 'i':
			g.input_at_start = true;
			break;
		case 'v':
			g.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	g.ring = calloc(RING_CAP, sizeof(*g.ring));
	g.outq = malloc(OUTQ_MAX);
	if (!g.ring || !g.outq) {
		fprintf(stderr, "sbagent: out of memory\n");
		return 1;
	}
	if (open_link())
		return 1;
	now = now_ns(CLOCK_MONOTONIC);
	ev_open(now);
	if (g.ev_fd >= 0)
		ev_read();
	send_hello(false);	/* a connected host sees a restart */
	if (g.input_at_start)
		input_start();

	while (!quit) {
		now = now_ns(CLOCK_MONOTONIC);
		ev_open(now);
		timers(now);
		stream();
		flush_out();
		n = 0;
		i_link = i_ev = i_in = -1;
		if (g.in_fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = g.in_fd, .events = POLLIN };
			if (g.out_len)
				pfd[n].events |= POLLOUT;
			i_link = n++;
		} else if (g.listen_fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = g.listen_fd, .events = POLLIN };
			i_link = n++;
		}
		if (g.out_fd >= 0 && g.out_fd != g.in_fd && g.out_len)
			pfd[n++] = (struct pollfd){ .fd = g.out_fd, .events = POLLOUT };
		/* stop reading the log while the ring would overwrite unsent */
		if (g.ev_fd >= 0 && (!g.synced || g.head - g.send_pos < RING_CAP - 64)) {
			pfd[n] = (struct pollfd){ .fd = g.ev_fd, .events = POLLIN };
			i_ev = n++;
		}
		if (g.epfd >= 0) {
			pfd[n] = (struct pollfd){ .fd = g.epfd, .events = POLLIN };
			i_in = n++;
		}
		if (poll(pfd, (nfds_t)n, poll_timeout(now)) < 0) {
			if (errno == EINTR)
				continue;
			perror("sbagent: poll");
			return 1;
		}
		if (i_ev >= 0 && pfd[i_ev].revents)
			ev_read();
		if (i_in >= 0 && pfd[i_in].revents)
			input_batch();
		if (i_link >= 0 && pfd[i_link].revents) {
			if (g.in_fd < 0)
				accept_client();
			else if (pfd[i_link].revents & (POLLIN | POLLHUP | POLLERR))
				handle_input();
		}
		if (g.listen_fd >= 0 && g.in_fd >= 0) {
			/* a new host replaces a stale connection */
			struct pollfd lp = { .fd = g.listen_fd, .events = POLLIN };

			if (poll(&lp, 1, 0) == 1)
				accept_client();
		}
	}
	flush_out();
	input_close();
	return 0;
bad:
	fprintf(stderr, "sbagent: bad value '%s'\n", optarg);
	usage(stderr);
	return 2;
}
