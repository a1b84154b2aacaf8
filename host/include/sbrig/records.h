/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: records shared by rig I/O, capture and analysis
 *
 * Plain data, no ownership: every module that produces or consumes rig
 * data uses these structs, so power.c, gpio.c, link.c and capture.c agree
 * without including each other. All host times are CLOCK_MONOTONIC ns.
 */
#ifndef SBRIG_RECORDS_H
#define SBRIG_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest blocker name the module accepts (NAME_MAX) plus NUL. */
#define SBRIG_NAME_MAX 256
/* Longest rig object name (key, line) in a config, plus NUL. */
#define SBRIG_ID_MAX 32
/* A target boot id (/proc/sys/kernel/random/boot_id) plus NUL. */
#define SBRIG_BOOT_ID_MAX 40

/**
 * struct sbrig_sample - one supply measurement
 * @t_ns: host time of the conversion (from the IIO timestamp channel)
 * @current_uA: supply current
 * @bus_uV: supply (bus) voltage
 * @shunt_nV: voltage across the shunt
 * @power_uW: power as the sensor computed it
 */
struct sbrig_sample {
	int64_t t_ns;
	int32_t current_uA;
	int32_t bus_uV;
	int32_t shunt_nV;
	int64_t power_uW;
};

/**
 * struct sbrig_gap - samples known to be missing between two samples
 * @t_ns: time of the last sample before the gap
 * @next_t_ns: time of the first sample after it
 * @missing: samples the nominal rate says are missing (at least 1)
 */
struct sbrig_gap {
	int64_t t_ns;
	int64_t next_t_ns;
	uint64_t missing;
};

/**
 * struct sbrig_edge - an edge seen on a rig input line (the marker)
 * @t_ns: kernel timestamp of the edge (libgpiod, CLOCK_MONOTONIC)
 * @line: rig line name from the config (e.g. "marker")
 * @rising: true for a rising edge (line became active)
 * @seqno: per-line sequence number from the kernel (gaps = lost edges)
 */
struct sbrig_edge {
	int64_t t_ns;
	char line[SBRIG_ID_MAX];
	bool rising;
	uint64_t seqno;
};

/**
 * struct sbrig_stimulus - something the rig did to the target
 * @t_ns: host time the action took effect (after the ioctl returned)
 * @what: "press", "release", "plug", "unplug", "hold", "burn", "input", ...
 * @arg: key/line name, blocker name, duration ... (free text, no tabs)
 */
struct sbrig_stimulus {
	int64_t t_ns;
	char what[16];
	char arg[SBRIG_NAME_MAX];
};

/**
 * struct sbrig_event - one record of the module's event log, on host time
 * @host_t_ns: target time mapped onto host CLOCK_MONOTONIC
 * @uncert_ns: uncertainty of @host_t_ns (half-width), from the clock model
 * @target_t_ns: the record's CLOCK_BOOTTIME on the target
 * @seq: the module's record sequence number (per target boot)
 * @boot_id: the target boot the record belongs to
 * @type: "block", "unblock", "suspend", "enter", "exit", "resume",
 *	"abort", "policy" or "lost"
 * @arg: blocker name (unquoted), state, return code, ... as in the log
 * @cut: the name was cut by the module (the log line ended in '+')
 * @obj: block/unblock: the blocker object's id (the module's ID field),
 *	which tells blockers of one name apart; 0: not known (another
 *	record, or a module, agent or capture from before the id)
 */
struct sbrig_event {
	int64_t host_t_ns;
	int64_t uncert_ns;
	int64_t target_t_ns;
	uint64_t seq;
	char boot_id[SBRIG_BOOT_ID_MAX];
	char type[12];
	char arg[SBRIG_NAME_MAX];
	bool cut;
	uint64_t obj;
};

/**
 * struct sbrig_blocker_stats - one row of debugfs suspend_blockers
 * @name: blocker name, unquoted ("main", "unknown_wakeups", ...)
 * @count: activations
 * @wake_count: activations that aborted or woke a suspend
 * @active_since_ns: how long it has been active now (0 if inactive)
 * @total_time_ns: total active time
 * @sleep_time_ns: time spent suspended while active
 * @max_time_ns: longest activation
 * @last_change_ns: target CLOCK_MONOTONIC of the last change
 *
 * Field names and meanings are the seed's columns, in order.
 */
struct sbrig_blocker_stats {
	char name[SBRIG_NAME_MAX];
	uint64_t count;
	uint64_t wake_count;
	int64_t active_since_ns;
	int64_t total_time_ns;
	int64_t sleep_time_ns;
	int64_t max_time_ns;
	int64_t last_change_ns;
};

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_RECORDS_H */
