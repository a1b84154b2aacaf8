// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for lib/gpio.c that need no GPIO chip: a config naming a chip
 * that does not exist fails with a message naming the chip and the line,
 * and an empty config gives an object with no lines. Real lines (gpio-sim)
 * are exercised by tests/test_host_interface.py in an amd64 guest.
 *
 * The qmp: backend (keys of a QEMU guest) is tested against a real QEMU
 * (qemu-system-x86_64 -M pc without a guest: its PS/2 keyboard takes the
 * key events; a second QMP monitor stops and continues it): answers,
 * errors QEMU answers, a stopped QEMU, a killed one and its restart. A
 * scripted fake QMP server in a thread remains only where QEMU cannot be
 * made to do something: an error with an escaped description and an
 * event before every answer. tests/test_vrig.py drives a guest.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/gpio.h>
#include <sbrig/sbrig.h>

static void line(struct sbrig_line_cfg *l, const char *name, const char *chip,
		 unsigned int offset)
{
	memset(l, 0, sizeof(*l));
	strcpy(l->name, name);
	strcpy(l->chip, chip);
	l->offset = offset;
	l->present = true;
}

static void missing_chip_by_label_names_chip_and_line(void **state)
{
	static struct sbrig_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	line(&cfg.keys[0], "power", "no-such-label-xyz", 3);
	cfg.nkeys = 1;
	errno = 0;
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(sbrig_errmsg(),
		"gpio: chip 'no-such-label-xyz' line 3 (power): no such chip");
}

static void missing_chip_by_path_names_chip_and_line(void **state)
{
	static struct sbrig_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	line(&cfg.marker, "marker", "/nonexistent/gpiochip7", 5);
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(sbrig_errmsg(),
			       "chip '/nonexistent/gpiochip7' line 5 (marker)"));
}

static void no_lines_no_event_fd(void **state)
{
	static struct sbrig_config cfg;
	struct sbrig_gpio *gpio;
	struct sbrig_edge e;
	int64_t t = 0;

	memset(&cfg, 0, sizeof(cfg));
	line(&cfg.charger, "charger", "nope", 0);
	cfg.charger.present = false;	/* not wired: skipped */
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	assert_int_equal(sbrig_gpio_event_fd(gpio), -1);
	assert_int_equal(sbrig_gpio_read_edges(gpio, &e, 1), -ENOENT);
	assert_int_equal(sbrig_gpio_set(gpio, "charger", true, &t), -ENOENT);
	assert_string_equal(sbrig_errmsg(), "gpio: no output line 'charger'");
	assert_int_equal(sbrig_gpio_get(gpio, "power"), -ENOENT);
	sbrig_gpio_free(gpio);
	sbrig_gpio_free(NULL);
}

/* --- a scripted fake QMP server ----------------------------------------- */

/**
 * struct fake_qmp - one connection's script
 * @path: socket path
 * @lfd: listening socket
 * @answers: answer to the n-th request (after qmp_capabilities), NULL: ok
 * @nanswers: entries in @answers
 * @got: every request line received, concatenated
 */
struct fake_qmp {
	char path[108];
	int lfd;
	const char *answers[4];
	int nanswers;
	char got[4096];
};

static void *fake_qmp_thread(void *arg)
{
	struct fake_qmp *f = arg;
	char buf[1024];
	size_t len = 0;
	int fd, n = -1;
	FILE *in;

	fd = accept(f->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	dprintf(fd, "{\"QMP\": {\"version\": {\"qemu\": {\"major\": 7}}, "
		"\"capabilities\": [\"oob\"]}}\r\n");
	in = fdopen(fd, "r");
	while (fgets(buf, sizeof(buf), in)) {
		const char *id = strstr(buf, "\"id\":");
		const char *ans = n >= 0 && n < f->nanswers ? f->answers[n] : NULL;

		if (len + strlen(buf) < sizeof(f->got)) {
			memcpy(f->got + len, buf, strlen(buf) + 1);
			len += strlen(buf);
		}
		/* an event first: the client must skip it */
		dprintf(fd, "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, "
			"\"event\": \"SUSPEND\"}\r\n");
		dprintf(fd, "{%s, \"id\": %d}\r\n",
			ans ? ans : "\"return\": {}", id ? atoi(id + 5) : 0);
		n++;
	}
	fclose(in);
	return NULL;
}

static void fake_qmp_start(struct fake_qmp *f, pthread_t *t)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(f->path, sizeof(f->path), "%s/qmp-%d.sock",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp",
		 (int)getpid());
	unlink(f->path);
	strcpy(sa.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 1), 0);
	assert_int_equal(pthread_create(t, NULL, fake_qmp_thread, f), 0);
}

static void fake_qmp_stop(struct fake_qmp *f, pthread_t t)
{
	pthread_join(t, NULL);
	close(f->lfd);
	unlink(f->path);
}

static void qmp_key(struct sbrig_config *cfg, const char *name,
		    const char *path, unsigned int code)
{
	char chip[128];

	memset(cfg, 0, sizeof(*cfg));
	snprintf(chip, sizeof(chip), "qmp:%s", path);
	line(&cfg->keys[0], name, chip, code);
	cfg->nkeys = 1;
}

/*
 * The caller's poll loop, until every qmp request is answered or
 * sbrig_gpio_process() reports an error (returned), at most @timeout_ms.
 */
static int pump(struct sbrig_gpio *gpio, int timeout_ms)
{
	int64_t end = sbrig_now_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		struct pollfd p[8];
		int n = sbrig_gpio_fds(gpio, p, 8), ret;
		int64_t now = sbrig_now_ns(), until = sbrig_gpio_deadline(gpio);

		assert_true(n >= 0);
		if (until > end)
			until = end;
		poll(p, (nfds_t)n, until <= now ? 0 :
		     (int)((until - now) / 1000000) + 1);
		ret = sbrig_gpio_process(gpio, p, (size_t)n);
		if (ret)
			return ret;
		if (!sbrig_gpio_pending(gpio))
			return 0;
		if (sbrig_now_ns() > end)
			fail_msg("no answer from QMP within %d ms", timeout_ms);
	}
}

static void qmp_press_sends_key_down_then_up(void **state)
{
	static struct sbrig_config cfg;
	static struct fake_qmp f;
	struct sbrig_gpio *gpio;
	const char *down, *up;
	int64_t t = 0;
	pthread_t th;

	memset(&f, 0, sizeof(f));
	fake_qmp_start(&f, &th);
	qmp_key(&cfg, "power", f.path, 116);
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 0);
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, &t), 0);
	assert_true(t > 0);
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 1);
	/* setting the same value again sends nothing */
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, NULL), 0);
	assert_int_equal(sbrig_gpio_set(gpio, "power", false, NULL), 0);
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 0);
	assert_int_equal(pump(gpio, 5000), 0);
	sbrig_gpio_free(gpio);	/* key already up: nothing more sent */
	fake_qmp_stop(&f, th);

	assert_non_null(strstr(f.got, "\"execute\":\"qmp_capabilities\""));
	down = strstr(f.got, "\"down\":true,\"key\":{\"type\":\"qcode\","
			     "\"data\":\"power\"}");
	up = strstr(f.got, "\"down\":false,\"key\":{\"type\":\"qcode\","
			   "\"data\":\"power\"}");
	assert_non_null(down);
	assert_non_null(up);
	assert_true(down < up);
	assert_null(strstr(up + 1, "input-send-event"));
	assert_non_null(strstr(f.got, "\"execute\":\"input-send-event\""));
}

static void qmp_free_releases_a_held_key(void **state)
{
	static struct sbrig_config cfg;
	static struct fake_qmp f;
	struct sbrig_gpio *gpio;
	pthread_t th;

	memset(&f, 0, sizeof(f));
	fake_qmp_start(&f, &th);
	qmp_key(&cfg, "vol-up", f.path, 115);
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	assert_int_equal(sbrig_gpio_set(gpio, "vol-up", true, NULL), 0);
	sbrig_gpio_free(gpio);
	fake_qmp_stop(&f, th);
	assert_non_null(strstr(f.got, "\"down\":false,\"key\":{\"type\":"
				      "\"qcode\",\"data\":\"volumeup\"}"));
}

static void qmp_error_answer_names_socket_and_desc(void **state)
{
	static struct sbrig_config cfg;
	static struct fake_qmp f;
	struct sbrig_gpio *gpio;
	pthread_t th;

	memset(&f, 0, sizeof(f));
	f.answers[0] = "\"error\": {\"class\": \"GenericError\", "
		       "\"desc\": \"Invalid \\\"key\\\" here\"}";
	f.nanswers = 1;
	fake_qmp_start(&f, &th);
	qmp_key(&cfg, "power", f.path, 116);
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	/* sent at once; the answer comes out of the poll loop */
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, NULL), 0);
	assert_int_equal(pump(gpio, 5000), -EIO);
	assert_non_null(strstr(sbrig_errmsg(), f.path));
	assert_non_null(strstr(sbrig_errmsg(), "gpio: key power (power) down: "));
	assert_non_null(strstr(sbrig_errmsg(), "input-send-event: Invalid \"key\" here"));
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 0);
	sbrig_gpio_free(gpio);
	fake_qmp_stop(&f, th);
}

static void qmp_charger_sends_the_virtual_rigs_command(void **state)
{
	static struct sbrig_config cfg;
	static struct fake_qmp f;
	struct sbrig_gpio *gpio;
	const char *plug, *unplug;
	int64_t t = 0;
	pthread_t th;

	memset(&f, 0, sizeof(f));
	fake_qmp_start(&f, &th);
	qmp_key(&cfg, "power", f.path, 116);
	line(&cfg.charger, "charger", cfg.keys[0].chip, 0);
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	assert_int_equal(sbrig_gpio_get(gpio, "charger"), 0);
	assert_int_equal(sbrig_gpio_set(gpio, "charger", true, &t), 0);
	assert_true(t > 0);
	assert_int_equal(sbrig_gpio_get(gpio, "charger"), 1);
	assert_int_equal(sbrig_gpio_set(gpio, "charger", true, NULL), 0);
	assert_int_equal(sbrig_gpio_set(gpio, "charger", false, NULL), 0);
	assert_int_equal(pump(gpio, 5000), 0);
	sbrig_gpio_free(gpio);
	fake_qmp_stop(&f, th);

	plug = strstr(f.got, "\"execute\":\"__org.sbrig_charger-set\","
			     "\"arguments\":{\"plugged\":true}");
	assert_non_null(plug);
	unplug = strstr(plug, "\"execute\":\"__org.sbrig_charger-set\","
			      "\"arguments\":{\"plugged\":false}");
	assert_non_null(unplug);
	/* once each: the same value twice sends nothing, nor does the free */
	assert_null(strstr(plug + strlen("\"execute\":\"__org.sbrig_charger-set\","
					 "\"arguments\":{\"plugged\":true}"),
			   "{\"plugged\":true}"));
	assert_null(strstr(unplug + strlen("\"execute\":\"__org.sbrig_charger-set\""),
			   "__org.sbrig_charger-set"));
	assert_null(strstr(f.got, "input-send-event"));
}

static void qmp_charger_refused_stays_as_it_was(void **state)
{
	static struct sbrig_config cfg;
	static struct fake_qmp f;
	struct sbrig_gpio *gpio;
	pthread_t th;

	memset(&f, 0, sizeof(f));
	f.answers[0] = "\"error\": {\"class\": \"CommandNotFound\", "
		       "\"desc\": \"The command __org.sbrig_charger-set has not been found\"}";
	f.nanswers = 1;
	fake_qmp_start(&f, &th);
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.charger.chip, sizeof(cfg.charger.chip), "qmp:%s", f.path);
	strcpy(cfg.charger.name, "charger");
	cfg.charger.present = true;
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	assert_int_equal(sbrig_gpio_set(gpio, "charger", true, NULL), 0);
	assert_int_equal(pump(gpio, 5000), -EIO);
	assert_non_null(strstr(sbrig_errmsg(),
		"gpio: charger charger (charger) plug: "));
	assert_non_null(strstr(sbrig_errmsg(), "has not been found"));
	assert_int_equal(sbrig_gpio_get(gpio, "charger"), 0);
	sbrig_gpio_free(gpio);
	fake_qmp_stop(&f, th);
}

static void qmp_missing_socket_names_path(void **state)
{
	static struct sbrig_config cfg;

	qmp_key(&cfg, "power", "/nonexistent/qmp.sock", 116);
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(sbrig_errmsg(), "/nonexistent/qmp.sock"));
	assert_non_null(strstr(sbrig_errmsg(), "connect"));
}

static void qmp_bad_lines_are_refused_before_connecting(void **state)
{
	static struct sbrig_config cfg;

	/* no QEMU key for the code: refused without touching the socket */
	qmp_key(&cfg, "odd", "/nonexistent/qmp.sock", 999);
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, EINVAL);
	assert_string_equal(sbrig_errmsg(),
		"gpio: chip 'qmp:/nonexistent/qmp.sock' line 999 (odd): no QEMU key for Linux key code 999");

	memset(&cfg, 0, sizeof(cfg));
	line(&cfg.marker, "marker", "qmp:/nonexistent/qmp.sock", 1);
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "(marker): a qmp: chip drives keys and a charger only"));

	/* the charger is known by its role (a hand-built config need not
	 * set .role: it comes from the member the line is in), and a qmp:
	 * chip has one, line 0 */
	memset(&cfg, 0, sizeof(cfg));
	line(&cfg.charger, "plug-switch", "qmp:/nonexistent/qmp.sock", 116);
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, EINVAL);
	assert_string_equal(sbrig_errmsg(),
		"gpio: chip 'qmp:/nonexistent/qmp.sock' line 116 (plug-switch): a qmp: chip's charger is line 0");

	qmp_key(&cfg, "power", "/nonexistent/qmp.sock", 116);
	cfg.keys[0].active_low = true;
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, EINVAL);
}

/* --- a real QEMU --------------------------------------------------------- */

/**
 * struct qemu - a qemu-system-x86_64 without a guest
 * @pid: its process (0: not running)
 * @sock: the QMP socket the rig uses
 * @mon: a second QMP monitor for the test (stop, cont)
 */
struct qemu {
	pid_t pid;
	char sock[108];
	char mon[108];
};

/*
 * Skip the test, saying why this machine cannot run it, as
 * "skip-because: TEST: WHY" on standard output: tests/test_host_unit.py
 * fails a skip without it, and any skip where CI is set (CI's machine has
 * what every test needs).
 */
#define skip_because(why) do {						\
		printf("skip-because: %s: %s\n", __func__, (why));	\
		fflush(stdout);						\
		skip();							\
	} while (0)

/*
 * Start QEMU. Returns false only when qemu-system-x86_64 is not installed
 * (the exec fails); a QEMU that starts and dies fails the test.
 */
static bool qemu_start(struct qemu *q)
{
	char a1[160], a2[160];
	int64_t end;
	struct stat st;

	snprintf(q->sock, sizeof(q->sock), "%s/qemu-%d.sock",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp",
		 (int)getpid());
	snprintf(q->mon, sizeof(q->mon), "%s/qemu-%d.mon",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp",
		 (int)getpid());
	unlink(q->sock);
	unlink(q->mon);
	snprintf(a1, sizeof(a1), "unix:%s,server=on,wait=off", q->sock);
	snprintf(a2, sizeof(a2), "unix:%s,server=on,wait=off", q->mon);
	q->pid = fork();
	assert_true(q->pid >= 0);
	if (!q->pid) {
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-M", "pc",
		       "-m", "16", "-nodefaults", "-display", "none", "-qmp",
		       a1, "-qmp", a2, (char *)NULL);
		_exit(127);
	}
	/* ready once both monitors listen (QEMU makes them before it runs) */
	end = sbrig_now_ns() + 20000000000LL;
	while (stat(q->sock, &st) || stat(q->mon, &st)) {
		int status;

		if (waitpid(q->pid, &status, WNOHANG) == q->pid) {
			q->pid = 0;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
				return false;	/* no QEMU here */
			fail_msg("qemu-system-x86_64 ended before its monitors "
				 "listened (status 0x%x)", status);
		}
		assert_true(sbrig_now_ns() < end);
		poll(NULL, 0, 20);
	}
	return true;
}

static void qemu_kill(struct qemu *q)
{
	if (q->pid) {
		kill(q->pid, SIGKILL);
		waitpid(q->pid, NULL, 0);
	}
	q->pid = 0;
}

/* A command on the test's own monitor (blocking: test code). */
static void qemu_monitor(struct qemu *q, const char *cmd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[4096];
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	FILE *f;

	strcpy(sa.sun_path, q->mon);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	f = fdopen(fd, "r+");
	assert_non_null(fgets(line, sizeof(line), f));	/* greeting */
	fprintf(f, "{\"execute\": \"qmp_capabilities\"}\n{\"execute\": \"%s\"}\n",
		cmd);
	fflush(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(strstr(line, "\"return\""));
	do
		assert_non_null(fgets(line, sizeof(line), f));
	while (!strstr(line, "\"return\""));	/* events (STOP) may come first */
	fclose(f);
}

static int setup_qemu(void **state)
{
	static struct qemu q;

	memset(&q, 0, sizeof(q));
	*state = &q;
	return 0;
}

static int teardown_qemu(void **state)
{
	struct qemu *q = *state;

	qemu_kill(q);
	unlink(q->sock);
	unlink(q->mon);
	return 0;
}

/*
 * Issue 7 §3: a key event blocked the daemon's poll loop for up to 1 s
 * (qmp_execute() waited for the answer). Against a QEMU that does not
 * answer (SIGSTOP): set returns at once, requests are bounded, the answers
 * come out of the poll loop once QEMU runs again.
 */
static void qmp_qemu_set_never_waits(void **state)
{
	struct qemu *q = *state;
	static struct sbrig_config cfg;
	struct sbrig_gpio *gpio;
	int64_t t0, t = 0, dt;
	int i;

	if (!qemu_start(q))
		skip_because("qemu-system-x86_64 is not installed");
	qmp_key(&cfg, "power", q->sock, 116);
	gpio = sbrig_gpio_new(&cfg, "test");
	if (!gpio)
		fail_msg("%s", sbrig_errmsg());
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, &t), 0);
	assert_int_equal(pump(gpio, 5000), 0);	/* QEMU answered */
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 1);

	/*
	 * A call that waited for the stopped QEMU would take the backend's
	 * whole answer timeout (1 s) and fail: bound the calls by half of
	 * it, not by a guess at how fast this (ASan, shared) host is.
	 */
	kill(q->pid, SIGSTOP);
	t0 = sbrig_now_ns();
	assert_int_equal(sbrig_gpio_set(gpio, "power", false, &t), 0);
	dt = sbrig_now_ns() - t0;
	if (dt > 500000000)
		fail_msg("sbrig_gpio_set() took %lld ms", (long long)(dt / 1000000));
	assert_true(t >= t0 && t <= t0 + dt);
	assert_int_equal(sbrig_gpio_pending(gpio), 1);
	/* the queue of unanswered requests is bounded */
	for (i = 1; i < 16; i++)
		assert_int_equal(sbrig_gpio_set(gpio, "power", i % 2, NULL), 0);
	assert_int_equal(sbrig_gpio_pending(gpio), 16);
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 1);
	assert_int_equal(sbrig_gpio_set(gpio, "power", false, NULL), -ENOBUFS);
	assert_non_null(strstr(sbrig_errmsg(), "16 requests unanswered"));
	assert_non_null(strstr(sbrig_errmsg(), q->sock));
	/* 17 calls, none waiting: under one answer timeout in all */
	assert_true(sbrig_now_ns() - t0 < 1000000000);
	kill(q->pid, SIGCONT);
	i = pump(gpio, 5000);
	if (i)
		fail_msg("%d %s", i, sbrig_errmsg());
	assert_int_equal(sbrig_gpio_pending(gpio), 0);
	sbrig_gpio_free(gpio);
	qemu_kill(q);
}

/* An error QEMU answers ("VM not running" while stopped), then success. */
static void qmp_qemu_error_answer(void **state)
{
	struct qemu *q = *state;
	static struct sbrig_config cfg;
	struct sbrig_gpio *gpio;

	if (!qemu_start(q))
		skip_because("qemu-system-x86_64 is not installed");
	qmp_key(&cfg, "vol-up", q->sock, 115);
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	qemu_monitor(q, "stop");
	assert_int_equal(sbrig_gpio_set(gpio, "vol-up", true, NULL), 0);
	assert_int_equal(sbrig_gpio_get(gpio, "vol-up"), 1);
	assert_int_equal(pump(gpio, 5000), -EIO);
	if (!strstr(sbrig_errmsg(), "gpio: key vol-up (volumeup) down: qmp: ") ||
	    !strstr(sbrig_errmsg(), q->sock) ||
	    !strstr(sbrig_errmsg(), ": input-send-event: VM not running"))
		fail_msg("%s", sbrig_errmsg());
	assert_int_equal(sbrig_gpio_get(gpio, "vol-up"), 0);	/* not down */
	qemu_monitor(q, "cont");
	assert_int_equal(sbrig_gpio_set(gpio, "vol-up", true, NULL), 0);
	assert_int_equal(pump(gpio, 5000), 0);
	assert_int_equal(sbrig_gpio_get(gpio, "vol-up"), 1);
	sbrig_gpio_free(gpio);
	qemu_kill(q);
}

/*
 * QEMU killed: the poll loop hears it (-ECONNRESET naming the socket); a
 * QEMU started again on the same socket is connected to by the next set.
 * A QEMU that stops answering: -ETIMEDOUT after 1 s, the connection reset.
 */
static void qmp_qemu_lost_and_reconnected(void **state)
{
	struct qemu *q = *state;
	static struct sbrig_config cfg;
	struct sbrig_gpio *gpio;
	struct pollfd p[4];
	int64_t t0;

	if (!qemu_start(q))
		skip_because("qemu-system-x86_64 is not installed");
	qmp_key(&cfg, "power", q->sock, 116);
	gpio = sbrig_gpio_new(&cfg, "test");
	assert_non_null(gpio);
	assert_int_equal(sbrig_gpio_fds(gpio, p, 4), 1);
	qemu_kill(q);
	assert_int_equal(poll(p, 1, 5000), 1);
	assert_int_equal(sbrig_gpio_process(gpio, p, 1), -ECONNRESET);
	if (!strstr(sbrig_errmsg(), q->sock) ||
	    !strstr(sbrig_errmsg(), "QEMU closed the connection"))
		fail_msg("%s", sbrig_errmsg());
	assert_int_equal(sbrig_gpio_fds(gpio, p, 4), 0);	/* nothing to poll */
	/* no QEMU: the reconnect fails at once, naming the socket */
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, NULL), -ECONNREFUSED);
	assert_non_null(strstr(sbrig_errmsg(), "connect"));
	assert_true(qemu_start(q));
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, NULL), 0);
	assert_int_equal(pump(gpio, 5000), 0);
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 1);

	kill(q->pid, SIGSTOP);
	t0 = sbrig_now_ns();
	assert_int_equal(sbrig_gpio_set(gpio, "power", false, NULL), 0);
	assert_int_equal(pump(gpio, 5000), -ETIMEDOUT);
	assert_true(sbrig_now_ns() - t0 >= 900000000);
	assert_non_null(strstr(sbrig_errmsg(), "input-send-event: no answer in time"));
	kill(q->pid, SIGCONT);
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, NULL), 0);
	assert_int_equal(pump(gpio, 5000), 0);
	sbrig_gpio_free(gpio);
	qemu_kill(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(missing_chip_by_label_names_chip_and_line),
		cmocka_unit_test(missing_chip_by_path_names_chip_and_line),
		cmocka_unit_test(no_lines_no_event_fd),
		cmocka_unit_test(qmp_press_sends_key_down_then_up),
		cmocka_unit_test(qmp_free_releases_a_held_key),
		cmocka_unit_test(qmp_error_answer_names_socket_and_desc),
		cmocka_unit_test(qmp_charger_sends_the_virtual_rigs_command),
		cmocka_unit_test(qmp_charger_refused_stays_as_it_was),
		cmocka_unit_test(qmp_missing_socket_names_path),
		cmocka_unit_test(qmp_bad_lines_are_refused_before_connecting),
		cmocka_unit_test_setup_teardown(qmp_qemu_set_never_waits,
						setup_qemu, teardown_qemu),
		cmocka_unit_test_setup_teardown(qmp_qemu_error_answer,
						setup_qemu, teardown_qemu),
		cmocka_unit_test_setup_teardown(qmp_qemu_lost_and_reconnected,
						setup_qemu, teardown_qemu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
