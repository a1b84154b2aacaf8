/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sbrigd.h - private interfaces between the daemon's modules.
 *
 * The daemon is a set of modules, each with a prefix and an init/fini
 * pair, initialised in dependency order and finalised in reverse (main.c):
 *
 *	sched_	the poll() loop: fd watches and one-shot timers (sched.c)
 *	rig_	the rig: config, GPIO lines, power sensor, target link (rig.c)
 *	rec_	the running capture, if any (rec.c)
 *	eng_	operations that take time: scenarios, latency runs (engine.c)
 *	srv_	the Unix socket and its clients (server.c)
 *
 * Everything runs on the one thread of the loop; only libsbrig's power
 * capture thread runs beside it and hands samples over through an eventfd.
 * Long operations report to a struct op_sink (a client connection); the
 * sink can go away at any time (the client disconnects), after which the
 * module holding it must call op_done()/op_line() on it no more: the server
 * calls every module's *_sink_gone() before it frees a client.
 */
#ifndef SBRIGD_H
#define SBRIGD_H

#include <stdbool.h>
#include <stdint.h>

#include <sbrig/capture.h>
#include <sbrig/config.h>
#include <sbrig/link.h>
#include <sbrig/records.h>
#include <sbrig/scenario.h>

#define NS_PER_MS ((int64_t)1000000)
#define NS_PER_S ((int64_t)1000000000)

/* --- sched.c: the poll() loop ------------------------------------------ */

typedef void (*sched_fd_fn)(int fd, short revents, void *data);
typedef void (*sched_timer_fn)(void *data);

/**
 * struct sched_timer - a one-shot timer, embedded in its owner
 * @when_ns: CLOCK_MONOTONIC deadline
 * @fn: called from the loop once @when_ns has passed
 * @data: passed to @fn
 * @armed: the timer is in the loop's list
 * @next: list link (sorted by @when_ns)
 */
struct sched_timer {
	int64_t when_ns;
	sched_timer_fn fn;
	void *data;
	bool armed;
	struct sched_timer *next;
};

int sched_init(void);
void sched_fini(void);
int sched_fd_add(int fd, short events, sched_fd_fn fn, void *data);
void sched_fd_events(int fd, short events);
void sched_fd_del(int fd);
void sched_timer_start(struct sched_timer *t, int64_t when_ns,
		       sched_timer_fn fn, void *data);
void sched_timer_stop(struct sched_timer *t);
void sched_quit(void);
int sched_run(void);

/* --- operation sinks (implemented by server.c) -------------------------- */

struct op_sink;

/* Send one "progress ..." / "data ..." line (without newline) to @sink. */
void op_line(struct op_sink *sink, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Finish the request: "ok MSG" if @err == 0, else "err ERRNO MSG". */
void op_done(struct op_sink *sink, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- rig.c: the hardware ------------------------------------------------ */

/**
 * struct rig_target - what the agent said in its last HELLO
 */
struct rig_target {
	bool known;
	char boot_id[SBRIG_BOOT_ID_MAX];
	char agent[32];
	char kernel[96];
	char module[32];
};

int rig_init(const char *conf_path, char **overrides, int noverrides);
void rig_fini(void);
const struct sbrig_config *rig_config(void);
/* Write the rig's status as "data key: value" lines to @sink. */
void rig_status(struct op_sink *sink);
/* Drive an output line, record the stimulus. Return 0 or -errno. */
int rig_set_line(const char *name, bool active, const char *what,
		 int64_t *t_ns);
bool rig_has_output(const char *name);
bool rig_has_power(void);
bool rig_has_link(void);
const struct rig_target *rig_target(void);
/* Record a stimulus in the running capture (if any), now. */
void rig_stimulus(const char *what, const char *arg, int64_t t_ns);
int rig_power_start(void);
void rig_power_stop(void);
/* Queue an agent command; its REPLY/DONE go to eng_link_reply(). */
int rig_link_command(const char *cmd, uint32_t *cmd_id);
/*
 * Press a key for @duration_ns (<= 0: the rig's press_ms); @done runs after
 * the release with the time the line went active (also stored in
 * @press_ns if not NULL). Return 0 or -errno.
 */
int rig_press(const char *key, int64_t duration_ns, int64_t *press_ns,
	      void (*done)(int err, int64_t press_ns, void *data), void *data);
/* Presses started with @data call their @done no more. */
void rig_forget(void *data);
/*
 * When the target counts as asleep if the agent stays silent: the last
 * frame's host time + quiet_ms (may be in the past: asleep now; later
 * while the link still holds events back for its clock model); -1 if
 * there is no link or it never was up (no HELLO yet: absent, not asleep).
 */
int64_t rig_link_asleep_at(void);
/* Map a target time to host time with the link's clock model. */
int rig_link_clock_map(int64_t target_ns, int64_t *host_ns,
		       int64_t *uncert_ns);

/* --- rec.c: the running capture ----------------------------------------- */

/**
 * struct rec_counts - what the running capture has recorded so far
 */
struct rec_counts {
	int64_t start_ns;
	uint64_t samples;
	uint64_t gaps;
	uint64_t missing;
	uint64_t edges;
	uint64_t stimuli;
	uint64_t events;
	uint64_t stats_rows;
	uint64_t clock_rows;
	int64_t sum_current_uA;
};

/**
 * struct rec_opts - a capture request
 * @dir: directory to create
 * @duration_ns: stop after this long (0: until stopped)
 * @stats_every_ns: ask the agent for a stats snapshot this often (0: never)
 * @scenario: the scenario run during the capture (provenance), or NULL
 */
struct rec_opts {
	const char *dir;
	int64_t duration_ns;
	int64_t stats_every_ns;
	const struct sbrig_scenario *scenario;
};

/* Called when a capture ends by itself (duration over, write error). */
typedef void (*rec_end_fn)(int err, const char *status, void *data);

int rec_init(void);
void rec_fini(void);
int rec_start(const struct rec_opts *opts, struct op_sink *sink,
	      rec_end_fn end, void *data);
int rec_stop(const char *status);
void rec_fail(int err, const char *status);
bool rec_active(void);
const char *rec_dir(void);
void rec_get_counts(struct rec_counts *c);
void rec_status(struct op_sink *sink);
void rec_sink_gone(struct op_sink *sink);
/* Feeds from rig.c; ignored while no capture runs. */
void rec_samples(const struct sbrig_sample *s, size_t n);
void rec_gap(const struct sbrig_gap *gap);
void rec_edge(const struct sbrig_edge *edge);
void rec_stimulus(const struct sbrig_stimulus *st);
void rec_event(const struct sbrig_event *ev);
void rec_stats_row(int64_t t_ns, const struct sbrig_blocker_stats *row);
void rec_clock(int64_t send_ns, int64_t recv_ns, int64_t target_ns,
	       bool retained);
void rec_target(const struct rig_target *t);
/* A stats snapshot was asked for with @cmd_id (its rows are recorded). */
bool rec_owns_snapshot(uint32_t cmd_id);

/* --- engine.c: scenarios and latency runs -------------------------------- */

int eng_init(void);
void eng_fini(void);
int eng_run(const struct sbrig_scenario *sc, const struct rec_opts *opts,
	    struct op_sink *sink);
int eng_latency(unsigned int n, const char *key, int64_t press_ns,
		const char *until, int64_t timeout_ns, struct op_sink *sink);
int eng_agent(const char *cmd, int64_t timeout_ns, struct op_sink *sink);
/* Abort what is running (stop request, shutdown). */
void eng_abort(const char *why);
bool eng_busy(void);
void eng_sink_gone(struct op_sink *sink);
/* Feeds from rig.c. */
void eng_event(const struct sbrig_event *ev);
void eng_edge(const struct sbrig_edge *edge);
void eng_link_reply(const struct sbrig_link_msg *msg);

/* --- server.c: the Unix socket ------------------------------------------ */

int srv_init(const char *path);
void srv_fini(void);

#endif /* SBRIGD_H */
