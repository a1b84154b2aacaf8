// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the debugfs text parsers (lib/stats.c): every line of the
 * checked-in fixtures (the module's real output), then hostile input.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/sbrig.h>
#include <sbrig/stats.h>

static FILE *open_fixture(const char *name)
{
	const char *dir = getenv("SBRIG_FIXTURES");
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "../../tests/fixtures",
		 name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot open", path);
	return f;
}

static void stats_fixture(void **state)
{
	struct sbrig_blocker_stats rows[16], r;
	char line[1024];
	int n = 0, headers = 0, ret;
	FILE *f = open_fixture("suspend_blockers.txt");

	while (fgets(line, sizeof(line), f)) {
		ret = sbrig_stats_parse_line(line, &r);
		if (ret < 0)
			fail_msg("'%s': %s", line, sbrig_errmsg());
		if (ret == 1)
			headers++;
		else
			rows[n++] = r;
	}
	fclose(f);
	assert_int_equal(headers, 1);
	assert_int_equal(n, 8);
	assert_string_equal(rows[0].name, "unknown_wakeups");
	assert_int_equal(rows[0].count, 3);
	assert_int_equal(rows[0].wake_count, 3);
	assert_int_equal(rows[0].total_time_ns, 1250427);
	assert_int_equal(rows[0].max_time_ns, 512003);
	assert_int_equal(rows[0].last_change_ns, 118223456789LL);
	assert_string_equal(rows[1].name, "deleted_suspend_blockers");
	assert_int_equal(rows[1].sleep_time_ns, 1200450);
	assert_string_equal(rows[5].name, "rig agent");	/* a space */
	assert_string_equal(rows[7].name, "PowerManagerService");
	assert_int_equal(rows[7].active_since_ns, 2503445667LL);
}

static void events_fixture(void **state)
{
	struct sbrig_event evs[32], e;
	char line[1024];
	int n = 0;
	FILE *f = open_fixture("suspend_blocker_events.txt");

	memset(&e, 0, sizeof(e));
	while (fgets(line, sizeof(line), f)) {
		if (sbrig_event_parse_line(line, &e))
			fail_msg("'%s': %s", line, sbrig_errmsg());
		evs[n++] = e;
	}
	fclose(f);
	assert_int_equal(n, 15);
	assert_string_equal(evs[0].type, "policy");
	assert_string_equal(evs[0].arg, "opportunistic mem");
	assert_int_equal(evs[0].target_t_ns, 4900000000LL);
	assert_int_equal(evs[1].seq, 1);
	assert_string_equal(evs[1].type, "block");
	assert_string_equal(evs[1].arg, "keypad-scan");
	assert_false(evs[1].cut);
	assert_string_equal(evs[5].type, "suspend");
	assert_string_equal(evs[5].arg, "mem");
	assert_string_equal(evs[8].type, "resume");
	assert_string_equal(evs[8].arg, "0");
	assert_string_equal(evs[12].type, "abort");
	assert_string_equal(evs[12].arg, "-16");
	assert_string_equal(evs[13].type, "lost");
	assert_string_equal(evs[13].arg, "3");
	assert_int_equal(evs[14].seq, 16);
	assert_true(evs[14].cut);
	assert_string_equal(evs[14].arg, "a-very-long-blocker-name-that-the-event-log-cuts-after-61-byt");
}

static void host_fields_untouched(void **state)
{
	struct sbrig_event e;

	memset(&e, 0, sizeof(e));
	e.host_t_ns = 42;
	e.uncert_ns = 7;
	strcpy(e.boot_id, "b00t");
	assert_int_equal(sbrig_event_parse_line("3\t100\tunblock\t\"x\"\n", &e), 0);
	assert_int_equal(e.host_t_ns, 42);
	assert_int_equal(e.uncert_ns, 7);
	assert_string_equal(e.boot_id, "b00t");
	assert_int_equal(e.seq, 3);
}

static void names_with_tabs_and_quotes(void **state)
{
	struct sbrig_blocker_stats r;
	struct sbrig_event e;

	memset(&e, 0, sizeof(e));
	assert_int_equal(sbrig_stats_parse_line(
		"\"a\tb \"c\"\"\t1\t0\t0\t5\t0\t5\t9\n", &r), 0);
	assert_string_equal(r.name, "a\tb \"c\"");
	assert_int_equal(sbrig_event_parse_line("1\t2\tblock\t\"x\ty\"", &e), 0);
	assert_string_equal(e.arg, "x\ty");
	/* an empty name is a name */
	assert_int_equal(sbrig_event_parse_line("1\t2\tblock\t\"\"", &e), 0);
	assert_string_equal(e.arg, "");
}

struct bad {
	const char *line;
	const char *msg;
};

static const struct bad bad_stats[] = {
	{ "", "suspend_blockers: 1 columns, expected 8" },
	{ "\t\t\t\t\t\t\t", "column 1 (name): not a quoted name" },
	{ "\"x\"\t1\t2\t3\t4\t5\t6", "7 columns, expected 8" },
	{ "x\t1\t2\t3\t4\t5\t6\t7", "column 1 (name): not a quoted name" },
	{ "\"\t1\t2\t3\t4\t5\t6\t7", "column 1 (name): not a quoted name" },
	{ "\"x\"\t-1\t2\t3\t4\t5\t6\t7", "column 2 (count): '-1'" },
	{ "\"x\"\t4294967296\t2\t3\t4\t5\t6\t7", "column 2 (count)" },
	{ "\"x\"\t1\t\t3\t4\t5\t6\t7", "column 3 (wake_count)" },
	{ "\"x\"\t1\t2\t3\t4\t5\t6\t9223372036854775808", "column 8 (last_change)" },
	{ "\"x\"\t1\t2\t3\t4\t5\t6\t99999999999999999999999", "column 8 (last_change)" },
	{ "\"x\"\t1\t2\t3\t4x\t5\t6\t7", "column 5 (total_time): '4x'" },
	{ "\"x\"\t1\t2\t3\t4\t5\t6\t7 ", "column 8 (last_change)" },
	{ "\"x\"\t1\t2\t3\t4\t5\t-\t7", "column 7 (max_time)" },
	{ "name\tcount", "2 columns, expected 8" },
};

static const struct bad bad_events[] = {
	{ "", "no tab after field 1 (seq)" },
	{ "1\t2", "no tab after field 2 (t_ns)" },
	{ "1\t2\tblock", "no tab after field 3 (type)" },
	{ "x\t2\tblock\t\"a\"", "field 1 (seq): not a number" },
	{ "-1\t2\tblock\t\"a\"", "field 1 (seq): not a number" },
	{ "1\t\tblock\t\"a\"", "field 2 (t_ns): not a number" },
	{ "1\t2\tblok\t\"a\"", "field 3 (type): unknown type 'blok'" },
	{ "1\t2\t\t\"a\"", "field 3 (type): unknown type ''" },
	{ "1\t2\tblock\ta", "field 4 (arg): block expects a quoted blocker name" },
	{ "1\t2\tblock\t\"a", "field 4 (arg): block expects" },
	{ "1\t2\tblock\t\"", "field 4 (arg): block expects" },
	{ "1\t2\tblock\t\"+", "field 4 (arg): block expects" },
	{ "1\t2\tunblock\t\"a\"++", "field 4 (arg): unblock expects" },
	{ "1\t2\tsuspend\t", "field 4 (arg): suspend expects a state name" },
	{ "1\t2\tenter\tmem mem", "field 4 (arg): enter expects" },
	{ "1\t2\tresume\tok", "field 4 (arg): resume expects a return code" },
	{ "1\t2\tabort\t99999999999", "field 4 (arg): abort expects" },
	{ "1\t2\tpolicy\topportunistic", "field 4 (arg): policy expects" },
	{ "1\t2\tpolicy\tlazy mem", "field 4 (arg): policy expects" },
	{ "1\t2\tpolicy\tforced ", "field 4 (arg): policy expects" },
	{ "1\t2\tlost\t0", "field 4 (arg): lost expects a record count" },
	{ "1\t2\tlost\t-3", "field 4 (arg): lost expects" },
};

static void malformed_lines(void **state)
{
	struct sbrig_blocker_stats r;
	struct sbrig_event e;
	size_t i;

	memset(&e, 0, sizeof(e));
	for (i = 0; i < sizeof(bad_stats) / sizeof(bad_stats[0]); i++) {
		if (sbrig_stats_parse_line(bad_stats[i].line, &r) != -EINVAL ||
		    !strstr(sbrig_errmsg(), bad_stats[i].msg))
			fail_msg("stats '%s': got '%s', want '%s'",
				 bad_stats[i].line, sbrig_errmsg(),
				 bad_stats[i].msg);
	}
	for (i = 0; i < sizeof(bad_events) / sizeof(bad_events[0]); i++) {
		if (sbrig_event_parse_line(bad_events[i].line, &e) != -EINVAL ||
		    !strstr(sbrig_errmsg(), bad_events[i].msg))
			fail_msg("event '%s': got '%s', want '%s'",
				 bad_events[i].line, sbrig_errmsg(),
				 bad_events[i].msg);
	}
}

static void long_names(void **state)
{
	char *line = malloc(1 << 20);
	struct sbrig_blocker_stats r;
	struct sbrig_event e;

	/* longest name that fits, then one byte more */
	line[0] = '"';
	memset(line + 1, 'n', SBRIG_NAME_MAX - 1);
	strcpy(line + SBRIG_NAME_MAX, "\"\t1\t2\t3\t4\t5\t6\t7\n");
	assert_int_equal(sbrig_stats_parse_line(line, &r), 0);
	assert_int_equal(strlen(r.name), SBRIG_NAME_MAX - 1);
	line[0] = '"';
	memset(line + 1, 'n', SBRIG_NAME_MAX);
	strcpy(line + SBRIG_NAME_MAX + 1, "\"\t1\t2\t3\t4\t5\t6\t7\n");
	assert_int_equal(sbrig_stats_parse_line(line, &r), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "longer than"));

	/* a megabyte of tabs and quotes */
	memset(line, '\t', (1 << 20) - 1);
	line[(1 << 20) - 1] = '\0';
	assert_int_equal(sbrig_stats_parse_line(line, &r), -EINVAL);
	memset(&e, 0, sizeof(e));
	assert_int_equal(sbrig_event_parse_line(line, &e), -EINVAL);
	memset(line, '"', (1 << 20) - 1);
	assert_int_equal(sbrig_stats_parse_line(line, &r), -EINVAL);
	memcpy(line, "1\t2\tblock\t", 10);
	assert_int_equal(sbrig_event_parse_line(line, &e), -EINVAL);
	free(line);
}

/* Random bytes and damaged fixture lines: a result or -EINVAL, nothing else. */
static void random_input(void **state)
{
	static const char *const seeds[] = {
		"\"main\"\t2\t0\t0\t61234567890\t0\t60012345678\t60512345678\n",
		"16\t9100400000\tblock\t\"a-very-long\"+\n",
		"0\t4900000000\tpolicy\topportunistic mem\n",
		"13\t9100300000\tlost\t3\n",
	};
	static const char alphabet[] = "\t\"+-0123456789 \nabx";
	unsigned int seed = 7, i, j;
	char line[128];

	for (i = 0; i < 20000; i++) {
		struct sbrig_blocker_stats r;
		struct sbrig_event e;
		size_t n;
		int ret;

		strcpy(line, seeds[i % 4]);
		n = strlen(line);
		for (j = 0; j < 1 + i % 5; j++) {
			unsigned int pos = rand_r(&seed) % n;

			line[pos] = i % 3 ? alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)] :
				    (char)(1 + rand_r(&seed) % 255);
		}
		memset(&e, 0, sizeof(e));
		ret = sbrig_stats_parse_line(line, &r);
		assert_true(ret == 0 || ret == 1 || ret == -EINVAL);
		ret = sbrig_event_parse_line(line, &e);
		assert_true(ret == 0 || ret == -EINVAL);
		if (!ret)
			assert_true(strlen(e.arg) < sizeof(e.arg));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stats_fixture),
		cmocka_unit_test(events_fixture),
		cmocka_unit_test(host_fields_untouched),
		cmocka_unit_test(names_with_tabs_and_quotes),
		cmocka_unit_test(malformed_lines),
		cmocka_unit_test(long_names),
		cmocka_unit_test(random_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
