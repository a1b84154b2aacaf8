/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compare-stats.h - the statistics of sbrig compare (compare-stats.c),
 * private to host/analysis/: order statistics, the Mann-Whitney U test,
 * a bootstrap interval of the change of the median, how many runs would
 * settle a question, and the verdict rule that combines them
 * (host/doc/compare-format.md, "The verdict"). Pure functions of their
 * arguments: no I/O, no globals, deterministic for a given seed.
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

/* One step of splitmix64: the next pseudo-random 64 bits of *@state. */
uint64_t cs_rand64(uint64_t *state);

/**
 * cs_bootstrap_ci() - percentile bootstrap interval of the change of the
 * median, median(@b) - median(@a)
 * @a: base sample (@na >= 1 values)
 * @b: new sample (@nb >= 1 values)
 * @resamples: how many resamples (each side resampled with replacement)
 * @level: the interval's level (0.95: the 2.5 % and 97.5 % quantiles)
 * @seed: the generator's seed (the same seed, the same interval)
 * @lo: out
 * @hi: out
 *
 * Return: 0, or -ENOMEM.
 */
int cs_bootstrap_ci(const double *a, size_t na, const double *b, size_t nb,
		    unsigned int resamples, double level, uint64_t seed,
		    double *lo, double *hi);

/* The standard normal quantile function (Acklam's approximation, relative
 * error below 1.2e-9), for 0 < @p < 1. */
double cs_norm_quantile(double p);

/**
 * struct cs_outcome - the verdict on one metric
 * @verdict: what the rule decided
 * @median_base: median of the base runs
 * @median_new: median of the new runs
 * @change: @median_new - @median_base
 * @change_rel: @change / |@median_base|, NaN when @median_base is 0
 * @ci_lo: the bootstrap interval of @change
 * @ci_hi: (NaN, NaN with fewer than 2 runs on a side)
 * @threshold: the smallest |change| that matters: max(min_change x
 *	|@median_base|, min_abs)
 * @p_value: the Mann-Whitney U test's two-sided p
 * @u: its U (of the new runs)
 * @alpha: the significance it was compared with
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
	double p_value, u, alpha;
	unsigned int runs_needed, more_runs;
	const char *reason;
};

/**
 * cs_decide() - the verdict rule on one metric
 * @base: the base runs' values (@nb of them; reordered)
 * @nb: how many
 * @next: the new runs' values (@nn; reordered)
 * @nn: how many
 * @worse: +1 when a higher value is worse (energy, latency), -1 when lower
 * @thr: the metric's thresholds
 * @cfg: alpha default, confidence, resamples, min_runs, power, seed
 * @seed: the bootstrap's seed for this metric
 * @out: out
 *
 * Return: 0, or -ENOMEM.
 */
int cs_decide(double *base, size_t nb, double *next, size_t nn, int worse,
	      const struct sbrig_compare_threshold *thr,
	      const struct sbrig_compare_config *cfg, uint64_t seed,
	      struct cs_outcome *out);

#endif /* SBRIG_COMPARE_STATS_H */
