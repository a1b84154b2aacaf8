// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libsbrig-analysis: the percentiles, the integrator and the
 * attribution rule (report-format.md), on captures written here with the
 * capture writer, whose exact energies are known analytically.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sbrig/analysis.h>
#include <sbrig/capture.h>
#include <sbrig/sbrig.h>

#include "an-capture.h"

#define S ((int64_t)1000000000)
#define MS ((int64_t)1000000)
#define T0 (100 * S)		/* the captures start here (host time) */

static const struct sbrig_provenance prov = { .rig_name = "unit" };

static void cap_dir(char *buf, size_t size, const char *name)
{
	const char *t = getenv("SBRIG_TMPDIR");

	snprintf(buf, size, "%s/%s", t ? t : "/tmp", name);
}

/* power as a function of host time, in µW */
typedef double (*power_fn)(int64_t t);

/*
 * Samples every @step_ns from T0 to T0 + @span_ns (both included), on a
 * 1 V bus: current x bus is the power, to the µW.
 */
static void add_samples(struct sbrig_capture *cap, int64_t span_ns,
			int64_t step_ns, power_fn p)
{
	for (int64_t t = T0; t <= T0 + span_ns; t += step_ns) {
		struct sbrig_sample s = { .t_ns = t, .power_uW = llround(p(t)),
					  .current_uA = (int32_t)llround(p(t)),
					  .bus_uV = 1000000 };

		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	}
}

static void add_event(struct sbrig_capture *cap, uint64_t seq, int64_t t,
		      const char *type, const char *arg)
{
	struct sbrig_event ev = { .host_t_ns = t, .uncert_ns = 0,
				  .target_t_ns = t, .seq = seq };

	snprintf(ev.boot_id, sizeof(ev.boot_id), "boot-1");
	snprintf(ev.type, sizeof(ev.type), "%s", type);
	snprintf(ev.arg, sizeof(ev.arg), "%s", arg);
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
}

static const struct an_blocker *blocker(const struct sbrig_analysis *a,
					const char *name)
{
	for (size_t i = 0; i < a->tl.nb; i++)
		if (!strcmp(a->tl.b[i].name, name))
			return &a->tl.b[i];
	fail_msg("no blocker %s", name);
	return NULL;
}

/* ---- percentiles ------------------------------------------------------ */

static void latency_statistics(void **state)
{
	int64_t odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 }, one[] = { 7 };
	int64_t twenty[20], unc[3] = { 2, 9, 4 };
	struct sbrig_latency_stats st;

	sbrig_latency_stats(odd, unc, 3, &st);
	assert_int_equal(st.n, 3);
	assert_int_equal(st.min_ns, 1);
	assert_int_equal(st.median_ns, 3);
	assert_int_equal(st.p95_ns, 5);
	assert_int_equal(st.max_ns, 5);
	assert_int_equal(st.uncert_ns, 9);
	sbrig_latency_stats(even, NULL, 4, &st);
	assert_int_equal(st.median_ns, 2);	/* (2 + 3) / 2, integer */
	assert_int_equal(st.p95_ns, 4);
	sbrig_latency_stats(one, NULL, 1, &st);
	assert_int_equal(st.median_ns, 7);
	assert_int_equal(st.p95_ns, 7);
	for (int i = 0; i < 20; i++)
		twenty[i] = 20 - i;
	sbrig_latency_stats(twenty, NULL, 20, &st);
	assert_int_equal(st.p95_ns, 19);	/* nearest rank: ceil(19) */
	assert_int_equal(st.median_ns, 10);	/* (10 + 11) / 2 */
	sbrig_latency_stats(twenty, NULL, 0, &st);
	assert_int_equal(st.n, 0);
	assert_int_equal(st.max_ns, 0);
}

/* ---- the integrator --------------------------------------------------- */

static double ramp(int64_t t)
{
	return (double)(t - T0) / (double)S * 1000.0;	/* 1000 µW/s */
}

static void trapezoids_over_timestamps(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "ramp");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	/* irregular steps: 1 ms, then 3 ms: the integral uses timestamps */
	add_samples(cap, 4 * S, MS, ramp);
	for (int64_t t = T0 + 4 * S + 3 * MS; t <= T0 + 10 * S; t += 3 * MS) {
		struct sbrig_sample s = { .t_ns = t, .power_uW = llround(ramp(t)) };

		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	/* ∫ 1000 t dt from 0 to 10 s = 50 000 µJ, exact for a linear ramp */
	assert_true(fabs(a->en.total_uJ - 50000.0) < 0.5);
	assert_true(fabs(a->en.awake_uJ - 50000.0) < 0.5);
	assert_int_equal(a->en.ngaps, 0);
	assert_int_equal(a->tl.end - a->tl.start, 10 * S);
	sbrig_analysis_free(a);
}

static double flat(int64_t t)
{
	return 1000.0;
}

/*
 * An INA226 with a 40 mOhm shunt at a 3 mA, 5 V baseline: current 48 LSB
 * of 62.5 µA, bus 4000 LSB of 1.25 mV, and a power register of
 * 48 x 4000 / 20000 = 9.6, 9 LSB of 1.5625 mW: 14.0625 mW where the
 * supply draws 15 mW. The analysis integrates current x bus (exact here);
 * the power register alone would be 6 % low. A reverse current counts
 * by its magnitude, as the chip's power register does.
 */
static void power_is_current_times_bus(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "quantised");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	for (int64_t t = T0; t <= T0 + 10 * S; t += 8800 * 1000) {
		struct sbrig_sample s = { .t_ns = t, .current_uA = 3000,
					  .bus_uV = 5000000, .shunt_nV = 120000,
					  .power_uW = 14063 };

		if (t >= T0 + 5 * S)
			s.current_uA = -3000;
		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	/* 15 mW over the samples' span (the last sample is at 9.9968 s) */
	assert_true(fabs(a->en.total_uJ - 15.0 * (double)(a->en.last_t -
		    a->en.first_t) / 1e6) < 0.01);
	assert_int_equal(a->en.ngaps, 0);
	sbrig_analysis_free(a);
}

/*
 * ina2xx-adc's stamps: each anywhere within the period after its
 * conversion (893 S/s here), runs of late-then-early pairs 1.97 periods
 * apart included. Nothing is lost: no gap, and the energy is the power
 * times the samples' span.
 */
static void driver_jitter_is_no_gap(void **state)
{
	const int64_t period = 1120000;
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	uint64_t lcg = 11;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "jitter");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	for (int64_t k = 0; k < 8930; k++) {
		int64_t f;
		struct sbrig_sample s = { .current_uA = 3000,
					  .bus_uV = 5000000 };

		lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
		f = (int64_t)((lcg >> 33) % 1000);
		if ((k / 64) % 4 == 3)
			f = k % 2 ? 985 : 10;
		s.t_ns = T0 + k * period + period * f / 1000;
		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->en.ngaps, 0);
	assert_true(fabs(a->en.total_uJ - 15.0 * (double)(a->en.last_t -
		    a->en.first_t) / 1e6) < 0.01);
	sbrig_analysis_free(a);
}

static void gaps_are_not_bridged(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	struct sbrig_gap g = { .t_ns = T0 + 2 * S, .next_t_ns = T0 + 3 * S,
			       .missing = 999 };
	char dir[4096];

	cap_dir(dir, sizeof(dir), "gaps");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	for (int64_t t = T0; t <= T0 + 10 * S; t += MS) {
		struct sbrig_sample s = { .t_ns = t, .power_uW = 1000 };

		if (t > T0 + 2 * S && t < T0 + 3 * S)
			continue;	/* the declared gap */
		if (t > T0 + 6 * S && t < T0 + 6 * S + 500 * MS)
			continue;	/* an undeclared one */
		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	}
	assert_int_equal(sbrig_capture_add_gap(cap, &g), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	/* 10 s at 1 mW minus the 1.5 s not measured */
	assert_true(fabs(a->en.total_uJ - 8500.0) < 0.01);
	assert_int_equal(a->en.ngaps, 2);
	assert_true(a->en.gaps[0].declared);
	assert_int_equal(a->en.gaps[0].duration_ns, 1 * S);
	assert_int_equal((int)a->en.gaps[0].missing, 999);
	assert_false(a->en.gaps[1].declared);
	assert_int_equal(a->en.gaps[1].duration_ns, 500 * MS);
	/* bounds: lowest and highest power sampled, 1 mW both */
	assert_true(fabs(a->en.gaps[0].hidden_min_uJ - 1000.0) < 0.01);
	assert_true(fabs(a->en.gaps[0].hidden_max_uJ - 1000.0) < 0.01);
	sbrig_analysis_free(a);
	(void)flat;
}

/* ---- attribution ------------------------------------------------------ */

/* 1 mW awake; 100 µW from 8 to 11 s (suspended) */
static double awake_then_asleep(int64_t t)
{
	return t >= T0 + 8 * S && t < T0 + 11 * S ? 100.0 : 1000.0;
}

static void equal_split_exclusive_and_baseline(void **state)
{
	const struct an_blocker *ba, *bb;
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	char dir[4096];
	double sum;

	cap_dir(dir, sizeof(dir), "attrib");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 12 * S, MS, awake_then_asleep);
	add_event(cap, 0, T0 + 2 * S, "block", "A");
	add_event(cap, 1, T0 + 4 * S, "block", "B");
	add_event(cap, 2, T0 + 6 * S, "unblock", "A");
	add_event(cap, 3, T0 + 7 * S, "unblock", "B");
	add_event(cap, 4, T0 + 8 * S, "enter", "deep");
	add_event(cap, 5, T0 + 11 * S, "exit", "deep");
	add_event(cap, 6, T0 + 11 * S + MS, "resume", "0");
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	a = sbrig_analysis_run(dir, NULL);
	if (!a)
		fail_msg("%s", sbrig_errmsg());
	ba = blocker(a, "A");
	bb = blocker(a, "B");
	/* A alone 2-4 s, A+B 4-6 s, B alone 6-7 s, at 1 mW */
	assert_true(fabs(ba->energy_uJ - 3000.0) < 0.5);
	assert_true(fabs(ba->exclusive_uJ - 2000.0) < 0.5);
	assert_true(fabs(bb->energy_uJ - 2000.0) < 0.5);
	assert_true(fabs(bb->exclusive_uJ - 1000.0) < 0.5);
	assert_int_equal(ba->activations, 1);
	assert_int_equal(ba->active_ns, 4 * S);
	assert_int_equal(bb->max_active_ns, 3 * S);
	/* suspended 8-11 s at 100 µW; baseline from its trimmed middle */
	assert_true(fabs(a->en.suspended_uJ - 300.0) < 0.5);
	assert_int_equal(a->en.suspended_ns, 3 * S);
	assert_true(a->en.have_baseline);
	assert_true(fabs(a->en.baseline_uW - 100.0) < 0.01);
	/* awake without a blocker: 0-2 s, 7-8 s, 11-12 s */
	assert_true(fabs(a->en.unattributed_uJ - 4000.0) < 0.5);
	assert_int_equal(a->en.unattributed_ns, 4 * S);
	/* the parts add up to the total */
	sum = ba->energy_uJ + bb->energy_uJ + a->en.unattributed_uJ +
		a->en.suspended_uJ;
	assert_true(fabs(sum - a->en.total_uJ) < 0.01);
	/* above the baseline: (1000 - 100) µW over A's 2 s + half of 2 s */
	assert_true(fabs(ba->energy_uJ - 100.0 * ba->share_ns * 1e-9 -
			 2700.0) < 0.5);
	sbrig_analysis_free(a);
}

static void blocker_active_at_start_and_leak(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	struct sbrig_blocker_stats st = { .name = "early", .count = 1,
					  .active_since_ns = 5 * S };
	char dir[4096];
	bool leak = false;

	cap_dir(dir, sizeof(dir), "leak");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_add_stats(cap, T0, &st), 0);
	add_samples(cap, 10 * S, MS, flat);
	add_event(cap, 0, T0 + 3 * S, "unblock", "early");
	add_event(cap, 1, T0 + 4 * S, "block", "stuck");
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	/* active from the capture's start (the first snapshot) */
	assert_int_equal(blocker(a, "early")->active_ns, 3 * S);
	assert_true(fabs(blocker(a, "early")->energy_uJ - 3000.0) < 0.5);
	assert_true(blocker(a, "stuck")->active_at_end);
	for (size_t i = 0; i < a->fd.n; i++)
		leak |= !strcmp(a->fd.f[i].kind, "leak") &&
			!strcmp(a->fd.f[i].blocker, "stuck");
	assert_true(leak);
	assert_string_equal(a->fd.f[0].kind, "leak");	/* ranked first */
	sbrig_analysis_free(a);
}

/* ---- objects by id ----------------------------------------------------- */

static void add_obj_event(struct sbrig_capture *cap, uint64_t seq, int64_t t,
			  const char *type, const char *arg, uint64_t obj)
{
	struct sbrig_event ev = { .host_t_ns = t, .uncert_ns = 0,
				  .target_t_ns = t, .seq = seq, .obj = obj };

	snprintf(ev.boot_id, sizeof(ev.boot_id), "boot-1");
	snprintf(ev.type, sizeof(ev.type), "%s", type);
	snprintf(ev.arg, sizeof(ev.arg), "%s", arg);
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
}

/*
 * Objects told apart by id: two "evdev" objects interleaved (the first
 * unblock ends the first one only); an object blocked again after a lost
 * record (its unblock was lost: that activation ended at the record); an
 * id reused by another name (a reloaded module): the first object ends.
 */
static void objects_by_id(void **state)
{
	struct sbrig_blocker_stats st = { .name = "main" };
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	const struct an_blocker *b;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "objects");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_add_stats(cap, T0, &st), 0);
	add_samples(cap, 20 * S, MS, flat);
	add_obj_event(cap, 0, T0 + 1 * S, "block", "evdev", 7);
	add_obj_event(cap, 1, T0 + 2 * S, "block", "evdev", 9);
	add_obj_event(cap, 2, T0 + 3 * S, "unblock", "evdev", 7);
	add_obj_event(cap, 3, T0 + 4 * S, "unblock", "evdev", 9);
	/* sync: active 5-6 s, its unblock lost; "lost 1" at 7 s; blocked
	 * again at 8 s, unblocked at 9 s */
	add_obj_event(cap, 4, T0 + 5 * S, "block", "sync", 11);
	add_obj_event(cap, 6, T0 + 7 * S, "lost", "1", 0);
	add_obj_event(cap, 6, T0 + 7 * S, "block", "other", 12);
	add_obj_event(cap, 7, T0 + 7 * S + 500 * MS, "unblock", "other", 12);
	add_obj_event(cap, 8, T0 + 8 * S, "block", "sync", 11);
	add_obj_event(cap, 9, T0 + 9 * S, "unblock", "sync", 11);
	/* id 13: "old" from 10 s; from 12 s the id is "new"'s */
	add_obj_event(cap, 10, T0 + 10 * S, "block", "old", 13);
	add_obj_event(cap, 11, T0 + 12 * S, "block", "new", 13);
	add_obj_event(cap, 12, T0 + 13 * S, "unblock", "new", 13);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	if (!a)
		fail_msg("%s", sbrig_errmsg());
	b = blocker(a, "evdev");
	assert_int_equal(b->activations, 2);
	assert_int_equal(b->active_ns, 3 * S);		/* 1-4 s */
	assert_int_equal(b->max_active_ns, 3 * S);
	b = blocker(a, "sync");
	assert_int_equal(b->activations, 2);
	assert_int_equal(b->active_ns, 2 * S + 1 * S);	/* 5-7 s, 8-9 s */
	assert_int_equal(b->nspans, 2);
	assert_int_equal(blocker(a, "old")->active_ns, 2 * S);
	assert_false(blocker(a, "old")->active_at_end);
	assert_int_equal(blocker(a, "new")->active_ns, 1 * S);
	assert_int_equal(a->tl.id_records, 12);
	assert_int_equal(a->tl.anon_records, 0);
	sbrig_analysis_free(a);
}

/* ---- hostile keys: the tables' hash ---------------------------------- */

/*
 * The hash the tables used before they were keyed: ids through a
 * MurmurHash3 finaliser, names through FNV-1a. Anyone could compute them,
 * so a capture could be made whose keys all land in one slot.
 */
static uint64_t fold33(uint64_t x)
{
	return x ^ (x >> 33);	/* its own inverse */
}

static uint64_t old_id_hash(uint64_t id)
{
	return fold33(fold33(id) * 0xff51afd7ed558ccdULL);
}

static uint64_t old_name_hash(const char *name)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return h;
}

#define HOSTILE_IDS 50000
#define HOSTILE_NAMES 2000

/*
 * A capture whose 50 000 object ids all hashed to one slot of any table
 * up to 2^20 slots, and whose 2 000 names to one of any up to 2^12 (the
 * tables' sizes for that many keys): with a hash the capture's author
 * knows, linear probing walked every earlier key for each new one (some
 * 1.25e9 probes). Keyed, the slots looked at stay a few per lookup:
 * held to 10 per record, generously.
 */
static void hostile_keys_probe_a_few_slots(void **state)
{
	struct sbrig_blocker_stats st = { .name = "main" };
	const uint64_t c = 0xff51afd7ed558ccdULL;
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	uint64_t inv = c, seq = 0, records = 0;
	char dir[4096], name[32], first[32] = "";
	int64_t t = T0 + 1 * MS;
	unsigned int found = 0;

	for (int i = 0; i < 5; i++)	/* c's inverse mod 2^64 (Newton) */
		inv *= 2 - c * inv;
	cap_dir(dir, sizeof(dir), "hostile-keys");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_add_stats(cap, T0, &st), 0);
	add_samples(cap, 2 * S, 10 * MS, flat);
	/* ids whose old hash is (i + 1) << 20: all in slot 0 */
	for (uint64_t i = 0; i < HOSTILE_IDS; i++) {
		uint64_t id = fold33(fold33((i + 1) << 20) * inv);

		assert_int_equal(old_id_hash(id) & ((1u << 20) - 1), 0);
		assert_true(id != 0);
		add_obj_event(cap, seq++, t, "block", "evdev", id);
	}
	for (uint64_t i = 0; i < HOSTILE_IDS; i++)
		add_obj_event(cap, seq++, t + 1 * MS, "unblock", "evdev",
			      fold33(fold33((i + 1) << 20) * inv));
	records += 2 * HOSTILE_IDS;
	/* names whose old hash ends in 12 zero bits */
	for (unsigned int u = 0; found < HOSTILE_NAMES; u++) {
		snprintf(name, sizeof(name), "n%u", u);
		if (old_name_hash(name) & ((1u << 12) - 1))
			continue;
		if (!found++)
			snprintf(first, sizeof(first), "%s", name);
		add_event(cap, seq++, t + 2 * MS, "block", name);
		add_event(cap, seq++, t + 3 * MS, "unblock", name);
	}
	records += 2 * HOSTILE_NAMES;
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	if (!a)
		fail_msg("%s", sbrig_errmsg());
	/* what it found is as without the collisions */
	assert_int_equal(blocker(a, "evdev")->activations, HOSTILE_IDS);
	assert_int_equal(blocker(a, "evdev")->active_ns, 1 * MS);
	assert_int_equal(blocker(a, first)->activations, 1);
	assert_int_equal(a->tl.nb, 1 + 1 + HOSTILE_NAMES);	/* main, evdev */
	assert_int_equal(a->tl.id_records, 2 * HOSTILE_IDS);
	printf("hostile keys: %llu probes for %llu records\n",
	       (unsigned long long)a->tl.probes, (unsigned long long)records);
	assert_true(a->tl.probes <= 10 * records);
	sbrig_analysis_free(a);
}

/* ---- the clock -------------------------------------------------------- */

static void events_remapped_with_the_whole_clock(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	const int64_t off = 5 * S;	/* host = target + 5 s */
	char dir[4096];

	cap_dir(dir, sizeof(dir), "clock");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 10 * S, MS, flat);
	/* pings every 0.5 s, round trip 200 µs, stamped in the middle */
	for (int64_t t = T0; t <= T0 + 10 * S; t += 500 * MS)
		assert_int_equal(sbrig_capture_add_clock(cap, t, t + 200000,
							 t + 100000 - off, 1),
				 0);
	/* the online host times are 40 ms off: the analysis re-maps */
	{
		struct sbrig_event ev = { .uncert_ns = 20 * MS, .seq = 0 };

		snprintf(ev.boot_id, sizeof(ev.boot_id), "b");
		snprintf(ev.type, sizeof(ev.type), "block");
		snprintf(ev.arg, sizeof(ev.arg), "x");
		ev.target_t_ns = T0 + 2 * S - off;
		ev.host_t_ns = T0 + 2 * S + 40 * MS;
		assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
		snprintf(ev.type, sizeof(ev.type), "unblock");
		ev.seq = 1;
		ev.target_t_ns = T0 + 5 * S - off;
		ev.host_t_ns = T0 + 5 * S + 40 * MS;
		assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->clk.nseg, 1);
	assert_int_equal(a->tl.unmapped, 0);
	assert_int_equal(blocker(a, "x")->nspans, 1);
	assert_true(llabs(blocker(a, "x")->spans[0].start - (T0 + 2 * S)) < 1000);
	assert_true(llabs(blocker(a, "x")->active_ns - 3 * S) < 1000);
	assert_true(a->tl.max_uncert_ns <= 100000 + 1000);
	sbrig_analysis_free(a);
}

/*
 * An enter whose online time is far too early (and claims to be sure of
 * it) makes the epoch rule pick the segment before the suspend for what
 * follows: the exit would be mapped 80 ms early, before the press that
 * woke it. Its online time disagrees with that by far more than either
 * uncertainty, so the segment that agrees is taken.
 */
static void a_wrong_segment_is_caught_by_the_online_time(void **state)
{
	const int64_t off0 = 5 * S, off1 = 5 * S + 80 * MS;
	struct sbrig_event ev = { .uncert_ns = MS };
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "badepoch");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 10 * S, MS, flat);
	for (int64_t t = T0; t <= T0 + 3 * S; t += 500 * MS)
		assert_int_equal(sbrig_capture_add_clock(cap, t, t + 200000,
							 t + 100000 - off0, 1),
				 0);
	for (int64_t t = T0 + 6 * S; t <= T0 + 10 * S; t += 500 * MS)
		assert_int_equal(sbrig_capture_add_clock(cap, t, t + 200000,
							 t + 100000 - off1, 1),
				 0);
	snprintf(ev.boot_id, sizeof(ev.boot_id), "b");
	snprintf(ev.type, sizeof(ev.type), "block");
	snprintf(ev.arg, sizeof(ev.arg), "x");
	ev.target_t_ns = T0 + 1 * S - off0;
	ev.host_t_ns = T0 + 1 * S;
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
	snprintf(ev.type, sizeof(ev.type), "enter");
	snprintf(ev.arg, sizeof(ev.arg), "deep");
	ev.seq++;
	ev.target_t_ns = T0 + 4 * S - off0;
	ev.host_t_ns = T0 + 1500 * MS;		/* wrong, and "sure" */
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
	snprintf(ev.type, sizeof(ev.type), "exit");
	ev.seq++;
	ev.target_t_ns = T0 + 7 * S - off1;
	ev.host_t_ns = T0 + 7 * S + MS;
	ev.uncert_ns = 2 * MS;
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->clk.nseg, 2);
	assert_int_equal(a->tl.nsusp, 1);
	assert_true(llabs(a->tl.susp[0].end - (T0 + 7 * S)) < MS);
	sbrig_analysis_free(a);
}

/*
 * The clock fit survives outliers (clockfit.c, step 4). 40 pings, one every
 * 0.5 s, round trip 200 us (half-width 100 us), on host - target = 5 s +
 * 30 ppm, each off the line by a fixed pattern within +/- 50 us; four of
 * them (7, 15, 23, 31) 700 us off: inside the jump limit (1 ms), beyond
 * three half-widths. The fit leaves the four out and fits the 36 others.
 * The constants, by numpy over the same rows (t0 the first row's target
 * time; x = t - t0, y = host - t; residuals truncated to ns as the C does):
 *   good = rows without 7, 15, 23, 31
 *   b, m = np.linalg.lstsq(np.vstack([ones, x]).T, y)[0]
 *	-> b = 4999995563.361, m = 3.034117270550e-05
 *   r = sorted(trunc(|y - (b + m x)|)): n = 36, median (mean of the two
 *	middle ones) 31276, p95 (nearest rank: r[ceil(.95 n) - 1]) 51207
 * Over all 40 rows, the fit would be b = 5000071029 (71 us off).
 */
static void clock_fit_leaves_outliers_out(void **state)
{
	const int64_t off = 5 * S;
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	const struct an_segment *g;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "outliers");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 20 * S, MS, flat);
	for (int i = 0; i < 40; i++) {
		int64_t send = T0 + i * 500 * MS, mid = send + 100000;
		int64_t e = ((i * 37) % 11 - 5) * 10000;

		if (i == 7 || i == 15 || i == 23 || i == 31)
			e = 700000;
		assert_int_equal(sbrig_capture_add_clock(cap, send,
							 send + 200000,
							 mid - (off + i * 15000 + e),
							 1), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->clk.nseg, 1);
	assert_int_equal(a->clk.spikes, 0);
	assert_int_equal(a->clk.outliers, 4);
	g = &a->clk.seg[0];
	assert_int_equal(g->n, 36);
	assert_true(fabs(g->offset_ns - 4999995563.361) < 1);
	assert_true(fabs(g->drift - 3.034117270550e-05) < 1e-12);
	assert_false(g->drift_clamped);
	assert_int_equal(a->clk.resid[0].n, 36);
	assert_true(llabs(a->clk.resid[0].median_ns - 31276) <= 1);
	assert_true(llabs(a->clk.resid[0].p95_ns - 51207) <= 1);
	assert_int_equal(a->clk.resid[1].n, 0);
	assert_int_equal(a->clk.resid[1].median_ns, -1);
	sbrig_analysis_free(a);
}

/*
 * A jump of the offset is taken when the next exchange confirms it
 * (clockfit.c, step 3): pings every 0.5 s (round trip 200 us) at 5 s, one
 * of them (the 9th) alone 50 ms off, the next back: a spike, left out;
 * from the 21st on 80 ms off: confirmed, a second segment. The 31st alone
 * at 120 ms, the 32nd to 40th at 160 ms, and a last, 41st, at 200 ms:
 * exchanges with no confirmation but no contradiction either (a wake too
 * short for two exchanges) are taken, a segment each.
 */
static void clock_jump_confirmed_spike_not(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "jump");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 21 * S, MS, flat);
	for (int i = 0; i < 41; i++) {
		int64_t send = T0 + i * 500 * MS, off = 5 * S;

		off += i == 8 ? 50 * MS : i == 40 ? 200 * MS :
			i > 30 ? 160 * MS : i == 30 ? 120 * MS :
			i >= 20 ? 80 * MS : 0;
		assert_int_equal(sbrig_capture_add_clock(cap, send,
							 send + 200000,
							 send + 100000 - off,
							 1), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->clk.spikes, 1);
	assert_int_equal(a->clk.nseg, 5);
	assert_int_equal(a->clk.seg[0].n, 19);
	assert_int_equal(a->clk.seg[1].n, 10);
	assert_int_equal(a->clk.seg[1].host_first, T0 + 20 * 500 * MS + 100000);
	assert_int_equal(a->clk.seg[2].n, 1);
	assert_int_equal(a->clk.seg[3].n, 9);
	assert_int_equal(a->clk.seg[4].n, 1);
	assert_true(fabs(a->clk.seg[0].offset_ns - 5e9) < 1);
	assert_true(fabs(a->clk.seg[1].offset_ns - 5.08e9) < 1);
	assert_true(fabs(a->clk.seg[2].offset_ns - 5.12e9) < 1);
	assert_true(fabs(a->clk.seg[3].offset_ns - 5.16e9) < 1);
	assert_true(fabs(a->clk.seg[4].offset_ns - 5.2e9) < 1);
	sbrig_analysis_free(a);
}

/*
 * A drift beyond +/- 200 ppm is clamped: 21 pings, one every 0.5 s, round
 * trip 20 ms (half-width 10 ms: no residual is an outlier), host - target
 * growing by 250 us a ping (500 ppm). Held at 200 ppm, the offset at the
 * first ping's target time is the mean of y - 200e-6 x, numpy:
 *   x = i * 499.75e6, y = 5e9 + i * 250000 -> 5001500500
 * (5 s + the mean of i * 150050 over i = 0..20).
 */
static void clock_drift_clamped(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	const struct an_segment *g;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "drift");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 11 * S, MS, flat);
	for (int i = 0; i < 21; i++) {
		int64_t send = T0 + i * 500 * MS;

		assert_int_equal(sbrig_capture_add_clock(cap, send,
							 send + 20 * MS,
							 send + 10 * MS -
							 (5 * S + i * 250000),
							 1), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->clk.nseg, 1);
	g = &a->clk.seg[0];
	assert_int_equal(g->n, 21);
	assert_true(g->drift_clamped);
	assert_true(fabs(g->drift - 200e-6) < 1e-15);
	assert_true(fabs(g->offset_ns - 5001500500.0) < 1);
	sbrig_analysis_free(a);
}

/* ---- the marker line ----------------------------------------------------- */

static void add_edge(struct sbrig_capture *cap, int64_t t, bool rising,
		     uint64_t seqno)
{
	struct sbrig_edge e = { .t_ns = t, .line = "marker", .rising = rising,
				.seqno = seqno };

	assert_int_equal(sbrig_capture_add_edge(cap, &e), 0);
}

static void marker_rise_in_range(void **state)
{
	int64_t rise[] = { 10, 20, 30 };
	struct an_markers mk = { .rise = rise, .nrise = 3 };
	struct an_markers none = { 0 };

	assert_int_equal(an_markers_rise_in(&mk, 0, 9), -1);
	assert_int_equal(an_markers_rise_in(&mk, 0, 10), 10);
	assert_int_equal(an_markers_rise_in(&mk, 10, 10), 10);
	assert_int_equal(an_markers_rise_in(&mk, 11, 25), 20);
	assert_int_equal(an_markers_rise_in(&mk, 21, 29), -1);
	assert_int_equal(an_markers_rise_in(&mk, 31, 100), -1);
	assert_int_equal(an_markers_rise_in(&none, 0, 100), -1);
}

/*
 * Pings with a 10 ms round trip whose pong is stamped 2 ms late (the
 * midpoint rule maps 2 ms early), clock.tsv's online marker rows 5 ms
 * off, and edges.tsv 3 us after each 0 <-> 1 change: the analysis pairs
 * the edges itself, ignores the online rows, and the markers set the
 * clock; the wakeup is measured to its marker edge.
 */
static void marker_edges_paired_offline(void **state)
{
	const int64_t off = 5 * S, late = 3000;
	struct sbrig_stimulus press = { .t_ns = T0 + 8 * S, .what = "press",
					.arg = "power" };
	struct {
		int64_t t;		/* true host time */
		const char *type, *arg;
		int edge;		/* 1 rising, -1 falling, 0 none */
	} ev[] = {
		{ T0 + 2 * S, "block", "x", 1 },
		{ T0 + 3 * S, "unblock", "x", -1 },
		{ T0 + 5 * S, "block", "y", 1 },
		{ T0 + 5 * S + 500 * MS, "block", "z", 0 },
		{ T0 + 6 * S + 500 * MS, "unblock", "y", 0 },
		{ T0 + 6 * S + 700 * MS, "unblock", "z", -1 },
		{ T0 + 7 * S, "enter", "deep", 0 },
		{ T0 + 8 * S + 6 * MS, "exit", "deep", 0 },
		{ T0 + 8 * S + 9 * MS, "block", "keypad", 1 },
		{ T0 + 8 * S + 40 * MS, "resume", "0", 0 },
		{ T0 + 8 * S + 500 * MS, "unblock", "keypad", -1 },
	};
	struct sbrig_capture *cap;
	struct sbrig_analysis *a;
	const struct an_wakeup *w;
	uint64_t seqno = 0;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "marker");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 10 * S, MS, flat);
	for (int64_t t = T0; t <= T0 + 10 * S; t += 500 * MS) {
		if (t > T0 + 7 * S - 100 * MS && t < T0 + 8 * S + 100 * MS)
			continue;	/* asleep: no pong */
		assert_int_equal(sbrig_capture_add_clock(cap, t, t + 10 * MS,
							 t + 7 * MS - off, 1),
				 0);
	}
	for (size_t i = 0; i < AN_ARRAY_SIZE(ev); i++) {
		struct sbrig_event e = { .host_t_ns = ev[i].t + 40 * MS,
					 .uncert_ns = 20 * MS,
					 .target_t_ns = ev[i].t - off,
					 .seq = i };

		snprintf(e.boot_id, sizeof(e.boot_id), "b");
		snprintf(e.type, sizeof(e.type), "%s", ev[i].type);
		snprintf(e.arg, sizeof(e.arg), "%s", ev[i].arg);
		assert_int_equal(sbrig_capture_add_event(cap, &e), 0);
		if (!ev[i].edge)
			continue;
		add_edge(cap, ev[i].t + late, ev[i].edge > 0, seqno++);
		/* the daemon's pair of it, 5 ms off: must not count */
		assert_int_equal(sbrig_capture_add_clock(cap, ev[i].t + 5 * MS,
							 ev[i].t + 5 * MS,
							 ev[i].t - off, 1),
				 0);
	}
	assert_int_equal(sbrig_capture_add_stimulus(cap, &press), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	a = sbrig_analysis_run(dir, NULL);
	assert_non_null(a);
	assert_int_equal(a->mk.edges, 6);
	assert_int_equal(a->mk.pairs, 6);
	assert_int_equal(a->clk.marker_pairs, 6);
	assert_int_equal(a->clk.marker_rows, 0);
	assert_int_equal(a->clk.marker_rows_skipped, 6);
	assert_int_equal(a->clk.nseg, 1);
	assert_int_equal(a->clk.seg[0].markers, 6);
	/* the markers set the clock: microseconds, not the pings' 2 ms */
	assert_true(llabs(blocker(a, "x")->spans[0].start - (T0 + 2 * S)) <
		    20000);
	assert_true(llabs(blocker(a, "z")->spans[0].end -
			  (T0 + 6 * S + 700 * MS)) < 20000);
	assert_true(a->tl.max_uncert_ns <= 110000);
	/* the wakeup: to the marker's edge, the resume where it was */
	assert_int_equal(a->wk.n, 1);
	w = &a->wk.w[0];
	assert_int_equal(w->marker_t_ns, T0 + 8 * S + 9 * MS + late);
	assert_int_equal(w->latency_ns, 9 * MS + late);
	assert_int_equal(w->uncert_ns, AN_MARKER_HALF_NS);
	assert_true(llabs(w->resume_t_ns - (T0 + 8 * S + 40 * MS)) < 20000);
	assert_int_equal(a->wk.lat.median_ns, 9 * MS + late);
	sbrig_analysis_free(a);
}

/*
 * Samples out of time order inside an edge window (after each sample
 * from the window's start to the end of the file, time stuck far back
 * for 3000 samples: wherever a seek to the window lands, the batch read
 * there ends before the window): the edge pass, which seeks to its
 * windows in samples.bin, must still end, and the analysis refuses the
 * capture.
 */
static void samples_out_of_order_in_an_edge_window(void **state)
{
	struct sbrig_capture *cap;
	char dir[4096];

	cap_dir(dir, sizeof(dir), "disorder");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	for (int64_t t = T0; t < T0 + 8 * S + 10 * MS; t += MS) {
		struct sbrig_sample s = { .t_ns = t,
			.power_uW = llround(awake_then_asleep(t)) };

		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
		for (int i = 0; t >= T0 + 8 * S && i < 3000; i++) {
			s.t_ns = T0 + S;
			assert_int_equal(sbrig_capture_add_samples(cap, &s, 1),
					 0);
		}
	}
	{	/* and a last one in time: the search has both ends */
		struct sbrig_sample s = { .t_ns = T0 + 12 * S, .power_uW = 1000 };

		assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	}
	add_event(cap, 0, T0 + 8 * S, "enter", "deep");
	add_event(cap, 1, T0 + 11 * S, "exit", "deep");
	add_event(cap, 2, T0 + 11 * S + MS, "resume", "0");
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	assert_null(sbrig_analysis_run(dir, NULL));
	assert_non_null(strstr(sbrig_errmsg(), "out of time order"));
}

static void corrupt_capture_names_file_and_line(void **state)
{
	char dir[4096], path[4200];
	struct sbrig_capture *cap;
	FILE *f;

	cap_dir(dir, sizeof(dir), "corrupt");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	add_samples(cap, 1 * S, 100 * MS, flat);
	add_event(cap, 0, T0, "block", "a");
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	snprintf(path, sizeof(path), "%s/events.tsv", dir);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("12\tnot-a-number\t3\tb\t1\tblock\tz\t0\n", f);
	fclose(f);
	assert_null(sbrig_analysis_run(dir, NULL));
	assert_non_null(strstr(sbrig_errmsg(), "events.tsv:3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(latency_statistics),
		cmocka_unit_test(trapezoids_over_timestamps),
		cmocka_unit_test(power_is_current_times_bus),
		cmocka_unit_test(driver_jitter_is_no_gap),
		cmocka_unit_test(gaps_are_not_bridged),
		cmocka_unit_test(equal_split_exclusive_and_baseline),
		cmocka_unit_test(blocker_active_at_start_and_leak),
		cmocka_unit_test(objects_by_id),
		cmocka_unit_test(hostile_keys_probe_a_few_slots),
		cmocka_unit_test(events_remapped_with_the_whole_clock),
		cmocka_unit_test(clock_fit_leaves_outliers_out),
		cmocka_unit_test(clock_jump_confirmed_spike_not),
		cmocka_unit_test(clock_drift_clamped),
		cmocka_unit_test(a_wrong_segment_is_caught_by_the_online_time),
		cmocka_unit_test(marker_rise_in_range),
		cmocka_unit_test(marker_edges_paired_offline),
		cmocka_unit_test(corrupt_capture_names_file_and_line),
		cmocka_unit_test(samples_out_of_order_in_an_edge_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
