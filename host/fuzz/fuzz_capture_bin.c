// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_capture_bin - libFuzzer harness of the samples.bin reader (capture
 * format version 2, lib/capture-read.c), linked with libsbrig-core only.
 *
 * The input is samples.bin with one knob byte in front:
 *
 *   byte 0     bits 0-5: repeat count R; bits 6-7: the mixed pass's
 *              batch sizes (below)
 *   byte 1..   the file; then its bytes from offset 32 on are appended R
 *              more times, so a few kilobytes of input make files that
 *              cross the reader's 64 KiB buffer and its direct-read chunks
 *
 * next to a fixed meta.ini of version 2. The file is read three times
 * (rewinding in between): with sbrig_capread_next_sample() one by one, with
 * sbrig_capread_samples() in batches of 4096 (the direct-read path) and in
 * a mix of batch sizes (1, 3, 2047, 2048, 5000: both paths, partial
 * records kept across calls). What must hold, else abort():
 *
 * - the three passes return the same samples (memcmp) and end alike: at
 *   the end of the file or in the same error;
 * - an error's message names the directory and samples.bin, with an
 *   offset; no error ever comes from a file of a valid header;
 * - with a valid header, the records are exactly the whole 32-byte
 *   records after it, and a shorter tail is counted as the cut record
 *   (sbrig_capfile_info: rows, cut_lines, cut_bytes, offset);
 * - sbrig_capread_seek_samples() to times taken from the samples (each
 *   sample's own, one less and one more, and the ends) puts the stream at
 *   some record k (info.rows == k, info.offset) from which the samples
 *   are the file's from k on, ending as the passes did (the cut record
 *   counted again); on samples in time order k is the first record at or
 *   after the time.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <sbrig/capture-read.h>
#include <sbrig/sbrig.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR	32
#define REC	32

static const char meta[] =
	"[capture]\nformat = sbrig-capture\nversion = 2\n"
	"created = 2024-05-01T10:00:00.000000000Z\n"
	"created_realtime_ns = 1714557600000000000\n"
	"created_monotonic_ns = 1000000000\n"
	"[provenance]\nrig_name = fuzz\n";

static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n, size_t times)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | (times ? O_APPEND : O_TRUNC), 0600);
	if (fd < 0)
		abort();
	for (size_t i = 0; i < (times ? times : 1); i++)
		if (n && write(fd, p, n) != (ssize_t)n)
			abort();
	close(fd);
}

/* A valid samples.bin header (what the reader must accept). */
static int header_ok(const uint8_t *p, size_t n)
{
	static const uint8_t want[20] = "SBRIGSMP\x01\0\0\0\x20\0\0\0\0\0\0\0";

	return n >= HDR && !memcmp(p, want, sizeof(want));
}

/*
 * One pass over the samples into @out (room for @cap), batches from
 * @sizes (0-terminated, cycled; NULL: next_sample()). Returns the count;
 * *@err the call's final result (0 or -errno).
 */
static size_t pass(struct sbrig_capread *cr, struct sbrig_sample *out,
		   size_t cap, const size_t *sizes, int *err)
{
	size_t got = 0, k = 0;
	ssize_t n;

	if (sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES))
		abort();
	for (;;) {
		size_t want = sizes ? sizes[k] : 1;

		if (sizes && !sizes[++k])
			k = 0;
		if (want > cap - got)
			want = cap - got;
		if (!want)
			abort();	/* more samples than the file can hold */
		n = sizes ? sbrig_capread_samples(cr, out + got, want) :
			sbrig_capread_next_sample(cr, out + got);
		if (n <= 0) {
			*err = (int)n;
			break;
		}
		got += (size_t)n;
	}
	if (*err < 0 && (strncmp(sbrig_errmsg(), dir, strlen(dir)) ||
			 !strstr(sbrig_errmsg(), "/samples.bin: offset ")))
		abort();
	return got;
}

/* Seeks to times from @a (the @na samples of a good file), checked. */
static void seeks(struct sbrig_capread *cr, const struct sbrig_sample *a,
		  size_t na, struct sbrig_sample *buf, size_t cap,
		  const struct sbrig_capfile_info *end)
{
	struct sbrig_capfile_info info;
	bool sorted = true;
	size_t i, step = na > 64 ? na / 64 : 1;

	for (i = 1; i < na; i++)
		if (a[i].t_ns < a[i - 1].t_ns)
			sorted = false;
	for (i = 0; i < na + 2; i += (i < na ? step : 1)) {
		for (int d = -1; d <= 1; d++) {
			int64_t t = i == na ? INT64_MIN : i == na + 1 ? INT64_MAX :
				a[i].t_ns;
			size_t k, lb = 0, got = 0;
			ssize_t n;

			if (i < na && ((d < 0 && t == INT64_MIN) ||
				       (d > 0 && t == INT64_MAX)))
				continue;
			if (i < na)
				t += d;
			if (sbrig_capread_seek_samples(cr, t))
				abort();
			sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
			k = (size_t)info.rows;
			if (k > na || info.offset != HDR + k * REC || info.eof)
				abort();
			while (lb < na && a[lb].t_ns < t)
				lb++;
			if (sorted && k != lb)
				abort();
			while ((n = sbrig_capread_samples(cr, buf + got,
							  cap - got)) > 0)
				got += (size_t)n;
			if (n < 0 || got != na - k ||
			    memcmp(buf, a + k, got * sizeof(*a)))
				abort();
			sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
			if (info.rows != end->rows || !info.eof ||
			    info.cut_lines != end->cut_lines ||
			    info.cut_bytes != end->cut_bytes ||
			    info.offset != end->offset)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t batch4096[] = { 4096, 0 };
	static const size_t mixes[4][6] = {
		{ 1, 3, 2048, 0 },
		{ 2047, 1, 5000, 0 },
		{ 3, 5000, 3, 2048, 0 },
		{ 5000, 1, 0 },
	};
	struct sbrig_sample *a, *b, *c;
	struct sbrig_capfile_info info;
	struct sbrig_capread *cr;
	size_t n, total, repeat, na, nb, nc, body, whole;
	int ea = 0, eb = 0, ec = 0;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz-capbin-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		put("meta.ini", (const uint8_t *)meta, sizeof(meta) - 1, 0);
	}
	if (size < 1)
		return 0;
	repeat = data[0] & 0x3f;
	n = size - 1;
	put("samples.bin", data + 1, n, 0);
	if (n > HDR && repeat)
		put("samples.bin", data + 1 + HDR, n - HDR, repeat);
	total = n + (n > HDR ? (n - HDR) * repeat : 0);

	cr = sbrig_capread_open(dir);
	if (!cr)
		abort();	/* meta.ini is fixed and valid */
	n = total / REC + 1;
	a = malloc(n * sizeof(*a));
	b = malloc(n * sizeof(*b));
	c = malloc(n * sizeof(*c));
	if (!a || !b || !c)
		abort();
	na = pass(cr, a, n, NULL, &ea);
	nb = pass(cr, b, n, batch4096, &eb);
	nc = pass(cr, c, n, mixes[data[0] >> 6], &ec);
	if (na != nb || na != nc || ea != eb || ea != ec ||
	    memcmp(a, b, na * sizeof(*a)) || memcmp(a, c, na * sizeof(*a)))
		abort();
	if (header_ok(data + 1, size - 1)) {
		body = total - HDR;
		whole = body / REC;
		sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
		if (ea || na != whole || info.rows != whole || !info.eof ||
		    info.cut_lines != (body % REC != 0) ||
		    info.cut_bytes != body % REC ||
		    info.offset != HDR + whole * REC)
			abort();
		seeks(cr, a, na, b, n, &info);
	} else if (!ea) {
		abort();	/* a bad header must be refused */
	}
	free(a);
	free(b);
	free(c);
	sbrig_capread_close(cr);
	return 0;
}
