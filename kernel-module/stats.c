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
 * One line per blocker, newest (most recently initialised) first, name in
 * double quotes, times in ns (last_change is CLOCK_MONOTONIC). See core.c
 * for the semantics.
 *
 * The seed printed the table with its list lock held, which makes the
 * time every suspend_block() in the system may wait grow with the number
 * of blockers, and a user can register thousands. Here each open file has
 * a cursor in the blocker list: every row is copied under the lock on its
 * own (consistent in itself) and the cursor moved past it, so the lock is
 * held for one row at a time whatever the number of blockers, and seq_file
 * growing its buffer re-prints the row it has, without walking the list
 * again. A blocker destroyed while the table is read is not listed, one
 * initialised meanwhile is not either (it goes before the cursor), and a
 * blocker that changes state shows the state it had when its row was
 * copied.
 */

#include <linux/debugfs.h>
#include <linux/log2.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include "sb_internal.h"

#define SB_STATS_NAME_CAP	64	/* first name buffer; grows */

/**
 * struct sb_stats_iter - one open table file
 * @cursor:	Its place in the blocker list (SBLK_CURSOR).
 * @row:	The row last copied; its name buffer grows as needed.
 * @row_pos:	The seq_file position of @row.
 * @next_pos:	The position of the row the cursor gives next.
 * @have_row:	@row is valid.
 *
 * Only the file's own (serialised) reads touch it, but the cursor's link,
 * which suspend_blockers_lock protects.
 */
struct sb_stats_iter {
	struct suspend_blocker cursor;
	struct sb_stats_row row;
	loff_t row_pos;
	loff_t next_pos;
	bool have_row;
};

static void sb_stats_rewind(struct sb_stats_iter *it)
{
	sb_stats_cursor_reset(&it->cursor);
	it->have_row = false;
	it->next_pos = 1;
}

/* The next row into it->row: 1, 0 at the end, or -ENOMEM. */
static int sb_stats_fetch(struct sb_stats_iter *it)
{
	int ret;

	for (;;) {
		ret = sb_stats_cursor_next(&it->cursor, &it->row);
		if (ret != -ENOSPC)
			break;
		/* Grown outside the lock; the cursor did not move. */
		kfree(it->row.name);
		it->row.cap = roundup_pow_of_two(it->row.name_len + 1);
		it->row.name = kmalloc(it->row.cap, GFP_KERNEL);
		if (!it->row.name) {
			it->row.cap = 0;
			it->have_row = false;
			return -ENOMEM;
		}
	}
	it->have_row = ret > 0;
	if (it->have_row)
		it->row_pos = it->next_pos++;
	return ret;
}

static void *sb_stats_fetch_ptr(struct sb_stats_iter *it)
{
	int ret = sb_stats_fetch(it);

	return ret > 0 ? it : ret < 0 ? ERR_PTR(ret) : NULL;
}

static void *sb_stats_start(struct seq_file *m, loff_t *pos)
{
	struct sb_stats_iter *it = m->private;

	if (!*pos) {
		sb_stats_rewind(it);
		return SEQ_START_TOKEN;
	}
	if (it->have_row && it->row_pos == *pos)
		return it;		/* re-printed in a larger buffer */
	if (*pos != it->next_pos) {
		/* a seek: count rows from the top */
		sb_stats_rewind(it);
		while (it->next_pos < *pos) {
			int ret = sb_stats_fetch(it);

			if (ret <= 0)
				return ret ? ERR_PTR(ret) : NULL;
		}
	}
	return sb_stats_fetch_ptr(it);
}

static void *sb_stats_next(struct seq_file *m, void *v, loff_t *pos)
{
	struct sb_stats_iter *it = m->private;

	++*pos;
	return sb_stats_fetch_ptr(it);
}

static void sb_stats_stop(struct seq_file *m, void *v)
{
}

static int sb_stats_show(struct seq_file *m, void *v)
{
	const struct sb_stats_row *r = &((struct sb_stats_iter *)m->private)->row;

	if (v == SEQ_START_TOKEN) {
		seq_puts(m, "name\tcount\twake_count\tactive_since\ttotal_time\tsleep_time\tmax_time\tlast_change\n");
		return 0;
	}
	seq_printf(m, "\"%s\"\t%u\t%u\t%lld\t%lld\t%lld\t%lld\t%lld\n",
		   r->name, r->count, r->wake_count,
		   ktime_to_ns(r->active_time), ktime_to_ns(r->total_time),
		   ktime_to_ns(r->sleep_time), ktime_to_ns(r->max_time),
		   ktime_to_ns(r->last_change));
	return 0;
}

static const struct seq_operations sb_stats_seq_ops = {
	.start	= sb_stats_start,
	.next	= sb_stats_next,
	.stop	= sb_stats_stop,
	.show	= sb_stats_show,
};

static int sb_stats_open(struct inode *inode, struct file *file)
{
	struct sb_stats_iter *it;

	it = __seq_open_private(file, &sb_stats_seq_ops, sizeof(*it));
	if (!it)
		return -ENOMEM;
	INIT_LIST_HEAD(&it->cursor.link);
	it->cursor.flags = SBLK_CURSOR;
	it->row.cap = SB_STATS_NAME_CAP;
	it->row.name = kmalloc(it->row.cap, GFP_KERNEL);
	if (!it->row.name) {
		seq_release_private(inode, file);
		return -ENOMEM;
	}
	return 0;
}

static int sb_stats_release(struct inode *inode, struct file *file)
{
	struct sb_stats_iter *it = ((struct seq_file *)file->private_data)->private;

	sb_stats_cursor_del(&it->cursor);
	kfree(it->row.name);
	return seq_release_private(inode, file);
}

static const struct file_operations sb_stats_fops = {
	.owner		= THIS_MODULE,
	.open		= sb_stats_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= sb_stats_release,
};

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
