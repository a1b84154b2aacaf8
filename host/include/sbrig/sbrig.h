/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: libsbrig conventions
 *
 * libsbrig is the rig's I/O, capture and analysis library. Each module has
 * one public header in include/sbrig/ and one .c per object in lib/; objects
 * are opaque and come in `sbrig_<object>_new()` / `sbrig_<object>_free()`
 * pairs. Free functions accept NULL.
 *
 * Error convention (the only one in libsbrig):
 *
 * - Functions returning int return 0 (or a non-negative count) on success
 *   and a negative errno value on failure.
 * - Constructors return a pointer, or NULL with errno set.
 * - Whoever fails also records a human-readable message naming *where* it
 *   went wrong (file:line, field, URI, device) in a thread-local buffer:
 *   read it with sbrig_errmsg() right after the failing call. Errors of
 *   third-party libraries (libgpiod, libiio, libserialport, libinih) are
 *   translated into -errno + message once, in the module that calls them.
 *
 * Time: every timestamp is an int64_t in nanoseconds; host timestamps are
 * CLOCK_MONOTONIC unless the name says otherwise. Units are in names
 * (t_ns, current_uA, energy_uJ, duration_ms).
 */
#ifndef SBRIG_SBRIG_H
#define SBRIG_SBRIG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBRIG_PRINTF(f, a) __attribute__((format(printf, f, a)))

/*
 * sbrig_version - the version of libsbrig and its programs: `git describe
 * --always --dirty` of the tree they were built from ("unknown" outside
 * git). Generated at build time (host/Makefile).
 */
extern const char sbrig_version[];

/**
 * sbrig_errmsg() - message recorded by the last failing libsbrig call
 *
 * Return: a thread-local string owned by libsbrig, valid until the next
 * libsbrig call on this thread; "" if nothing failed yet.
 */
const char *sbrig_errmsg(void);

/**
 * sbrig_set_error() - record an error message and return @err
 * @err: negative errno value to return (a positive value is negated)
 * @fmt: printf format of the message
 *
 * Used by libsbrig modules (and by sbrigd/sbrig) to fail with a message:
 * ``return sbrig_set_error(-EINVAL, "%s:%d: unknown key '%s'", ...);``
 *
 * Return: @err as a negative errno value.
 */
int sbrig_set_error(int err, const char *fmt, ...) SBRIG_PRINTF(2, 3);

/**
 * sbrig_prefix_error() - prepend context to the recorded message
 * @fmt: printf format of the prefix; ": " and the old message follow it
 */
void sbrig_prefix_error(const char *fmt, ...) SBRIG_PRINTF(1, 2);

/** enum sbrig_log_level - severity of a log message */
enum sbrig_log_level {
	SBRIG_LOG_ERR,
	SBRIG_LOG_WARN,
	SBRIG_LOG_INFO,
	SBRIG_LOG_DEBUG,
};

/**
 * typedef sbrig_log_fn - log sink
 * @level: severity
 * @msg: formatted message without trailing newline
 * @data: the pointer given to sbrig_log_set_sink()
 */
typedef void (*sbrig_log_fn)(enum sbrig_log_level level, const char *msg,
			     void *data);

/**
 * sbrig_log_set_sink() - route library log messages
 * @fn: sink, or NULL for the default (stderr, "sbrig: " prefix)
 * @data: passed to @fn
 * @max_level: messages above this level are dropped
 *
 * Not thread-safe against concurrent logging: call it once at start-up.
 */
void sbrig_log_set_sink(sbrig_log_fn fn, void *data,
			enum sbrig_log_level max_level);

/**
 * sbrig_log() - log a message through the configured sink
 * @level: severity
 * @fmt: printf format
 *
 * Safe to call from any thread.
 */
void sbrig_log(enum sbrig_log_level level, const char *fmt, ...)
	SBRIG_PRINTF(2, 3);

/**
 * sbrig_now_ns() - host CLOCK_MONOTONIC now
 *
 * Return: nanoseconds.
 */
int64_t sbrig_now_ns(void);

/**
 * sbrig_mkdir_p() - create a directory and whatever parents it lacks
 * @dir: the directory (relative to the working directory, or absolute)
 * @mode: mode of each directory created (the umask applies)
 *
 * Every output of the programs goes through this or sbrig_mkdir_parent(),
 * so an output option (-o DIR, -o FILE, --html FILE, --csv FILE) creates
 * what it needs in the same way everywhere. Directories that exist
 * already, @dir included, are fine.
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the directory that
 * could not be created ("DIR: mkdir: why").
 */
int sbrig_mkdir_p(const char *dir, mode_t mode);

/**
 * sbrig_mkdir_parent() - create the directories a file path lacks
 * @path: a file's path; everything before its last '/' is created
 * @mode: as for sbrig_mkdir_p()
 *
 * Return: 0 (also for a path without '/'), or -errno as sbrig_mkdir_p().
 */
int sbrig_mkdir_parent(const char *path, mode_t mode);

/**
 * sbrig_term() - a string someone else wrote, safe to print on a terminal
 * @s: the string (a commit, a scenario, a blocker name, ...)
 * @buf: where the copy goes
 * @size: its size (at least 8)
 *
 * Control bytes (below 0x20, and 0x7f: escape sequences, carriage
 * returns, bells) are written as \xNN, and a backslash as \\, so what
 * is printed cannot move the cursor, retitle the window or hide text; a
 * copy that does not fit ends in "...".
 *
 * Return: @buf.
 */
const char *sbrig_term(const char *s, char *buf, size_t size);

/* the longest rig name sbrig_rig_name_check() accepts */
#define SBRIG_RIG_NAME_MAX 64

/**
 * sbrig_rig_name_check() - is @name a rig's name on this host?
 * @name: the name (sbrig -r, $SBRIG_RIG, sbrigd -r, sbrigd@NAME.service)
 * @why: where the reason goes when it is not
 * @size: size of @why
 *
 * A rig name is 1 to SBRIG_RIG_NAME_MAX letters, digits, '.', '_' and
 * '-', not starting with '.' or '-', with no ".." in it: it names the
 * files /etc/sbrig/NAME.conf and RUN_DIR/NAME.sock, so it can hold no
 * path separator, no control character and never climb out of their
 * directory. The one rule for the client and the daemon.
 *
 * Return: 0, or -EINVAL with the reason, naming the offending
 * character's position, in @why.
 */
int sbrig_rig_name_check(const char *name, char *why, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_SBRIG_H */
