/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rig.h - the rig the daemon owns: its config, GPIO lines, power sensor
 * and target link, wired into the poll() loop.
 *
 * The rig calls nobody above it. What it sees (samples, gaps, marker
 * edges, stimuli it applied, target events, clock exchanges, a new target
 * identity, a failing sensor) it publishes to the observers that modules
 * above it registered (the recorder, the running operation). A command
 * for the target agent is answered to the callback given with it, keyed
 * by the command's id.
 */
#ifndef SBRIGD_RIG_H
#define SBRIGD_RIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/clock.h>
#include <sbrig/config.h>
#include <sbrig/link.h>
#include <sbrig/power.h>
#include <sbrig/records.h>

/**
 * struct rig_target - what the agent said in its last HELLO
 * @known: a HELLO has been received
 * @boot_id: the target's boot
 * @agent: agent version
 * @kernel: kernel release
 * @module: suspend_block version ("-": not loaded)
 */
struct rig_target {
	bool known;
	char boot_id[SBRIG_BOOT_ID_MAX];
	char agent[32];
	char kernel[96];
	char module[32];
};

/**
 * struct rig_clock_row - one clock exchange the link's model was given
 * @send_ns: host time the ping left (a marker pair: the edge's time)
 * @recv_ns: host time the answer came (a marker pair: the edge's time)
 * @target_ns: target time in the answer
 * @retained: the model kept it
 */
struct rig_clock_row {
	int64_t send_ns;
	int64_t recv_ns;
	int64_t target_ns;
	bool retained;
};

/**
 * struct rig_observer_ops - what an observer is told (any may be NULL)
 * @samples: power samples, in time order
 * @gap: samples known to be missing, in order with @samples
 * @edge: an edge on an input line (the marker)
 * @stimulus: something the rig did to the target (press, plug, hold, ...)
 * @event: a target event, with its host time
 * @clock: a clock exchange was added to the model
 * @target: the agent said HELLO (a new boot, or the same again)
 * @sensor_failed: the power sensor stopped delivering (@why: "sensor: ...")
 *
 * Callbacks run on the loop; they may (un)register observers, start and
 * stop operations, but must not block.
 */
struct rig_observer_ops {
	void (*samples)(void *data, const struct sbrig_sample *s, size_t n);
	void (*gap)(void *data, const struct sbrig_gap *gap);
	void (*edge)(void *data, const struct sbrig_edge *edge);
	void (*stimulus)(void *data, const struct sbrig_stimulus *st);
	void (*event)(void *data, const struct sbrig_event *ev);
	void (*clock)(void *data, const struct rig_clock_row *row);
	void (*target)(void *data, const struct rig_target *t);
	void (*sensor_failed)(void *data, int err, const char *why);
};

/**
 * struct rig_observer - a registration, storage owned by the observer
 * @ops: the callbacks
 * @data: passed to them
 */
struct rig_observer {
	const struct rig_observer_ops *ops;
	void *data;
};

/*
 * Is the target asleep? The rig asks its witnesses, the strongest first;
 * the first that can tell decides (rig.c, "witnesses"):
 *
 *  RIG_WITNESS_MACHINE  [target] state_uri: the machine's run state
 *                       ("suspended": asleep; "running" tells nothing, as
 *                       in s2idle; anything else: not asleep, it is
 *                       stopped)
 *  RIG_WITNESS_POWER    [power] asleep_uA: the supply at or below it:
 *                       asleep; above it: awake
 *  RIG_WITNESS_MARKER   [marker], under the opportunistic policy: high (a
 *                       blocker is active): awake; low tells nothing
 *  RIG_WITNESS_LINK     the agent, seen before, silent for quiet_ms:
 *                       asleep (or its agent stopped); else not yet
 */
enum rig_witness {
	RIG_WITNESS_MACHINE,
	RIG_WITNESS_POWER,
	RIG_WITNESS_MARKER,
	RIG_WITNESS_LINK,
};

/**
 * struct rig_asleep - the verdict and who gave it
 * @asleep: the target is asleep
 * @witness: who decided
 * @detail: what it saw ("qmp status suspended", "2.950 mA <= 5.000 mA")
 * @quiet_since_ns: the host time of the agent's last frame (0: none)
 */
struct rig_asleep {
	bool asleep;
	enum rig_witness witness;
	char detail[256];
	int64_t quiet_since_ns;
};

/* A rig line's state for status. */
struct rig_line_status {
	char name[SBRIG_ID_MAX];
	enum { RIG_LINE_OUT, RIG_LINE_IN } dir;
	int value;		/* 0/1, or -errno (then @err says why) */
	char err[160];
};

/**
 * struct rig_status - a snapshot of the rig for the status request
 * @cfg: the rig description (owned by the rig)
 * @lines: the configured GPIO lines (keys, charger, marker)
 * @nlines: entries in @lines
 * @has_power: a sensor is configured
 * @sensor_busy: what the sensor's thread has been waiting for
 *	@sensor_busy_ns ("" idle: "opening the sensor", ...)
 * @sensor_busy_ns: for how long
 * @sensor_ok: it is open; @sensor is valid
 * @sensor_err: why it is not (when @has_power && !@sensor_ok, or a
 *	reading failed)
 * @sensor: its description
 * @capturing: it samples for a capture (no @reading then)
 * @have_reading: @reading is valid
 * @reading: the last reading (at most 0.5 s old when the status waited
 *	for it: rig_sensor_settle())
 * @has_link: a target link is configured
 * @link: its counters
 * @asleep: the target is asleep (rig_asleep_poll(); @why says who saw it)
 * @why: the verdict's witness and what it saw
 * @target: the agent's identity
 * @clock: the link's clock model
 */
struct rig_status {
	const struct sbrig_config *cfg;
	struct rig_line_status lines[SBRIG_MAX_KEYS + 2];
	unsigned int nlines;
	bool has_power;
	char sensor_busy[64];
	int64_t sensor_busy_ns;
	bool sensor_ok;
	char sensor_err[256];
	struct sbrig_power_info sensor;
	bool capturing;
	bool have_reading;
	struct sbrig_sample reading;
	bool has_link;
	struct sbrig_link_status link;
	bool asleep;
	struct rig_asleep why;
	struct rig_target target;
	struct sbrig_clock_state clock;
};

/*
 * Called with the agent's answers to one command: REPLY, DONE and the rows
 * of a STATS snapshot, all carrying its id. Runs until rig_link_forget().
 */
typedef void (*rig_reply_fn)(const struct sbrig_link_msg *m, void *data);

/* Called after a press's release with the time the line went active. */
typedef void (*rig_press_fn)(int err, int64_t press_ns, void *data);

int rig_init(const char *conf_path, char **overrides, int noverrides);
void rig_fini(void);

const struct sbrig_config *rig_config(void);
bool rig_has_output(const char *name);
bool rig_has_key(const char *name);
bool rig_has_power(void);
bool rig_has_link(void);
const struct rig_target *rig_target(void);
void rig_get_status(struct rig_status *st);

/* Observers: at most RIG_MAX_OBSERVERS at a time. */
#define RIG_MAX_OBSERVERS 8
int rig_observe(struct rig_observer *o);
void rig_unobserve(struct rig_observer *o);

/* Record a stimulus (tell the observers), at @t_ns. */
void rig_stimulus(const char *what, const char *arg, int64_t t_ns);
/* Drive an output line and record the stimulus. 0 or -errno. */
int rig_set_line(const char *name, bool active, const char *what,
		 int64_t *t_ns);
/* Drive the charger switch ("plug"/"unplug"). 0 or -errno. */
int rig_plug(bool in, int64_t *t_ns);
/*
 * Press @key for @duration_ns (<= 0: the rig's press_ms); @done runs after
 * the release (with @data). The press time is stored in @press_ns if not
 * NULL. Return 0 or -errno.
 */
int rig_press(const char *key, int64_t duration_ns, int64_t *press_ns,
	      rig_press_fn done, void *data);
/* Release the presses started with @data now; their @done runs. */
void rig_release(void *data);
/* Presses started with @data call their @done no more. */
void rig_forget(void *data);

/*
 * Sample the sensor into the observers (a capture runs): the sensor is
 * opened and its buffer set up on the sensor's own thread, so this only
 * queues the start; a failure reaches the observers' sensor_failed.
 * Return: 0, or -errno (no sensor, or it has not finished the last stop).
 */
int rig_power_start(void);
/* rig_power_stop()'s callback: @err 0, or -errno and @why ("sensor: ..."). */
typedef void (*rig_stopped_fn)(void *data, int err, const char *why);
/*
 * Stop sampling: the buffer's tear-down runs on the sensor's thread, then
 * the last samples reach the observers and @fn(@data, ...) runs on the
 * loop, with an error if the sensor never started or failed meanwhile.
 * Return: false if the sensor was not sampling (@fn is not called).
 */
bool rig_power_stop(rig_stopped_fn fn, void *data);
/* The counters of the last capture's sensor, once it stopped; false: none. */
bool rig_power_last_stats(struct sbrig_power_stats *st);
/* rig_power_stop()'s @fn is not to be called any more. */
void rig_power_forget_stop(void);

/*
 * A status wants a fresh reading: one is asked for if needed. Return:
 * true if the sensor has settled (rig_get_status() has it all), false if
 * @fn(@data) will run once it has, at most 1 s later.
 */
bool rig_sensor_settle(void (*fn)(void *data), void *data);
/* A waiter of rig_sensor_settle() has gone away. */
void rig_sensor_forget(void *data);
/*
 * The loop has ended: wait up to @timeout_ns for the sensor's queued jobs
 * and run what they call back here (rig_power_stop()'s @fn).
 */
void rig_sensor_drain(int64_t timeout_ns);

/*
 * Queue an agent command; @fn gets its REPLY/DONE/STATS until
 * rig_link_forget(*@cmd_id). Return 0 or -errno (-ENOTCONN: no link,
 * -ENOBUFS: too many commands in flight).
 */
int rig_link_command(const char *cmd, rig_reply_fn fn, void *data,
		     uint32_t *cmd_id);
void rig_link_forget(uint32_t cmd_id);

/* "machine", "power", "marker", "link" */
const char *rig_witness_name(enum rig_witness w);

/*
 * Why the rig does not see the target asleep now, for a timeout's message:
 * "its agent was never quiet for quiet_ms N ms" when the link decides,
 * else "the WITNESS sees it awake: DETAIL". Returns @buf.
 */
const char *rig_awake_why(char *buf, size_t size);

/*
 * Is the target asleep? 1: yes; 0: not (yet), *@next_ns is when to look
 * again (never later than @deadline_ns); -ETIMEDOUT: @deadline_ns has
 * passed; -ENOTCONN: no link on this rig. @why (may be NULL) gets the
 * verdict and its witness for 1 and 0.
 */
int rig_asleep_poll(int64_t deadline_ns, int64_t *next_ns,
		    struct rig_asleep *why);
/* Host time of the last frame from the agent (0: none yet, or no link). */
int64_t rig_link_last_rx_ns(void);

#endif /* SBRIGD_RIG_H */
