/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private interfaces between the parts of suspend_block.ko.
 *
 * core.c	blockers, the lists, the statistics and their lock
 * policy.c	policy/state in sysfs and the opportunistic suspend worker
 * pmhooks.c	PM notifier and noirq callbacks: where a suspend really is
 * userdev.c	/dev/suspend_blocker
 * sbevent.c	/dev/input/sbevent<N>: evdev-like nodes, the seed's input glue
 * keypad.c	the "sbrig,keypad" GPIO keypad driver (keypad-scan)
 * marker.c	the marker line: a GPIO asserted while a blocker is active
 * stats.c	debugfs suspend_blockers
 * events.c	debugfs suspend_blocker_events, the event ring
 * clock.c	sb_now(): the clock, also while timekeeping is suspended
 * kevents.c	kernel wakeup sources and suspend phases in the event log
 * work.c	suspend-blocking work
 * main.c	module init/exit, in dependency order
 */
#ifndef _SB_INTERNAL_H
#define _SB_INTERNAL_H

#include <linux/bits.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/suspend.h>
#include <linux/wait.h>
#include <linux/suspend_blocker.h>

/*
 * Flag bits in struct suspend_blocker::flags, as in the seed (whose
 * PREVENTING_SUSPEND bit the sleep clock of core.c replaces).
 */
#define SBLK_INITIALIZED		BIT(8)
#define SBLK_ACTIVE			BIT(9)
/* Not a blocker: a statistics reader's place in the list (stats.c). */
#define SBLK_CURSOR			BIT(10)

/* Debug mask bits (module parameter debug_mask), as in the seed. */
enum {
	SB_DEBUG_EXIT_SUSPEND	= 1U << 0,
	SB_DEBUG_WAKEUP		= 1U << 1,
	SB_DEBUG_USER_STATE	= 1U << 2,
	SB_DEBUG_SUSPEND	= 1U << 3,
	SB_DEBUG_SUSPEND_BLOCKER = 1U << 4,
	SB_DEBUG_FAILURE	= 1U << 5,
};

extern int sb_debug_mask;

/**
 * struct sb_stats_row - one line of the statistics table, as copied
 * @name:	Buffer for the name (NUL-terminated), @cap bytes.
 * @cap:	Size of @name.
 * @name_len:	Length of the name (also when it did not fit).
 * @count:	The seed's columns, an active blocker's running activation
 *		counted in.
 * @wake_count:	See @count.
 * @active_time: See @count.
 * @total_time:	See @count.
 * @sleep_time:	See @count.
 * @max_time:	See @count.
 * @last_change: See @count.
 */
struct sb_stats_row {
	char *name;
	size_t cap;
	unsigned int name_len;
	unsigned int count;
	unsigned int wake_count;
	ktime_t active_time;
	ktime_t total_time;
	ktime_t sleep_time;
	ktime_t max_time;
	ktime_t last_change;
};

/* core.c */
extern spinlock_t suspend_blockers_lock;
extern struct suspend_blocker sb_main_blocker;
extern struct suspend_blocker sb_unknown_wakeup;
extern struct suspend_blocker sb_deleted_blockers;
int sb_core_init(void (*idle_notify)(void));
void sb_core_exit(void);
void sb_set_clock_frozen(bool frozen);
void sb_core_set_mirror(bool on);
bool sb_any_active(void);
bool sb_own_wakeup_source(const char *name);
unsigned int sb_event_num(void);
unsigned long sb_kernel_wakeup_events(void);
void sb_note_enter_suspend(void);
void sb_attempt_begin(unsigned int entry_num);
void sb_attempt_end(void);
bool sb_attempt_interrupted(void);
bool sb_attempt_enter(const char *state, bool note);
void sb_set_suspend_in_progress(bool on);
void sb_stats_cursor_reset(struct suspend_blocker *cursor);
void sb_stats_cursor_del(struct suspend_blocker *cursor);
int sb_stats_cursor_next(struct suspend_blocker *cursor,
			 struct sb_stats_row *row);

/* clock.c */
ktime_t sb_now(void);
void sb_clock_freeze(bool frozen);
bool sb_clock_frozen(void);

/* events.c */
enum sb_event_type {
	SB_EV_BLOCK,
	SB_EV_UNBLOCK,
	SB_EV_SUSPEND,		/* worker calls pm_suspend() */
	SB_EV_ENTER,		/* last device suspended: entering the state */
	SB_EV_EXIT,		/* first device resume after the state */
	SB_EV_RESUME,		/* pm_suspend() returned 0 */
	SB_EV_ABORT,		/* pm_suspend() returned an error */
	SB_EV_POLICY,		/* policy or requested state changed */
	SB_EV_WS_ACTIVATE,	/* a kernel wakeup source became active */
	SB_EV_WS_RELAX,		/* ... and inactive */
	SB_EV_PHASE,		/* a suspend/resume phase began or ended */
	SB_EV_DEV_PM,		/* a slow device PM callback returned */
	SB_EV_NR,
};

#define SB_EVENT_ARG_LEN	52

/* One event-log record: 72 bytes. The SEQ is its position in the ring. */
struct sb_event_rec {
	s64 t_ns;		/* CLOCK_BOOTTIME */
	u64 id;			/* block/unblock: the blocker's id, else 0 */
	u8 type;		/* enum sb_event_type */
	u8 len;			/* bytes used in arg */
	u8 truncated;		/* arg was cut to SB_EVENT_ARG_LEN */
	char arg[SB_EVENT_ARG_LEN];
};

int sb_events_init(struct dentry *dir);
void sb_events_exit(void);
void sb_events_resync_clock(void);
void sb_event_add(enum sb_event_type type, ktime_t mono, const char *arg,
		  unsigned int len);
void sb_event_add_irqs_off(enum sb_event_type type, ktime_t mono,
			   const char *arg, unsigned int len, u64 id);
void sb_events_hold_wakeups(bool hold);
void sb_event(enum sb_event_type type, const char *arg);
void sb_event_int(enum sb_event_type type, int val);

/* stats.c */
int sb_stats_init(struct dentry *dir);
void sb_stats_exit(void);

/* policy.c */
int sb_policy_init(void);
void sb_policy_exit(void);
void sb_worker_kick(void);
const char *sb_state_name(suspend_state_t state);

/* kevents.c */
void sb_kevents_init(void);
void sb_kevents_exit(void);

/* pmhooks.c */
int sb_pmhooks_init(void);
void sb_pmhooks_exit(void);

/* sbevent.c */
int sb_sbevent_init(void);
void sb_sbevent_exit(void);

/* keypad.c */
int sb_keypad_init(void);
void sb_keypad_exit(void);

/* marker.c */
int sb_marker_init(void);
void sb_marker_exit(void);
void sb_marker_set_locked(bool active);

/* userdev.c */
int sb_userdev_init(void);
void sb_userdev_exit(void);
bool sb_name_valid(const char *name, size_t len);

#endif /* _SB_INTERNAL_H */
