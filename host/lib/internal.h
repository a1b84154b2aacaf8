/* SPDX-License-Identifier: GPL-2.0 */
/*
 * internal.h - private helpers shared by libsbrig's modules. Not installed.
 */
#ifndef SBRIG_INTERNAL_H
#define SBRIG_INTERNAL_H

#include <sbrig/sbrig.h>

#define SBRIG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define sbrig_err(...) sbrig_log(SBRIG_LOG_ERR, __VA_ARGS__)
#define sbrig_warn(...) sbrig_log(SBRIG_LOG_WARN, __VA_ARGS__)
#define sbrig_info(...) sbrig_log(SBRIG_LOG_INFO, __VA_ARGS__)
#define sbrig_dbg(...) sbrig_log(SBRIG_LOG_DEBUG, __VA_ARGS__)

#endif /* SBRIG_INTERNAL_H */
