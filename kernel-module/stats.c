// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs suspend_blockers: the seed's statistics table.
 *
 *	name  count  wake_count  active_since  total_time  sleep_time  max_time
 *	last_change
 *
 * (tab-separated, on one line), then one line per blocker such as
 *
 *	"main"  1  0  0  1200  0  1200  99000
 *
 * One line per blocker, inactive ones first, each group newest first,
 * name in double quotes, times in ns (last_change is CLOCK_MONOTONIC).
 * See core.c for the semantics.
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include "sb_internal.h"

static int sb_stats_show(struct seq_file *m, void *unused)
{
	unsigned long irqflags;

	seq_puts(m, "name\tcount\twake_count\tactive_since\ttotal_time\tsleep_time\tmax_time\tlast_change\n");
	spin_lock_irqsave(&suspend_blockers_lock, irqflags);
	sb_stats_show_locked(m);
	spin_unlock_irqrestore(&suspend_blockers_lock, irqflags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sb_stats);

static struct dentry *sb_stats_dentry;

/**
 * sb_stats_init() - create debugfs suspend_blockers
 * @dir:	debugfs directory (NULL: the debugfs root, as in the seed).
 *
 * Context: process context.
 * Return: 0; debugfs failures are not fatal.
 */
int sb_stats_init(struct dentry *dir)
{
	sb_stats_dentry = debugfs_create_file("suspend_blockers", 0444, dir,
					      NULL, &sb_stats_fops);
	return 0;
}

void sb_stats_exit(void)
{
	debugfs_remove(sb_stats_dentry);
}
