// SPDX-License-Identifier: GPL-2.0
/*
 * timeline.c - events, stats snapshots and stimuli -> who was active when.
 *
 * Events are read in the order the capture has them (per boot, the
 * module's log order), re-mapped onto host time with the offline clock
 * (clockfit.c): after an "enter" the target's clock jumped, so the events
 * that follow it use the segment in effect after that sleep (the one
 * holding the first exchange after the enter), events before any enter of
 * their boot the segment around their online host time.
 *
 * A blocker's state follows its block/unblock records (a repeated one
 * changes nothing, as in the module); the state is tracked over every
 * event, also those stamped before the capture started (the agent resends
 * its backlog), and the spans are clipped to the capture. A new boot ends
 * every activation and a suspended stretch.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "an-base.h"
#include "an-clock.h"
#include "an-timeline.h"

static int64_t clip(int64_t t, int64_t lo, int64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

/* ---- hash tables ----------------------------------------------------------
 *
 * Names and object ids come from the target, so from anyone who can make
 * a capture: a hash an attacker can compute would let a crafted capture
 * put every key in one slot and make each lookup walk all the others
 * (50 000 ids: over a billion probes). Both tables hash with SipHash-2-4
 * (libsodium's crypto_shorthash) under a key drawn from the system's
 * randomness for each timeline. Nothing depends on where a key lands:
 * blockers are kept in the order they are first seen, objects are found
 * only by id, so the outputs are the same whatever the key.
 * tl->probes counts the slots looked at (a test holds it to the keys'
 * number).
 */

_Static_assert(sizeof(((struct an_timeline *)0)->hash_key) ==
	       crypto_shorthash_KEYBYTES, "hash_key is SipHash's key");

static int hash_init(struct an_timeline *tl)
{
	if (sodium_init() < 0)
		return sbrig_set_error(-EIO, "analysis: libsodium cannot start "
				       "(no system randomness)");
	crypto_shorthash_keygen(tl->hash_key);
	return 0;
}

static uint64_t keyed_hash(const struct an_timeline *tl, const void *p,
			   size_t n)
{
	unsigned char out[crypto_shorthash_BYTES];
	uint64_t h;

	crypto_shorthash(out, p, n, tl->hash_key);
	memcpy(&h, out, sizeof(h));
	return h;
}

/* ---- names ----------------------------------------------------------------
 *
 * A name is looked up in a hash table (the keyed hash of the name, its
 * kind flipping the top bit; open addressing), so a capture of many names
 * stays O(n).
 */

static uint64_t name_hash(const struct an_timeline *tl, bool ws,
			  const char *name)
{
	return keyed_hash(tl, name, strlen(name)) ^ ((uint64_t)ws << 63);
}

static bool is_ws(const struct an_blocker *b)
{
	return b->kind == AN_KIND_WAKEUP_SOURCE;
}

static int bhash_grow(struct an_timeline *tl)
{
	size_t cap = tl->bhash_cap ? tl->bhash_cap * 2 : 64;
	size_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return sbrig_set_error(-ENOMEM, "analysis: out of memory");
	for (size_t i = 0; i < tl->nb; i++) {
		size_t k = name_hash(tl, is_ws(&tl->b[i]), tl->b[i].name) &
			(cap - 1);

		for (tl->probes++; h[k]; tl->probes++)
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(tl->bhash);
	tl->bhash = h;
	tl->bhash_cap = cap;
	return 0;
}

/* The entity named @name (a wakeup source if @ws); created if new. */
static struct an_blocker *blocker_get(struct an_timeline *tl, bool ws,
				      const char *name)
{
	struct an_blocker *b;
	size_t k;

	if (tl->bhash_cap) {
		k = name_hash(tl, ws, name) & (tl->bhash_cap - 1);
		for (; tl->bhash[k]; k = (k + 1) & (tl->bhash_cap - 1)) {
			tl->probes++;
			b = &tl->b[tl->bhash[k] - 1];
			if (is_ws(b) == ws && !strcmp(b->name, name))
				return b;
		}
	}
	if ((tl->nb + 1) * 2 > tl->bhash_cap && bhash_grow(tl))
		return NULL;
	if (an_grow((void **)&tl->b, &tl->cap, tl->nb + 1, sizeof(*tl->b)))
		return NULL;
	b = &tl->b[tl->nb];
	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "%s", name);
	if (ws)
		b->kind = AN_KIND_WAKEUP_SOURCE;
	else if (!strcmp(name, "main") || !strcmp(name, "unknown_wakeups"))
		b->kind = AN_KIND_BUILTIN;
	else
		b->kind = AN_KIND_SUSPEND_BLOCKER;
	b->snap_active_t = -1;
	k = name_hash(tl, ws, name) & (tl->bhash_cap - 1);
	for (tl->probes++; tl->bhash[k]; tl->probes++)
		k = (k + 1) & (tl->bhash_cap - 1);
	tl->bhash[k] = ++tl->nb;
	return b;
}

static int span_add(struct an_span **v, size_t *n, size_t *cap,
		    int64_t start, int64_t end)
{
	int ret;

	if (end <= start)
		return 0;
	ret = an_grow((void **)v, cap, *n + 1, sizeof(**v));
	if (ret)
		return ret;
	(*v)[(*n)++] = (struct an_span){ start, end };
	return 0;
}

/* ---- objects --------------------------------------------------------------
 *
 * The module logs a block only when an object becomes active and an
 * unblock only when one becomes inactive. Objects of one name (every
 * evdev client's blocker is "evdev") are told apart by the id their
 * records carry (events.tsv obj, since issue 23): a record of an id opens
 * or closes that object. Records without an id (a capture from before,
 * an old agent) count a name's active objects instead: a block opens an
 * object, an unblock closes the one opened last, so the name's activity
 * is exact but which object ended is not. An unblock of an object that is
 * not open closes one active before the log shows it: one opened without
 * an id (the first snapshot's), else one active since the capture's
 * start or since records were lost. Objects by id are found in a hash
 * table (the keyed hash above, open addressing); ids count per boot.
 */

#define NO_SLOT SIZE_MAX

static uint64_t id_hash(const struct an_timeline *tl, uint64_t id)
{
	return keyed_hash(tl, &id, sizeof(id));
}

static struct an_object *obj_find(struct an_timeline *tl, uint64_t id)
{
	size_t k;

	if (!tl->obj_cap)
		return NULL;
	for (k = id_hash(tl, id) & (tl->obj_cap - 1); tl->obj[k].id;
	     k = (k + 1) & (tl->obj_cap - 1)) {
		tl->probes++;
		if (tl->obj[k].id == id)
			return &tl->obj[k];
	}
	return NULL;
}

static size_t obj_free_slot(struct an_timeline *tl, const struct an_object *h,
			    size_t cap, uint64_t id)
{
	size_t k = id_hash(tl, id) & (cap - 1);

	for (tl->probes++; h[k].id; tl->probes++)
		k = (k + 1) & (cap - 1);
	return k;
}

/* The object @id, added (inactive, of blocker @bi) if new; NULL: ENOMEM. */
static struct an_object *obj_get(struct an_timeline *tl, uint64_t id,
				 size_t bi)
{
	struct an_object *o = obj_find(tl, id), *h;
	size_t cap, k;

	if (o)
		return o;
	if ((tl->nobj + 1) * 2 > tl->obj_cap) {
		cap = tl->obj_cap ? tl->obj_cap * 2 : 64;
		h = calloc(cap, sizeof(*h));
		if (!h)
			return NULL;
		for (size_t i = 0; i < tl->obj_cap; i++)
			if (tl->obj[i].id)
				h[obj_free_slot(tl, h, cap, tl->obj[i].id)] =
					tl->obj[i];
		free(tl->obj);
		tl->obj = h;
		tl->obj_cap = cap;
	}
	k = obj_free_slot(tl, tl->obj, tl->obj_cap, id);
	tl->obj[k] = (struct an_object){ id, bi, NO_SLOT };
	tl->nobj++;
	return &tl->obj[k];
}

/*
 * A new boot: the module numbers its objects from 1 again. The table is
 * given back (not cleared), so that many short boots after a large one
 * cost what they hold.
 */
static void obj_reset(struct an_timeline *tl)
{
	free(tl->obj);
	tl->obj = NULL;
	tl->obj_cap = 0;
	tl->nobj = 0;
}

static int open_push(struct an_open **v, size_t *n, size_t *cap, int64_t t,
		     uint64_t id, uint64_t epoch)
{
	int ret = an_grow((void **)v, cap, *n + 1, sizeof(**v));

	if (!ret)
		(*v)[(*n)++] = (struct an_open){ t, id, epoch };
	return ret;
}

/* Object @i of @b's open ones is no longer active: when it began. */
static int64_t open_take(struct an_timeline *tl, struct an_blocker *b,
			 size_t i)
{
	struct an_open gone = b->open[i];
	struct an_object *o;

	b->open[i] = b->open[--b->nopen];
	if (i < b->nopen && (o = obj_find(tl, b->open[i].id)))
		o->slot = i;
	o = obj_find(tl, gone.id);
	if (o)
		o->slot = NO_SLOT;
	return gone.t;
}

/* An object began at @s, ends at @t: its span, clipped (kept if within the capture). */
static int span_end(struct an_timeline *tl, struct an_blocker *b, int64_t s,
		    int64_t t)
{
	int ret;

	s = clip(s, tl->start, tl->end);
	t = clip(t, s, tl->end);
	if (t == s && (s <= tl->start || s >= tl->end))
		return 0;	/* outside the capture */
	ret = an_grow((void **)&b->ospans, &b->ocap, b->nospans + 1,
		      sizeof(*b->ospans));
	if (!ret)
		b->ospans[b->nospans++] = (struct an_span){ s, t };
	return ret;
}

/* Since when an object not seen active was: the start, or the last lost. */
static int64_t unseen_since(const struct an_timeline *tl)
{
	return tl->lost_since > tl->start ? tl->lost_since : tl->start;
}

/* An object of @b without an id is active from @t. */
static int block(struct an_timeline *tl, struct an_blocker *b, int64_t t)
{
	return open_push(&b->anon, &b->nanon, &b->anon_cap, t, 0,
			 tl->lost_epoch);
}

/* An object of @b without an id ends at @t: the one opened last. */
static int unblock(struct an_timeline *tl, struct an_blocker *b, int64_t t)
{
	int64_t s = b->nanon ? b->anon[--b->nanon].t :
		b->nopen ? open_take(tl, b, b->nopen - 1) : unseen_since(tl);

	return span_end(tl, b, s, t);
}

/* A block record of @b's object @id at @t. */
static int block_id(struct an_timeline *tl, struct an_blocker *b, int64_t t,
		    uint64_t id)
{
	size_t bi = (size_t)(b - tl->b);
	struct an_object *o = obj_get(tl, id, bi);
	struct an_blocker *ob;
	int ret;

	if (!o)
		return -ENOMEM;
	if (o->slot != NO_SLOT) {
		ob = &tl->b[o->b];
		if (ob == b && b->open[o->slot].epoch == tl->lost_epoch)
			return 0;	/* a repeat: still active */
		/*
		 * Of this name, with records lost since it was last seen:
		 * its unblock was among them, so that activation ended at
		 * the lost record. Of another name: the module was reloaded
		 * and numbers from 1 again; that object's end is not known.
		 */
		ret = span_end(tl, ob, open_take(tl, ob, o->slot),
			       ob == b ? unseen_since(tl) : t);
		if (ret)
			return ret;
	}
	o->b = bi;
	o->slot = b->nopen;
	return open_push(&b->open, &b->nopen, &b->open_cap, t, id,
			 tl->lost_epoch);
}

/* An unblock record of @b's object @id at @t. */
static int unblock_id(struct an_timeline *tl, struct an_blocker *b,
		      int64_t t, uint64_t id)
{
	struct an_object *o = obj_get(tl, id, (size_t)(b - tl->b));
	int64_t s;

	if (!o)
		return -ENOMEM;
	if (o->slot != NO_SLOT && &tl->b[o->b] == b)
		s = open_take(tl, b, o->slot);
	else if (b->nanon)	/* one the first snapshot showed active */
		s = b->anon[--b->nanon].t;
	else
		s = unseen_since(tl);
	return span_end(tl, b, s, t);
}

/* The objects the first snapshot showed active, from the capture's start. */
static int snap_open(struct an_timeline *tl, struct an_blocker *b)
{
	int ret = 0;

	for (unsigned int i = 0; i < b->snap_active && !ret; i++)
		ret = block(tl, b, tl->start);
	b->snap_active = 0;
	return ret;
}

/* ---- suspended stretches ------------------------------------------------ */

struct state {
	int64_t susp_since;	/* -1: awake */
	int64_t susp_unc;
	bool susp_enter;	/* the open stretch began at an enter */
	bool seen_platform;	/* an enter or exit of this boot was seen */
};

static int susp_end(struct an_timeline *tl, struct state *st, int64_t t,
		    int64_t unc, bool at_exit)
{
	int64_t s = st->susp_since;
	int ret;

	if (s < 0)
		return 0;
	st->susp_since = -1;
	s = clip(s, tl->start, tl->end);
	t = clip(t, tl->start, tl->end);
	if (t <= s)
		return 0;
	ret = an_grow((void **)&tl->susp_unc, &tl->susp_unc_cap, tl->nsusp + 1,
		      sizeof(*tl->susp_unc));
	if (!ret)
		ret = an_grow((void **)&tl->susp_edges, &tl->susp_edges_cap,
			      tl->nsusp + 1, sizeof(*tl->susp_edges));
	if (!ret)
		ret = an_grow((void **)&tl->susp, &tl->susp_cap, tl->nsusp + 1,
			      sizeof(*tl->susp));
	if (ret)
		return ret;
	tl->susp[tl->nsusp] = (struct an_span){ s, t };
	tl->susp_edges[tl->nsusp] = (st->susp_enter ? AN_EDGE_ENTER : 0) |
		(at_exit ? AN_EDGE_EXIT : 0);
	tl->susp_unc[tl->nsusp++] = st->susp_unc > unc ? st->susp_unc : unc;
	return 0;
}

/* ---- stats snapshots ------------------------------------------------------ */

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The snapshot @b's rows were being summed in is complete. */
static int stats_commit(struct an_blocker *b)
{
	struct an_stats_check *sc = &b->stats;
	int ret;

	if (!sc->acc_rows)
		return 0;
	if (sc->snapshots && sc->last_snap + 1 == sc->acc_snap &&
	    sc->acc_rows == sc->last_rows && sc->acc_t > sc->last_t &&
	    sc->acc_count >= sc->last_count &&
	    sc->acc_total_ns >= sc->last_total_ns) {
		/* the same objects in two snapshots in a row */
		ret = span_add(&sc->win, &sc->nwin, &sc->win_cap, sc->last_t,
			       sc->acc_t);
		if (ret)
			return ret;
		sc->count_delta = sat_add(sc->count_delta,
					  sat_sub(sc->acc_count,
						  sc->last_count));
		sc->total_delta_ns = sat_add(sc->total_delta_ns,
					     sat_sub(sc->acc_total_ns,
						     sc->last_total_ns));
	}
	sc->snapshots++;
	sc->last_snap = sc->acc_snap;
	sc->last_t = sc->acc_t;
	sc->last_count = sc->acc_count;
	sc->last_total_ns = sc->acc_total_ns;
	sc->last_rows = sc->acc_rows;
	sc->max_time_ns = sc->acc_max_ns;
	sc->acc_rows = 0;
	if (sc->acc_active) {
		ret = an_grow((void **)&sc->active, &sc->active_cap,
			      sc->nactive + 1, sizeof(*sc->active));
		if (ret)
			return ret;
		sc->active[sc->nactive++] = (struct an_snap_active){
			sc->acc_snap, sc->acc_active };
	}
	return 0;
}

/*
 * One pass over stats.tsv. A snapshot is a run of rows with one t_ns (the
 * daemon stamps a snapshot's rows with the time it began); a capture
 * written before it did so (every row its own t_ns) is cut where a name
 * comes again that is not the row before's, which is approximate when
 * objects of one name are not listed next to each other. A name's rows
 * in a snapshot (one per object) are summed. The first snapshot tells
 * which objects are active at the start; consecutive snapshots give the
 * module's own deltas.
 */
static int read_stats(struct an_timeline *tl, struct sbrig_capread *cr)
{
	struct sbrig_blocker_stats row;
	char prev[SBRIG_NAME_MAX] = "";
	unsigned int snap = 0, deleted_snap = 0;
	size_t rows = 0;
	bool same_t = true;
	int64_t t, snap_t = 0;
	int ret;

	while ((ret = sbrig_capread_next_stats(cr, &t, &row)) == 1) {
		struct an_stats_check *sc;
		struct an_blocker *b = NULL;
		bool deleted = !strcmp(row.name, "deleted_suspend_blockers");
		bool again;

		if (!deleted) {
			b = blocker_get(tl, false, row.name);
			if (!b) {
				ret = -ENOMEM;
				break;
			}
		}
		again = deleted ? deleted_snap == snap :
			b->stats.acc_snap == snap && strcmp(prev, row.name);
		if (!rows || (t != snap_t && (again || (rows > 1 && same_t)))) {
			snap++;
			rows = 0;
			same_t = true;
			snap_t = t;
			ret = an_grow((void **)&tl->snap_t, &tl->snap_cap,
				      tl->nsnap + 1, sizeof(*tl->snap_t));
			if (ret)
				break;
			tl->snap_t[tl->nsnap++] = t;
		}
		if (t != snap_t)
			same_t = false;
		rows++;
		snprintf(prev, sizeof(prev), "%s", row.name);
		if (deleted) {
			deleted_snap = snap;
			continue;	/* not a blocker */
		}
		sc = &b->stats;
		if (sc->acc_snap != snap) {
			ret = stats_commit(b);
			if (ret)
				break;
			sc->acc_snap = snap;
			sc->acc_t = t;
			sc->acc_count = 0;
			sc->acc_total_ns = 0;
			sc->acc_max_ns = 0;
			sc->acc_active = 0;
		}
		sc->acc_rows++;
		if (row.active_since_ns > 0)
			sc->acc_active++;
		sc->acc_count = sat_add(sc->acc_count,
					row.count > INT64_MAX ? INT64_MAX :
					(int64_t)row.count);
		sc->acc_total_ns = sat_add(sc->acc_total_ns,
					   row.total_time_ns);
		if (row.max_time_ns > sc->acc_max_ns)
			sc->acc_max_ns = row.max_time_ns;
		if (snap == 1 && row.active_since_ns > 0) {
			b->snap_active++;
			b->snap_active_t = t;
		}
	}
	for (size_t i = 0; i < tl->nb && ret >= 0; i++)
		ret = stats_commit(&tl->b[i]);
	return ret < 0 ? ret : 0;
}

/* ---- events --------------------------------------------------------------- */

static int note_skipped(struct an_timeline *tl, const char *type)
{
	for (size_t i = 0; i < tl->nskipped; i++) {
		if (!strcmp(tl->skipped[i].type, type)) {
			tl->skipped[i].n++;
			return 0;
		}
	}
	if (tl->nskipped == AN_ARRAY_SIZE(tl->skipped)) {
		tl->skipped_other++;
		return 0;
	}
	snprintf(tl->skipped[tl->nskipped].type, sizeof(tl->skipped[0].type),
		 "%s", type);
	tl->skipped[tl->nskipped++].n = 1;
	return 0;
}

/*
 * An event of interest at @t (+/- @unc, mapped from segment @k: see
 * an_mapper_map()). One the log puts before the capture's start (a time
 * known only as a lower bound, from before the capture) is put at the
 * start: the report places nothing outside the capture, and says the
 * time is only bounded.
 */
static int add_event(const struct an_timeline *tl, struct an_event **v,
		     size_t *n, size_t *cap, int64_t t, int64_t unc, int k,
		     const char *arg, const char *who)
{
	int ret = an_grow((void **)v, cap, *n + 1, sizeof(**v));

	if (ret)
		return ret;
	(*v)[*n].from = k == AN_SEG_PLACED ? AN_FROM_PLACED :
		k < 0 && unc < 0 ? AN_FROM_BOUNDED : AN_FROM_CLOCK;
	if (t < tl->start) {
		t = tl->start;
		(*v)[*n].from = AN_FROM_BOUNDED;
	}
	(*v)[*n].t_ns = t;
	(*v)[*n].uncert_ns = unc;
	snprintf((*v)[*n].arg, sizeof((*v)[*n].arg), "%s", arg);
	snprintf((*v)[*n].who, sizeof((*v)[*n].who), "%s", who);
	(*n)++;
	return 0;
}

/* Every object of @b active now ends at @t. */
static int close_all(struct an_timeline *tl, struct an_blocker *b, int64_t t)
{
	int ret = snap_open(tl, b);

	while ((b->nanon || b->nopen) && !ret)
		ret = unblock(tl, b, t);
	return ret;
}

/* ---- phases ---------------------------------------------------------------
 *
 * The kernel traces each step of a suspend (suspend_resume: ACTION VAL
 * begin|end) and the module logs them as "phase" records. sleepgraph's
 * phases are the PM core's device passes: dpm_prepare is suspend_prepare
 * ... dpm_complete is resume_complete. suspend_machine runs from the end
 * of suspend_noirq to machine_suspend's begin; resume_machine from the
 * platform running again to dpm_resume_noirq's begin. The kernel's clock
 * stands still from timekeeping's suspend until syscore_resume (its
 * records in between carry the moment it stopped), so "running again" is
 * the latest record after machine_suspend's end and before
 * dpm_resume_noirq.
 *
 * A phase starts at its first record's host time; its duration is the
 * difference of its two records' target times (one boot, one cycle: the
 * target's clock, not two clock mappings that may use different fits).
 */

/** struct phase_t - a phase record's time on both clocks */
struct phase_t {
	int64_t host, target;
};

static const struct {
	const char *action, *phase;
} dpm_phases[] = {
	{ "dpm_prepare", "suspend_prepare" },
	{ "dpm_suspend", "suspend" },
	{ "dpm_suspend_late", "suspend_late" },
	{ "dpm_suspend_noirq", "suspend_noirq" },
	{ "dpm_resume_noirq", "resume_noirq" },
	{ "dpm_resume_early", "resume_early" },
	{ "dpm_resume", "resume" },
	{ "dpm_complete", "resume_complete" },
};

/**
 * struct phase_state - the cycle being read
 * @open: a cycle is open (the last of @tl->cycles)
 * @begin: begin time of each dpm_phases[] action, or -1
 * @noirq_end: end of suspend_noirq, or -1
 * @machine_end: machine_suspend's end was seen
 * @wake_t: the latest record since machine_suspend's end
 */
struct phase_state {
	bool open;
	struct an_devpm slow[AN_ARRAY_SIZE(dpm_phases)][AN_DEVPM_SLOWEST];
	bool any_slow[AN_ARRAY_SIZE(dpm_phases)];
	struct phase_t begin[AN_ARRAY_SIZE(dpm_phases)];
	struct phase_t noirq_end;
	bool machine_end;
	struct phase_t wake_t;
};

static void phases_close(struct an_timeline *tl, struct phase_state *ps)
{
	if (ps->open && !tl->cycles[tl->ncycles - 1].n) {
		tl->ncycles--;	/* an attempt with no phase: none */
		free(tl->cycles[tl->ncycles].slow);
	}
	ps->open = false;
}

/* A dev_pm record "DURATION_NS ERROR VERB DEVICE": the open phase's. */
static int devpm_event(struct phase_state *ps, const char *arg)
{
	struct an_devpm d = { .duration_ns = 0 };
	long long dur;
	int n = 0;

	if (sscanf(arg, "%lld %d %11s %n", &dur, &d.error, d.verb, &n) != 3 ||
	    !n || dur <= 0)
		return 1;
	d.duration_ns = dur;
	snprintf(d.device, sizeof(d.device), "%s", arg + n);
	for (size_t i = 0; i < AN_ARRAY_SIZE(dpm_phases); i++) {
		struct an_devpm *v = ps->slow[i];
		size_t k = AN_DEVPM_SLOWEST;

		if (ps->begin[i].target < 0)
			continue;	/* not this phase */
		while (k > 0 && v[k - 1].duration_ns < d.duration_ns)
			k--;
		if (k < AN_DEVPM_SLOWEST) {
			memmove(&v[k + 1], &v[k], (AN_DEVPM_SLOWEST - k - 1) *
				sizeof(*v));
			v[k] = d;
			ps->any_slow[i] = true;
		}
		return 0;
	}
	return 0;	/* outside a device pass: nothing to attach it to */
}

static int phase_add(struct an_timeline *tl, struct phase_state *ps,
		     const char *name, struct phase_t start, struct phase_t end)
{
	struct an_cycle *c;

	if (!ps->open) {
		int ret = an_grow((void **)&tl->cycles, &tl->cycles_cap,
				  tl->ncycles + 1, sizeof(*tl->cycles));

		if (ret)
			return ret;
		tl->cycles[tl->ncycles].slow = NULL;
		tl->cycles[tl->ncycles++].n = 0;
		ps->open = true;
	}
	c = &tl->cycles[tl->ncycles - 1];
	if (c->n == AN_PHASES || end.target < start.target)
		return 0;	/* more than a cycle has: a garbled log */
	c->ph[c->n++] = (struct an_phase){ name, start.host,
					   end.target - start.target };
	for (size_t i = 0; i < AN_ARRAY_SIZE(dpm_phases); i++) {
		if (strcmp(dpm_phases[i].phase, name) || !ps->any_slow[i])
			continue;
		if (!c->slow) {
			c->slow = calloc(AN_PHASES * AN_DEVPM_SLOWEST,
					 sizeof(*c->slow));
			if (!c->slow)
				return -ENOMEM;
		}
		memcpy(&c->slow[(c->n - 1) * AN_DEVPM_SLOWEST], ps->slow[i],
		       sizeof(ps->slow[i]));
	}
	return 0;
}

static void phases_reset(struct phase_state *ps)
{
	memset(ps->slow, 0, sizeof(ps->slow));
	memset(ps->any_slow, 0, sizeof(ps->any_slow));
	for (size_t i = 0; i < AN_ARRAY_SIZE(dpm_phases); i++)
		ps->begin[i].target = -1;
	ps->noirq_end.target = -1;
	ps->machine_end = false;
	ps->wake_t.target = -1;
}

/* A "phase" record at @t; 1 if its text is not "ACTION VAL begin|end". */
static int phase_event(struct an_timeline *tl, struct phase_state *ps,
		       const char *arg, struct phase_t t)
{
	char action[48], be[8];
	bool begin;
	int val, ret = 0;

	if (sscanf(arg, "%47s %d %7s", action, &val, be) != 3 ||
	    (strcmp(be, "begin") && strcmp(be, "end")))
		return 1;
	begin = be[0] == 'b';
	if (begin && (!strcmp(action, "suspend_enter") ||
		      !strcmp(action, "dpm_prepare")) && ps->open &&
	    tl->cycles[tl->ncycles - 1].n) {
		phases_close(tl, ps);	/* a new attempt */
		phases_reset(ps);
	}
	if (ps->machine_end && t.target > ps->wake_t.target &&
	    !(begin && !strcmp(action, "dpm_resume_noirq")))
		ps->wake_t = t;	/* the clock may run again */
	if (!strcmp(action, "machine_suspend")) {
		if (begin && ps->noirq_end.target >= 0)
			ret = phase_add(tl, ps, "suspend_machine",
					ps->noirq_end, t);
		if (!begin) {
			ps->machine_end = true;
			ps->wake_t = t;
		}
		return ret;
	}
	for (size_t i = 0; i < AN_ARRAY_SIZE(dpm_phases); i++) {
		if (strcmp(action, dpm_phases[i].action))
			continue;
		if (begin) {
			if (!strcmp(action, "dpm_resume_noirq") &&
			    ps->machine_end) {
				ret = phase_add(tl, ps, "resume_machine",
						ps->wake_t, t);
				ps->machine_end = false;
			}
			ps->begin[i] = t;
		} else if (ps->begin[i].target >= 0) {
			ret = phase_add(tl, ps, dpm_phases[i].phase,
					ps->begin[i], t);
			ps->begin[i].target = -1;
			if (!strcmp(action, "dpm_suspend_noirq"))
				ps->noirq_end = t;
			if (!strcmp(action, "dpm_complete")) {
				phases_close(tl, ps);
				phases_reset(ps);
			}
		}
		break;
	}
	return ret;
}

/* Objects of @b active in snapshot @snap (1-based), by its rows. */
static unsigned int snap_active(const struct an_blocker *b, unsigned int snap)
{
	const struct an_stats_check *sc = &b->stats;
	size_t lo = 0, hi = sc->nactive;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sc->active[mid].snap < snap)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sc->nactive && sc->active[lo].snap == snap ?
		sc->active[lo].active : 0;
}

/*
 * After "lost" records at @lost_t, the first stats snapshot says which
 * objects are active: a blocker's objects the lost records released end
 * at @lost_t, those they activated begin there (no phantom leak for an
 * unblock that was lost). Wakeup sources have no statistics: their
 * records tell, as before.
 *
 * The snapshot gives a count per name. With ids, an object a record has
 * shown active since the loss is active, and the snapshot's count says
 * how many of the others (active before the loss, no record since: their
 * state unknown) still are; the rest end at @lost_t. Without ids the
 * name's count of open objects is set to the snapshot's, closing the
 * objects opened last (which of a name's objects ended is not known).
 */
static int resync(struct an_timeline *tl, unsigned int snap, int64_t lost_t)
{
	int ret = 0;

	for (size_t i = 0; i < tl->nb && !ret; i++) {
		struct an_blocker *b = &tl->b[i];
		size_t want, known = 0, stale, need;

		if (b->kind == AN_KIND_WAKEUP_SOURCE)
			continue;
		want = snap_active(b, snap);
		ret = snap_open(tl, b);
		if (!b->ids) {
			while (!ret && b->nanon > want)
				ret = unblock(tl, b, lost_t);
			while (!ret && b->nanon < want)
				ret = block(tl, b, lost_t);
			continue;
		}
		for (size_t j = 0; j < b->nopen; j++)
			known += b->open[j].epoch == tl->lost_epoch;
		for (size_t j = 0; j < b->nanon; j++)
			known += b->anon[j].epoch == tl->lost_epoch;
		stale = b->nopen + b->nanon - known;
		need = want > known ? want - known : 0;
		for (size_t j = b->nanon; !ret && stale > need && j--;) {
			if (b->anon[j].epoch == tl->lost_epoch)
				continue;
			ret = span_end(tl, b, b->anon[j].t, lost_t);
			b->anon[j] = b->anon[--b->nanon];
			stale--;
		}
		for (size_t j = b->nopen; !ret && stale > need && j--;) {
			if (b->open[j].epoch == tl->lost_epoch)
				continue;
			ret = span_end(tl, b, open_take(tl, b, j), lost_t);
			stale--;
		}
		for (; !ret && stale < need; stale++)
			ret = block(tl, b, lost_t);
	}
	return ret;
}

/* A new boot: every activation and a suspended stretch end at @t. */
static int boot_change(struct an_timeline *tl, struct state *st, int64_t t)
{
	int ret = susp_end(tl, st, t, 0, false);

	for (size_t i = 0; i < tl->nb && !ret; i++)
		ret = close_all(tl, &tl->b[i], t);
	obj_reset(tl);
	st->seen_platform = false;
	tl->lost_since = -1;
	tl->boots++;
	return ret;
}

/*
 * A block/unblock (of object @id, 0: not known) or ws_activate/ws_relax
 * record of @name at @t.
 */
static int object_event(struct an_timeline *tl, bool ws, const char *name,
			bool on, int64_t t, uint64_t id)
{
	struct an_blocker *b = blocker_get(tl, ws, name);
	int ret = 0;

	if (!b)
		return -ENOMEM;
	if (!b->seen_event && b->snap_active) {
		if (t < b->snap_active_t)
			b->snap_active = 0;	/* see @snap_active_t */
		else
			ret = snap_open(tl, b);
	}
	b->seen_event = true;
	if (ret)
		return ret;
	if (id) {
		b->ids = true;
		return on ? block_id(tl, b, t, id) : unblock_id(tl, b, t, id);
	}
	return on ? block(tl, b, t) : unblock(tl, b, t);
}

/* @b's spans: the union of its objects' (sorted by start, in place). */
static int union_spans(struct an_blocker *b)
{
	int ret = 0;

	if (b->nospans > 1)
		qsort(b->ospans, b->nospans, sizeof(*b->ospans),
		      an_cmp_span);
	b->nspans = 0;
	for (size_t i = 0; i < b->nospans && !ret; i++) {
		const struct an_span *o = &b->ospans[i];
		struct an_span *last = b->nspans ? &b->spans[b->nspans - 1] :
			NULL;

		if (last && o->start <= last->end) {
			if (o->end > last->end)
				last->end = o->end;
			continue;
		}
		ret = span_add(&b->spans, &b->nspans, &b->cap, o->start,
			       o->end);
	}
	return ret;
}

static int events_pass(struct an_timeline *tl, struct sbrig_capread *cr,
		       struct an_mapper *mp)
{
	struct state st = { .susp_since = -1 };
	struct phase_state ps = { .open = false };
	int64_t lost_t = -1;	/* "lost" seen, not yet re-synchronised */
	size_t next_snap = 0;
	char boot[SBRIG_BOOT_ID_MAX] = "", last_blocked[SBRIG_NAME_MAX] = "";
	struct sbrig_event ev;
	int ret;

	phases_reset(&ps);
	while ((ret = sbrig_capread_next_event(cr, &ev)) == 1) {
		int64_t t, unc;
		int k;

		ret = 0;
		tl->events++;
		if (strcmp(ev.boot_id, boot)) {
			phases_close(tl, &ps);
			phases_reset(&ps);
			if (boot[0]) {
				ret = boot_change(tl, &st, ev.host_t_ns);
				if (ret)
					return ret;
			} else {
				tl->boots++;
			}
			snprintf(boot, sizeof(boot), "%s", ev.boot_id);
			last_blocked[0] = '\0';
		}
		k = an_mapper_map(mp, &ev, &t, &unc);
		if (k == AN_SEG_PLACED)
			tl->placed++;
		else if (k < 0)
			tl->unmapped++;
		sbrig_log(SBRIG_LOG_DEBUG, "event %" PRIu64 " %s %s: segment %d, "
			  "host %" PRId64 " (online %" PRId64 "), +/- %" PRId64
			  " ns", ev.seq, ev.type, ev.arg, k, t, ev.host_t_ns, unc);
		if (unc > tl->max_uncert_ns)
			tl->max_uncert_ns = unc;
		if (an_sat_sub(t, unc > 0 ? unc : 0) > tl->last_record_lo)
			tl->last_record_lo = an_sat_sub(t, unc > 0 ? unc : 0);
		/* the snapshots taken by now; the first after a "lost" */
		for (; next_snap < tl->nsnap && tl->snap_t[next_snap] <= t;
		     next_snap++) {
			if (lost_t < 0)
				continue;
			ret = resync(tl, (unsigned int)next_snap + 1, lost_t);
			if (ret)
				return ret;
			lost_t = -1;
		}

		if (!strcmp(ev.type, "block") || !strcmp(ev.type, "unblock")) {
			if (ev.obj)
				tl->id_records++;
			else
				tl->anon_records++;
			ret = object_event(tl, false, ev.arg,
					   ev.type[0] == 'b', t, ev.obj);
			if (ev.type[0] == 'b')
				snprintf(last_blocked, sizeof(last_blocked),
					 "%s", ev.arg);
		} else if (!strcmp(ev.type, "ws_activate") ||
			   !strcmp(ev.type, "ws_relax")) {
			ret = object_event(tl, true, ev.arg,
					   ev.type[3] == 'a', t, 0);
		} else if (!strcmp(ev.type, "enter")) {
			if (st.susp_since < 0) {
				st.susp_since = t;
				st.susp_unc = unc;
				st.susp_enter = true;
			}
			st.seen_platform = true;
		} else if (!strcmp(ev.type, "exit")) {
			if (!st.seen_platform && st.susp_since < 0) {
				/* the capture started with the target asleep */
				st.susp_since = tl->start;
				st.susp_unc = 0;
				st.susp_enter = false;
			}
			st.seen_platform = true;
			ret = susp_end(tl, &st, t, unc, true);
		} else if (!strcmp(ev.type, "dev_pm")) {
			if (devpm_event(&ps, ev.arg))	/* unreadable */
				ret = note_skipped(tl, ev.type);
		} else if (!strcmp(ev.type, "phase")) {
			ret = phase_event(tl, &ps, ev.arg, (struct phase_t){
					t, ev.target_t_ns });
			if (ret > 0)	/* unreadable: skipped, counted */
				ret = note_skipped(tl, ev.type);
		} else if (!strcmp(ev.type, "resume")) {
			phases_close(tl, &ps);
			phases_reset(&ps);
			ret = add_event(tl, &tl->resumes, &tl->nresumes,
					&tl->resumes_cap, t, unc, k, ev.arg,
					"");
		} else if (!strcmp(ev.type, "abort")) {
			phases_close(tl, &ps);
			phases_reset(&ps);
			ret = add_event(tl, &tl->aborts, &tl->naborts,
					&tl->aborts_cap, t, unc, k, ev.arg,
					last_blocked);
		} else if (!strcmp(ev.type, "lost")) {
			unsigned long long n = strtoull(ev.arg, NULL, 10);

			tl->lost_records += n;
			if (!tl->lost_lines++)
				tl->lost_first_t = t;
			tl->lost_since = t;
			tl->lost_epoch++;	/* every object's state unknown */
			lost_t = t;
		} else if (strcmp(ev.type, "suspend") &&
			   strcmp(ev.type, "policy")) {
			ret = note_skipped(tl, ev.type);
		}
		if (ret)
			return ret;
	}
	if (ret < 0)
		return ret;
	/* a snapshot after the last event still re-synchronises */
	for (; lost_t >= 0 && next_snap < tl->nsnap; next_snap++) {
		if (tl->snap_t[next_snap] < lost_t)
			continue;
		ret = resync(tl, (unsigned int)next_snap + 1, lost_t);
		if (ret)
			return ret;
		lost_t = -1;
	}
	/* what is still open ends with the capture */
	phases_close(tl, &ps);
	ret = susp_end(tl, &st, tl->end, 0, false);
	for (size_t i = 0; i < tl->nb && !ret; i++) {
		struct an_blocker *b = &tl->b[i];

		b->active_at_end = b->nopen || b->nanon || b->snap_active;
		ret = close_all(tl, b, tl->end);
		if (!ret)
			ret = union_spans(b);
	}
	return ret;
}

static int read_events(struct an_timeline *tl, struct sbrig_capread *cr,
		       const struct an_clock *clk)
{
	struct an_mapper mp;
	int ret = an_mapper_init(&mp, clk, cr);

	if (!ret)
		ret = events_pass(tl, cr, &mp);
	an_mapper_free(&mp);
	return ret;
}

static int read_stimuli(struct an_timeline *tl, struct sbrig_capread *cr)
{
	struct sbrig_stimulus st;
	int ret;

	while ((ret = sbrig_capread_next_stimulus(cr, &st)) == 1) {
		struct an_stimulus *s;

		ret = an_grow((void **)&tl->stimuli, &tl->stimuli_cap,
			      tl->nstimuli + 1, sizeof(*tl->stimuli));
		if (ret)
			return ret;
		s = &tl->stimuli[tl->nstimuli++];
		s->t_ns = st.t_ns;
		snprintf(s->what, sizeof(s->what), "%s", st.what);
		snprintf(s->arg, sizeof(s->arg), "%s", st.arg);
	}
	return ret < 0 ? ret : 0;
}

/* |@a - @b| <= @tol, for any times (no overflow) */
static bool within(int64_t a, int64_t b, int64_t tol)
{
	uint64_t d = a > b ? (uint64_t)a - (uint64_t)b :
		(uint64_t)b - (uint64_t)a;

	return tol >= 0 && d <= (uint64_t)tol;
}

/* The first of @n sorted disjoint windows that ends after @t (or @n). */
static size_t win_after(const struct an_span *w, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w[mid].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * What the objects' spans show over the stats windows: activations that
 * began inside one (after its start, up to its end), and the time they
 * were active inside them, summed over the objects (as the module sums
 * its rows).
 */
static void stats_events(struct an_blocker *b, int64_t edge_ns)
{
	struct an_stats_check *sc = &b->stats;

	sc->events_count = 0;
	sc->events_active_ns = 0;
	sc->events_edge = 0;
	for (size_t j = 0; j < b->nospans; j++) {
		const struct an_span *s = &b->ospans[j];
		size_t w = win_after(sc->win, sc->nwin, s->start);
		bool near = false;

		/* a snapshot's time near it: the edges around @w */
		for (size_t k = w ? w - 1 : 0; k <= w && k < sc->nwin; k++)
			near = near || within(s->start, sc->win[k].start,
					      edge_ns) ||
				within(s->start, sc->win[k].end, edge_ns);
		if (near)
			sc->events_edge++;

		/* (start, end]: a start on a window's end is in it */
		if (w > 0 && sc->win[w - 1].end == s->start &&
		    s->start > sc->win[w - 1].start)
			sc->events_count++;
		else if (w < sc->nwin && s->start > sc->win[w].start)
			sc->events_count++;
		for (; w < sc->nwin && sc->win[w].start < s->end; w++) {
			int64_t lo = s->start > sc->win[w].start ? s->start :
				sc->win[w].start;
			int64_t hi = s->end < sc->win[w].end ? s->end :
				sc->win[w].end;

			if (hi > lo)
				sc->events_active_ns += hi - lo;
		}
	}
}

/* Activations and times from the spans; the stats cross-check. */
static void summarise(struct an_timeline *tl)
{
	for (size_t i = 0; i < tl->nb; i++) {
		struct an_blocker *b = &tl->b[i];
		struct an_stats_check *sc = &b->stats;
		int64_t tol;

		b->activations = b->nospans;
		b->active_ns = 0;
		b->max_active_ns = 0;
		for (size_t j = 0; j < b->nspans; j++) {
			int64_t d = b->spans[j].end - b->spans[j].start;

			b->active_ns += d;
			if (d > b->max_active_ns)
				b->max_active_ns = d;
		}
		/*
		 * a snapshot's time is when its rows came, some ms after the
		 * module read its table: an activation that near it may be
		 * in either window
		 */
		stats_events(b, sat_add(2000000, tl->max_uncert_ns));
		tol = 2000000 * (sc->events_count + (int64_t)sc->nwin) +
			2 * tl->max_uncert_ns;
		sc->agree = !sc->nwin ||
			(llabs(sc->count_delta - sc->events_count) <=
			 sc->events_edge &&
			 llabs(sc->total_delta_ns - sc->events_active_ns) <= tol);
	}
}

/**
 * an_timeline_build() - who was active when, and the target's states
 * @tl: out (zeroed storage)
 * @cr: the capture
 * @clk: the offline clock model
 * @start: the capture's first instant
 *
 * The capture's end is not known yet (the samples are read after the
 * timeline): what is still open at the last event stays open (ends at
 * AN_OPEN_END) until an_timeline_finish().
 *
 * Return: 0, or -errno with sbrig_errmsg() naming file:line.
 */
int an_timeline_build(struct an_timeline *tl, struct sbrig_capread *cr,
		      const struct an_clock *clk, int64_t start)
{
	int ret;

	memset(tl, 0, sizeof(*tl));
	tl->start = start;
	tl->end = AN_OPEN_END;
	tl->lost_since = -1;
	tl->last_record_lo = -1;
	tl->last_word = -1;
	tl->inferred_t = -1;
	tl->sleep_level_uW = -1;
	ret = hash_init(tl);
	if (ret)
		return ret;
	ret = read_stats(tl, cr);	/* first: who is active at the start */
	if (!ret)
		ret = read_events(tl, cr, clk);
	if (!ret)
		ret = read_stimuli(tl, cr);
	if (ret)
		an_timeline_free(tl);
	return ret;
}

static void clip_spans(struct an_span *v, size_t *n, int64_t end)
{
	size_t k = 0;

	for (size_t i = 0; i < *n; i++) {
		if (v[i].end > end)
			v[i].end = end;
		if (v[i].end > v[i].start)
			v[k++] = v[i];
	}
	*n = k;
}

/**
 * an_timeline_finish() - the capture ends at @end: clip, then summarise
 * @tl: the timeline
 * @end: the capture's last instant
 */
void an_timeline_finish(struct an_timeline *tl, int64_t end)
{
	size_t n;

	tl->end = end;
	for (size_t i = 0; i < tl->nb; i++) {
		struct an_blocker *b = &tl->b[i];

		clip_spans(b->spans, &b->nspans, end);
		/* an object's: kept while it began in the capture */
		n = 0;
		for (size_t j = 0; j < b->nospans; j++) {
			if (b->ospans[j].start >= end)
				continue;
			if (b->ospans[j].end > end)
				b->ospans[j].end = end;
			b->ospans[n++] = b->ospans[j];
		}
		b->nospans = n;
	}
	n = 0;
	for (size_t i = 0; i < tl->nsusp; i++) {
		if (tl->susp[i].end > end) {
			tl->susp[i].end = end;
			tl->susp_edges[i] &= ~AN_EDGE_EXIT;
		}
		if (tl->susp[i].end > tl->susp[i].start) {
			tl->susp_unc[n] = tl->susp_unc[i];
			tl->susp_edges[n] = tl->susp_edges[i];
			tl->susp[n++] = tl->susp[i];
		}
	}
	tl->nsusp = n;
	summarise(tl);
}

bool an_timeline_suspended(const struct an_timeline *tl, int64_t t)
{
	for (size_t i = 0; i < tl->nsusp; i++)
		if (t >= tl->susp[i].start && t < tl->susp[i].end)
			return true;
	return false;
}

void an_timeline_free(struct an_timeline *tl)
{
	for (size_t i = 0; i < tl->nb; i++) {
		free(tl->b[i].spans);
		free(tl->b[i].ospans);
		free(tl->b[i].open);
		free(tl->b[i].anon);
		free(tl->b[i].stats.win);
		free(tl->b[i].stats.active);
	}
	free(tl->b);
	free(tl->bhash);
	free(tl->obj);
	free(tl->susp);
	free(tl->susp_unc);
	free(tl->susp_edges);
	free(tl->resumes);
	free(tl->aborts);
	free(tl->stimuli);
	for (size_t i = 0; i < tl->ncycles; i++)
		free(tl->cycles[i].slow);
	free(tl->cycles);
	free(tl->snap_t);
	memset(tl, 0, sizeof(*tl));
}
