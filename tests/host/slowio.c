// SPDX-License-Identifier: GPL-2.0
/*
 * slowio.c - LD_PRELOAD shim that makes a disk and a DNS server slow:
 * fdatasync() and fsync() sleep SLOWSYNC_MS milliseconds before their
 * work (an SD card, a busy NFS server), getaddrinfo() of a name (not of
 * an address) sleeps SLOWDNS_MS (a DNS server that does not answer).
 * Unset means no delay. With SLOWSYNC_LOG set, each slowed call appends
 * its CLOCK_MONOTONIC time (ns) to that file, one line a call, so a test
 * can tell that the syncs did happen while it watched. The suite cannot make a real disk or resolver
 * that slow on every machine (no device-mapper delay target, no DNS
 * server of its own), so this stands in for them: tests/test_sbrigd.py
 * checks that sbrigd's poll loop keeps answering meanwhile.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void slow(const char *var)
{
	const char *ms = getenv(var);
	long v = ms ? strtol(ms, NULL, 10) : 0;
	struct timespec ts = { v / 1000, (v % 1000) * 1000000L };

	if (v > 0)
		nanosleep(&ts, NULL);
}

/* Say when a sync was slowed (SLOWSYNC_LOG), one O_APPEND write a call. */
static void log_sync(void)
{
	const char *path = getenv("SLOWSYNC_LOG");
	struct timespec now;
	char line[32];
	int fd, n;

	if (!path)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	n = snprintf(line, sizeof(line), "%lld\n",
		     (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

int fdatasync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");

	slow("SLOWSYNC_MS");
	log_sync();
	return real(fd);
}

int fsync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");

	slow("SLOWSYNC_MS");
	return real(fd);
}

int getaddrinfo(const char *node, const char *service,
		const struct addrinfo *hints, struct addrinfo **res)
{
	int (*real)(const char *, const char *, const struct addrinfo *,
		    struct addrinfo **) =
		(int (*)(const char *, const char *, const struct addrinfo *,
			 struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");

	unsigned char addr[16];

	if (node && !(hints && (hints->ai_flags & AI_NUMERICHOST)) &&
	    inet_pton(AF_INET, node, addr) != 1 &&
	    inet_pton(AF_INET6, node, addr) != 1)
		slow("SLOWDNS_MS");
	return real(node, service, hints, res);
}
