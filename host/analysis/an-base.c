// SPDX-License-Identifier: GPL-2.0
/*
 * an-base.c - what every step of the analysis stands on, see an-base.h.
 */
#include <errno.h>
#include <stdlib.h>

#include <sbrig/sbrig.h>

#include "an-base.h"

int an_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	*p = q;
	*cap = n;
	return 0;
}

int an_cmp_span(const void *a, const void *b)
{
	const struct an_span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

int64_t an_merge_spans(struct an_span *v, size_t *n)
{
	size_t k = 0;
	int64_t sum = 0;

	if (!*n)
		return 0;
	qsort(v, *n, sizeof(*v), an_cmp_span);
	for (size_t i = 1; i < *n; i++) {
		if (v[i].start <= v[k].end) {
			if (v[i].end > v[k].end)
				v[k].end = v[i].end;
		} else {
			v[++k] = v[i];
		}
	}
	*n = k + 1;
	for (size_t i = 0; i < *n; i++)
		sum += v[i].end - v[i].start;
	return sum;
}
