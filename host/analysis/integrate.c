// SPDX-License-Identifier: GPL-2.0
/*
 * integrate.c - the samples, streamed once against the timeline.
 *
 * The timeline is turned into a sorted list of change points: a blocker
 * becomes active or inactive, a suspended stretch begins or ends, a
 * baseline window (a suspended stretch trimmed at both ends) or a wakeup's
 * episode opens or closes. The samples are then read once, in order: the
 * trapezoids between consecutive samples are summed into a running
 * accumulator, and at each change point (a trapezoid is cut there, power
 * interpolated linearly) the accumulator is handed to whatever was open
 * since the previous one: the state's total, the active blockers (E/k
 * each, E as exclusive energy when k = 1), the unattributed bucket, the
 * open windows. Per sample that is one trapezoid and a few comparisons;
 * per change point O(active blockers + open windows). Memory does not
 * grow with the samples, except for the trace: the finest envelope level
 * (a fixed number of buckets) and the raw windows (at most
 * AN_RAW_MAX_SAMPLES).
 *
 * An interval between two samples that gaps.tsv reports, or one longer
 * than GAP_FACTOR x the median sample interval, is not integrated: it is
 * a gap (report-format.md, "Gaps").
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an-base.h"
#include "an-results.h"
#include "an-timeline.h"

#define GAP_FACTOR	10
#define MEDIAN_SAMPLES	2049
#define SAMPLE_BATCH	8192	/* samples per read (>= MEDIAN_SAMPLES) */
#define TRACE_BUCKETS	2000	/* coarsest level over the whole capture */
#define RAW_BEFORE_NS	1000000000LL
#define RAW_AFTER_NS	2000000000LL
#define UJ_PER_UW_NS	1e-9	/* µW x ns = 1e-15 J */

enum cp_kind {
	CP_B_OFF, CP_B_ON,	/* blocker @i */
	CP_S_OFF, CP_S_ON,	/* suspended */
	CP_W_OFF, CP_W_ON,	/* wakeup @i's episode */
};

struct cp {
	int64_t t;
	enum cp_kind kind;
	size_t i;
};

/* what the walk has open */
struct walk {
	struct an_energy *en;
	struct an_timeline *tl;
	struct an_wakeups *wk;
	size_t *act;		/* active blockers */
	size_t *pos;		/* blocker -> index in @act */
	size_t nact;
	size_t *wopen;		/* open wakeup windows */
	size_t nwopen;
	int susp;		/* nesting count */
	double acc;		/* 2 x µW·ns since the last flush */
	int64_t dur;		/* integrated ns since the last flush */
	/* trace: the finest level, filled per sample */
	struct an_level *fine;
	size_t fine_cap;
	size_t bucket;
	int64_t bucket_end;
	/* raw windows */
	size_t raw_i;
	int64_t median;		/* the median sample interval (0: unknown) */
};

static int cmp_cp(const void *a, const void *b)
{
	const struct cp *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (int)x->kind - (int)y->kind;	/* offs before ons */
}

static int cp_add(struct cp **v, size_t *n, size_t *cap, int64_t t,
		  enum cp_kind kind, size_t i)
{
	int ret = an_grow((void **)v, cap, *n + 1, sizeof(**v));

	if (ret)
		return ret;
	(*v)[(*n)++] = (struct cp){ t, kind, i };
	return 0;
}

static int build_cps(struct walk *w, struct cp **cps, size_t *n)
{
	const struct an_timeline *tl = w->tl;
	size_t cap = 0;
	int ret = 0;

	*n = 0;
	for (size_t i = 0; i < tl->nb && !ret; i++) {
		for (size_t j = 0; j < tl->b[i].nspans && !ret; j++) {
			ret = cp_add(cps, n, &cap, tl->b[i].spans[j].start,
				     CP_B_ON, i);
			if (!ret)
				ret = cp_add(cps, n, &cap, tl->b[i].spans[j].end,
					     CP_B_OFF, i);
		}
	}
	for (size_t i = 0; i < tl->nsusp && !ret; i++) {
		ret = cp_add(cps, n, &cap, tl->susp[i].start, CP_S_ON, i);
		if (!ret)
			ret = cp_add(cps, n, &cap, tl->susp[i].end, CP_S_OFF, i);
	}
	for (size_t i = 0; w->wk && i < w->wk->n && !ret; i++) {
		/*
		 * an empty episode (a resume put at the capture's start, the
		 * capture starting asleep) has no energy: its off would sort
		 * before its on and leave it open to the end
		 */
		if (w->wk->w[i].end_ns <= w->wk->w[i].t_ns)
			continue;
		ret = cp_add(cps, n, &cap, w->wk->w[i].t_ns, CP_W_ON, i);
		if (!ret)
			ret = cp_add(cps, n, &cap, w->wk->w[i].end_ns, CP_W_OFF,
				     i);
	}
	if (!ret && *n)
		qsort(*cps, *n, sizeof(**cps), cmp_cp);
	return ret;
}

/* Hand what was integrated since the last change point to its owners. */
static void flush(struct walk *w)
{
	struct an_energy *en = w->en;
	double e = w->acc * 0.5 * UJ_PER_UW_NS;

	if (w->acc == 0 && w->dur == 0)
		return;
	en->total_uJ += e;
	if (w->susp) {
		en->suspended_uJ += e;
	} else {
		en->awake_uJ += e;
		if (!w->nact) {
			en->unattributed_uJ += e;
		} else {
			double share = e / (double)w->nact;
			double dshare = (double)w->dur / (double)w->nact;

			for (size_t k = 0; k < w->nact; k++) {
				struct an_blocker *b = &w->tl->b[w->act[k]];

				b->energy_uJ += share;
				b->share_ns += dshare;
				if (w->nact == 1)
					b->exclusive_uJ += e;
			}
		}
	}
	for (size_t k = 0; k < w->nwopen; k++)
		w->wk->w[w->wopen[k]].energy_uJ += e;
	w->acc = 0;
	w->dur = 0;
}

static void apply(struct walk *w, const struct cp *c)
{
	switch (c->kind) {
	case CP_B_ON:
		w->pos[c->i] = w->nact;
		w->act[w->nact++] = c->i;
		break;
	case CP_B_OFF:
		if (w->nact) {
			size_t at = w->pos[c->i], last = w->act[--w->nact];

			w->act[at] = last;
			w->pos[last] = at;
		}
		break;
	case CP_S_ON:
		w->susp++;
		break;
	case CP_S_OFF:
		w->susp--;
		break;
	case CP_W_ON:
		w->wopen[w->nwopen++] = c->i;
		break;
	case CP_W_OFF:
		for (size_t k = 0; k < w->nwopen; k++) {
			if (w->wopen[k] == c->i) {
				w->wopen[k] = w->wopen[--w->nwopen];
				break;
			}
		}
		break;
	}
}

/* ---- the trace -------------------------------------------------------------- */

/*
 * The finest envelope level grows with the capture (its length is not
 * known until the last sample): buckets of FINE_START_NS to begin with,
 * two merged into one whenever there are more than FINE_MAX of them. At
 * the end the two coarser levels (10x and 100x) are folded from it, so
 * the coarsest has about FINE_MAX / 200 .. FINE_MAX / 100 buckets.
 */
#define FINE_START_NS	1000000LL	/* 1 ms */
#define FINE_MAX	(TRACE_BUCKETS * 50)

static int fine_room(struct an_level *l, size_t *cap, size_t need)
{
	size_t old = *cap, n = *cap ? 2 * *cap : 4096;

	if (need <= old)
		return 0;
	if (n < need)
		n = need;
	if (an_grow((void **)&l->min, &old, n, sizeof(*l->min)))
		return -ENOMEM;
	old = *cap;
	if (an_grow((void **)&l->max, &old, n, sizeof(*l->max)))
		return -ENOMEM;
	old = *cap;
	if (an_grow((void **)&l->sum, &old, n, sizeof(*l->sum)))
		return -ENOMEM;
	old = *cap;
	if (an_grow((void **)&l->count, &old, n, sizeof(*l->count)))
		return -ENOMEM;
	for (size_t i = *cap; i < n; i++) {
		l->min[i] = INFINITY;
		l->max[i] = -INFINITY;
		l->sum[i] = 0;
		l->count[i] = 0;
	}
	*cap = n;
	return 0;
}

/* Two buckets into one: the bucket doubles, their number halves. */
static void fine_merge(struct an_level *l)
{
	size_t k = 0;

	for (size_t i = 0; i < l->n; i += 2, k++) {
		double mn = l->min[i], mx = l->max[i], sm = l->sum[i];
		uint32_t c = l->count[i];

		if (i + 1 < l->n) {
			if (l->min[i + 1] < mn)
				mn = l->min[i + 1];
			if (l->max[i + 1] > mx)
				mx = l->max[i + 1];
			sm += l->sum[i + 1];
			c += l->count[i + 1];
		}
		l->min[k] = mn;
		l->max[k] = mx;
		l->sum[k] = sm;
		l->count[k] = c;
	}
	for (size_t i = k; i < l->n; i++) {
		l->min[i] = INFINITY;
		l->max[i] = -INFINITY;
		l->sum[i] = 0;
		l->count[i] = 0;
	}
	l->n = k;
	l->bucket_ns *= 2;
}

static int level_coarse(struct an_level *coarse, const struct an_level *fine,
			size_t factor)
{
	size_t cap = 0;

	coarse->bucket_ns = fine->bucket_ns * (int64_t)factor;
	coarse->t0_ns = fine->t0_ns;
	coarse->n = (fine->n + factor - 1) / factor;
	if (fine_room(coarse, &cap, coarse->n ? coarse->n : 1))
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	for (size_t i = 0; i < fine->n; i++) {
		size_t j = i / factor;

		if (!fine->count[i])
			continue;
		if (fine->min[i] < coarse->min[j])
			coarse->min[j] = fine->min[i];
		if (fine->max[i] > coarse->max[j])
			coarse->max[j] = fine->max[i];
		coarse->sum[j] += fine->sum[i];
		coarse->count[j] += fine->count[i];
	}
	return 0;
}

/* ---- raw windows ------------------------------------------------------------ */

static int cmp_span(const void *a, const void *b)
{
	const struct an_raw *x = a, *y = b;

	return x->win.start < y->win.start ? -1 : x->win.start > y->win.start;
}

static int raw_add(struct an_energy *en, size_t *cap, int64_t a, int64_t b)
{
	int ret = an_grow((void **)&en->raw, cap, en->nraw + 1,
			  sizeof(*en->raw));

	if (ret)
		return ret;
	memset(&en->raw[en->nraw], 0, sizeof(en->raw[0]));
	en->raw[en->nraw++].win = (struct an_span){ a, b };
	return 0;
}

/* Windows around the wakeups, the aborts and the leaks, merged. */
static int raw_windows(struct an_energy *en, const struct an_timeline *tl,
		       const struct an_wakeups *wk)
{
	size_t cap = 0, k = 0;
	int ret = 0;

	for (size_t i = 0; wk && i < wk->n && !ret; i++)
		ret = raw_add(en, &cap,
			      an_sat_sub(wk->w[i].t_ns, RAW_BEFORE_NS),
			      an_sat_add(wk->w[i].resume_t_ns, RAW_AFTER_NS));
	for (size_t i = 0; i < tl->naborts && !ret; i++)
		ret = raw_add(en, &cap,
			      an_sat_sub(tl->aborts[i].t_ns, RAW_BEFORE_NS),
			      an_sat_add(tl->aborts[i].t_ns, RAW_AFTER_NS));
	if (ret || !en->nraw)
		return ret;
	qsort(en->raw, en->nraw, sizeof(*en->raw), cmp_span);
	for (size_t i = 1; i < en->nraw; i++) {
		if (en->raw[i].win.start <= en->raw[k].win.end) {
			if (en->raw[i].win.end > en->raw[k].win.end)
				en->raw[k].win.end = en->raw[i].win.end;
		} else {
			en->raw[++k] = en->raw[i];
		}
	}
	en->nraw = k + 1;
	return 0;
}

static void raw_sample(struct walk *w, int64_t t, double p)
{
	struct an_energy *en = w->en;
	struct an_raw *r;

	while (w->raw_i < en->nraw && t >= en->raw[w->raw_i].win.end)
		w->raw_i++;
	if (w->raw_i == en->nraw || t < en->raw[w->raw_i].win.start ||
	    en->raw_total >= AN_RAW_MAX_SAMPLES)
		return;
	r = &en->raw[w->raw_i];
	if (r->n == r->cap) {
		/* first: room for the window at the median interval */
		size_t cap = r->cap ? r->cap * 2 : 1024;

		if (!r->cap && w->median > 0 &&
		    (r->win.end - r->win.start) / w->median + 2 > (int64_t)cap)
			cap = (size_t)((r->win.end - r->win.start) / w->median + 2);
		if (!r->cap && cap > AN_RAW_MAX_SAMPLES - en->raw_total)
			cap = AN_RAW_MAX_SAMPLES - en->raw_total;
		int64_t *tt = realloc(r->t, cap * sizeof(*tt));
		double *pp;

		if (!tt)
			return;		/* the trace only: not fatal */
		r->t = tt;
		pp = realloc(r->p, cap * sizeof(*pp));
		if (!pp)
			return;
		r->p = pp;
		r->cap = cap;
	}
	r->t[r->n] = t;
	r->p[r->n++] = p;
	en->raw_total++;
}

/* ---- the sample loop ---------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int add_gap(struct an_energy *en, size_t *cap, int64_t t,
		   int64_t next_t, uint64_t missing, bool declared)
{
	int ret = an_grow((void **)&en->gaps, cap, en->ngaps + 1,
			  sizeof(*en->gaps));

	if (ret)
		return ret;
	en->gaps[en->ngaps++] = (struct an_gap){
		.t_ns = t, .duration_ns = next_t - t, .missing = missing,
		.declared = declared,
	};
	en->missing += missing;
	return 0;
}

static int trace_sample(struct walk *w, int64_t t, double p)
{
	struct an_level *l = w->fine;
	size_t b;

	if (t >= w->bucket_end) {
		b = (size_t)((t - l->t0_ns) / l->bucket_ns);
		while (b >= FINE_MAX) {
			fine_merge(l);
			b = (size_t)((t - l->t0_ns) / l->bucket_ns);
		}
		if (b >= l->n) {
			/*
			 * all FINE_MAX buckets at once (2.8 MB): grown by
			 * doubling, every realloc copied the level
			 */
			if (fine_room(l, &w->fine_cap, FINE_MAX))
				return sbrig_set_error(-ENOMEM,
						       "analysis: out of memory");
			l->n = b + 1;
		}
		w->bucket = b;
		w->bucket_end = l->t0_ns + (int64_t)(b + 1) * l->bucket_ns;
	}
	b = w->bucket;
	if (p < l->min[b])
		l->min[b] = p;
	if (p > l->max[b])
		l->max[b] = p;
	l->sum[b] += p;
	l->count[b]++;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The suspended baseline: the median of the finest level's bucket means
 * over the buckets wholly inside a suspended stretch trimmed at both ends
 * by the larger of its enter/exit uncertainty and two sample intervals. A
 * median, not a mean: a platform wakes (and draws power) a while before
 * the kernel logs "exit", and a mean over the stretch would count that.
 */
static int baseline(struct an_energy *en, const struct an_timeline *tl,
		    const struct an_level *l, int64_t sample_ns)
{
	double *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	int ret = 0;

	for (size_t i = 0; i < l->n && k < tl->nsusp; i++) {
		int64_t a = l->t0_ns + (int64_t)i * l->bucket_ns;
		int64_t b = a + l->bucket_ns, trim;

		while (k < tl->nsusp && tl->susp[k].end <= a)
			k++;
		if (k == tl->nsusp)
			break;
		trim = tl->susp_unc[k] > 2 * sample_ns ? tl->susp_unc[k] :
			2 * sample_ns;
		if (!l->count[i] || a < tl->susp[k].start + trim ||
		    b > tl->susp[k].end - trim)
			continue;
		ret = an_grow((void **)&v, &cap, n + 1, sizeof(*v));
		if (ret)
			break;
		v[n++] = l->sum[i] / l->count[i];
	}
	if (!ret && n) {
		qsort(v, n, sizeof(*v), cmp_double);
		en->have_baseline = true;
		en->baseline_uW = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	free(v);
	return ret;
}

/* ---- runs of plain samples ----------------------------------------------- */

/*
 * The samples between two events of the walk (a change point, the end of
 * the trace bucket, a raw window, a declared gap) need nothing but their
 * trapezoids, the bucket's min/max/sum/count and the capture's min/max:
 * fast_run() does that in registers, in the order and with the arithmetic
 * of the per-sample path below (the sums come out bit for bit the same),
 * and leaves every other sample to that path.
 *
 * fast_limit() is the time a run must stay below: the next change point
 * (the per-sample path applies those at t <= sample), the end of the
 * current bucket, the next raw window's start (while raw samples are
 * still kept), a declared gap's t_ns + 1 (a gap is an interval that ends
 * after it) and its next_t_ns (where the walk moves on to the next gap).
 */
static int64_t fast_limit(const struct walk *w, const struct cp *cps,
			  size_t ci, size_t ncps, const struct sbrig_gap *dgaps,
			  size_t *gi, size_t ndg, int64_t t0)
{
	const struct an_energy *en = w->en;
	int64_t lim = w->bucket_end;

	if (ci < ncps && cps[ci].t < lim)
		lim = cps[ci].t;
	while (*gi < ndg && dgaps[*gi].next_t_ns <= t0)	/* as the walk does */
		(*gi)++;
	if (*gi < ndg) {
		const struct sbrig_gap *g = &dgaps[*gi];

		if (g->t_ns < INT64_MAX && g->t_ns + 1 < lim)
			lim = g->t_ns + 1;
		if (g->next_t_ns < lim)
			lim = g->next_t_ns;
	}
	if (en->raw_total < AN_RAW_MAX_SAMPLES && w->raw_i < en->nraw) {
		const struct an_span *r = &en->raw[w->raw_i].win;

		if (r->start < lim)
			lim = r->start;
		if (r->end < lim)
			lim = r->end;
	}
	return lim;
}

/*
 * From buf[*bi] on, the samples before @lim that are in time order and no
 * further than @gap_ns from the one before (else the per-sample path
 * decides: a gap, or an error); *bi, *t0 and *p0 move past them.
 */
static void fast_run(struct walk *w, const struct sbrig_sample *buf,
		     size_t *bi, size_t nbuf, int64_t *t0, double *p0,
		     int64_t gap_ns, int64_t lim)
{
	struct an_energy *en = w->en;
	struct an_level *l = w->fine;
	size_t b = w->bucket, k = *bi;
	double acc = w->acc, pmin = en->pmin_uW, pmax = en->pmax_uW;
	double bmin = l->min[b], bmax = l->max[b], bsum = l->sum[b];
	uint32_t bcnt = l->count[b];
	int64_t dur = w->dur, tp = *t0;
	double pp = *p0;

	for (; k < nbuf; k++) {
		int64_t t = buf[k].t_ns;
		double p;

		/* tp >= 0 (the per-sample path checked it): no overflow */
		if (t >= lim || t < tp || t > AN_TIME_MAX || t - tp > gap_ns)
			break;
		p = an_sample_power_uW(&buf[k]);
		if (p < pmin)
			pmin = p;
		if (p > pmax)
			pmax = p;
		acc += (pp + p) * (double)(t - tp);
		dur += t - tp;
		if (p < bmin)
			bmin = p;
		if (p > bmax)
			bmax = p;
		bsum += p;
		bcnt++;
		tp = t;
		pp = p;
	}
	if (k == *bi)
		return;
	en->samples += k - *bi;
	en->last_t = tp;
	en->pmin_uW = pmin;
	en->pmax_uW = pmax;
	l->min[b] = bmin;
	l->max[b] = bmax;
	l->sum[b] = bsum;
	l->count[b] = bcnt;
	w->acc = acc;
	w->dur = dur;
	*bi = k;
	*t0 = tp;
	*p0 = pp;
}

/*
 * The sensor did not deliver its samples up to the stop ([end]
 * sensor_tail_lost): from the last sample to the stop is a gap like the
 * others (no energy integrated, its bounds given), after the capture's
 * end. Its samples are counted from the median interval (0 unknown).
 */
static int tail_lost(struct an_energy *en, struct sbrig_capread *cr,
		     size_t *gaps_cap, int64_t median)
{
	const struct sbrig_capture_meta *m = sbrig_capread_meta(cr);
	int64_t from = m->sensor_tail_lost_from_ns;
	int64_t to = m->sensor_tail_lost_to_ns;
	int ret;

	if (!m->sensor_tail_lost)
		return 0;
	if (from < 0 || to > AN_TIME_MAX)
		return sbrig_set_error(-EINVAL, "%s/meta.ini: [end] "
				       "sensor_tail_lost_from_ns %" PRId64
				       " to _to_ns %" PRId64 ": not a span on "
				       "the host's clock (0 to %" PRId64 ")",
				       sbrig_capread_dir(cr), from, to,
				       AN_TIME_MAX);
	if (en->samples && en->last_t > from)	/* never over samples */
		from = en->last_t;
	if (to <= from)
		return 0;
	ret = add_gap(en, gaps_cap, from, to,
		      median > 0 ? (uint64_t)((to - from) / median) : 0, true);
	if (!ret)
		en->gaps[en->ngaps - 1].at_stop = true;
	return ret;
}

/**
 * an_integrate() - energies, gaps and the trace from the samples
 * @en: out (zeroed storage)
 * @cr: the capture (its samples are read from the start)
 * @tl: the timeline (blockers get their energies)
 * @wk: the wakeups (get their episodes' energies)
 *
 * The timeline's open spans end at AN_OPEN_END: change points beyond the
 * last sample are never reached, so the end of the capture need not be
 * known yet.
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the samples' file:line.
 */
int an_integrate(struct an_energy *en, struct sbrig_capread *cr,
		 struct an_timeline *tl, struct an_wakeups *wk)
{
	struct sbrig_gap *dgaps = NULL;
	struct sbrig_sample *buf = NULL, s;
	int64_t *dts = NULL, gap_ns = INT64_MAX, median = 0;
	size_t ndg = 0, dg_cap = 0, gi = 0, nbuf = 0, bi = 0, gaps_cap = 0;
	size_t nhead;
	ssize_t got = 0;
	struct walk w = { .en = en, .tl = tl, .wk = wk };
	struct cp *cps = NULL;
	size_t ncps = 0, ci = 0;
	int64_t t0 = 0;
	double p0 = 0;
	bool have = false;
	int ret;

	memset(en, 0, sizeof(*en));
	en->pmin_uW = INFINITY;
	en->pmax_uW = -INFINITY;

	/* declared gaps (small) */
	{
		struct sbrig_gap g;

		while ((ret = sbrig_capread_next_gap(cr, &g)) == 1) {
			/* in order, apart: the walk takes them one by one */
			if (g.next_t_ns <= g.t_ns ||
			    (ndg && g.t_ns < dgaps[ndg - 1].next_t_ns)) {
				struct sbrig_capfile_info fi;

				sbrig_capread_file_info(cr, SBRIG_CAPFILE_GAPS,
							&fi);
				ret = sbrig_set_error(-EINVAL, "%s/gaps.tsv:%"
					PRIu64 ": gap %" PRId64 "..%" PRId64
					": %s", sbrig_capread_dir(cr), fi.line,
					g.t_ns, g.next_t_ns,
					g.next_t_ns <= g.t_ns ?
					"next_t_ns is not after t_ns" :
					"t_ns is before the previous gap's "
					"next_t_ns");
				goto out;
			}
			ret = an_grow((void **)&dgaps, &dg_cap, ndg + 1,
				      sizeof(*dgaps));
			if (ret)
				goto out;
			dgaps[ndg++] = g;
		}
		if (ret < 0)
			goto out;
	}

	/*
	 * The samples are read in batches of SAMPLE_BATCH into @buf
	 * (sbrig_capread_samples(): from samples.bin large read()s and no
	 * per-sample call). The first batch is filled as far as the file
	 * goes; its first MEDIAN_SAMPLES give the median interval (undeclared
	 * gaps), then the loop below walks it and the batches after it.
	 */
	buf = malloc(SAMPLE_BATCH * sizeof(*buf));
	dts = malloc(MEDIAN_SAMPLES * sizeof(*dts));
	if (!buf || !dts) {
		ret = sbrig_set_error(-ENOMEM, "analysis: out of memory");
		goto out;
	}
	while (nbuf < SAMPLE_BATCH &&
	       (got = sbrig_capread_samples(cr, buf + nbuf,
					    SAMPLE_BATCH - nbuf)) > 0)
		nbuf += (size_t)got;
	if (nbuf < SAMPLE_BATCH && got < 0) {
		ret = (int)got;
		goto out;
	}
	nhead = nbuf < MEDIAN_SAMPLES ? nbuf : MEDIAN_SAMPLES;
	for (size_t i = 1; i < nhead; i++)
		dts[i - 1] = an_sat_sub(buf[i].t_ns, buf[i - 1].t_ns);
	if (nhead > 1) {
		qsort(dts, nhead - 1, sizeof(*dts), cmp_i64);
		median = dts[(nhead - 1) / 2];
		if (median > 0)
			gap_ns = median > INT64_MAX / GAP_FACTOR ? INT64_MAX :
				median * GAP_FACTOR;
	}

	w.act = calloc(tl->nb + 1, sizeof(*w.act));
	w.pos = calloc(tl->nb + 1, sizeof(*w.pos));
	w.wopen = calloc((wk ? wk->n : 0) + 1, sizeof(*w.wopen));
	if (!w.act || !w.pos || !w.wopen) {
		ret = sbrig_set_error(-ENOMEM, "analysis: out of memory");
		goto out;
	}
	ret = build_cps(&w, &cps, &ncps);
	if (ret)
		goto out;
	ret = raw_windows(en, tl, wk);
	if (ret)
		goto out;
	w.median = median;

	for (;;) {
		double p;

		if (bi == nbuf) {
			got = sbrig_capread_samples(cr, buf, SAMPLE_BATCH);
			if (got <= 0) {
				ret = (int)got;
				break;
			}
			nbuf = (size_t)got;
			bi = 0;
		}
		if (have) {
			fast_run(&w, buf, &bi, nbuf, &t0, &p0, gap_ns,
				 fast_limit(&w, cps, ci, ncps, dgaps, &gi, ndg, t0));
			if (bi == nbuf)
				continue;
		}
		s = buf[bi++];
		if (s.t_ns < 0 || s.t_ns > AN_TIME_MAX) {
			ret = sbrig_set_error(-EINVAL, "%s/%s: sample %" PRIu64
					      ": t_ns %" PRId64 ": not a time "
					      "on the host's clock (0 to %"
					      PRId64 ")", sbrig_capread_dir(cr),
					      sbrig_capread_file_name(cr,
						SBRIG_CAPFILE_SAMPLES),
					      en->samples + 1, s.t_ns,
					      AN_TIME_MAX);
			goto out;
		}
		p = an_sample_power_uW(&s);
		if (!en->samples++)
			en->first_t = s.t_ns;
		en->last_t = s.t_ns;
		if (p < en->pmin_uW)
			en->pmin_uW = p;
		if (p > en->pmax_uW)
			en->pmax_uW = p;
		if (!have) {
			have = true;
			t0 = s.t_ns;
			p0 = p;
			w.fine = &en->level[AN_LEVELS - 1];
			w.fine->bucket_ns = FINE_START_NS;
			w.fine->t0_ns = t0;
			w.bucket_end = t0;	/* the first sample opens one */
			/* change points before the first sample: open now */
			while (ci < ncps && cps[ci].t <= t0)
				apply(&w, &cps[ci++]);
			raw_sample(&w, s.t_ns, p);
			ret = trace_sample(&w, s.t_ns, p);
			if (ret)
				goto out;
			continue;
		}
		if (s.t_ns < t0) {
			ret = sbrig_set_error(-EINVAL, "%s: samples out of time "
					      "order (%lld after %lld)",
					      sbrig_capread_dir(cr),
					      (long long)s.t_ns, (long long)t0);
			goto out;
		}
		/* a gap: declared, or far longer than the usual interval */
		while (gi < ndg && dgaps[gi].next_t_ns <= t0)
			gi++;
		if ((gi < ndg && dgaps[gi].t_ns < s.t_ns) ||
		    s.t_ns - t0 > gap_ns) {
			bool declared = gi < ndg && dgaps[gi].t_ns < s.t_ns;
			uint64_t miss = declared ? dgaps[gi].missing :
				(uint64_t)((s.t_ns - t0) / (median ? median : 1)) - 1;

			ret = add_gap(en, &gaps_cap, t0, s.t_ns, miss, declared);
			if (ret)
				goto out;
			flush(&w);
			while (ci < ncps && cps[ci].t <= s.t_ns)
				apply(&w, &cps[ci++]);
		} else {
			while (ci < ncps && cps[ci].t <= s.t_ns) {
				int64_t tc = cps[ci].t;
				/* a second change point at the same instant */
				double pc = tc == t0 ? p0 : p0 + (p - p0) *
					(double)(tc - t0) / (double)(s.t_ns - t0);

				w.acc += (p0 + pc) * (double)(tc - t0);
				w.dur += tc - t0;
				flush(&w);
				t0 = tc;
				p0 = pc;
				apply(&w, &cps[ci++]);
			}
			w.acc += (p0 + p) * (double)(s.t_ns - t0);
			w.dur += s.t_ns - t0;
		}
		t0 = s.t_ns;
		p0 = p;
		raw_sample(&w, s.t_ns, p);
		ret = trace_sample(&w, s.t_ns, p);
		if (ret)
			goto out;
	}
	if (ret < 0)
		goto out;
	flush(&w);
	ret = tail_lost(en, cr, &gaps_cap, median);
	if (ret)
		goto out;
	if (w.fine) {
		for (int i = AN_LEVELS - 2; i >= 0 && !ret; i--)
			ret = level_coarse(&en->level[i], w.fine,
					   i == AN_LEVELS - 2 ? 10 : 100);
	}
	for (size_t i = 0; i < en->ngaps; i++) {
		struct an_gap *g = &en->gaps[i];

		g->hidden_min_uJ = en->pmin_uW * (double)g->duration_ns *
			UJ_PER_UW_NS;
		g->hidden_max_uJ = en->pmax_uW * (double)g->duration_ns *
			UJ_PER_UW_NS;
	}
	if (w.fine)
		ret = baseline(en, tl, w.fine, median);
out:
	free(dgaps);
	free(buf);
	free(dts);
	free(cps);
	free(w.act);
	free(w.pos);
	free(w.wopen);
	return ret;
}

void an_energy_free(struct an_energy *en)
{
	for (int i = 0; i < AN_LEVELS; i++) {
		free(en->level[i].min);
		free(en->level[i].max);
		free(en->level[i].sum);
		free(en->level[i].count);
	}
	for (size_t i = 0; i < en->nraw; i++) {
		free(en->raw[i].t);
		free(en->raw[i].p);
	}
	free(en->raw);
	free(en->gaps);
	memset(en, 0, sizeof(*en));
}
