/* SPDX-License-Identifier: GPL-2.0 */
/*
 * op.h - what a client holds on to while its request runs, and the one
 * operation slot.
 *
 * A request that takes time (capture, run, latency, agent, press) hands
 * the server a struct op_handle: the server stops it or detaches from it
 * through the handle's ops, whatever kind it is, and learns of its
 * progress and end only through the client callbacks it gave when it
 * started the request. Nothing here knows about the server.
 *
 * Runs, latency measurements and agent operations take the operation slot
 * (one at a time); a capture takes the recorder (rec.h), so a run or a
 * latency measurement, which record one, cannot start beside a capture.
 */
#ifndef SBRIGD_OP_H
#define SBRIGD_OP_H

/** enum op_stop - who asked an operation to stop */
enum op_stop {
	OP_STOP_OWN,		/* its own client ("stop" on its connection) */
	OP_STOP_OTHER,		/* another client (an idle "stop") */
	OP_STOP_SHUTDOWN,	/* the daemon is stopping (SIGTERM) */
};

struct op_handle;

/**
 * struct op_handle_ops - how the server controls a running request
 * @kind: "capture", "run", "latency", "agent", "press"
 * @stop: end it; its final answer follows through the client callbacks,
 *	from this call or later
 * @detach: the client is gone: call its callbacks no more (the operation
 *	itself may go on to its end, or end at once)
 */
struct op_handle_ops {
	const char *kind;
	void (*stop)(struct op_handle *h, enum op_stop why);
	void (*detach)(struct op_handle *h);
};

/** struct op_handle - embedded in the operation's own state */
struct op_handle {
	const struct op_handle_ops *ops;
};

/* Take the operation slot for @h: 0, or -EBUSY (with sbrig_errmsg()). */
int op_claim(struct op_handle *h);
/* Give it back (no-op if @h does not hold it). */
void op_release(struct op_handle *h);
/* The operation holding the slot, or NULL. */
struct op_handle *op_current(void);

#endif /* SBRIGD_OP_H */
