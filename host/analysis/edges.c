// SPDX-License-Identifier: GPL-2.0
/*
 * edges.c - where the power says a suspended stretch really begins and ends.
 *
 * The log's suspended stretch runs from the kernel's "enter" to its
 * "exit", but the platform is still running for a while after the kernel
 * logs "enter" (the last of the suspend path) and is running again a while
 * before it logs "exit" (firmware and the early resume path: tens of
 * milliseconds on the virtual target, more on some boards). Counted as
 * suspended, that time at full power made a suspended figure twice the
 * platform's real one. So the samples are read before the integration
 * (from samples.bin only the windows: the reader seeks to each; from
 * samples.tsv all of them, once): in a window of at most AN_EDGE_WINDOW_NS (and half the
 * stretch) after each enter and before each exit, a stretch's start moves
 * forward to its first sample at the suspended level, and its end back to
 * the first sample of the run above that level that reaches the exit.
 * "The suspended level" is at most twice the lowest mean of
 * EDGE_CHUNK consecutive samples in the window, plus EDGE_FLOOR_UW (so
 * the noise of a low level cannot look like a wake). A window whose power
 * never rises, or never falls, leaves the log's time. Ends that are not
 * the log's enter or exit (the capture started asleep, a reboot, the
 * capture's end) are not moved. report-format.md, "States".
 *
 * Memory: one window's samples at a time (at most EDGE_MAX_SAMPLES; a
 * longer window is left as the log has it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-timeline.h"
#include "an-trace.h"

#define EDGE_CHUNK		8
#define EDGE_FLOOR_UW		1000.0
#define EDGE_MAX_SAMPLES	(1u << 21)
#define EDGE_BATCH		2048	/* about the samples of a window */

struct window {
	int64_t a, b;		/* [a, b] */
	size_t span;
	bool enter;		/* a start window (else an end window) */
};

/**
 * an_trace_add() - append a sample to a window of the power trace
 * @x: the window
 * @t: its time
 * @p: its power (uW)
 *
 * Past EDGE_MAX_SAMPLES the sample is dropped and @x->overflow set: a
 * window that long is left as the log has it.
 *
 * Return: 0 or -ENOMEM.
 */
int an_trace_add(struct an_trace *x, int64_t t, double p)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 4096;
		int64_t *nt;
		double *np;

		if (x->cap >= EDGE_MAX_SAMPLES) {
			x->overflow = true;
			return 0;
		}
		nt = realloc(x->t, cap * sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		x->t = nt;
		np = realloc(x->p, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		x->p = np;
		x->cap = cap;
	}
	x->t[x->n] = t;
	x->p[x->n++] = p;
	return 0;
}

/**
 * an_trace_asleep_level() - the level below which a sample of @x counts
 * as suspended: twice the lowest mean of EDGE_CHUNK consecutive samples,
 * plus EDGE_FLOOR_UW
 * @x: the window
 */
double an_trace_asleep_level(const struct an_trace *x)
{
	double low = -1;

	for (size_t i = 0; i < x->n; i += EDGE_CHUNK) {
		size_t k = i + EDGE_CHUNK < x->n ? i + EDGE_CHUNK : x->n;
		double sum = 0;

		for (size_t j = i; j < k; j++)
			sum += x->p[j];
		sum /= (double)(k - i);
		if (low < 0 || sum < low)
			low = sum;
	}
	return 2 * (low > 0 ? low : 0) + EDGE_FLOOR_UW;
}

void an_trace_free(struct an_trace *x)
{
	free(x->t);
	free(x->p);
	memset(x, 0, sizeof(*x));
}

/* The moved end of @w's stretch, or -1 to keep the log's. */
static int64_t refine(const struct window *w, const struct an_trace *x)
{
	double thr;

	if (x->n < 2 || x->overflow)
		return -1;
	thr = an_trace_asleep_level(x);
	if (w->enter) {
		for (size_t j = 0; j < x->n; j++)
			if (x->p[j] <= thr)
				return j ? x->t[j] : -1;
		return -1;
	}
	for (size_t j = x->n; j-- > 0;)
		if (x->p[j] <= thr)
			return j + 1 < x->n ? x->t[j + 1] : -1;
	return -1;
}

static int windows(const struct an_timeline *tl, struct window **out,
		   size_t *nout)
{
	struct window *v = malloc((2 * tl->nsusp + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < tl->nsusp; i++) {
		const struct an_span *s = &tl->susp[i];
		int64_t len = s->end - s->start;
		int64_t win = len / 2 < AN_EDGE_WINDOW_NS ? len / 2 :
			AN_EDGE_WINDOW_NS;

		if (win <= 0)
			continue;
		if (tl->susp_edges[i] & AN_EDGE_ENTER)
			v[n++] = (struct window){ s->start, s->start + win, i,
						  true };
		if (tl->susp_edges[i] & AN_EDGE_EXIT)
			v[n++] = (struct window){ s->end - win, s->end, i,
						  false };
	}
	*out = v;
	*nout = n;
	return 0;
}

/**
 * an_edges_refine() - move the suspended stretches' ends to the power's
 * @tl: the timeline (its suspended spans are moved)
 * @cr: the capture; its samples are read (sought to each window where the
 *	reader can) and rewound
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the samples' file:line.
 */
int an_edges_refine(struct an_timeline *tl, struct sbrig_capread *cr)
{
	struct sbrig_sample *batch = NULL;
	struct window *w = NULL;
	int64_t *moved = NULL;
	struct an_trace x = { 0 };
	size_t n = 0, wi = 0;
	ssize_t got = 0;
	int64_t last = INT64_MIN;	/* the last sample read */
	bool seek = true;
	size_t sought = SIZE_MAX;	/* the window last sought to */
	int64_t dt = 0;			/* a recent sample interval */
	size_t want;
	int ret;

	ret = windows(tl, &w, &n);
	if (ret || !n)
		goto out;
	moved = malloc(n * sizeof(*moved));
	batch = malloc(EDGE_BATCH * sizeof(*batch));
	if (!moved || !batch) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		/*
		 * Samples before the next window change nothing: skip them
		 * (samples.bin: a seek to the window's first sample; else,
		 * or if the seek is not supported, they are read and passed).
		 * Once per window: on samples out of time order (which the
		 * integration then refuses) a seek could go back, and the
		 * stream must still move on.
		 */
		if (wi < n && seek && last < w[wi].a && sought != wi) {
			sought = wi;
			ret = sbrig_capread_seek_samples(cr, w[wi].a);
			if (ret == -EOPNOTSUPP)
				seek = false;
			else if (ret)
				goto out;
			ret = 0;
		}
		/*
		 * inside a window, about what is left of it (and not a
		 * buffer more: a full batch past the window's end made the
		 * reader read another 64 KiB for nothing)
		 */
		want = EDGE_BATCH;
		if (wi < n && dt > 0 && last >= w[wi].a && last < w[wi].b &&
		    (w[wi].b - last) / dt + 16 < (int64_t)want)
			want = (size_t)((w[wi].b - last) / dt + 16);
		if (wi >= n || (got = sbrig_capread_samples(cr, batch,
							    want)) <= 0)
			break;
		if (got > 1 && batch[got - 1].t_ns > batch[0].t_ns)
			dt = (batch[got - 1].t_ns - batch[0].t_ns) / (got - 1);
		last = batch[got - 1].t_ns;
		if (last < w[wi].a)
			continue;	/* a batch between windows */
		for (ssize_t i = 0; i < got && wi < n; i++) {
			const struct sbrig_sample *s = &batch[i];

			while (wi < n && s->t_ns > w[wi].b) {
				moved[wi] = refine(&w[wi], &x);
				x.n = 0;
				x.overflow = false;
				wi++;
			}
			if (wi < n && s->t_ns >= w[wi].a) {
				ret = an_trace_add(&x, s->t_ns, an_sample_power_uW(s));
				if (ret)
					goto out;
			}
		}
	}
	if (got < 0) {
		ret = (int)got;
		goto out;
	}
	for (; wi < n; wi++) {
		moved[wi] = refine(&w[wi], &x);
		x.n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct an_span *sp = &tl->susp[w[i].span];

		if (moved[i] < 0)
			continue;
		tl->edges_refined++;
		if (w[i].enter) {
			tl->transition_ns += moved[i] - sp->start;
			sp->start = moved[i];
		} else {
			tl->transition_ns += sp->end - moved[i];
			sp->end = moved[i];
		}
	}
	ret = sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES);
out:
	if (ret == -ENOMEM)
		ret = sbrig_set_error(-ENOMEM, "analysis: out of memory");
	free(batch);
	free(w);
	free(moved);
	an_trace_free(&x);
	return ret;
}
