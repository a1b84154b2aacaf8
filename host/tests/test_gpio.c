// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for lib/gpio.c that need no GPIO chip: a config naming a chip
 * that does not exist fails with a message naming the chip and the line,
 * and an empty config gives an object with no lines. Real lines (gpio-sim)
 * are exercised by tests/test_host_interface.py in an amd64 guest.
 */
#include <errno.h>
#include <setjmp.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(missing_chip_by_label_names_chip_and_line),
		cmocka_unit_test(missing_chip_by_path_names_chip_and_line),
		cmocka_unit_test(no_lines_no_event_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
