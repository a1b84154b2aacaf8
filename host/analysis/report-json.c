// SPDX-License-Identifier: GPL-2.0
/*
 * report-json.c - the analysis as report.json (host/doc/report-format.md),
 * written with json-c, atomically: a temporary file in the same directory,
 * synced and renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <json-c/printbuf.h>

#include "an-capture.h"
#include "atomic.h"
#include "report-load.h"

typedef struct json_object jobj;

/* a number with @dec decimals, printed exactly so */
static jobj *jd(double v, int dec)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof(buf), "%.*f", dec, v);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}

static jobj *ji(int64_t v)
{
	return json_object_new_int64(v);
}

/*
 * The trace's long arrays of numbers (a few hundred thousand in a long
 * capture) are formatted straight into one text each, which json-c
 * writes through a serializer of its array object: one object per array
 * instead of one per number (report.json of a 1 h capture: 0.23 s -> a
 * few ms). The numbers are the ones jd() would give.
 */
struct numtext {
	char *s;
	size_t len, cap;
	bool failed;
};

static void nt_put(struct numtext *t, const char *p, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4096;
		char *ns;

		while (cap < t->len + n + 1)
			cap *= 2;
		ns = realloc(t->s, cap);
		if (!ns) {
			t->failed = true;
			return;
		}
		t->s = ns;
		t->cap = cap;
	}
	memcpy(t->s + t->len, p, n);
	t->len += n;
}

static void nt_sep(struct numtext *t)
{
	nt_put(t, t->len > 1 ? "," : "", t->len > 1);
}

static void nt_i64(struct numtext *t, int64_t v)
{
	char buf[24], *e = buf + sizeof(buf), *p = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	nt_sep(t);
	nt_put(t, p, (size_t)(e - p));
}

/* @v with one decimal (as jd(v, 1)); null if not finite */
static void nt_d1(struct numtext *t, double v, bool null)
{
	char buf[32], *e = buf + sizeof(buf), *p = e;
	long long x;
	uint64_t u;

	if (null || !isfinite(v) || fabs(v) > 9e17) {
		nt_sep(t);
		if (null || !isfinite(v))
			nt_put(t, "null", 4);
		else
			nt_put(t, buf, (size_t)snprintf(buf, sizeof(buf),
							"%.1f", v));
		return;
	}
	x = llround(v * 10);
	u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
	*--p = (char)('0' + u % 10);
	*--p = '.';
	u /= 10;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (x < 0)
		*--p = '-';
	nt_sep(t);
	nt_put(t, p, (size_t)(e - p));
}

static int nt_serialize(jobj *o, struct printbuf *pb, int level, int flags)
{
	const struct numtext *t = json_object_get_userdata(o);

	return printbuf_memappend(pb, t->s, (int)t->len) < 0 ? -1 : 0;
}

static void nt_delete(jobj *o, void *userdata)
{
	struct numtext *t = userdata;

	free(t->s);
	free(t);
}

static struct numtext *nt_new(void)
{
	struct numtext *t = calloc(1, sizeof(*t));

	if (t)
		nt_put(t, "[", 1);
	return t;
}

/* The array @t as a json-c object (NULL if out of memory); frees @t. */
static jobj *nt_done(struct numtext *t)
{
	jobj *o;

	if (!t)
		return NULL;
	nt_put(t, "]", 1);
	o = t->failed ? NULL : json_object_new_array();
	if (!o) {
		nt_delete(NULL, t);
		return NULL;
	}
	json_object_set_serializer(o, nt_serialize, t, nt_delete);
	return o;
}

/* The length of the valid UTF-8 sequence at @s, or 0 (RFC 3629). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned int c = s[0], cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;	/* overlong, too large, a surrogate */
	return n;
}

/*
 * A JSON string of @s, which may come from the capture (a blocker name is
 * whatever user space passed to the module): a byte that is not part of
 * valid UTF-8 becomes the text \xHH, so that report.json is valid UTF-8
 * and its own renderer reads it.
 */
static jobj *js(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), w = 0;
	char *buf;
	jobj *o;

	for (size_t i = 0, n; i < len; i += n) {
		n = utf8_len(p + i);
		if (!n)
			break;
		if (i + n >= len)
			return json_object_new_string(s);	/* all valid */
	}
	if (!len)
		return json_object_new_string(s);
	buf = malloc(4 * len + 1);
	if (!buf)
		return json_object_new_string("");
	for (size_t i = 0, n; i < len; i += n) {
		n = utf8_len(p + i);
		if (n) {
			memcpy(buf + w, p + i, n);
			w += n;
		} else {
			w += (size_t)snprintf(buf + w, 5, "\\x%02x", p[i]);
			n = 1;
		}
	}
	buf[w] = '\0';
	o = json_object_new_string(buf);
	free(buf);
	return o;
}

static void put(jobj *o, const char *k, jobj *v)
{
	json_object_object_add(o, k, v);
}

static const char *kind_name(enum an_kind k)
{
	switch (k) {
	case AN_KIND_BUILTIN:
		return "builtin";
	case AN_KIND_WAKEUP_SOURCE:
		return "wakeup_source";
	case AN_KIND_SUSPEND_BLOCKER:
		break;
	}
	return "suspend_blocker";
}


/* How the capture ends (report-format.md, "The capture's end"). */
static jobj *ending(const struct an_timeline *tl)
{
	static const char *const states[] = {
		[AN_END_AWAKE] = "awake", [AN_END_SUSPENDED] = "suspended",
		[AN_END_INFERRED] = "inferred_suspended",
		[AN_END_UNKNOWN] = "unknown",
	};
	jobj *o = json_object_new_object();

	put(o, "state", js(states[tl->end_state]));
	put(o, "last_heard_ns", tl->last_word >= 0 ? ji(tl->last_word) : NULL);
	put(o, "inferred_t_ns", tl->end_state == AN_END_INFERRED ?
	    ji(tl->inferred_t) : NULL);
	put(o, "sleep_level_uW", tl->sleep_level_uW >= 0 ?
	    jd(tl->sleep_level_uW, 1) : NULL);
	return o;
}

static jobj *capture(const struct sbrig_analysis *a)
{
	const struct sbrig_capture_meta *m = &a->meta;
	const struct sbrig_provenance *p = &m->prov;
	jobj *c = json_object_new_object(), *pv = json_object_new_object();
	jobj *tg = json_object_new_array(), *sk = json_object_new_object();
	jobj *ck = json_object_new_object();
	char path[4096];

	if (!realpath(a->dir, path))
		snprintf(path, sizeof(path), "%s", a->dir);
	put(c, "path", js(path));
	put(c, "status", js(m->ended ? m->status : "open"));
	put(c, "format_version", ji(m->version));
	put(c, "start_ns", ji(a->tl.start));
	put(c, "end_ns", ji(a->tl.end));
	put(c, "duration_ns", ji(an_sat_sub(a->tl.end, a->tl.start)));
	put(c, "samples", ji((int64_t)a->en.samples));
	put(c, "gaps", ji((int64_t)a->en.ngaps));
	put(c, "missing_samples", ji((int64_t)a->en.missing));
	put(c, "events", ji((int64_t)a->tl.events));
	put(c, "unmapped_events", ji((int64_t)a->tl.unmapped));
	put(c, "placed_events", ji((int64_t)a->tl.placed));
	put(c, "end", ending(&a->tl));
	put(c, "object_ids", !a->tl.id_records && !a->tl.anon_records ? NULL :
	    js(!a->tl.anon_records ? "all" : !a->tl.id_records ? "none" :
	       "some"));
	for (size_t i = 0; i < a->tl.nskipped; i++)
		put(sk, a->tl.skipped[i].type, ji((int64_t)a->tl.skipped[i].n));
	if (a->tl.skipped_other)
		put(sk, "(other)", ji((int64_t)a->tl.skipped_other));
	put(c, "skipped_events", sk);
	put(pv, "rig_name", js(p->rig_name));
	put(pv, "rig_config", js(p->rig_config));
	put(pv, "rig_sha256", js(p->rig_sha256));
	put(pv, "host_version", js(p->host_version));
	put(pv, "git_sha", js(p->git_sha));
	put(pv, "scenario", js(p->scenario));
	put(pv, "scenario_sha256", js(p->scenario_sha256));
	put(pv, "power_uri", js(p->power_uri));
	put(pv, "target_uri", js(p->target_uri));
	put(c, "provenance", pv);
	for (unsigned int i = 0; i < m->ntargets; i++) {
		jobj *t = json_object_new_object();

		put(t, "boot_id", js(m->targets[i].boot_id));
		put(t, "kernel", js(m->targets[i].kernel));
		put(t, "module", js(m->targets[i].module));
		put(t, "agent", js(m->targets[i].agent));
		json_object_array_add(tg, t);
	}
	put(c, "targets", tg);
	put(ck, "segments", ji((int64_t)a->clk.nseg));
	put(ck, "max_uncert_ns", ji(a->tl.max_uncert_ns));
	{
		jobj *rs = json_object_new_object();
		const char *kind[2] = { "ping", "marker" };
		int64_t clamped = 0;

		for (int i = 0; i < 2; i++) {
			const struct an_clock_resid *r = &a->clk.resid[i];
			jobj *o = json_object_new_object();

			put(o, "count", ji((int64_t)r->n));
			put(o, "median_ns", r->n ? ji(r->median_ns) : NULL);
			put(o, "p95_ns", r->n ? ji(r->p95_ns) : NULL);
			put(rs, kind[i], o);
		}
		put(ck, "residuals", rs);
		put(ck, "spikes_rejected", ji((int64_t)a->clk.spikes));
		put(ck, "outliers_rejected", ji((int64_t)a->clk.outliers));
		for (size_t k = 0; k < a->clk.nseg; k++)
			clamped += a->clk.seg[k].drift_clamped;
		put(ck, "drift_clamped_segments", ji(clamped));
	}
	put(ck, "marker_edges", ji((int64_t)a->mk.edges));
	put(ck, "marker_pairs", ji((int64_t)(a->mk.edges ? a->clk.marker_pairs :
					     a->clk.marker_rows)));
	put(ck, "marker_pairs_from", js(a->mk.edges ? "edges" :
				       a->clk.marker_rows ? "clock" : "none"));
	/* the sensor's clock, next to the target's (meta.ini [sensor]) */
	if (!strcmp(m->sensor_clock, "local") ||
	    !strcmp(m->sensor_clock, "remote")) {
		jobj *sc = json_object_new_object();

		put(sc, "clock", js(m->sensor_clock));
		put(sc, "drift_ppb", m->sensor_drift_known ?
		    ji(m->sensor_drift_ppb) : NULL);
		put(sc, "uncert_ns", ji(m->sensor_uncert_ns));
		put(ck, "sensor", sc);
	}
	put(c, "clock", ck);
	return c;
}

static jobj *energy(const struct an_energy *en, const struct an_timeline *tl)
{
	jobj *e = json_object_new_object();

	put(e, "total_uJ", jd(en->total_uJ, 3));
	put(e, "suspended_uJ", jd(en->suspended_uJ, 3));
	put(e, "awake_uJ", jd(en->awake_uJ, 3));
	put(e, "suspended_ns", ji(en->suspended_ns));
	put(e, "awake_ns", ji(en->awake_ns));
	put(e, "baseline_uW", en->have_baseline ? jd(en->baseline_uW, 3) : NULL);
	put(e, "transition_ns", ji(tl->transition_ns));
	put(e, "edges_moved", ji((int64_t)tl->edges_refined));
	return e;
}

static int cmp_energy(const void *x, const void *y)
{
	const struct an_blocker *a = *(const struct an_blocker *const *)x;
	const struct an_blocker *b = *(const struct an_blocker *const *)y;

	if (a->energy_uJ != b->energy_uJ)
		return a->energy_uJ > b->energy_uJ ? -1 : 1;
	return strcmp(a->name, b->name);
}

static jobj *blockers(const struct sbrig_analysis *a)
{
	const struct an_timeline *tl = &a->tl;
	const struct an_blocker **v = calloc(tl->nb + 1, sizeof(*v));
	jobj *arr = json_object_new_array();

	if (!v)
		return arr;
	for (size_t i = 0; i < tl->nb; i++)
		v[i] = &tl->b[i];
	if (tl->nb)
		qsort(v, tl->nb, sizeof(*v), cmp_energy);
	for (size_t i = 0; i < tl->nb; i++) {
		const struct an_blocker *b = v[i];
		const struct an_stats_check *sc = &b->stats;
		jobj *o, *c;

		/* only in the stats (main while state is not on): not active */
		if (!b->activations)
			continue;
		o = json_object_new_object();
		c = json_object_new_object();

		put(o, "name", js(b->name));
		put(o, "kind", js(kind_name(b->kind)));
		put(o, "activations", ji((int64_t)b->activations));
		put(o, "active_ns", ji(b->active_ns));
		put(o, "max_active_ns", ji(b->max_active_ns));
		put(o, "energy_uJ", jd(b->energy_uJ, 3));
		put(o, "exclusive_energy_uJ", jd(b->exclusive_uJ, 3));
		put(o, "above_baseline_uJ", a->en.have_baseline ?
		    jd(b->energy_uJ - a->en.baseline_uW * b->share_ns * 1e-9,
		       3) : NULL);
		put(o, "active_at_end", json_object_new_boolean(b->active_at_end));
		if (b->kind == AN_KIND_WAKEUP_SOURCE) {
			/* the module keeps no statistics of them */
			json_object_put(c);
			put(o, "stats_check", NULL);
			json_object_array_add(arr, o);
			continue;
		}
		put(c, "snapshots", ji(sc->snapshots));
		put(c, "windows", ji((int64_t)sc->nwin));
		put(c, "count_delta", ji(sc->count_delta));
		put(c, "events_count", ji(sc->events_count));
		put(c, "total_time_delta_ns", ji(sc->total_delta_ns));
		put(c, "events_active_ns", ji(sc->events_active_ns));
		put(c, "events_near_snapshot", ji(sc->events_edge));
		put(c, "max_time_ns", ji(sc->max_time_ns));
		put(c, "agree", json_object_new_boolean(sc->agree));
		put(o, "stats_check", c);
		json_object_array_add(arr, o);
	}
	free(v);
	return arr;
}

static jobj *wakeups(const struct sbrig_analysis *a)
{
	jobj *arr = json_object_new_array();

	for (size_t i = 0; i < a->wk.n; i++) {
		const struct an_wakeup *w = &a->wk.w[i];
		bool stim = w->cause == AN_CAUSE_STIMULUS;
		jobj *o = json_object_new_object(), *b = json_object_new_array();
		char what[SBRIG_NAME_MAX + 20];

		put(o, "cause", js(stim ? "stimulus" :
				   w->cause == AN_CAUSE_WAKEUP_SOURCE ?
				   "wakeup_source" : "unknown"));
		put(o, "wakeup_source", w->cause == AN_CAUSE_WAKEUP_SOURCE ?
		    js(a->tl.b[w->source].name) : NULL);
		if (stim) {
			const struct an_stimulus *st = &a->tl.stimuli[w->stim];

			snprintf(what, sizeof(what), "%s%s%s", st->what,
				 st->arg[0] ? " " : "", st->arg);
		}
		/* the stimulus's fields: null when no stimulus woke it */
		put(o, "stimulus", stim ? js(what) : NULL);
		put(o, "t_ns", stim ? ji(w->t_ns) : NULL);
		put(o, "resume_t_ns", ji(w->resume_t_ns));
		put(o, "resume_from", js(w->resume_from == AN_FROM_PLACED ?
					 "placed" :
					 w->resume_from == AN_FROM_BOUNDED ?
					 "bounded" : "clock"));
		put(o, "marker_t_ns", stim && w->marker_t_ns >= 0 ?
		    ji(w->marker_t_ns) : NULL);
		put(o, "latency_ns", stim ? ji(w->latency_ns) : NULL);
		put(o, "uncert_ns", stim ? ji(w->uncert_ns) : NULL);
		put(o, "latency_from", !stim ? NULL :
		    js(w->marker_t_ns >= 0 ? "marker" : "resume"));
		put(o, "awake_ns", ji(w->end_ns > w->resume_t_ns ?
				      an_sat_sub(w->end_ns, w->resume_t_ns) : 0));
		put(o, "energy_uJ", jd(w->energy_uJ, 3));
		for (size_t k = 0; k < w->nblockers; k++)
			json_object_array_add(b, js(a->tl.b[w->blockers[k]].name));
		put(o, "blockers", b);
		json_object_array_add(arr, o);
	}
	return arr;
}

static jobj *latency(const struct sbrig_latency_stats *l)
{
	jobj *o = json_object_new_object();

	put(o, "n", ji(l->n));
	put(o, "min_ns", l->n ? ji(l->min_ns) : NULL);
	put(o, "median_ns", l->n ? ji(l->median_ns) : NULL);
	put(o, "p95_ns", l->n ? ji(l->p95_ns) : NULL);
	put(o, "max_ns", l->n ? ji(l->max_ns) : NULL);
	put(o, "uncert_ns", l->n ? ji(l->uncert_ns) : NULL);
	return o;
}

static jobj *gaps(const struct an_energy *en)
{
	jobj *arr = json_object_new_array();

	for (size_t i = 0; i < en->ngaps; i++) {
		const struct an_gap *g = &en->gaps[i];
		jobj *o = json_object_new_object();

		put(o, "t_ns", ji(g->t_ns));
		put(o, "duration_ns", ji(g->duration_ns));
		put(o, "missing", ji((int64_t)g->missing));
		put(o, "declared", json_object_new_boolean(g->declared));
		put(o, "at_stop", json_object_new_boolean(g->at_stop));
		put(o, "hidden_min_uJ", jd(g->hidden_min_uJ, 3));
		put(o, "hidden_max_uJ", jd(g->hidden_max_uJ, 3));
		json_object_array_add(arr, o);
	}
	return arr;
}

static jobj *findings(const struct an_findings *fd)
{
	jobj *arr = json_object_new_array();

	for (size_t i = 0; i < fd->n; i++) {
		const struct an_finding *f = &fd->f[i];
		jobj *o = json_object_new_object();

		put(o, "kind", js(f->kind));
		put(o, "blocker", f->blocker[0] ? js(f->blocker) : NULL);
		put(o, "t_ns", ji(f->t_ns));
		put(o, "detail", js(f->detail));
		json_object_array_add(arr, o);
	}
	return arr;
}

static jobj *spans(const struct an_span *v, size_t n)
{
	jobj *arr = json_object_new_array_ext((int)n);

	for (size_t i = 0; i < n; i++) {
		jobj *p = json_object_new_array_ext(2);

		json_object_array_add(p, ji(v[i].start));
		json_object_array_add(p, ji(v[i].end));
		json_object_array_add(arr, p);
	}
	return arr;
}

/* report-format.md section 6: what each suspend cost */
static jobj *suspend_costs(const struct an_costs *co,
			   const struct an_timeline *tl)
{
	jobj *o = json_object_new_object(), *arr = json_object_new_array();

	put(o, "idle_uW", co->have_idle ? jd(co->idle_uW, 3) : NULL);
	put(o, "median_break_even_ns", co->median_break_even_ns >= 0 ?
	    ji(co->median_break_even_ns) : NULL);
	for (size_t i = 0; i < co->n; i++) {
		const struct an_cost *c = &co->c[i];
		jobj *x = json_object_new_object();

		put(x, "t_ns", ji(tl->susp[c->susp].start));
		put(x, "suspended_ns", ji(c->suspended_ns));
		put(x, "entry_ns", c->has_entry ?
		    ji(an_sat_sub(c->entry.end, c->entry.start)) : NULL);
		put(x, "entry_uJ", c->has_entry ? jd(c->entry_uJ, 3) : NULL);
		put(x, "exit_ns", c->has_exit ?
		    ji(an_sat_sub(c->exit.end, c->exit.start)) : NULL);
		put(x, "exit_uJ", c->has_exit ? jd(c->exit_uJ, 3) : NULL);
		put(x, "break_even_ns", c->break_even_ns >= 0 ?
		    ji(c->break_even_ns) : NULL);
		json_object_array_add(arr, x);
	}
	put(o, "cycles", arr);
	return o;
}

/* report-format.md section 4: per cycle, its phases in time order */
static jobj *phases(const struct an_timeline *tl)
{
	jobj *arr = json_object_new_array();

	for (size_t i = 0; i < tl->ncycles; i++) {
		const struct an_cycle *c = &tl->cycles[i];
		jobj *o = json_object_new_object(), *v = json_object_new_array();

		for (unsigned int k = 0; k < c->n; k++) {
			jobj *p = json_object_new_object();

			put(p, "name", js(c->ph[k].name));
			put(p, "t_ns", ji(c->ph[k].t_ns));
			put(p, "duration_ns", ji(c->ph[k].duration_ns));
			if (c->slow && c->slow[k * AN_DEVPM_SLOWEST].duration_ns) {
				jobj *sl = json_object_new_array();

				for (int j = 0; j < AN_DEVPM_SLOWEST; j++) {
					const struct an_devpm *d =
						&c->slow[k * AN_DEVPM_SLOWEST + j];
					jobj *x;

					if (!d->duration_ns)
						break;
					x = json_object_new_object();
					put(x, "device", js(d->device));
					put(x, "verb", js(d->verb));
					put(x, "duration_ns", ji(d->duration_ns));
					put(x, "error", ji(d->error));
					json_object_array_add(sl, x);
				}
				put(p, "slowest_devices", sl);
			}
			json_object_array_add(v, p);
		}
		put(o, "cycle", ji((int64_t)i + 1));
		put(o, "phases", v);
		json_object_array_add(arr, o);
	}
	return arr;
}

static jobj *trace(const struct sbrig_analysis *a)
{
	const struct an_energy *en = &a->en;
	const struct an_timeline *tl = &a->tl;
	jobj *t = json_object_new_object(), *lv = json_object_new_array();
	jobj *raw = json_object_new_array(), *line = json_object_new_array();
	jobj *st = json_object_new_array(), *o;
	struct an_span *awake;
	size_t nawake = 0;
	int64_t prev;

	put(t, "unit", js("uW"));
	for (int i = 0; i < AN_LEVELS; i++) {
		const struct an_level *l = &en->level[i];
		struct numtext *mn, *mx, *me;

		if (!l->n || !l->count)
			continue;
		o = json_object_new_object();
		mn = nt_new();
		mx = nt_new();
		me = nt_new();
		for (size_t k = 0; k < l->n && mn && mx && me; k++) {
			bool none = !l->count[k];

			nt_d1(mn, l->min[k], none);
			nt_d1(mx, l->max[k], none);
			nt_d1(me, none ? 0 : l->sum[k] / l->count[k], none);
		}
		put(o, "bucket_ns", ji(l->bucket_ns));
		put(o, "t0_ns", ji(l->t0_ns));
		put(o, "min", nt_done(mn));
		put(o, "max", nt_done(mx));
		put(o, "mean", nt_done(me));
		json_object_array_add(lv, o);
	}
	put(t, "levels", lv);
	for (size_t i = 0; i < en->nraw; i++) {
		const struct an_raw *r = &en->raw[i];
		struct numtext *tt, *pp;

		if (!r->n)
			continue;
		o = json_object_new_object();
		tt = nt_new();
		pp = nt_new();
		for (size_t k = 0; k < r->n && tt && pp; k++) {
			nt_i64(tt, r->t[k]);
			nt_d1(pp, r->p[k], false);
		}
		put(o, "t_ns", nt_done(tt));
		put(o, "power_uW", nt_done(pp));
		json_object_array_add(raw, o);
	}
	put(t, "raw", raw);
	for (size_t i = 0; i < tl->nb; i++) {
		o = json_object_new_object();
		put(o, "name", js(tl->b[i].name));
		put(o, "kind", js(kind_name(tl->b[i].kind)));
		put(o, "spans", spans(tl->b[i].spans, tl->b[i].nspans));
		json_object_array_add(line, o);
	}
	put(t, "timeline", line);
	o = json_object_new_object();
	put(o, "state", js("suspended"));
	put(o, "spans", spans(tl->susp, tl->nsusp));
	json_object_array_add(st, o);
	awake = calloc(tl->nsusp + 1, sizeof(*awake));
	prev = tl->start;
	for (size_t i = 0; awake && i <= tl->nsusp; i++) {
		int64_t e = i < tl->nsusp ? tl->susp[i].start : tl->end;

		if (e > prev)
			awake[nawake++] = (struct an_span){ prev, e };
		if (i < tl->nsusp)
			prev = tl->susp[i].end;
	}
	o = json_object_new_object();
	put(o, "state", js("awake"));
	put(o, "spans", spans(awake, nawake));
	json_object_array_add(st, o);
	free(awake);
	put(t, "states", st);
	return t;
}

jobj *an_report_json(const struct sbrig_analysis *a)
{
	jobj *r = json_object_new_object(), *u = json_object_new_object();
	char gen[128];

	snprintf(gen, sizeof(gen), "sbrig analyze %s", sbrig_version);
	put(r, "schema", js(SBRIG_REPORT_SCHEMA));
	put(r, "version", ji(SBRIG_REPORT_VERSION));
	put(r, "generator", js(gen));
	put(r, "capture", capture(a));
	put(r, "energy", energy(&a->en, &a->tl));
	put(r, "blockers", blockers(a));
	put(u, "awake_ns", ji(a->en.unattributed_ns));
	put(u, "energy_uJ", jd(a->en.unattributed_uJ, 3));
	put(r, "unattributed", u);
	put(r, "gaps", gaps(&a->en));
	put(r, "wakeups", wakeups(a));
	put(r, "unknown_wake_count", ji((int64_t)a->wk.unknown));
	put(r, "latency", latency(&a->wk.lat));
	put(r, "phases", phases(&a->tl));
	put(r, "suspend_costs", suspend_costs(&a->co, &a->tl));
	put(r, "findings", findings(&a->fd));
	put(r, "trace", trace(a));
	return r;
}

int sbrig_analysis_write_json(const struct sbrig_analysis *a,
			      const char *path)
{
	jobj *r = an_report_json(a);
	const char *text;
	char *buf;
	size_t len;
	int ret;

	if (!r)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	text = json_object_to_json_string_length(r, JSON_C_TO_STRING_PLAIN |
						 JSON_C_TO_STRING_NOSLASHESCAPE,
						 &len);
	buf = text ? malloc(len + 1) : NULL;
	if (!buf) {
		json_object_put(r);
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	}
	memcpy(buf, text, len);
	buf[len] = '\n';
	ret = an_write_atomic(path, buf, len + 1);
	free(buf);
	json_object_put(r);
	return ret;
}
