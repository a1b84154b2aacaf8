// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - sbrig export: data of the rig in other programs' formats,
 * offline (no daemon).
 *
 * One command, several exporters: each is a row of exporters[] that names
 * its long option (--samples), what the command's one argument is (a
 * CAPTURE directory), the values the option takes (csv, tsv; none for a
 * plain flag) and the function that writes it. Exactly one exporter option
 * is given per call. The option table for getopt_long() and the checks of
 * the option's value are built from exporters[], so a new format is one
 * row and one function. The exporters of report.json and compare.json
 * (--perfetto, --csv, --junit, --lava) are rows of one function,
 * export_doc(), that has libsbrig-analysis render the document
 * (sbrig/export.h, host/doc/export-formats.md) and writes the text.
 *
 * Every exporter writes through struct export_out: text is formatted into
 * one buffer written with write(2) when it fills (no stdio per row). With
 * -o the text goes to FILE.tmp.PID, which is fsync'd and renamed over FILE
 * once complete, so a failure leaves no half-written FILE (and an older
 * FILE intact); without -o it goes to standard output as it comes.
 *
 * --samples: the capture is read with the capture reader
 * (sbrig/capture-read.h) in batches (sbrig_capread_samples()), so both
 * format versions work alike: samples.tsv (version 1) or samples.bin
 * (version 2) come out with the columns of capture-format.md in their
 * order, one header line first. TSV output of a version 1 capture is its
 * samples.tsv byte for byte (without a cut last line). A cut last sample
 * is left out with a note on standard error; a capture that does not
 * follow the format is an error naming the file and the line (samples.tsv)
 * or byte offset (samples.bin).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sbrig/capture-read.h>
#include <sbrig/export.h>
#include <sbrig/sbrig.h>

#include "cli.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define EXPORT_BATCH	4096			/* samples per read */
#define EXPORT_BUF	(256 * 1024)		/* output buffer */

const char export_help[] =
"Write data of the rig in another format, offline (no daemon needed).\n"
"Exactly one of the options that say what to export:\n"
"\n"
"  --samples csv|tsv       the samples of the capture directory CAPTURE,\n"
"                          comma- or tab-separated, from either capture\n"
"                          format version: samples.tsv (version 1) or\n"
"                          samples.bin (version 2, what sbrigd writes).\n"
"                          The first line names the columns, t_ns\n"
"                          current_uA bus_uV shunt_nV power_uW (units in\n"
"                          the names, host/doc/capture-format.md), then\n"
"                          one line per sample in capture order; TSV of a\n"
"                          version 1 capture is its samples.tsv. A last\n"
"                          sample its writer did not finish (a capture\n"
"                          killed mid-write) is left out, with a note on\n"
"                          standard error.\n"
"  --perfetto              REPORT.json as Chrome trace JSON: power as a\n"
"                          counter track, each blocker an async track of\n"
"                          its activations, states and phases as slices,\n"
"                          stimuli, resumes and findings as instants, in\n"
"                          us. Open it in https://ui.perfetto.dev by\n"
"                          dragging the file onto the page.\n"
"  --csv blockers|wakeups|envelope\n"
"                          a table of REPORT.json as CSV: its blockers,\n"
"                          its wakeups, or its finest power envelope; a\n"
"                          text cell that begins with = + - @, a tab or\n"
"                          CR is written \"'...\" (no formula)\n"
"  --junit                 COMPARE.json (sbrig compare -o) as JUnit XML:\n"
"                          one testcase per metric verdict (a regression\n"
"                          fails, inconclusive is skipped), the commits,\n"
"                          rig and scenario hashes as properties; XML\n"
"                          1.0 characters only (others as U+FFFD), case\n"
"                          names distinct\n"
"  --lava                  REPORT.json's headline figures, or\n"
"                          COMPARE.json's verdicts, as 'lava-test-case\n"
"                          NAME --result pass|fail|skip --measurement X\n"
"                          --units U' lines (inconclusive is skip; NAME\n"
"                          of [A-Za-z0-9_.-], at most 100 characters, a\n"
"                          short hash added when the name had to be\n"
"                          changed; U without spaces)\n"
"\n"
"  -o, --output FILE       write FILE (default: standard output): the text\n"
"                          goes to FILE.tmp.PID and is renamed over FILE\n"
"                          once complete, so a failure leaves no\n"
"                          half-written FILE\n"
"\n"
"The formats: host/doc/export-formats.md. A REPORT.json or COMPARE.json\n"
"is checked first: another schema or version, a missing field or one of\n"
"the wrong type is refused, naming the field; so is one larger than\n"
"32 MiB, or whose values would take more than 512 MiB of memory (the\n"
"output is written as it is made: export never uses more).\n"
"\n"
"Exit status: 0 ok, 1 the input cannot be read (the error names the file\n"
"and the line, or for samples.bin the byte offset, or the field of a\n"
"JSON document) or FILE cannot be written (the error names FILE and the\n"
"byte offset), 2 usage error.\n";

/**
 * struct export_out - where an exporter's text goes
 * @fd: the file being written (FILE.tmp.PID, or standard output)
 * @path: FILE for messages, or "standard output"
 * @tmp: FILE.tmp.PID ("" for standard output)
 * @buf: text not written yet (EXPORT_BUF bytes)
 * @len: bytes in @buf
 * @written: bytes written to @fd so far (the offset of @buf's first byte)
 * @failed: a write failed (and said why): nothing more is written
 */
struct export_out {
	int fd;
	const char *path;
	char tmp[PATH_MAX];
	char *buf;
	size_t len;
	uint64_t written;
	bool failed;
};

/* Open @o on @file (NULL: standard output). Return 0 or -1 (printed). */
static int out_open(struct export_out *o, const char *file)
{
	struct stat st;

	*o = (struct export_out){ .fd = STDOUT_FILENO,
				  .path = "standard output" };
	o->buf = malloc(EXPORT_BUF);
	if (!o->buf) {
		fprintf(stderr, "sbrig export: out of memory\n");
		return -1;
	}
	if (!file)
		return 0;
	o->path = file;
	if (!stat(file, &st) && !S_ISREG(st.st_mode)) {
		/*
		 * /dev/null, a FIFO, a terminal: written in place (renaming
		 * a file over /dev/null replaced the device, as root)
		 */
		o->fd = open(file, O_WRONLY | O_CLOEXEC);
		if (o->fd < 0) {
			fprintf(stderr, "sbrig export: %s: %s\n", file,
				strerror(errno));
			goto free_buf;
		}
		return 0;
	}
	if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%ld", file,
			     (long)getpid()) >= sizeof(o->tmp)) {
		fprintf(stderr, "sbrig export: %s: path too long\n", file);
		goto free_buf;
	}
	if (sbrig_mkdir_parent(file, 0755) < 0) {
		fprintf(stderr, "sbrig export: %s\n", sbrig_errmsg());
		goto free_buf;
	}
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (o->fd < 0) {
		fprintf(stderr, "sbrig export: %s: cannot create %s: %s\n",
			file, o->tmp, strerror(errno));
		goto free_buf;
	}
	return 0;

free_buf:
	free(o->buf);
	o->buf = NULL;
	return -1;
}

/* Write out @o's buffer. Return 0 or -1 (printed). */
static int out_flush(struct export_out *o)
{
	size_t done = 0;
	ssize_t n;

	if (o->failed)
		return -1;
	while (done < o->len) {
		n = write(o->fd, o->buf + done, o->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "sbrig export: %s: write at byte %" PRIu64
				": %s\n", o->path, o->written,
				n < 0 ? strerror(errno) : "nothing written");
			o->failed = true;
			return -1;
		}
		done += (size_t)n;
		o->written += (uint64_t)n;
	}
	o->len = 0;
	return 0;
}

/* Room for @need bytes at o->buf + o->len (flushing). 0 or -1 (printed). */
static inline int out_room(struct export_out *o, size_t need)
{
	return EXPORT_BUF - o->len < need ? out_flush(o) : 0;
}

/*
 * Finish @o: flush, and for a FILE fsync, close and rename it into place.
 * Return 0 or -1 (printed; the temporary file is removed).
 */
static int out_commit(struct export_out *o)
{
	int err;

	if (out_flush(o))
		return -1;
	if (!o->tmp[0])
		return 0;
	err = fsync(o->fd) ? errno : 0;
	if (close(o->fd) && !err)
		err = errno;
	o->fd = -1;
	if (!err && rename(o->tmp, o->path))
		err = errno;
	if (err) {
		fprintf(stderr, "sbrig export: %s: %s\n", o->path, strerror(err));
		unlink(o->tmp);
		return -1;
	}
	o->tmp[0] = '\0';
	return 0;
}

/* Free @o; a FILE not committed is removed (FILE itself is untouched). */
static void out_close(struct export_out *o)
{
	if (o->tmp[0]) {
		if (o->fd >= 0)
			close(o->fd);
		unlink(o->tmp);
	}
	free(o->buf);
}

/* ---- --samples ---------------------------------------------------------- */

static const char *const samples_formats[] = { "csv", "tsv", NULL };
static const char samples_sep[] = { ',', '\t' };	/* by format */

/* the longest row: 5 numbers of at most 20 characters, 5 separators */
#define SAMPLE_ROW_MAX	(5 * 21)

/* Decimal @v at @p (no NUL); returns the end. */
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

struct exporter;

/* The samples of the capture @dir as text. Return 0 or -1 (printed). */
static int export_samples(const struct exporter *e, const char *dir,
			  unsigned int fmt, struct export_out *o)
{
	static const char *const cols[] = {
		"t_ns", "current_uA", "bus_uV", "shunt_nV", "power_uW",
	};
	const char sep = samples_sep[fmt];
	struct sbrig_capfile_info info;
	struct sbrig_capread *cr;
	struct sbrig_sample *s;
	int ret = -1;
	ssize_t n;
	char *p;

	cr = sbrig_capread_open(dir);
	if (!cr) {
		fprintf(stderr, "sbrig export: %s\n", sbrig_errmsg());
		return -1;
	}
	s = malloc(EXPORT_BATCH * sizeof(*s));
	if (!s) {
		fprintf(stderr, "sbrig export: out of memory\n");
		goto close_cr;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++)
		o->len += (size_t)sprintf(o->buf + o->len, "%s%c", cols[i],
					  i + 1 < ARRAY_SIZE(cols) ? sep : '\n');
	while ((n = sbrig_capread_samples(cr, s, EXPORT_BATCH)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (out_room(o, SAMPLE_ROW_MAX))
				goto free_s;
			p = o->buf + o->len;
			p = put_i64(p, s[i].t_ns);
			*p++ = sep;
			p = put_i64(p, s[i].current_uA);
			*p++ = sep;
			p = put_i64(p, s[i].bus_uV);
			*p++ = sep;
			p = put_i64(p, s[i].shunt_nV);
			*p++ = sep;
			p = put_i64(p, s[i].power_uW);
			*p++ = '\n';
			o->len = (size_t)(p - o->buf);
		}
	}
	if (n < 0) {
		fprintf(stderr, "sbrig export: %s\n", sbrig_errmsg());
		goto free_s;
	}
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	if (info.cut_lines)
		fprintf(stderr, "sbrig export: note: %s/%s: the last %s (%" PRIu64
			" bytes at offset %" PRIu64 ") was cut short by its "
			"writer and is left out\n", sbrig_capread_dir(cr),
			sbrig_capread_file_name(cr, SBRIG_CAPFILE_SAMPLES),
			sbrig_capread_meta(cr)->version >= 2 ? "record" : "line",
			info.cut_bytes, info.offset);
	ret = 0;
free_s:
	free(s);
close_cr:
	sbrig_capread_close(cr);
	return ret;
}

/* ---- documents: report.json, compare.json ------------------------------- */

static const char *const csv_formats[] = {
	"blockers", "wakeups", "envelope", NULL,
};

/* @len bytes of @text through @o. Return 0 or -1 (printed). */
static int out_write(struct export_out *o, const char *text, size_t len)
{
	while (len) {
		size_t n = EXPORT_BUF - o->len < len ? EXPORT_BUF - o->len : len;

		memcpy(o->buf + o->len, text, n);
		o->len += n;
		text += n;
		len -= n;
		if (len && out_flush(o))
			return -1;
	}
	return 0;
}

/* ---- the exporters and the command -------------------------------------- */

/**
 * struct exporter - one thing sbrig export can write
 * @option: its long option, without "--"
 * @input: what the command's argument is for it (for messages)
 * @formats: the option's values, NULL-terminated; NULL: a plain flag
 * @run: write @input in @formats[@fmt] (0 for a flag) to the output;
 *	returns 0, or -1 with the message printed on standard error
 * @kind: for a document exporter, the sbrig_export_render() format (the
 *	first; @fmt is added to it)
 */
struct exporter {
	const char *option;
	const char *input;
	const char *const *formats;
	int (*run)(const struct exporter *e, const char *input,
		   unsigned int fmt, struct export_out *o);
	enum sbrig_export kind;
};

/* stdio's writes of the renderer, into @o (its errors printed there) */
static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
	return out_write(cookie, buf, size) ? -1 : (ssize_t)size;
}

/*
 * A report.json or compare.json rendered by libsbrig-analysis, straight
 * into the output as it is made (sbrig_export_write()): the text is
 * never whole in memory.
 */
static int export_doc(const struct exporter *e, const char *path,
		      unsigned int fmt, struct export_out *o)
{
	static const cookie_io_functions_t io = { .write = cookie_write };
	FILE *f = fopencookie(o, "w", io);
	int ret, werr;

	if (!f) {
		fprintf(stderr, "sbrig export: out of memory\n");
		return -1;
	}
	ret = sbrig_export_write(path, (enum sbrig_export)(e->kind + fmt), f);
	werr = fclose(f);	/* the last writes; out_write() said why */
	if (ret) {
		fprintf(stderr, "sbrig export: %s\n", sbrig_errmsg());
		return -1;
	}
	return werr ? -1 : 0;
}

static const struct exporter exporters[] = {
	{ "samples", "CAPTURE", samples_formats, export_samples, 0 },
	{ "perfetto", "REPORT.json", NULL, export_doc, SBRIG_EXPORT_PERFETTO },
	{ "csv", "REPORT.json", csv_formats, export_doc,
	  SBRIG_EXPORT_CSV_BLOCKERS },
	{ "junit", "COMPARE.json", NULL, export_doc, SBRIG_EXPORT_JUNIT },
	{ "lava", "REPORT.json or COMPARE.json", NULL, export_doc,
	  SBRIG_EXPORT_LAVA },
};

enum { OPT_EXPORTER = 256 };	/* getopt value of exporters[i]: +i */

/* @arg's index in @formats, or -1 */
static int format_index(const char *const *formats, const char *arg)
{
	for (int i = 0; formats[i]; i++)
		if (!strcmp(formats[i], arg))
			return i;
	return -1;
}

/* "csv|tsv" into @buf */
static const char *format_list(const char *const *formats, char *buf,
			       size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; formats[i] && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
					i ? "|" : "", formats[i]);
	return buf;
}

int cmd_export(const struct command *c, int argc, char **argv)
{
	struct option opts[ARRAY_SIZE(exporters) + 3];
	const struct exporter *ex = NULL;
	const char *file = NULL;
	struct export_out o;
	unsigned int fmt = 0;
	char list[128];
	int opt, i, ret;

	for (size_t k = 0; k < ARRAY_SIZE(exporters); k++)
		opts[k] = (struct option){
			exporters[k].option,
			exporters[k].formats ? required_argument : no_argument,
			NULL, OPT_EXPORTER + (int)k };
	opts[ARRAY_SIZE(exporters)] =
		(struct option){ "output", required_argument, NULL, 'o' };
	opts[ARRAY_SIZE(exporters) + 1] =
		(struct option){ "help", no_argument, NULL, 'h' };
	opts[ARRAY_SIZE(exporters) + 2] = (struct option){ NULL, 0, NULL, 0 };

	optind = 0;
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if (opt >= OPT_EXPORTER &&
		    opt < OPT_EXPORTER + (int)ARRAY_SIZE(exporters)) {
			const struct exporter *e = &exporters[opt - OPT_EXPORTER];

			if (ex && ex != e)
				return usage_error(c->name, "--%s and --%s: one "
						   "export at a time",
						   ex->option, e->option);
			ex = e;
			if (!e->formats)
				continue;
			i = format_index(e->formats, optarg);
			if (i < 0)
				return usage_error(c->name, "--%s '%s': expected "
						   "%s", e->option, optarg,
						   format_list(e->formats, list,
							       sizeof(list)));
			fmt = (unsigned int)i;
			continue;
		}
		switch (opt) {
		case 'o':
			file = optarg;
			break;
		case 'h':
			command_help(c, stdout);
			return EXIT_OK;
		default:
			return usage_error(c->name, "bad option");
		}
	}
	if (!ex)
		return usage_error(c->name, "what to export? (--samples csv|tsv, "
				   "--perfetto, --csv blockers|wakeups|envelope, "
				   "--junit, --lava)");
	if (argc == optind)
		return usage_error(c->name, "--%s: a %s is required", ex->option,
				   ex->input);
	if (argc - optind > 1)
		return usage_error(c->name, "unexpected argument '%s'",
				   argv[optind + 1]);
	if (file && !*file)
		return usage_error(c->name, "-o: an empty file name");

	if (out_open(&o, file))
		return EXIT_FAIL;
	ret = ex->run(ex, argv[optind], fmt, &o);
	if (!ret)
		ret = out_commit(&o);
	out_close(&o);
	return ret ? EXIT_FAIL : EXIT_OK;
}
