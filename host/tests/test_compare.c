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

/* the exact Moses interval's rank: scipy.stats.mannwhitneyu(method="exact")
 * gives P(U <= k - 1) <= (1 - level) / 2 < P(U <= k) for these k */
static void moses_rank_matches_scipy(void **state)
{
	assert_int_equal(cs_moses_k(10, 10, 0.95), 24);
	assert_int_equal(cs_moses_k(5, 5, 0.95), 3);
	assert_int_equal(cs_moses_k(10, 10, 0.99), 17);
	assert_int_equal(cs_moses_k(8, 12, 0.95), 23);
	/* 2 + 2 runs: no 95 % interval exists */
	assert_int_equal(cs_moses_k(2, 2, 0.95), 0);
}

static void hodges_lehmann_and_interval(void **state)
{
	double a[] = { 1, 2, 3, 4, 5 }, b[] = { 11, 12, 13, 14, 15 };
	double est, lo, hi;

	/* differences 6..14, 25 of them: median 10; k = 3: D(3), D(23) */
	assert_int_equal(cs_hodges_lehmann(a, 5, b, 5, 0.95, &est, &lo, &hi), 0);
	assert_true(est == 10);
	assert_true(lo == 7 && hi == 13);
	assert_int_equal(cs_hodges_lehmann(a, 2, b, 2, 0.95, &est, &lo, &hi), 0);
	assert_true(est == 10 && isnan(lo) && isnan(hi));
}

static void fisher_poisson_bh_match_scipy(void **state)
{
	double p[] = { 0.01, 0.04, 0.03, 0.5 }, adj[4];

	/* scipy.stats.fisher_exact([[8, 2], [0, 10]], "greater") */
	assert_true(fabs(cs_fisher_greater(0, 10, 8, 10) - 3.572279114e-4) < 1e-12);
	assert_true(fabs(cs_fisher_greater(0, 10, 1, 10) - 0.5) < 1e-12);
	assert_true(fabs(cs_fisher_greater(1, 10, 3, 10) - 0.2910216718) < 1e-9);
	/* 2 min(binom.cdf, binom.sf) of scipy.stats.binom */
	assert_true(fabs(cs_poisson_test(15, 10, 30, 10) - 0.0356978036) < 1e-9);
	assert_true(fabs(cs_poisson_test(28, 15, 12, 10) - 0.2570193561) < 1e-9);
	assert_true(cs_poisson_test(0, 10, 0, 10) == 1);
	/* Benjamini-Hochberg by hand: sorted 0.01 0.03 0.04 0.5, x 4 / rank
	 * 0.04 0.06 0.0533 0.5, the running minimum from the top */
	assert_int_equal(cs_bh_adjust(p, 4, adj), 0);
	assert_true(fabs(adj[0] - 0.04) < 1e-12 && fabs(adj[3] - 0.5) < 1e-12);
	assert_true(fabs(adj[1] - 0.16 / 3) < 1e-12 &&
		    fabs(adj[2] - 0.16 / 3) < 1e-12);
	/* the smallest p of the exact test, and the runs that can reach alpha */
	assert_true(fabs(cs_min_p(5, 5) - 2.0 / 252) < 1e-15);
	assert_int_equal(cs_smallest_runs(0.01), 5);
	assert_int_equal(cs_smallest_runs(0.001), 7);
}

static void fill(double *v, size_t n, double base, double step)
{
	for (size_t i = 0; i < n; i++)
		v[i] = base + step * (double)((i * 7) % n);
}

/* measure and judge one metric alone (a family of one) */
static void decide(double *b, size_t nb, double *n, size_t nn,
		   const struct sbrig_compare_threshold *thr,
		   const struct sbrig_compare_config *cfg, struct cs_outcome *o)
{
	assert_int_equal(cs_measure(b, nb, n, nn, thr, cfg, o), 0);
	o->family = 1;
	cs_judge(o, +1, cfg);
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
	decide(b, 10, n, 10, &thr, &cfg, &o);
	assert_int_equal(o.verdict, SBRIG_REGRESSED);
	assert_true(fabs(o.change - 100) < 1e-9);
	assert_true(o.ci_lo <= 100 && 100 <= o.ci_hi);
	assert_true(fabs(o.threshold - 0.03 * 1004.5) < 1e-9);
	/* the same the other way: improved */
	fill(b, 10, 1100, 1);
	fill(n, 10, 1000, 1);
	decide(b, 10, n, 10, &thr, &cfg, &o);
	assert_int_equal(o.verdict, SBRIG_IMPROVED);
	/* 1 % more, little noise: significant, interval within the minimum */
	fill(b, 10, 1000, 0.1);
	fill(n, 10, 1010, 0.1);
	decide(b, 10, n, 10, &thr, &cfg, &o);
	assert_int_equal(o.verdict, SBRIG_UNCHANGED);
	assert_string_equal(o.reason, "significant, but the change and its "
			    "interval are within the minimum");
	/* 2.5 % more, wide noise but separated: significant, the estimate
	 * within 3 %, the interval past it: inconclusive */
	fill(b, 10, 1000, 3);
	fill(n, 10, 1028, 3);
	decide(b, 10, n, 10, &thr, &cfg, &o);
	assert_true(o.p_value <= 0.01 && o.change < o.threshold);
	assert_true(o.ci_hi >= o.threshold);
	assert_int_equal(o.verdict, SBRIG_INCONCLUSIVE);
	assert_true(o.runs_needed > 10);
	/* the same distribution: unchanged */
	fill(b, 10, 1000, 1);
	fill(n, 10, 1000.5, 1);
	decide(b, 10, n, 10, &thr, &cfg, &o);
	assert_int_equal(o.verdict, SBRIG_UNCHANGED);
	assert_string_equal(o.reason, "not significant, and the change is "
			    "within the minimum");
	/* wide noise, the estimate past 3 %: inconclusive, run more */
	fill(b, 10, 1000, 40);
	fill(n, 10, 1040, 40);
	decide(b, 10, n, 10, &thr, &cfg, &o);
	assert_int_equal(o.verdict, SBRIG_INCONCLUSIVE);
	assert_string_equal(o.reason, "not significant, but the change is "
			    "beyond the minimum");
	assert_true(o.runs_needed > 10);
	assert_int_equal(o.more_runs, o.runs_needed - 10);
	/* significant alone, not once adjusted over a family */
	fill(b, 10, 1000, 1);
	fill(n, 10, 1100, 1);
	assert_int_equal(cs_measure(b, 10, n, 10, &thr, &cfg, &o), 0);
	o.p_adjusted = fmin(1, o.p_value * 2000);
	o.family = 2000;
	cs_judge(&o, +1, &cfg);
	assert_int_equal(o.verdict, SBRIG_INCONCLUSIVE);
	/* too few runs, however clear */
	fill(b, 3, 1000, 1);
	fill(n, 3, 2000, 1);
	decide(b, 3, n, 3, &thr, &cfg, &o);
	assert_int_equal(o.verdict, SBRIG_INCONCLUSIVE);
	assert_string_equal(o.reason, "too few runs");
	assert_true(o.runs_needed >= cfg.min_runs);
}

static void count_rule(void **state)
{
	struct sbrig_compare_config cfg;
	struct sbrig_compare_threshold thr = { 0.5, 2, 0 };
	double b[10] = { 4, 6, 5, 5, 3, 7, 5, 4, 6, 5 };
	double n[10] = { 5, 5, 4, 6, 6, 4, 5, 5, 3, 7 };
	struct cs_outcome o;

	sbrig_compare_config_init(&cfg);
	assert_int_equal(cs_measure_counts(b, 10, n, 10, &thr, &cfg, &o), 0);
	o.family = 1;
	cs_judge(&o, +1, &cfg);
	assert_true(o.change == 0 && o.p_value == 1);
	assert_int_equal(o.verdict, SBRIG_UNCHANGED);
	/* every run 5 more: 50 vs 100 in all, the threshold 2.5 */
	for (int i = 0; i < 10; i++)
		n[i] = b[i] + 5;
	assert_int_equal(cs_measure_counts(b, 10, n, 10, &thr, &cfg, &o), 0);
	o.family = 1;
	cs_judge(&o, +1, &cfg);
	assert_true(o.change == 5 && o.threshold == 2.5);
	assert_int_equal(o.verdict, SBRIG_REGRESSED);
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

	write_file(path, "[compare]\nmin_runs = -1\n");
	assert_int_equal(sbrig_compare_config_load(&cfg, path), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "thr.conf:2: [compare]: "
			       "min_runs = -1"));
	/* the bootstrap's keys are gone with it (version 2) */
	write_file(path, "[compare]\nresamples = 2000\n");
	assert_int_equal(sbrig_compare_config_load(&cfg, path), -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "unknown key 'resamples'"));
	/* libinih splits the lines: comments after values, indented keys,
	 * a UTF-8 BOM, the last of a key given twice */
	write_file(path, "\xef\xbb\xbf[compare]\nalpha = 0.05 # looser\n"
		   "  power = 0.9 ; indented\nalpha = 0.02\n[leak]\n"
		   "min_abs=0.5\n");
	sbrig_compare_config_init(&cfg);
	assert_int_equal(sbrig_compare_config_load(&cfg, path), 0);
	assert_true(cfg.alpha == 0.02 && cfg.power == 0.9);
	assert_true(cfg.metric[SBRIG_M_LEAK].min_abs == 0.5);
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
		cmocka_unit_test(moses_rank_matches_scipy),
		cmocka_unit_test(hodges_lehmann_and_interval),
		cmocka_unit_test(fisher_poisson_bh_match_scipy),
		cmocka_unit_test(count_rule),
		cmocka_unit_test(decide_branches),
		cmocka_unit_test(config_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
