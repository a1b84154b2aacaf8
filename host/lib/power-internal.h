/* SPDX-License-Identifier: GPL-2.0 */
/*
 * power-internal.h - the pure parts of power.c (gap detection, unit
 * conversion, INA226 timing, remote clock mapping), exported to the unit
 * tests. Not installed.
 */
#ifndef SBRIG_POWER_INTERNAL_H
#define SBRIG_POWER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/**
 * sbrig_power_gap() - is there a gap between two sample times?
 * @prev_t_ns: time of the previous sample
 * @t_ns: time of this sample
 * @period_ns: nominal sampling period (> 0)
 * @missing: out: samples missing in between (set only on a gap; >= 1)
 *
 * A sample more than 1.5 nominal periods after the previous one closes a
 * gap of round(dt / period) - 1 samples, at least 1. Pure; any context.
 *
 * Return: true on a gap.
 */
bool sbrig_power_gap(int64_t prev_t_ns, int64_t t_ns, int64_t period_ns,
		     uint64_t *missing);

/**
 * sbrig_power_scale() - convert a raw reading to an integer unit
 * @raw: raw value from the channel
 * @offset: the channel's offset attribute (0 if none)
 * @scale: the channel's scale attribute (IIO base unit: mV, mA, mW)
 * @factor: 1000 for uV/uA/uW, 1e6 for nV
 *
 * Return: llround((raw + offset) * scale * factor).
 */
int64_t sbrig_power_scale(int64_t raw, double offset, double scale,
			  double factor);

/**
 * sbrig_power_pick_timing() - INA226 setting nearest to a sampling rate
 * @rate_hz: wanted rate (> 0)
 * @ct_us: out: conversion time for both bus and shunt (us)
 * @avg: out: averaging count
 *
 * The INA226 converts bus and shunt alternately: rate = 1e6 / (2 * ct *
 * avg). Chooses the pair whose rate is nearest @rate_hz (log distance).
 */
void sbrig_power_pick_timing(double rate_hz, unsigned int *ct_us,
			     unsigned int *avg);

/**
 * struct sbrig_clockmap - remote sample clock -> local CLOCK_MONOTONIC
 * @offset_ns: local - remote estimate (valid once @valid)
 * @valid: at least one buffer seen
 *
 * See the comment in power.c on how (and how well) this works.
 */
struct sbrig_clockmap {
	int64_t offset_ns;
	bool valid;
};

/**
 * sbrig_clockmap_update() - take one buffer's arrival into account
 * @map: the mapping
 * @arrival_ns: local CLOCK_MONOTONIC when the buffer arrived
 * @last_ts_ns: remote timestamp of its last sample
 *
 * Keeps the minimum of arrival - last sample over all buffers.
 */
void sbrig_clockmap_update(struct sbrig_clockmap *map, int64_t arrival_ns,
			   int64_t last_ts_ns);

#endif /* SBRIG_POWER_INTERNAL_H */
