// SPDX-License-Identifier: GPL-2.0
/*
 * sbrig-capwrite - write samples given as text into a new capture
 * directory with libsbrig's capture writer (a test driver of lib/capture.c
 * and a way to make captures of either format version by hand).
 *
 *	sbrig-capwrite [-V 1|2] [--no-close] DIR < SAMPLES
 *
 * SAMPLES is what `sbrig export --samples tsv` prints: an optional header
 * line (t_ns current_uA bus_uV shunt_nV power_uW), then one sample per
 * line, five decimal integers separated by tabs (or commas) in that order.
 * They are added with sbrig_capture_add_samples() in blocks of up to 1024,
 * as the daemon does, into a capture of format version -V (default: the
 * writer's, SBRIG_CAPTURE_VERSION), which is closed with status
 * "complete". With --no-close the capture is synced and the program exits
 * without closing it, as a kill -9 after a sync leaves it (no [end]).
 *
 * Exit status: 0 ok, 1 the writer failed (its message on stderr), 2 usage
 * or a malformed input line (named by its number).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbrig/capture.h>
#include <sbrig/sbrig.h>

#define BLOCK 1024

static int usage(void)
{
	fprintf(stderr, "usage: sbrig-capwrite [-V 1|2] [--no-close] DIR < SAMPLES\n");
	return 2;
}

/* One integer of @line at *@p in [@min, @max], then @end or a separator. */
static int field(char **p, int64_t min, int64_t max, bool last, int64_t *v)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(*p, &end, 10);
	if (end == *p || errno || x < min || x > max)
		return -1;
	if (last ? (*end != '\n' && *end != '\0') : (*end != '\t' && *end != ','))
		return -1;
	*v = x;
	*p = end + 1;
	return 0;
}

static int parse(char *line, struct sbrig_sample *s)
{
	int64_t v[5];
	char *p = line;

	for (int i = 0; i < 5; i++) {
		bool wide = i == 0 || i == 4;	/* t_ns, power_uW: 64 bits */

		if (field(&p, wide ? INT64_MIN : INT32_MIN,
			  wide ? INT64_MAX : INT32_MAX, i == 4, &v[i]))
			return -1;
	}
	memset(s, 0, sizeof(*s));
	s->t_ns = v[0];
	s->current_uA = (int32_t)v[1];
	s->bus_uV = (int32_t)v[2];
	s->shunt_nV = (int32_t)v[3];
	s->power_uW = v[4];
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", required_argument, NULL, 'V' },
		{ "no-close", no_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbrig_provenance prov = { .rig_name = "sbrig-capwrite" };
	struct sbrig_capture_opts o = { 0 };
	static struct sbrig_sample b[BLOCK];
	struct sbrig_capture *cap;
	bool no_close = false;
	char *line = NULL;
	size_t size = 0, n = 0;
	uint64_t lineno = 0;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "V:", opts, NULL)) != -1) {
		switch (opt) {
		case 'V':
			if (strcmp(optarg, "1") && strcmp(optarg, "2"))
				return usage();
			o.version = (unsigned int)atoi(optarg);
			break;
		case 'N':
			no_close = true;
			break;
		default:
			return usage();
		}
	}
	if (optind + 1 != argc)
		return usage();

	cap = sbrig_capture_new_opts(argv[optind], &prov, &o);
	if (!cap) {
		fprintf(stderr, "sbrig-capwrite: %s\n", sbrig_errmsg());
		return 1;
	}
	ret = 0;
	while (getline(&line, &size, stdin) > 0) {
		lineno++;
		if (lineno == 1 && !strncmp(line, "t_ns", 4))
			continue;
		if (parse(line, &b[n])) {
			fprintf(stderr, "sbrig-capwrite: stdin:%" PRIu64 ": not "
				"five integers t_ns current_uA bus_uV shunt_nV "
				"power_uW in range\n", lineno);
			ret = 2;
			break;
		}
		if (++n == BLOCK) {
			ret = sbrig_capture_add_samples(cap, b, n) ? 1 : 0;
			n = 0;
			if (ret)
				break;
		}
	}
	free(line);
	if (!ret && n && sbrig_capture_add_samples(cap, b, n))
		ret = 1;
	if (ret == 1)
		fprintf(stderr, "sbrig-capwrite: %s\n", sbrig_errmsg());
	if (no_close && !ret) {
		/* a sync "a long time" after the last: flushes and fdatasyncs */
		if (sbrig_capture_sync(cap, INT64_MAX / 2)) {
			fprintf(stderr, "sbrig-capwrite: %s\n", sbrig_errmsg());
			return 1;
		}
		_exit(0);	/* as kill -9 would: no close, no [end] */
	}
	if (sbrig_capture_close(cap, ret ? "failed: bad input" : "complete") &&
	    !ret) {
		fprintf(stderr, "sbrig-capwrite: %s\n", sbrig_errmsg());
		ret = 1;
	}
	return ret;
}
