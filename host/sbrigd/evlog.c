// SPDX-License-Identifier: GPL-2.0
/*
 * evlog.c - the target's recent events, see evlog.h.
 *
 * A ring of EVLOG_LEN events (static: its memory is fixed) and a list of
 * followers, no longer than the daemon's clients. A follower's callback
 * may unfollow itself (the walk takes the next link before the call), not
 * another follower.
 */
#include <stdbool.h>
#include <string.h>

#include "evlog.h"
#include "rig.h"
#include "util.h"

/* the log: only the loop's thread touches it */
static struct {
	struct sbrig_event ring[EVLOG_LEN];
	size_t head;		/* oldest event */
	size_t len;
	uint64_t dropped;
	struct evlog_follower *followers;
	struct rig_observer obs;
} ev;

size_t evlog_count(void)
{
	return ev.len;
}

uint64_t evlog_dropped(void)
{
	return ev.dropped;
}

const struct sbrig_event *evlog_get(size_t i)
{
	if (i >= ev.len)
		return NULL;
	return &ev.ring[(ev.head + i) % EVLOG_LEN];
}

void evlog_follow(struct evlog_follower *f)
{
	for (struct evlog_follower *p = ev.followers; p; p = p->next)
		if (p == f)
			return;
	f->next = ev.followers;
	ev.followers = f;
}

void evlog_unfollow(struct evlog_follower *f)
{
	for (struct evlog_follower **pp = &ev.followers; *pp;
	     pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			f->next = NULL;
			return;
		}
	}
}

static void on_event(void *data, const struct sbrig_event *e)
{
	struct evlog_follower *f, *next;

	if (ev.len == EVLOG_LEN) {
		ev.head = (ev.head + 1) % EVLOG_LEN;
		ev.len--;
		ev.dropped++;
	}
	ev.ring[(ev.head + ev.len) % EVLOG_LEN] = *e;
	ev.len++;
	/* a callback may unfollow itself (its next link is taken first) */
	for (f = ev.followers; f; f = next) {
		next = f->next;
		if (f->event)
			f->event(f->ctx, e);
	}
}

static const struct rig_observer_ops evlog_observer = {
	.event = on_event,
};

int evlog_init(void)
{
	memset(&ev, 0, sizeof(ev));
	ev.obs = (struct rig_observer){ &evlog_observer, NULL };
	return rig_observe(&ev.obs);
}

void evlog_fini(void)
{
	rig_unobserve(&ev.obs);
	ev.followers = NULL;
	ev.len = 0;
}
