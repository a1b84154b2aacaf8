// SPDX-License-Identifier: GPL-2.0
/*
 * sbrig-powercat - stream supply samples from a libiio URI as TSV.
 *
 *   sbrig-powercat [-d DEV] [-s SHUNT_UOHM] [-r RATE_HZ] [-b SAMPLES]
 *                  [-t SECONDS] [-n SAMPLES] [-q] [-1] URI
 *
 * Opens URI with sbrig_power, prints what the sensor is ("#" lines), then
 * one line per sample and per gap, in time order, until the duration or
 * sample count is reached (or SIGINT/SIGTERM), then the counters:
 *
 *   # uri ip:127.0.0.1:30431
 *   # device ina226
 *   # rate_hz 892.857
 *   # shunt_uohm 10000
 *   # has_timestamp 1
 *   # stale_buffer_cleared 1     (only if a killed capture's was disabled)
 *   S <t_ns> <current_uA> <bus_uV> <shunt_nV> <power_uW>
 *   G <t_ns> <next_t_ns> <missing>
 *   # samples N gaps N missing N overruns N tail_lost 0|1
 *
 * -q prints no S/G lines (counters only); -1 prints one reading taken
 * through the channel attributes and exits. Exit status 0, or 1 with the
 * library's message on stderr (e.g. the sensor vanished mid-capture: the
 * samples before it have been printed). A debugging tool, a test driver
 * and the capture benchmark's subject.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbrig/power.h>
#include <sbrig/sbrig.h>

#define BATCH 1024

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sbrig-powercat [-d DEV] [-s SHUNT_UOHM] [-r RATE_HZ] [-b SAMPLES]\n"
		"                      [-t SECONDS] [-n SAMPLES] [-q] [-1] URI\n");
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || *end || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static void print_sample(const struct sbrig_sample *s)
{
	printf("S\t%" PRId64 "\t%" PRId32 "\t%" PRId32 "\t%" PRId32 "\t%" PRId64 "\n",
	       s->t_ns, s->current_uA, s->bus_uV, s->shunt_nV, s->power_uW);
}

/* Gaps and samples interleaved by time: a gap goes before next_t_ns. */
static void print_batch(const struct sbrig_sample *s, size_t n,
			const struct sbrig_gap *g, size_t ng)
{
	size_t i = 0, j = 0;

	while (i < n || j < ng) {
		if (j < ng && (i == n || g[j].next_t_ns <= s[i].t_ns)) {
			printf("G\t%" PRId64 "\t%" PRId64 "\t%" PRIu64 "\n",
			       g[j].t_ns, g[j].next_t_ns, g[j].missing);
			j++;
		} else {
			print_sample(&s[i++]);
		}
	}
}

/* Print what is queued, up to @max_samples in all; Return: 0 or -errno */
static int take(struct sbrig_power *pwr, bool quiet, uint64_t max_samples,
		uint64_t *got)
{
	static struct sbrig_sample samples[BATCH];
	static struct sbrig_gap gaps[BATCH];
	ssize_t n;
	size_t ng;

	do {
		n = sbrig_power_read(pwr, samples, BATCH, gaps, BATCH, &ng);
		if (n < 0)
			return (int)n;
		if (max_samples && *got + (uint64_t)n > max_samples)
			n = (ssize_t)(max_samples - *got);
		*got += (uint64_t)n;
		if (!quiet)
			print_batch(samples, (size_t)n, gaps, ng);
	} while ((n > 0 || ng > 0) && !(max_samples && *got >= max_samples));
	return 0;
}

int main(int argc, char **argv)
{
	struct sbrig_power_opts opts = { .device = "ina226" };
	struct sbrig_sample one;
	struct sbrig_power_stats st;
	struct sbrig_power_info info;
	struct sbrig_power *pwr;
	struct sigaction sa;
	double duration_s = 0;
	uint64_t max_samples = 0, got = 0;
	bool quiet = false, once = false;
	int64_t deadline = 0;
	int opt, ret, status = 0;

	while ((opt = getopt(argc, argv, "d:s:r:b:t:n:q1h")) != -1) {
		switch (opt) {
		case 'd':
			opts.device = optarg;
			break;
		case 's':
			if (parse_u32(optarg, &opts.shunt_uohm))
				goto bad_arg;
			break;
		case 'r':
			if (parse_u32(optarg, &opts.sample_rate_hz))
				goto bad_arg;
			break;
		case 'b':
			if (parse_u32(optarg, &opts.buffer_samples))
				goto bad_arg;
			break;
		case 't':
			duration_s = strtod(optarg, NULL);
			if (duration_s <= 0)
				goto bad_arg;
			break;
		case 'n':
			max_samples = strtoull(optarg, NULL, 10);
			break;
		case 'q':
			quiet = true;
			break;
		case '1':
			once = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* libiio ip: writes to dead sockets */

	pwr = sbrig_power_new(argv[optind], &opts);
	if (!pwr) {
		fprintf(stderr, "sbrig-powercat: %s\n", sbrig_errmsg());
		return 1;
	}
	sbrig_power_get_info(pwr, &info);
	printf("# uri %s\n# device %s\n# rate_hz %.3f\n# shunt_uohm %" PRIu32
	       "\n# has_timestamp %d\n", info.uri, info.device,
	       info.sample_rate_hz, info.shunt_uohm, info.has_timestamp);
	if (info.stale_buffer_cleared)
		printf("# stale_buffer_cleared 1\n");

	if (once) {
		ret = sbrig_power_read_now(pwr, &one);
		if (ret)
			goto fail;
		print_sample(&one);
		goto out;
	}

	ret = sbrig_power_start(pwr);
	if (ret)
		goto fail;
	if (duration_s > 0)
		deadline = sbrig_now_ns() + (int64_t)(duration_s * 1e9);

	while (!quit) {
		struct pollfd pfd = { .fd = sbrig_power_fd(pwr), .events = POLLIN };
		int timeout_ms = -1;

		if (deadline) {
			int64_t left = deadline - sbrig_now_ns();

			if (left <= 0)
				break;
			timeout_ms = (int)(left / 1000000) + 1;
		}
		ret = poll(&pfd, 1, timeout_ms);
		if (ret < 0 && errno != EINTR) {
			fprintf(stderr, "sbrig-powercat: poll: %s\n", strerror(errno));
			status = 1;
			break;
		}
		if (ret <= 0)
			continue;
		ret = take(pwr, quiet, max_samples, &got);
		if (ret)
			goto fail;
		if (max_samples && got >= max_samples)
			break;
	}
	ret = sbrig_power_stop(pwr);
	if (ret)
		goto fail;
	/* what the stop delivered: the samples up to it (sbrig_power_stop()) */
	if (!(max_samples && got >= max_samples)) {
		ret = take(pwr, quiet, max_samples, &got);
		if (ret)
			goto fail;
	}
	goto out;

fail:
	fflush(stdout);
	fprintf(stderr, "sbrig-powercat: %s\n", sbrig_errmsg());
	status = 1;
out:
	if (!sbrig_power_get_stats(pwr, &st))
		printf("# samples %" PRIu64 " gaps %" PRIu64 " missing %" PRIu64
		       " overruns %" PRIu64 " tail_lost %d\n", st.samples, st.gaps,
		       st.missing, st.overruns, st.tail_lost);
	sbrig_power_free(pwr);
	fflush(stdout);
	return status;

bad_arg:
	fprintf(stderr, "sbrig-powercat: bad value for -%c: '%s'\n", opt, optarg);
	return 2;
}
