/* SPDX-License-Identifier: GPL-2.0 */
/*
 * internal.h - private helpers shared by libsbrig's modules. Not installed.
 */
#ifndef SBRIG_INTERNAL_H
#define SBRIG_INTERNAL_H

#include <stddef.h>

#include <sbrig/sbrig.h>

#define SBRIG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/**
 * sbrig_path_stem() - a file's base name up to its first '.'
 * @dst: out, NUL-terminated, cut to @size - 1 bytes
 * @size: size of @dst (> 0)
 * @path: the path ("rig/scenarios/demo.scn" gives "demo")
 */
void sbrig_path_stem(char *dst, size_t size, const char *path);

#define sbrig_err(...) sbrig_log(SBRIG_LOG_ERR, __VA_ARGS__)
#define sbrig_warn(...) sbrig_log(SBRIG_LOG_WARN, __VA_ARGS__)
#define sbrig_info(...) sbrig_log(SBRIG_LOG_INFO, __VA_ARGS__)
#define sbrig_dbg(...) sbrig_log(SBRIG_LOG_DEBUG, __VA_ARGS__)

#endif /* SBRIG_INTERNAL_H */
