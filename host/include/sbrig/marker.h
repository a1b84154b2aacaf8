/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: marker-line pairing
 *
 * The target drives its marker line high while any suspend blocker is
 * active. The rig sees the line's edges with host kernel timestamps (tens
 * of microseconds), and the module logs the block/unblock that caused each
 * edge with a target timestamp. Pairing the two gives clock samples far
 * tighter than ping/pong over a UART: sbrig_clock_add_marker().
 *
 * sbrig_marker follows the set of active blockers from the event stream
 * (in seq order, one target boot), turns the 0 -> 1 and 1 -> 0 changes
 * into expected edges, and pairs them in order with the observed edges of
 * the same direction when the clock model maps the event to within
 * a window of the edge. Unpaired edges or transitions older than the
 * window are dropped (a glitch, a lost edge, an event the link lost).
 * After a "lost" record the active set is unknown: pairing stops until
 * the line is seen low (falling edge), which proves the set empty.
 * A jump in the edges' line_seqno (the kernel's edge buffer overflowed)
 * restarts the pairing: pending edges and transitions are dropped, and
 * until the next pair, transitions pair by time only.
 */
#ifndef SBRIG_MARKER_H
#define SBRIG_MARKER_H

#include <stdbool.h>
#include <stdint.h>

#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_marker;

/**
 * struct sbrig_marker_pair - an edge paired with the event that drove it
 * @host_ns: the edge's host timestamp
 * @target_ns: the event's target timestamp
 * @rising: direction
 */
struct sbrig_marker_pair {
	int64_t host_ns;
	int64_t target_ns;
	bool rising;
};

/**
 * sbrig_marker_new() - empty pairing state
 * @window_ns: largest distance between an edge and its event's mapped
 *	host time, beyond the event's own clock uncertainty
 *
 * Return: new object (free with sbrig_marker_free()), or NULL + errno.
 */
struct sbrig_marker *sbrig_marker_new(int64_t window_ns);

/** sbrig_marker_free() - NULL ok */
void sbrig_marker_free(struct sbrig_marker *mk);

/** sbrig_marker_reset() - forget everything (new target boot) */
void sbrig_marker_reset(struct sbrig_marker *mk);

/**
 * sbrig_marker_add_event() - feed one event of the module's log
 * @mk: the state
 * @ev: the event, with host_t_ns/uncert_ns mapped (uncert_ns < 0: not
 *	mapped yet; such a transition can only pair by order)
 *
 * Return: 1 if the event changed the marker level (a transition is now
 * expected), 0 otherwise.
 */
int sbrig_marker_add_event(struct sbrig_marker *mk,
			   const struct sbrig_event *ev);

/**
 * sbrig_marker_add_edge() - feed one observed marker edge
 * @mk: the state
 * @edge: the edge
 */
void sbrig_marker_add_edge(struct sbrig_marker *mk,
			   const struct sbrig_edge *edge);

/**
 * sbrig_marker_next_pair() - take the next pair found
 * @mk: the state
 * @pair: out
 *
 * Return: 1 if @pair was filled, 0 if none is pending.
 */
int sbrig_marker_next_pair(struct sbrig_marker *mk,
			   struct sbrig_marker_pair *pair);

/** sbrig_marker_active() - blockers the state believes active (-1: unknown) */
int sbrig_marker_active(const struct sbrig_marker *mk);

/** sbrig_marker_lost_edges() - edges the seqno jumps say were lost */
uint64_t sbrig_marker_lost_edges(const struct sbrig_marker *mk);

/**
 * sbrig_marker_expect_seqno() - the line_seqno the next edge must have
 * @mk: the state
 * @seqno: 1 for a line request just made (the kernel counts from 1), so
 *	that edges lost before the first one read count too. Without it,
 *	the first edge fed sets the count (a capture starts mid-stream).
 */
void sbrig_marker_expect_seqno(struct sbrig_marker *mk, uint64_t seqno);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_MARKER_H */
