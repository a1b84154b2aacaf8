/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: supply measurement (libiio)
 *
 * An INA2xx-class sensor reached through a libiio context URI: ``local:``
 * (ina2xx-adc on the rig host) or ``ip:host[:port]`` (iiod). Raw values are
 * converted with the channels' scale attributes. Buffered capture runs in
 * its own thread, which hands samples to the caller through a queue and an
 * eventfd, so the caller's poll() loop never blocks on the sensor.
 *
 * Sample times come from the IIO timestamp channel (set to CLOCK_MONOTONIC
 * on local: contexts). A sample later than 1.5 nominal periods after the
 * previous one is a gap: it is reported as a struct sbrig_gap and counted,
 * never bridged silently.
 */
#ifndef SBRIG_POWER_H
#define SBRIG_POWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_power;

/*
 * The highest sampling rate a rig's INA226 is read at without losses:
 * ina2xx-adc's kthread reads the conversion-ready flag and the four
 * registers one SMBus word read each (48 bit times: 120 us at 400 kHz,
 * the BeagleBone's and the INA226's fast mode), 600 us a sample, and
 * polls 200 us before each period: 1e6 / (600 + 200) = 1250 S/s. The
 * INA226's settings around it: 893 S/s (2 x 140 us, averaging 4) is read
 * without a loss, 1506 S/s (2 x 332 us) loses about 28 % of its
 * conversions and the fastest, 3571 S/s, 56 % (rig/virtual/ina226_iiod.py
 * simulates the driver). sbrig refuses rates above it. On another bus
 * speed ([power] i2c_hz) the ceiling is sbrig_power_max_rate()'s.
 */
#define SBRIG_POWER_MAX_RATE_HZ	1250
/* the BeagleBone's and the INA226's fast mode */
#define SBRIG_POWER_DEFAULT_I2C_HZ 400000

/**
 * sbrig_power_max_rate() - the highest rate read without losses
 * @i2c_hz: the sensor's I2C bus clock (0: SBRIG_POWER_DEFAULT_I2C_HZ)
 *
 * Five SMBus word reads of 48 bit times each a sample, and ina2xx-adc's
 * poll 200 us before each period (see SBRIG_POWER_MAX_RATE_HZ).
 *
 * Return: samples/s (1250 at 400 kHz, 384 at 100 kHz, 2272 at 1 MHz).
 */
static inline unsigned int sbrig_power_max_rate(uint32_t i2c_hz)
{
	double bit_us = 1e6 / (double)(i2c_hz ? i2c_hz :
				      SBRIG_POWER_DEFAULT_I2C_HZ);

	return (unsigned int)(1e6 / (5 * 48 * bit_us + 200));
}

/**
 * struct sbrig_power_opts - how to open the sensor
 * @device: IIO device name or id ("ina226")
 * @shunt_uohm: shunt to program (0 = keep the device's setting)
 * @sample_rate_hz: rate to request (0 = keep the device's; at most
 *	sbrig_power_max_rate(@i2c_hz))
 * @buffer_samples: samples per buffer refill (0 = a quarter second's worth
 *	at the sensor's rate, at least 8)
 * @i2c_hz: the sensor's I2C bus clock (0 = SBRIG_POWER_DEFAULT_I2C_HZ)
 */
struct sbrig_power_opts {
	const char *device;
	uint32_t shunt_uohm;
	uint32_t sample_rate_hz;
	uint32_t buffer_samples;
	uint32_t i2c_hz;
};

/**
 * struct sbrig_power_info - what the sensor is and how it is set up
 * @uri: context URI
 * @device: IIO device name
 * @sample_rate_hz: the rate the device reports
 * @shunt_uohm: the shunt the device uses
 * @buffer_samples: samples per buffer refill (the requested or automatic size)
 * @has_timestamp: the buffer has a timestamp channel
 * @stale_buffer_cleared: the device's buffer was left enabled by a capture
 *	that was killed (local: only; Linux keeps it enabled, the driver
 *	polling the chip and refusing attribute writes): it was disabled
 */
struct sbrig_power_info {
	char uri[256];
	char device[64];
	double sample_rate_hz;
	uint32_t shunt_uohm;
	uint32_t buffer_samples;
	bool has_timestamp;
	bool stale_buffer_cleared;
};

/**
 * struct sbrig_power_stats - capture counters since sbrig_power_start()
 * @samples: samples delivered
 * @gaps: gaps detected
 * @missing: samples the gaps stand for
 * @overruns: samples the queue to the caller had to drop (caller too slow)
 * @tail_lost: at the stop, the sensor did not deliver the samples up to
 *	the stop in time (an ip: server that delivered no buffer for a
 *	second more than a buffer's duration, or still had not reached the
 *	stop 10 s after it): they are lost, their number unknown
 * @stop_ns: host time sbrig_power_stop() was called (0 before): the
 *	lost tail reaches up to it
 * @remote_clock: the samples are stamped by another host's clock (ip:)
 *	and mapped to ours (power.c); the rest is about that mapping
 * @clock_drift_known: a drift has been fitted (20 s of samples at least)
 * @clock_drift_ppb: the remote clock's rate against ours, minus one
 *	(ppb; positive: ours runs faster)
 * @clock_uncert_ns: how far the mapping may be off beyond the least
 *	network delay (the spread of the delays' minima about the fit)
 */
struct sbrig_power_stats {
	uint64_t samples;
	uint64_t gaps;
	uint64_t missing;
	uint64_t overruns;
	bool tail_lost;
	int64_t stop_ns;
	bool remote_clock;
	bool clock_drift_known;
	int64_t clock_drift_ppb;
	int64_t clock_uncert_ns;
};

/**
 * sbrig_power_new() - open a sensor
 * @uri: libiio context URI
 * @opts: device and settings
 *
 * Return: a new object the caller frees with sbrig_power_free(), or NULL
 * with errno set and sbrig_errmsg() naming the URI/device/attribute.
 */
struct sbrig_power *sbrig_power_new(const char *uri,
				    const struct sbrig_power_opts *opts);

/**
 * sbrig_power_check_uri() - is @uri a sensor URI sbrig_power_new() takes
 * @uri: local: or ip:HOST[:PORT] (HOST a name, an IPv4 address or [IPv6])
 *
 * Syntax only: touches no device and no network, needs no library beyond
 * libc (config.c calls it); sbrig_power_new() calls it first.
 *
 * Return: 0, or -EINVAL with sbrig_errmsg() "'URI': expected SYNTAX" or
 * "'URI': unknown scheme (expected local: or ip:HOST[:PORT])".
 */
int sbrig_power_check_uri(const char *uri);

/** sbrig_power_free() - stop capturing and close; NULL ok */
void sbrig_power_free(struct sbrig_power *pwr);

/** sbrig_power_get_info() - fill @info; Return: 0 or -errno */
int sbrig_power_get_info(struct sbrig_power *pwr,
			 struct sbrig_power_info *info);

/**
 * sbrig_power_read_now() - one reading through the channel attributes
 * @pwr: the sensor (not capturing)
 * @s: out; t_ns is the host time of the read
 *
 * Return: 0 or -errno.
 */
int sbrig_power_read_now(struct sbrig_power *pwr, struct sbrig_sample *s);

/** sbrig_power_start() - start the capture thread; Return: 0 or -errno */
int sbrig_power_start(struct sbrig_power *pwr);

/**
 * sbrig_power_stop() - stop the capture thread (joins it)
 * @pwr: the sensor
 *
 * Every sample taken before the call is delivered: on local: contexts
 * what the kernel holds is taken at once (a partial buffer included); on
 * ip: contexts the call waits for the buffer that reaches the stop, as
 * long as the sensor delivers a buffer at least every buffer's duration
 * and a quarter plus 1 s and for 10 s at most (a late sensor), then
 * cancels it (a hung one: the stats' tail_lost). Samples already queued
 * stay readable.
 *
 * Return: 0, or the -errno that ended the capture thread early (device
 * vanished, ...).
 */
int sbrig_power_stop(struct sbrig_power *pwr);

/**
 * sbrig_power_fd() - eventfd readable when samples, gaps or an error wait
 *
 * Samples and gaps make it readable at most every wake interval (see
 * sbrig_power_set_wake_interval(); at small buffer sizes, only every few
 * buffers); overruns, a queue half full, the end of the capture and
 * sbrig_power_stop() make it readable at once.
 *
 * Return: an fd owned by @pwr (valid from sbrig_power_new() on).
 */
int sbrig_power_fd(struct sbrig_power *pwr);

/** the default wake interval: 250 ms */
#define SBRIG_POWER_WAKE_NS 250000000LL
/** the longest one: samples queue up to it (the queue holds 2 s at least) */
#define SBRIG_POWER_WAKE_MAX_NS 1000000000LL

/**
 * sbrig_power_set_wake_interval() - how often samples wake the caller
 * @pwr: the sensor
 * @interval_ns: plain samples and gaps make sbrig_power_fd() readable at
 *	most this often: 0 for SBRIG_POWER_WAKE_NS, at most
 *	SBRIG_POWER_WAKE_MAX_NS
 *
 * A wake-up of the caller's thread is the dearest part of a buffer after
 * libiio's own I/O, so a caller that only stores the samples asks for the
 * longest interval, and one that watches the newest sample (is the
 * target asleep?) for the default. Takes effect from the next buffer;
 * callable from any thread, capturing or not (it lasts across captures).
 *
 * Return: 0, or -EINVAL for an interval out of range.
 */
int sbrig_power_set_wake_interval(struct sbrig_power *pwr,
				  int64_t interval_ns);

/**
 * sbrig_power_read() - take queued samples without blocking
 * @pwr: the sensor
 * @s: out array
 * @max: its size
 * @gaps: out array for gaps (may be NULL if @max_gaps is 0)
 * @max_gaps: its size
 * @ngaps: out: gaps stored
 *
 * Gaps are in time order with the samples; a gap's t_ns/next_t_ns are
 * those of the samples around it.
 *
 * Return: samples stored (0: none queued), or the -errno that stopped the
 * capture thread (once all queued samples have been read).
 */
ssize_t sbrig_power_read(struct sbrig_power *pwr, struct sbrig_sample *s,
			 size_t max, struct sbrig_gap *gaps, size_t max_gaps,
			 size_t *ngaps);

/** sbrig_power_get_stats() - counters; Return: 0 or -errno */
int sbrig_power_get_stats(struct sbrig_power *pwr,
			  struct sbrig_power_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_POWER_H */
