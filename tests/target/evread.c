// SPDX-License-Identifier: GPL-2.0
/*
 * evread - read debugfs suspend_blocker_events the way a slow reader would
 *
 *	evread [-b BYTES] [-p MS] PHASE...
 *
 * Opens the event log once, then for each PHASE: "drain" reads with
 * O_NONBLOCK until EAGAIN and prints every line; "poll" waits up to -p MS
 * (default 2000) for POLLIN and prints "poll=1" or "poll=0"; "wait" reads
 * a line from stdin and "sleep:MS" sleeps (so a test can make events
 * happen meanwhile);
 * "epoll" waits up to -p MS in epoll_wait() on an epoll set that holds the
 * log with EPOLLIN|EPOLLWAKEUP (a reader that keeps the system awake until
 * it has read, as Android's suspend daemons do; needs CAP_BLOCK_SUSPEND)
 * and prints "epoll=1" or "epoll=0";
 * "small" issues one read with a buffer of -b BYTES and prints the result
 * or "errno=N"; "fault:N" issues one read of 4096 bytes into a buffer
 * whose first N bytes are mapped and the rest is not, and prints
 * "fault=RET" or "fault errno=N", then the lines it got. Lines are printed as read; stdout is flushed after each
 * phase. "follow:MS" reads for MS ms as a steady reader does (wait up to
 * -p MS in poll() for POLLIN, read until EAGAIN, again), checking that
 * the record numbers run without gaps except where a "lost N" record
 * says so, and that every attempt of the worker in which a blocker was
 * activated before the dpm_suspend_late phase was aborted; it prints only
 * a summary line, "follow records=R lost=L reads=K gaps=G bad=B
 * attempts=A aborted=X early_blocked=E violations=V" (attempts with a
 * lost record are not judged). "wfollow:MS" does the same with an epoll set
 * that holds the log with EPOLLIN|EPOLLWAKEUP (needs CAP_BLOCK_SUSPEND).
 * Exit status: 0, 1 on an unexpected error, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EVENTS "/sys/kernel/debug/suspend_blocker_events"

static int drain(int fd)
{
	char buf[8192];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			fprintf(stderr, "evread: read: %s\n",
				n ? strerror(errno) : "EOF");
			return 1;
		}
		fwrite(buf, 1, n, stdout);
	}
}

/* What follow() saw. */
struct follow_stats {
	unsigned long records, lost, reads, gaps, bad;
	long long next;		/* the record number expected next, -1: any */
	/* the worker's attempts: "suspend" up to "resume" or "abort" */
	unsigned long attempts, aborted, early, violations;
	bool in_attempt;	/* after a "suspend" record */
	bool whole;		/* no record of this attempt was lost */
	bool blocked;		/* a block before dpm_suspend_late began */
	bool late;		/* dpm_suspend_late has begun */
};

/*
 * A blocker activated during an attempt, before the dpm_suspend_late
 * phase begins, must abort it: every device's late callback is preceded
 * by a pm_wakeup_pending() check, which the module's activation (its
 * wakeup source's event, its pm_system_wakeup()) makes true. After that
 * a test suspend (pm_test) or s2idle may return 0 anyway.
 */
static void follow_attempt(struct follow_stats *st, long long seq,
			   const char *type, const char *arg)
{
	if (!strcmp(type, "suspend")) {
		st->in_attempt = st->whole = true;
		st->blocked = st->late = false;
	} else if (!st->in_attempt) {
		return;
	} else if (!strcmp(type, "lost")) {
		st->whole = false;
	} else if (!strcmp(type, "block")) {
		st->blocked |= !st->late;
	} else if (!strcmp(type, "phase")) {
		st->late |= !strncmp(arg, "dpm_suspend_late ", 17);
	} else if (!strcmp(type, "resume") || !strcmp(type, "abort")) {
		st->in_attempt = false;
		st->attempts++;
		st->aborted += type[0] == 'a';
		if (!st->whole || !st->blocked)
			return;
		st->early++;
		if (type[0] == 'r') {
			st->violations++;
			fprintf(stderr, "evread: attempt ending at record %lld: blocked before dpm_suspend_late, not aborted\n",
				seq);
		}
	}
}

/* Check one line "SEQ\tT_NS\tTYPE\tARG" against the numbering. */
static void follow_line(struct follow_stats *st, const char *line)
{
	long long seq, t_ns;
	unsigned long n;
	char type[24];
	int arg;

	if (sscanf(line, "%lld\t%lld\t%23s\t%n", &seq, &t_ns, type, &arg) != 3) {
		st->bad++;
		return;
	}
	if (st->next >= 0 && seq != st->next)
		st->gaps++;
	follow_attempt(st, seq, type, line + arg);
	if (!strcmp(type, "lost") &&
	    sscanf(line, "%*d\t%*d\tlost\t%lu", &n) == 1) {
		st->lost += n;
		st->next = seq + n;
		return;
	}
	st->records++;
	st->next = seq + 1;
}

/*
 * Read the log for @ms ms, waiting in poll() or (@ep >= 0) epoll_wait()
 * between reads; lines may be split across reads.
 */
static int follow(int fd, int ep, int ms, int wait_ms)
{
	struct follow_stats st = { .next = -1 };
	char buf[8192 + 256], *start, *nl;
	struct timespec now, end;
	size_t have = 0;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		if (ep >= 0) {
			struct epoll_event ev;

			if (epoll_wait(ep, &ev, 1, wait_ms) < 0 && errno != EINTR) {
				perror("evread: epoll_wait");
				return 1;
			}
		} else {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, wait_ms) < 0 && errno != EINTR) {
				perror("evread: poll");
				return 1;
			}
		}
		for (;;) {
			n = read(fd, buf + have, sizeof(buf) - 1 - have);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0) {
				fprintf(stderr, "evread: read: %s\n",
					n ? strerror(errno) : "EOF");
				return 1;
			}
			st.reads++;
			have += n;
			buf[have] = '\0';
			start = buf;
			while ((nl = strchr(start, '\n'))) {
				*nl = '\0';
				follow_line(&st, start);
				start = nl + 1;
			}
			have -= start - buf;
			memmove(buf, start, have);
			if (have >= sizeof(buf) - 256) {	/* no newline */
				st.bad++;
				have = 0;
			}
		}
	}
	printf("follow records=%lu lost=%lu reads=%lu gaps=%lu bad=%lu attempts=%lu aborted=%lu early_blocked=%lu violations=%lu\n",
	       st.records, st.lost, st.reads, st.gaps, st.bad, st.attempts,
	       st.aborted, st.early, st.violations);
	return 0;
}

/* A read whose buffer ends after @valid bytes, at an unmapped page. */
static int fault_read(int fd, size_t valid)
{
	long psize = sysconf(_SC_PAGESIZE);
	size_t span = (valid + psize - 1) / psize * psize;
	char *base, *buf;
	ssize_t n;

	base = mmap(NULL, span + psize, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED || munmap(base + span, psize)) {
		perror("evread: mmap");
		return 1;
	}
	buf = base + span - valid;
	n = read(fd, buf, 4096);
	if (n < 0) {
		printf("fault errno=%d\n", errno);
	} else {
		printf("fault=%zd\n", n);
		fwrite(buf, 1, n, stdout);
	}
	munmap(base, span);
	return 0;
}

int main(int argc, char **argv)
{
	size_t small = 64;
	int poll_ms = 2000, opt, fd, i, ret = 0, ep = -1;
	char line[256];

	while ((opt = getopt(argc, argv, "b:p:h")) != -1) {
		switch (opt) {
		case 'b':
			small = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			poll_ms = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: evread [-b BYTES] [-p MS] drain|poll|epoll|wait|sleep:MS|small|fault:N|follow:MS|wfollow:MS...\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	fd = open(EVENTS, O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		perror("evread: " EVENTS);
		return 1;
	}
	for (i = optind; i < argc && !ret; i++) {
		if (!strcmp(argv[i], "drain")) {
			ret = drain(fd);
		} else if (!strcmp(argv[i], "poll")) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			printf("poll=%d\n", poll(&p, 1, poll_ms) == 1 &&
			       (p.revents & POLLIN));
		} else if (!strcmp(argv[i], "epoll") ||
			   !strncmp(argv[i], "wfollow:", 8)) {
			struct epoll_event ev = {
				.events = EPOLLIN | EPOLLWAKEUP,
			};

			if (ep < 0) {
				ep = epoll_create1(EPOLL_CLOEXEC);
				if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
					perror("evread: epoll");
					ret = 1;
					break;
				}
			}
			if (argv[i][0] == 'w')
				ret = follow(fd, ep, atoi(argv[i] + 8), poll_ms);
			else
				printf("epoll=%d\n",
				       epoll_wait(ep, &ev, 1, poll_ms) == 1);
		} else if (!strncmp(argv[i], "follow:", 7)) {
			ret = follow(fd, -1, atoi(argv[i] + 7), poll_ms);
		} else if (!strcmp(argv[i], "wait")) {
			if (!fgets(line, sizeof(line), stdin))
				line[0] = '\0';
		} else if (!strncmp(argv[i], "sleep:", 6)) {
			usleep(atoi(argv[i] + 6) * 1000);
		} else if (!strncmp(argv[i], "fault:", 6)) {
			ret = fault_read(fd, strtoul(argv[i] + 6, NULL, 0));
		} else if (!strcmp(argv[i], "small")) {
			char *buf = malloc(small);
			ssize_t n = buf ? read(fd, buf, small) : -1;

			if (n < 0)
				printf("errno=%d\n", errno);
			else
				printf("read=%zd\n", n);
			free(buf);
		} else {
			fprintf(stderr, "evread: unknown phase '%s'\n", argv[i]);
			ret = 2;
		}
		fflush(stdout);
	}
	if (ep >= 0)
		close(ep);
	close(fd);
	return ret;
}
