/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: reading capture directories (format versions 1 and 2)
 *
 * The offline reader of what capture.c writes (host/doc/capture-format.md),
 * for analysis: sbrig_capread_open() parses meta.ini (provenance, the
 * target sections, the end record); each data file is then streamed row
 * by row into the structs of records.h with its own cursor, so several
 * files can be merged by time and memory does not grow with the capture
 * (gigabytes of samples are read through a 64 KiB buffer). Nothing here
 * needs libgpiod, libiio or libserialport: it is part of libsbrig-core.
 *
 * Both versions are read through the same calls: the samples come from
 * samples.tsv (version 1) or from samples.bin (version 2, binary records),
 * by sbrig_capread_next_sample() one at a time or by
 * sbrig_capread_samples() in batches (the fast path: from samples.bin a
 * batch is large read()s and a little-endian decode, nothing per sample).
 *
 * Tolerance is what the format promises and no more: a last line without
 * its newline, or a last record of samples.bin shorter than a record, is a
 * write the writer did not finish; it is ignored and counted
 * (sbrig_capread_file_info()). Anything else that does not follow the
 * format is an error naming "DIR/FILE:LINE: column N (NAME): why"
 * (meta.ini: "DIR/meta.ini:LINE: [SECTION] KEY: why"; samples.bin:
 * "DIR/samples.bin: offset N: why"); text columns and meta.ini values are
 * unescaped as the format says.
 *
 * Ownership: a struct sbrig_capread owns its file descriptors and buffers;
 * the rows are copied into the caller's structs. Not thread-safe: one
 * thread per reader (open several readers for parallel passes).
 */
#ifndef SBRIG_CAPTURE_READ_H
#define SBRIG_CAPTURE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sbrig/capture.h>
#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_capread;

/** enum sbrig_capfile - the data files of a capture */
enum sbrig_capfile {
	SBRIG_CAPFILE_SAMPLES,	/* samples.tsv (version 1), samples.bin (2) */
	SBRIG_CAPFILE_GAPS,	/* gaps.tsv */
	SBRIG_CAPFILE_EDGES,	/* edges.tsv */
	SBRIG_CAPFILE_STIMULI,	/* stimuli.tsv */
	SBRIG_CAPFILE_EVENTS,	/* events.tsv */
	SBRIG_CAPFILE_STATS,	/* stats.tsv */
	SBRIG_CAPFILE_CLOCK,	/* clock.tsv */
	SBRIG_CAPFILE_NR,
};

/**
 * struct sbrig_capture_target - one [target] section
 * @boot_id: target boot
 * @kernel: kernel release
 * @module: suspend_block version
 * @agent: agent version
 * @seen_monotonic_ns: host time of the HELLO
 */
struct sbrig_capture_target {
	char boot_id[SBRIG_BOOT_ID_MAX];
	char kernel[96];
	char module[32];
	char agent[32];
	int64_t seen_monotonic_ns;
};

/**
 * struct sbrig_capture_meta - meta.ini
 * @version: [capture] version (1 or 2)
 * @created: [capture] created (ISO-8601 UTC)
 * @created_realtime_ns: [capture] created_realtime_ns
 * @created_monotonic_ns: [capture] created_monotonic_ns
 * @prov: [provenance]
 * @targets: the [target] sections, in file order
 * @ntargets: their count
 * @ended: an [end] section is present (the writer closed the capture)
 * @status: [end] status ("complete", "aborted...", "failed: ...")
 * @closed_monotonic_ns: [end] closed_monotonic_ns
 * @error: [end] error ("" if none)
 * @errno_value: [end] errno (0 if none)
 * @rows: [end] rows per file as the writer counted them (-1: not given)
 * @targets_not_listed: [end] targets_not_listed (0 if absent)
 * @sensor_tail_lost: [end] sensor_tail_lost: 1 the sensor did not
 *	deliver its samples up to the stop (0 if absent)
 * @sensor_tail_lost_from_ns: [end] sensor_tail_lost_from_ns: the last
 *	sample's time (or the capture's creation, without samples)
 * @sensor_tail_lost_to_ns: [end] sensor_tail_lost_to_ns: the stop; no
 *	earlier than @sensor_tail_lost_from_ns (the reader refuses others)
 * @sensor_clock: [sensor] clock: "local" or "remote" ("" no section)
 * @sensor_drift_known: [sensor] clock_drift_known
 * @sensor_drift_ppb: [sensor] clock_drift_ppb
 * @sensor_uncert_ns: [sensor] clock_uncert_ns
 */
struct sbrig_capture_meta {
	unsigned int version;
	char created[64];
	int64_t created_realtime_ns;
	int64_t created_monotonic_ns;
	struct sbrig_provenance prov;
	struct sbrig_capture_target targets[SBRIG_CAPTURE_MAX_TARGETS];
	unsigned int ntargets;
	bool ended;
	char status[512];
	int64_t closed_monotonic_ns;
	char error[1024];
	int errno_value;
	int64_t rows[SBRIG_CAPFILE_NR];
	uint64_t targets_not_listed;
	int sensor_tail_lost;
	int64_t sensor_tail_lost_from_ns;
	int64_t sensor_tail_lost_to_ns;
	char sensor_clock[16];
	int sensor_drift_known;
	int64_t sensor_drift_ppb;
	int64_t sensor_uncert_ns;
};

/**
 * struct sbrig_capture_clock_row - one row of clock.tsv
 * @host_send_ns: host time the ping was sent (for a marker pair: the edge)
 * @host_recv_ns: host time the pong arrived (== @host_send_ns: marker pair)
 * @target_ns: target time in the pong (or of the event behind the edge)
 * @retained: the clock model kept it
 */
struct sbrig_capture_clock_row {
	int64_t host_send_ns;
	int64_t host_recv_ns;
	int64_t target_ns;
	bool retained;
};

/**
 * struct sbrig_capfile_info - how far one file has been read
 * @rows: rows (samples.bin: records) returned so far
 * @line: line number of the last line read (the header is line 1); 0 for
 *	samples.bin
 * @cut_lines: 1 if the file ended in a line without its newline, or
 *	(samples.bin) in a record shorter than the record size: a write the
 *	writer did not finish, ignored; else 0
 * @eof: the end of the file was reached
 * @offset: bytes of the file consumed: the header and the rows (records)
 *	returned
 * @cut_bytes: the length of the cut line or record (0 if none)
 */
struct sbrig_capfile_info {
	uint64_t rows;
	uint64_t line;
	unsigned int cut_lines;
	bool eof;
	uint64_t offset;
	uint64_t cut_bytes;
};

/**
 * sbrig_capread_open() - open a capture directory and read its meta.ini
 * @dir: the capture directory (the path is copied)
 *
 * Only meta.ini is read here (whole: it is small, at most 1 MiB); the data
 * files are opened when first read.
 *
 * Return: a reader (free with sbrig_capread_close()), or NULL with errno
 * set and sbrig_errmsg() naming the file and line (EPROTONOSUPPORT: a
 * capture format version this reader does not know).
 */
struct sbrig_capread *sbrig_capread_open(const char *dir);

/** sbrig_capread_close() - close every file; NULL ok */
void sbrig_capread_close(struct sbrig_capread *cr);

/** sbrig_capread_meta() - meta.ini, owned by @cr (valid until close) */
const struct sbrig_capture_meta *sbrig_capread_meta(const struct sbrig_capread *cr);

/** sbrig_capread_dir() - the directory (owned by @cr) */
const char *sbrig_capread_dir(const struct sbrig_capread *cr);

/**
 * sbrig_capread_next_sample() - the next sample
 * @cr: the reader
 * @s: out
 *
 * The sbrig_capread_next_*() functions each read their own file, from its
 * first row on (after its header, which must be the header the format
 * gives), independently of the others. After an error the file stays
 * failed: every later call returns the same error. The samples come from
 * samples.tsv or samples.bin, as the capture's version says; the two
 * calls that read samples, this one and sbrig_capread_samples(), share
 * one cursor and may be mixed.
 *
 * Return: 1 with @s filled, 0 at the end of the file, or -errno with
 * sbrig_errmsg() "DIR/samples.tsv:LINE: column N (NAME): why" or
 * "DIR/samples.bin: offset N: why" (-EINVAL: not the format;
 * -EPROTONOSUPPORT: a samples.bin record format or flags this reader does
 * not know).
 */
int sbrig_capread_next_sample(struct sbrig_capread *cr, struct sbrig_sample *s);

/**
 * sbrig_capread_samples() - the next samples, in a batch
 * @cr: the reader
 * @buf: out: room for @max samples, owned by the caller
 * @max: how many at most
 *
 * The fast way through the samples: from samples.bin a batch of a few
 * thousand samples is one or a few read()s straight into @buf and a
 * decode in place, no parsing and no system call per sample (batches of
 * 2048 or more take this path; 4096 to 65536 is a good size). From
 * samples.tsv it returns the same samples as sbrig_capread_next_sample().
 * Memory does not grow with @max beyond @buf.
 *
 * Return: the number of samples stored in @buf, fewer than @max only at
 * the end of the file or before an error (which the next call returns);
 * 0 at the end of the file; or -errno as sbrig_capread_next_sample().
 */
ssize_t sbrig_capread_samples(struct sbrig_capread *cr,
			      struct sbrig_sample *buf, size_t max);

/**
 * sbrig_capread_seek_samples() - continue the samples at a time
 * @cr: the reader
 * @t_ns: the time
 *
 * Version 2 only: moves the samples' cursor to the first record of
 * samples.bin whose t_ns is @t_ns or later (a binary search over the
 * fixed-size records with pread(), which the format's time order allows;
 * the end of the file if there is none), so that a pass that needs a few
 * windows of a long capture reads those and not the whole file. Then
 * sbrig_capread_samples() and sbrig_capread_next_sample() stream on from
 * there; the cursor may move backwards as well as forwards. Only whole
 * records count: a cut last record (a write the writer did not finish) is
 * never sought to, and is ignored and counted as usual when the stream
 * reaches it. The file's header is checked first, as by the first read.
 * sbrig_capread_file_info() then has @rows = the index of the next record
 * (records before it count as returned), @offset its byte offset, @eof,
 * @cut_lines and @cut_bytes cleared (set again at the end of the file).
 * On samples that are not in time order the position is some record, not
 * an error: the readers that need the order check it (sbrig analyze
 * fails such a capture).
 *
 * Return: 0; -EOPNOTSUPP for a version 1 capture (samples.tsv has no
 * fixed-size rows: stream instead; the reader is unchanged); or -errno as
 * sbrig_capread_next_sample() (the header, or a read: the file stays
 * failed).
 */
int sbrig_capread_seek_samples(struct sbrig_capread *cr, int64_t t_ns);

/** sbrig_capread_next_gap() - the next row of gaps.tsv; as next_sample() */
int sbrig_capread_next_gap(struct sbrig_capread *cr, struct sbrig_gap *g);

/** sbrig_capread_next_edge() - the next row of edges.tsv; as next_sample() */
int sbrig_capread_next_edge(struct sbrig_capread *cr, struct sbrig_edge *e);

/** sbrig_capread_next_stimulus() - the next row of stimuli.tsv */
int sbrig_capread_next_stimulus(struct sbrig_capread *cr,
				struct sbrig_stimulus *st);

/** sbrig_capread_next_event() - the next row of events.tsv */
int sbrig_capread_next_event(struct sbrig_capread *cr, struct sbrig_event *ev);

/**
 * sbrig_capread_next_stats() - the next row of stats.tsv
 * @cr: the reader
 * @t_ns: out: host time of the snapshot the row belongs to
 * @row: out: the blocker's row
 *
 * Return: as sbrig_capread_next_sample().
 */
int sbrig_capread_next_stats(struct sbrig_capread *cr, int64_t *t_ns,
			     struct sbrig_blocker_stats *row);

/** sbrig_capread_next_clock() - the next row of clock.tsv */
int sbrig_capread_next_clock(struct sbrig_capread *cr,
			     struct sbrig_capture_clock_row *c);

/**
 * sbrig_capread_rewind() - read @file again from its first row
 * @cr: the reader
 * @file: which
 *
 * Return: 0 or -errno (the file could not be reopened).
 */
int sbrig_capread_rewind(struct sbrig_capread *cr, enum sbrig_capfile file);

/**
 * sbrig_capread_file_info() - how far @file has been read
 * @cr: the reader
 * @file: which
 * @info: out
 */
void sbrig_capread_file_info(const struct sbrig_capread *cr,
			     enum sbrig_capfile file,
			     struct sbrig_capfile_info *info);

/**
 * sbrig_capfile_name() - "samples.tsv", ... ("?" for a bad value)
 *
 * The names of format version 1; sbrig_capread_file_name() gives the file
 * a reader actually reads (samples.bin in version 2).
 */
const char *sbrig_capfile_name(enum sbrig_capfile file);

/**
 * sbrig_capread_file_name() - the name of @file in @cr's capture
 * @cr: the reader
 * @file: which
 *
 * Return: "samples.bin" for the samples of a version 2 capture, else as
 * sbrig_capfile_name(); a static string.
 */
const char *sbrig_capread_file_name(const struct sbrig_capread *cr,
				    enum sbrig_capfile file);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_CAPTURE_READ_H */
