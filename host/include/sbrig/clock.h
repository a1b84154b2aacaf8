/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: target clock -> host clock
 *
 * Maps the target's CLOCK_BOOTTIME (the event log's clock) onto the host's
 * CLOCK_MONOTONIC. Inputs are ping/pong exchanges on the target link
 * (host send time, host receive time, target time in between) and, when
 * the marker line is wired, marker edges paired with the module's events
 * (much tighter). Exchanges with a large round trip are filtered out; the
 * model is an offset plus a rate (drift) fitted over the retained samples.
 * Every mapping comes with its uncertainty (half-width, ns).
 *
 * Any int64_t input is safe (the arithmetic saturates, see clock.c): a
 * sample or a mapping whose result does not fit an int64_t is refused with
 * -ERANGE, never wrapped. The link refuses impossible target times before
 * they get here (SBRIG_TARGET_T_MAX in link.h).
 */
#ifndef SBRIG_CLOCK_H
#define SBRIG_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_clock;

/**
 * struct sbrig_clock_state - the current model
 * @samples: samples retained
 * @offset_ns: host - target at @ref_target_ns
 * @ref_target_ns: target time the offset refers to
 * @drift_ppb: rate difference (host runs faster by this many ns per s)
 * @uncert_ns: current uncertainty of a mapping near @ref_target_ns
 * @min_rtt_ns: smallest round trip seen
 */
struct sbrig_clock_state {
	unsigned int samples;
	int64_t offset_ns;
	int64_t ref_target_ns;
	int64_t drift_ppb;
	int64_t uncert_ns;
	int64_t min_rtt_ns;
};

/** sbrig_clock_new() - empty model; NULL + errno on ENOMEM */
struct sbrig_clock *sbrig_clock_new(void);

/** sbrig_clock_free() - NULL ok */
void sbrig_clock_free(struct sbrig_clock *clk);

/** sbrig_clock_reset() - forget everything (target rebooted) */
void sbrig_clock_reset(struct sbrig_clock *clk);

/**
 * sbrig_clock_add_ping() - add one ping/pong exchange
 * @clk: the model
 * @host_send_ns: host time the ping was written
 * @host_recv_ns: host time the pong was read
 * @target_ns: target time stamped in the pong
 *
 * Return: 0 if retained, 1 if filtered out (round trip too long),
 * -EINVAL if @host_recv_ns < @host_send_ns, -ERANGE if the round trip or
 * the offset does not fit an int64_t (not added).
 */
int sbrig_clock_add_ping(struct sbrig_clock *clk, int64_t host_send_ns,
			 int64_t host_recv_ns, int64_t target_ns);

/**
 * sbrig_clock_add_marker() - add a marker edge paired with a target event
 * @clk: the model
 * @host_ns: the edge's kernel timestamp on the host
 * @target_ns: the target event that drove the edge
 * @uncert_ns: how far apart the two can be (GPIO latency)
 *
 * Return: 0, or -EINVAL if the pair contradicts the model by more than the
 * combined uncertainty (a mismatched pair: not retained), -ERANGE if the
 * offset does not fit an int64_t (not retained).
 */
int sbrig_clock_add_marker(struct sbrig_clock *clk, int64_t host_ns,
			   int64_t target_ns, int64_t uncert_ns);

/**
 * sbrig_clock_to_host() - map a target time
 * @clk: the model
 * @target_ns: target CLOCK_BOOTTIME
 * @host_ns: out: host CLOCK_MONOTONIC
 * @uncert_ns: out (may be NULL): uncertainty of @host_ns
 *
 * Return: 0, or -EAGAIN while the model has no sample, -ERANGE if the
 * host time would not fit an int64_t (@host_ns untouched).
 */
int sbrig_clock_to_host(const struct sbrig_clock *clk, int64_t target_ns,
			int64_t *host_ns, int64_t *uncert_ns);

/** sbrig_clock_get_state() - copy the model out */
void sbrig_clock_get_state(const struct sbrig_clock *clk,
			   struct sbrig_clock_state *st);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_CLOCK_H */
