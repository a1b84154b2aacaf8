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

int an_atomic_open(struct an_atomic *w, const char *path)
{
	struct stat st;
	int fd, ret;

	w->f = NULL;
	w->path = path;
	w->tmp[0] = '\0';
	/*
	 * A path that exists and is no regular file (/dev/null, a FIFO) is
	 * written in place: a file renamed over it would replace the device
	 * (as root, `-o /dev/null` did)
	 */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
	} else {
		ret = sbrig_mkdir_parent(path, 0755);
		if (ret < 0)
			return ret;	/* the directory named */
		if ((size_t)snprintf(w->tmp, sizeof(w->tmp), "%s.tmp.%ld", path,
				     (long)getpid()) >= sizeof(w->tmp))
			return sbrig_set_error(-ENAMETOOLONG,
					       "%s: path too long", path);
		fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST && !unlink(w->tmp)) /* a dead one's */
			fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL |
				  O_CLOEXEC, 0644);
	}
	if (fd < 0) {	/* named as the caller knows it */
		ret = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		w->tmp[0] = '\0';
		return ret;
	}
	w->f = fdopen(fd, "w");
	if (!w->f) {
		ret = sbrig_set_error(-errno, "%s: %s", path, strerror(errno));
		close(fd);
		if (w->tmp[0])
			unlink(w->tmp);
		return ret;
	}
	return 0;
}

void an_atomic_abort(struct an_atomic *w)
{
	if (w->f)
		fclose(w->f);
	w->f = NULL;
	if (w->tmp[0])
		unlink(w->tmp);
	w->tmp[0] = '\0';
}

int an_atomic_close(struct an_atomic *w)
{
	char dir[4096];
	const char *slash;
	int ret = 0, dfd;

	if (fflush(w->f) || ferror(w->f))
		ret = errno ? -errno : -EIO;
	if (!ret && w->tmp[0] && fsync(fileno(w->f)) < 0)
		ret = -errno;
	if (fclose(w->f) && !ret)
		ret = -errno;
	w->f = NULL;
	if (!ret && w->tmp[0] && rename(w->tmp, w->path) < 0)
		ret = -errno;
	if (ret) {
		if (w->tmp[0])
			unlink(w->tmp);
		w->tmp[0] = '\0';
		return sbrig_set_error(ret, "%s: %s", w->path, strerror(-ret));
	}
	if (!w->tmp[0])
		return 0;	/* written in place */
	w->tmp[0] = '\0';
	/* the rename itself reaches the disk with the directory */
	slash = strrchr(w->path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - w->path + 1),
			 w->path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int an_write_atomic(const char *path, const char *text, size_t len)
{
	struct an_atomic w;
	int ret;

	ret = an_atomic_open(&w, path);
	if (ret)
		return ret;
	errno = 0;
	if (fwrite(text, 1, len, w.f) != len && !errno)
		errno = EIO;	/* a short write: "short write" before */
	return an_atomic_close(&w);
}
