/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: capture directories
 *
 * A capture is a directory of raw data with a provenance header; the format
 * is documented in host/doc/capture-format.md. Files are append-only text
 * (a header line, then tab-separated rows); writers flush and fdatasync at
 * most once a second, so a kill -9 loses at most the last second and every
 * file stays readable (a reader ignores a last line without its newline).
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
 * sbrig_capture_new() - create a capture directory and its files
 * @dir: directory to create (must not exist, or exist empty)
 * @prov: provenance written to meta.ini at once
 *
 * Return: new capture (finish with sbrig_capture_close()), or NULL with
 * errno set and sbrig_errmsg() naming the path.
 */
struct sbrig_capture *sbrig_capture_new(const char *dir,
					const struct sbrig_provenance *prov);

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

/* Appenders: Return 0 or -errno (after which the capture is failed). */
int sbrig_capture_add_samples(struct sbrig_capture *cap,
			      const struct sbrig_sample *s, size_t n);
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
 * sbrig_capture_sync() - flush + fdatasync if a second has passed
 * @cap: the capture
 * @now_ns: host CLOCK_MONOTONIC
 *
 * Call from the main loop at least once a second.
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

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_CAPTURE_H */
