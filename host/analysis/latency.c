// SPDX-License-Identifier: GPL-2.0
/*
 * latency.c - latency statistics: min, median, p95 (nearest rank), max.
 * One implementation for the report and for sbrig latency.
 */
#include <stdlib.h>
#include <string.h>

#include <sbrig/analysis.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

void sbrig_latency_stats(int64_t *v, const int64_t *u, size_t n,
			 struct sbrig_latency_stats *st)
{
	size_t rank;

	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	for (size_t i = 0; u && i < n; i++)
		if (u[i] > st->uncert_ns)
			st->uncert_ns = u[i];
	qsort(v, n, sizeof(*v), cmp_i64);
	st->n = (unsigned int)n;
	st->min_ns = v[0];
	st->max_ns = v[n - 1];
	/* the mean of the middle two, without overflow */
	st->median_ns = n % 2 ? v[n / 2] :
		v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
	/* nearest rank: the smallest value with 95 % at or below it */
	rank = (n * 95 + 99) / 100;
	st->p95_ns = v[rank ? rank - 1 : 0];
}
