/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compare-stats.h - the statistics of sbrig compare (compare-stats.c),
 * private to host/analysis/: order statistics, the Mann-Whitney U test
 * with the Hodges-Lehmann shift and its exact Moses interval, the exact
 * tests of counts (Poisson) and of leaks (Fisher), the Benjamini-Hochberg
 * adjustment, how many runs would settle a question, and the verdict
 * rule that combines them (host/doc/compare-format.md, "The verdict").
 * Pure functions of their arguments: no I/O, no globals.
 */
#ifndef SBRIG_COMPARE_STATS_H
#define SBRIG_COMPARE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/compare.h>

/* The median of @n values (sorted in place); the mean of the two middle
 * ones for an even @n. NaN for @n 0. */
double cs_median(double *v, size_t n);

/**
 * cs_mann_whitney() - two-sided Mann-Whitney U test
 * @a: the first sample (@na values)
 * @b: the second sample (@nb values)
 * @u: out: U of @a (the number of pairs (x in @a, y in @b) with x > y,
 *	ties counting one half)
 *
 * The exact distribution of U when there are no ties and na x nb <= 2500;
 * else the normal approximation with the tie correction of the variance
 * and a continuity correction.
 *
 * Return: the two-sided p-value in [0, 1]; 1 when a sample is empty.
 */
double cs_mann_whitney(const double *a, size_t na, const double *b,
		       size_t nb, double *u);

/* The standard normal quantile function (Acklam's approximation, relative
 * error below 1.2e-9), for 0 < @p < 1. */
double cs_norm_quantile(double p);

/**
 * cs_moses_k() - the rank of the exact Moses interval's lower end
 * @m: the size of one sample
 * @n: of the other
 * @level: the interval's level (0.95)
 *
 * The largest k with P(U <= k - 1) <= (1 - @level) / 2 under the null
 * distribution of the Mann-Whitney U (without ties) of samples of @m and
 * @n: the interval of the shift is [D(k), D(mn + 1 - k)] of the m x n
 * sorted pairwise differences. Exact up to EXACT_MAX_PAIRS pairs, else
 * from the normal approximation.
 *
 * Return: k; 0 when no interval at @level exists (too few runs);
 * SIZE_MAX when out of memory.
 */
size_t cs_moses_k(size_t m, size_t n, double level);

/**
 * cs_hodges_lehmann() - the Hodges-Lehmann shift of @b against @a and its
 * exact Moses interval
 * @a: base sample (@na values)
 * @b: new sample (@nb values)
 * @level: the interval's level
 * @est: out: the median of the na x nb differences b[j] - a[i]
 * @lo: out: D(k) (NaN when no interval exists at @level)
 * @hi: out: D(mn + 1 - k)
 *
 * Return: 0, or -ENOMEM.
 */
int cs_hodges_lehmann(const double *a, size_t na, const double *b, size_t nb,
		      double level, double *est, double *lo, double *hi);

/**
 * cs_fisher_greater() - one-sided Fisher exact test
 * @kb: base runs with the event, of @nb
 * @nb: base runs
 * @kn: new runs with the event, of @nn
 * @nn: new runs
 *
 * Return: P(X >= @kn) for X hypergeometric (@nb + @nn runs, @kb + @kn
 * with the event, @nn drawn): small when the new runs have the event
 * more often; NaN for impossible arguments.
 */
double cs_fisher_greater(size_t kb, size_t nb, size_t kn, size_t nn);

/* The smallest two-sided p the exact U test can give for samples of @m
 * and @n: 2 / C(m + n, m) (1 for an empty sample). */
double cs_min_p(size_t m, size_t n);

/* The smallest n a side for which cs_min_p(n, n) <= @alpha. */
unsigned int cs_smallest_runs(double alpha);

/**
 * cs_bh_adjust() - Benjamini-Hochberg adjusted p-values
 * @p: @n p-values
 * @n: how many
 * @adj: out: @n adjusted p-values, in @p's order (min over j >= rank of
 *	p(j) n / j, at most 1)
 *
 * Return: 0, or -ENOMEM.
 */
int cs_bh_adjust(const double *p, size_t n, double *adj);

/**
 * struct cs_outcome - the verdict on one metric
 * @verdict: what the rule decided
 * @median_base: median of the base runs
 * @median_new: median of the new runs
 * @change: the Hodges-Lehmann shift of the new runs against the base
 *	runs (for a leak: the new share of runs that leak minus the base's)
 * @change_rel: @change / |@median_base|, NaN when @median_base is 0
 * @ci_lo: the exact Moses interval of @change
 * @ci_hi: (NaN, NaN when the runs are too few for one)
 * @threshold: the smallest |change| that matters: max(min_change x
 *	|@median_base|, min_abs)
 * @p_value: the test's raw p (Mann-Whitney U two-sided; Fisher one-sided
 *	for a leak)
 * @p_adjusted: @p_value adjusted for the family of tests (what is
 *	compared with @alpha)
 * @family: how many tests the adjustment was over
 * @u: its U (of the new runs)
 * @alpha: the significance it was compared with
 * @sigma: the runs' robust spread (for the runs estimate)
 * @nb: base values
 * @nn: new values
 * @runs_needed: for SBRIG_INCONCLUSIVE, the runs a side that would likely
 *	settle it (see compare-format.md); else 0
 * @more_runs: @runs_needed minus the runs of the smaller side (>= 1 when
 *	inconclusive)
 * @reason: one line saying why (a static string)
 */
struct cs_outcome {
	enum sbrig_verdict verdict;
	double median_base, median_new;
	double change, change_rel;
	double ci_lo, ci_hi;
	double threshold;
	double p_value, p_adjusted, u, alpha, sigma;
	size_t family, nb, nn;
	unsigned int runs_needed, more_runs;
	const char *reason;
};

/**
 * cs_measure() - the figures of one metric, before any verdict
 * @base: the base runs' values (@nb of them; reordered)
 * @nb: how many
 * @next: the new runs' values (@nn; reordered)
 * @nn: how many
 * @thr: the metric's thresholds
 * @cfg: alpha default, confidence
 * @out: out: medians, the shift and its interval, the threshold, p (and
 *	p_adjusted = p until the caller adjusts it), the spread
 *
 * Return: 0, or -ENOMEM.
 */
int cs_measure(double *base, size_t nb, double *next, size_t nn,
	       const struct sbrig_compare_threshold *thr,
	       const struct sbrig_compare_config *cfg, struct cs_outcome *out);

/* P(X <= @k) for X binomial with @t trials of probability @q. */
double cs_binom_cdf(size_t k, size_t t, double q);

/**
 * cs_poisson_test() - exact conditional test of two Poisson rates
 * @sb: the base runs' total count
 * @nb: base runs
 * @sn: the new runs' total count
 * @nn: new runs
 *
 * Given the total, the new runs' share of it is binomial with p = @nn /
 * (@nb + @nn) when the rates per run are equal.
 *
 * Return: the two-sided p (twice the smaller tail, at most 1).
 */
double cs_poisson_test(double sb, size_t nb, double sn, size_t nn);

/**
 * cs_measure_counts() - cs_measure() for a count metric: the change is
 * the difference of the mean counts per run, the test
 * cs_poisson_test() on the totals, the interval the normal one of a
 * Poisson rate difference, the threshold relative to the base mean
 * @base: the base runs' counts (@nb)
 * @nb: how many
 * @next: the new runs' counts (@nn)
 * @nn: how many
 * @thr: the metric's thresholds
 * @cfg: alpha default, confidence
 * @out: out
 *
 * Return: 0.
 */
int cs_measure_counts(double *base, size_t nb, double *next, size_t nn,
		      const struct sbrig_compare_threshold *thr,
		      const struct sbrig_compare_config *cfg,
		      struct cs_outcome *out);

/**
 * cs_judge() - the verdict rule on one measured metric (compare-format.md)
 * @o: measured by cs_measure(), with p_adjusted and family set
 * @worse: +1 when a higher value is worse (energy, latency), -1 when lower
 * @cfg: min_runs, power, confidence
 */
void cs_judge(struct cs_outcome *o, int worse,
	      const struct sbrig_compare_config *cfg);

/**
 * cs_judge_leak() - the verdict on a blocker's leaks
 * @o: its p_value (cs_fisher_greater() in the direction of the change),
 *	p_adjusted, family and alpha set
 * @kb: base runs that leak, of @nb
 * @nb: base runs
 * @kn: new runs that leak, of @nn
 * @nn: new runs
 * @thr: the leak metric's thresholds (min_abs: the change of the share of
 *	runs that leak that matters)
 * @cfg: min_runs, power
 */
void cs_judge_leak(struct cs_outcome *o, size_t kb, size_t nb, size_t kn,
		   size_t nn, const struct sbrig_compare_threshold *thr,
		   const struct sbrig_compare_config *cfg);

#endif /* SBRIG_COMPARE_STATS_H */
