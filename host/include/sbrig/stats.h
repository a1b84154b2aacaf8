/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: parsers for the module's debugfs text
 *
 * suspend_blockers (the seed's stats table, header row + tab-separated
 * rows with quoted names) and suspend_blocker_events (SEQ T_NS TYPE ARG).
 * Both are parsed line by line so a line can be handed over as it arrives
 * (from a file or from the target link).
 */
#ifndef SBRIG_STATS_H
#define SBRIG_STATS_H

#include <stddef.h>

#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * sbrig_stats_parse_line() - parse one row of debugfs suspend_blockers
 * @line: the row (trailing newline allowed)
 * @row: out
 *
 * Return: 0 for a row, 1 for the header row, -EINVAL for anything else
 * (sbrig_errmsg() names the column).
 */
int sbrig_stats_parse_line(const char *line, struct sbrig_blocker_stats *row);

/**
 * sbrig_event_parse_line() - parse one line of suspend_blocker_events
 * @line: the line (trailing newline allowed)
 * @ev: out: seq, target_t_ns, type, arg, cut (host fields untouched)
 *
 * Return: 0, or -EINVAL (sbrig_errmsg() names the field).
 */
int sbrig_event_parse_line(const char *line, struct sbrig_event *ev);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_STATS_H */
