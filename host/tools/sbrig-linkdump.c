// SPDX-License-Identifier: GPL-2.0
/*
 * sbrig-linkdump - talk to the target agent over sbrig_link and print every
 * decoded message as one JSON object per line (a debugging tool and the
 * test driver of the link).
 *
 *	sbrig-linkdump [OPTIONS] URI
 *
 * Commands (link-protocol.md verbs) come from -c options and, with
 * --stdin, from standard input, one per line; a stdin line "!status"
 * prints the link status. SIGINT/SIGTERM end it after printing the status.
 *
 * Exit status: 0 ok; 1 runtime error (e.g. a command could not be
 * queued); 2 usage error; 3 --events/--duration limit not reached
 * because the link never came up.
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

#include <sbrig/clock.h>
#include <sbrig/link.h>
#include <sbrig/sbrig.h>

#define MS 1000000LL

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	quit = 1;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_msg(const struct sbrig_link_msg *m)
{
	switch (m->type) {
	case SBRIG_LINK_HELLO:
		printf("{\"type\":\"hello\",\"boot_id\":");
		json_str(m->hello.boot_id);
		printf(",\"agent\":");
		json_str(m->hello.agent);
		printf(",\"kernel\":");
		json_str(m->hello.kernel);
		printf(",\"module\":");
		json_str(m->hello.module);
		printf(",\"new_boot\":%s,\"log_restart\":%s}\n",
		       m->hello.new_boot ? "true" : "false",
		       m->hello.log_restart ? "true" : "false");
		break;
	case SBRIG_LINK_EVENT:
		printf("{\"type\":\"event\",\"seq\":%" PRIu64 ",\"t_ns\":%" PRId64
		       ",\"host_t_ns\":%" PRId64 ",\"uncert_ns\":%" PRId64
		       ",\"boot_id\":", m->event.seq, m->event.target_t_ns,
		       m->event.host_t_ns, m->event.uncert_ns);
		json_str(m->event.boot_id);
		printf(",\"ev\":");
		json_str(m->event.type);
		printf(",\"arg\":");
		json_str(m->event.arg);
		printf(",\"cut\":%s,\"obj\":%" PRIu64 "}\n",
		       m->event.cut ? "true" : "false", m->event.obj);
		break;
	case SBRIG_LINK_GAP:
		printf("{\"type\":\"gap\",\"from_seq\":%" PRIu64 ",\"to_seq\":%"
		       PRIu64 "}\n", m->gap.from_seq, m->gap.to_seq);
		break;
	case SBRIG_LINK_STATS:
		printf("{\"type\":\"stats\",\"cmd_id\":%" PRIu32 ",\"index\":%"
		       PRIu32 ",\"rows\":%" PRIu32 ",\"name\":", m->snapshot,
		       m->index, m->count);
		json_str(m->stats.name);
		printf(",\"count\":%" PRIu64 ",\"wake_count\":%" PRIu64
		       ",\"active_since\":%" PRId64 ",\"total_time\":%" PRId64
		       ",\"sleep_time\":%" PRId64 ",\"max_time\":%" PRId64
		       ",\"last_change\":%" PRId64 "}\n", m->stats.count,
		       m->stats.wake_count, m->stats.active_since_ns,
		       m->stats.total_time_ns, m->stats.sleep_time_ns,
		       m->stats.max_time_ns, m->stats.last_change_ns);
		break;
	case SBRIG_LINK_REPLY:
	case SBRIG_LINK_DONE:
		printf("{\"type\":\"%s\",\"cmd_id\":%" PRIu32 ",\"err\":%d,"
		       "\"text\":", m->type == SBRIG_LINK_REPLY ? "reply" : "done",
		       m->cmd_id, m->err);
		json_str(m->text);
		printf("}\n");
		break;
	case SBRIG_LINK_CLOCK:
		printf("{\"type\":\"clock\",\"host_send_ns\":%" PRId64
		       ",\"host_recv_ns\":%" PRId64 ",\"target_ns\":%" PRId64
		       ",\"retained\":%s}\n", m->clock.host_send_ns,
		       m->clock.host_recv_ns, m->clock.target_ns,
		       m->clock.retained ? "true" : "false");
		break;
	case SBRIG_LINK_DOWN:
		printf("{\"type\":\"down\",\"text\":");
		json_str(m->text);
		printf("}\n");
		break;
	}
}

static void print_status(struct sbrig_link *link)
{
	struct sbrig_link_status st;
	struct sbrig_clock_state cs;

	sbrig_link_get_status(link, &st);
	sbrig_clock_get_state(sbrig_link_clock(link), &cs);
	printf("{\"type\":\"status\",\"connected\":%s,\"boot_id\":",
	       st.connected ? "true" : "false");
	json_str(st.boot_id);
	printf(",\"frames_ok\":%" PRIu64 ",\"frames_bad\":%" PRIu64
	       ",\"noise_bytes\":%" PRIu64 ",\"resends\":%" PRIu64
	       ",\"reconnects\":%" PRIu64 ",\"reboots\":%" PRIu64
	       ",\"next_seq\":%" PRIu64 ",\"events_lost\":%" PRIu64
	       ",\"log_restarts\":%" PRIu64 ",\"clock_samples\":%u,\"offset_ns\":%" PRId64
	       ",\"drift_ppb\":%" PRId64 ",\"uncert_ns\":%" PRId64
	       ",\"min_rtt_ns\":%" PRId64, st.frames_ok, st.frames_bad,
	       st.noise_bytes, st.resends, st.reconnects, st.reboots,
	       st.next_seq, st.events_lost, st.log_restarts, cs.samples, cs.offset_ns,
	       cs.drift_ppb, cs.uncert_ns, cs.min_rtt_ns);
	printf(",\"bad_times\":%" PRIu64 ",\"bad_seqs\":%" PRIu64
	       ",\"rx_pauses\":%" PRIu64 ",\"queue_drops\":%" PRIu64
	       ",\"queued\":%" PRIu32 ",\"queue_slots\":%" PRIu32 "}\n",
	       st.bad_times, st.bad_seqs, st.rx_pauses, st.queue_drops,
	       st.queued, st.queue_slots);
}

static int queue_cmd(struct sbrig_link *link, const char *cmd)
{
	uint32_t id;
	int ret = sbrig_link_command(link, cmd, &id);

	if (ret) {
		printf("{\"type\":\"error\",\"text\":");
		json_str(sbrig_errmsg());
		printf("}\n");
		return ret;
	}
	printf("{\"type\":\"queued\",\"cmd_id\":%" PRIu32 ",\"cmd\":", id);
	json_str(cmd);
	printf("}\n");
	return 0;
}

/* Read what stdin has; run each complete line. Return -1 at EOF. */
static int read_stdin(struct sbrig_link *link, char *buf, size_t size,
		      size_t *len)
{
	ssize_t n = read(0, buf + *len, size - 1 - *len);
	char *nl;

	if (n <= 0)
		return n == 0 || (errno != EAGAIN && errno != EINTR) ? -1 : 0;
	*len += (size_t)n;
	buf[*len] = '\0';
	while ((nl = strchr(buf, '\n'))) {
		*nl = '\0';
		if (nl > buf && nl[-1] == '\r')
			nl[-1] = '\0';
		if (!strcmp(buf, "!status"))
			print_status(link);
		else if (!strcmp(buf, "!quit"))
			quit = 1;
		else if (buf[0])
			queue_cmd(link, buf);
		*len -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *len + 1);
	}
	if (*len == size - 1)
		*len = 0;	/* absurdly long line: drop it */
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: sbrig-linkdump [OPTIONS] URI\n"
"Connect to the target agent (URI: serial:/dev/ttyS1[:BAUD] or tcp:HOST:PORT)\n"
"and print every decoded message as a JSON object per line.\n"
"\n"
"  -c, --cmd CMD        send a command (repeatable), e.g. 'hold \"x\" 500'\n"
"  -s, --stdin          also read commands from stdin, one per line\n"
"                       (\"!status\" prints the status, \"!quit\" exits)\n"
"  -n, --events N       exit after N events\n"
"  -d, --duration S     exit after S seconds (fractions ok)\n"
"      --ping-ms MS     clock ping period (default 1000)\n"
"      --timeout-ms MS  silence before the link is down (default 3000)\n"
"      --reconnect-ms MS  first reconnection delay (default 500)\n"
"      --retry-ms MS    command / resend retry period (default 1000)\n"
"  -v, --verbose        library debug messages on stderr\n"
"  -h, --help           this help\n"
"\n"
"A status line ({\"type\":\"status\",...}) is printed at exit.\n"
"Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cmd", required_argument, NULL, 'c' },
		{ "stdin", no_argument, NULL, 's' },
		{ "events", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' },
		{ "ping-ms", required_argument, NULL, 'P' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "reconnect-ms", required_argument, NULL, 'R' },
		{ "retry-ms", required_argument, NULL, 'Y' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbrig_link_opts opts = { 0 };
	struct sbrig_link *link;
	struct sbrig_link_msg msg;
	const char *cmds[64];
	unsigned int n_cmds = 0, i;
	bool use_stdin = false;
	long max_events = -1, events = 0;
	double duration_s = -1;
	char inbuf[4096];
	size_t inlen = 0;
	int64_t start, end_ns = INT64_MAX, now, dl;
	struct pollfd pfd[2];
	int c, nfds, li, si, ret = 0, timeout;
	char *e;

	while ((c = getopt_long(argc, argv, "c:sn:d:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (n_cmds == 64) {
				fprintf(stderr, "sbrig-linkdump: too many -c\n");
				return 2;
			}
			cmds[n_cmds++] = optarg;
			break;
		case 's':
			use_stdin = true;
			break;
		case 'n':
			max_events = strtol(optarg, &e, 10);
			if (*e || max_events < 0)
				goto bad_num;
			break;
		case 'd':
			duration_s = strtod(optarg, &e);
			if (*e || duration_s < 0)
				goto bad_num;
			break;
		case 'P': case 'T': case 'R': case 'Y': {
			unsigned long v = strtoul(optarg, &e, 10);

			if (*e || !v || v > 3600000)
				goto bad_num;
			if (c == 'P')
				opts.ping_interval_ms = (uint32_t)v;
			else if (c == 'T')
				opts.timeout_ms = (uint32_t)v;
			else if (c == 'R')
				opts.reconnect_ms = (uint32_t)v;
			else
				opts.cmd_retry_ms = (uint32_t)v;
			break;
		}
		case 'v':
			sbrig_log_set_sink(NULL, NULL, SBRIG_LOG_DEBUG);
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
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	link = sbrig_link_new(argv[optind], &opts);
	if (!link) {
		fprintf(stderr, "sbrig-linkdump: %s\n", sbrig_errmsg());
		return errno == EINVAL ? 2 : 1;
	}
	for (i = 0; i < n_cmds; i++)
		if (queue_cmd(link, cmds[i]))
			ret = 1;
	start = sbrig_now_ns();
	if (duration_s >= 0)
		end_ns = start + (int64_t)(duration_s * 1e9);

	while (!quit) {
		now = sbrig_now_ns();
		sbrig_link_process(link, 0, now);
		nfds = 0;
		li = si = -1;
		if (sbrig_link_pollfd(link, &pfd[0]))
			li = nfds++;
		if (use_stdin) {
			si = nfds;
			pfd[nfds].fd = 0;
			pfd[nfds].events = POLLIN;
			pfd[nfds].revents = 0;
			nfds++;
		}
		while (sbrig_link_next(link, &msg)) {
			print_msg(&msg);
			if (msg.type == SBRIG_LINK_EVENT)
				events++;
		}
		if (max_events >= 0 && events >= max_events)
			break;
		if (now >= end_ns)
			break;
		dl = sbrig_link_deadline(link);
		if (dl > end_ns)
			dl = end_ns;
		timeout = dl <= now ? 0 : (int)((dl - now + MS - 1) / MS);
		if (timeout > 1000)
			timeout = 1000;
		if (poll(pfd, (nfds_t)nfds, timeout) < 0) {
			if (errno == EINTR)
				continue;
			perror("sbrig-linkdump: poll");
			ret = 1;
			break;
		}
		now = sbrig_now_ns();
		if (si >= 0 && pfd[si].revents &&
		    read_stdin(link, inbuf, sizeof(inbuf), &inlen) < 0)
			use_stdin = false;	/* EOF: keep running */
		if (li >= 0)
			sbrig_link_process(link, pfd[li].revents, now);
	}
	while (sbrig_link_next(link, &msg))
		print_msg(&msg);
	print_status(link);
	sbrig_link_free(link);
	return ret;

bad_num:
	fprintf(stderr, "sbrig-linkdump: bad number '%s'\n", optarg);
	return 2;
}
