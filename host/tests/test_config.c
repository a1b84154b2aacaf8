// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the rig description parser (lib/config.c): the example
 * rigs in rig/, every kind of error from tests/fixtures/config/bad_*.conf,
 * and command-line overrides through the same key table.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sbrig/config.h>
#include <sbrig/gpio.h>
#include <sbrig/link.h>
#include <sbrig/power.h>
#include <sbrig/sbrig.h>


static const char *fixtures(void)
{
	const char *f = getenv("SBRIG_FIXTURES");

	return f ? f : "../../tests/fixtures";
}

static void fixture_path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", fixtures(), rel);
}

static void load_ok(const char *rel, struct sbrig_config *cfg)
{
	char path[PATH_MAX];
	int ret;

	fixture_path(path, sizeof(path), rel);
	ret = sbrig_config_load(path, cfg);
	if (ret)
		fail_msg("%s: %d %s", path, ret, sbrig_errmsg());
}

static void beaglebone_rig(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	const struct sbrig_line_cfg *l;

	load_ok("../../rig/beaglebone.conf", cfg);
	assert_string_equal(cfg->name, "beaglebone");
	assert_int_equal(cfg->nkeys, 3);
	assert_string_equal(cfg->keys[0].name, "power");
	assert_string_equal(cfg->keys[0].chip, "/dev/gpiochip2");
	assert_int_equal(cfg->keys[0].offset, 2);
	assert_true(cfg->keys[0].present);
	assert_string_equal(cfg->keys[2].name, "volume-down");
	assert_true(cfg->charger.present);
	assert_int_equal(cfg->charger.offset, 4);
	assert_true(cfg->marker.present);
	assert_string_equal(cfg->marker.chip, "/dev/gpiochip1");
	assert_int_equal(cfg->marker.offset, 28);
	assert_string_equal(cfg->power_uri, "local:");
	assert_string_equal(cfg->power_device, "ina226");
	assert_int_equal(cfg->shunt_uohm, 40000);
	assert_string_equal(cfg->target_uri, "serial:/dev/ttyS1:115200");
	l = sbrig_config_line(cfg, "volume-up");
	assert_non_null(l);
	assert_int_equal(l->offset, 3);
	assert_ptr_equal(sbrig_config_line(cfg, "marker"), &cfg->marker);
	assert_null(sbrig_config_line(cfg, "home"));
	free(cfg);
}

static void virtual_rig_has_a_qmp_key_and_charger(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));

	load_ok("../../rig/virtual.conf", cfg);
	assert_string_equal(cfg->name, "virtual");
	assert_int_equal(cfg->nkeys, 1);
	assert_string_equal(cfg->keys[0].name, "power");
	assert_string_equal(cfg->keys[0].chip, "qmp:/tmp/sbrig-vrig/qmp.sock");
	assert_int_equal(cfg->keys[0].offset, 116);	/* KEY_POWER */
	/* a socket path of 105 characters fits */
	assert_int_equal(sbrig_config_set(cfg, "key:power.chip=qmp:/"
		"tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/qmp.sock"), 0);
	assert_int_equal(strlen(cfg->keys[0].chip), 109);
	/* the charger is line 0 of the same qmp: chip */
	assert_true(cfg->charger.present);
	assert_string_equal(cfg->charger.chip, "qmp:/tmp/sbrig-vrig/qmp.sock");
	assert_int_equal(cfg->charger.offset, 0);
	assert_ptr_equal(sbrig_config_line(cfg, "charger"), &cfg->charger);
	assert_false(cfg->marker.present);
	assert_null(sbrig_config_line(cfg, "marker"));
	assert_string_equal(cfg->power_uri, "ip:127.0.0.1:30431");
	assert_string_equal(cfg->target_uri, "tcp:127.0.0.1:30430");
	free(cfg);
}

static void defaults_and_hash(void **state)
{
	char path[PATH_MAX];
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	const char *text = "# only a comment\n[timing]\n";
	FILE *f;

	snprintf(path, sizeof(path), "%s/minimal.conf",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(sbrig_config_load(path, cfg), 0);
	assert_string_equal(cfg->name, "minimal");	/* from the file name */
	assert_string_equal(cfg->path, path);
	assert_string_equal(cfg->power_device, "ina226");
	assert_int_equal(cfg->buffer_samples, 0);	/* automatic: a quarter second */
	assert_int_equal(cfg->press_ms, 100);
	assert_int_equal(cfg->settle_ms, 1000);
	assert_int_equal(cfg->ping_interval_ms, 1000);
	assert_int_equal(cfg->link_timeout_ms, 3000);
	assert_int_equal(cfg->quiet_ms, 2500);
	assert_int_equal(cfg->shunt_uohm, 0);
	assert_int_equal(cfg->sample_rate_hz, 0);
	assert_string_equal(cfg->power_uri, "");
	assert_string_equal(cfg->target_uri, "");
	/* sha256sum of the text (libmd computes it) */
	assert_string_equal(cfg->sha256,
		"3ae7766f43499ad34bb2e3c366ad29ba9dd1bb8a05fd33574d434a52aa2d216a");
	free(cfg);
}

struct bad_case {
	const char *file;
	int err;
	const char *msg;	/* after "PATH:" */
};

static const struct bad_case bad_cases[] = {
	{ "bad_chip_without_line.conf", EINVAL, "3: [charger]: chip without line" },
	{ "bad_line_without_chip.conf", EINVAL, "4: [key:power]: line without chip" },
	{ "bad_unknown_section.conf", EINVAL, "3: [powr]: unknown section" },
	{ "bad_empty_unknown_section.conf", EINVAL, "3: [bogus]: unknown section" },
	{ "bad_unknown_key.conf", EINVAL, "4: power.url: unknown key" },
	{ "bad_number.conf", EINVAL, "2: timing.press_ms: '10x': not a decimal number" },
	{ "bad_range.conf", EINVAL, "3: timing.press_ms: '0': out of range (1..60000)" },
	{ "bad_overflow.conf", EINVAL, "2: timing.press_ms: '99999999999999999999999': out of range" },
	{ "bad_scheme.conf", EINVAL, "2: power.uri: 'usb:1.2.3': unknown scheme (expected local: or ip:HOST[:PORT])" },
	{ "bad_tcp_no_port.conf", EINVAL, "2: target.uri: 'tcp:localhost': expected tcp:HOST:PORT" },
	{ "bad_serial_path.conf", EINVAL, "2: target.uri: 'serial:ttyUSB0': expected serial:/dev/TTY[:BAUD]" },
	{ "bad_duplicate_key.conf", EINVAL, "4: [key:power]: duplicate key (first at line 1)" },
	{ "bad_duplicate_section.conf", EINVAL, "3: [rig]: duplicate section" },
	{ "bad_key_twice.conf", EINVAL, "3: rig.name: set twice" },
	{ "bad_syntax.conf", EINVAL, "3: syntax error" },
	{ "bad_bool.conf", EINVAL, "4: charger.active_low: 'maybe': not a boolean" },
	{ "bad_same_line.conf", EINVAL, " a and charger both use gpiochip0 line 3" },
	{ "bad_no_section.conf", EINVAL, "1: name: key outside of any section" },
	{ "bad_timeout.conf", EINVAL, " timing.link_timeout_ms (3000) must exceed timing.ping_interval_ms (5000)" },
	{ "bad_key_name.conf", EINVAL, "3: [key:a b]: key name must be" },
	{ "bad_long_line.conf", EINVAL, "2: line longer than" },
	{ "bad_empty_key.conf", EINVAL, "1: [key:vol]: needs chip and line" },
	{ "no_such_file.conf", ENOENT, " No such file or directory" },
};

static void bad_configs(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		char path[PATH_MAX], want[PATH_MAX + 200];
		int ret;

		snprintf(path, sizeof(path), "%s/config/%s", fixtures(), c->file);
		ret = sbrig_config_load(path, cfg);
		snprintf(want, sizeof(want), "%s:%s", path, c->msg);
		if (ret != -c->err || strncmp(sbrig_errmsg(), want, strlen(want)))
			fail_msg("%s: got %d '%s', want %d '%s...'", c->file,
				 ret, sbrig_errmsg(), -c->err, want);
	}
	free(cfg);
}

static void overrides(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	struct sbrig_config *before = malloc(sizeof(*before));

	load_ok("../../rig/beaglebone.conf", cfg);
	assert_int_equal(sbrig_config_set(cfg, "power.uri=ip:rig-host:30431"), 0);
	assert_string_equal(cfg->power_uri, "ip:rig-host:30431");
	assert_int_equal(sbrig_config_set(cfg, "key:power.line=7"), 0);
	assert_int_equal(cfg->keys[0].offset, 7);
	assert_int_equal(sbrig_config_set(cfg, "marker.active_low=yes"), 0);
	assert_true(cfg->marker.active_low);
	assert_int_equal(sbrig_config_set(cfg, "timing.press_ms=250"), 0);
	assert_int_equal(cfg->press_ms, 250);
	assert_int_equal(sbrig_config_set(cfg, "target.uri="), 0);
	assert_string_equal(cfg->target_uri, "");
	assert_int_equal(sbrig_config_set(cfg, "timing.quiet_ms=4000"), 0);
	assert_int_equal(cfg->quiet_ms, 4000);

	/* the INA226 emulator's old rate: above what the driver reads */
	assert_int_equal(sbrig_config_set(cfg, "power.sample_rate_hz=3571"),
			 -EINVAL);
	assert_string_equal(sbrig_errmsg(),
		"override 'power.sample_rate_hz=3571': power.sample_rate_hz (3571) is above what ina2xx-adc reads without losses over a 400000 Hz bus (power.i2c_hz): 1250 S/s");
	assert_int_equal(sbrig_config_set(cfg, "power.sample_rate_hz=893"), 0);
	assert_int_equal(cfg->sample_rate_hz, 893);
	/* the ceiling follows the bus: 893 S/s is too fast at 100 kHz */
	assert_int_equal(sbrig_config_set(cfg, "power.i2c_hz=100000"), -EINVAL);
	assert_string_equal(sbrig_errmsg(),
		"override 'power.i2c_hz=100000': power.sample_rate_hz (893) is above what ina2xx-adc reads without losses over a 100000 Hz bus (power.i2c_hz): 384 S/s");
	assert_int_equal(cfg->i2c_hz, 400000);	/* left as it was */
	assert_int_equal(sbrig_config_set(cfg, "power.i2c_hz=1000000"), 0);
	assert_int_equal(sbrig_config_set(cfg, "power.sample_rate_hz=2000"), 0);
	assert_int_equal(sbrig_config_set(cfg, "power.i2c_hz=400000"), -EINVAL);
	assert_int_equal(sbrig_config_set(cfg, "power.sample_rate_hz=0"), 0);
	assert_int_equal(sbrig_config_set(cfg, "power.i2c_hz=400000"), 0);

	*before = *cfg;
	assert_int_equal(sbrig_config_set(cfg, "timing.press_ms=0"), -EINVAL);
	assert_string_equal(sbrig_errmsg(),
		"override 'timing.press_ms=0': timing.press_ms: '0': out of range (1..60000)");
	assert_int_equal(sbrig_config_set(cfg, "power.url=local:"), -EINVAL);
	assert_string_equal(sbrig_errmsg(),
		"override 'power.url=local:': power.url: unknown key");
	assert_int_equal(sbrig_config_set(cfg, "press_ms=5"), -EINVAL);
	assert_int_equal(sbrig_config_set(cfg, "timing.press_ms"), -EINVAL);
	assert_int_equal(sbrig_config_set(cfg, "key:home.line=1"), -ENOENT);
	/* same table, same cross checks: a line used twice */
	assert_int_equal(sbrig_config_set(cfg, "charger.line=3"), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "volume-up and charger both use"));
	assert_int_equal(sbrig_config_set(cfg, "timing.link_timeout_ms=500"),
			 -EINVAL);
	/* an awake agent is quiet between two pings */
	assert_int_equal(sbrig_config_set(cfg, "timing.quiet_ms=1000"), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(),
		"timing.quiet_ms (1000) must exceed timing.ping_interval_ms (1000)"));
	/* a failed override changes nothing */
	assert_memory_equal(before, cfg, sizeof(*cfg));
	free(before);
	free(cfg);
}

static void virtual_rig_cannot_add_lines(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));

	load_ok("../../rig/virtual.conf", cfg);
	assert_int_equal(sbrig_config_set(cfg, "marker.line=3"), -ENOENT);
	assert_non_null(strstr(sbrig_errmsg(), "[marker]: not in the rig description"));
	free(cfg);
}

/* Random byte damage to a good file: an error with a location, never a crash. */
static void mutated_files_fail_cleanly(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	char src[PATH_MAX], dst[PATH_MAX], buf[4096];
	unsigned int seed = 1, i, j;
	size_t n;
	FILE *f;

	fixture_path(src, sizeof(src), "../../rig/beaglebone.conf");
	f = fopen(src, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	snprintf(dst, sizeof(dst), "%s/mutated.conf",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp");
	for (i = 0; i < 500; i++) {
		char copy[sizeof(buf)];
		int ret;

		memcpy(copy, buf, n);
		for (j = 0; j < 1 + i % 8; j++)
			copy[rand_r(&seed) % n] = (char)rand_r(&seed);
		f = fopen(dst, "w");
		assert_non_null(f);
		fwrite(copy, 1, n, f);
		fclose(f);
		ret = sbrig_config_load(dst, cfg);
		if (ret)
			assert_true(!strncmp(sbrig_errmsg(), dst, strlen(dst)));
	}
	free(cfg);
}

/* Write @text (@len bytes) to TMPDIR/@name; the path goes to @path. */
static void write_tmp(char *path, size_t size, const char *name,
		      const char *text, size_t len)
{
	FILE *f;

	snprintf(path, size, "%s/%s",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp", name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static int load_text(const char *name, const char *text,
		     struct sbrig_config *cfg, char *path, size_t size)
{
	write_tmp(path, size, name, text, strlen(text));
	return sbrig_config_load(path, cfg);
}

static void assert_err(const char *path, const char *msg)
{
	char want[PATH_MAX + 200];

	snprintf(want, sizeof(want), "%s:%s", path, msg);
	if (strncmp(sbrig_errmsg(), want, strlen(want)))
		fail_msg("got '%s', want '%s...'", sbrig_errmsg(), want);
}

/*
 * Issue 7 §4.7: our line reader and libinih disagreed. An indented
 * "  [power]" switched the section for us and was a continuation line for
 * libinih (wrong errors, a key silently named "[key:vol]"); a UTF-8 BOM was
 * a syntax error at line 2; "[rig] junk" and CR-only line ends were
 * accepted with the rest ignored.
 */
static void both_readers_agree_on_every_line(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	char path[PATH_MAX];

	/* indentation is ignored, as the man page says */
	assert_int_equal(load_text("indented.conf",
		"[rig]\nname = ind\n  [power]\n  uri = local:\n"
		"\t[key:vol]\n  chip = gpiochip0\n  line = 3\n", cfg, path,
		sizeof(path)), 0);
	assert_string_equal(cfg->name, "ind");
	assert_string_equal(cfg->power_uri, "local:");
	assert_int_equal(cfg->nkeys, 1);
	assert_string_equal(cfg->keys[0].name, "vol");
	assert_int_equal(cfg->keys[0].role, SBRIG_LINE_KEY);
	assert_int_equal(cfg->charger.role, SBRIG_LINE_CHARGER);
	assert_int_equal(cfg->marker.role, SBRIG_LINE_MARKER);
	assert_string_equal(cfg->keys[0].chip, "gpiochip0");
	assert_int_equal(cfg->keys[0].offset, 3);
	assert_true(cfg->keys[0].present);
	/* an indented unknown key is reported as such, at its line */
	assert_int_equal(load_text("indented-bad.conf",
		"[rig]\nname = x\n  [power]\n    url = local:\n", cfg, path,
		sizeof(path)), -EINVAL);
	assert_err(path, "4: power.url: unknown key");
	/* a UTF-8 BOM */
	assert_int_equal(load_text("bom.conf",
		"\xef\xbb\xbf[rig]\nname = bom\n", cfg, path, sizeof(path)), 0);
	assert_string_equal(cfg->name, "bom");
	assert_string_equal(cfg->sha256,	/* of every byte, BOM included */
		"a29b49584e63a6de1febadc74b272b82f1b8e6259a68bf8bb04d3b1284fd04a7");
	/* text after a section header */
	assert_int_equal(load_text("junk.conf", "[rig] junk\nname = x\n", cfg,
				   path, sizeof(path)), -EINVAL);
	assert_err(path, "1: [rig]: text after the section header");
	assert_int_equal(load_text("hdr-comment.conf",
		"[rig] ; the rig\nname = c\n[timing]  # times\n", cfg, path,
		sizeof(path)), 0);
	assert_string_equal(cfg->name, "c");
	/* CRLF line ends are fine */
	assert_int_equal(load_text("crlf.conf",
		"[rig]\r\nname = crlf\r\n[timing]\r\npress_ms = 50\r\n", cfg,
		path, sizeof(path)), 0);
	assert_string_equal(cfg->name, "crlf");
	assert_int_equal(cfg->press_ms, 50);
	/* CR-only line ends are not */
	assert_int_equal(load_text("cr.conf",
		"[rig]\rname = x\r[timing]\rpress_ms = 0\r", cfg, path,
		sizeof(path)), -EINVAL);
	assert_err(path, "1: carriage return without a newline");
	free(cfg);
}

static void on_alarm(int sig)
{
	(void)sig;
	_exit(3);	/* blocked: the test fails */
}

/* Issue 7 §4.7: sbrigd -c FIFO blocked forever in open(). */
static void not_a_regular_file_fails_at_once(void **state)
{
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/fifo.conf",
		 getenv("SBRIG_TMPDIR") ? getenv("SBRIG_TMPDIR") : "/tmp");
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	signal(SIGALRM, on_alarm);
	alarm(10);
	assert_int_equal(sbrig_config_load(path, cfg), -EINVAL);
	alarm(0);
	assert_non_null(strstr(sbrig_errmsg(), "not a regular file"));
	unlink(path);
	assert_int_equal(sbrig_config_load("/dev/null", cfg), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "/dev/null: not a regular file"));
	free(cfg);
}

/*
 * Issue 7 §3: URI syntax was parsed twice (config.c and each transport),
 * with different rules. One check per module, one message each, the same
 * from the config, from the check and from the module that opens it.
 */
static void uri_checks_are_the_modules(void **state)
{
	static const struct { const char *uri; int ok; } link_uris[] = {
		{ "serial:/dev/ttyS1", 1 }, { "serial:/dev/ttyUSB0:115200", 1 },
		{ "tcp:localhost:4000", 1 }, { "tcp:[::1]:4000", 1 },
		{ "tcp:10.0.0.1:65535", 1 }, { "serial:ttyS1", 0 },
		{ "serial:/", 0 }, { "serial:/dev/ttyS1:0", 0 },
		{ "serial:/dev/ttyS1:9999999", 0 }, { "tcp:localhost", 0 },
		{ "tcp::4000", 0 }, { "tcp:host:0", 0 }, { "tcp:host:65536", 0 },
		{ "tcp:a b:1", 0 }, { "tcp:[::1:4000", 0 }, { "usb:1", 0 },
		{ "", 0 },
	};
	static const struct { const char *uri; int ok; } power_uris[] = {
		{ "local:", 1 }, { "ip:rig", 1 }, { "ip:rig:30431", 1 },
		{ "ip:[fe80::1]:30431", 1 }, { "local:x", 0 }, { "ip:", 0 },
		{ "ip:rig:", 0 }, { "ip:rig:x", 0 }, { "usb:1.2.3", 0 },
	};
	char msg[512], conf[600], path[PATH_MAX];
	struct sbrig_config *cfg = malloc(sizeof(*cfg));
	struct sbrig_link *l;
	size_t i;

	for (i = 0; i < sizeof(link_uris) / sizeof(link_uris[0]); i++) {
		int ret = sbrig_link_check_uri(link_uris[i].uri);

		if ((ret == 0) != link_uris[i].ok)
			fail_msg("link '%s': %d %s", link_uris[i].uri, ret,
				 sbrig_errmsg());
		if (!ret || !link_uris[i].uri[0])
			continue;
		snprintf(msg, sizeof(msg), "%s", sbrig_errmsg());
		/* the link itself says the same */
		l = sbrig_link_new(link_uris[i].uri, NULL);
		assert_null(l);
		assert_int_equal(errno, EINVAL);
		assert_true(!strncmp(sbrig_errmsg(), "link: ", 6));
		assert_string_equal(sbrig_errmsg() + 6, msg);
		/* and so does the config, after its position */
		snprintf(conf, sizeof(conf), "[target]\nuri = %s\n",
			 link_uris[i].uri);
		assert_int_equal(load_text("uri.conf", conf, cfg, path,
					   sizeof(path)), -EINVAL);
		assert_true(strstr(sbrig_errmsg(), ":2: target.uri: ") &&
			    !strcmp(strstr(sbrig_errmsg(), ": '") + 2, msg));
	}
	for (i = 0; i < sizeof(power_uris) / sizeof(power_uris[0]); i++) {
		int ret = sbrig_power_check_uri(power_uris[i].uri);

		if ((ret == 0) != power_uris[i].ok)
			fail_msg("power '%s': %d %s", power_uris[i].uri, ret,
				 sbrig_errmsg());
		if (ret)
			assert_true(!strncmp(sbrig_errmsg(), "'", 1));
	}
	assert_int_equal(sbrig_gpio_check_chip("gpiochip0"), 0);
	assert_int_equal(sbrig_gpio_check_chip("qmp:/run/q.sock"), 0);
	assert_int_equal(sbrig_gpio_check_chip("qmp:"), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "'qmp:': expected qmp:PATH"));
	memset(conf, 'x', 120);
	memcpy(conf, "qmp:/", 5);
	conf[120] = '\0';
	assert_int_equal(sbrig_gpio_check_chip(conf), -EINVAL);
	assert_int_equal(load_text("qmp.conf",
		"[key:power]\nchip = qmp:\nline = 116\n", cfg, path,
		sizeof(path)), -EINVAL);
	assert_err(path, "2: key:power.chip: 'qmp:': expected qmp:PATH");
	free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(beaglebone_rig),
		cmocka_unit_test(virtual_rig_has_a_qmp_key_and_charger),
		cmocka_unit_test(defaults_and_hash),
		cmocka_unit_test(bad_configs),
		cmocka_unit_test(overrides),
		cmocka_unit_test(virtual_rig_cannot_add_lines),
		cmocka_unit_test(mutated_files_fail_cleanly),
		cmocka_unit_test(both_readers_agree_on_every_line),
		cmocka_unit_test(not_a_regular_file_fails_at_once),
		cmocka_unit_test(uri_checks_are_the_modules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
