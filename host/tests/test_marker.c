// SPDX-License-Identifier: GPL-2.0
/* Unit tests for marker-line pairing (lib/marker.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/marker.h>

#define US 1000LL
#define MS 1000000LL

static struct sbrig_event ev(const char *type, const char *name,
			     int64_t target_ns, int64_t host_ns,
			     int64_t uncert_ns)
{
	struct sbrig_event e = {
		.host_t_ns = host_ns, .uncert_ns = uncert_ns,
		.target_t_ns = target_ns,
	};

	snprintf(e.type, sizeof(e.type), "%s", type);
	snprintf(e.arg, sizeof(e.arg), "%s", name);
	return e;
}

static struct sbrig_edge edge(int64_t t_ns, bool rising)
{
	struct sbrig_edge e = { .t_ns = t_ns, .rising = rising };

	snprintf(e.line, sizeof(e.line), "marker");
	return e;
}

static void pairs_first_block_and_last_unblock(void **state)
{
	struct sbrig_marker *mk = sbrig_marker_new(2 * MS);
	struct sbrig_marker_pair p;
	struct sbrig_event e;
	struct sbrig_edge g;

	/* edges arrive first (GPIO), events later (UART) */
	g = edge(100 * MS + 30 * US, true);
	sbrig_marker_add_edge(mk, &g);
	e = ev("block", "a", 5000 * MS, 100 * MS + 400 * US, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_true(p.rising);
	assert_int_equal(p.host_ns, 100 * MS + 30 * US);
	assert_int_equal(p.target_ns, 5000 * MS);
	/* a second blocker does not change the level */
	e = ev("block", "b", 5010 * MS, 110 * MS, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 0);
	e = ev("unblock", "a", 5020 * MS, 120 * MS, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 0);
	assert_int_equal(sbrig_marker_active(mk), 1);
	/* the last unblock is the falling edge */
	g = edge(130 * MS + 10 * US, false);
	sbrig_marker_add_edge(mk, &g);
	e = ev("unblock", "b", 5030 * MS, 130 * MS - 200 * US, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_false(p.rising);
	assert_int_equal(p.target_ns, 5030 * MS);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 0);
	sbrig_marker_free(mk);
}

/*
 * Two objects of one name (every evdev client's blocker is "evdev"): the
 * module logs a block for each, and the line stays high until both are
 * released.
 */
static void same_named_objects_keep_the_line_high(void **state)
{
	struct sbrig_marker *mk = sbrig_marker_new(2 * MS);
	struct sbrig_marker_pair p;
	struct sbrig_event e;
	struct sbrig_edge g;

	g = edge(100 * MS, true);
	sbrig_marker_add_edge(mk, &g);
	e = ev("block", "evdev", 5000 * MS, 100 * MS + 100 * US, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	e = ev("block", "evdev", 5010 * MS, 110 * MS, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 0);
	assert_int_equal(sbrig_marker_active(mk), 2);
	/* the first unblock is no falling edge: the other object is active */
	e = ev("unblock", "evdev", 5020 * MS, 120 * MS, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 0);
	assert_int_equal(sbrig_marker_active(mk), 1);
	g = edge(130 * MS + 10 * US, false);
	sbrig_marker_add_edge(mk, &g);
	e = ev("unblock", "evdev", 5030 * MS, 130 * MS, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_true(p.rising);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_false(p.rising);
	assert_int_equal(p.target_ns, 5030 * MS);
	sbrig_marker_free(mk);
}

static void glitch_edges_and_far_events_do_not_pair(void **state)
{
	struct sbrig_marker *mk = sbrig_marker_new(2 * MS);
	struct sbrig_marker_pair p;
	struct sbrig_event e;
	struct sbrig_edge g;

	/* a glitch: rising + falling with no event behind them */
	g = edge(10 * MS, true);
	sbrig_marker_add_edge(mk, &g);
	g = edge(10 * MS + 5 * US, false);
	sbrig_marker_add_edge(mk, &g);
	/* the real edge, then its event */
	g = edge(50 * MS, true);
	sbrig_marker_add_edge(mk, &g);
	e = ev("block", "x", 900 * MS, 50 * MS + 500 * US, 1 * MS);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_int_equal(p.host_ns, 50 * MS);
	/* an event 40 ms away from the only edge is not its cause */
	g = edge(100 * MS, false);
	sbrig_marker_add_edge(mk, &g);
	e = ev("unblock", "x", 990 * MS, 140 * MS, 1 * MS);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 0);
	sbrig_marker_free(mk);
}

static void lost_events_stop_pairing_until_the_line_is_low(void **state)
{
	struct sbrig_marker *mk = sbrig_marker_new(2 * MS);
	struct sbrig_marker_pair p;
	struct sbrig_event e;
	struct sbrig_edge g;

	e = ev("block", "a", 1 * MS, 1 * MS, 1 * MS);
	sbrig_marker_add_event(mk, &e);
	e = ev("lost", "3", 2 * MS, 2 * MS, 1 * MS);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_active(mk), -1);
	/* unknown set: events give no transitions, rising edges are ignored */
	e = ev("unblock", "a", 3 * MS, 3 * MS, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 0);
	g = edge(4 * MS, true);
	sbrig_marker_add_edge(mk, &g);
	g = edge(5 * MS, false);
	sbrig_marker_add_edge(mk, &g);
	assert_int_equal(sbrig_marker_active(mk), 0);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 0);
	/* known again: the next block pairs */
	g = edge(6 * MS, true);
	sbrig_marker_add_edge(mk, &g);
	e = ev("block", "b", 6 * MS, 6 * MS + 100 * US, 1 * MS);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_true(p.rising);
	sbrig_marker_free(mk);
}

static void reset_forgets_the_active_set(void **state)
{
	struct sbrig_marker *mk = sbrig_marker_new(2 * MS);
	struct sbrig_event e = ev("block", "a", 1, 1, 1);

	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_active(mk), 1);
	sbrig_marker_reset(mk);
	assert_int_equal(sbrig_marker_active(mk), 0);
	sbrig_marker_free(mk);
	sbrig_marker_free(NULL);
}

static struct sbrig_edge edge_seq(int64_t t_ns, bool rising, uint64_t seqno)
{
	struct sbrig_edge e = edge(t_ns, rising);

	e.seqno = seqno;
	return e;
}

/*
 * Two edges of four lost (a seqno jump: the kernel's buffer overflowed),
 * the events not yet mapped (pairing by order): the lost edges'
 * transitions must not pair with the edges after the jump.
 */
static void lost_edges_restart_the_pairing(void **state)
{
	struct sbrig_marker *mk = sbrig_marker_new(2 * MS);
	struct sbrig_marker_pair p;
	struct sbrig_event e;
	struct sbrig_edge g;

	g = edge_seq(10 * MS, true, 1);
	sbrig_marker_add_edge(mk, &g);
	g = edge_seq(11 * MS, false, 2);
	sbrig_marker_add_edge(mk, &g);
	e = ev("block", "a", 110 * MS, 0, -1);
	sbrig_marker_add_event(mk, &e);
	e = ev("unblock", "a", 111 * MS, 0, -1);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_int_equal(p.target_ns, 110 * MS);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_int_equal(p.target_ns, 111 * MS);
	/* seqno 3 and 4 (12 and 13 ms) lost */
	g = edge_seq(14 * MS, true, 5);
	sbrig_marker_add_edge(mk, &g);
	g = edge_seq(15 * MS, false, 6);
	sbrig_marker_add_edge(mk, &g);
	assert_int_equal(sbrig_marker_lost_edges(mk), 2);
	/* the lost edges' events, then the kept ones', unmapped */
	e = ev("block", "b", 112 * MS, 0, -1);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	e = ev("unblock", "b", 113 * MS, 0, -1);
	assert_int_equal(sbrig_marker_add_event(mk, &e), 1);
	e = ev("block", "c", 114 * MS, 0, -1);
	sbrig_marker_add_event(mk, &e);
	e = ev("unblock", "c", 115 * MS, 0, -1);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 0);
	/* a transition mapped to its edge pairs, and ends the restart */
	g = edge_seq(20 * MS, true, 7);
	sbrig_marker_add_edge(mk, &g);
	e = ev("block", "d", 120 * MS, 20 * MS + 100 * US, 1 * MS);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);
	assert_int_equal(p.host_ns, 20 * MS);
	assert_int_equal(p.target_ns, 120 * MS);
	g = edge_seq(21 * MS, false, 8);
	sbrig_marker_add_edge(mk, &g);
	e = ev("unblock", "d", 121 * MS, 0, -1);
	sbrig_marker_add_event(mk, &e);
	assert_int_equal(sbrig_marker_next_pair(mk, &p), 1);	/* by order */
	assert_int_equal(sbrig_marker_lost_edges(mk), 2);
	sbrig_marker_free(mk);

	/* a request just made: edges lost before the first one read count */
	mk = sbrig_marker_new(2 * MS);
	sbrig_marker_expect_seqno(mk, 1);
	g = edge_seq(1 * MS, true, 185);
	sbrig_marker_add_edge(mk, &g);
	assert_int_equal(sbrig_marker_lost_edges(mk), 184);
	sbrig_marker_free(mk);
	/* without it, the first edge fed sets the count (a capture) */
	mk = sbrig_marker_new(2 * MS);
	sbrig_marker_add_edge(mk, &g);
	assert_int_equal(sbrig_marker_lost_edges(mk), 0);
	sbrig_marker_free(mk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pairs_first_block_and_last_unblock),
		cmocka_unit_test(same_named_objects_keep_the_line_high),
		cmocka_unit_test(glitch_edges_and_far_events_do_not_pair),
		cmocka_unit_test(lost_events_stop_pairing_until_the_line_is_low),
		cmocka_unit_test(reset_forgets_the_active_set),
		cmocka_unit_test(lost_edges_restart_the_pairing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
