// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the capture reader (lib/capture-read.c): a round trip of
 * everything capture.c writes in both format versions, the killed and cut
 * captures the format allows (a cut line, a cut samples.bin record), and
 * hostile files (each error names file:line and the column, or for
 * samples.bin the offset); the batch call against the single one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sbrig/capture-read.h>
#include <sbrig/capture.h>
#include <sbrig/sbrig.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *tmpdir(void)
{
	const char *t = getenv("SBRIG_TMPDIR");

	return t ? t : "/tmp";
}

static void write_file(const char *dir, const char *name, const char *text,
		       size_t len)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void append_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const struct sbrig_provenance prov = {
	.rig_name = "rt", .rig_config = "rig/rt.conf", .rig_sha256 = "ab12",
	.host_version = "v1-2-g3", .git_sha = "0123",
	.scenario = "odd\tname\\.scn", .scenario_sha256 = "cd34",
	.power_uri = "ip:127.0.0.1:30431", .target_uri = "tcp:127.0.0.1:1",
};

static struct sbrig_capture *new_cap(const char *dir, unsigned int version)
{
	const struct sbrig_capture_opts o = { .version = version };
	struct sbrig_capture *cap = sbrig_capture_new_opts(dir, &prov, &o);

	if (!cap)
		fail_msg("%s", sbrig_errmsg());
	return cap;
}

static const char *samples_name(unsigned int version)
{
	return version == 1 ? "samples.tsv" : "samples.bin";
}

/* Everything capture.c writes comes back as it went in. */
static void round_trip(unsigned int version)
{
	const struct sbrig_sample s[3] = {
		{ 1000, 12345, 5000000, 1234500, 61725 },
		{ INT64_MIN, INT32_MIN, INT32_MAX, -1, INT64_MAX },
		{ 3000, 0, 0, 0, 0 },
	};
	const struct sbrig_gap gap = { 2000, 5000, UINT64_MAX };
	struct sbrig_edge edge = { .t_ns = 3000, .rising = true, .seqno = 7 };
	struct sbrig_stimulus st = { .t_ns = 2500 };
	struct sbrig_event ev = {
		.host_t_ns = 4000, .uncert_ns = 150, .target_t_ns = 5012345678,
		.seq = UINT64_MAX, .cut = true,
	};
	struct sbrig_blocker_stats row = {
		.count = 3, .wake_count = 1, .active_since_ns = -1,
		.total_time_ns = 9, .sleep_time_ns = 0, .max_time_ns = 5,
		.last_change_ns = INT64_MAX,
	};
	const struct sbrig_capture_meta *m;
	struct sbrig_capture_clock_row c;
	struct sbrig_capfile_info info;
	struct sbrig_capread *cr;
	struct sbrig_capture *cap;
	struct sbrig_sample rs;
	struct sbrig_gap rg;
	struct sbrig_edge re;
	struct sbrig_stimulus rst;
	struct sbrig_event rev;
	struct sbrig_blocker_stats rrow;
	char dir[PATH_MAX];
	int64_t t;
	unsigned int i;

	strcpy(edge.line, "marker");
	strcpy(st.what, "press");
	strcpy(st.arg, "all bytes \x01\x7f\t\n\r\\ \xc3\xa9");
	strcpy(ev.boot_id, "b-1");
	strcpy(ev.type, "block");
	strcpy(ev.arg, "tab\there\nnl\\bs\x01");
	ev.obj = 41;
	memset(row.name, 'n', sizeof(row.name) - 1);	/* the longest name */
	snprintf(dir, sizeof(dir), "%s/rt-v%u", tmpdir(), version);
	cap = new_cap(dir, version);
	assert_int_equal(sbrig_capture_set_target(cap, "b-1", "6.1.0-18-amd64",
						  "0.1", "0.1"), 0);
	assert_int_equal(sbrig_capture_set_target(cap, "b-2", "k\tk", "-",
						  "0.2"), 0);
	assert_int_equal(sbrig_capture_add_samples(cap, s, 3), 0);
	assert_int_equal(sbrig_capture_add_gap(cap, &gap), 0);
	assert_int_equal(sbrig_capture_add_edge(cap, &edge), 0);
	assert_int_equal(sbrig_capture_add_stimulus(cap, &st), 0);
	assert_int_equal(sbrig_capture_add_event(cap, &ev), 0);
	assert_int_equal(sbrig_capture_add_stats(cap, 4500, &row), 0);
	assert_int_equal(sbrig_capture_add_clock(cap, 100, 300, 5000000200, 1), 0);
	assert_int_equal(sbrig_capture_add_clock(cap, 7, 7, -3, 0), 0);
	assert_int_equal(sbrig_capture_close(cap, "failed: x\ty"), 0);

	cr = sbrig_capread_open(dir);
	if (!cr)
		fail_msg("%s", sbrig_errmsg());
	assert_string_equal(sbrig_capread_dir(cr), dir);
	m = sbrig_capread_meta(cr);
	assert_int_equal(m->version, version);
	assert_string_equal(sbrig_capread_file_name(cr, SBRIG_CAPFILE_SAMPLES),
			    samples_name(version));
	assert_string_equal(sbrig_capread_file_name(cr, SBRIG_CAPFILE_CLOCK),
			    "clock.tsv");
	assert_true(m->created_realtime_ns > 0 && m->created_monotonic_ns > 0);
	assert_int_equal(strlen(m->created), 30);
	assert_memory_equal(&m->prov, &prov, sizeof(prov));
	assert_int_equal(m->ntargets, 2);
	assert_string_equal(m->targets[0].boot_id, "b-1");
	assert_string_equal(m->targets[0].kernel, "6.1.0-18-amd64");
	assert_string_equal(m->targets[1].kernel, "k\tk");
	assert_string_equal(m->targets[1].module, "-");
	assert_string_equal(m->targets[1].agent, "0.2");
	assert_true(m->targets[1].seen_monotonic_ns >= m->targets[0].seen_monotonic_ns);
	assert_true(m->ended);
	assert_string_equal(m->status, "failed: x\ty");
	assert_true(m->closed_monotonic_ns >= m->created_monotonic_ns);
	assert_string_equal(m->error, "");
	assert_int_equal(m->rows[SBRIG_CAPFILE_SAMPLES], 3);
	assert_int_equal(m->rows[SBRIG_CAPFILE_CLOCK], 2);
	assert_int_equal(m->targets_not_listed, 0);

	for (i = 0; i < 3; i++) {
		assert_int_equal(sbrig_capread_next_sample(cr, &rs), 1);
		assert_memory_equal(&rs, &s[i], sizeof(rs));
	}
	assert_int_equal(sbrig_capread_next_sample(cr, &rs), 0);
	assert_int_equal(sbrig_capread_next_sample(cr, &rs), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.rows, 3);
	assert_int_equal(info.line, version == 1 ? 4 : 0);
	assert_int_equal(info.cut_lines, 0);
	assert_int_equal(info.cut_bytes, 0);
	assert_true(info.eof);
	if (version == 2)
		assert_int_equal(info.offset, 32 + 3 * 32);
	assert_int_equal(sbrig_capread_next_gap(cr, &rg), 1);
	assert_memory_equal(&rg, &gap, sizeof(rg));
	assert_int_equal(sbrig_capread_next_edge(cr, &re), 1);
	assert_int_equal(re.t_ns, 3000);
	assert_string_equal(re.line, "marker");
	assert_true(re.rising);
	assert_int_equal(re.seqno, 7);
	assert_int_equal(sbrig_capread_next_stimulus(cr, &rst), 1);
	assert_int_equal(rst.t_ns, 2500);
	assert_string_equal(rst.what, "press");
	assert_string_equal(rst.arg, st.arg);
	assert_int_equal(sbrig_capread_next_event(cr, &rev), 1);
	assert_int_equal(rev.host_t_ns, 4000);
	assert_int_equal(rev.uncert_ns, 150);
	assert_int_equal(rev.target_t_ns, 5012345678);
	assert_int_equal(rev.seq, UINT64_MAX);
	assert_string_equal(rev.boot_id, "b-1");
	assert_string_equal(rev.type, "block");
	assert_string_equal(rev.arg, ev.arg);
	assert_true(rev.cut);
	assert_true(rev.obj == 41);
	assert_int_equal(sbrig_capread_next_event(cr, &rev), 0);
	assert_int_equal(sbrig_capread_next_stats(cr, &t, &rrow), 1);
	assert_int_equal(t, 4500);
	assert_memory_equal(&rrow, &row, sizeof(row));
	assert_int_equal(sbrig_capread_next_clock(cr, &c), 1);
	assert_int_equal(c.host_send_ns, 100);
	assert_int_equal(c.host_recv_ns, 300);
	assert_int_equal(c.target_ns, 5000000200);
	assert_true(c.retained);
	assert_int_equal(sbrig_capread_next_clock(cr, &c), 1);
	assert_int_equal(c.target_ns, -3);
	assert_false(c.retained);
	assert_int_equal(sbrig_capread_next_clock(cr, &c), 0);
	/* a second pass, in a batch */
	assert_int_equal(sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES), 0);
	assert_int_equal(sbrig_capread_next_sample(cr, &rs), 1);
	assert_memory_equal(&rs, &s[0], sizeof(rs));
	{
		struct sbrig_sample b[8];

		assert_int_equal(sbrig_capread_samples(cr, b, 8), 2);
		assert_memory_equal(b, &s[1], 2 * sizeof(b[0]));
		assert_int_equal(sbrig_capread_samples(cr, b, 8), 0);
	}
	sbrig_capread_close(cr);
	sbrig_capread_close(NULL);
	assert_string_equal(sbrig_capfile_name(SBRIG_CAPFILE_EVENTS), "events.tsv");
	assert_string_equal(sbrig_capfile_name(SBRIG_CAPFILE_SAMPLES), "samples.tsv");
}

static void round_trip_v1(void **state)
{
	round_trip(1);
}

static void round_trip_v2(void **state)
{
	round_trip(2);
}

/* A write cut short by kill -9: the last line is ignored and counted. */
static void cut_last_line_and_killed_writer(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_capread *cr;
	struct sbrig_capfile_info info;
	struct sbrig_sample s = { 1, 2, 3, 4, 5 }, r;
	char dir[PATH_MAX];
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/cut", tmpdir());
	cap = new_cap(dir, 1);
	assert_int_equal(sbrig_capture_add_samples(cap, &s, 1), 0);
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	append_file(dir, "samples.tsv", "2000\t12");	/* no newline */
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	while (sbrig_capread_next_sample(cr, &r) == 1)
		n++;
	assert_int_equal(n, 1);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, strlen("2000\t12"));
	assert_int_equal(info.rows, 1);
	sbrig_capread_close(cr);

	/* the checked-in capture of a killed writer: no [end] */
	snprintf(dir, sizeof(dir), "%s/captures/killed",
		 getenv("SBRIG_FIXTURES") ? getenv("SBRIG_FIXTURES") :
		 "../../tests/fixtures");
	cr = sbrig_capread_open(dir);
	if (!cr)
		fail_msg("%s", sbrig_errmsg());
	assert_false(sbrig_capread_meta(cr)->ended);
	assert_int_equal(sbrig_capread_meta(cr)->rows[0], -1);
	for (n = 0; sbrig_capread_next_sample(cr, &r) == 1; n++)
		;
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_true(info.eof && info.rows == (uint64_t)n);
	sbrig_capread_close(cr);
}

#define META "[capture]\nformat = sbrig-capture\nversion = 1\n\n[provenance]\nrig_name = x\n"
#define H_SAMPLES "t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW\n"
#define H_EVENTS "host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut\n"
/* since issue 23: the blocker object's id appended */
#define H_EVENTS_OBJ "host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut\tobj\n"
#define H_EDGES "t_ns\tline\tedge\tseqno\n"
#define H_STATS "t_ns\tname\tcount\twake_count\tactive_since_ns\ttotal_time_ns\tsleep_time_ns\tmax_time_ns\tlast_change_ns\n"

/**
 * struct hostile - one bad capture
 * @file: the file to write (the others are good and empty)
 * @text: its content
 * @err: expected -errno (of open for meta.ini, of the first read else)
 * @msg: expected message after "DIR/"
 * @len: length of @text if it holds a NUL (0: strlen)
 */
struct hostile {
	const char *file;
	const char *text;
	int err;
	const char *msg;
	size_t len;
};

#define NUL_META "[capture]\nformat = sbrig-capture\nversion = 1\nx\0y = 1\n"

static const struct hostile hostile[] = {
	{ "samples.tsv", "t_ns\tcurrent\n", EINVAL,
	  "samples.tsv:1: header: expected 't_ns\tcurrent_uA", 0 },
	{ "samples.tsv", "", EINVAL, "samples.tsv:1: no header line", 0 },
	{ "samples.tsv", "t_ns\tcurrent_uA", EINVAL, "samples.tsv:1: no header line", 0 },
	{ "samples.tsv", H_SAMPLES "1\t2\t3\n", EINVAL,
	  "samples.tsv:2: 3 columns, expected 5", 0 },
	{ "samples.tsv", H_SAMPLES "1\t2\t3\t4\t5\t6\n", EINVAL,
	  "samples.tsv:2: more than 5 columns", 0 },
	{ "samples.tsv", H_SAMPLES "1\t2\t3\t4\t5\n1\tx\t3\t4\t5\n", EINVAL,
	  "samples.tsv:3: column 2 (current_uA): 'x': not a 32-bit integer", 0 },
	{ "samples.tsv", H_SAMPLES "1\t2147483648\t3\t4\t5\n", EINVAL,
	  "samples.tsv:2: column 2 (current_uA): '2147483648': not a 32-bit integer", 0 },
	{ "samples.tsv", H_SAMPLES "9223372036854775808\t2\t3\t4\t5\n", EINVAL,
	  "samples.tsv:2: column 1 (t_ns): '9223372036854775808': not a 64-bit integer", 0 },
	{ "samples.tsv", H_SAMPLES "-\t2\t3\t4\t5\n", EINVAL,
	  "samples.tsv:2: column 1 (t_ns): '-': not a 64-bit integer", 0 },
	{ "samples.tsv", H_SAMPLES " 1\t2\t3\t4\t5\n", EINVAL,
	  "samples.tsv:2: column 1 (t_ns): ' 1'", 0 },
	{ "samples.tsv", H_SAMPLES "1\t2\t3\t4\t5\r\n", EINVAL,
	  "samples.tsv:2: column 5 (power_uW): '5\r'", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\tx\\qy\t0\n", EINVAL,
	  "events.tsv:2: column 7 (arg): bad escape at byte 2", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\tx\\x0\t0\n", EINVAL,
	  "events.tsv:2: column 7 (arg): bad \\x escape", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\t\\x00\t0\n", EINVAL,
	  "events.tsv:2: column 7 (arg): bad \\x escape", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\tx\\\t0\n", EINVAL,
	  "events.tsv:2: column 7 (arg): bad escape", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\t\x01\t0\n", EINVAL,
	  "events.tsv:2: column 7 (arg): control byte 0x01 not escaped", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\tx\t2\n", EINVAL,
	  "events.tsv:2: column 8 (cut): '2': expected 1 or 0", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t-4\tblock\tx\t0\n", EINVAL,
	  "events.tsv:2: column 5 (seq): '-4': not an unsigned 64-bit integer", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblockblockblock\tx\t0\n", EINVAL,
	  "events.tsv:2: column 6 (type): longer than 11 bytes", 0 },
	{ "events.tsv", H_EVENTS_OBJ "1\t2\t3\tb\t4\tblock\tx\t0\t-1\n", EINVAL,
	  "events.tsv:2: column 9 (obj): '-1': not an unsigned 64-bit integer", 0 },
	{ "events.tsv", H_EVENTS_OBJ "1\t2\t3\tb\t4\tblock\tx\t0\n", EINVAL,
	  "events.tsv:2: 8 columns, expected 9", 0 },
	{ "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\tx\t0\t7\n", EINVAL,
	  "events.tsv:2: more than 8 columns", 0 },
	{ "events.tsv", "host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut\tobj\tx\n",
	  EINVAL, "events.tsv:1: header: expected 'host_t_ns\tuncert_ns\ttarget_t_ns"
	  "\tboot_id\tseq\ttype\targ\tcut\tobj'", 0 },
	{ "edges.tsv", H_EDGES "1\tmarker\tup\t0\n", EINVAL,
	  "edges.tsv:2: column 3 (edge): 'up': expected rising or falling", 0 },
	{ "meta.ini", "[capture]\nversion = 1\n", EINVAL,
	  "meta.ini: no [capture] format = sbrig-capture", 0 },
	{ "meta.ini", "[capture]\nformat = sbrig-capture\nversion = 3\n",
	  EPROTONOSUPPORT, "meta.ini: [capture] version 3: this reader knows versions 1 and 2", 0 },
	{ "meta.ini", META "junk\n", EINVAL,
	  "meta.ini:7: expected [section] or key = value", 0 },
	{ "meta.ini", "version = 1\n", EINVAL,
	  "meta.ini:1: 'version': key outside of any section", 0 },
	{ "meta.ini", "[capture]\nformat = sbrig-capture\nversion = one\n", EINVAL,
	  "meta.ini:3: [capture] version: 'one': not a number", 0 },
	{ "meta.ini", META "[capture]\n", EINVAL,
	  "meta.ini:7: [capture]: section given twice", 0 },
	{ "meta.ini", META "rig_name = y\n", EINVAL,
	  "meta.ini:7: [provenance] rig_name: set twice", 0 },
	{ "meta.ini", META "git_sha = \\z\n", EINVAL,
	  "meta.ini:7: [provenance] git_sha: bad escape", 0 },
	{ "meta.ini", META "[end]\nsamples = -1\n", EINVAL,
	  "meta.ini:8: [end] samples: '-1': not a number", 0 },
	{ "meta.ini", META "[end]\nsensor_tail_lost = 2\n", EINVAL,
	  "meta.ini: [end] sensor_tail_lost: 2: expected 0 or 1", 0 },
	{ "meta.ini", META "[end]\nsensor_tail_lost = 1\n"
	  "sensor_tail_lost_from_ns = 5\nsensor_tail_lost_to_ns = 4\n", EINVAL,
	  "meta.ini: [end] sensor_tail_lost_to_ns 4 is before "
	  "sensor_tail_lost_from_ns 5", 0 },
	{ "meta.ini", NUL_META, EINVAL, "meta.ini:4: NUL byte",
	  sizeof(NUL_META) - 1 },
};

static void hostile_files_name_file_line_and_column(void **state)
{
	static const char *const files[] = {
		"samples.tsv", "gaps.tsv", "edges.tsv", "stimuli.tsv",
		"events.tsv", "stats.tsv", "clock.tsv",
	};
	static const char *const headers[] = {
		H_SAMPLES, "t_ns\tnext_t_ns\tmissing\n", H_EDGES,
		"t_ns\twhat\targ\n", H_EVENTS, H_STATS,
		"host_send_ns\thost_recv_ns\ttarget_ns\tretained\n",
	};
	size_t i, j;

	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		const struct hostile *h = &hostile[i];
		char dir[PATH_MAX], want[PATH_MAX + 200];
		struct sbrig_capread *cr;
		struct sbrig_sample s;
		struct sbrig_event ev;
		struct sbrig_edge e;
		int ret;
		size_t len = h->len ? h->len : strlen(h->text);
		snprintf(dir, sizeof(dir), "%s/hostile-%zu", tmpdir(), i);
		mkdir(dir, 0755);
		write_file(dir, "meta.ini", META, strlen(META));
		for (j = 0; j < 7; j++)
			write_file(dir, files[j], headers[j], strlen(headers[j]));
		write_file(dir, h->file, h->text, len);
		snprintf(want, sizeof(want), "%s/%s", dir, h->msg);
		cr = sbrig_capread_open(dir);
		if (!strcmp(h->file, "meta.ini")) {
			ret = cr ? 0 : -errno;
		} else {
			assert_non_null(cr);
			do {
				if (!strcmp(h->file, "samples.tsv"))
					ret = sbrig_capread_next_sample(cr, &s);
				else if (!strcmp(h->file, "events.tsv"))
					ret = sbrig_capread_next_event(cr, &ev);
				else
					ret = sbrig_capread_next_edge(cr, &e);
			} while (ret == 1);
		}
		if (ret != -h->err || strncmp(sbrig_errmsg(), want, strlen(want)))
			fail_msg("case %zu: got %d '%s', want %d '%s...'", i, ret,
				 sbrig_errmsg(), -h->err, want);
		/* sticky */
		if (cr && !strcmp(h->file, "samples.tsv"))
			assert_int_equal(sbrig_capread_next_sample(cr, &s), ret);
		sbrig_capread_close(cr);
	}
}

/* The whole meta.ini of a closed capture, for a look at its keys. */
static void read_meta_text(const char *dir, char *buf, size_t size)
{
	char path[PATH_MAX];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/meta.ini", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/*
 * A sensor that did not deliver its tail at the stop: [end] says so, from
 * the last sample (none: the creation) to the stop, never backwards; a
 * capture that lost nothing has none of the keys.
 */
static void sensor_tail_lost(void **state)
{
	const struct sbrig_sample s[2] = {
		{ 5000, 1, 1, 1, 1 }, { 7000, 1, 1, 1, 1 },
	};
	static const struct {
		size_t nsamples;	/* of @s */
		bool lost;
		int64_t stop_ns;
		int64_t from_ns, to_ns;	/* -1: the creation */
	} cases[] = {
		{ 2, true, 250007000, 7000, 250007000 },
		{ 2, true, 6000, 7000, 7000 },	/* a sample past the stop */
		{ 0, true, INT64_MAX, -1, INT64_MAX },
		{ 2, false, 0, 0, 0 },
	};
	char text[8192];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct sbrig_capture_meta *m;
		struct sbrig_capread *cr;
		struct sbrig_capture *cap;
		char dir[PATH_MAX];
		int64_t from;

		snprintf(dir, sizeof(dir), "%s/tail-%zu", tmpdir(), i);
		cap = new_cap(dir, 2);
		assert_int_equal(sbrig_capture_add_samples(cap, s,
						cases[i].nsamples), 0);
		if (cases[i].lost)
			assert_int_equal(sbrig_capture_set_sensor_tail_lost(cap,
						cases[i].stop_ns), 0);
		assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
		cr = sbrig_capread_open(dir);
		assert_non_null(cr);
		m = sbrig_capread_meta(cr);
		from = cases[i].from_ns < 0 ? m->created_monotonic_ns :
			cases[i].from_ns;
		assert_int_equal(m->sensor_tail_lost, cases[i].lost);
		assert_int_equal(m->sensor_tail_lost_from_ns, from);
		assert_int_equal(m->sensor_tail_lost_to_ns, cases[i].to_ns);
		assert_int_equal(m->rows[SBRIG_CAPFILE_SAMPLES],
				 (int64_t)cases[i].nsamples);
		sbrig_capread_close(cr);
		read_meta_text(dir, text, sizeof(text));
		if (!cases[i].lost)	/* absent, not 0 */
			assert_null(strstr(text, "sensor_tail_lost"));
	}
}

/* A capture from before issue 23 (no obj column) reads with obj 0. */
static void events_without_the_obj_column(void **state)
{
	struct sbrig_capread *cr;
	struct sbrig_event ev;
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/events-old", tmpdir());
	mkdir(dir, 0755);
	write_file(dir, "meta.ini", META, strlen(META));
	write_file(dir, "events.tsv", H_EVENTS "1\t2\t3\tb\t4\tblock\tevdev\t0\n",
		   strlen(H_EVENTS) + 24);
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	memset(&ev, 0xff, sizeof(ev));
	assert_int_equal(sbrig_capread_next_event(cr, &ev), 1);
	assert_string_equal(ev.arg, "evdev");
	assert_true(ev.obj == 0 && !ev.cut && ev.seq == 4);
	assert_int_equal(sbrig_capread_next_event(cr, &ev), 0);
	sbrig_capread_close(cr);
	/* and with it */
	write_file(dir, "events.tsv", H_EVENTS_OBJ "1\t2\t3\tb\t4\tblock\tevdev\t0\t9\n",
		   strlen(H_EVENTS_OBJ) + 26);
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	assert_int_equal(sbrig_capread_next_event(cr, &ev), 1);
	assert_true(ev.obj == 9 && ev.seq == 4);
	sbrig_capread_close(cr);
}

static void missing_files_and_long_lines(void **state)
{
	struct sbrig_capread *cr;
	struct sbrig_sample s;
	char dir[PATH_MAX], path[PATH_MAX + 16], *big;
	int ret;

	snprintf(dir, sizeof(dir), "%s/missing", tmpdir());
	mkdir(dir, 0755);
	assert_null(sbrig_capread_open(dir));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(sbrig_errmsg(), "/missing/meta.ini: No such file"));
	write_file(dir, "meta.ini", META, strlen(META));
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	assert_int_equal(sbrig_capread_next_sample(cr, &s), -ENOENT);
	assert_non_null(strstr(sbrig_errmsg(), "/missing/samples.tsv: No such file"));
	sbrig_capread_close(cr);

	/* a line longer than the reader's buffer */
	big = malloc(70000 + sizeof(H_SAMPLES));
	strcpy(big, H_SAMPLES);
	memset(big + strlen(H_SAMPLES), '1', 70000);
	big[strlen(H_SAMPLES) + 70000 - 1] = '\n';
	write_file(dir, "samples.tsv", big, strlen(H_SAMPLES) + 70000);
	free(big);
	cr = sbrig_capread_open(dir);
	ret = sbrig_capread_next_sample(cr, &s);
	assert_int_equal(ret, -EINVAL);
	snprintf(path, sizeof(path), "%s/samples.tsv:2: line longer than", dir);
	assert_true(!strncmp(sbrig_errmsg(), path, strlen(path)));
	sbrig_capread_close(cr);
	/* a directory where a file should be */
	unlink(strcat(strcpy(path, dir), "/events.tsv"));
	mkdir(path, 0755);
	cr = sbrig_capread_open(dir);
	assert_int_equal(sbrig_capread_next_event(cr, &(struct sbrig_event){ 0 }),
			 -EINVAL);
	assert_non_null(strstr(sbrig_errmsg(), "events.tsv: not a regular file"));
	sbrig_capread_close(cr);
}

/* Many samples: streamed, the buffer refilled across row boundaries. */
static void many_samples_stream(void **state)
{
	struct sbrig_capture *cap;
	struct sbrig_capread *cr;
	struct sbrig_sample s[1000], r;
	char dir[PATH_MAX];
	int64_t want = 0;
	unsigned int i, k;

	snprintf(dir, sizeof(dir), "%s/many", tmpdir());
	cap = new_cap(dir, 1);
	for (k = 0; k < 200; k++) {
		for (i = 0; i < 1000; i++)
			s[i] = (struct sbrig_sample){ k * 1000 + i, (int32_t)i,
				-(int32_t)i, 7, (int64_t)k << 40 };
		assert_int_equal(sbrig_capture_add_samples(cap, s, 1000), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	while (sbrig_capread_next_sample(cr, &r) == 1) {
		assert_int_equal(r.t_ns, want);
		assert_int_equal(r.current_uA, want % 1000);
		assert_int_equal(r.power_uW, (want / 1000) << 40);
		want++;
	}
	assert_int_equal(want, 200000);
	assert_int_equal(sbrig_capread_meta(cr)->rows[SBRIG_CAPFILE_SAMPLES],
			 200000);
	sbrig_capread_close(cr);
}

/* ---- format version 2: samples.bin ---------------------------------------- */

/* Sample @i of a test capture: every field depends on @i. */
static struct sbrig_sample sample_of(uint64_t i)
{
	struct sbrig_sample s;

	memset(&s, 0, sizeof(s));
	s.t_ns = (int64_t)(i * 285714 + 1);
	s.current_uA = (int32_t)(i * 7) - 1000000;
	s.bus_uV = -(int32_t)i;
	s.shunt_nV = (int32_t)(i ^ 0x5a5a5a);
	s.power_uW = (int64_t)i << 31 | 3;
	return s;
}

static void write_many(const char *dir, unsigned int version, size_t n)
{
	struct sbrig_sample b[1000];
	struct sbrig_capture *cap = new_cap(dir, version);
	size_t i, k;

	for (i = 0; i < n; i += k) {
		k = n - i < 1000 ? n - i : 1000;
		for (size_t j = 0; j < k; j++)
			b[j] = sample_of(i + j);
		assert_int_equal(sbrig_capture_add_samples(cap, b, k), 0);
	}
	assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
}

/*
 * Batches of every size (below, at and above the direct-read threshold)
 * mixed with single reads return every sample once, in order, from both
 * versions.
 */
static void batches_and_single_reads(void **state)
{
	static const size_t sizes[] = { 1, 7, 2047, 0, 2048, 2049, 1, 5000,
					65536, 3, 100000 };
	const size_t n[] = { [1] = 20000, [2] = 300000 };
	struct sbrig_sample *buf = malloc(100000 * sizeof(*buf)), want;
	struct sbrig_capfile_info info;
	unsigned int version;

	for (version = 1; version <= 2; version++) {
		struct sbrig_capread *cr;
		char dir[PATH_MAX];
		size_t idx = 0, i = 0, j;
		ssize_t got;

		snprintf(dir, sizeof(dir), "%s/batches-v%u", tmpdir(), version);
		write_many(dir, version, n[version]);
		cr = sbrig_capread_open(dir);
		assert_non_null(cr);
		for (;;) {
			size_t want_n = sizes[i++ % ARRAY_SIZE(sizes)];

			if (!want_n) {	/* a single read */
				got = sbrig_capread_next_sample(cr, buf);
			} else {
				got = sbrig_capread_samples(cr, buf, want_n);
				if (idx + want_n <= n[version])
					assert_int_equal(got, want_n);
			}
			assert_true(got >= 0);
			if (!got)
				break;
			for (j = 0; j < (size_t)got; j++, idx++) {
				want = sample_of(idx);
				if (memcmp(&buf[j], &want, sizeof(want)))
					fail_msg("v%u: sample %zu differs", version,
						 idx);
			}
		}
		assert_int_equal(idx, n[version]);
		assert_int_equal(sbrig_capread_samples(cr, buf, 10), 0);
		sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
		assert_int_equal(info.rows, n[version]);
		assert_true(info.eof);
		assert_int_equal(info.cut_lines, 0);
		assert_int_equal(sbrig_capread_meta(cr)->rows[SBRIG_CAPFILE_SAMPLES],
				 n[version]);
		sbrig_capread_close(cr);
	}
	free(buf);
}

/*
 * kill -9 in the middle of a write: the bytes of a record the writer did
 * not finish are ignored and counted, by the single and the batch call
 * (whose direct read ends in them).
 */
static void cut_last_record(void **state)
{
	struct sbrig_sample *buf = malloc(10000 * sizeof(*buf)), want;
	struct sbrig_capfile_info info;
	struct sbrig_capread *cr;
	char dir[PATH_MAX];
	size_t i;

	snprintf(dir, sizeof(dir), "%s/cut-bin", tmpdir());
	write_many(dir, 2, 5000);
	append_file(dir, "samples.bin", "0123456789abcdef");	/* 16 bytes */
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	for (i = 0; sbrig_capread_next_sample(cr, buf) == 1; i++) {
		want = sample_of(i);
		assert_memory_equal(buf, &want, sizeof(want));
	}
	assert_int_equal(i, 5000);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, 16);
	assert_int_equal(info.rows, 5000);
	assert_int_equal(info.offset, 32 + 5000 * 32);
	assert_true(info.eof);

	assert_int_equal(sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.cut_lines, 0);
	assert_int_equal(sbrig_capread_samples(cr, buf, 10000), 5000);
	for (i = 0; i < 5000; i++) {
		want = sample_of(i);
		if (memcmp(&buf[i], &want, sizeof(want)))
			fail_msg("sample %zu differs", i);
	}
	assert_int_equal(sbrig_capread_samples(cr, buf, 10000), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, 16);
	sbrig_capread_close(cr);

	/* nothing but the header and a cut record */
	snprintf(dir, sizeof(dir), "%s/cut-bin-0", tmpdir());
	write_many(dir, 2, 0);
	append_file(dir, "samples.bin", "x");
	cr = sbrig_capread_open(dir);
	assert_int_equal(sbrig_capread_samples(cr, buf, 10000), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, 1);
	assert_int_equal(info.rows, 0);
	sbrig_capread_close(cr);
	free(buf);
}

/* The sample after seeking to @t must be sample @want (n: none). */
static void seek_expect(struct sbrig_capread *cr, int64_t t, size_t want,
			size_t n)
{
	struct sbrig_sample got, exp = sample_of(want);
	struct sbrig_capfile_info info;

	assert_int_equal(sbrig_capread_seek_samples(cr, t), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.rows, want);
	assert_int_equal(info.offset, 32 + want * 32);
	assert_false(info.eof);
	if (want == n) {
		assert_int_equal(sbrig_capread_next_sample(cr, &got), 0);
		return;
	}
	assert_int_equal(sbrig_capread_next_sample(cr, &got), 1);
	if (memcmp(&got, &exp, sizeof(exp)))
		fail_msg("seek to %lld: sample %lld, expected sample %zu",
			 (long long)t, (long long)got.t_ns, want);
}

/*
 * sbrig_capread_seek_samples(): the first sample at or after the time,
 * forwards and backwards, then streaming on in batches and single reads;
 * the ends; a cut last record (never sought to, counted when the stream
 * reaches it); the checked-in capture of a writer killed mid-record;
 * samples with gaps (the search's guesses miss); version 1: EOPNOTSUPP,
 * the stream unchanged.
 */
static void seek_samples(void **state)
{
	const size_t n = 300000;
	static const size_t at[] = { 0, 1, 2047, 2048, 2049, 150000, 7, 299998,
				     299999, 123456, 65536, 1000 };
	struct sbrig_sample *buf = malloc(10000 * sizeof(*buf)), want;
	const char *fx = getenv("SBRIG_FIXTURES") ? getenv("SBRIG_FIXTURES") :
			 "../../tests/fixtures";
	struct sbrig_capfile_info info;
	struct sbrig_capread *cr;
	char dir[PATH_MAX];
	size_t i, j;
	ssize_t got;

	snprintf(dir, sizeof(dir), "%s/seek-v2", tmpdir());
	write_many(dir, 2, n);
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	for (i = 0; i < ARRAY_SIZE(at); i++) {
		int64_t t = sample_of(at[i]).t_ns;

		seek_expect(cr, t, at[i], n);		/* exactly its time */
		seek_expect(cr, t - 1, at[i], n);	/* just before it */
		seek_expect(cr, t + 1, at[i] + 1, n);	/* just after it */
		/* ... and the stream goes on from there, in a batch */
		assert_int_equal(sbrig_capread_seek_samples(cr, t), 0);
		got = sbrig_capread_samples(cr, buf, 5000);
		assert_int_equal(got, n - at[i] < 5000 ? n - at[i] : 5000);
		for (j = 0; j < (size_t)got; j++) {
			want = sample_of(at[i] + j);
			if (memcmp(&buf[j], &want, sizeof(want)))
				fail_msg("seek %zu: sample %zu differs", at[i], j);
		}
	}
	seek_expect(cr, INT64_MIN, 0, n);
	seek_expect(cr, sample_of(n - 1).t_ns + 1, n, n);
	seek_expect(cr, INT64_MAX, n, n);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_true(info.eof);
	assert_int_equal(info.cut_lines, 0);
	/* rewind after a seek: from the first again */
	assert_int_equal(sbrig_capread_rewind(cr, SBRIG_CAPFILE_SAMPLES), 0);
	assert_int_equal(sbrig_capread_next_sample(cr, buf), 1);
	want = sample_of(0);
	assert_memory_equal(buf, &want, sizeof(want));
	sbrig_capread_close(cr);

	/* a cut last record: sought past, ignored and counted at the end */
	append_file(dir, "samples.bin", "0123456789abcdef");
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	seek_expect(cr, INT64_MAX, n, n);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_true(info.eof);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, 16);
	assert_int_equal(info.rows, n);
	seek_expect(cr, sample_of(n - 2).t_ns, n - 2, n);
	assert_int_equal(sbrig_capread_samples(cr, buf, 10000), 1);
	want = sample_of(n - 1);
	assert_memory_equal(buf, &want, sizeof(want));
	assert_int_equal(sbrig_capread_samples(cr, buf, 10000), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, 16);
	assert_int_equal(info.rows, n);
	assert_int_equal(info.offset, 32 + n * 32);
	sbrig_capread_close(cr);

	/* nothing but the header and a cut record: every seek is the end */
	snprintf(dir, sizeof(dir), "%s/seek-v2-0", tmpdir());
	write_many(dir, 2, 0);
	append_file(dir, "samples.bin", "x");
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	assert_int_equal(sbrig_capread_seek_samples(cr, 0), 0);
	assert_int_equal(sbrig_capread_samples(cr, buf, 10), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.rows, 0);
	assert_int_equal(info.cut_lines, 1);
	sbrig_capread_close(cr);

	/* the capture of a writer killed mid-record (11 bytes of a record) */
	snprintf(dir, sizeof(dir), "%s/captures/killed-v2", fx);
	cr = sbrig_capread_open(dir);
	if (!cr)
		fail_msg("%s", sbrig_errmsg());
	assert_int_equal(sbrig_capread_samples(cr, buf, 16), 3);
	for (i = 3; i-- > 0;) {
		struct sbrig_sample s;

		assert_int_equal(sbrig_capread_seek_samples(cr, buf[i].t_ns), 0);
		assert_int_equal(sbrig_capread_next_sample(cr, &s), 1);
		assert_memory_equal(&s, &buf[i], sizeof(s));
	}
	assert_int_equal(sbrig_capread_seek_samples(cr, buf[2].t_ns + 1), 0);
	assert_int_equal(sbrig_capread_next_sample(cr, buf + 3), 0);
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	assert_int_equal(info.rows, 3);
	assert_int_equal(info.cut_lines, 1);
	assert_int_equal(info.cut_bytes, 11);
	sbrig_capread_close(cr);

	/* gaps: samples at an uneven rate (the first guesses miss) */
	snprintf(dir, sizeof(dir), "%s/seek-gaps", tmpdir());
	{
		struct sbrig_capture *cap = new_cap(dir, 2);

		for (i = 0; i < 50000; i++) {
			memset(&want, 0, sizeof(want));
			want.t_ns = i < 40000 ? (int64_t)i : (int64_t)i * 1000000;
			want.power_uW = (int64_t)i;
			assert_int_equal(sbrig_capture_add_samples(cap, &want, 1), 0);
		}
		assert_int_equal(sbrig_capture_close(cap, "complete"), 0);
	}
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	for (i = 0; i < 50000; i += 997) {
		int64_t t = i < 40000 ? (int64_t)i : (int64_t)i * 1000000;

		assert_int_equal(sbrig_capread_seek_samples(cr, t), 0);
		assert_int_equal(sbrig_capread_next_sample(cr, &want), 1);
		assert_int_equal(want.power_uW, (int64_t)i);
		if (i >= 40000) {	/* inside a gap: the sample after it */
			assert_int_equal(sbrig_capread_seek_samples(cr, t - 1), 0);
			assert_int_equal(sbrig_capread_next_sample(cr, &want), 1);
			assert_int_equal(want.power_uW, (int64_t)i);
		}
	}
	sbrig_capread_close(cr);

	/* version 1: not supported, and the stream is not disturbed */
	snprintf(dir, sizeof(dir), "%s/seek-v1", tmpdir());
	write_many(dir, 1, 100);
	cr = sbrig_capread_open(dir);
	assert_non_null(cr);
	assert_int_equal(sbrig_capread_next_sample(cr, buf), 1);
	assert_int_equal(sbrig_capread_seek_samples(cr, 0), -EOPNOTSUPP);
	assert_non_null(strstr(sbrig_errmsg(), "samples.tsv: seek"));
	assert_int_equal(sbrig_capread_samples(cr, buf, 200), 99);
	want = sample_of(1);
	assert_memory_equal(buf, &want, sizeof(want));
	sbrig_capread_close(cr);
	free(buf);
}

#define META2 "[capture]\nformat = sbrig-capture\nversion = 2\n"
#define BIN_HDR(fmt, size, flags) \
	"SBRIGSMP" fmt "\0\0\0" size "\0\0\0" flags "\0\0\0" \
	"\0\0\0\0\0\0\0\0\0\0\0\0"

static const struct hostile hostile_bin[] = {
	{ "samples.bin", "", EINVAL,
	  "samples.bin: offset 0: no header (0 bytes, expected 32)", 0 },
	{ "samples.bin", "SBRIGSMP\1\0", EINVAL,
	  "samples.bin: offset 10: no header (10 bytes, expected 32)", 10 },
	{ "samples.bin", "SBRIGSMQ\1\0\0\0 \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
	  "\0\0\0\0\0\0", EINVAL,
	  "samples.bin: offset 0: 'SBRIGSMQ': not a samples file (expected 'SBRIGSMP')",
	  32 },
	{ "samples.bin", "t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW\n", EINVAL,
	  "samples.bin: offset 0: 't_ns.cur': not a samples file", 0 },
	{ "samples.bin", BIN_HDR("\2", " ", "\0"), EPROTONOSUPPORT,
	  "samples.bin: offset 8: record format 2: this reader knows format 1", 32 },
	{ "samples.bin", BIN_HDR("\1", "0", "\0"), EINVAL,
	  "samples.bin: offset 12: record size 48, expected 32", 32 },
	{ "samples.bin", BIN_HDR("\1", "\x18", "\0"), EINVAL,
	  "samples.bin: offset 12: record size 24, expected 32", 32 },
	{ "samples.bin", BIN_HDR("\1", " ", "\1"), EPROTONOSUPPORT,
	  "samples.bin: offset 16: flags 0x1: this reader knows none", 32 },
	/* a version 2 capture without samples.bin */
	{ "samples.tsv", H_SAMPLES "1\t2\t3\t4\t5\n", ENOENT,
	  "samples.bin: No such file or directory", 0 },
};

static void hostile_samples_bin_name_file_and_offset(void **state)
{
	static const char *const files[] = {
		"gaps.tsv", "edges.tsv", "stimuli.tsv", "events.tsv",
		"stats.tsv", "clock.tsv",
	};
	static const char *const headers[] = {
		"t_ns\tnext_t_ns\tmissing\n", H_EDGES, "t_ns\twhat\targ\n",
		H_EVENTS, H_STATS,
		"host_send_ns\thost_recv_ns\ttarget_ns\tretained\n",
	};
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(hostile_bin); i++) {
		const struct hostile *h = &hostile_bin[i];
		char dir[PATH_MAX], want[PATH_MAX + 200];
		struct sbrig_capread *cr;
		struct sbrig_sample s[4];
		struct sbrig_event ev;
		int ret;
		size_t len = h->len ? h->len : strlen(h->text);

		snprintf(dir, sizeof(dir), "%s/hostile-bin-%zu", tmpdir(), i);
		mkdir(dir, 0755);
		write_file(dir, "meta.ini", META2, strlen(META2));
		for (j = 0; j < ARRAY_SIZE(files); j++)
			write_file(dir, files[j], headers[j], strlen(headers[j]));
		write_file(dir, h->file, h->text, len);
		snprintf(want, sizeof(want), "%s/%s", dir, h->msg);
		cr = sbrig_capread_open(dir);
		assert_non_null(cr);
		ret = i % 2 ? sbrig_capread_next_sample(cr, s) :
			      (int)sbrig_capread_samples(cr, s, 4);
		if (ret != -h->err || strncmp(sbrig_errmsg(), want, strlen(want)))
			fail_msg("case %zu: got %d '%s', want %d '%s...'", i, ret,
				 sbrig_errmsg(), -h->err, want);
		/* sticky, through both calls; the other files are fine */
		assert_int_equal(sbrig_capread_samples(cr, s, 4), ret);
		assert_int_equal(sbrig_capread_next_sample(cr, s), ret);
		assert_int_equal(sbrig_capread_next_event(cr, &ev), 0);
		sbrig_capread_close(cr);
	}
}

/*
 * The checked-in version 2 fixtures (samples.bin built by hand from
 * capture-format.md, not by capture.c) give the samples of their
 * version 1 twins; killed-v2 ends in 11 bytes of a cut record.
 */
static void fixtures_v2_read_like_v1(void **state)
{
	static const char *const names[] = { "complete", "killed" };
	const char *fx = getenv("SBRIG_FIXTURES") ? getenv("SBRIG_FIXTURES") :
			 "../../tests/fixtures";
	struct sbrig_capfile_info info;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		struct sbrig_sample a[16], b[16];
		struct sbrig_capread *c1, *c2;
		char d1[PATH_MAX], d2[PATH_MAX];
		ssize_t n1, n2;

		snprintf(d1, sizeof(d1), "%s/captures/%s", fx, names[i]);
		snprintf(d2, sizeof(d2), "%s/captures/%s-v2", fx, names[i]);
		c1 = sbrig_capread_open(d1);
		c2 = sbrig_capread_open(d2);
		if (!c1 || !c2)
			fail_msg("%s", sbrig_errmsg());
		assert_int_equal(sbrig_capread_meta(c2)->version, 2);
		n1 = sbrig_capread_samples(c1, a, 16);
		n2 = sbrig_capread_samples(c2, b, 16);
		assert_int_equal(n1, 3);
		assert_int_equal(n2, n1);
		assert_memory_equal(a, b, (size_t)n1 * sizeof(a[0]));
		assert_int_equal(a[0].t_ns, 1200000000);
		assert_int_equal(b[0].current_uA, 5100);
		assert_int_equal(b[0].power_uW, 25500);
		sbrig_capread_file_info(c2, SBRIG_CAPFILE_SAMPLES, &info);
		assert_true(info.eof);
		assert_int_equal(info.cut_lines, i == 1);
		assert_int_equal(info.cut_bytes, i == 1 ? 11 : 0);
		sbrig_capread_close(c1);
		sbrig_capread_close(c2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_v1),
		cmocka_unit_test(round_trip_v2),
		cmocka_unit_test(cut_last_line_and_killed_writer),
		cmocka_unit_test(hostile_files_name_file_line_and_column),
		cmocka_unit_test(events_without_the_obj_column),
		cmocka_unit_test(missing_files_and_long_lines),
		cmocka_unit_test(many_samples_stream),
		cmocka_unit_test(batches_and_single_reads),
		cmocka_unit_test(cut_last_record),
		cmocka_unit_test(seek_samples),
		cmocka_unit_test(hostile_samples_bin_name_file_and_offset),
		cmocka_unit_test(fixtures_v2_read_like_v1),
		cmocka_unit_test(sensor_tail_lost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
