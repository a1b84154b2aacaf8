/* SPDX-License-Identifier: GPL-2.0 */
/*
 * atomic.h - the analysis library's one way to write an output file.
 */
#ifndef SBRIG_ANALYSIS_ATOMIC_H
#define SBRIG_ANALYSIS_ATOMIC_H

#include <stddef.h>

/*
 * Write @len bytes of @text to @path: into PATH.tmp.PID, fsync'd and
 * renamed over @path (then the directory fsync'd), so a failure leaves
 * @path as it was and no temporary behind. The directories @path lacks
 * are created first (sbrig_mkdir_parent()). A @path that exists and is no
 * regular file (/dev/null, a FIFO, a terminal) is written in place.
 * Errors name @path. Return 0 or -errno (sbrig_errmsg() set).
 */
int an_write_atomic(const char *path, const char *text, size_t len);

#endif /* SBRIG_ANALYSIS_ATOMIC_H */
