// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for capture directories (lib/capture.c): headers and rows of
 * every file, escaping, buffering until sync, atomic meta.ini, and a write
 * error (EFBIG from RLIMIT_FSIZE, as ENOSPC would be) that fails the
 * capture with a message naming the file and leaves earlier rows whole;
 * the same for samples.bin (format version 2), whose bytes are checked
 * against the layout of capture-format.md built here by hand.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <sbrig/capture.h>
#include <sbrig/sbrig.h>

static void tmp_path(char *buf, size_t len, const char *name)
{
	const char *t = getenv("SBRIG_TMPDIR");

	snprintf(buf, len, "%s/%s", t ? t : "/tmp", name);
}

/* The whole file as a string (caller frees). */
static char *slurp(const char *dir, const char *name)
{
	char path[PATH_MAX];
	char *buf;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot open", path);
	buf = malloc(1 << 22);
	n = fread(buf, 1, (1 << 22) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static const struct sbrig_provenance prov = {
	.rig_name = "virtual",
	.rig_config = "rig/virtual.conf",
	.rig_sha256 = "ab12",
	.host_version = "v0-test",
	.git_sha = "deadbeef",
	.scenario = "rig/scenarios/keypress.scn",
	.scenario_sha256 = "cd34",
	.power_uri = "ip:127.0.0.1:30431",
	.target_uri = "tcp:127.0.0.1:30430",
};

/* A capture of format version @version (1: samples.tsv, 2: samples.bin). */
static struct sbrig_capture *new_cap(const char *dir, unsigned int version)
{
	const struct sbrig_capture_opts o = { .version = version };
	struct sbrig_capture *cap = sbrig_capture_new_opts(dir, &prov, &o);

	if (!cap)
		fail_msg("%s", sbrig_errmsg());
	assert_int_equal(sbrig_capture_version(cap), version);
	return cap;
}

static void files_headers_and_rows(void **state)
{
	char dir[PATH_MAX];
	struct sbrig_capture *cap;
	struct sbrig_sample s[2] = {
		{ 1000, 12345, 5000000, 1234500, 61725 },
		{ 2000, -5, 4999000, -500, 0 },
	};
	struct sbrig_gap gap = { 2000, 5000, 2 };
	struct sbrig_edge edge = { .t_ns = 3000, .line = "marker",
				   .rising = true, .seqno = 7 };
	struct sbrig_stimulus st = { .t_ns = 2500, .what = "press",
				     .arg = "power" };
	struct sbrig_event ev = { .host_t_ns = 4000, .uncert_ns = 150,
				  .target_t_ns = 5012345678, .seq = 1,
				  .boot_id = "b-1", .type = "block",
				  .arg = "tab\there\nnl\\bs\x01", .cut = true,
				  .obj = 18446744073709551615ULL };
	struct sbrig_blocker_stats row = { .name = "rig agent", .count = 5,
		.wake_count = 0, .active_since_ns = 0, .total_time_ns = 7000,
		.sleep_time_ns = 0, .max_time_ns = 2500,
		.last_change_ns = 90000000000 };
	char *t;

	tmp_path(dir, sizeof(dir), "cap-rows");
	cap = new_cap(dir, 1);
	assert_string_equal(sbrig_capture_dir(cap), dir);
	assert_int_equal(sbrig_capture_set_target(cap, "b-1", "6.1.0-18-amd64",
						  "0.1", "0.1"), 0);
	assert_int_equal(sbrig_capture_add_samples(cap, s, 2), 0);
	assert_int_equal(sbrig_capture_add_gap(cap, &gap), 0);
	assert_int_equal(sbrig_capture_add_edge(cap, &edge), 0);
	assert_int_equal(sbrig_capture_add_stimulus(cap, &st), 0);
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
	assert_int_equal(sbrig_capture_add_stats(cap, 4500, &row), 0);
	assert_int_equal(sbrig_capture_add_clock(cap, 100, 300, 5000000200, 1), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	t = slurp(dir, "samples.tsv");
	assert_string_equal(t, "t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW\n"
			       "1000\t12345\t5000000\t1234500\t61725\n"
			       "2000\t-5\t4999000\t-500\t0\n");
	free(t);
	t = slurp(dir, "gaps.tsv");
	assert_string_equal(t, "t_ns\tnext_t_ns\tmissing\n2000\t5000\t2\n");
	free(t);
	t = slurp(dir, "edges.tsv");
	assert_string_equal(t, "t_ns\tline\tedge\tseqno\n3000\tmarker\trising\t7\n");
	free(t);
	t = slurp(dir, "stimuli.tsv");
	assert_string_equal(t, "t_ns\twhat\targ\n2500\tpress\tpower\n");
	free(t);
	t = slurp(dir, "events.tsv");
	assert_string_equal(t,
		"host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut\tobj\n"
		"4000\t150\t5012345678\tb-1\t1\tblock\ttab\\there\\nnl\\\\bs\\x01\t1"
		"\t18446744073709551615\n");
	free(t);
	t = slurp(dir, "stats.tsv");
	assert_string_equal(t,
		"t_ns\tname\tcount\twake_count\tactive_since_ns\ttotal_time_ns\t"
		"sleep_time_ns\tmax_time_ns\tlast_change_ns\n"
		"4500\trig agent\t5\t0\t0\t7000\t0\t2500\t90000000000\n");
	free(t);
	t = slurp(dir, "clock.tsv");
	assert_string_equal(t, "host_send_ns\thost_recv_ns\ttarget_ns\tretained\n"
			       "100\t300\t5000000200\t1\n");
	free(t);
	t = slurp(dir, "meta.ini");
	assert_non_null(strstr(t, "[capture]\nformat = sbrig-capture\nversion = 1\n"));
	assert_non_null(strstr(t, "\ncreated_monotonic_ns = "));
	assert_non_null(strstr(t, "\n[provenance]\nrig_name = virtual\n"));
	assert_non_null(strstr(t, "\nscenario_sha256 = cd34\n"));
	assert_non_null(strstr(t, "\n[target]\nboot_id = b-1\nkernel = 6.1.0-18-amd64\n"));
	assert_non_null(strstr(t, "\n[end]\nstatus = complete\n"));
	assert_non_null(strstr(t, "\nsamples = 2\ngaps = 1\nedges = 1\nstimuli = 1\n"
				  "events = 1\nstats = 1\nclock = 1\n"));
	assert_null(strstr(t, "error ="));
	free(t);
}

/* The samples writer's own integer formatting agrees with printf. */
static void sample_rows_match_printf(void **state)
{
	static const struct sbrig_sample s[] = {
		{ INT64_MIN, INT32_MIN, INT32_MAX, -1, INT64_MAX },
		{ 0, 0, 0, 0, 0 },
		{ -1, -10, 10, 9, -9223372036854775807LL },
		{ 1234567890123456789LL, 100000, 5000000, -2500, 1250000 },
	};
	struct sbrig_capture *cap;
	char dir[512], want[1024];
	size_t len;
	char *t;

	tmp_path(dir, sizeof(dir), "cap-ints");
	cap = new_cap(dir, 1);
	assert_int_equal(sbrig_capture_add_samples(cap, s, 4), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	len = (size_t)snprintf(want, sizeof(want), "%s\n",
			       "t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW");
	for (size_t i = 0; i < 4; i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len,
					"%" PRId64 "\t%" PRId32 "\t%" PRId32
					"\t%" PRId32 "\t%" PRId64 "\n",
					s[i].t_ns, s[i].current_uA, s[i].bus_uV,
					s[i].shunt_nV, s[i].power_uW);
	t = slurp(dir, "samples.tsv");
	assert_string_equal(t, want);
	free(t);
}

static void rows_wait_for_sync(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct sbrig_capture *cap;
	struct sbrig_sample s = { 1, 2, 3, 4, 5 };
	struct stat st0, st;
	int64_t now = sbrig_now_ns();

	tmp_path(dir, sizeof(dir), "cap-sync");
	cap = new_cap(dir, 1);
	snprintf(path, sizeof(path), "%s/samples.tsv", dir);
	assert_int_equal(stat(path, &st0), 0);
	assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	assert_int_equal(sbrig_capture_sync(cap, now), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, st0.st_size);	/* still buffered */
	assert_int_equal(sbrig_capture_sync(cap, now + 2000000000LL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, st0.st_size + strlen("1\t2\t3\t4\t5\n"));
	assert_int_equal(sbrig_capture_close(cap, "aborted"), 0);
	/* meta.ini.tmp never stays behind */
	snprintf(path, sizeof(path), "%s/meta.ini.tmp", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(sbrig_capture_close(NULL, "x"), 0);
}

static void existing_directory(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct sbrig_capture *cap;
	FILE *f;

	tmp_path(dir, sizeof(dir), "cap-empty");
	assert_int_equal(mkdir(dir, 0755), 0);
	cap = sbrig_capture_new(dir, &prov);	/* empty: fine */
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	tmp_path(dir, sizeof(dir), "cap-full");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/x", dir);
	f = fopen(path, "w");
	fclose(f);
	errno = 0;
	assert_null(sbrig_capture_new(dir, &prov));
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(sbrig_errmsg(), "exists and is not empty"));

	/* parents are created (sbrig_mkdir_p()), unless a file is in the way */
	tmp_path(dir, sizeof(dir), "new/parents/cap");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	snprintf(dir, sizeof(dir), "%s/dir/cap", path);	/* path: a file */
	assert_null(sbrig_capture_new(dir, &prov));
	assert_int_equal(errno, ENOTDIR);
	assert_non_null(strstr(sbrig_errmsg(), ": mkdir: Not a directory"));
}

/*
 * The child runs with a file size limit of @limit bytes: the samples file
 * hits it, the capture fails with EFBIG naming the file, later appends get
 * the same error, close still writes meta.ini. Exit status = first failed
 * check.
 */
static int efbig_child(const char *dir, unsigned int version, rlim_t limit)
{
	const struct sbrig_capture_opts o = { .version = version };
	const char *name = version == 1 ? "samples.tsv" : "samples.bin";
	struct rlimit rl = { limit, limit };
	struct sbrig_capture *cap;
	struct sbrig_event ev = { .type = "block", .arg = "x" };
	char want[64];
	int ret = 0, i;

	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 2;
	cap = sbrig_capture_new_opts(dir, &prov, &o);
	if (!cap)
		return 3;
	for (i = 0; i < 100000 && !ret; i++) {
		struct sbrig_sample s = { 1000000000000LL + i, 123456, 5000000,
					  1234560, 617280 };

		ret = sbrig_capture_add_samples(cap, &s, 1);
		if (!ret)
			ret = sbrig_capture_sync(cap, sbrig_now_ns() + i * 10000000LL);
	}
	if (ret != -EFBIG)
		return 4;
	snprintf(want, sizeof(want), "%s: write: File too large", name);
	if (!strstr(sbrig_errmsg(), want))
		return 5;
	if (sbrig_capture_add_event(cap, &ev) != -EFBIG)
		return 6;
	if (!strstr(sbrig_errmsg(), name))
		return 7;
	if (sbrig_capture_sync(cap, sbrig_now_ns() + 10000000000LL) != -EFBIG)
		return 8;
	if (sbrig_capture_close(cap, "failed: disk") != -EFBIG)
		return 9;
	return 0;
}

static void run_efbig_child(const char *dir, unsigned int version,
			    rlim_t limit)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(efbig_child(dir, version, limit));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* meta.ini [end] samples: the rows (records) the writer counted. */
static long long end_samples(const char *dir)
{
	char *t = slurp(dir, "meta.ini"), *p = strstr(t, "\nsamples = ");
	long long n = p ? atoll(p + strlen("\nsamples = ")) : -1;

	free(t);
	return n;
}

static void write_error_fails_cleanly(void **state)
{
	char dir[PATH_MAX];
	char *t, *line, *save = NULL;
	unsigned int rows = 0;

	tmp_path(dir, sizeof(dir), "cap-efbig");
	run_efbig_child(dir, 1, 64 * 1024);

	/* every row on disk is whole, and every whole row written stays */
	t = slurp(dir, "samples.tsv");
	assert_true(strlen(t) <= 64 * 1024);
	assert_true(strlen(t) > 64 * 1024 - strlen("1000000000000\t123456\t"
						   "5000000\t1234560\t617280\n"));
	assert_int_equal(t[strlen(t) - 1], '\n');
	for (line = strtok_r(t, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), rows++) {
		long long a, b, c, d, e;
		char extra;

		if (!rows)
			continue;
		assert_int_equal(sscanf(line, "%lld\t%lld\t%lld\t%lld\t%lld%c",
					&a, &b, &c, &d, &e, &extra), 5);
		assert_int_equal(a, 1000000000000LL + rows - 1);
	}
	assert_true(rows > 100);
	free(t);
	assert_int_equal(end_samples(dir), rows - 1);	/* the header */
	t = slurp(dir, "meta.ini");
	assert_non_null(strstr(t, "\n[end]\nstatus = failed: disk\n"));
	assert_non_null(strstr(t, "samples.tsv: write: File too large"));
	assert_non_null(strstr(t, "\nerrno = 27\n"));
	free(t);
}

/* ---- format version 2: samples.bin ---------------------------------------- */

/* Little-endian by hand (not the library's encoder). */
static void le(unsigned char *p, uint64_t v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The record capture-format.md describes for @s. */
static void want_record(unsigned char r[32], const struct sbrig_sample *s)
{
	le(r, (uint64_t)s->t_ns, 8);
	le(r + 8, (uint64_t)s->power_uW, 8);
	le(r + 16, (uint32_t)s->current_uA, 4);
	le(r + 20, (uint32_t)s->bus_uV, 4);
	le(r + 24, (uint32_t)s->shunt_nV, 4);
	le(r + 28, 0, 4);
}

static const unsigned char bin_header[32] = {
	'S', 'B', 'R', 'I', 'G', 'S', 'M', 'P',
	1, 0, 0, 0,	/* record format */
	32, 0, 0, 0,	/* record size */
	0, 0, 0, 0,	/* flags */
};

/* The whole of DIR/NAME (caller frees); its size in *@len. */
static unsigned char *slurp_bin(const char *dir, const char *name, size_t *len)
{
	char path[PATH_MAX];
	unsigned char *buf;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("%s: cannot open", path);
	assert_int_equal(fstat(fileno(f), &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	*len = fread(buf, 1, (size_t)st.st_size, f);
	assert_int_equal(*len, (size_t)st.st_size);
	fclose(f);
	return buf;
}

static void samples_bin_layout(void **state)
{
	static const struct sbrig_sample s[] = {
		{ 1000, 12345, 5000000, 1234500, 61725 },
		{ INT64_MIN, INT32_MIN, INT32_MAX, -1, INT64_MAX },
		{ -1, -10, 10, 9, -9223372036854775807LL },
		{ 0x0102030405060708LL, 0x11223344, -2, 0x7f, 0x1122334455667788LL },
	};
	struct sbrig_capture *cap;
	unsigned char want[32], *b;
	char dir[PATH_MAX], path[PATH_MAX + 16], *t;
	size_t len, i;

	tmp_path(dir, sizeof(dir), "cap-bin");
	cap = new_cap(dir, 2);
	assert_int_equal(sbrig_capture_add_samples(cap, s, 1), 0);
	assert_int_equal(sbrig_capture_add_samples(cap, s + 1, 3), 0);
	assert_int_equal(sbrig_capture_add_samples(cap, s, 0), 0);
	assert_int_equal(sbrig_capture_add_event(cap, &(struct sbrig_event){
		.type = "block", .arg = "x" }), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	b = slurp_bin(dir, "samples.bin", &len);
	assert_int_equal(len, 32 + 4 * 32);
	assert_memory_equal(b, bin_header, 32);
	for (i = 0; i < 4; i++) {
		want_record(want, &s[i]);
		assert_memory_equal(b + 32 + 32 * i, want, 32);
	}
	free(b);
	/* no samples.tsv; the other files stay text */
	snprintf(path, sizeof(path), "%s/samples.tsv", dir);
	assert_int_equal(access(path, F_OK), -1);
	t = slurp(dir, "events.tsv");
	assert_string_equal(t, "host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq"
			       "\ttype\targ\tcut\tobj\n0\t0\t0\t\t0\tblock\tx\t0\t0\n");
	free(t);
	t = slurp(dir, "meta.ini");
	assert_non_null(strstr(t, "[capture]\nformat = sbrig-capture\nversion = 2\n"));
	assert_non_null(strstr(t, "\nsamples = 4\ngaps = 0\nedges = 0\n"
				  "stimuli = 0\nevents = 1\n"));
	free(t);
}

/* Batches of every size, across buffer boundaries: records in order. */
static void samples_bin_batches(void **state)
{
	enum { N = 20000 };
	struct sbrig_sample *s = calloc(N, sizeof(*s));
	struct sbrig_capture *cap;
	unsigned char want[32], *b;
	char dir[PATH_MAX];
	size_t len, i, k, done = 0;

	for (i = 0; i < N; i++)
		s[i] = (struct sbrig_sample){ (int64_t)i * 285714, (int32_t)i,
			-(int32_t)i, (int32_t)(i * 7), (int64_t)i << 33 };
	tmp_path(dir, sizeof(dir), "cap-bin-batches");
	cap = new_cap(dir, 2);
	for (k = 1; done < N; k = k * 3 + 1) {
		size_t n = k % 5000 < N - done ? k % 5000 : N - done;

		assert_int_equal(sbrig_capture_add_samples(cap, s + done, n), 0);
		done += n;
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	b = slurp_bin(dir, "samples.bin", &len);
	assert_int_equal(len, 32 + (size_t)N * 32);
	for (i = 0; i < N; i++) {
		want_record(want, &s[i]);
		if (memcmp(b + 32 + 32 * i, want, 32))
			fail_msg("record %zu differs", i);
	}
	assert_int_equal(end_samples(dir), N);
	free(b);
	free(s);
}

static void samples_bin_waits_for_sync(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct sbrig_capture *cap;
	struct sbrig_sample s = { 1, 2, 3, 4, 5 };
	struct stat st;
	int64_t now = sbrig_now_ns();

	tmp_path(dir, sizeof(dir), "cap-bin-sync");
	cap = new_cap(dir, 2);
	snprintf(path, sizeof(path), "%s/samples.bin", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 32);	/* the header is on disk at once */
	assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	assert_int_equal(sbrig_capture_sync(cap, now), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 32);	/* still buffered */
	assert_int_equal(sbrig_capture_sync(cap, now + 2000000000LL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 64);
	assert_int_equal(sbrig_capture_close(cap, "aborted"), 0);
}

/*
 * The size limit falls in the middle of a record: the write that crosses
 * it is cut back to the last whole record, which stays on disk and is
 * counted in [end] samples.
 */
static void samples_bin_write_error(void **state)
{
	unsigned char want[32], *b;
	char dir[PATH_MAX], *t;
	size_t len, i, n;

	tmp_path(dir, sizeof(dir), "cap-bin-efbig");
	run_efbig_child(dir, 2, 64 * 1024 + 16);
	b = slurp_bin(dir, "samples.bin", &len);
	assert_true(len <= 64 * 1024 + 16);
	assert_int_equal((len - 32) % 32, 0);
	n = (len - 32) / 32;
	/* every whole record that fit stays: none of the last write is lost */
	assert_int_equal(n, (64 * 1024 + 16 - 32) / 32);
	assert_memory_equal(b, bin_header, 32);
	for (i = 0; i < n; i++) {
		struct sbrig_sample s = { 1000000000000LL + (int64_t)i, 123456,
					  5000000, 1234560, 617280 };

		want_record(want, &s);
		if (memcmp(b + 32 + 32 * i, want, 32))
			fail_msg("record %zu differs", i);
	}
	free(b);
	assert_int_equal(end_samples(dir), (long long)n);
	t = slurp(dir, "meta.ini");
	assert_non_null(strstr(t, "[capture]\nformat = sbrig-capture\nversion = 2\n"));
	assert_non_null(strstr(t, "\n[end]\nstatus = failed: disk\n"));
	assert_non_null(strstr(t, "samples.bin: write: File too large"));
	assert_non_null(strstr(t, "\nerrno = 27\n"));
	free(t);
}

static void versions(void **state)
{
	const struct sbrig_capture_opts bad = { .version = 3 };
	struct sbrig_capture *cap;
	char dir[PATH_MAX];

	tmp_path(dir, sizeof(dir), "cap-default");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_version(cap), SBRIG_CAPTURE_VERSION);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	tmp_path(dir, sizeof(dir), "cap-default-opts");
	cap = sbrig_capture_new_opts(dir, &prov, &(struct sbrig_capture_opts){ 0 });
	assert_non_null(cap);
	assert_int_equal(sbrig_capture_version(cap), SBRIG_CAPTURE_VERSION);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);

	tmp_path(dir, sizeof(dir), "cap-v3");
	errno = 0;
	assert_null(sbrig_capture_new_opts(dir, &prov, &bad));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "format version 3"));
	assert_int_equal(access(dir, F_OK), -1);	/* nothing created */
}

static unsigned int count(const char *hay, const char *needle)
{
	unsigned int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/*
 * Issue 7 §4.7: every HELLO with a new boot id appended a [target] section
 * (2000 HELLOs, 3001 sections, each a rewrite + fsync of meta.ini). An
 * identity already listed adds nothing; at most SBRIG_CAPTURE_MAX_TARGETS
 * are listed, the others are counted in [end] targets_not_listed. The
 * rewrite runs on the capture's sync thread (a slow disk must not stall
 * the daemon's loop), so the first check waits for it.
 */
static void target_sections_are_bounded(void **state)
{
	struct sbrig_capture *cap;
	char dir[PATH_MAX], boot[32], *t;
	unsigned int i;

	tmp_path(dir, sizeof(dir), "cap-targets");
	cap = sbrig_capture_new(dir, &prov);
	assert_non_null(cap);
	for (i = 0; i < 5; i++)		/* the same agent saying HELLO again */
		assert_int_equal(sbrig_capture_set_target(cap, "b-0", "6.1",
							  "0.1", "0.1"), 0);
	/* the module reloaded with another version: a new identity */
	assert_int_equal(sbrig_capture_set_target(cap, "b-0", "6.1", "0.2",
						  "0.1"), 0);
	/* meta.ini is rewritten off the caller's thread: soon, not at once */
	for (i = 0; i < 500; i++) {
		t = slurp(dir, "meta.ini");
		if (count(t, "[target]") == 2)
			break;
		free(t);
		t = NULL;
		usleep(10000);
	}
	assert_non_null(t);
	assert_int_equal(count(t, "[target]"), 2);
	free(t);
	for (i = 1; i < 2000; i++) {
		snprintf(boot, sizeof(boot), "b-%u", i);
		assert_int_equal(sbrig_capture_set_target(cap, boot, "6.1",
							  "0.1", "0.1"), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	t = slurp(dir, "meta.ini");
	assert_int_equal(count(t, "[target]"), SBRIG_CAPTURE_MAX_TARGETS);
	assert_non_null(strstr(t, "\nboot_id = b-62\n"));
	assert_null(strstr(t, "\nboot_id = b-63\n"));
	assert_non_null(strstr(t, "\ntargets_not_listed = 1937\n"));
	assert_non_null(strstr(t, "[end]\nstatus = complete\n"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(files_headers_and_rows),
		cmocka_unit_test(sample_rows_match_printf),
		cmocka_unit_test(rows_wait_for_sync),
		cmocka_unit_test(existing_directory),
		cmocka_unit_test(write_error_fails_cleanly),
		cmocka_unit_test(target_sections_are_bounded),
		cmocka_unit_test(samples_bin_layout),
		cmocka_unit_test(samples_bin_batches),
		cmocka_unit_test(samples_bin_waits_for_sync),
		cmocka_unit_test(samples_bin_write_error),
		cmocka_unit_test(versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
