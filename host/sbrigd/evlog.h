/* SPDX-License-Identifier: GPL-2.0 */
/*
 * evlog.h - the target's recent events, kept by the daemon for whoever
 * asks (sbrig target events), and handed on to followers as they come.
 *
 * The module's event log lives on the target; the rig receives each
 * record once (rig.h's event observers) and records it only while a
 * capture runs. This module keeps the last EVLOG_LEN events whatever runs
 * (the oldest dropped when full, and counted), and tells each follower
 * of every new one. It observes the rig from evlog_init() to evlog_fini()
 * and calls nobody above it.
 */
#ifndef SBRIGD_EVLOG_H
#define SBRIGD_EVLOG_H

#include <stddef.h>
#include <stdint.h>

#include <sbrig/records.h>

/* Events kept (about 350 KiB). */
#define EVLOG_LEN 1024

/**
 * struct evlog_follower - a follower, storage owned by it
 * @event: called from the loop with each new event, in order
 * @ctx: for @event
 * @next: list link (evlog's)
 */
struct evlog_follower {
	void (*event)(void *ctx, const struct sbrig_event *ev);
	void *ctx;
	struct evlog_follower *next;
};

int evlog_init(void);
void evlog_fini(void);

/* Events kept now (at most EVLOG_LEN). */
size_t evlog_count(void);
/* Events dropped from the front since the daemon started. */
uint64_t evlog_dropped(void);
/*
 * The @i-th event kept, oldest first (0 <= @i < evlog_count()), or NULL.
 * Valid until the next event arrives (the loop's next turn).
 */
const struct sbrig_event *evlog_get(size_t i);

/*
 * Tell @f of each new event until evlog_unfollow(); no-op if it follows.
 * Its callback may unfollow @f, no other follower.
 */
void evlog_follow(struct evlog_follower *f);
/* No more events for @f (no-op if it does not follow). */
void evlog_unfollow(struct evlog_follower *f);

#endif /* SBRIGD_EVLOG_H */
