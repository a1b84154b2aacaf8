/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: capture directories
 *
 * A capture is a directory of raw data with a provenance header; the format
 * is documented in host/doc/capture-format.md. Files are append-only: text
 * (a header line, then tab-separated rows), and in format version 2 (the
 * default) the samples as fixed-size little-endian binary records in
 * samples.bin. Writers flush and fdatasync at most once a second, so a
 * kill -9 loses at most the last second and every file stays readable (a
 * reader ignores a last line without its newline, or a cut last record).
 * A write error (ENOSPC, EIO) stops the capture with a clear error; what is
 * already on disk stays valid.
 */
#ifndef SBRIG_CAPTURE_H
#define SBRIG_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include <sbrig/clock.h>
#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_capture;

/* Most [target] sections in meta.ini (see sbrig_capture_set_target()). */
#define SBRIG_CAPTURE_MAX_TARGETS 64

/*
 * Capture format versions the writer can write: 1 (samples.tsv) and 2
 * (samples.bin); SBRIG_CAPTURE_VERSION is what sbrig_capture_new() writes.
 */
#define SBRIG_CAPTURE_VERSION_MIN 1
#define SBRIG_CAPTURE_VERSION_MAX 2
#define SBRIG_CAPTURE_VERSION 2

/**
 * struct sbrig_provenance - where the data comes from (meta.ini [provenance])
 * @rig_name: config [rig] name
 * @rig_config: config path
 * @rig_sha256: config hash
 * @host_version: libsbrig/sbrig version (git describe)
 * @git_sha: git SHA of the code under test ("" if unknown)
 * @scenario: scenario path ("" for a bare capture)
 * @scenario_sha256: scenario hash ("" for a bare capture)
 * @power_uri: sensor URI
 * @target_uri: link URI
 */
struct sbrig_provenance {
	char rig_name[64];
	char rig_config[256];
	char rig_sha256[65];
	char host_version[64];
	char git_sha[64];
	char scenario[256];
	char scenario_sha256[65];
	char power_uri[256];
	char target_uri[256];
};

/**
 * struct sbrig_capture_opts - how to write a capture (all zero: defaults)
 * @version: format version: 0 for SBRIG_CAPTURE_VERSION, else
 *	SBRIG_CAPTURE_VERSION_MIN..SBRIG_CAPTURE_VERSION_MAX (1: samples.tsv,
 *	for tests and for readers that predate version 2; 2: samples.bin)
 */
struct sbrig_capture_opts {
	unsigned int version;
};

/**
 * sbrig_capture_new() - create a capture directory and its files
 * @dir: directory to create (must not exist, or exist empty)
 * @prov: provenance written to meta.ini at once
 *
 * Writes format version SBRIG_CAPTURE_VERSION; the same as
 * sbrig_capture_new_opts() with @opts NULL.
 *
 * Return: new capture (finish with sbrig_capture_close()), or NULL with
 * errno set and sbrig_errmsg() naming the path.
 */
struct sbrig_capture *sbrig_capture_new(const char *dir,
					const struct sbrig_provenance *prov);

/**
 * sbrig_capture_new_opts() - create a capture directory, with options
 * @dir: directory to create (must not exist, or exist empty)
 * @prov: provenance written to meta.ini at once
 * @opts: options (copied), or NULL for the defaults
 *
 * Return: as sbrig_capture_new(); NULL with errno EINVAL for a version
 * the writer cannot write.
 */
struct sbrig_capture *
sbrig_capture_new_opts(const char *dir, const struct sbrig_provenance *prov,
		       const struct sbrig_capture_opts *opts);

/**
 * sbrig_capture_set_target() - record the target's identity (from HELLO)
 * @cap: the capture
 * @boot_id: target boot
 * @kernel: kernel release
 * @module: module version
 * @agent: agent version
 *
 * Appended to meta.ini as a [target] section, once per identity: a call
 * with the same four values as a listed section adds nothing (an agent says
 * HELLO again on every reconnect); a module reloaded with another version
 * is a new identity. At most SBRIG_CAPTURE_MAX_TARGETS sections are
 * written; further identities are only counted, in [end]
 * targets_not_listed. The strings are copied (the caller keeps them).
 *
 * Return: 0 (also for an identity listed already or not listed for the
 * bound), or -errno (meta.ini could not be rewritten: the capture failed).
 */
int sbrig_capture_set_target(struct sbrig_capture *cap, const char *boot_id,
			     const char *kernel, const char *module,
			     const char *agent);

/**
 * sbrig_capture_set_sensor_clock() - how the samples' times were mapped
 * @cap: the capture
 * @remote: stamped by another host's clock (an ip: sensor), mapped to ours
 * @drift_known: @drift_ppb was fitted (power.c)
 * @drift_ppb: the remote clock's rate against ours, minus one
 * @uncert_ns: how far the mapping may be off (beyond the least delay)
 *
 * Written at close as a [sensor] section of meta.ini (capture-format.md);
 * a later call replaces an earlier one. Return: 0 or -errno.
 */
int sbrig_capture_set_sensor_clock(struct sbrig_capture *cap, bool remote,
				   bool drift_known, int64_t drift_ppb,
				   int64_t uncert_ns);

/**
 * sbrig_capture_set_sensor_tail_lost() - the sensor's last samples are lost
 * @cap: the capture
 * @stop_ns: host time the sensor was stopped (struct sbrig_power_stats's
 *	stop_ns)
 *
 * At the stop the sensor did not deliver the samples up to @stop_ns (its
 * stats' tail_lost): close writes [end] sensor_tail_lost = 1 with the span
 * lost, from the last sample added (none: the capture's creation) to
 * @stop_ns (capture-format.md), so that the analysis does not take the
 * last sample for the end of the measurement. A later call replaces an
 * earlier one. Return: 0 or -errno (the capture has failed).
 */
int sbrig_capture_set_sensor_tail_lost(struct sbrig_capture *cap,
				       int64_t stop_ns);

/**
 * sbrig_capture_add_samples() - append @n samples
 * @cap: the capture
 * @s: the samples (copied)
 * @n: how many (0 ok)
 *
 * Version 2 encodes each sample into a 32-byte record in a buffer (no
 * formatting, no system call until the buffer fills or the next sync), so
 * a batch costs about a memcpy of it.
 *
 * Return: 0 or -errno (after which the capture is failed).
 */
int sbrig_capture_add_samples(struct sbrig_capture *cap,
			      const struct sbrig_sample *s, size_t n);

/* The other appenders: Return 0 or -errno (after which the capture is failed). */
int sbrig_capture_add_gap(struct sbrig_capture *cap,
			  const struct sbrig_gap *gap);
int sbrig_capture_add_edge(struct sbrig_capture *cap,
			   const struct sbrig_edge *edge);
int sbrig_capture_add_stimulus(struct sbrig_capture *cap,
			       const struct sbrig_stimulus *st);
int sbrig_capture_add_event(struct sbrig_capture *cap,
			    const struct sbrig_event *ev);
int sbrig_capture_add_stats(struct sbrig_capture *cap, int64_t t_ns,
			    const struct sbrig_blocker_stats *row);
int sbrig_capture_add_clock(struct sbrig_capture *cap, int64_t host_send_ns,
			    int64_t host_recv_ns, int64_t target_ns,
			    int retained);

/**
 * sbrig_capture_sync() - write the buffered rows if a second has passed
 * @cap: the capture
 * @now_ns: host CLOCK_MONOTONIC
 *
 * Call from the main loop at least once a second. Every fifth second it
 * also has what was written fdatasync'd (on the capture's own thread).
 * Return: 0 or -errno.
 */
int sbrig_capture_sync(struct sbrig_capture *cap, int64_t now_ns);

/**
 * sbrig_capture_close() - finish: flush, sync, write the end record
 * @cap: the capture; freed even on error. NULL ok.
 * @status: "complete", "aborted", "failed: ..." (meta.ini [end] status)
 *
 * Return: 0 or the first -errno the capture hit.
 */
int sbrig_capture_close(struct sbrig_capture *cap, const char *status);

/** sbrig_capture_dir() - the directory (owned by @cap) */
const char *sbrig_capture_dir(const struct sbrig_capture *cap);

/** sbrig_capture_version() - the format version @cap writes (1 or 2) */
unsigned int sbrig_capture_version(const struct sbrig_capture *cap);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_CAPTURE_H */
