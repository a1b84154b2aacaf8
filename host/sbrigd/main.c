// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - sbrigd: the rig daemon.
 *
 * Parses the command line, initialises the modules in dependency order
 * (sched -> rig -> evlog, rec -> run, lat, agentop -> srv; each calls
 * only the ones before it; sleepwatch, which run and agentop embed, has
 * no state of its own), runs the poll() loop and finalises them in
 * reverse.
 * SIGTERM/SIGINT only write a byte to a self-pipe; the loop then stops,
 * the server stops what runs (a capture is closed with status "aborted",
 * its client gets the final answer, no further request is started) and
 * the daemon exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentop.h"
#include "evlog.h"
#include "latency.h"
#include "rec.h"
#include "rig.h"
#include "run.h"
#include "sched.h"
#include "server.h"
#include "util.h"

#define DEFAULT_SOCKET "/run/sbrig/sbrigd.sock"
/* -r NAME: /etc/sbrig/NAME.conf and RUN_DIR/NAME.sock, as sbrigd@NAME */
#define CONF_DIR "/etc/sbrig"
#define DEFAULT_RUN_DIR "/run/sbrig"
#define MAX_OVERRIDES 64

static int signal_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	(void)!write(signal_pipe[1], &c, 1);
	errno = saved;
}

static void signal_readable(int fd, short revents, void *data)
{
	char c;

	if (read(fd, &c, 1) == 1)
		log_info("signal %d: stopping", c);
	sched_quit();
}

static int signals_init(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return sbrig_set_error(-errno, "pipe: %s", strerror(errno));
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return sched_fd_add(signal_pipe[0], POLLIN, signal_readable, NULL);
}

static void signals_fini(void)
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	if (signal_pipe[0] >= 0) {
		sched_fd_del(signal_pipe[0]);
		close(signal_pipe[0]);
		close(signal_pipe[1]);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sbrigd -c RIG.conf [-s SOCKET] [-o SECTION.KEY=VALUE]... [-v]\n"
"       sbrigd -r NAME [-c RIG.conf] [-s SOCKET] [-o SECTION.KEY=VALUE]... [-v]\n"
"\n"
"The sbrig rig daemon: owns the rig's GPIO lines, power sensor and target\n"
"link, and serves sbrig(1) on a Unix socket. Runs in the foreground and\n"
"logs to stderr.\n"
"\n"
"  -r, --rig NAME        this is the rig NAME of the host (sbrigd@NAME):\n"
"                        1-%d letters, digits, '.', '_', '-', not starting\n"
"                        with '.' or '-', no '..' (as sbrig -r); the\n"
"                        defaults become " CONF_DIR "/NAME.conf and\n"
"                        $SBRIG_RUN_DIR/NAME.sock (" DEFAULT_RUN_DIR ")\n"
"  -c, --config FILE     rig description (sbrig.conf(5)); required\n"
"                        without -r\n"
"  -s, --socket PATH     socket to listen on (default: with -r as above,\n"
"                        else $SBRIG_SOCKET or " DEFAULT_SOCKET ");\n"
"                        created mode 0660\n"
"  -o, --set S.K=V       override a config key (repeatable)\n"
"  -v, --verbose         log debug messages too\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n"
"\n"
"Exit status: 0 stopped by SIGTERM/SIGINT, 1 start-up failed, 2 usage error.\n",
		SBRIG_RIG_NAME_MAX);
}

static const struct option long_opts[] = {
	{ "rig", required_argument, NULL, 'r' },
	{ "config", required_argument, NULL, 'c' },
	{ "socket", required_argument, NULL, 's' },
	{ "set", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The rig name of -r, checked by the rule sbrig -r uses: it becomes a
 * file name in two directories. @conf and @sock (PATH_MAX each) get its
 * default paths. 0, or 2 (usage error) after printing why not.
 */
static int rig_paths(const char *name, char *conf, char *sock)
{
	const char *run_dir = getenv("SBRIG_RUN_DIR");
	char why[128], shown[4 * SBRIG_RIG_NAME_MAX + 8];

	if (sbrig_rig_name_check(name, why, sizeof(why)) < 0) {
		fprintf(stderr, "sbrigd: -r: bad rig name '%s': %s\n",
			sbrig_term(name, shown, sizeof(shown)), why);
		return 2;
	}
	if (!run_dir || !*run_dir)
		run_dir = DEFAULT_RUN_DIR;
	snprintf(conf, PATH_MAX, CONF_DIR "/%s.conf", name);
	if ((size_t)snprintf(sock, PATH_MAX, "%s/%s.sock", run_dir, name) >=
	    PATH_MAX) {
		fprintf(stderr, "sbrigd: -r: the socket path in $SBRIG_RUN_DIR "
			"is too long\n");
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char rig_conf[PATH_MAX], rig_sock[PATH_MAX];
	const char *config = NULL, *sock = NULL, *rig = NULL;
	char *overrides[MAX_OVERRIDES];
	int noverrides = 0, verbose = 0, opt, ret;

	while ((opt = getopt_long(argc, argv, "r:c:s:o:vhV", long_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'r':
			rig = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'o':
			if (noverrides == MAX_OVERRIDES) {
				fprintf(stderr, "sbrigd: too many -o\n");
				return 2;
			}
			overrides[noverrides++] = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("sbrigd %s\n", sbrig_version);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sbrigd: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (rig) {
		if (rig_paths(rig, rig_conf, rig_sock))
			return 2;
		config = config ?: rig_conf;
		sock = sock ?: rig_sock;
	}
	if (!config) {
		fprintf(stderr, "sbrigd: -c RIG.conf (or -r NAME) is required\n");
		usage(stderr);
		return 2;
	}
	if (!sock)
		sock = getenv("SBRIG_SOCKET");
	if (!sock || !*sock)
		sock = DEFAULT_SOCKET;
	sbrig_log_set_sink(NULL, NULL, verbose ? SBRIG_LOG_DEBUG :
			   SBRIG_LOG_INFO);

	ret = sched_init();
	if (ret < 0)
		goto fail;
	ret = signals_init();
	if (ret < 0)
		goto fini_sched;
	ret = rig_init(config, overrides, noverrides);
	if (ret < 0)
		goto fini_signals;
	ret = evlog_init();
	if (ret < 0)
		goto fini_rig;
	ret = rec_init();
	if (ret < 0)
		goto fini_evlog;
	ret = run_init();
	if (ret < 0)
		goto fini_rec;
	ret = lat_init();
	if (ret < 0)
		goto fini_run;
	ret = agentop_init();
	if (ret < 0)
		goto fini_lat;
	ret = srv_init(sock);
	if (ret < 0)
		goto fini_agentop;

	ret = sched_run();
	if (ret < 0)
		log_err("%s", sbrig_errmsg());
	srv_shutdown();
	/* the capture's end waits for the sensor's stop: its client hears it */
	rig_sensor_drain(10 * NS_PER_S);

	srv_fini();
fini_agentop:
	agentop_fini();
fini_lat:
	lat_fini();
fini_run:
	run_fini();
fini_rec:
	rec_fini();
fini_evlog:
	evlog_fini();
fini_rig:
	rig_fini();
fini_signals:
	signals_fini();
fini_sched:
	sched_fini();
fail:
	if (ret < 0) {
		fprintf(stderr, "sbrigd: %s\n", sbrig_errmsg());
		return 1;
	}
	log_info("stopped");
	return 0;
}
