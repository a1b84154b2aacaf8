/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-trace.h - a window of the power trace and the platform's asleep
 * level in it, private to host/analysis/ (edges.c; place.c reads its
 * windows with it).
 */
#ifndef SBRIG_AN_TRACE_H
#define SBRIG_AN_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct an_trace - a window of the power trace (edges.c, place.c)
 * @t: the samples' times
 * @p: their power (uW)
 * @n: samples; @cap: room
 * @overflow: samples were dropped (the window is too long to hold)
 */
struct an_trace {
	int64_t *t;
	double *p;
	size_t n, cap;
	bool overflow;
};

int an_trace_add(struct an_trace *x, int64_t t, double p);
double an_trace_asleep_level(const struct an_trace *x);
void an_trace_free(struct an_trace *x);

#endif /* SBRIG_AN_TRACE_H */
