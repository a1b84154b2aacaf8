// SPDX-License-Identifier: GPL-2.0
/*
 * marker.c - pair marker-line edges with the module events that drove them.
 *
 * Model: the level is "any blocker active". The event stream says which
 * blockers are active (block adds an object of its name, unblock removes
 * one: objects may share a name, and the module logs a block only when an
 * object becomes active, an unblock only when one becomes inactive); a
 * change of the set between empty and non-empty is a transition, which
 * the line shows as an edge some microseconds later. Transitions and edges wait in
 * two small FIFOs; the oldest of each pair up when they have the same
 * direction and the transition's mapped host time is within (its clock
 * uncertainty + window) of the edge. Otherwise the older of the two heads
 * is dropped once it is too old to pair with anything that can still
 * come. Events reach the host later than edges (the UART), so the edge
 * FIFO is the one that usually waits.
 *
 * Lost edges: the kernel numbers each line's edges (line_seqno); a jump
 * means its event buffer overflowed (the rig's loop stalled while the
 * line toggled fast). Every pending edge and transition is dropped, and
 * until the next pair only transitions mapped to within reach of the
 * first edge after the jump are queued: pairing by order alone (unmapped
 * events) could match an edge with the transition of a lost one, a wrong
 * clock sample with the marker's weight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/marker.h>

#include "internal.h"

#define MK_FIFO		32	/* pending transitions / edges / pairs */
#define MK_MAX_ACTIVE	256	/* objects tracked at once */

struct mk_item {
	int64_t host_ns;	/* edge time, or mapped event time */
	int64_t uncert_ns;	/* events: clock uncertainty (<0: unmapped) */
	int64_t target_ns;	/* events only */
	bool rising;
};

struct mk_fifo {
	struct mk_item item[MK_FIFO];
	unsigned int head, len;
};

struct sbrig_marker {
	int64_t window_ns;
	/* names of the active blockers; n_active < 0: unknown after "lost" */
	char (*active)[SBRIG_NAME_MAX];
	int n_active;
	struct mk_fifo trans, edges;
	struct sbrig_marker_pair pairs[MK_FIFO];
	unsigned int pair_head, n_pairs;
	bool seq_known;		/* next_seqno is the one due */
	uint64_t next_seqno;	/* line_seqno of the next edge */
	uint64_t lost_edges;	/* seqno jumps, summed */
	bool resync;		/* after a jump, until the next pair */
	int64_t resync_ns;	/* the first edge after the jump */
};

static void fifo_push(struct mk_fifo *f, const struct mk_item *it)
{
	if (f->len == MK_FIFO) {	/* full: the oldest can no longer pair */
		f->head = (f->head + 1) % MK_FIFO;
		f->len--;
	}
	f->item[(f->head + f->len) % MK_FIFO] = *it;
	f->len++;
}

static struct mk_item *fifo_peek(struct mk_fifo *f)
{
	return f->len ? &f->item[f->head] : NULL;
}

static void fifo_pop(struct mk_fifo *f)
{
	f->head = (f->head + 1) % MK_FIFO;
	f->len--;
}

struct sbrig_marker *sbrig_marker_new(int64_t window_ns)
{
	struct sbrig_marker *mk = calloc(1, sizeof(*mk));

	if (!mk)
		return NULL;
	mk->active = calloc(MK_MAX_ACTIVE, sizeof(*mk->active));
	if (!mk->active) {
		free(mk);
		errno = ENOMEM;
		return NULL;
	}
	mk->window_ns = window_ns;
	return mk;
}

void sbrig_marker_free(struct sbrig_marker *mk)
{
	if (!mk)
		return;
	free(mk->active);
	free(mk);
}

void sbrig_marker_reset(struct sbrig_marker *mk)
{
	mk->n_active = 0;
	memset(&mk->trans, 0, sizeof(mk->trans));
	memset(&mk->edges, 0, sizeof(mk->edges));
	mk->pair_head = 0;
	mk->n_pairs = 0;
}

int sbrig_marker_active(const struct sbrig_marker *mk)
{
	return mk->n_active;
}

uint64_t sbrig_marker_lost_edges(const struct sbrig_marker *mk)
{
	return mk->lost_edges;
}

void sbrig_marker_expect_seqno(struct sbrig_marker *mk, uint64_t seqno)
{
	mk->seq_known = true;
	mk->next_seqno = seqno;
}

static int find_active(const struct sbrig_marker *mk, const char *name)
{
	for (int i = 0; i < mk->n_active; i++)
		if (!strcmp(mk->active[i], name))
			return i;
	return -1;
}

static void add_pair(struct sbrig_marker *mk, const struct mk_item *edge,
		     const struct mk_item *tr)
{
	struct sbrig_marker_pair *p;

	if (mk->n_pairs == MK_FIFO) {
		mk->pair_head = (mk->pair_head + 1) % MK_FIFO;
		mk->n_pairs--;
	}
	p = &mk->pairs[(mk->pair_head + mk->n_pairs) % MK_FIFO];
	p->host_ns = edge->host_ns;
	p->target_ns = tr->target_ns;
	p->rising = edge->rising;
	mk->n_pairs++;
}

/* Pair the FIFO heads as far as possible; drop heads that cannot pair. */
static void match(struct sbrig_marker *mk)
{
	struct mk_item *e, *t;
	int64_t tol, d;

	while ((e = fifo_peek(&mk->edges)) && (t = fifo_peek(&mk->trans))) {
		tol = mk->window_ns + (t->uncert_ns > 0 ? t->uncert_ns : 0);
		d = e->host_ns - t->host_ns;
		if (e->rising == t->rising &&
		    (t->uncert_ns < 0 || (d <= tol && d >= -tol))) {
			add_pair(mk, e, t);
			mk->resync = false;
			fifo_pop(&mk->edges);
			fifo_pop(&mk->trans);
			continue;
		}
		/* no match: the older head has missed its partner */
		if (t->uncert_ns >= 0 && t->host_ns < e->host_ns)
			fifo_pop(&mk->trans);
		else
			fifo_pop(&mk->edges);
	}
}

int sbrig_marker_add_event(struct sbrig_marker *mk,
			   const struct sbrig_event *ev)
{
	struct mk_item t = {
		.host_ns = ev->host_t_ns,
		.uncert_ns = ev->uncert_ns,
		.target_ns = ev->target_t_ns,
	};
	int i, before = mk->n_active;

	if (!strcmp(ev->type, "lost")) {
		mk->n_active = -1;	/* unknown until the line reads low */
		memset(&mk->trans, 0, sizeof(mk->trans));
		return 0;
	}
	if (mk->n_active < 0 || ev->cut)
		return 0;	/* a cut name cannot be matched to its unblock */
	if (!strcmp(ev->type, "block")) {
		if (mk->n_active == MK_MAX_ACTIVE)
			return 0;
		snprintf(mk->active[mk->n_active++], SBRIG_NAME_MAX, "%s",
			 ev->arg);
	} else if (!strcmp(ev->type, "unblock")) {
		i = find_active(mk, ev->arg);
		if (i < 0)
			return 0;
		memcpy(mk->active[i], mk->active[--mk->n_active],
		       SBRIG_NAME_MAX);
	} else {
		return 0;
	}
	if ((before == 0) == (mk->n_active == 0))
		return 0;
	t.rising = before == 0;
	/* after lost edges: no pairing by order, nothing from before them */
	if (mk->resync &&
	    (t.uncert_ns < 0 ||
	     t.host_ns + t.uncert_ns + mk->window_ns < mk->resync_ns))
		return 1;
	fifo_push(&mk->trans, &t);
	match(mk);
	return 1;
}

void sbrig_marker_add_edge(struct sbrig_marker *mk,
			   const struct sbrig_edge *edge)
{
	struct mk_item e = { .host_ns = edge->t_ns, .rising = edge->rising };

	/* seqno 0: not known (a capture of an older format) */
	if (edge->seqno && mk->seq_known && edge->seqno != mk->next_seqno) {
		if (edge->seqno > mk->next_seqno)
			mk->lost_edges += edge->seqno - mk->next_seqno;
		memset(&mk->trans, 0, sizeof(mk->trans));
		memset(&mk->edges, 0, sizeof(mk->edges));
		mk->resync = true;
		mk->resync_ns = edge->t_ns;
	}
	if (edge->seqno) {
		mk->seq_known = true;
		mk->next_seqno = edge->seqno + 1;
	}
	if (mk->n_active < 0) {
		/* after "lost": a low line proves that nothing is active */
		if (!edge->rising)
			mk->n_active = 0;
		return;
	}
	fifo_push(&mk->edges, &e);
	match(mk);
}

int sbrig_marker_next_pair(struct sbrig_marker *mk,
			   struct sbrig_marker_pair *pair)
{
	if (!mk->n_pairs)
		return 0;
	*pair = mk->pairs[mk->pair_head];
	mk->pair_head = (mk->pair_head + 1) % MK_FIFO;
	mk->n_pairs--;
	return 1;
}
