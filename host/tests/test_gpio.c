// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for lib/gpio.c that need no GPIO chip: a config naming a chip
 * that does not exist fails with a message naming the chip and the line,
 * and an empty config gives an object with no lines. Real lines (gpio-sim)
 * are exercised by tests/test_host_interface.py in an amd64 guest.
 *
 * The qmp: backend (keys of a QEMU guest) is tested against a scripted
 * fake QMP server in a thread (it answers like QEMU, with an asynchronous
 * event before each answer); tests/test_vrig.py drives a real QEMU.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
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
		const char *id = strstr(buf, "\"id\": ");
		const char *ans = n >= 0 && n < f->nanswers ? f->answers[n] : NULL;

		if (len + strlen(buf) < sizeof(f->got)) {
			memcpy(f->got + len, buf, strlen(buf) + 1);
			len += strlen(buf);
		}
		/* an event first: the client must skip it */
		dprintf(fd, "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, "
			"\"event\": \"SUSPEND\"}\r\n");
		dprintf(fd, "{%s, \"id\": %d}\r\n",
			ans ? ans : "\"return\": {}", id ? atoi(id + 6) : 0);
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
	sbrig_gpio_free(gpio);	/* key already up: nothing more sent */
	fake_qmp_stop(&f, th);

	assert_non_null(strstr(f.got, "\"execute\": \"qmp_capabilities\""));
	down = strstr(f.got, "\"down\": true, \"key\": {\"type\": \"qcode\", "
			     "\"data\": \"power\"}");
	up = strstr(f.got, "\"down\": false, \"key\": {\"type\": \"qcode\", "
			   "\"data\": \"power\"}");
	assert_non_null(down);
	assert_non_null(up);
	assert_true(down < up);
	assert_null(strstr(up + 1, "input-send-event"));
	assert_non_null(strstr(f.got, "\"execute\": \"input-send-event\""));
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
	assert_non_null(strstr(f.got, "\"down\": false, \"key\": {\"type\": "
				      "\"qcode\", \"data\": \"volumeup\"}"));
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
	assert_int_equal(sbrig_gpio_set(gpio, "power", true, NULL), -EIO);
	assert_non_null(strstr(sbrig_errmsg(), f.path));
	assert_non_null(strstr(sbrig_errmsg(), "input-send-event: Invalid \"key\" here"));
	assert_int_equal(sbrig_gpio_get(gpio, "power"), 0);
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
	assert_non_null(strstr(sbrig_errmsg(), "drives keys only"));

	/* the charger is refused by its role (a hand-built config need not
	 * set .role: it comes from the member the line is in) */
	memset(&cfg, 0, sizeof(cfg));
	line(&cfg.charger, "plug-switch", "qmp:/nonexistent/qmp.sock", 116);
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "(plug-switch): a qmp: chip drives keys only"));

	qmp_key(&cfg, "power", "/nonexistent/qmp.sock", 116);
	cfg.keys[0].active_low = true;
	assert_null(sbrig_gpio_new(&cfg, "test"));
	assert_int_equal(errno, EINVAL);
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
		cmocka_unit_test(qmp_missing_socket_names_path),
		cmocka_unit_test(qmp_bad_lines_are_refused_before_connecting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
