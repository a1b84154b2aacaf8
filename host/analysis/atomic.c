// SPDX-License-Identifier: GPL-2.0
/*
 * atomic.c - output files written whole or not at all (atomic.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sbrig/sbrig.h>

#include "atomic.h"

int an_write_atomic(const char *path, const char *text, size_t len)
{
	char tmp[4096 + 32], dir[4096];
	const char *slash;
	struct stat st;
	size_t off = 0;
	bool in_place;
	int fd, dfd, ret = 0;

	/*
	 * A path that exists and is no regular file (/dev/null, a FIFO) is
	 * written in place: a file renamed over it would replace the device
	 * (as root, `-o /dev/null` did)
	 */
	in_place = !stat(path, &st) && !S_ISREG(st.st_mode);
	if (!in_place && (ret = sbrig_mkdir_parent(path, 0755)) < 0)
		return ret;	/* the directory named */
	if (in_place) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
	} else {
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path,
				     (long)getpid()) >= sizeof(tmp))
			return sbrig_set_error(-ENAMETOOLONG,
					       "%s: path too long", path);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST && !unlink(tmp))	/* a dead one's */
			fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				  0644);
	}
	if (fd < 0)	/* named as the caller knows it */
		return sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	if (!ret && !in_place && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && !in_place && rename(tmp, path) < 0)
		ret = -errno;
	if (ret) {
		if (!in_place)
			unlink(tmp);
		return sbrig_set_error(ret, "%s: %s", path, ret == -EIO ?
				       "short write" : strerror(-ret));
	}
	if (in_place)
		return 0;
	/* the rename itself reaches the disk with the directory */
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + 1), path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}
