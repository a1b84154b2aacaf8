// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_capture_read - libFuzzer harness of the capture reader
 * (lib/capture-read.c), linked with libsbrig-core only.
 *
 * The input is a whole capture directory: its parts, separated by the byte
 * 0x1e (ASCII record separator), are meta.ini, then samples.tsv, gaps.tsv,
 * edges.tsv, stimuli.tsv, events.tsv, stats.tsv and clock.tsv, written to
 * a scratch directory (missing parts: absent files). The harness opens it
 * and reads every file to its end or its first error; an error must name
 * the directory.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbrig/capture-read.h>
#include <sbrig/sbrig.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {
	"meta.ini", "samples.tsv", "gaps.tsv", "edges.tsv", "stimuli.tsv",
	"events.tsv", "stats.tsv", "clock.tsv",
};

static char dir[64];

static void put(unsigned int i, const uint8_t *p, size_t n)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n))
		abort();
	close(fd);
}

static void check_err(int ret)
{
	if (ret < 0 && strncmp(sbrig_errmsg(), dir, strlen(dir)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct sbrig_capread *cr;
	struct sbrig_sample s;
	struct sbrig_gap g;
	struct sbrig_edge e;
	struct sbrig_stimulus st;
	struct sbrig_event ev;
	struct sbrig_blocker_stats row;
	struct sbrig_capture_clock_row c;
	int64_t t;
	unsigned int i;
	int ret;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz-capread-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	for (i = 0; i < 8; i++) {
		const uint8_t *sep;
		char path[128];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!p) {		/* no part left: no such file */
			unlink(path);
			continue;
		}
		sep = memchr(p, 0x1e, (size_t)(end - p));
		put(i, p, sep ? (size_t)(sep - p) : (size_t)(end - p));
		p = sep ? sep + 1 : NULL;
	}
	cr = sbrig_capread_open(dir);
	if (!cr) {
		check_err(-1);
		return 0;
	}
	while ((ret = sbrig_capread_next_sample(cr, &s)) == 1)
		;
	check_err(ret);
	while ((ret = sbrig_capread_next_gap(cr, &g)) == 1)
		;
	check_err(ret);
	while ((ret = sbrig_capread_next_edge(cr, &e)) == 1)
		;
	check_err(ret);
	while ((ret = sbrig_capread_next_stimulus(cr, &st)) == 1)
		;
	check_err(ret);
	while ((ret = sbrig_capread_next_event(cr, &ev)) == 1)
		if (strlen(ev.arg) >= sizeof(ev.arg))
			abort();
	check_err(ret);
	while ((ret = sbrig_capread_next_stats(cr, &t, &row)) == 1)
		;
	check_err(ret);
	while ((ret = sbrig_capread_next_clock(cr, &c)) == 1)
		;
	check_err(ret);
	sbrig_capread_close(cr);
	return 0;
}
