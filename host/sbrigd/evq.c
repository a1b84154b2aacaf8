// SPDX-License-Identifier: GPL-2.0
/*
 * evq.c - the bounded event stream, see evq.h.
 */
#include <stddef.h>

#include "evq.h"

void evq_clear(struct evq *q)
{
	q->head = 0;
	q->len = 0;
}

static struct evq_item *slot(struct evq *q)
{
	if (q->len == EVQ_LEN) {	/* full: drop the oldest */
		q->head = (q->head + 1) % EVQ_LEN;
		q->len--;
		q->dropped++;
	}
	return &q->items[(q->head + q->len++) % EVQ_LEN];
}

void evq_push_event(struct evq *q, const struct sbrig_event *ev)
{
	struct evq_item *it = slot(q);

	it->is_edge = false;
	it->ev = *ev;
}

void evq_push_edge(struct evq *q, const struct sbrig_edge *edge)
{
	struct evq_item *it = slot(q);

	it->is_edge = true;
	it->edge = *edge;
}

const struct evq_item *evq_pop(struct evq *q)
{
	const struct evq_item *it;

	if (!q->len)
		return NULL;
	it = &q->items[q->head];
	q->head = (q->head + 1) % EVQ_LEN;
	q->len--;
	return it;
}
