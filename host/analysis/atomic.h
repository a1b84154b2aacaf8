/* SPDX-License-Identifier: GPL-2.0 */
/*
 * atomic.h - the analysis library's one way to write an output file.
 *
 * A file is written into PATH.tmp.PID, fsync'd and renamed over PATH
 * (then the directory fsync'd), so a failure leaves PATH as it was and no
 * temporary behind. A PATH that exists and is no regular file (/dev/null,
 * a FIFO, a terminal) is written in place. The directories PATH lacks are
 * created first (sbrig_mkdir_parent()). Errors name PATH.
 */
#ifndef SBRIG_ANALYSIS_ATOMIC_H
#define SBRIG_ANALYSIS_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/**
 * struct an_atomic - a file being written (an_atomic_open())
 * @f: where to write (stdio; its errors are looked at on close)
 * @path: the file's name as the caller gave it
 * @tmp: the temporary ("" when written in place)
 */
struct an_atomic {
	FILE *f;
	const char *path;
	char tmp[4096 + 32];
};

/*
 * Start writing @path: @w->f is the stream. Return 0 or -errno
 * (sbrig_errmsg() set); on success an_atomic_close() or an_atomic_abort()
 * must follow. @path must stay valid until then.
 */
int an_atomic_open(struct an_atomic *w, const char *path);

/*
 * Finish: flush, fsync, rename into place. On any error (a write that
 * failed earlier included) the temporary is removed and @path is as it
 * was. Return 0 or -errno with sbrig_errmsg() naming @path.
 */
int an_atomic_close(struct an_atomic *w);

/* Give up: close and remove the temporary; @path is as it was. */
void an_atomic_abort(struct an_atomic *w);

/* Write @len bytes of @text to @path with the above. 0 or -errno. */
int an_write_atomic(const char *path, const char *text, size_t len);

#endif /* SBRIG_ANALYSIS_ATOMIC_H */
