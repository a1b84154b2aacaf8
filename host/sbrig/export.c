// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - sbrig export: a capture's samples as CSV or TSV, offline.
 *
 * The capture is read with the capture reader (sbrig/capture-read.h), so
 * both format versions work alike: samples.tsv (version 1) or samples.bin
 * (version 2) come out as text with the columns of capture-format.md in
 * their order, one header line first. TSV output of a version 1 capture
 * is its samples.tsv byte for byte (without a cut last line). No daemon
 * is needed.
 *
 * Samples are read in batches and formatted into one output buffer
 * written with write(2) when it fills (no stdio per row). With -o the
 * text goes to FILE.tmp.PID, which is renamed over FILE once complete,
 * so a failure leaves no half-written FILE (and an older FILE intact).
 *
 * Exit status as the other commands: 0 ok, 1 failed (the capture cannot
 * be read, the output cannot be written), 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbrig/capture-read.h>
#include <sbrig/sbrig.h>

struct command;
int cmd_export(const struct command *c, int argc, char **argv);

enum { EXPORT_OK = 0, EXPORT_FAIL = 1, EXPORT_USAGE = 2 };

#define EXPORT_BATCH	4096			/* samples per read */
#define EXPORT_BUF	(256 * 1024)		/* output buffer */
#define EXPORT_ROW_MAX	(5 * 21)		/* 5 numbers, 4 separators, \n */

static const char export_help[] =
"Usage: sbrig export CAPTURE --samples csv|tsv [-o FILE]\n"
"\n"
"Write the samples of the capture directory CAPTURE as text, offline (no\n"
"daemon needed), from either capture format version: samples.tsv\n"
"(version 1) or samples.bin (version 2, what sbrigd writes). The first\n"
"line names the columns, t_ns current_uA bus_uV shunt_nV power_uW (units\n"
"in the names, host/doc/capture-format.md), then one line per sample in\n"
"capture order. A last sample the writer did not finish (a capture\n"
"killed mid-write) is left out, with a note on stderr.\n"
"\n"
"  --samples csv|tsv       the samples, comma- or tab-separated\n"
"  -o, --output FILE       write FILE (replaced whole once complete;\n"
"                          default: standard output)\n"
"\n"
"Exit status: 0 ok, 1 the capture cannot be read or FILE cannot be\n"
"written, 2 usage error.\n";

static const struct {
	const char *name;
	char sep;
} formats[] = {
	{ "csv", ',' },
	{ "tsv", '\t' },
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sbrig export: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'sbrig export --help'.\n");
	return EXPORT_USAGE;
}

/**
 * struct out - where the text goes
 * @fd: the file (or standard output)
 * @path: its name for messages (FILE, or "standard output")
 * @buf: text not written yet
 * @len: bytes in @buf
 */
struct out {
	int fd;
	const char *path;
	char *buf;
	size_t len;
};

static int out_flush(struct out *o)
{
	size_t done = 0;
	ssize_t n;

	while (done < o->len) {
		n = write(o->fd, o->buf + done, o->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "sbrig export: %s: write: %s\n", o->path,
				n < 0 ? strerror(errno) : "nothing written");
			return -1;
		}
		done += (size_t)n;
	}
	o->len = 0;
	return 0;
}

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

/* The samples of @cr as text into @o. Return 0 or -1 (message printed). */
static int export_samples(struct sbrig_capread *cr, struct out *o, char sep)
{
	static const char *const cols[] = {
		"t_ns", "current_uA", "bus_uV", "shunt_nV", "power_uW",
	};
	struct sbrig_sample *s = malloc(EXPORT_BATCH * sizeof(*s));
	struct sbrig_capfile_info info;
	ssize_t n;
	char *p;

	if (!s) {
		fprintf(stderr, "sbrig export: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < 5; i++)
		o->len += (size_t)sprintf(o->buf + o->len, "%s%c", cols[i],
					  i < 4 ? sep : '\n');
	while ((n = sbrig_capread_samples(cr, s, EXPORT_BATCH)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (EXPORT_BUF - o->len < EXPORT_ROW_MAX &&
			    out_flush(o))
				goto fail;
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
		goto fail;
	}
	if (out_flush(o))
		goto fail;
	sbrig_capread_file_info(cr, SBRIG_CAPFILE_SAMPLES, &info);
	if (info.cut_lines)
		fprintf(stderr, "sbrig export: note: %s/%s: the last %s (%" PRIu64
			" bytes) was cut short by its writer and is left out\n",
			sbrig_capread_dir(cr),
			sbrig_capread_file_name(cr, SBRIG_CAPFILE_SAMPLES),
			sbrig_capread_meta(cr)->version >= 2 ? "record" : "line",
			info.cut_bytes);
	free(s);
	return 0;
fail:
	free(s);
	return -1;
}

int cmd_export(const struct command *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "samples", required_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *what = NULL, *file = NULL;
	struct out o = { .fd = STDOUT_FILENO, .path = "standard output" };
	char tmp[PATH_MAX];
	struct sbrig_capread *cr;
	int opt, ret = EXPORT_FAIL;
	char sep = 0;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			what = optarg;
			break;
		case 'o':
			file = optarg;
			break;
		case 'h':
			fputs(export_help, stdout);
			return EXPORT_OK;
		default:
			return usage_error("bad option");
		}
	}
	if (argc == optind)
		return usage_error("a CAPTURE directory is required");
	if (argc - optind > 1)
		return usage_error("unexpected argument '%s'", argv[optind + 1]);
	if (!what)
		return usage_error("--samples csv|tsv is required (what to export)");
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(what, formats[i].name))
			sep = formats[i].sep;
	if (!sep)
		return usage_error("--samples '%s': expected csv or tsv", what);
	if (file && !*file)
		return usage_error("-o: an empty file name");

	cr = sbrig_capread_open(argv[optind]);
	if (!cr) {
		fprintf(stderr, "sbrig export: %s\n", sbrig_errmsg());
		return EXPORT_FAIL;
	}
	o.buf = malloc(EXPORT_BUF);
	if (!o.buf) {
		fprintf(stderr, "sbrig export: out of memory\n");
		goto close_cr;
	}
	if (file) {
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", file,
				     (long)getpid()) >= sizeof(tmp)) {
			fprintf(stderr, "sbrig export: %s: path too long\n", file);
			goto free_buf;
		}
		o.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (o.fd < 0) {
			fprintf(stderr, "sbrig export: %s: %s\n", file,
				strerror(errno));
			goto free_buf;
		}
		o.path = file;
	}
	if (export_samples(cr, &o, sep))
		goto remove_tmp;
	if (file) {
		int err = fsync(o.fd) ? errno : 0;

		if (close(o.fd) && !err)
			err = errno;
		o.fd = -1;
		if (err) {
			fprintf(stderr, "sbrig export: %s: %s\n", file,
				strerror(err));
			goto remove_tmp;
		}
		if (rename(tmp, file)) {
			fprintf(stderr, "sbrig export: %s: %s\n", file,
				strerror(errno));
			goto remove_tmp;
		}
	}
	ret = EXPORT_OK;
	goto free_buf;

remove_tmp:
	if (file) {
		if (o.fd >= 0)
			close(o.fd);
		unlink(tmp);
	}
free_buf:
	free(o.buf);
close_cr:
	sbrig_capread_close(cr);
	return ret;
}
