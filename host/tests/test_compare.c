// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for sbrig compare's statistics (analysis/compare-stats.c)
 * and its thresholds file (analysis/compare-config.c): values checked
 * against the textbook (the exact U distribution, scipy's asymptotic
 * Mann-Whitney with continuity correction, normal quantiles), the
 * verdict rule's branches, and the file's errors.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "compare-stats.h"

static void median_odd_even(void **state)
{
	double a[] = { 3, 1, 2 }, b[] = { 4, 1, 3, 2 };

	assert_true(cs_median(a, 3) == 2);
	assert_true(cs_median(b, 4) == 2.5);
	assert_true(isnan(cs_median(b, 0)));
}

static void mann_whitney_exact(void **state)
{
	double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	double x[10], y[10], u, p;

	/* the most extreme of C(6,3) = 20 arrangements, two-sided */
	p = cs_mann_whitney(a, 3, b, 3, &u);
	assert_true(u == 0);
	assert_true(fabs(p - 0.1) < 1e-12);
	p = cs_mann_whitney(b, 3, a, 3, &u);
	assert_true(u == 9 && fabs(p - 0.1) < 1e-12);
	for (int i = 0; i < 10; i++) {
		x[i] = i;
		y[i] = 100 + i;
	}
	/* 2 / C(20,10) */
	p = cs_mann_whitney(x, 10, y, 10, &u);
	assert_true(fabs(p - 2.0 / 184756) < 1e-15);
	/* interleaved: U = 45 (of 100), right in the middle */
	for (int i = 0; i < 10; i++)
		y[i] = i + 0.5;
	p = cs_mann_whitney(x, 10, y, 10, &u);
	assert_true(u == 45);
	assert_true(p > 0.7 && p <= 1);
}

static void mann_whitney_ties(void **state)
{
	double a[] = { 1, 2, 3, 4, 5 }, b[] = { 3, 4, 5, 6, 7 }, c[] = { 5, 5 };
	double u, p;

	/* scipy.stats.mannwhitneyu(a, b, method="asymptotic"): 4.5, 0.11385 */
	p = cs_mann_whitney(a, 5, b, 5, &u);
	assert_true(u == 4.5);
	assert_true(fabs(p - 0.113846298) < 1e-6);
	/* every value the same: no evidence at all */
	p = cs_mann_whitney(c, 2, c, 2, &u);
	assert_true(p == 1);
	p = cs_mann_whitney(a, 0, b, 5, &u);
	assert_true(p == 1);
}

static void normal_quantiles(void **state)
{
	assert_true(fabs(cs_norm_quantile(0.975) - 1.959963985) < 1e-8);
	assert_true(fabs(cs_norm_quantile(0.8) - 0.841621234) < 1e-8);
	assert_true(fabs(cs_norm_quantile(0.005) + 2.575829304) < 1e-8);
	assert_true(isnan(cs_norm_quantile(0)));
}

static void bootstrap_is_seeded_and_covers(void **state)
{
	double a[8], b[8], lo, hi, lo2, hi2;
	uint64_t st = 42;

	for (int i = 0; i < 8; i++) {
		a[i] = 100 + (double)(cs_rand64(&st) % 1000) / 1000;
		b[i] = a[i] + 5;
	}
	assert_int_equal(cs_bootstrap_ci(a, 8, b, 8, 2000, 0.95, 7, &lo, &hi), 0);
	assert_true(lo < 5 && 5 < hi);
	assert_true(lo > 4 && hi < 6);
	assert_int_equal(cs_bootstrap_ci(a, 8, b, 8, 2000, 0.95, 7, &lo2, &hi2), 0);
	assert_true(lo == lo2 && hi == hi2);
	/* constant samples: the interval is the one difference */
	for (int i = 0; i < 8; i++)
		a[i] = 10, b[i] = 12;
	assert_int_equal(cs_bootstrap_ci(a, 8, b, 8, 500, 0.95, 1, &lo, &hi), 0);
	assert_true(lo == 2 && hi == 2);
}

static void fill(double *v, size_t n, double base, double step)
{
	for (size_t i = 0; i < n; i++)
		v[i] = base + step * (double)((i * 7) % n);
}

static void decide_branches(void **state)
{
	struct sbrig_compare_config cfg;
	struct sbrig_compare_threshold thr = { 0.03, 0, 0 };
	double b[10], n[10];
	struct cs_outcome o;

	sbrig_compare_config_init(&cfg);
	/* 10 % more, noise 1 %: regressed */
	fill(b, 10, 1000, 1);
	fill(n, 10, 1100, 1);
	assert_int_equal(cs_decide(b, 10, n, 10, +1, &thr, &cfg, 1, &o), 0);
	assert_int_equal(o.verdict, SBRIG_REGRESSED);
	assert_true(fabs(o.change - 100) < 1e-9);
	assert_true(o.ci_lo <= 100 && 100 <= o.ci_hi);
	assert_true(fabs(o.threshold - 0.03 * 1004.5) < 1e-9);
	/* the same the other way: improved */
	fill(b, 10, 1100, 1);
	fill(n, 10, 1000, 1);
	assert_int_equal(cs_decide(b, 10, n, 10, +1, &thr, &cfg, 1, &o), 0);
	assert_int_equal(o.verdict, SBRIG_IMPROVED);
	/* 1 % more, little noise: significant, but below the threshold */
	fill(b, 10, 1000, 0.1);
	fill(n, 10, 1010, 0.1);
	assert_int_equal(cs_decide(b, 10, n, 10, +1, &thr, &cfg, 1, &o), 0);
	assert_int_equal(o.verdict, SBRIG_UNCHANGED);
	assert_string_equal(o.reason, "significant, but below the threshold");
	/* the same distribution: unchanged, the interval inside +-3 % */
	fill(b, 10, 1000, 1);
	fill(n, 10, 1000.5, 1);
	assert_int_equal(cs_decide(b, 10, n, 10, +1, &thr, &cfg, 1, &o), 0);
	assert_int_equal(o.verdict, SBRIG_UNCHANGED);
	/* wide noise: inconclusive, and more runs are asked for */
	fill(b, 10, 1000, 40);
	fill(n, 10, 1030, 40);
	assert_int_equal(cs_decide(b, 10, n, 10, +1, &thr, &cfg, 1, &o), 0);
	assert_int_equal(o.verdict, SBRIG_INCONCLUSIVE);
	assert_true(o.runs_needed > 10);
	assert_int_equal(o.more_runs, o.runs_needed - 10);
	/* too few runs, however clear */
	fill(b, 3, 1000, 1);
	fill(n, 3, 2000, 1);
	assert_int_equal(cs_decide(b, 3, n, 3, +1, &thr, &cfg, 1, &o), 0);
	assert_int_equal(o.verdict, SBRIG_INCONCLUSIVE);
	assert_string_equal(o.reason, "too few runs");
	assert_true(o.runs_needed >= cfg.min_runs);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void config_file(void **state)
{
	const char *t = getenv("SBRIG_TMPDIR");
	struct sbrig_compare_config cfg;
	char path[PATH_MAX];
	FILE *mem;
	char *text = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/thr.conf", t ? t : "/tmp");
	sbrig_compare_config_init(&cfg);
	write_file(path, "# thresholds\n[compare]\nalpha = 0.05 # looser\n"
		   "min_runs=8\n\n[latency_p95_ns]\nmin_abs = 5e6\n");
	assert_int_equal(sbrig_compare_config_load(&cfg, path), 0);
	assert_true(cfg.alpha == 0.05 && cfg.min_runs == 8);
	assert_true(cfg.metric[SBRIG_M_LATENCY_P95].min_abs == 5e6);
	assert_true(cfg.metric[SBRIG_M_ENERGY_PER_WAKEUP].min_change == 0.03);
	assert_string_equal(cfg.path, path);

	/* what --print-config writes reads back to the same config */
	mem = open_memstream(&text, &len);
	assert_int_equal(sbrig_compare_config_write(&cfg, mem), 0);
	fclose(mem);
	write_file(path, text);
	free(text);
	{
		struct sbrig_compare_config back;

		sbrig_compare_config_init(&back);
		assert_int_equal(sbrig_compare_config_load(&back, path), 0);
		back.path[0] = cfg.path[0] = '\0';
		assert_memory_equal(&back, &cfg, sizeof(cfg));
	}

	write_file(path, "[compare]\nseed = -1\n");
	assert_int_equal(sbrig_compare_config_load(&cfg, path), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "thr.conf:2: [compare]: seed = -1"));
	write_file(path, "[compare\n");
	assert_int_equal(sbrig_compare_config_load(&cfg, path), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "thr.conf:1: '[compare': a section"));
	write_file(path, "[baseline_uW]\nmin_change\n");
	assert_int_equal(sbrig_compare_config_load(&cfg, path), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "thr.conf:2: [baseline_uW]: "
			       "'min_change': expected KEY = VALUE"));
	assert_int_equal(sbrig_compare_config_load(&cfg, "/nonexistent/x"),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(median_odd_even),
		cmocka_unit_test(mann_whitney_exact),
		cmocka_unit_test(mann_whitney_ties),
		cmocka_unit_test(normal_quantiles),
		cmocka_unit_test(bootstrap_is_seeded_and_covers),
		cmocka_unit_test(decide_branches),
		cmocka_unit_test(config_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
