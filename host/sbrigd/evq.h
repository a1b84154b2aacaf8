/* SPDX-License-Identifier: GPL-2.0 */
/*
 * evq.h - a bounded stream of target events and marker edges, for the
 * operations that wait for them (scenario waits, latency rounds).
 *
 * Waits are expect-like: what arrives while an operation runs is queued,
 * and a wait consumes the stream up to and including the first match, so
 * an event that comes while a key is still held is not missed. When the
 * queue is full the oldest item is dropped and counted.
 */
#ifndef SBRIGD_EVQ_H
#define SBRIGD_EVQ_H

#include <stdbool.h>
#include <stdint.h>

#include <sbrig/records.h>

#define EVQ_LEN 256

/** struct evq_item - an event or an edge */
struct evq_item {
	bool is_edge;
	union {
		struct sbrig_event ev;
		struct sbrig_edge edge;
	};
};

/**
 * struct evq - the stream (zero-initialised: empty)
 * @items: ring
 * @head: oldest item
 * @len: items queued
 * @dropped: items dropped because the ring was full
 */
struct evq {
	struct evq_item items[EVQ_LEN];
	unsigned int head, len;
	uint64_t dropped;
};

void evq_clear(struct evq *q);
void evq_push_event(struct evq *q, const struct sbrig_event *ev);
void evq_push_edge(struct evq *q, const struct sbrig_edge *edge);
/* The oldest item, removed; NULL if empty. Valid until the next push. */
const struct evq_item *evq_pop(struct evq *q);

#endif /* SBRIGD_EVQ_H */
