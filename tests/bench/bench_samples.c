// SPDX-License-Identifier: GPL-2.0
/*
 * bench_samples - the capture writer and reader on samples alone, one
 * core: write N samples (default 12.6 M, an hour at 3.5 kS/s) into a
 * capture of format version 2 (samples.bin) and of version 1
 * (samples.tsv), then read them back with sbrig_capread_samples() in
 * batches and with sbrig_capread_next_sample(), and print samples/s of
 * each next to the file sizes and the size per hour at 3.5 kS/s. The
 * floor under any reader of samples.bin is measured too: a plain read()
 * of the same file in chunks of one batch's bytes, every 64-bit word added
 * up (no decoding, no checks): "plain read() samples.bin".
 *
 * Built and run by tests/bench/bench_samples.py (against the release
 * libsbrig-core.a), which prints the ratios; by hand:
 *
 *   make -C host
 *   cc -O2 -Ihost/include -o bench_samples tests/bench/bench_samples.c \
 *      build/host/release/libsbrig-core.a -lmd
 *   ./bench_samples [-n SAMPLES] [-b BATCH] [-r REPEATS] [--no-tsv] DIR
 *
 * DIR must not exist (or be empty); it is removed at the end. The reads
 * are of a file in the page cache (it was just written): the figure is
 * the reader's CPU cost, not the disk's speed. Each read pass folds every
 * sample into a checksum and fails unless the count and the checksum are
 * those written. Write times include the writer's write() and
 * fdatasync() calls (one sync per 3500 samples, as the daemon's loop).
 * Times are CPU time of the process (CLOCK_PROCESS_CPUTIME_ID) and wall
 * time; the best of REPEATS read passes is printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sbrig/capture-read.h>
#include <sbrig/capture.h>
#include <sbrig/sbrig.h>

#define RATE_SPS 3500.0

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct sbrig_sample sample_of(uint64_t i)
{
	struct sbrig_sample s = {
		.t_ns = (int64_t)(1000000000 + i * 285714),
		.current_uA = (int32_t)(50000 + i % 1000),
		.bus_uV = 5000000 - (int32_t)(i % 77),
		.shunt_nV = (int32_t)(i % 5000) * 25,
		.power_uW = (int64_t)(250000 + i % 1000 * 5),
	};
	return s;
}

/*
 * What a read pass folds every sample into, so that the compiler cannot
 * skip the reads: a sum of every field, the kind of work an integrator
 * does per sample (a dependency chain of one add, not the bench's cost).
 * The order of the samples is the unit tests' business.
 */
static uint64_t fold(uint64_t h, const struct sbrig_sample *s)
{
	return h + ((uint64_t)s->t_ns + (uint64_t)s->power_uW +
		    (uint64_t)s->current_uA + (uint64_t)s->bus_uV +
		    (uint64_t)s->shunt_nV);
}

static int write_capture(const char *dir, unsigned int version, uint64_t n,
			 double *cpu_s)
{
	const struct sbrig_capture_opts o = { .version = version };
	struct sbrig_provenance prov = { .rig_name = "bench" };
	struct sbrig_sample b[1024];
	struct sbrig_capture *cap;
	double c0;
	uint64_t i;
	int ret;

	cap = sbrig_capture_new_opts(dir, &prov, &o);
	if (!cap) {
		fprintf(stderr, "bench_samples: %s\n", sbrig_errmsg());
		return -1;
	}
	c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	for (i = 0; i < n; ) {
		size_t k = n - i < 1024 ? (size_t)(n - i) : 1024;

		/* a daemon's block of samples, about a third of a second */
		for (size_t j = 0; j < k; j++)
			b[j] = sample_of(i + j);
		ret = sbrig_capture_add_samples(cap, b, k);
		if (ret) {
			fprintf(stderr, "bench_samples: %s\n", sbrig_errmsg());
			sbrig_capture_close(cap, "failed");
			return -1;
		}
		i += k;
		/* the daemon's loop syncs once a second of capture */
		if (i % 3500 < k)
			sbrig_capture_sync(cap, sbrig_now_ns() + (int64_t)i * 1000000);
	}
	ret = sbrig_capture_close(cap, "complete");
	*cpu_s = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (ret) {
		fprintf(stderr, "bench_samples: %s\n", sbrig_errmsg());
		return -1;
	}
	return 0;
}

/*
 * One read pass: @batch 0 means sbrig_capread_next_sample(). Return 0 and
 * the pass's CPU and wall seconds, or -1.
 */
static int read_pass(const char *dir, size_t batch, uint64_t n, uint64_t want,
		     double *cpu_s, double *wall_s)
{
	struct sbrig_sample *buf = malloc((batch ? batch : 1) * sizeof(*buf));
	struct sbrig_capread *cr;
	double c0, w0;
	uint64_t got = 0, h = 0;
	ssize_t k;

	cr = sbrig_capread_open(dir);
	if (!cr || !buf) {
		fprintf(stderr, "bench_samples: %s\n", sbrig_errmsg());
		free(buf);
		return -1;
	}
	c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	w0 = now_s(CLOCK_MONOTONIC);
	for (;;) {
		if (batch) {
			k = sbrig_capread_samples(cr, buf, batch);
		} else {
			k = sbrig_capread_next_sample(cr, buf);
		}
		if (k <= 0)
			break;
		for (ssize_t j = 0; j < k; j++)
			h = fold(h, &buf[j]);
		got += (uint64_t)k;
	}
	*cpu_s = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	*wall_s = now_s(CLOCK_MONOTONIC) - w0;
	if (k < 0)
		fprintf(stderr, "bench_samples: %s\n", sbrig_errmsg());
	sbrig_capread_close(cr);
	free(buf);
	if (k < 0 || got != n || h != want) {
		fprintf(stderr, "bench_samples: read %" PRIu64 " of %" PRIu64
			" samples%s\n", got, n, h != want ? ", checksum differs" : "");
		return -1;
	}
	return 0;
}

/*
 * The reference: read() @dir/samples.bin in chunks of @batch records and
 * add up its 64-bit words (the bytes are touched, as a decoder must). The
 * best of @repeats passes; prints one line. Return 0 or -1.
 */
static int bench_plain_read(const char *dir, size_t batch, uint64_t n,
			    unsigned int repeats)
{
	size_t chunk = batch * 32;
	uint64_t *buf = malloc(chunk), h = 0, bytes;
	double best_cpu = 1e30, best_wall = 1e30, c0, w0;
	char path[4200];
	ssize_t k;

	if (!buf)
		return -1;
	snprintf(path, sizeof(path), "%s/samples.bin", dir);
	for (unsigned int r = 0; r < repeats; r++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror(path);
			free(buf);
			return -1;
		}
		bytes = 0;
		c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
		w0 = now_s(CLOCK_MONOTONIC);
		while ((k = read(fd, buf, chunk)) > 0) {
			for (size_t i = 0; i < (size_t)k / 8; i++)
				h += buf[i];
			bytes += (uint64_t)k;
		}
		c0 = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
		w0 = now_s(CLOCK_MONOTONIC) - w0;
		close(fd);
		if (k < 0 || bytes != 32 + n * 32) {
			fprintf(stderr, "bench_samples: %s: read %" PRIu64
				" bytes\n", path, bytes);
			free(buf);
			return -1;
		}
		if (c0 < best_cpu)
			best_cpu = c0;
		if (w0 < best_wall)
			best_wall = w0;
	}
	free(buf);
	/* h printed so that the sum is not optimised away */
	printf("read\tplain read() samples.bin, %zu-byte chunks\t%" PRIu64
	       "\t%.3f\t%.3f\t%.1f\t# sum %" PRIx64 "\n", chunk, n, best_cpu,
	       best_wall, (double)n / best_cpu / 1e6, h);
	return 0;
}

static long long file_size(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) ? -1 : (long long)st.st_size;
}

static void remove_capture(const char *dir)
{
	static const char *const names[] = {
		"meta.ini", "samples.tsv", "samples.bin", "gaps.tsv",
		"edges.tsv", "stimuli.tsv", "events.tsv", "stats.tsv",
		"clock.tsv",
	};
	char path[4200];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Best of @repeats passes; prints one line. Return 0 or -1. */
static int bench_read(const char *what, const char *dir, size_t batch,
		      uint64_t n, uint64_t want, unsigned int repeats)
{
	double best_cpu = 1e30, best_wall = 1e30, cpu, wall;

	for (unsigned int r = 0; r < repeats; r++) {
		if (read_pass(dir, batch, n, want, &cpu, &wall))
			return -1;
		if (cpu < best_cpu)
			best_cpu = cpu;
		if (wall < best_wall)
			best_wall = wall;
	}
	printf("read\t%s\t%" PRIu64 "\t%.3f\t%.3f\t%.1f\n", what, n, best_cpu,
	       best_wall, (double)n / best_cpu / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "samples", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "repeats", required_argument, NULL, 'r' },
		{ "no-tsv", no_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t n = 12600000, want = 0, i;
	unsigned int repeats = 3;
	size_t batch = 4096;
	bool tsv = true;
	char dir1[4096], dir2[4096], what[64];
	double wcpu;
	long long bin, txt = -1;
	int opt, ret = 1;

	while ((opt = getopt_long(argc, argv, "n:b:r:", opts, NULL)) != -1) {
		switch (opt) {
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'b': batch = strtoul(optarg, NULL, 0); break;
		case 'r': repeats = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'T': tsv = false; break;
		default:
			fprintf(stderr, "usage: bench_samples [-n SAMPLES] [-b BATCH] "
				"[-r REPEATS] [--no-tsv] DIR\n");
			return 2;
		}
	}
	if (optind + 1 != argc || !batch || !repeats) {
		fprintf(stderr, "usage: bench_samples [-n SAMPLES] [-b BATCH] "
			"[-r REPEATS] [--no-tsv] DIR\n");
		return 2;
	}
	if (mkdir(argv[optind], 0755) && errno != EEXIST) {
		perror(argv[optind]);
		return 1;
	}
	snprintf(dir2, sizeof(dir2), "%s/v2", argv[optind]);
	snprintf(dir1, sizeof(dir1), "%s/v1", argv[optind]);
	for (i = 0; i < n; i++) {
		struct sbrig_sample s = sample_of(i);

		want = fold(want, &s);
	}

	printf("# bench_samples: %" PRIu64 " samples (%.2f h at %.0f S/s), "
	       "batches of %zu, best of %u read passes, one core\n", n,
	       (double)n / RATE_SPS / 3600, RATE_SPS, batch, repeats);
	printf("what\tformat\tsamples\tcpu_s\twall_s\tM_samples_per_s\n");
	if (write_capture(dir2, 2, n, &wcpu))
		goto out;
	bin = file_size(dir2, "samples.bin");
	printf("write\tv2 samples.bin\t%" PRIu64 "\t%.3f\t-\t%.1f\n", n, wcpu,
	       (double)n / wcpu / 1e6);
	snprintf(what, sizeof(what), "v2 samples.bin, batch %zu", batch);
	if (bench_read(what, dir2, batch, n, want, repeats))
		goto out;
	if (bench_read("v2 samples.bin, batch 65536", dir2, 65536, n, want,
		       repeats))
		goto out;
	if (bench_read("v2 samples.bin, next_sample()", dir2, 0, n, want, 1))
		goto out;
	if (bench_plain_read(dir2, batch, n, repeats))
		goto out;
	remove_capture(dir2);
	if (tsv) {
		if (write_capture(dir1, 1, n, &wcpu))
			goto out;
		txt = file_size(dir1, "samples.tsv");
		printf("write\tv1 samples.tsv\t%" PRIu64 "\t%.3f\t-\t%.1f\n", n,
		       wcpu, (double)n / wcpu / 1e6);
		snprintf(what, sizeof(what), "v1 samples.tsv, batch %zu", batch);
		if (bench_read(what, dir1, batch, n, want, 1))
			goto out;
		remove_capture(dir1);
	}
	printf("size\tv2 samples.bin\t%lld bytes\t%.1f bytes/sample\t%.1f MB/h at "
	       "%.0f S/s\n", bin, (double)bin / (double)n,
	       (double)(bin - 32) / (double)n * RATE_SPS * 3600 / 1e6, RATE_SPS);
	if (txt >= 0)
		printf("size\tv1 samples.tsv\t%lld bytes\t%.1f bytes/sample\t%.1f MB/h "
		       "at %.0f S/s\n", txt, (double)txt / (double)n,
		       (double)txt / (double)n * RATE_SPS * 3600 / 1e6, RATE_SPS);
	ret = 0;
out:
	remove_capture(dir2);
	remove_capture(dir1);
	rmdir(argv[optind]);
	return ret;
}
