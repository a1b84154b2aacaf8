// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the history's change points (history/steps.c): a clean
 * step is found at its commit with its medians, provisional while a
 * window is not full; a run of candidates gives one change point (a local
 * maximum of |t|); noise-free series (zero variance) and too few commits;
 * the minimum change; two steps far apart, closer than two windows, closer than one;
 * t over the commits' medians (one wild run does not make a step).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../history/internal.h"	/* lib/ has an internal.h too */

#define N 30

/* @n commits of @per runs: base @lo, @hi from commit @at on, +-@jit */
static struct hi_point *series(size_t n, size_t per, size_t at, double lo,
			       double hi, double jit)
{
	struct hi_point *p = calloc(n, sizeof(*p));

	for (size_t i = 0; i < n; i++) {
		p[i].values = calloc(per, sizeof(double));
		p[i].n = per;
		for (size_t j = 0; j < per; j++)	/* sorted: j rises */
			p[i].values[j] = (i >= at ? hi : lo) +
					 jit * ((double)j - (double)(per - 1) / 2);
	}
	return p;
}

static void free_series(struct hi_point *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i].values);
	free(p);
}

static const struct hi_step_rule rule = {
	.window = 5, .t_threshold = 7, .min_change = 0.03, .min_abs = 0,
};

static void step_found_at_its_commit(void **state)
{
	for (size_t at = 1; at < N; at++) {
		struct hi_point *p = series(N, 3, at, 100, 105, 0.5);
		struct hi_step *s;
		long n = hi_find_steps(p, N, &rule, &s);

		free_series(p, N);
		/* fewer than 3 commits a side: no t */
		if (at < 3 || at > N - 3) {
			assert_int_equal(n, 0);
			continue;
		}
		assert_int_equal(n, 1);
		assert_int_equal(s[0].at, at);
		assert_true(s[0].before == 100 && s[0].after == 105);
		assert_true(s[0].t > 7);
		assert_int_equal(s[0].nbefore, at < 5 ? at : 5);
		assert_int_equal(s[0].nafter, N - at < 5 ? N - at : 5);
		/* full windows, or provisional */
		assert_true(s[0].provisional == (at < 5 || at > N - 5));
		free(s);
	}
}

static void noisy_step_at_the_local_maximum(void **state)
{
	/* one step, noisy commits: candidates around it, one change point */
	struct hi_point *p = series(N, 3, 13, 100, 110, 1);
	struct hi_step *s;

	for (size_t i = 0; i < N; i++)	/* commits' medians +-1 */
		for (size_t j = 0; j < 3; j++)
			p[i].values[j] += (double)((i * 7) % 3) - 1;
	assert_int_equal(hi_find_steps(p, N, &rule, &s), 1);
	assert_int_equal(s[0].at, 13);
	assert_false(s[0].provisional);
	free(s);
	free_series(p, N);
}

static void two_steps_closer_than_two_windows(void **state)
{
	/*
	 * up at 10, up again at 15 (window 5): every commit between them is
	 * a candidate, one run of them; each step is a local maximum of |t|
	 */
	for (size_t gap = 5; gap <= 8; gap++) {
		struct hi_point *p = series(N, 3, 10, 100, 110, 0.5);
		struct hi_step *s;

		for (size_t i = 0; i < N; i++)	/* a little noise */
			for (size_t j = 0; j < 3; j++)
				p[i].values[j] += (double)(i % 2) * 0.4 +
						  (i >= 10 + gap ? 10 : 0);
		assert_int_equal(hi_find_steps(p, N, &rule, &s), 2);
		assert_int_equal(s[0].at, 10);
		assert_int_equal(s[1].at, 10 + gap);
		assert_true(s[0].t > 0 && s[1].t > 0);
		free(s);
		free_series(p, N);
	}
}

static void two_steps_closer_than_a_window(void **state)
{
	/*
	 * up at 10, again at 13 (window 5, |t| >= 4): the candidates 10..13
	 * are one run, and both steps are local maxima of |t| (5.0 at 10,
	 * 4.3 and 4.5 between, 6.6 at 13)
	 */
	struct hi_step_rule r4 = rule;
	struct hi_point *p = series(N, 3, 10, 100, 110, 0.5);
	struct hi_step *s;

	r4.t_threshold = 4;
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < 3; j++)
			p[i].values[j] += (double)(i % 2) * 0.4 +
					  (i >= 13 ? 12 : 0);
	assert_int_equal(hi_find_steps(p, N, &r4, &s), 2);
	assert_int_equal(s[0].at, 10);
	assert_int_equal(s[1].at, 13);
	assert_true(fabs(s[0].t - 5.0) < 0.05 && fabs(s[1].t - 6.6) < 0.05);
	free(s);
	free_series(p, N);
}

static void one_wild_run_is_not_a_step(void **state)
{
	/*
	 * flat commits of 3 runs; one run of each of commits 15..17 far
	 * off: their medians do not move (t over all runs would see it)
	 */
	struct hi_point *p = series(N, 3, 0, 100, 100, 0.5);
	struct hi_step *s = (void *)1;

	for (size_t i = 0; i < N; i++)
		p[i].values[1] += (double)(i % 3) * 0.1;
	for (size_t i = 15; i < 18; i++)
		p[i].values[2] = 1000;
	assert_int_equal(hi_find_steps(p, N, &rule, &s), 0);
	assert_null(s);
	free_series(p, N);
}

static void zero_variance_and_a_step_down(void **state)
{
	struct hi_point *p = series(N, 2, 10, 100, 90, 0);
	struct hi_step *s;

	assert_int_equal(hi_find_steps(p, N, &rule, &s), 1);
	assert_int_equal(s[0].at, 10);
	assert_true(isinf(s[0].t) && s[0].t < 0);
	free(s);
	free_series(p, N);
}

static void flat_and_small_changes_are_no_step(void **state)
{
	struct hi_point *p = series(N, 3, 0, 100, 100, 0.5);
	struct hi_step *s = (void *)1;

	assert_int_equal(hi_find_steps(p, N, &rule, &s), 0);
	assert_null(s);
	free_series(p, N);
	/* significant (t large) but under min_change: no step */
	p = series(N, 3, 15, 100, 102, 0.01);
	assert_int_equal(hi_find_steps(p, N, &rule, &s), 0);
	free_series(p, N);
	/* min_abs counts too */
	p = series(N, 3, 15, 100, 110, 0.5);
	assert_int_equal(hi_find_steps(p, N, &(struct hi_step_rule){
		.window = 5, .t_threshold = 7, .min_abs = 20 }, &s), 0);
	free_series(p, N);
}

static void one_run_per_commit_needs_two_per_window(void **state)
{
	struct hi_point *p = series(N, 1, 15, 100, 105, 0);
	struct hi_step *s;

	/* window 1: one run a side, no variance to test: nothing */
	assert_int_equal(hi_find_steps(p, N, &(struct hi_step_rule){
		.window = 1, .t_threshold = 7, .min_change = 0.03 }, &s), 0);
	/* window 5: five runs a side */
	assert_int_equal(hi_find_steps(p, N, &rule, &s), 1);
	assert_int_equal(s[0].at, 15);
	free(s);
	free_series(p, N);
	assert_int_equal(hi_find_steps(NULL, 0, &rule, &s), 0);
}

static void two_steps_far_apart(void **state)
{
	struct hi_point *p = series(N, 3, 8, 100, 105, 0.5);
	struct hi_step *s;

	for (size_t i = 20; i < N; i++)
		for (size_t j = 0; j < 3; j++)
			p[i].values[j] -= 10;
	assert_int_equal(hi_find_steps(p, N, &rule, &s), 2);
	assert_int_equal(s[0].at, 8);
	assert_int_equal(s[1].at, 20);
	assert_true(s[1].before == 105 && s[1].after == 95);
	free(s);
	free_series(p, N);
}

static void median_of_sorted(void **state)
{
	double a[] = { 1, 2, 3 }, b[] = { 1, 2, 3, 4 };

	assert_true(hi_median(a, 3) == 2);
	assert_true(hi_median(b, 4) == 2.5);
	assert_true(isnan(hi_median(a, 0)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(step_found_at_its_commit),
		cmocka_unit_test(noisy_step_at_the_local_maximum),
		cmocka_unit_test(two_steps_closer_than_two_windows),
		cmocka_unit_test(two_steps_closer_than_a_window),
		cmocka_unit_test(one_wild_run_is_not_a_step),
		cmocka_unit_test(zero_variance_and_a_step_down),
		cmocka_unit_test(flat_and_small_changes_are_no_step),
		cmocka_unit_test(one_run_per_commit_needs_two_per_window),
		cmocka_unit_test(two_steps_far_apart),
		cmocka_unit_test(median_of_sorted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
