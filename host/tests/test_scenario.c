// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the scenario parser (lib/scenario.c): the example
 * scenarios in rig/scenarios/, every step kind, loop matching, and the
 * file:line:col of each kind of error.
 */
#include <dirent.h>
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
#include <sbrig/scenario.h>

static const char *fixtures(void)
{
	const char *f = getenv("SBRIG_FIXTURES");

	return f ? f : "../../tests/fixtures";
}

static struct sbrig_scenario *parse_ok(const char *text)
{
	struct sbrig_scenario *sc = sbrig_scenario_parse(text, "t.scn");

	if (!sc)
		fail_msg("'%s': %s", text, sbrig_errmsg());
	return sc;
}

static void durations(void **state)
{
	int64_t ns;

	assert_int_equal(sbrig_parse_duration("250ms", &ns), 0);
	assert_int_equal(ns, 250000000);
	assert_int_equal(sbrig_parse_duration("2s", &ns), 0);
	assert_int_equal(ns, 2000000000);
	assert_int_equal(sbrig_parse_duration("10us", &ns), 0);
	assert_int_equal(ns, 10000);
	assert_int_equal(sbrig_parse_duration("5ns", &ns), 0);
	assert_int_equal(ns, 5);
	assert_int_equal(sbrig_parse_duration("0s", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(sbrig_parse_duration("9223372036s", &ns), 0);
	assert_int_equal(sbrig_parse_duration("9223372037s", &ns), -EINVAL);
	assert_int_equal(sbrig_parse_duration("99999999999999999999ns", &ns), -EINVAL);
	assert_int_equal(sbrig_parse_duration("10", &ns), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "missing unit"));
	assert_int_equal(sbrig_parse_duration("10m", &ns), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "unknown unit"));
	assert_int_equal(sbrig_parse_duration("-1s", &ns), -EINVAL);
	assert_int_equal(sbrig_parse_duration("", &ns), -EINVAL);
	assert_int_equal(sbrig_parse_duration("1.5s", &ns), -EINVAL);
	assert_int_equal(sbrig_parse_duration("1 s", &ns), -EINVAL);
}

static void every_step(void **state)
{
	struct sbrig_scenario *sc = parse_ok(
		"# comment\n"
		"\n"
		"name all-steps   # trailing comment\n"
		"settle 1s\n"
		"press power\n"
		"press volume-up 250ms\n"
		"plug\n"
		"unplug\n"
		"hold \"rig agent\" 2s\n"
		"burn 10ms\n"
		"wait event suspend\n"
		"wait event block \"keypad-scan\" timeout 3s\n"
		"wait edge marker rising timeout 500ms\n"
		"\twait edge marker falling\r\n"
		"wait asleep\n"
		"wait asleep timeout 30s\n"
		"settle\n");
	struct sbrig_step *s = sc->steps;

	assert_string_equal(sc->name, "all-steps");
	assert_string_equal(sc->path, "t.scn");
	assert_int_equal(strlen(sc->sha256), 64);
	assert_int_equal(sc->nsteps, 14);
	/* settle without a duration: the rig's settle_ms */
	assert_int_equal(s[13].op, SBRIG_STEP_SETTLE);
	assert_true(s[13].rig_default);
	assert_false(s[0].rig_default);
	assert_int_equal(s[0].op, SBRIG_STEP_SETTLE);
	assert_int_equal(s[0].duration_ns, 1000000000);
	assert_int_equal(s[0].line, 4);
	assert_int_equal(s[1].op, SBRIG_STEP_PRESS);
	assert_string_equal(s[1].name, "power");
	assert_int_equal(s[1].duration_ns, 0);	/* rig default */
	assert_true(s[1].rig_default);
	assert_int_equal(s[2].duration_ns, 250000000);
	assert_int_equal(s[3].op, SBRIG_STEP_PLUG);
	assert_int_equal(s[4].op, SBRIG_STEP_UNPLUG);
	assert_int_equal(s[5].op, SBRIG_STEP_HOLD);
	assert_string_equal(s[5].name, "rig agent");
	assert_int_equal(s[5].duration_ns, 2000000000);
	assert_int_equal(s[6].op, SBRIG_STEP_BURN);
	assert_int_equal(s[7].op, SBRIG_STEP_WAIT_EVENT);
	assert_string_equal(s[7].name, "suspend");
	assert_string_equal(s[7].arg, "");
	assert_int_equal(s[7].timeout_ns, 0);
	assert_string_equal(s[8].name, "block");
	assert_string_equal(s[8].arg, "keypad-scan");
	assert_int_equal(s[8].timeout_ns, 3000000000);
	assert_int_equal(s[9].op, SBRIG_STEP_WAIT_EDGE);
	assert_string_equal(s[9].name, "marker");
	assert_true(s[9].rising);
	assert_int_equal(s[9].timeout_ns, 500000000);
	assert_false(s[10].rising);
	assert_int_equal(s[10].line, 14);
	assert_int_equal(s[11].op, SBRIG_STEP_WAIT_ASLEEP);
	assert_int_equal(s[11].timeout_ns, 0);
	assert_int_equal(s[12].op, SBRIG_STEP_WAIT_ASLEEP);
	assert_int_equal(s[12].timeout_ns, 30000000000);
	sbrig_scenario_free(sc);
}

/* The kernel's activity in the event log can be waited for too. */
static void waits_for_kernel_activity(void **state)
{
	struct sbrig_scenario *sc = parse_ok(
		"wait event ws_activate \"test_ac\" timeout 5s\n"
		"wait event ws_relax \"test_ac\"\n"
		"wait event phase \"machine_suspend 3 end\"\n"
		"wait event dev_pm\n");
	struct sbrig_step *s = sc->steps;

	assert_int_equal(sc->nsteps, 4);
	assert_int_equal(s[0].op, SBRIG_STEP_WAIT_EVENT);
	assert_string_equal(s[0].name, "ws_activate");
	assert_string_equal(s[0].arg, "test_ac");
	assert_int_equal(s[0].timeout_ns, 5000000000);
	assert_string_equal(s[1].name, "ws_relax");
	assert_string_equal(s[2].name, "phase");
	assert_string_equal(s[2].arg, "machine_suspend 3 end");
	assert_string_equal(s[3].name, "dev_pm");
	assert_string_equal(s[3].arg, "");
	sbrig_scenario_free(sc);
}

/*
 * sbrig_step_describe(): the text sbrigd's engine.c describe() printed
 * (progress lines must not change when the daemon switches to it), and
 * the same without " timeout D" (it used to be cut off with strstr).
 */
static void steps_described_as_the_daemon_did(void **state)
{
	struct sbrig_scenario *sc = parse_ok(
		"settle 1s\n"
		"press power\n"
		"press volume-up 250ms\n"
		"plug\n"
		"unplug\n"
		"hold \"rig agent\" 2s\n"
		"burn 10ms\n"
		"wait event suspend\n"
		"wait event block \"keypad-scan\" timeout 3s\n"
		"wait edge marker rising timeout 500ms\n"
		"wait edge marker falling\n"
		"wait asleep\n"
		"wait asleep timeout 30s\n"
		"repeat 3\n"
		"settle 1500ns\n"
		"settle 0s\n"
		"end\n"
		"settle\n");
	static const char *const with[] = {
		"settle 1s", "press power default", "press volume-up 250ms",
		"plug", "unplug", "hold \"rig agent\" 2s", "burn 10ms",
		"wait event suspend timeout 10s",
		"wait event block \"keypad-scan\" timeout 3s",
		"wait edge marker rising timeout 500ms",
		"wait edge marker falling timeout 10s",
		"wait asleep timeout 10s", "wait asleep timeout 30s", "repeat 3",
		"settle 1500ns", "settle 0s", "end", "settle default",
	};
	static const char *const without[] = {
		[7] = "wait event suspend",
		[8] = "wait event block \"keypad-scan\"",
		[9] = "wait edge marker rising",
		[10] = "wait edge marker falling",
		[11] = "wait asleep", [12] = "wait asleep",
	};
	char buf[128];
	size_t i;

	assert_int_equal(sc->nsteps, sizeof(with) / sizeof(with[0]));
	for (i = 0; i < sc->nsteps; i++) {
		assert_int_equal(sbrig_step_describe(&sc->steps[i], true, buf,
						     sizeof(buf)),
				 strlen(with[i]));
		assert_string_equal(buf, with[i]);
		sbrig_step_describe(&sc->steps[i], false, buf, sizeof(buf));
		assert_string_equal(buf, i < sizeof(without) / sizeof(*without) &&
				    without[i] ? without[i] : with[i]);
	}
	/* cut like snprintf, the full length returned */
	assert_int_equal(sbrig_step_describe(&sc->steps[8], true, buf, 10),
			 strlen(with[8]));
	assert_string_equal(buf, "wait even");
	assert_int_equal(sbrig_format_duration(90 * 1000000000LL, buf,
					       sizeof(buf)), 3);
	assert_string_equal(buf, "90s");
	sbrig_scenario_free(sc);
}

/*
 * policy and state: the agent's words (sbrig/proto.h), a timeout on state,
 * described as the progress lines show them.
 */
static void policy_and_state_steps(void **state)
{
	struct sbrig_scenario *sc = parse_ok(
		"policy opportunistic\n"
		"state mem\n"
		"state freeze timeout 30s\n"
		"state on\n"
		"policy forced\n"
		"state standby timeout 500ms\n");
	static const char *const want[] = {
		"policy opportunistic", "state mem timeout 10s",
		"state freeze timeout 30s", "state on timeout 10s",
		"policy forced", "state standby timeout 500ms",
	};
	struct sbrig_step *s = sc->steps;
	char buf[128];
	size_t i;

	assert_int_equal(sc->nsteps, 6);
	assert_int_equal(s[0].op, SBRIG_STEP_POLICY);
	assert_string_equal(s[0].name, "opportunistic");
	assert_int_equal(s[1].op, SBRIG_STEP_STATE);
	assert_string_equal(s[1].name, "mem");
	assert_int_equal(s[1].timeout_ns, 0);
	assert_int_equal(s[2].timeout_ns, 30000000000);
	assert_string_equal(s[3].name, "on");
	assert_string_equal(s[4].name, "forced");
	assert_int_equal(s[5].timeout_ns, 500000000);
	for (i = 0; i < sc->nsteps; i++) {
		sbrig_step_describe(&s[i], true, buf, sizeof(buf));
		assert_string_equal(buf, want[i]);
	}
	sbrig_step_describe(&s[2], false, buf, sizeof(buf));
	assert_string_equal(buf, "state freeze");
	sbrig_scenario_free(sc);
}

/*
 * Issue 7 §4.7: a NUL byte in a run body cut the scenario short silently
 * (parsed with strlen), and its sha256 covered only the part parsed.
 */
static void parse_buf_takes_every_byte(void **state)
{
	static const char text[] = "settle 1s\npress po\0wer\nsettle 2s\n";
	static const char good[] = "settle 1s\n# a comment at the end";
	struct sbrig_scenario *sc;

	sc = sbrig_scenario_parse_buf(text, sizeof(text) - 1, "body.scn");
	assert_null(sc);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(sbrig_errmsg(),
			    "body.scn:2:9: NUL byte (a scenario is text)");
	/* the hash is that of every byte given (sha256sum of @good) */
	sc = sbrig_scenario_parse_buf(good, sizeof(good) - 1, "good.scn");
	assert_non_null(sc);
	assert_int_equal(sc->nsteps, 1);
	assert_string_equal(sc->sha256,
		"e1de49a1d14e54c9d6c5544f48d60f38cbe477c35ecc616288b85d00cbfb1bd6");
	sbrig_scenario_free(sc);
	/* not NUL-terminated: nothing past @len is read (ASan checks) */
	{
		char *copy = malloc(9);

		memcpy(copy, "settle 1s", 9);
		sc = sbrig_scenario_parse_buf(copy, 9, "exact.scn");
		assert_non_null(sc);
		assert_int_equal(sc->steps[0].duration_ns, 1000000000);
		sbrig_scenario_free(sc);
		free(copy);
	}
	assert_null(sbrig_scenario_parse_buf(NULL, 0, "empty.scn"));
	assert_string_equal(sbrig_errmsg(), "empty.scn: no steps");
}

static void nested_repeats_match(void **state)
{
	char path[PATH_MAX];
	struct sbrig_scenario *sc;

	snprintf(path, sizeof(path), "%s/scenarios/good_nested.scn", fixtures());
	sc = sbrig_scenario_load(path);
	assert_non_null(sc);
	/* 0 repeat 2, 1 repeat 3, 2 press, 3 end, 4 settle, 5 end */
	assert_int_equal(sc->nsteps, 6);
	assert_string_equal(sc->name, "good_nested");	/* no name directive */
	assert_int_equal(sc->steps[0].op, SBRIG_STEP_REPEAT);
	assert_int_equal(sc->steps[0].count, 2);
	assert_int_equal(sc->steps[0].match, 5);
	assert_int_equal(sc->steps[5].match, 0);
	assert_int_equal(sc->steps[1].count, 3);
	assert_int_equal(sc->steps[1].match, 3);
	assert_int_equal(sc->steps[3].op, SBRIG_STEP_END);
	assert_int_equal(sc->steps[3].match, 1);
	sbrig_scenario_free(sc);
}

static void example_scenarios_parse(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/../../rig/scenarios", fixtures());
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		struct sbrig_scenario *sc;
		size_t len = strlen(de->d_name);

		if (len < 5 || strcmp(de->d_name + len - 4, ".scn"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		sc = sbrig_scenario_load(path);
		if (!sc)
			fail_msg("%s", sbrig_errmsg());
		assert_true(sc->nsteps > 0);
		sbrig_scenario_free(sc);
		n++;
	}
	closedir(d);
	assert_true(n >= 3);
}

struct bad {
	const char *text;
	const char *msg;	/* after "t.scn:" */
};

static const struct bad bad_cases[] = {
	{ "dance 1s\n", "1:1: expected a step (settle press plug unplug hold burn policy state wait repeat end), got 'dance'" },
	{ "policy\n", "1:7: expected a policy (forced opportunistic)" },
	{ "policy sometimes\n", "1:8: expected a policy (forced opportunistic)" },
	{ "policy \"forced\"\n", "1:8: expected a policy" },
	{ "policy forced now\n", "1:15: expected end of line, got 'now'" },
	{ "state\n", "1:6: expected a state (on mem standby freeze)" },
	{ "state disk\n", "1:7: expected a state (on mem standby freeze)" },
	{ "state MEM\n", "1:7: expected a state" },
	{ "state mem 2s\n", "1:11: expected end of line, got '2s'" },
	{ "state mem timeout\n", "1:18: expected a duration" },
	{ "state mem timeout 0s\n", "1:19: expected a duration above 0" },
	{ "settle x\n", "1:8: expected a duration with a unit" },
	{ "settle 10\n", "1:8: expected a duration with a unit" },
	{ "  settle 1h\n", "1:10: expected a duration with a unit" },
	{ "settle 1s 2s\n", "1:11: expected end of line, got '2s'" },
	{ "press\n", "1:6: expected a key name" },
	{ "press \"power\"\n", "1:7: expected a key name" },
	{ "press power 0ms\n", "1:13: expected a duration above 0" },
	{ "plug now\n", "1:6: expected end of line, got 'now'" },
	{ "hold main 1s\n", "1:6: expected a blocker name in double quotes" },
	{ "hold \"main 1s\n", "1:6: expected a closing '\"'" },
	{ "hold \"\" 1s\n", "1:6: expected a blocker name in double quotes" },
	{ "hold \"main\"1s\n", "1:12: expected a space after the quoted name" },
	{ "hold \"main\"\n", "1:12: expected a duration" },
	{ "burn\n", "1:5: expected a duration" },
	{ "wait\n", "1:5: expected 'event', 'edge' or 'asleep'" },
	{ "wait for 1s\n", "1:6: expected 'event', 'edge' or 'asleep'" },
	{ "wait asleep 1s\n", "1:13: expected end of line, got '1s'" },
	{ "wait asleep timeout\n", "1:20: expected a duration" },
	{ "wait asleep timeout 0s\n", "1:21: expected a duration above 0" },
	{ "wait event wakeup\n", "1:12: expected an event type" },
	{ "wait event block \"x\" timeout\n", "1:29: expected a duration" },
	{ "wait event block \"x\" after 1s\n", "1:22: expected end of line, got 'after'" },
	{ "wait edge marker up\n", "1:18: expected 'rising' or 'falling'" },
	{ "wait edge\n", "1:10: expected a line name" },
	{ "repeat\n", "1:7: expected a count (1-1000000)" },
	{ "repeat 0\nend\n", "1:8: expected a count" },
	{ "repeat -1\nend\n", "1:8: expected a count" },
	{ "repeat 1000001\nend\n", "1:8: expected a count" },
	{ "end\n", "1:1: 'end' without 'repeat'" },
	{ "settle 1s\nrepeat 2\n  settle 1s\n", "2:1: 'repeat' without 'end'" },
	{ "repeat 1\nrepeat 1\nrepeat 1\nrepeat 1\nrepeat 1\nrepeat 1\nrepeat 1\nrepeat 1\n"
	  "  repeat 1\n", "9:3: expected at most 8 nested repeats" },
	{ "settle 1s\nname late\n", "2:1: expected 'name' once, before the first step" },
	{ "name a\nname b\n", "2:1: expected 'name' once" },
	{ "name\n", "1:5: expected a scenario name" },
	{ "name \"x\"\n", "1:6: expected a scenario name" },
	{ "settle\x01 1s\n", "1:7: control character 0x01" },
	{ "a b c d e f g h i j k l m n o p q\n", "1:33: expected end of line (too many words)" },
	{ "", " no steps" },
	{ "# only comments\n\n", " no steps" },
};

static void errors_name_line_and_column(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct sbrig_scenario *sc;
		char want[300];

		errno = 0;
		sc = sbrig_scenario_parse(bad_cases[i].text, "t.scn");
		snprintf(want, sizeof(want), "t.scn:%s", bad_cases[i].msg);
		if (sc || errno != EINVAL ||
		    strncmp(sbrig_errmsg(), want, strlen(want)))
			fail_msg("'%s': got %p errno %d '%s', want '%s'",
				 bad_cases[i].text, (void *)sc, errno,
				 sbrig_errmsg(), want);
	}
}

static void file_errors(void **state)
{
	char path[PATH_MAX], want[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/scenarios/bad_duration.scn", fixtures());
	assert_null(sbrig_scenario_load(path));
	assert_int_equal(errno, EINVAL);
	snprintf(want, sizeof(want), "%s:4:15: expected a duration with a unit (e.g. 250ms, 2s)", path);
	assert_string_equal(sbrig_errmsg(), want);

	snprintf(path, sizeof(path), "%s/scenarios/bad_unclosed.scn", fixtures());
	assert_null(sbrig_scenario_load(path));
	snprintf(want, sizeof(want), "%s:2:1: 'repeat' without 'end'", path);
	assert_string_equal(sbrig_errmsg(), want);

	assert_null(sbrig_scenario_load("/nonexistent/x.scn"));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(sbrig_errmsg(),
			    "/nonexistent/x.scn: No such file or directory");
	sbrig_scenario_free(NULL);
}

static void random_text(void **state)
{
	static const char *const words[] = {
		"settle", "press", "plug", "unplug", "hold", "burn", "wait",
		"event", "edge", "asleep", "repeat", "end", "timeout", "rising", "falling",
		"\"x y\"", "\"", "1s", "0ms", "3", "power", "name", "#", "\n",
		"\t", "block", "99999999999999999999s", "\r", "policy", "state",
		"mem", "opportunistic", "on",
	};
	unsigned int seed = 3, i, j;
	char text[512];

	for (i = 0; i < 20000; i++) {
		struct sbrig_scenario *sc;
		size_t n = 0;

		for (j = 0; j < 1 + i % 40; j++) {
			const char *w = words[rand_r(&seed) % (sizeof(words) / sizeof(words[0]))];

			n += snprintf(text + n, sizeof(text) - n, "%s ", w);
			if (n >= sizeof(text) - 1)
				break;
		}
		sc = sbrig_scenario_parse(text, "fuzz");
		if (sc) {
			size_t k;

			for (k = 0; k < sc->nsteps; k++)
				if (sc->steps[k].op == SBRIG_STEP_REPEAT)
					assert_int_equal(sc->steps[sc->steps[k].match].match, k);
		} else {
			assert_int_equal(errno, EINVAL);
			assert_true(!strncmp(sbrig_errmsg(), "fuzz:", 5));
		}
		sbrig_scenario_free(sc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(steps_described_as_the_daemon_did),
		cmocka_unit_test(parse_buf_takes_every_byte),
		cmocka_unit_test(durations),
		cmocka_unit_test(every_step),
		cmocka_unit_test(waits_for_kernel_activity),
		cmocka_unit_test(policy_and_state_steps),
		cmocka_unit_test(nested_repeats_match),
		cmocka_unit_test(example_scenarios_parse),
		cmocka_unit_test(errors_name_line_and_column),
		cmocka_unit_test(file_errors),
		cmocka_unit_test(random_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
