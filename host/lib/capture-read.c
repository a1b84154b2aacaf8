// SPDX-License-Identifier: GPL-2.0
/*
 * capture-read.c - the offline reader of capture directories, format
 * versions 1 and 2 (host/doc/capture-format.md; sbrig/capture-read.h).
 *
 * meta.ini is small and rewritten atomically by the writer: it is read
 * whole and parsed with one table of known keys (unknown sections and keys
 * are skipped: the format lets writers add them). Each data file has its
 * own cursor: a 64 KiB buffer refilled with read(), lines cut at '\n' in
 * place, a line split into its tab-separated columns and each column
 * parsed strictly (decimal integers in range, text unescaped in one pass:
 * \\ \t \n \r \xHH). The bytes after the last newline are a write the
 * writer did not finish: ignored and counted. A file's first error is
 * sticky, like the writer's.
 *
 * Version 2 keeps the samples in samples.bin (lib/capture-bin.h): after
 * its 32-byte header is checked, records are read in large blocks and
 * decoded from little-endian into struct sbrig_sample, nothing else per
 * record. A batch of at least CR_DIRECT_MIN samples is read() straight
 * into the caller's array and decoded in place (a record and the struct
 * have the same size), so the only copy is the kernel's; smaller requests
 * go through the file's buffer. Bytes after the last whole record are a
 * record the writer did not finish: ignored and counted, like a cut line.
 *
 * libc only (plus sbrig_set_error()): part of libsbrig-core.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <sbrig/capture-read.h>

#include "capture-bin.h"
#include "internal.h"

#define CR_BUF		65536		/* also the longest line */
#define CR_META_MAX	(1 << 20)
#define CR_MAX_COLS	9
/* samples.bin: batches this large are read into the caller's array ... */
#define CR_DIRECT_MIN	(CR_BUF / CAPBIN_RECORD_SIZE)
/* ... in reads of at most this many bytes (decoded while in the cache) */
#define CR_DIRECT_CHUNK	(256 * 1024)

/* In-place decoding needs a record and a sample to be the same size. */
_Static_assert(sizeof(struct sbrig_sample) == CAPBIN_RECORD_SIZE,
	       "struct sbrig_sample is not the size of a samples.bin record");
_Static_assert(CR_BUF % CAPBIN_RECORD_SIZE == 0 &&
	       CR_DIRECT_CHUNK % CAPBIN_RECORD_SIZE == 0,
	       "buffers hold whole records");

static const struct {
	const char *name;
	const char *counter;	/* its key in meta.ini [end] */
	const char *header;
	unsigned int ncols;
	/* the header with columns appended since (capture-format.md) */
	const char *header_ext;
	unsigned int ncols_ext;
} cr_files[SBRIG_CAPFILE_NR] = {
	[SBRIG_CAPFILE_SAMPLES] = { "samples.tsv", "samples",
		"t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW", 5, NULL, 0 },
	[SBRIG_CAPFILE_GAPS] = { "gaps.tsv", "gaps",
		"t_ns\tnext_t_ns\tmissing", 3, NULL, 0 },
	[SBRIG_CAPFILE_EDGES] = { "edges.tsv", "edges",
		"t_ns\tline\tedge\tseqno", 4, NULL, 0 },
	[SBRIG_CAPFILE_STIMULI] = { "stimuli.tsv", "stimuli",
		"t_ns\twhat\targ", 3, NULL, 0 },
	[SBRIG_CAPFILE_EVENTS] = { "events.tsv", "events",
		"host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut", 8,
		"host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut"
		"\tobj", 9 },
	[SBRIG_CAPFILE_STATS] = { "stats.tsv", "stats",
		"t_ns\tname\tcount\twake_count\tactive_since_ns\ttotal_time_ns\t"
		"sleep_time_ns\tmax_time_ns\tlast_change_ns", 9, NULL, 0 },
	[SBRIG_CAPFILE_CLOCK] = { "clock.tsv", "clock",
		"host_send_ns\thost_recv_ns\ttarget_ns\tretained", 4, NULL, 0 },
};

/**
 * struct cr_file - the cursor of one data file
 * @name: its name in the directory (cr_files[], or samples.bin)
 * @binary: samples.bin: fixed-size records after a binary header
 * @fd: open file (-1: not opened yet)
 * @buf: read buffer (CR_BUF bytes)
 * @start: first byte not consumed
 * @end: end of the bytes read
 * @at_eof: read() returned 0
 * @header_ok: the header line was read and checked
 * @ncols: the columns of its rows: its header's (the base one, or the
 *	one with the columns appended since)
 * @info: what the caller sees
 * @err: first error (sticky), 0 = none
 * @errmsg: its message
 * @seek_known: samples.bin: @seek_t_first and @seek_t_last are the times
 *	of the first and the last of @seek_n whole records (the ends of a
 *	seek's search, read again when the file has grown)
 */
struct cr_file {
	const char *name;
	bool binary;
	int fd;
	char *buf;
	size_t start, end;
	bool at_eof;
	bool header_ok;
	unsigned int ncols;
	struct sbrig_capfile_info info;
	int err;
	char errmsg[512];
	bool seek_known;
	uint64_t seek_n;
	int64_t seek_t_first, seek_t_last;
};

struct sbrig_capread {
	char dir[PATH_MAX];
	struct sbrig_capture_meta meta;
	struct cr_file files[SBRIG_CAPFILE_NR];
};

/* A field of a line: not NUL-terminated. */
struct field {
	const char *s;
	size_t n;
};

/* ---- values -------------------------------------------------------------- */

static bool parse_u64(struct field f, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!f.n || f.n > 20)
		return false;
	for (i = 0; i < f.n; i++) {
		unsigned int d = (unsigned char)f.s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_i64(struct field f, int64_t *out)
{
	bool neg = f.n && f.s[0] == '-';
	uint64_t v;

	if (neg) {
		f.s++;
		f.n--;
	}
	if (!parse_u64(f, &v) || v > (uint64_t)INT64_MAX + neg)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Unescape @f into @dst (@size bytes, NUL-terminated). On failure @why
 * (static text, or @whybuf) says why.
 */
static bool unescape(struct field f, char *dst, size_t size, const char **why,
		     char *whybuf, size_t whylen)
{
	size_t i, o = 0;

	for (i = 0; i < f.n; i++) {
		unsigned char c = (unsigned char)f.s[i];

		if (c == '\\') {
			char e = i + 1 < f.n ? f.s[i + 1] : '\0';

			i++;
			switch (e) {
			case '\\': c = '\\'; break;
			case 't': c = '\t'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 'x': {
				int hi = i + 2 < f.n ? hexval(f.s[i + 1]) : -1;
				int lo = hi >= 0 ? hexval(f.s[i + 2]) : -1;

				if (lo < 0 || (hi == 0 && lo == 0)) {
					snprintf(whybuf, whylen,
						 "bad \\x escape at byte %zu",
						 i);
					*why = whybuf;
					return false;
				}
				c = (unsigned char)(hi << 4 | lo);
				i += 2;
				break;
			}
			default:
				snprintf(whybuf, whylen, "bad escape at byte %zu",
					 i);
				*why = whybuf;
				return false;
			}
		} else if (c < ' ' || c == 0x7f) {
			snprintf(whybuf, whylen,
				 "control byte 0x%02x not escaped at byte %zu",
				 c, i + 1);
			*why = whybuf;
			return false;
		}
		if (o + 1 >= size) {
			snprintf(whybuf, whylen, "longer than %zu bytes",
				 size - 1);
			*why = whybuf;
			return false;
		}
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return true;
}

/* ---- data files ---------------------------------------------------------- */

static int SBRIG_PRINTF(3, 4)
file_fail(struct sbrig_capread *cr, enum sbrig_capfile id, const char *fmt,
	  ...)
{
	struct cr_file *f = &cr->files[id];
	char msg[400], full[sizeof(f->errmsg)];
	va_list ap;

	if (!f->err) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		snprintf(full, sizeof(full), "%s/%s:%" PRIu64 ": %s", cr->dir,
			 f->name, f->info.line, msg);
		memcpy(f->errmsg, full, sizeof(full));
		f->err = -EINVAL;
	}
	return sbrig_set_error(f->err, "%s", f->errmsg);
}

static int file_open(struct sbrig_capread *cr, enum sbrig_capfile id)
{
	struct cr_file *f = &cr->files[id];
	char path[PATH_MAX + 32];
	struct stat st;
	int err;

	snprintf(path, sizeof(path), "%s/%s", cr->dir, f->name);
	err = 0;
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f->fd < 0)
		err = errno;
	else if (fstat(f->fd, &st))
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	if (err) {
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		f->err = -err;
		snprintf(f->errmsg, sizeof(f->errmsg), "%s: %s", path,
			 err == EINVAL ? "not a regular file" : strerror(err));
		return sbrig_set_error(f->err, "%s", f->errmsg);
	}
	if (!f->buf) {
		f->buf = malloc(CR_BUF);
		if (!f->buf) {
			f->err = -ENOMEM;
			snprintf(f->errmsg, sizeof(f->errmsg), "%s: out of memory",
				 path);
			return sbrig_set_error(f->err, "%s", f->errmsg);
		}
	}
	f->start = f->end = 0;
	f->at_eof = false;
	return 0;
}

/*
 * The next complete line of file @id (without its '\n'), in place in the
 * buffer: valid until the next call. Return 1, 0 at the end (a last line
 * without its newline is dropped and counted), -errno.
 */
static int next_line(struct sbrig_capread *cr, enum sbrig_capfile id,
		     struct field *line)
{
	struct cr_file *f = &cr->files[id];
	char *nl;
	ssize_t n;

	for (;;) {
		nl = memchr(f->buf + f->start, '\n', f->end - f->start);
		if (nl) {
			line->s = f->buf + f->start;
			line->n = (size_t)(nl - line->s);
			f->start += line->n + 1;
			f->info.line++;
			f->info.offset += line->n + 1;
			return 1;
		}
		if (f->at_eof) {
			if (f->start < f->end) {
				f->info.cut_lines = 1;	/* an unfinished write */
				f->info.cut_bytes = f->end - f->start;
				f->start = f->end;
			}
			f->info.eof = true;
			return 0;
		}
		if (f->start) {
			memmove(f->buf, f->buf + f->start, f->end - f->start);
			f->end -= f->start;
			f->start = 0;
		}
		if (f->end == CR_BUF) {
			f->info.line++;
			return file_fail(cr, id, "line longer than %d bytes",
					 CR_BUF - 1);
		}
		n = read(f->fd, f->buf + f->end, CR_BUF - f->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			file_fail(cr, id, "read: %s", strerror(err));
			f->err = -err;
			return sbrig_set_error(f->err, "%s", f->errmsg);
		}
		if (n == 0)
			f->at_eof = true;
		f->end += (size_t)n;
	}
}

/* Column names of file @id, for messages: the header's words. */
static void column_name(enum sbrig_capfile id, unsigned int col, char *out,
			size_t size)
{
	const char *h = cr_files[id].header_ext ? cr_files[id].header_ext :
			cr_files[id].header, *tab;
	unsigned int i;

	for (i = 0; i < col && (tab = strchr(h, '\t')); i++)
		h = tab + 1;
	tab = strchr(h, '\t');
	snprintf(out, size, "%.*s", (int)(tab ? (size_t)(tab - h) : strlen(h)),
		 h);
}

static int SBRIG_PRINTF(4, 5)
col_fail(struct sbrig_capread *cr, enum sbrig_capfile id, unsigned int col,
	 const char *fmt, ...)
{
	char name[32], msg[300];
	va_list ap;

	column_name(id, col, name, sizeof(name));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return file_fail(cr, id, "column %u (%s): %s", col + 1, name, msg);
}

static bool line_is(struct field line, const char *text)
{
	return line.n == strlen(text) && !memcmp(line.s, text, line.n);
}

/*
 * The next row of file @id split into its columns (checked against the
 * header first). Return 1, 0 at the end, -errno.
 */
static int next_row(struct sbrig_capread *cr, enum sbrig_capfile id,
		    struct field *cols)
{
	struct cr_file *f = &cr->files[id];
	struct field line;
	unsigned int n = 0;
	size_t i, start = 0;
	int ret;

	if (f->err)
		return sbrig_set_error(f->err, "%s", f->errmsg);
	if (f->fd < 0) {
		ret = file_open(cr, id);
		if (ret)
			return ret;
	}
	if (!f->header_ok) {
		ret = next_line(cr, id, &line);
		if (ret < 0)
			return ret;
		if (!ret) {
			f->info.line = 1;
			return file_fail(cr, id, "no header line (expected '%s')",
					 cr_files[id].header);
		}
		if (line_is(line, cr_files[id].header)) {
			f->ncols = cr_files[id].ncols;
		} else if (cr_files[id].header_ext &&
			   line_is(line, cr_files[id].header_ext)) {
			f->ncols = cr_files[id].ncols_ext;
		} else {
			return file_fail(cr, id,
					 "header: expected '%s' (format version 1)",
					 cr_files[id].header_ext ?
					 cr_files[id].header_ext :
					 cr_files[id].header);
		}
		f->header_ok = true;
	}
	ret = next_line(cr, id, &line);
	if (ret <= 0)
		return ret;
	if (memchr(line.s, '\0', line.n))
		return file_fail(cr, id, "NUL byte");
	for (i = 0; i <= line.n; i++) {
		if (i < line.n && line.s[i] != '\t')
			continue;
		if (n == f->ncols)
			return file_fail(cr, id, "more than %u columns",
					 f->ncols);
		cols[n].s = line.s + start;
		cols[n].n = i - start;
		n++;
		start = i + 1;
	}
	if (n != f->ncols)
		return file_fail(cr, id, "%u columns, expected %u", n,
				 f->ncols);
	f->info.rows++;
	return 1;
}

/* Typed columns: each returns 0 or the -errno of col_fail(). */
static int col_i64(struct sbrig_capread *cr, enum sbrig_capfile id,
		   const struct field *c, unsigned int col, int64_t *v)
{
	if (parse_i64(c[col], v))
		return 0;
	return col_fail(cr, id, col, "'%.*s': not a 64-bit integer",
			(int)(c[col].n > 32 ? 32 : c[col].n), c[col].s);
}

/*
 * An event's uncertainty: a half-width (>= 0), or -1 for an event the
 * daemon could not map online (link.c); nothing else.
 */
static int col_uncert(struct sbrig_capread *cr, enum sbrig_capfile id,
		      const struct field *c, unsigned int col, int64_t *v)
{
	if (parse_i64(c[col], v) && *v >= -1)
		return 0;
	return col_fail(cr, id, col, "'%.*s': not an uncertainty (>= 0, or "
			"-1: not mapped online)",
			(int)(c[col].n > 32 ? 32 : c[col].n), c[col].s);
}

static int col_u64(struct sbrig_capread *cr, enum sbrig_capfile id,
		   const struct field *c, unsigned int col, uint64_t *v)
{
	if (parse_u64(c[col], v))
		return 0;
	return col_fail(cr, id, col, "'%.*s': not an unsigned 64-bit integer",
			(int)(c[col].n > 32 ? 32 : c[col].n), c[col].s);
}

static int col_i32(struct sbrig_capread *cr, enum sbrig_capfile id,
		   const struct field *c, unsigned int col, int32_t *v)
{
	int64_t w;

	if (parse_i64(c[col], &w) && w >= INT32_MIN && w <= INT32_MAX) {
		*v = (int32_t)w;
		return 0;
	}
	return col_fail(cr, id, col, "'%.*s': not a 32-bit integer",
			(int)(c[col].n > 32 ? 32 : c[col].n), c[col].s);
}

static int col_text(struct sbrig_capread *cr, enum sbrig_capfile id,
		    const struct field *c, unsigned int col, char *dst,
		    size_t size)
{
	const char *why = NULL;
	char whybuf[64];

	if (unescape(c[col], dst, size, &why, whybuf, sizeof(whybuf)))
		return 0;
	return col_fail(cr, id, col, "%s", why);
}

/* A column that is one of two words: 1 for @yes, 0 for @no. */
static int col_word(struct sbrig_capread *cr, enum sbrig_capfile id,
		    const struct field *c, unsigned int col, const char *yes,
		    const char *no, bool *v)
{
	if (c[col].n == strlen(yes) && !memcmp(c[col].s, yes, c[col].n)) {
		*v = true;
		return 0;
	}
	if (c[col].n == strlen(no) && !memcmp(c[col].s, no, c[col].n)) {
		*v = false;
		return 0;
	}
	return col_fail(cr, id, col, "'%.*s': expected %s or %s",
			(int)(c[col].n > 32 ? 32 : c[col].n), c[col].s, yes, no);
}

/* samples.tsv (version 1): one row. */
static int tsv_next_sample(struct sbrig_capread *cr, struct sbrig_sample *s)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_SAMPLES;
	struct field c[CR_MAX_COLS];
	struct sbrig_sample r;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	memset(&r, 0, sizeof(r));	/* padding too: rows compare whole */
	if (col_i64(cr, id, c, 0, &r.t_ns) ||
	    col_i32(cr, id, c, 1, &r.current_uA) ||
	    col_i32(cr, id, c, 2, &r.bus_uV) ||
	    col_i32(cr, id, c, 3, &r.shunt_nV) ||
	    col_i64(cr, id, c, 4, &r.power_uW))
		return cr->files[id].err;
	*s = r;
	return 1;
}

/* ---- samples.bin (version 2) --------------------------------------------- */

static int SBRIG_PRINTF(4, 5)
bin_fail(struct sbrig_capread *cr, int err, uint64_t offset, const char *fmt,
	 ...)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	char msg[400];
	va_list ap;

	if (!f->err) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		snprintf(f->errmsg, sizeof(f->errmsg), "%s/%s: offset %" PRIu64
			 ": %s", cr->dir, f->name, offset, msg);
		f->err = err;
	}
	return sbrig_set_error(f->err, "%s", f->errmsg);
}

/*
 * read() into @dst (@len bytes); 0 at the end of the file. On an error
 * the file is failed (at @f's offset). Return bytes read or -errno.
 */
static ssize_t bin_read(struct sbrig_capread *cr, void *dst, size_t len)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	ssize_t n;

	do
		n = read(f->fd, dst, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return bin_fail(cr, -errno, f->info.offset, "read: %s",
				strerror(errno));
	if (!n)
		f->at_eof = true;
	return n;
}

/* Refills the file's buffer after the bytes not consumed yet. */
static int bin_fill(struct sbrig_capread *cr)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	ssize_t n;

	if (f->start) {
		memmove(f->buf, f->buf + f->start, f->end - f->start);
		f->end -= f->start;
		f->start = 0;
	}
	n = bin_read(cr, f->buf + f->end, CR_BUF - f->end);
	if (n < 0)
		return (int)n;
	f->end += (size_t)n;
	return 0;
}

/* The 32-byte header: magic, record format, record size, flags. */
static int bin_header(struct sbrig_capread *cr)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	const unsigned char *h;
	char magic[CAPBIN_MAGIC_LEN + 1];
	uint32_t v;
	unsigned int i;
	int ret;

	while (f->end - f->start < CAPBIN_HEADER_SIZE && !f->at_eof) {
		ret = bin_fill(cr);
		if (ret)
			return ret;
	}
	h = (const unsigned char *)f->buf + f->start;
	if (f->end - f->start < CAPBIN_HEADER_SIZE)
		return bin_fail(cr, -EINVAL, f->end - f->start,
				"no header (%zu bytes, expected %d)",
				f->end - f->start, CAPBIN_HEADER_SIZE);
	if (memcmp(h, CAPBIN_MAGIC, CAPBIN_MAGIC_LEN)) {
		for (i = 0; i < CAPBIN_MAGIC_LEN; i++)
			magic[i] = h[i] >= ' ' && h[i] < 0x7f ? (char)h[i] : '.';
		magic[i] = '\0';
		return bin_fail(cr, -EINVAL, 0, "'%s': not a samples file "
				"(expected '%s')", magic, CAPBIN_MAGIC);
	}
	v = capbin_get32(h + CAPBIN_OFF_FORMAT);
	if (v != CAPBIN_RECORD_FORMAT)
		return bin_fail(cr, -EPROTONOSUPPORT, CAPBIN_OFF_FORMAT,
				"record format %" PRIu32 ": this reader knows "
				"format %d", v, CAPBIN_RECORD_FORMAT);
	v = capbin_get32(h + CAPBIN_OFF_RECSIZE);
	if (v != CAPBIN_RECORD_SIZE)
		return bin_fail(cr, -EINVAL, CAPBIN_OFF_RECSIZE,
				"record size %" PRIu32 ", expected %d", v,
				CAPBIN_RECORD_SIZE);
	v = capbin_get32(h + CAPBIN_OFF_FLAGS);
	if (v)
		return bin_fail(cr, -EPROTONOSUPPORT, CAPBIN_OFF_FLAGS,
				"flags 0x%" PRIx32 ": this reader knows none", v);
	f->start += CAPBIN_HEADER_SIZE;
	f->info.offset = CAPBIN_HEADER_SIZE;
	f->header_ok = true;
	return 0;
}

/*
 * Up to @max records into @out, until @max or the end of the file (see
 * the file comment for the two paths). Return the number stored, or
 * -errno if none was (an error after some records is returned by the
 * next call: the file stays failed).
 */
static ssize_t bin_samples(struct sbrig_capread *cr, struct sbrig_sample *out,
			   size_t max)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	size_t got = 0, avail, k, r;
	ssize_t n;
	int ret;

	if (f->err)
		return sbrig_set_error(f->err, "%s", f->errmsg);
	if (f->fd < 0) {
		ret = file_open(cr, SBRIG_CAPFILE_SAMPLES);
		if (ret)
			return ret;
	}
	if (!f->header_ok) {
		ret = bin_header(cr);
		if (ret)
			return ret;
	}
	if (max > SSIZE_MAX)
		max = SSIZE_MAX;
	while (got < max) {
		avail = f->end - f->start;
		if (avail >= CAPBIN_RECORD_SIZE) {
			k = avail / CAPBIN_RECORD_SIZE;
			if (k > max - got)
				k = max - got;
			capbin_decode(out + got, f->buf + f->start, k);
			f->start += k * CAPBIN_RECORD_SIZE;
			f->info.offset += k * CAPBIN_RECORD_SIZE;
			got += k;
			continue;
		}
		if (f->at_eof) {
			if (avail) {	/* a record the writer did not finish */
				f->info.cut_lines = 1;
				f->info.cut_bytes = avail;
				f->start = f->end;
			}
			f->info.eof = true;
			break;
		}
		if (!avail && max - got >= CR_DIRECT_MIN) {
			/* straight into the caller's array, decoded in place */
			k = max - got;
			if (k > CR_DIRECT_CHUNK / CAPBIN_RECORD_SIZE)
				k = CR_DIRECT_CHUNK / CAPBIN_RECORD_SIZE;
			n = bin_read(cr, out + got, k * CAPBIN_RECORD_SIZE);
			if (n < 0)
				break;
			k = (size_t)n / CAPBIN_RECORD_SIZE;
			r = (size_t)n % CAPBIN_RECORD_SIZE;
			capbin_decode(out + got, out + got, k);
			if (r) {	/* the start of a record: keep it */
				memcpy(f->buf, (const char *)(out + got + k), r);
				f->start = 0;
				f->end = r;
			}
			got += k;
			f->info.offset += k * CAPBIN_RECORD_SIZE;
			continue;
		}
		if (bin_fill(cr))
			break;
	}
	f->info.rows += got;
	if (!got && f->err)
		return sbrig_set_error(f->err, "%s", f->errmsg);
	return (ssize_t)got;
}

int sbrig_capread_next_sample(struct sbrig_capread *cr, struct sbrig_sample *s)
{
	if (cr->files[SBRIG_CAPFILE_SAMPLES].binary)
		return (int)bin_samples(cr, s, 1);
	return tsv_next_sample(cr, s);
}

ssize_t sbrig_capread_samples(struct sbrig_capread *cr,
			      struct sbrig_sample *buf, size_t max)
{
	size_t got = 0;
	int ret;

	if (cr->files[SBRIG_CAPFILE_SAMPLES].binary)
		return bin_samples(cr, buf, max);
	if (max > SSIZE_MAX)
		max = SSIZE_MAX;
	while (got < max) {
		ret = tsv_next_sample(cr, &buf[got]);
		if (ret < 0 && !got)
			return ret;
		if (ret <= 0)
			break;	/* an error after some rows: the next call */
		got++;
	}
	return (ssize_t)got;
}

/* Byte offset of record @idx (0 = the first after the header). */
static off_t bin_off(uint64_t idx)
{
	return (off_t)(CAPBIN_HEADER_SIZE + idx * CAPBIN_RECORD_SIZE);
}

/*
 * Records [@idx, @idx + @n) into @dst by pread() (the cursor does not
 * move). Return 0 or -errno (the file is failed; records that cannot be
 * read whole are -EIO: the file shrank).
 */
static int bin_pread(struct sbrig_capread *cr, void *dst, uint64_t idx,
		     size_t n)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	size_t len = n * CAPBIN_RECORD_SIZE, done = 0;
	ssize_t k;

	while (done < len) {
		k = pread(f->fd, (char *)dst + done, len - done,
			  bin_off(idx) + (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return bin_fail(cr, -errno, (uint64_t)bin_off(idx),
					"read: %s", strerror(errno));
		if (!k)
			return bin_fail(cr, -EIO, (uint64_t)bin_off(idx),
					"read: the file shrank");
		done += (size_t)k;
	}
	return 0;
}

static int64_t rec_t(const char *buf, size_t i)
{
	return (int64_t)capbin_get64((const unsigned char *)buf +
				     i * CAPBIN_RECORD_SIZE + CAPBIN_REC_T_NS);
}

/*
 * The search of sbrig_capread_seek_samples(), over the @n whole records:
 * the answer lies in [lo, hi] with t(lo - 1) < @t_ns <= t(hi). Each step
 * reads one buffer of records (CR_BUF) from a little before a guess
 * (most of it is then streamed), interpolated from
 * the times at the ends of the range (the samples come at a nearly
 * constant rate: usually the first guess holds the answer), or the
 * middle of the range after a guess that missed; the range shrinks by a
 * buffer at least, so it ends on any file. The buffer that holds the
 * answer is kept as the stream's next bytes. Return the index or -errno.
 */
static int64_t bin_search(struct sbrig_capread *cr, int64_t t_ns, uint64_t n)
{
	const uint64_t blk = CR_BUF / CAPBIN_RECORD_SIZE;
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	uint64_t lo, hi, g, b0, b1, k;
	int64_t tlo, thi;
	bool bisect = false;
	char first[CAPBIN_RECORD_SIZE];
	int ret;

	f->start = f->end = 0;
	if (!n)
		return 0;
	if (!f->seek_known || f->seek_n != n) {
		ret = bin_pread(cr, first, 0, 1);
		if (ret)
			return ret;
		f->seek_t_first = rec_t(first, 0);
		ret = bin_pread(cr, first, n - 1, 1);
		if (ret)
			return ret;
		f->seek_t_last = rec_t(first, 0);
		f->seek_n = n;
		f->seek_known = true;
	}
	if (t_ns <= f->seek_t_first)
		return 0;
	if (f->seek_t_last < t_ns)
		return (int64_t)n;
	lo = 1;
	tlo = f->seek_t_first;
	hi = n - 1;
	thi = f->seek_t_last;
	while (lo < hi) {
		double frac = ((double)t_ns - (double)tlo) /
			((double)thi - (double)tlo);

		if (bisect || !(frac >= 0 && frac <= 1))
			g = lo + (hi - lo) / 2;
		else	/* record lo - 1 has tlo, record hi thi */
			g = lo - 1 + (uint64_t)(frac * (double)(hi - lo + 1));
		g = g < lo ? lo : g > hi ? hi : g;
		b0 = g > lo + blk / 16 ? g - blk / 16 : lo;
		if (hi + 1 - b0 < blk)
			b0 = hi + 1 > lo + blk ? hi + 1 - blk : lo;
		b1 = b0 + blk < hi + 1 ? b0 + blk : hi + 1;
		ret = bin_pread(cr, f->buf, b0, (size_t)(b1 - b0));
		if (ret)
			return ret;
		if (rec_t(f->buf, 0) >= t_ns && b0 > lo) {
			hi = b0;
			thi = rec_t(f->buf, 0);
		} else if (rec_t(f->buf, b1 - b0 - 1) < t_ns) {
			lo = b1;
			tlo = rec_t(f->buf, b1 - b0 - 1);
		} else {
			/* in this buffer: the first record at or after t_ns */
			for (k = 0; k + 1 < b1 - b0 && rec_t(f->buf, k) < t_ns;)
				k++;
			f->start = (size_t)k * CAPBIN_RECORD_SIZE;
			f->end = (size_t)(b1 - b0) * CAPBIN_RECORD_SIZE;
			if (lseek(f->fd, bin_off(b1), SEEK_SET) != bin_off(b1))
				return bin_fail(cr, -errno, (uint64_t)bin_off(b1),
						"seek: %s", strerror(errno));
			return (int64_t)(b0 + k);
		}
		bisect = !bisect;
	}
	return (int64_t)lo;
}

int sbrig_capread_seek_samples(struct sbrig_capread *cr, int64_t t_ns)
{
	struct cr_file *f = &cr->files[SBRIG_CAPFILE_SAMPLES];
	uint64_t n;
	struct stat st;
	int64_t idx;
	int ret;

	if (!f->binary)
		return sbrig_set_error(-EOPNOTSUPP, "%s/%s: seek: only samples.bin "
				       "(capture format version 2) can seek",
				       cr->dir, f->name);
	if (f->err)
		return sbrig_set_error(f->err, "%s", f->errmsg);
	if (f->fd < 0) {
		ret = file_open(cr, SBRIG_CAPFILE_SAMPLES);
		if (ret)
			return ret;
	}
	if (!f->header_ok) {
		ret = bin_header(cr);
		if (ret)
			return ret;
	}
	if (fstat(f->fd, &st))
		return bin_fail(cr, -errno, f->info.offset, "stat: %s",
				strerror(errno));
	/* whole records only: a cut last one is not a record */
	n = st.st_size > CAPBIN_HEADER_SIZE ?
		((uint64_t)st.st_size - CAPBIN_HEADER_SIZE) / CAPBIN_RECORD_SIZE : 0;
	idx = bin_search(cr, t_ns, n);
	if (idx < 0)
		return (int)idx;
	if (f->start == f->end &&
	    lseek(f->fd, bin_off((uint64_t)idx), SEEK_SET) != bin_off((uint64_t)idx))
		return bin_fail(cr, -errno, (uint64_t)bin_off((uint64_t)idx),
				"seek: %s", strerror(errno));
	f->at_eof = false;
	f->info.rows = (uint64_t)idx;
	f->info.offset = (uint64_t)bin_off((uint64_t)idx);
	f->info.eof = false;
	f->info.cut_lines = 0;
	f->info.cut_bytes = 0;
	return 0;
}

int sbrig_capread_next_gap(struct sbrig_capread *cr, struct sbrig_gap *g)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_GAPS;
	struct field c[CR_MAX_COLS];
	struct sbrig_gap r;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	if (col_i64(cr, id, c, 0, &r.t_ns) ||
	    col_i64(cr, id, c, 1, &r.next_t_ns) ||
	    col_u64(cr, id, c, 2, &r.missing))
		return cr->files[id].err;
	*g = r;
	return 1;
}

int sbrig_capread_next_edge(struct sbrig_capread *cr, struct sbrig_edge *e)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_EDGES;
	struct field c[CR_MAX_COLS];
	struct sbrig_edge r;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	memset(&r, 0, sizeof(r));
	if (col_i64(cr, id, c, 0, &r.t_ns) ||
	    col_text(cr, id, c, 1, r.line, sizeof(r.line)) ||
	    col_word(cr, id, c, 2, "rising", "falling", &r.rising) ||
	    col_u64(cr, id, c, 3, &r.seqno))
		return cr->files[id].err;
	*e = r;
	return 1;
}

int sbrig_capread_next_stimulus(struct sbrig_capread *cr,
				struct sbrig_stimulus *st)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_STIMULI;
	struct field c[CR_MAX_COLS];
	struct sbrig_stimulus r;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	memset(&r, 0, sizeof(r));
	if (col_i64(cr, id, c, 0, &r.t_ns) ||
	    col_text(cr, id, c, 1, r.what, sizeof(r.what)) ||
	    col_text(cr, id, c, 2, r.arg, sizeof(r.arg)))
		return cr->files[id].err;
	*st = r;
	return 1;
}

int sbrig_capread_next_event(struct sbrig_capread *cr, struct sbrig_event *ev)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_EVENTS;
	struct field c[CR_MAX_COLS];
	struct sbrig_event r;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	memset(&r, 0, sizeof(r));
	if (col_i64(cr, id, c, 0, &r.host_t_ns) ||
	    col_uncert(cr, id, c, 1, &r.uncert_ns) ||
	    col_i64(cr, id, c, 2, &r.target_t_ns) ||
	    col_text(cr, id, c, 3, r.boot_id, sizeof(r.boot_id)) ||
	    col_u64(cr, id, c, 4, &r.seq) ||
	    col_text(cr, id, c, 5, r.type, sizeof(r.type)) ||
	    col_text(cr, id, c, 6, r.arg, sizeof(r.arg)) ||
	    col_word(cr, id, c, 7, "1", "0", &r.cut) ||
	    (cr->files[id].ncols > 8 && col_u64(cr, id, c, 8, &r.obj)))
		return cr->files[id].err;
	*ev = r;
	return 1;
}

int sbrig_capread_next_stats(struct sbrig_capread *cr, int64_t *t_ns,
			     struct sbrig_blocker_stats *row)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_STATS;
	struct field c[CR_MAX_COLS];
	struct sbrig_blocker_stats r;
	int64_t t;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	memset(&r, 0, sizeof(r));
	if (col_i64(cr, id, c, 0, &t) ||
	    col_text(cr, id, c, 1, r.name, sizeof(r.name)) ||
	    col_u64(cr, id, c, 2, &r.count) ||
	    col_u64(cr, id, c, 3, &r.wake_count) ||
	    col_i64(cr, id, c, 4, &r.active_since_ns) ||
	    col_i64(cr, id, c, 5, &r.total_time_ns) ||
	    col_i64(cr, id, c, 6, &r.sleep_time_ns) ||
	    col_i64(cr, id, c, 7, &r.max_time_ns) ||
	    col_i64(cr, id, c, 8, &r.last_change_ns))
		return cr->files[id].err;
	*t_ns = t;
	*row = r;
	return 1;
}

int sbrig_capread_next_clock(struct sbrig_capread *cr,
			     struct sbrig_capture_clock_row *cl)
{
	const enum sbrig_capfile id = SBRIG_CAPFILE_CLOCK;
	struct field c[CR_MAX_COLS];
	struct sbrig_capture_clock_row r;
	int ret = next_row(cr, id, c);

	if (ret <= 0)
		return ret;
	if (col_i64(cr, id, c, 0, &r.host_send_ns) ||
	    col_i64(cr, id, c, 1, &r.host_recv_ns) ||
	    col_i64(cr, id, c, 2, &r.target_ns) ||
	    col_word(cr, id, c, 3, "1", "0", &r.retained))
		return cr->files[id].err;
	*cl = r;
	return 1;
}

int sbrig_capread_rewind(struct sbrig_capread *cr, enum sbrig_capfile file)
{
	struct cr_file *f;

	if ((unsigned int)file >= SBRIG_CAPFILE_NR)
		return sbrig_set_error(-EINVAL, "capture: no file %d", file);
	f = &cr->files[file];
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->header_ok = false;
	f->seek_known = false;
	f->err = 0;
	f->errmsg[0] = '\0';
	memset(&f->info, 0, sizeof(f->info));
	return file_open(cr, file);
}

void sbrig_capread_file_info(const struct sbrig_capread *cr,
			     enum sbrig_capfile file,
			     struct sbrig_capfile_info *info)
{
	memset(info, 0, sizeof(*info));
	if ((unsigned int)file < SBRIG_CAPFILE_NR)
		*info = cr->files[file].info;
}

const char *sbrig_capfile_name(enum sbrig_capfile file)
{
	return (unsigned int)file < SBRIG_CAPFILE_NR ? cr_files[file].name : "?";
}

const char *sbrig_capread_file_name(const struct sbrig_capread *cr,
				    enum sbrig_capfile file)
{
	return (unsigned int)file < SBRIG_CAPFILE_NR ? cr->files[file].name :
						       "?";
}

/* ---- meta.ini ------------------------------------------------------------ */

enum meta_sec { MS_CAPTURE, MS_PROVENANCE, MS_TARGET, MS_END, MS_SENSOR,
		MS_OTHER };

enum meta_type { M_STR, M_I64, M_U64, M_UINT, M_INT, M_ROWS };

/**
 * struct meta_key - a known key of meta.ini
 * @sec: its section
 * @key: its name
 * @type: how the value is parsed
 * @offset: where it goes (struct sbrig_capture_meta; MS_TARGET: struct
 *	sbrig_capture_target); M_ROWS: the file index
 * @size: storage size of a string
 */
struct meta_key {
	enum meta_sec sec;
	const char *key;
	enum meta_type type;
	size_t offset;
	size_t size;
};

#define MK(s, k, t, f) { s, k, t, offsetof(struct sbrig_capture_meta, f), \
			 sizeof(((struct sbrig_capture_meta *)0)->f) }
#define PK(k) MK(MS_PROVENANCE, #k, M_STR, prov.k)
#define TK(k, t) { MS_TARGET, #k, t, offsetof(struct sbrig_capture_target, k), \
		   sizeof(((struct sbrig_capture_target *)0)->k) }
#define RK(k, i) { MS_END, k, M_ROWS, i, 0 }

static const struct meta_key meta_keys[] = {
	MK(MS_CAPTURE, "version", M_UINT, version),
	MK(MS_CAPTURE, "created", M_STR, created),
	MK(MS_CAPTURE, "created_realtime_ns", M_I64, created_realtime_ns),
	MK(MS_CAPTURE, "created_monotonic_ns", M_I64, created_monotonic_ns),
	PK(rig_name), PK(rig_config), PK(rig_sha256), PK(host_version),
	PK(git_sha), PK(scenario), PK(scenario_sha256), PK(power_uri),
	PK(target_uri),
	TK(boot_id, M_STR), TK(kernel, M_STR), TK(module, M_STR),
	TK(agent, M_STR), TK(seen_monotonic_ns, M_I64),
	MK(MS_END, "status", M_STR, status),
	MK(MS_END, "closed_monotonic_ns", M_I64, closed_monotonic_ns),
	MK(MS_END, "error", M_STR, error),
	MK(MS_END, "errno", M_INT, errno_value),
	MK(MS_END, "targets_not_listed", M_U64, targets_not_listed),
	MK(MS_END, "sensor_tail_lost", M_INT, sensor_tail_lost),
	MK(MS_END, "sensor_tail_lost_from_ns", M_I64, sensor_tail_lost_from_ns),
	MK(MS_END, "sensor_tail_lost_to_ns", M_I64, sensor_tail_lost_to_ns),
	RK("samples", SBRIG_CAPFILE_SAMPLES), RK("gaps", SBRIG_CAPFILE_GAPS),
	RK("edges", SBRIG_CAPFILE_EDGES), RK("stimuli", SBRIG_CAPFILE_STIMULI),
	RK("events", SBRIG_CAPFILE_EVENTS), RK("stats", SBRIG_CAPFILE_STATS),
	RK("clock", SBRIG_CAPFILE_CLOCK),
	MK(MS_SENSOR, "clock", M_STR, sensor_clock),
	MK(MS_SENSOR, "clock_drift_known", M_INT, sensor_drift_known),
	MK(MS_SENSOR, "clock_drift_ppb", M_I64, sensor_drift_ppb),
	MK(MS_SENSOR, "clock_uncert_ns", M_I64, sensor_uncert_ns),
};

static const char *const meta_sections[] = {
	[MS_CAPTURE] = "capture", [MS_PROVENANCE] = "provenance",
	[MS_TARGET] = "target", [MS_END] = "end", [MS_SENSOR] = "sensor",
};

/**
 * struct meta_parser - state of one meta.ini
 * @cr: the reader (its @dir and @meta)
 * @line: current line number
 * @sec: current section (MS_OTHER also before the first one)
 * @in_section: a section header was seen
 * @seen_secs: bitmap of the single sections seen
 * @seen_keys: bitmap of meta_keys[] set in the current section
 * @format_ok: [capture] format = sbrig-capture was seen
 */
struct meta_parser {
	struct sbrig_capread *cr;
	unsigned int line;
	enum meta_sec sec;
	bool in_section;
	unsigned int seen_secs;
	uint64_t seen_keys;
	bool format_ok;
};

static int SBRIG_PRINTF(2, 3)
meta_fail(struct meta_parser *p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbrig_set_error(-EINVAL, "%s/meta.ini:%u: %s", p->cr->dir,
			       p->line, msg);
}

static int meta_section(struct meta_parser *p, struct field name)
{
	struct sbrig_capture_meta *m = &p->cr->meta;
	unsigned int i;

	p->seen_keys = 0;
	p->in_section = true;
	p->sec = MS_OTHER;	/* unknown sections are skipped */
	for (i = 0; i < SBRIG_ARRAY_SIZE(meta_sections); i++)
		if (name.n == strlen(meta_sections[i]) &&
		    !memcmp(name.s, meta_sections[i], name.n))
			p->sec = i;
	if (p->sec == MS_TARGET) {
		if (m->ntargets == SBRIG_CAPTURE_MAX_TARGETS)
			return meta_fail(p, "[target]: more than %d",
					 SBRIG_CAPTURE_MAX_TARGETS);
		m->ntargets++;
	} else if (p->sec != MS_OTHER) {
		if (p->seen_secs & (1u << p->sec))
			return meta_fail(p, "[%s]: section given twice",
					 meta_sections[p->sec]);
		p->seen_secs |= 1u << p->sec;
		if (p->sec == MS_END)
			m->ended = true;
	}
	return 0;
}

static int meta_value(struct meta_parser *p, struct field key, struct field v)
{
	struct sbrig_capture_meta *m = &p->cr->meta;
	const struct meta_key *k = NULL;
	const char *why = NULL, *sec;
	char whybuf[64], *base;
	unsigned int i;
	int64_t i64;
	uint64_t u64;

	if (!p->in_section)
		return meta_fail(p, "'%.*s': key outside of any section",
				 (int)(key.n > 32 ? 32 : key.n), key.s);
	sec = p->sec == MS_OTHER ? "?" : meta_sections[p->sec];
	if (p->sec == MS_CAPTURE && key.n == 6 && !memcmp(key.s, "format", 6)) {
		if (v.n != 13 || memcmp(v.s, "sbrig-capture", 13))
			return meta_fail(p, "[capture] format: '%.*s': not an sbrig capture",
					 (int)(v.n > 32 ? 32 : v.n), v.s);
		p->format_ok = true;
		return 0;
	}
	for (i = 0; i < SBRIG_ARRAY_SIZE(meta_keys); i++)
		if (meta_keys[i].sec == p->sec &&
		    key.n == strlen(meta_keys[i].key) &&
		    !memcmp(key.s, meta_keys[i].key, key.n)) {
			k = &meta_keys[i];
			break;
		}
	if (!k)
		return 0;	/* a key of a later writer: skipped */
	if (p->seen_keys & (1ull << i))
		return meta_fail(p, "[%s] %s: set twice", sec, k->key);
	p->seen_keys |= 1ull << i;
	base = p->sec == MS_TARGET ? (char *)&m->targets[m->ntargets - 1] :
				     (char *)m;
	switch (k->type) {
	case M_STR:
		if (!unescape(v, base + k->offset, k->size, &why, whybuf,
			      sizeof(whybuf)))
			return meta_fail(p, "[%s] %s: %s", sec, k->key, why);
		return 0;
	case M_I64:
		if (!parse_i64(v, &i64))
			break;
		memcpy(base + k->offset, &i64, sizeof(i64));
		return 0;
	case M_U64:
		if (!parse_u64(v, &u64))
			break;
		memcpy(base + k->offset, &u64, sizeof(u64));
		return 0;
	case M_UINT:
		if (!parse_u64(v, &u64) || u64 > UINT32_MAX)
			break;
		*(unsigned int *)(base + k->offset) = (unsigned int)u64;
		return 0;
	case M_INT:
		if (!parse_i64(v, &i64) || i64 < INT32_MIN || i64 > INT32_MAX)
			break;
		*(int *)(base + k->offset) = (int)i64;
		return 0;
	case M_ROWS:
		if (!parse_u64(v, &u64) || u64 > INT64_MAX)
			break;
		m->rows[k->offset] = (int64_t)u64;
		return 0;
	}
	return meta_fail(p, "[%s] %s: '%.*s': not a number", sec, k->key,
			 (int)(v.n > 32 ? 32 : v.n), v.s);
}

static int meta_line(struct meta_parser *p, struct field l)
{
	const char *eq;

	if (!l.n || l.s[0] == ';' || l.s[0] == '#')
		return 0;
	if (memchr(l.s, '\0', l.n))
		return meta_fail(p, "NUL byte");
	if (l.s[0] == '[') {
		if (l.n < 3 || l.s[l.n - 1] != ']')
			return meta_fail(p, "expected [section]");
		return meta_section(p, (struct field){ l.s + 1, l.n - 2 });
	}
	eq = memmem(l.s, l.n, " = ", 3);
	if (!eq || eq == l.s)
		return meta_fail(p, "expected [section] or key = value");
	return meta_value(p, (struct field){ l.s, (size_t)(eq - l.s) },
			  (struct field){ eq + 3, l.n - (size_t)(eq - l.s) - 3 });
}

/* [end] sensor_tail_lost: a flag, and a span forwards */
static int check_tail_lost(const struct sbrig_capture_meta *m,
			   const char *path)
{
	if (m->sensor_tail_lost != 0 && m->sensor_tail_lost != 1)
		return sbrig_set_error(-EINVAL, "%s: [end] sensor_tail_lost: "
				       "%d: expected 0 or 1", path,
				       m->sensor_tail_lost);
	if (m->sensor_tail_lost &&
	    m->sensor_tail_lost_to_ns < m->sensor_tail_lost_from_ns)
		return sbrig_set_error(-EINVAL, "%s: [end] sensor_tail_lost_to_ns "
				       "%" PRId64 " is before "
				       "sensor_tail_lost_from_ns %" PRId64, path,
				       m->sensor_tail_lost_to_ns,
				       m->sensor_tail_lost_from_ns);
	return 0;
}

static int read_meta(struct sbrig_capread *cr)
{
	struct meta_parser p = { .cr = cr, .sec = MS_OTHER };
	char path[PATH_MAX + 16], *buf;
	size_t got = 0, pos = 0;
	struct stat st;
	ssize_t n;
	int fd, ret = 0, i;

	for (i = 0; i < SBRIG_CAPFILE_NR; i++)
		cr->meta.rows[i] = -1;
	snprintf(path, sizeof(path), "%s/meta.ini", cr->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CR_META_MAX) {
		close(fd);
		return sbrig_set_error(-EINVAL,
			"%s: not a regular file of at most %d bytes", path,
			CR_META_MAX);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return sbrig_set_error(-ENOMEM, "%s: out of memory", path);
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = sbrig_set_error(-errno, "%s: %s", path,
					      strerror(errno));
			goto out;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	/* lines; the bytes after the last newline are an unfinished write */
	while (pos < got) {
		const char *nl = memchr(buf + pos, '\n', got - pos);

		if (!nl)
			break;
		p.line++;
		ret = meta_line(&p, (struct field){ buf + pos,
				(size_t)(nl - buf - pos) });
		if (ret)
			goto out;
		pos = (size_t)(nl - buf) + 1;
	}
	p.line = 0;
	if (!(p.seen_secs & (1u << MS_CAPTURE)) || !p.format_ok) {
		ret = sbrig_set_error(-EINVAL,
			"%s: no [capture] format = sbrig-capture: not a capture",
			path);
		goto out;
	}
	ret = check_tail_lost(&cr->meta, path);
	if (ret)
		goto out;
	if (cr->meta.version < 1 || cr->meta.version > 2) {
		ret = sbrig_set_error(-EPROTONOSUPPORT,
			"%s: [capture] version %u: this reader knows versions 1 "
			"and 2", path, cr->meta.version);
		goto out;
	}
out:
	free(buf);
	close(fd);
	return ret;
}

/* ---- life cycle ---------------------------------------------------------- */

struct sbrig_capread *sbrig_capread_open(const char *dir)
{
	struct sbrig_capread *cr;
	unsigned int i;
	int ret;

	if (strlen(dir) >= sizeof(cr->dir)) {
		sbrig_set_error(-ENAMETOOLONG, "%s: path too long", dir);
		errno = ENAMETOOLONG;
		return NULL;
	}
	cr = calloc(1, sizeof(*cr));
	if (!cr) {
		sbrig_set_error(-ENOMEM, "%s: out of memory", dir);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(cr->dir, sizeof(cr->dir), "%s", dir);
	for (i = 0; i < SBRIG_CAPFILE_NR; i++) {
		cr->files[i].fd = -1;
		cr->files[i].name = cr_files[i].name;
	}
	ret = read_meta(cr);
	if (ret) {
		sbrig_capread_close(cr);
		errno = -ret;
		return NULL;
	}
	if (cr->meta.version >= 2) {
		cr->files[SBRIG_CAPFILE_SAMPLES].name = CAPBIN_NAME;
		cr->files[SBRIG_CAPFILE_SAMPLES].binary = true;
	}
	return cr;
}

void sbrig_capread_close(struct sbrig_capread *cr)
{
	unsigned int i;

	if (!cr)
		return;
	for (i = 0; i < SBRIG_CAPFILE_NR; i++) {
		if (cr->files[i].fd >= 0)
			close(cr->files[i].fd);
		free(cr->files[i].buf);
	}
	free(cr);
}

const struct sbrig_capture_meta *sbrig_capread_meta(const struct sbrig_capread *cr)
{
	return &cr->meta;
}

const char *sbrig_capread_dir(const struct sbrig_capread *cr)
{
	return cr->dir;
}
