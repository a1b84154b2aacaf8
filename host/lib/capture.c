// SPDX-License-Identifier: GPL-2.0
/*
 * capture.c - capture directories (format: host/doc/capture-format.md).
 *
 * Each data file is append-only with a header: text (a header line, then
 * one row per line) or, for the samples of format version 2 (the
 * default), samples.bin (a 32-byte header, then 32-byte little-endian
 * records: lib/capture-bin.h). Rows and records are built in a per-file
 * userspace buffer and written when it fills, when sbrig_capture_sync()
 * finds a second has passed (CAP_FLUSH_NS) and at close; what was written
 * is fdatasync'd every CAP_DURABLE_NS and at close. A written row survives
 * a crash of the writer (the kernel has it); the fdatasync is for a crash
 * of the host itself (a power cut, a panic), and it is the writer's
 * dearest work: each one writes back a few dozen pages on the writer's
 * account and waits for the disk several times, where the kernel's
 * flusher threads would write them back anyway, in larger batches, within
 * 30 s. Every 5 s keeps a host crash's loss small at a fifth of the cost. A
 * record is a fixed-size encoding of the sample, so a batch of samples
 * costs about a memcpy; only text rows are formatted. A flush that fails
 * part-way cuts the file back to its last complete row or record, so a
 * file on disk always ends at a row (record) boundary, except after a
 * kill -9 in the middle of a write(), which readers tolerate (a last line
 * without its newline, or a cut last record, is ignored).
 *
 * meta.ini is never appended to: it is rebuilt from memory, written to
 * meta.ini.tmp, fsync'd and renamed over the old one, so it is always
 * either the previous or the new complete version. So that the final
 * meta.ini can still be written when the disk has filled up, the directory
 * holds a preallocated .reserve file that close deletes just before it.
 *
 * The first write error fails the capture: its -errno and a message naming
 * the file are kept and returned by every later call; close still writes
 * what it can (the other files, meta.ini with the error).
 *
 * [target] sections: one per target identity (boot id, kernel, module,
 * agent) the link reports, at most SBRIG_CAPTURE_MAX_TARGETS; an identity
 * already listed adds nothing (an agent says HELLO on every reconnect) and
 * the ones beyond the bound are counted into [end] targets_not_listed, so
 * a target that reboots in a loop cannot grow meta.ini (and its rewrite +
 * fsync per HELLO) without bound.
 *
 * The periodic fdatasync runs on a thread of its own (struct cap_syncer,
 * started at the first sync): the owner's thread only write()s into the
 * page cache, so a slow disk (an SD card, a busy NFS server) never stalls
 * the daemon's poll loop for the second a sync can take. The syncer's
 * first error fails the capture at the owner's next call, as a write
 * error does. sbrig_capture_close() joins it and syncs the rest itself.
 *
 * Otherwise not thread-safe: one thread owns a capture.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sbrig/capture.h>

#include "capture-bin.h"
#include "internal.h"

#define CAP_BUF_SIZE (64 * 1024)	/* a multiple of CAPBIN_RECORD_SIZE */
/* longest row: a few numbers plus two escaped names (4x: \xHH) */
#define CAP_ROW_MAX (256 + 8 * SBRIG_NAME_MAX)
#define CAP_FLUSH_NS 1000000000LL
#define CAP_DURABLE_NS 5000000000LL
/* room for the final meta.ini.tmp (a few KiB) and a directory block */
#define CAP_RESERVE_NAME ".reserve"
#define CAP_RESERVE_SIZE (128 * 1024)	/* fits 64 escaped [target]s */

enum cap_file_id {
	F_SAMPLES,
	F_GAPS,
	F_EDGES,
	F_STIMULI,
	F_EVENTS,
	F_STATS,
	F_CLOCK,
	F_NR,
};

static const struct {
	const char *name;
	const char *header;
	const char *counter;	/* key in meta.ini [end] */
} cap_files[F_NR] = {
	[F_SAMPLES] = { "samples.tsv",
		"t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW", "samples" },
	[F_GAPS] = { "gaps.tsv", "t_ns\tnext_t_ns\tmissing", "gaps" },
	[F_EDGES] = { "edges.tsv", "t_ns\tline\tedge\tseqno", "edges" },
	[F_STIMULI] = { "stimuli.tsv", "t_ns\twhat\targ", "stimuli" },
	[F_EVENTS] = { "events.tsv",
		"host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut"
		"\tobj", "events" },
	[F_STATS] = { "stats.tsv",
		"t_ns\tname\tcount\twake_count\tactive_since_ns\ttotal_time_ns\t"
		"sleep_time_ns\tmax_time_ns\tlast_change_ns", "stats" },
	[F_CLOCK] = { "clock.tsv",
		"host_send_ns\thost_recv_ns\ttarget_ns\tretained", "clock" },
};

/**
 * struct cap_file - one data file
 * @name: its name in the directory (cap_files[], or samples.bin)
 * @binary: fixed-size records of CAPBIN_RECORD_SIZE bytes, not text lines
 * @fd: open for appending
 * @buf: rows not yet written
 * @len: bytes in @buf
 * @size: bytes on disk (complete rows)
 * @rows: rows written so far (the header not counted)
 * @pending: rows in @buf
 * @dirty: written since the last fdatasync
 */
struct cap_file {
	const char *name;
	bool binary;
	int fd;
	char *buf;
	size_t len;
	off_t size;
	uint64_t rows;
	uint64_t pending;
	bool dirty;
};

/**
 * struct cap_syncer - the thread that fdatasyncs the data files
 * @thread: it
 * @lock: protects the rest
 * @cond: signalled when @want changes or at @quit
 * @running: @thread was started (the owner's thread only)
 * @want: files written since their last sync, for the thread to sync
 * @quit: the thread ends once @want is done
 * @meta: a new meta.ini for the thread to write (NULL: none), @meta_len
 *	its length
 * @err: its first error (0 = none), @msg its message
 */
struct cap_syncer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running;
	bool want[F_NR];
	char *meta;
	size_t meta_len;
	bool quit;
	int err;
	char msg[512];
};

/**
 * struct sbrig_capture - an open capture directory
 * @dir: its path
 * @version: the format version written (1: samples.tsv, 2: samples.bin)
 * @dirfd: the directory, for openat/renameat/fsync
 * @files: the data files
 * @meta: meta.ini's [capture], [provenance] and [target] sections as text
 * @meta_len: bytes in @meta
 * @meta_cap: allocated
 * @last_sync_ns: host time of the last flush (write()) of the buffers
 * @last_durable_ns: host time of the last fdatasync handed to the syncer
 * @err: first error (0 = none)
 * @errmsg: its message (sbrig_errmsg() is per call, this stays)
 * @targets: identities listed in [target] sections (escaped fields joined
 *	by tabs, so two differ exactly when one of their fields does)
 * @ntargets: entries in @targets
 * @targets_dropped: new identities seen after @targets was full
 * @syncer: the fdatasync thread
 * @sensor: the [sensor] section close writes ("" none)
 */
struct sbrig_capture {
	char dir[PATH_MAX];
	unsigned int version;
	int dirfd;
	struct cap_file files[F_NR];
	char *meta;
	size_t meta_len, meta_cap;
	int64_t last_sync_ns;
	int64_t last_durable_ns;
	int err;
	char errmsg[512];
	char *targets[SBRIG_CAPTURE_MAX_TARGETS];
	unsigned int ntargets;
	uint64_t targets_dropped;
	struct cap_syncer syncer;
	char sensor[256];
	int64_t created_ns;	/* [capture] created_monotonic_ns */
	int64_t last_sample_ns;	/* the last sample added's t_ns */
	bool have_sample;
	bool tail_lost;		/* sbrig_capture_set_sensor_tail_lost() */
	int64_t tail_stop_ns;
};

/* ---- errors -------------------------------------------------------------- */

static int SBRIG_PRINTF(3, 4)
cap_fail(struct sbrig_capture *cap, int err, const char *fmt, ...)
{
	va_list ap;

	if (!cap->err) {
		cap->err = err;
		va_start(ap, fmt);
		vsnprintf(cap->errmsg, sizeof(cap->errmsg), fmt, ap);
		va_end(ap);
		sbrig_err("capture failed: %s", cap->errmsg);
	}
	return sbrig_set_error(cap->err, "%s", cap->errmsg);
}

/* A failed capture refuses further rows with its first error. */
static int cap_check(struct sbrig_capture *cap)
{
	if (!cap->err)
		return 0;
	return sbrig_set_error(cap->err, "%s", cap->errmsg);
}

/* ---- text ---------------------------------------------------------------- */

/*
 * Text fields are escaped so a row stays one line of tab-separated
 * columns: backslash, tab, newline and carriage return become \\ \t \n \r,
 * other control bytes \xHH. Returns the bytes written to @out (which has
 * room for 4 * strlen(@s) + 1).
 */
static size_t escape(char *out, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char *o = out;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		default:
			if (c < ' ' || c == 0x7f) {
				*o++ = '\\';
				*o++ = 'x';
				*o++ = hex[c >> 4];
				*o++ = hex[c & 15];
			} else {
				*o++ = (char)c;
			}
		}
	}
	*o = '\0';
	return (size_t)(o - out);
}

/* An escaped copy of a bounded field in a static-size buffer. */
#define ESC(buf, field) (escape(buf, (field)), buf)

/* ---- data files ---------------------------------------------------------- */

/*
 * Of the first @done bytes of @f's buffer, how many make whole rows
 * (records), and how many rows that is (@rows).
 */
static size_t whole_rows(const struct cap_file *f, size_t done,
			 uint64_t *rows)
{
	const char *nl;
	size_t keep = 0, i;

	*rows = 0;
	if (f->binary) {
		*rows = done / CAPBIN_RECORD_SIZE;
		return done - done % CAPBIN_RECORD_SIZE;
	}
	for (i = 0; i < done; i = (size_t)(nl - f->buf) + 1) {
		nl = memchr(f->buf + i, '\n', done - i);
		if (!nl)
			break;
		keep = (size_t)(nl - f->buf) + 1;
		(*rows)++;
	}
	return keep;
}

static int flush_file(struct sbrig_capture *cap, enum cap_file_id id)
{
	struct cap_file *f = &cap->files[id];
	size_t done = 0, keep;
	uint64_t rows;
	ssize_t n;

	while (done < f->len) {
		n = write(f->fd, f->buf + done, f->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			/*
			 * Keep the file at a row (record) boundary: what was
			 * written whole stays (and is counted), a partial row
			 * is cut off.
			 */
			keep = whole_rows(f, done, &rows);
			if (keep < done &&
			    ftruncate(f->fd, f->size + (off_t)keep))
				sbrig_warn("%s/%s: cannot cut a partial row: %s",
					   cap->dir, f->name, strerror(errno));
			f->size += (off_t)keep;
			if (f->pending)	/* not the header */
				f->rows += rows;
			f->len = 0;
			f->pending = 0;
			f->dirty = true;
			return cap_fail(cap, -err, "%s/%s: write: %s", cap->dir,
					f->name, strerror(err));
		}
		done += (size_t)n;
	}
	f->size += (off_t)f->len;
	f->len = 0;
	f->rows += f->pending;
	f->pending = 0;
	f->dirty = true;
	return 0;
}

/* Makes room for one row of at most CAP_ROW_MAX bytes in file @id. */
static int row_room(struct sbrig_capture *cap, enum cap_file_id id)
{
	int ret = cap_check(cap);

	if (ret)
		return ret;
	if (CAP_BUF_SIZE - cap->files[id].len < CAP_ROW_MAX)
		return flush_file(cap, id);
	return 0;
}

/* Appends one formatted row (the newline is added here). */
static int SBRIG_PRINTF(3, 4)
add_row(struct sbrig_capture *cap, enum cap_file_id id, const char *fmt, ...)
{
	struct cap_file *f = &cap->files[id];
	va_list ap;
	int n, ret;

	ret = row_room(cap, id);
	if (ret)
		return ret;
	va_start(ap, fmt);
	n = vsnprintf(f->buf + f->len, CAP_BUF_SIZE - f->len - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= CAP_BUF_SIZE - f->len - 1)
		return sbrig_set_error(-EOVERFLOW, "%s/%s: row too long",
				       cap->dir, f->name);
	f->len += (size_t)n;
	f->buf[f->len++] = '\n';
	f->pending++;
	return 0;
}

/* ---- meta.ini ------------------------------------------------------------ */

static int SBRIG_PRINTF(2, 3) meta_add(struct sbrig_capture *cap,
				       const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(cap->meta + cap->meta_len,
			      cap->meta_cap - cap->meta_len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if ((size_t)n < cap->meta_cap - cap->meta_len)
			break;
		{
			size_t ncap = 2 * cap->meta_cap + (size_t)n;
			char *m = realloc(cap->meta, ncap);

			if (!m)
				return -ENOMEM;
			cap->meta = m;
			cap->meta_cap = ncap;
		}
	}
	cap->meta_len += (size_t)n;
	return 0;
}

/* "key = value\n" with the value escaped like a text column. */
static int meta_kv(struct sbrig_capture *cap, const char *key, const char *v)
{
	char *esc = malloc(4 * strlen(v) + 1);
	int ret;

	if (!esc)
		return -ENOMEM;
	escape(esc, v);
	ret = meta_add(cap, "%s = %s\n", key, esc);
	free(esc);
	return ret;
}

static int write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes meta.ini atomically: @text plus @tail. Return 0 or -errno. */
static int write_meta_text(int dirfd, const char *text, size_t len,
			   const char *tail)
{
	int fd, ret;

	fd = openat(dirfd, "meta.ini.tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = write_all(fd, text, len);
	if (!ret && tail)
		ret = write_all(fd, tail, strlen(tail));
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (ret)
		goto fail;
	if (renameat(dirfd, "meta.ini.tmp", dirfd, "meta.ini")) {
		ret = -errno;
		goto fail;
	}
	if (fsync(dirfd)) {
		ret = -errno;
		goto fail;
	}
	return 0;
fail:
	unlinkat(dirfd, "meta.ini.tmp", 0);
	return ret;
}

static int write_meta_file(struct sbrig_capture *cap, const char *tail)
{
	return write_meta_text(cap->dirfd, cap->meta, cap->meta_len, tail);
}

static bool syncer_start(struct sbrig_capture *cap);
static int write_meta(struct sbrig_capture *cap, const char *tail);

/*
 * Work was handed to the syncer under its lock: wake it and unlock.
 * Return: 0, or its first error, which fails the capture (its message is
 * set once, with the error, and not changed after).
 */
static int syncer_wake_unlock(struct sbrig_capture *cap)
{
	struct cap_syncer *sy = &cap->syncer;
	int err = sy->err;

	pthread_cond_signal(&sy->cond);
	pthread_mutex_unlock(&sy->lock);
	if (err)
		return cap_fail(cap, err, "%s", sy->msg);
	return 0;
}

/*
 * The new meta.ini for the syncer to write (a target identity added
 * mid-capture: its rewrite and fsync would stall the caller's loop), or
 * written here if the syncer cannot run. Return: 0 or the capture's error.
 */
static int write_meta_later(struct sbrig_capture *cap)
{
	struct cap_syncer *sy = &cap->syncer;
	char *copy;

	if (!syncer_start(cap))
		return write_meta(cap, NULL);
	copy = malloc(cap->meta_len ? cap->meta_len : 1);
	if (!copy)
		return cap_fail(cap, -ENOMEM, "%s/meta.ini: out of memory",
				cap->dir);
	memcpy(copy, cap->meta, cap->meta_len);
	pthread_mutex_lock(&sy->lock);
	free(sy->meta);		/* an older version not written yet */
	sy->meta = copy;
	sy->meta_len = cap->meta_len;
	return syncer_wake_unlock(cap);
}

static int write_meta(struct sbrig_capture *cap, const char *tail)
{
	int ret = write_meta_file(cap, tail);

	if (ret)
		return cap_fail(cap, ret, "%s/meta.ini: %s", cap->dir,
				strerror(-ret));
	return 0;
}

static void iso8601_now(char *buf, size_t len, int64_t *realtime_ns)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec);
	*realtime_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int meta_begin(struct sbrig_capture *cap,
		      const struct sbrig_provenance *prov)
{
	char created[64];
	int64_t realtime_ns;
	int ret;

	iso8601_now(created, sizeof(created), &realtime_ns);
	cap->created_ns = sbrig_now_ns();
	ret = meta_add(cap, "[capture]\nformat = sbrig-capture\nversion = %d\n"
		       "created = %s\ncreated_realtime_ns = %" PRId64 "\n"
		       "created_monotonic_ns = %" PRId64 "\n\n[provenance]\n",
		       cap->version, created, realtime_ns, cap->created_ns);
	ret = ret ?: meta_kv(cap, "rig_name", prov->rig_name);
	ret = ret ?: meta_kv(cap, "rig_config", prov->rig_config);
	ret = ret ?: meta_kv(cap, "rig_sha256", prov->rig_sha256);
	ret = ret ?: meta_kv(cap, "host_version", prov->host_version);
	ret = ret ?: meta_kv(cap, "git_sha", prov->git_sha);
	ret = ret ?: meta_kv(cap, "scenario", prov->scenario);
	ret = ret ?: meta_kv(cap, "scenario_sha256", prov->scenario_sha256);
	ret = ret ?: meta_kv(cap, "power_uri", prov->power_uri);
	ret = ret ?: meta_kv(cap, "target_uri", prov->target_uri);
	return ret;
}

/* ---- life cycle ---------------------------------------------------------- */

static int make_dir(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int ret;

	/* its parents are created as for every output (sbrig_mkdir_p()) */
	ret = sbrig_mkdir_parent(dir, 0755);
	if (ret < 0)
		return ret;
	if (!mkdir(dir, 0755))
		return 0;
	if (errno != EEXIST)
		return sbrig_set_error(-errno, "%s: mkdir: %s", dir,
				       strerror(errno));
	d = opendir(dir);
	if (!d)
		return sbrig_set_error(-errno, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			closedir(d);
			return sbrig_set_error(-EEXIST,
				"%s: exists and is not empty", dir);
		}
	closedir(d);
	return 0;
}

/*
 * Preallocate .reserve, deleted at close to make room for meta.ini. A
 * capture without it still works (it only risks an [end]-less meta.ini on
 * a full disk), so a failure is a warning.
 */
static void reserve_space(struct sbrig_capture *cap)
{
	int fd, err;

	fd = openat(cap->dirfd, CAP_RESERVE_NAME,
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		sbrig_warn("%s/%s: %s", cap->dir, CAP_RESERVE_NAME,
			   strerror(errno));
		return;
	}
	err = posix_fallocate(fd, 0, CAP_RESERVE_SIZE);
	close(fd);
	if (err) {
		sbrig_warn("%s/%s: %s", cap->dir, CAP_RESERVE_NAME,
			   strerror(err));
		unlinkat(cap->dirfd, CAP_RESERVE_NAME, 0);
	}
}

static void syncer_stop(struct sbrig_capture *cap);

static void cap_free(struct sbrig_capture *cap)
{
	unsigned int i;

	syncer_stop(cap);
	for (i = 0; i < F_NR; i++) {
		if (cap->files[i].fd >= 0)
			close(cap->files[i].fd);
		free(cap->files[i].buf);
	}
	for (i = 0; i < cap->ntargets; i++)
		free(cap->targets[i]);
	if (cap->dirfd >= 0) {
		unlinkat(cap->dirfd, CAP_RESERVE_NAME, 0);
		close(cap->dirfd);
	}
	free(cap->meta);
	free(cap);
}

/* Opens data file @id and writes its header (text line or binary). */
static int open_file(struct sbrig_capture *cap, enum cap_file_id id)
{
	struct cap_file *f = &cap->files[id];

	f->buf = malloc(CAP_BUF_SIZE);
	if (!f->buf)
		return sbrig_set_error(-ENOMEM, "%s: out of memory", cap->dir);
	f->fd = openat(cap->dirfd, f->name,
		       O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return sbrig_set_error(-errno, "%s/%s: %s", cap->dir, f->name,
				       strerror(errno));
	if (f->binary) {
		capbin_header((unsigned char *)f->buf);
		f->len = CAPBIN_HEADER_SIZE;
	} else {
		f->len = (size_t)snprintf(f->buf, CAP_BUF_SIZE, "%s\n",
					  cap_files[id].header);
	}
	return flush_file(cap, id);
}

struct sbrig_capture *sbrig_capture_new(const char *dir,
					const struct sbrig_provenance *prov)
{
	return sbrig_capture_new_opts(dir, prov, NULL);
}

struct sbrig_capture *
sbrig_capture_new_opts(const char *dir, const struct sbrig_provenance *prov,
		       const struct sbrig_capture_opts *opts)
{
	unsigned int version = opts && opts->version ? opts->version :
			       SBRIG_CAPTURE_VERSION;
	struct sbrig_capture *cap;
	unsigned int i;
	int ret;

	if (version < SBRIG_CAPTURE_VERSION_MIN ||
	    version > SBRIG_CAPTURE_VERSION_MAX) {
		ret = sbrig_set_error(-EINVAL, "%s: format version %u: the "
				      "writer writes versions %d to %d", dir,
				      version, SBRIG_CAPTURE_VERSION_MIN,
				      SBRIG_CAPTURE_VERSION_MAX);
		goto fail;
	}
	cap = calloc(1, sizeof(*cap));
	if (!cap) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", dir);
		goto fail;
	}
	cap->version = version;
	cap->dirfd = -1;
	for (i = 0; i < F_NR; i++) {
		cap->files[i].fd = -1;
		cap->files[i].name = cap_files[i].name;
	}
	if (version >= 2) {
		cap->files[F_SAMPLES].name = CAPBIN_NAME;
		cap->files[F_SAMPLES].binary = true;
	}
	if (strlen(dir) >= sizeof(cap->dir)) {
		ret = sbrig_set_error(-ENAMETOOLONG, "%s: path too long", dir);
		goto free_cap;
	}
	snprintf(cap->dir, sizeof(cap->dir), "%s", dir);
	ret = make_dir(dir);
	if (ret)
		goto free_cap;
	cap->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cap->dirfd < 0) {
		ret = sbrig_set_error(-errno, "%s: %s", dir, strerror(errno));
		goto free_cap;
	}
	for (i = 0; i < F_NR; i++) {
		ret = open_file(cap, i);
		if (ret)
			goto free_cap;
	}
	reserve_space(cap);
	ret = meta_begin(cap, prov);
	if (ret) {
		ret = sbrig_set_error(ret, "%s: out of memory", dir);
		goto free_cap;
	}
	ret = write_meta(cap, NULL);	/* also makes the entries durable */
	if (ret)
		goto free_cap;
	cap->last_sync_ns = sbrig_now_ns();
	cap->last_durable_ns = cap->last_sync_ns;
	return cap;

free_cap:
	cap_free(cap);
fail:
	errno = -ret;
	return NULL;
}

int sbrig_capture_set_target(struct sbrig_capture *cap, const char *boot_id,
			     const char *kernel, const char *module,
			     const char *agent)
{
	const char *f[4] = { boot_id, kernel, module, agent };
	size_t len = 4, i;
	char *id, *p;
	int ret = cap_check(cap);

	if (ret)
		return ret;
	for (i = 0; i < 4; i++)
		len += 4 * strlen(f[i]);
	id = malloc(len);
	if (!id)
		return cap_fail(cap, -ENOMEM, "%s/meta.ini: out of memory",
				cap->dir);
	for (i = 0, p = id; i < 4; i++) {
		p += escape(p, f[i]);
		*p++ = i < 3 ? '\t' : '\0';
	}
	for (i = 0; i < cap->ntargets; i++)
		if (!strcmp(cap->targets[i], id)) {
			free(id);
			return 0;	/* listed already */
		}
	if (cap->ntargets == SBRIG_CAPTURE_MAX_TARGETS) {
		free(id);
		cap->targets_dropped++;
		return 0;
	}
	cap->targets[cap->ntargets++] = id;
	ret = meta_add(cap, "\n[target]\n");
	ret = ret ?: meta_kv(cap, "boot_id", boot_id);
	ret = ret ?: meta_kv(cap, "kernel", kernel);
	ret = ret ?: meta_kv(cap, "module", module);
	ret = ret ?: meta_kv(cap, "agent", agent);
	ret = ret ?: meta_add(cap, "seen_monotonic_ns = %" PRId64 "\n",
			      sbrig_now_ns());
	if (ret)
		return cap_fail(cap, ret, "%s/meta.ini: out of memory", cap->dir);
	return write_meta_later(cap);
}

int sbrig_capture_set_sensor_clock(struct sbrig_capture *cap, bool remote,
				   bool drift_known, int64_t drift_ppb,
				   int64_t uncert_ns)
{
	int ret = cap_check(cap);

	if (ret)
		return ret;
	snprintf(cap->sensor, sizeof(cap->sensor),
		 "\n[sensor]\nclock = %s\nclock_drift_known = %d\n"
		 "clock_drift_ppb = %" PRId64 "\nclock_uncert_ns = %" PRId64 "\n",
		 remote ? "remote" : "local", drift_known ? 1 : 0,
		 drift_known ? drift_ppb : 0, uncert_ns);
	return 0;
}

int sbrig_capture_set_sensor_tail_lost(struct sbrig_capture *cap,
					int64_t stop_ns)
{
	int ret = cap_check(cap);

	if (ret)
		return ret;
	cap->tail_lost = true;
	cap->tail_stop_ns = stop_ns;
	return 0;
}

/*
 * Writes v in decimal at p (no NUL) and returns the end: the samples file
 * takes thousands of rows a second, and printf was most of its cost.
 */
static char *put_i64(char *p, int64_t v)
{
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	char tmp[20];
	int n = 0;

	if (v < 0)
		*p++ = '-';
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/*
 * Version 2: records are encoded straight into the buffer, as many at a
 * time as fit; the buffer is written when it is full.
 */
static int add_sample_records(struct sbrig_capture *cap,
			      const struct sbrig_sample *s, size_t n)
{
	struct cap_file *f = &cap->files[F_SAMPLES];
	size_t room;
	int ret;

	while (n) {
		room = (CAP_BUF_SIZE - f->len) / CAPBIN_RECORD_SIZE;
		if (!room) {
			ret = flush_file(cap, F_SAMPLES);
			if (ret)
				return ret;
			continue;
		}
		if (room > n)
			room = n;
		capbin_encode((unsigned char *)f->buf + f->len, s, room);
		f->len += room * CAPBIN_RECORD_SIZE;
		f->pending += room;
		s += room;
		n -= room;
	}
	return 0;
}

int sbrig_capture_add_samples(struct sbrig_capture *cap,
			      const struct sbrig_sample *s, size_t n)
{
	struct cap_file *f = &cap->files[F_SAMPLES];
	size_t i;
	char *p;
	int ret = cap_check(cap);

	if (ret)
		return ret;
	if (n) {	/* in time order: the last is the latest */
		cap->last_sample_ns = s[n - 1].t_ns;
		cap->have_sample = true;
	}
	if (f->binary)
		return add_sample_records(cap, s, n);
	for (i = 0; i < n; i++) {
		ret = row_room(cap, F_SAMPLES);	/* 5 x 20 digits fit a row */
		if (ret)
			return ret;
		p = f->buf + f->len;
		p = put_i64(p, s[i].t_ns);
		*p++ = '\t';
		p = put_i64(p, s[i].current_uA);
		*p++ = '\t';
		p = put_i64(p, s[i].bus_uV);
		*p++ = '\t';
		p = put_i64(p, s[i].shunt_nV);
		*p++ = '\t';
		p = put_i64(p, s[i].power_uW);
		*p++ = '\n';
		f->len = (size_t)(p - f->buf);
		f->pending++;
	}
	return 0;
}

int sbrig_capture_add_gap(struct sbrig_capture *cap,
			  const struct sbrig_gap *gap)
{
	return add_row(cap, F_GAPS, "%" PRId64 "\t%" PRId64 "\t%" PRIu64,
		       gap->t_ns, gap->next_t_ns, gap->missing);
}

int sbrig_capture_add_edge(struct sbrig_capture *cap,
			   const struct sbrig_edge *edge)
{
	char line[4 * sizeof(edge->line)];
	char l[sizeof(edge->line) + 1];

	snprintf(l, sizeof(l), "%.*s", (int)sizeof(edge->line) - 1, edge->line);
	return add_row(cap, F_EDGES, "%" PRId64 "\t%s\t%s\t%" PRIu64,
		       edge->t_ns, ESC(line, l),
		       edge->rising ? "rising" : "falling", edge->seqno);
}

int sbrig_capture_add_stimulus(struct sbrig_capture *cap,
			       const struct sbrig_stimulus *st)
{
	char what[4 * sizeof(st->what)], arg[4 * sizeof(st->arg)];
	char w[sizeof(st->what) + 1], a[sizeof(st->arg) + 1];

	snprintf(w, sizeof(w), "%.*s", (int)sizeof(st->what) - 1, st->what);
	snprintf(a, sizeof(a), "%.*s", (int)sizeof(st->arg) - 1, st->arg);
	return add_row(cap, F_STIMULI, "%" PRId64 "\t%s\t%s", st->t_ns,
		       ESC(what, w), ESC(arg, a));
}

int sbrig_capture_add_event(struct sbrig_capture *cap,
			    const struct sbrig_event *ev)
{
	char boot[4 * sizeof(ev->boot_id)], type[4 * sizeof(ev->type)];
	char arg[4 * sizeof(ev->arg)];
	char b[sizeof(ev->boot_id) + 1], t[sizeof(ev->type) + 1];
	char a[sizeof(ev->arg) + 1];

	snprintf(b, sizeof(b), "%.*s", (int)sizeof(ev->boot_id) - 1, ev->boot_id);
	snprintf(t, sizeof(t), "%.*s", (int)sizeof(ev->type) - 1, ev->type);
	snprintf(a, sizeof(a), "%.*s", (int)sizeof(ev->arg) - 1, ev->arg);
	return add_row(cap, F_EVENTS, "%" PRId64 "\t%" PRId64 "\t%" PRId64
		       "\t%s\t%" PRIu64 "\t%s\t%s\t%d\t%" PRIu64, ev->host_t_ns,
		       ev->uncert_ns, ev->target_t_ns, ESC(boot, b), ev->seq,
		       ESC(type, t), ESC(arg, a), ev->cut ? 1 : 0, ev->obj);
}

int sbrig_capture_add_stats(struct sbrig_capture *cap, int64_t t_ns,
			    const struct sbrig_blocker_stats *row)
{
	char name[4 * sizeof(row->name)], nm[sizeof(row->name) + 1];

	snprintf(nm, sizeof(nm), "%.*s", (int)sizeof(row->name) - 1, row->name);
	return add_row(cap, F_STATS, "%" PRId64 "\t%s\t%" PRIu64 "\t%" PRIu64
		       "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64
		       "\t%" PRId64, t_ns, ESC(name, nm), row->count,
		       row->wake_count, row->active_since_ns,
		       row->total_time_ns, row->sleep_time_ns,
		       row->max_time_ns, row->last_change_ns);
}

int sbrig_capture_add_clock(struct sbrig_capture *cap, int64_t host_send_ns,
			    int64_t host_recv_ns, int64_t target_ns,
			    int retained)
{
	return add_row(cap, F_CLOCK, "%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%d",
		       host_send_ns, host_recv_ns, target_ns, retained ? 1 : 0);
}

static int sync_all(struct sbrig_capture *cap);

static void *syncer_main(void *arg)
{
	struct sbrig_capture *cap = arg;
	struct cap_syncer *sy = &cap->syncer;
	bool want[F_NR];
	unsigned int i;

	pthread_mutex_lock(&sy->lock);
	for (;;) {
		char *meta = sy->meta;
		size_t meta_len = sy->meta_len;
		bool any = meta != NULL;

		sy->meta = NULL;
		for (i = 0; i < F_NR; i++) {
			want[i] = sy->want[i];
			sy->want[i] = false;
			any |= want[i];
		}
		if (!any) {
			if (sy->quit)
				break;
			pthread_cond_wait(&sy->cond, &sy->lock);
			continue;
		}
		pthread_mutex_unlock(&sy->lock);
		if (meta) {
			int err = write_meta_text(cap->dirfd, meta, meta_len,
						  NULL);

			free(meta);
			pthread_mutex_lock(&sy->lock);
			if (err && !sy->err) {
				sy->err = err;
				snprintf(sy->msg, sizeof(sy->msg),
					 "%s/meta.ini: %s", cap->dir,
					 strerror(-err));
			}
			pthread_mutex_unlock(&sy->lock);
		}
		for (i = 0; i < F_NR; i++) {
			int err;

			if (!want[i] || !fdatasync(cap->files[i].fd))
				continue;
			err = errno;
			pthread_mutex_lock(&sy->lock);
			if (!sy->err) {
				sy->err = -err;
				snprintf(sy->msg, sizeof(sy->msg),
					 "%s/%s: fdatasync: %s", cap->dir,
					 cap->files[i].name, strerror(err));
			}
			pthread_mutex_unlock(&sy->lock);
		}
		pthread_mutex_lock(&sy->lock);
	}
	pthread_mutex_unlock(&sy->lock);
	return NULL;
}

/* Start the syncer; Return: true if it runs (else sync in place). */
static bool syncer_start(struct sbrig_capture *cap)
{
	struct cap_syncer *sy = &cap->syncer;

	if (sy->running)
		return true;
	if (pthread_mutex_init(&sy->lock, NULL))
		return false;
	if (pthread_cond_init(&sy->cond, NULL)) {
		pthread_mutex_destroy(&sy->lock);
		return false;
	}
	if (pthread_create(&sy->thread, NULL, syncer_main, cap)) {
		pthread_cond_destroy(&sy->cond);
		pthread_mutex_destroy(&sy->lock);
		return false;
	}
	sy->running = true;
	return true;
}

/* Wait for the syncer's work and end it; its error fails the capture. */
static void syncer_stop(struct sbrig_capture *cap)
{
	struct cap_syncer *sy = &cap->syncer;

	if (!sy->running)
		return;
	pthread_mutex_lock(&sy->lock);
	sy->quit = true;
	pthread_cond_signal(&sy->cond);
	pthread_mutex_unlock(&sy->lock);
	pthread_join(sy->thread, NULL);
	sy->running = false;
	free(sy->meta);		/* superseded by the caller's own write */
	sy->meta = NULL;
	pthread_cond_destroy(&sy->cond);
	pthread_mutex_destroy(&sy->lock);
	if (sy->err)
		cap_fail(cap, sy->err, "%s", sy->msg);
}

/*
 * Hand the files written since their last sync to the syncer (or sync
 * them here if it cannot run); its first error fails the capture.
 */
static int sync_later(struct sbrig_capture *cap)
{
	struct cap_syncer *sy = &cap->syncer;
	unsigned int i;

	if (!syncer_start(cap))
		return sync_all(cap);
	pthread_mutex_lock(&sy->lock);
	for (i = 0; i < F_NR; i++) {
		if (cap->files[i].dirty)
			sy->want[i] = true;
		cap->files[i].dirty = false;
	}
	return syncer_wake_unlock(cap);
}

/* Writes every buffer and fdatasyncs what was written. */
static int sync_all(struct sbrig_capture *cap)
{
	unsigned int i;
	int ret;

	for (i = 0; i < F_NR; i++) {
		struct cap_file *f = &cap->files[i];

		if (f->len) {
			ret = flush_file(cap, i);
			if (ret)
				return ret;
		}
		if (f->dirty) {
			if (fdatasync(f->fd))
				return cap_fail(cap, -errno, "%s/%s: fdatasync: %s",
						cap->dir, f->name, strerror(errno));
			f->dirty = false;
		}
	}
	return 0;
}

int sbrig_capture_sync(struct sbrig_capture *cap, int64_t now_ns)
{
	int ret = cap_check(cap);

	unsigned int i;

	if (ret || now_ns - cap->last_sync_ns < CAP_FLUSH_NS)
		return ret;
	cap->last_sync_ns = now_ns;
	for (i = 0; i < F_NR; i++) {
		if (cap->files[i].len) {
			ret = flush_file(cap, i);
			if (ret)
				return ret;
		}
	}
	if (now_ns - cap->last_durable_ns < CAP_DURABLE_NS)
		return 0;
	cap->last_durable_ns = now_ns;
	return sync_later(cap);
}

/*
 * [end]'s keys of a lost tail (capture-format.md): from the last sample
 * written (none: the capture's creation) to the sensor's stop, never
 * backwards (a remote clock's mapping may put the last sample past it).
 */
static size_t tail_lost_keys(const struct sbrig_capture *cap, char *out,
			     size_t size)
{
	int64_t from = cap->have_sample ? cap->last_sample_ns : cap->created_ns;
	int64_t to = cap->tail_stop_ns > from ? cap->tail_stop_ns : from;
	int n = snprintf(out, size, "sensor_tail_lost = 1\n"
			 "sensor_tail_lost_from_ns = %" PRId64 "\n"
			 "sensor_tail_lost_to_ns = %" PRId64 "\n", from, to);

	return n < 0 ? 0 : (size_t)n;
}

int sbrig_capture_close(struct sbrig_capture *cap, const char *status)
{
	unsigned int i;
	char *tail, *esc;
	size_t off = 0, size = 4096;
	int ret;

	if (!cap)
		return 0;
	syncer_stop(cap);
	if (!cap->err)
		sync_all(cap);
	else	/* a failed file stays as it is; save the others */
		for (i = 0; i < F_NR; i++)
			if (cap->files[i].len && !flush_file(cap, i))
				fdatasync(cap->files[i].fd);

	tail = malloc(size);
	esc = malloc(4 * (strlen(status) + sizeof(cap->errmsg)) + 1);
	if (tail && esc) {
		off += snprintf(tail + off, size - off, "%s", cap->sensor);
		off += snprintf(tail + off, size - off,
				"\n[end]\nstatus = %s\nclosed_monotonic_ns = %" PRId64
				"\n", ESC(esc, status), sbrig_now_ns());
		if (cap->err)
			off += snprintf(tail + off, size - off,
					"error = %s\nerrno = %d\n",
					ESC(esc, cap->errmsg), -cap->err);
		if (cap->tail_lost && off < size)
			off += tail_lost_keys(cap, tail + off, size - off);
		if (cap->targets_dropped && off < size)
			off += snprintf(tail + off, size - off,
					"targets_not_listed = %" PRIu64 "\n",
					cap->targets_dropped);
		for (i = 0; i < F_NR && off < size; i++)
			off += snprintf(tail + off, size - off, "%s = %" PRIu64 "\n",
					cap_files[i].counter, cap->files[i].rows);
		/* a failed capture still gets its [end]: the reserve makes
		 * room for it on a full disk */
		unlinkat(cap->dirfd, CAP_RESERVE_NAME, 0);
		ret = write_meta_file(cap, tail);
		if (ret)
			cap_fail(cap, ret, "%s/meta.ini: %s", cap->dir,
				 strerror(-ret));
	} else {
		cap_fail(cap, -ENOMEM, "%s/meta.ini: out of memory", cap->dir);
	}
	free(esc);
	free(tail);
	ret = cap->err;
	if (ret)
		sbrig_set_error(ret, "%s", cap->errmsg);
	cap_free(cap);
	return ret;
}

const char *sbrig_capture_dir(const struct sbrig_capture *cap)
{
	return cap->dir;
}

unsigned int sbrig_capture_version(const struct sbrig_capture *cap)
{
	return cap->version;
}
