// SPDX-License-Identifier: GPL-2.0
/*
 * rig.c - the rig the daemon owns, see rig.h.
 *
 * What is not configured (an absent [key:]/[charger]/[marker] section, an
 * empty [power] or [target] uri) is simply not available. A configured
 * sensor that cannot be opened (iiod down) is not fatal either: it is
 * opened again when a capture or a status needs it, and the error is shown
 * there. Everything the rig does to the target goes through rig_set_line()
 * or rig_stimulus(), so every observer (the recorder) sees it.
 *
 * The power sensor samples only while a capture runs (rig_power_start());
 * its capture thread signals an eventfd that the loop watches, and all it
 * does that waits on the device runs on its worker ("power" below). The link is driven
 * by its pollfd (which changes on reconnects) and its deadline (a timer);
 * the messages it decodes are handed on in batches of at most
 * RIG_LINK_BATCH per loop turn, so a burst of frames cannot starve the
 * daemon's clients.
 *
 * Witnesses of the target's sleep (rig.h, rig_asleep_poll()): a target
 * that sleeps cannot say so (its agent is frozen), so the rig looks from
 * outside, the strongest witness first: the machine's run state
 * ([target] state_uri, asked every RIG_MACHINE_POLL_NS), the supply
 * current ([power] asleep_uA: the last sample of a running capture, else
 * one reading), the marker line (under the opportunistic policy, which
 * the event log's "policy" records tell), and last the link's silence.
 * They are behind the same interfaces as the rest of the rig (a URI, the
 * sensor, a GPIO line): the virtual rig is one more state_uri.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/gpio.h>
#include <sbrig/machine.h>
#include <sbrig/marker.h>

#include "rig.h"
#include "sched.h"
#include "util.h"
#include "worker.h"

/* a wake-up's worth at 3.5 kS/s (power.c wakes us every 250 ms) */
#define RIG_SAMPLE_BATCH 2048
#define RIG_GAP_BATCH 32
#define RIG_LINK_BATCH 256
#define RIG_MAX_COMMANDS 32
#define RIG_GPIO_FDS (SBRIG_MAX_KEYS + 2)
/* marker edge <-> event pairing: how far apart, and the GPIO path's spread */
#define RIG_MARKER_WINDOW_NS	(2 * NS_PER_MS)
#define RIG_MARKER_UNCERT_NS	(100 * NS_PER_US)
/* the machine's run state: asked this often; older than STALE: unknown */
#define RIG_MACHINE_POLL_NS	(100 * NS_PER_MS)
#define RIG_MACHINE_STALE_NS	(1000 * NS_PER_MS)
/* a witness other than the link is looked at again this often */
#define RIG_WITNESS_POLL_NS	(100 * NS_PER_MS)
/* a capture's last sample counts for the power witness this long */
#define RIG_SAMPLE_STALE_NS	(500 * NS_PER_MS)
/*
 * The power witness was asked: the sensor wakes the loop for its samples
 * every SBRIG_POWER_WAKE_NS (250 ms, fresh enough for it) for this long
 * after, every SBRIG_POWER_WAKE_MAX_NS (1 s: a capture only stores them)
 * otherwise. See power_pace().
 */
#define RIG_WATCH_HOLD_NS	(5 * NS_PER_S)

/**
 * struct rig_press - a key held down until its timer fires
 * @key: key name ("" = slot free)
 * @timer: release timer
 * @press_ns: when the line went active
 * @done: called after the release (NULL: nobody waits any more)
 * @data: for @done
 */
struct rig_press {
	char key[SBRIG_ID_MAX];
	struct sched_timer timer;
	int64_t press_ns;
	rig_press_fn done;
	void *data;
};

/**
 * struct rig_command - an agent command whose answers someone waits for
 * @id: its id (0: slot free)
 * @fn: gets its REPLY/DONE/STATS
 * @data: for @fn
 */
struct rig_command {
	uint32_t id;
	rig_reply_fn fn;
	void *data;
};

/* someone waiting for the sensor to settle (rig_sensor_settle()) */
struct rig_waiter {
	void (*fn)(void *data);
	void *data;
};

#define RIG_MAX_WAITERS 16

/* the rig: only the loop's thread touches it */
static struct {
	struct sbrig_config cfg;
	struct sbrig_gpio *gpio;
	struct pollfd gpio_fds[RIG_GPIO_FDS];	/* registered with sched */
	int ngpio_fds;
	bool edges_broken;		/* reading edges failed: not polled */
	struct sched_timer gpio_timer;	/* sbrig_gpio_deadline() */
	struct worker *power_wk;	/* everything that waits on the sensor */
	struct sbrig_power *power;	/* open (its queue and fd: the loop's) */
	bool power_opening;		/* a PJ_OPEN is queued */
	bool power_reading;		/* a PJ_READ is queued */
	enum { POWER_IDLE, POWER_STARTING, POWER_CAPTURING,
	       POWER_STOPPING } power_state;
	rig_stopped_fn power_stop_fn;	/* rig_power_stop()'s */
	struct sbrig_power_stats power_stats;	/* of the last capture */
	bool have_power_stats;
	int power_start_err;		/* the start failed after a stop */
	void *power_stop_data;
	struct sbrig_power_info power_info;	/* when rig.power is open */
	bool have_reading;		/* the last reading, when not capturing */
	struct sbrig_sample reading;
	char reading_err[256];		/* why the last reading failed */
	struct rig_waiter waiters[RIG_MAX_WAITERS];	/* rig_sensor_settle() */
	unsigned int nwaiters;
	struct sched_timer waiter_timer;
	bool power_stale_logged;	/* a killed capture's buffer: said once */
	uint64_t marker_lost;		/* edges lost, as last logged */
	char power_err[256];
	struct sbrig_link *link;
	struct sbrig_machine *machine;	/* [target] state_uri */
	int machine_fd;			/* registered with sched, or -1 */
	struct sched_timer machine_timer;
	struct sbrig_sample last_sample;	/* of a running capture */
	int64_t watched_until_ns;	/* the power witness wants fresh ones */
	int64_t wake_ns;		/* the sensor's wake interval (0: unset) */
	bool policy_known, opportunistic;	/* the event log's "policy" */
	bool sleep_deep;	/* its last suspend/enter record said "deep" */
	struct sbrig_marker *marker;	/* marker wired and a link: pairing */
	int link_fd;			/* registered with sched, or -1 */
	struct sched_timer link_timer;
	struct sched_timer link_more;	/* messages left after a batch */
	struct rig_target target;
	struct rig_press presses[SBRIG_MAX_KEYS];
	struct rig_command commands[RIG_MAX_COMMANDS];
	struct rig_observer *observers[RIG_MAX_OBSERVERS];
	struct sbrig_sample samples[RIG_SAMPLE_BATCH];
	struct sbrig_gap gaps[RIG_GAP_BATCH];
} rig;

/* ---- observers ---------------------------------------------------------- */

int rig_observe(struct rig_observer *o)
{
	for (unsigned int i = 0; i < RIG_MAX_OBSERVERS; i++) {
		if (rig.observers[i] == o)
			return 0;
	}
	for (unsigned int i = 0; i < RIG_MAX_OBSERVERS; i++) {
		if (!rig.observers[i]) {
			rig.observers[i] = o;
			return 0;
		}
	}
	return sbrig_set_error(-ENOSPC, "rig: more than %d observers",
			       RIG_MAX_OBSERVERS);
}

void rig_unobserve(struct rig_observer *o)
{
	for (unsigned int i = 0; i < RIG_MAX_OBSERVERS; i++)
		if (rig.observers[i] == o)
			rig.observers[i] = NULL;
}

/*
 * Call @member of every observer, in registration slots order. An observer
 * unregistered by an earlier callback of the same round is not called.
 */
#define NOTIFY(member, ...)						\
	do {								\
		for (unsigned int i_ = 0; i_ < RIG_MAX_OBSERVERS; i_++) { \
			struct rig_observer *o_ = rig.observers[i_];	\
			if (o_ && o_->ops->member)			\
				o_->ops->member(o_->data, __VA_ARGS__);	\
		}							\
	} while (0)

/* ---- simple queries ----------------------------------------------------- */

const struct sbrig_config *rig_config(void)
{
	return &rig.cfg;
}

bool rig_has_power(void)
{
	return rig.cfg.power_uri[0] != '\0';
}

bool rig_has_link(void)
{
	return rig.link != NULL;
}

const struct rig_target *rig_target(void)
{
	return &rig.target;
}

static bool is_charger(const struct sbrig_line_cfg *l)
{
	return l->role == SBRIG_LINE_CHARGER;
}

static bool is_marker(const struct sbrig_line_cfg *l)
{
	return l->role == SBRIG_LINE_MARKER;
}

bool rig_has_output(const char *name)
{
	const struct sbrig_line_cfg *l = sbrig_config_line(&rig.cfg, name);

	return l && l->present && !is_marker(l) && rig.gpio;
}

bool rig_has_key(const char *name)
{
	const struct sbrig_line_cfg *l = sbrig_config_line(&rig.cfg, name);

	return l && l->present && !is_marker(l) && !is_charger(l) && rig.gpio;
}

/* ---- stimuli and lines -------------------------------------------------- */

static void gpio_rearm(void);

void rig_stimulus(const char *what, const char *arg, int64_t t_ns)
{
	struct sbrig_stimulus st = { .t_ns = t_ns };

	snprintf(st.what, sizeof(st.what), "%s", what);
	snprintf(st.arg, sizeof(st.arg), "%s", arg);
	log_dbg("stimulus %s %s", what, arg);
	NOTIFY(stimulus, &st);
}

int rig_set_line(const char *name, bool active, const char *what,
		 int64_t *t_ns)
{
	int64_t t;
	int ret;

	if (!rig_has_output(name))
		return sbrig_set_error(-ENOENT, "no output line '%s' on rig %s",
				       name, rig.cfg.name);
	ret = sbrig_gpio_set(rig.gpio, name, active, &t);
	gpio_rearm();	/* a qmp: request may wait to be written */
	if (ret < 0)
		return ret;
	rig_stimulus(what, name, t);
	if (t_ns)
		*t_ns = t;
	return 0;
}

int rig_plug(bool in, int64_t *t_ns)
{
	if (!rig.cfg.charger.present || !rig.gpio)
		return sbrig_set_error(-ENOENT, "no charger line on rig %s",
				       rig.cfg.name);
	return rig_set_line(rig.cfg.charger.name, in, in ? "plug" : "unplug",
			    t_ns);
}

/* ---- power -------------------------------------------------------------- */

/*
 * Everything that waits on the sensor runs on rig.power_wk (worker.h):
 * opening it (DNS and a TCP connect for ip:), a reading, the IIO buffer's
 * set-up and tear-down (the kernel's kthread_stop() waits for as long as
 * the chip's conversion-ready flag stays low) and closing it. The worker's
 * thread alone holds the sensor object's I/O (wk_power); the loop takes
 * its samples through sbrig_power_read() (the queue is the library's,
 * under its lock) and keeps what the works found: the sensor's
 * description, the last reading and its time, the last error. A status
 * waits for a reading at most RIG_SENSOR_WAIT_NS, a capture's stop for
 * its tear-down as long as it takes (the capture is closed after its last
 * samples), and nothing else waits at all.
 */
#define RIG_SENSOR_WAIT_NS	(1000 * NS_PER_MS)
/* a reading this old is taken again for a status or the power witness */
#define RIG_READING_FRESH_NS	(500 * NS_PER_MS)

enum power_job { PJ_OPEN, PJ_READ, PJ_START, PJ_STOP, PJ_FREE };

/**
 * struct power_work - one job for the sensor's worker
 * @w: the work
 * @job: what to do
 * @uri: the sensor's URI (PJ_OPEN)
 * @opts: its settings (PJ_OPEN; strings point into @device)
 * @device: the IIO device's name
 * @pwr: PJ_OPEN: the sensor opened; PJ_FREE: the one to close
 * @ret: 0 or -errno
 * @msg: the error's message (sbrig_errmsg() is per thread)
 * @info: the sensor's description (PJ_OPEN, PJ_START)
 * @reading: PJ_READ's
 * @stats: PJ_STOP's
 */
struct power_work {
	struct work w;
	enum power_job job;
	char uri[SBRIG_URI_MAX];
	struct sbrig_power_opts opts;
	char device[64];
	struct sbrig_power *pwr;
	int ret;
	char msg[512];
	struct sbrig_power_info info;
	struct sbrig_sample reading;
	struct sbrig_power_stats stats;
};

/* the sensor, as the worker's thread holds it (only that thread) */
static struct sbrig_power *wk_power;
static char wk_open_err[512];	/* why the last PJ_OPEN failed */

/* -ENODEV: not open, and why (PJ_OPEN's error). Worker's thread. */
static int not_open(void)
{
	return sbrig_set_error(-ENODEV, "%s", wk_open_err[0] ? wk_open_err :
			       "the sensor is not open");
}

static void power_readable(int fd, short revents, void *data);
static void power_work_done(struct work *w);

static void power_work_run(struct work *w)
{
	struct power_work *pw = (struct power_work *)w;
	int ret = 0;

	switch (pw->job) {
	case PJ_OPEN:
		if (!wk_power) {
			wk_power = sbrig_power_new(pw->uri, &pw->opts);
			ret = wk_power ? 0 : errno ? -errno : -EIO;
			snprintf(wk_open_err, sizeof(wk_open_err), "%s",
				 ret ? sbrig_errmsg() : "");
		}
		pw->pwr = wk_power;
		if (!ret)
			sbrig_power_get_info(wk_power, &pw->info);
		break;
	case PJ_READ:
		ret = wk_power ? sbrig_power_read_now(wk_power, &pw->reading) :
		      not_open();
		break;
	case PJ_START:
		ret = wk_power ? sbrig_power_start(wk_power) : not_open();
		if (!ret)
			sbrig_power_get_info(wk_power, &pw->info);
		break;
	case PJ_STOP:
		if (wk_power) {
			ret = sbrig_power_stop(wk_power);
			sbrig_power_get_stats(wk_power, &pw->stats);
		}
		break;
	case PJ_FREE:
		if (wk_power == pw->pwr)
			wk_power = NULL;
		sbrig_power_free(pw->pwr);
		break;
	}
	pw->ret = ret;
	if (ret)
		snprintf(pw->msg, sizeof(pw->msg), "%s", sbrig_errmsg());
}

static const char *const power_job_what[] = {
	[PJ_OPEN] = "opening the sensor",
	[PJ_READ] = "reading the sensor",
	[PJ_START] = "setting up the sensor's buffer",
	[PJ_STOP] = "tearing down the sensor's buffer",
	[PJ_FREE] = "closing the sensor",
};

static void power_submit(enum power_job job, struct sbrig_power *pwr)
{
	struct power_work *pw = calloc(1, sizeof(*pw));

	if (!pw) {
		log_err("power: out of memory");
		return;
	}
	pw->w.what = power_job_what[job];
	pw->w.run = power_work_run;
	pw->w.done = power_work_done;
	pw->job = job;
	pw->pwr = pwr;
	if (job == PJ_OPEN) {
		snprintf(pw->uri, sizeof(pw->uri), "%s", rig.cfg.power_uri);
		snprintf(pw->device, sizeof(pw->device), "%s",
			 rig.cfg.power_device);
		pw->opts = (struct sbrig_power_opts){
			.device = pw->device,
			.shunt_uohm = rig.cfg.shunt_uohm,
			.sample_rate_hz = rig.cfg.sample_rate_hz,
			.buffer_samples = rig.cfg.buffer_samples,
			.i2c_hz = rig.cfg.i2c_hz,
		};
	}
	worker_submit(rig.power_wk, &pw->w);
}

/* Answer whoever waits for the sensor to settle (a status). */
static void power_wake_waiters(void)
{
	struct rig_waiter w[RIG_MAX_WAITERS];
	unsigned int n = rig.nwaiters;

	memcpy(w, rig.waiters, sizeof(w));
	rig.nwaiters = 0;
	sched_timer_stop(&rig.waiter_timer);
	for (unsigned int i = 0; i < n; i++)
		w[i].fn(w[i].data);
}

/* Open the sensor if it is configured and not open or opening. */
static void power_open(void)
{
	if (rig.power || rig.power_opening || !rig_has_power())
		return;
	rig.power_opening = true;
	power_submit(PJ_OPEN, NULL);
}

/* Close the sensor (the worker frees it once what is queued has run). */
static void power_close(void)
{
	if (!rig.power)
		return;
	sched_fd_del(sbrig_power_fd(rig.power));
	power_submit(PJ_FREE, rig.power);
	rig.power = NULL;
	rig.power_state = POWER_IDLE;
	rig.have_reading = false;
}

/* The capture is over: tell the one who stopped it (@err: why not all). */
static void power_stopped(int err, const char *why)
{
	rig_stopped_fn fn = rig.power_stop_fn;
	void *data = rig.power_stop_data;

	rig.power_stop_fn = NULL;
	rig.power_stop_data = NULL;
	if (fn)
		fn(data, err, why);
}

static void power_failed(const char *msg, int err)
{
	char why[300];

	log_err("power: capture stopped: %s", msg);
	snprintf(rig.power_err, sizeof(rig.power_err), "%s", msg);
	snprintf(why, sizeof(why), "sensor: %s", rig.power_err);
	/* the sensor is gone: reopen it next time */
	power_close();
	power_stopped(err, why);
	NOTIFY(sensor_failed, err, why);
}

/*
 * How often the sensor wakes the loop for its samples: a wake-up is the
 * dearest thing the loop does while capturing, and only the power witness
 * needs the newest sample within RIG_SAMPLE_STALE_NS; the capture takes
 * them whenever they come. So every second, and every 250 ms for a while
 * after the witness was asked (a run's "wait asleep", a status, a
 * latency measurement): its first look after a quiet spell may find the
 * sample stale and tell nothing, the next ones (every 100 ms) can.
 */
static void power_pace(int64_t now)
{
	int64_t want = now < rig.watched_until_ns ? SBRIG_POWER_WAKE_NS :
		       SBRIG_POWER_WAKE_MAX_NS;

	if (!rig.power || want == rig.wake_ns)
		return;
	if (sbrig_power_set_wake_interval(rig.power, want) == 0)
		rig.wake_ns = want;
}

/* Drain the sensor's queue to the observers. */
static void power_drain(void)
{
	while (rig.power) {
		size_t ngaps = 0, gi = 0;
		ssize_t n = sbrig_power_read(rig.power, rig.samples,
					     RIG_SAMPLE_BATCH, rig.gaps,
					     RIG_GAP_BATCH, &ngaps);
		size_t from = 0;

		if (n < 0) {
			if (rig.power_state == POWER_CAPTURING)
				power_failed(sbrig_errmsg(), (int)n);
			return;	/* PJ_STOP's done says it */
		}
		/* keep gaps in time order with the samples around them */
		for (ssize_t i = 0; i < n; i++) {
			while (gi < ngaps &&
			       rig.gaps[gi].next_t_ns <= rig.samples[i].t_ns) {
				if ((size_t)i > from)
					NOTIFY(samples, rig.samples + from,
					       (size_t)i - from);
				from = (size_t)i;
				NOTIFY(gap, &rig.gaps[gi++]);
			}
		}
		if ((size_t)n > from)
			NOTIFY(samples, rig.samples + from, (size_t)n - from);
		if (n > 0)	/* the power witness's */
			rig.last_sample = rig.samples[n - 1];
		while (gi < ngaps)
			NOTIFY(gap, &rig.gaps[gi++]);
		/*
		 * Less than a batch: the queue was empty (what the thread
		 * queues from now on makes the fd readable again). Asking
		 * once more would cost a read of the eventfd, and a full
		 * batch left behind a write to re-arm it.
		 */
		if ((size_t)n < RIG_SAMPLE_BATCH && ngaps < RIG_GAP_BATCH)
			return;
	}
}

static void power_readable(int fd, short revents, void *data)
{
	power_drain();
	power_pace(sbrig_now_ns());
}

static void power_work_done(struct work *w)
{
	struct power_work *pw = (struct power_work *)w;

	switch (pw->job) {
	case PJ_OPEN:
		rig.power_opening = false;
		if (pw->ret) {
			snprintf(rig.power_err, sizeof(rig.power_err), "%s",
				 pw->msg);
		} else if (!rig.power) {
			rig.power_err[0] = '\0';
			rig.reading_err[0] = '\0';
			rig.power = pw->pwr;
			rig.power_info = pw->info;
			rig.wake_ns = 0;	/* the sensor's default */
			power_pace(sbrig_now_ns());
			if (sched_fd_add(sbrig_power_fd(rig.power), POLLIN,
					 power_readable, NULL) < 0) {
				snprintf(rig.power_err, sizeof(rig.power_err),
					 "too many open files");
				power_submit(PJ_FREE, rig.power);
				rig.power = NULL;
			}
		}
		if (!rig.power_reading)
			power_wake_waiters();
		break;
	case PJ_READ:
		rig.power_reading = false;
		if (pw->ret) {
			rig.have_reading = false;
			snprintf(rig.reading_err, sizeof(rig.reading_err), "%s",
				 pw->msg);
		} else {
			rig.have_reading = true;
			rig.reading = pw->reading;
			rig.reading_err[0] = '\0';
		}
		if (!rig.power_opening)
			power_wake_waiters();
		break;
	case PJ_START:
		if (rig.power_state != POWER_STARTING) {
			/* stopped before it started: the stop says it */
			if (pw->ret && !rig.power_start_err)
				snprintf(rig.power_err, sizeof(rig.power_err),
					 "%s", pw->msg);
			if (pw->ret && !rig.power_start_err)
				rig.power_start_err = pw->ret;
			break;
		}
		if (pw->ret) {
			rig.power_state = POWER_IDLE;
			power_failed(pw->msg, pw->ret);
			break;
		}
		rig.power_state = POWER_CAPTURING;
		rig.power_info = pw->info;
		if (pw->info.stale_buffer_cleared && !rig.power_stale_logged) {
			rig.power_stale_logged = true;
			log_warn("power: %s: the device's buffer was left enabled by a capture that was killed: disabled",
				 pw->info.device);
		}
		break;
	case PJ_STOP:
		if (rig.power_state != POWER_STOPPING)
			break;
		rig.power_state = POWER_IDLE;
		rig.power_stats = pw->stats;
		rig.have_power_stats = true;
		if (pw->ret)
			log_warn("power: %s", pw->msg);
		else if (pw->stats.tail_lost)
			log_warn("power: the sensor did not deliver the samples up to the stop in time: the capture ends early");
		power_drain();	/* the last samples reach the observers */
		if (rig.power_start_err) {
			char why[300];

			snprintf(why, sizeof(why), "sensor: %s", rig.power_err);
			power_stopped(rig.power_start_err, why);
		} else {
			power_stopped(0, "");
		}
		break;
	case PJ_FREE:
		break;
	}
	free(pw);
}

int rig_power_start(void)
{
	if (!rig_has_power())
		return sbrig_set_error(-ENODEV, "no power sensor on rig %s",
				       rig.cfg.name);
	if (rig.power_state != POWER_IDLE)
		return sbrig_set_error(-EBUSY, "the sensor is %s",
				       rig.power_state == POWER_STOPPING ?
				       "still stopping the last capture" :
				       "capturing");
	power_open();		/* queued before the start, if needed */
	rig.power_state = POWER_STARTING;
	rig.power_start_err = 0;
	rig.have_power_stats = false;
	rig.last_sample = (struct sbrig_sample){ 0 };
	power_submit(PJ_START, NULL);
	return 0;
}

bool rig_power_stop(rig_stopped_fn fn, void *data)
{
	if (rig.power_state != POWER_STARTING &&
	    rig.power_state != POWER_CAPTURING)
		return false;
	rig.power_state = POWER_STOPPING;
	rig.power_stop_fn = fn;
	rig.power_stop_data = data;
	power_submit(PJ_STOP, NULL);
	return true;
}

bool rig_power_last_stats(struct sbrig_power_stats *st)
{
	if (!rig.have_power_stats)
		return false;
	*st = rig.power_stats;
	return true;
}

void rig_power_forget_stop(void)
{
	rig.power_stop_fn = NULL;
	rig.power_stop_data = NULL;
}

/* Ask for a reading if the last one is not fresh and none is on its way. */
static void power_refresh(int64_t now)
{
	if (!rig_has_power() || rig.power_state != POWER_IDLE)
		return;
	power_open();
	if (rig.power_reading || (rig.have_reading &&
	    time_sub(now, rig.reading.t_ns) < RIG_READING_FRESH_NS))
		return;
	rig.power_reading = true;
	power_submit(PJ_READ, NULL);
}

void rig_sensor_drain(int64_t timeout_ns)
{
	if (rig.power_wk && !worker_drain(rig.power_wk, timeout_ns))
		log_warn("power: the sensor does not answer (still %s)",
			 worker_busy(rig.power_wk, &timeout_ns) ?: "busy");
}

/* The loop has ended: stop the sampling, close the sensor, end the worker. */
static void rig_sensor_fini(void)
{
	if (!rig.power_wk)
		return;
	rig_power_stop(NULL, NULL);
	power_close();
	rig_sensor_drain(10 * NS_PER_S);
	power_wake_waiters();
	worker_free(rig.power_wk);
	rig.power_wk = NULL;
}

static void waiter_timeout(void *data)
{
	power_wake_waiters();
}

bool rig_sensor_settle(void (*fn)(void *data), void *data)
{
	int64_t now = sbrig_now_ns(), since;

	power_refresh(now);
	if ((!rig.power_opening && !rig.power_reading) ||
	    rig.nwaiters == RIG_MAX_WAITERS)
		return true;
	/* stuck for a while already: say so now rather than wait again */
	if (worker_busy(rig.power_wk, &since) &&
	    time_sub(now, since) >= RIG_SENSOR_WAIT_NS)
		return true;
	rig.waiters[rig.nwaiters++] = (struct rig_waiter){ fn, data };
	if (rig.nwaiters == 1)
		sched_timer_start(&rig.waiter_timer,
				  time_after(RIG_SENSOR_WAIT_NS),
				  waiter_timeout, NULL);
	return false;
}

void rig_sensor_forget(void *data)
{
	for (unsigned int i = 0; i < rig.nwaiters; i++) {
		if (rig.waiters[i].data != data)
			continue;
		memmove(&rig.waiters[i], &rig.waiters[i + 1],
			(rig.nwaiters - i - 1) * sizeof(rig.waiters[0]));
		rig.nwaiters--;
		i--;
	}
	if (!rig.nwaiters)
		sched_timer_stop(&rig.waiter_timer);
}

/* ---- marker line -------------------------------------------------------- */

/*
 * Marker edges paired with the events that drove them are clock samples a
 * hundred times tighter than UART pings: hand them to the link's clock
 * model and to the observers (as zero-round-trip clock rows).
 */
static void marker_drain(void)
{
	struct sbrig_marker_pair p;
	int ret;

	while (sbrig_marker_next_pair(rig.marker, &p) == 1) {
		struct rig_clock_row row = { p.host_ns, p.host_ns, p.target_ns,
					     false };

		ret = sbrig_clock_add_marker(sbrig_link_clock(rig.link),
					     p.host_ns, p.target_ns,
					     RIG_MARKER_UNCERT_NS);
		row.retained = ret == 0;
		NOTIFY(clock, &row);
	}
}

static void marker_event(const struct sbrig_event *ev)
{
	if (!rig.marker)
		return;
	sbrig_marker_add_event(rig.marker, ev);
	marker_drain();
}

static void marker_edge(const struct sbrig_edge *edge)
{
	uint64_t lost;

	if (!rig.marker || strcmp(edge->line, rig.cfg.marker.name) != 0)
		return;
	sbrig_marker_add_edge(rig.marker, edge);
	lost = sbrig_marker_lost_edges(rig.marker);
	if (lost != rig.marker_lost) {
		log_warn("marker: the kernel lost %" PRIu64 " edge(s) before seqno %" PRIu64 " (its buffer overflowed; %" PRIu64 " in all): pairing restarted",
			 lost - rig.marker_lost, edge->seqno, lost);
		rig.marker_lost = lost;
	}
	marker_drain();
}

/* ---- GPIO --------------------------------------------------------------- */

static void gpio_edges(void)
{
	struct sbrig_edge edges[16];
	ssize_t n;

	n = sbrig_gpio_read_edges(rig.gpio, edges, ARRAY_SIZE(edges));
	if (n < 0) {
		log_err("gpio: %s (marker edges no longer read)",
			sbrig_errmsg());
		rig.edges_broken = true;
		return;
	}
	/* more than a batch: poll() says so again on the next turn */
	for (ssize_t i = 0; i < n; i++) {
		NOTIFY(edge, &edges[i]);
		marker_edge(&edges[i]);
	}
}

/*
 * Answers of qmp: key requests (sent without waiting for them). An error
 * belongs to a press or release that already happened: it is logged, and
 * the line reads as it really is (a key whose "down" failed is up).
 */
static void gpio_process(const struct pollfd *pfds, size_t n)
{
	if (sbrig_gpio_process(rig.gpio, pfds, n) < 0)
		log_warn("%s", sbrig_errmsg());
}

static void gpio_io(int fd, short revents, void *data)
{
	struct pollfd p = { .fd = fd, .revents = revents };

	if (fd == sbrig_gpio_event_fd(rig.gpio))
		gpio_edges();
	else
		gpio_process(&p, 1);
	gpio_rearm();
}

static void gpio_deadline(void *data)
{
	gpio_process(NULL, 0);
	gpio_rearm();
}

/* Follow the fds and the deadline the GPIO object wants watched. */
static void gpio_rearm(void)
{
	struct pollfd now[RIG_GPIO_FDS];
	int64_t deadline;
	int n;

	if (!rig.gpio)
		return;
	n = sbrig_gpio_fds(rig.gpio, now, RIG_GPIO_FDS);
	if (n < 0) {
		log_err("%s", sbrig_errmsg());
		n = 0;
	}
	if (rig.edges_broken) {		/* drop the edge fd from the set */
		int k = 0;

		for (int i = 0; i < n; i++)
			if (now[i].fd != sbrig_gpio_event_fd(rig.gpio))
				now[k++] = now[i];
		n = k;
	}
	for (int i = 0; i < rig.ngpio_fds; i++) {
		bool kept = false;

		for (int j = 0; j < n && !kept; j++)
			kept = now[j].fd == rig.gpio_fds[i].fd;
		if (!kept)
			sched_fd_del(rig.gpio_fds[i].fd);
	}
	for (int j = 0; j < n; j++) {
		bool had = false;

		for (int i = 0; i < rig.ngpio_fds && !had; i++)
			had = now[j].fd == rig.gpio_fds[i].fd;
		if (had)
			sched_fd_events(now[j].fd, now[j].events);
		else if (sched_fd_add(now[j].fd, now[j].events, gpio_io,
				      NULL) < 0)
			log_err("%s", sbrig_errmsg());
	}
	memcpy(rig.gpio_fds, now, sizeof(now[0]) * (size_t)n);
	rig.ngpio_fds = n;
	deadline = sbrig_gpio_deadline(rig.gpio);
	if (deadline == INT64_MAX)
		sched_timer_stop(&rig.gpio_timer);
	else
		sched_timer_start(&rig.gpio_timer, deadline, gpio_deadline,
				  NULL);
}

static void gpio_close(void)
{
	for (int i = 0; i < rig.ngpio_fds; i++)
		sched_fd_del(rig.gpio_fds[i].fd);
	rig.ngpio_fds = 0;
	sched_timer_stop(&rig.gpio_timer);
	sbrig_gpio_free(rig.gpio);	/* outputs go inactive */
	rig.gpio = NULL;
}

static bool any_line(void)
{
	if (rig.cfg.charger.present || rig.cfg.marker.present)
		return true;
	for (unsigned int i = 0; i < rig.cfg.nkeys; i++)
		if (rig.cfg.keys[i].present)
			return true;
	return false;
}

static void press_release(void *data)
{
	struct rig_press *p = data;
	rig_press_fn done = p->done;
	int ret;

	sched_timer_stop(&p->timer);
	ret = rig_set_line(p->key, false, "release", NULL);
	if (ret < 0)
		log_err("release %s: %s", p->key, sbrig_errmsg());
	p->key[0] = '\0';
	p->done = NULL;
	if (done)
		done(ret, p->press_ns, p->data);
}

int rig_press(const char *key, int64_t duration_ns, int64_t *press_ns,
	      rig_press_fn done, void *data)
{
	struct rig_press *slot = NULL;
	int ret;

	if (!rig_has_key(key))
		return sbrig_set_error(-ENOENT, "no key '%s' on rig %s", key,
				       rig.cfg.name);
	for (unsigned int i = 0; i < SBRIG_MAX_KEYS; i++) {
		if (strcmp(rig.presses[i].key, key) == 0)
			return sbrig_set_error(-EBUSY, "key '%s' is already pressed",
					       key);
		if (!slot && !rig.presses[i].key[0])
			slot = &rig.presses[i];
	}
	if (!slot)
		return sbrig_set_error(-EBUSY, "too many keys pressed");
	if (duration_ns <= 0)
		duration_ns = (int64_t)rig.cfg.press_ms * NS_PER_MS;
	ret = rig_set_line(key, true, "press", &slot->press_ns);
	if (ret < 0)
		return ret;
	snprintf(slot->key, sizeof(slot->key), "%s", key);
	slot->done = done;
	slot->data = data;
	sched_timer_start(&slot->timer, time_add(slot->press_ns, duration_ns),
			  press_release, slot);
	if (press_ns)
		*press_ns = slot->press_ns;
	return 0;
}

void rig_release(void *data)
{
	for (unsigned int i = 0; i < SBRIG_MAX_KEYS; i++)
		if (rig.presses[i].key[0] && rig.presses[i].data == data)
			press_release(&rig.presses[i]);
}

void rig_forget(void *data)
{
	for (unsigned int i = 0; i < SBRIG_MAX_KEYS; i++)
		if (rig.presses[i].data == data)
			rig.presses[i].done = NULL;
}

/* ---- target link -------------------------------------------------------- */

static void link_io(int fd, short revents, void *data);
static void link_deadline(void *data);
static void link_dispatch(void *data);

/* Follow the link's pollfd and deadline after it did anything. */
static void link_rearm(void)
{
	struct pollfd pfd;
	int fd = -1;

	if (sbrig_link_pollfd(rig.link, &pfd) == 1)
		fd = pfd.fd;
	if (fd != rig.link_fd) {
		if (rig.link_fd >= 0)
			sched_fd_del(rig.link_fd);
		rig.link_fd = -1;
		if (fd >= 0 && sched_fd_add(fd, pfd.events, link_io, NULL) == 0)
			rig.link_fd = fd;
	} else if (fd >= 0) {
		sched_fd_events(fd, pfd.events);
	}
	sched_timer_start(&rig.link_timer, sbrig_link_deadline(rig.link),
			  link_deadline, NULL);
}

static void link_hello(const struct sbrig_link_msg *m)
{
	struct rig_target *t = &rig.target;

	if (rig.marker && (m->hello.new_boot || m->hello.log_restart))
		sbrig_marker_reset(rig.marker);
	if (m->hello.new_boot || m->hello.log_restart)
		rig.policy_known = false;	/* until its next record */
	t->known = true;
	snprintf(t->boot_id, sizeof(t->boot_id), "%s", m->hello.boot_id);
	snprintf(t->agent, sizeof(t->agent), "%s", m->hello.agent);
	snprintf(t->kernel, sizeof(t->kernel), "%s", m->hello.kernel);
	snprintf(t->module, sizeof(t->module), "%s", m->hello.module);
	log_info("link: agent %s up: boot %s, kernel %s, module %s%s",
		 t->agent, t->boot_id, t->kernel, t->module,
		 m->hello.new_boot ? " (new boot)" :
		 m->hello.log_restart ? " (module reloaded: new event log)" :
		 "");
	NOTIFY(target, t);
}

static struct rig_command *command_find(uint32_t id)
{
	for (unsigned int i = 0; i < RIG_MAX_COMMANDS; i++)
		if (rig.commands[i].id == id && id)
			return &rig.commands[i];
	return NULL;
}

static void link_reply(uint32_t id, const struct sbrig_link_msg *m)
{
	struct rig_command *c = command_find(id);

	if (c)
		c->fn(m, c->data);
	else
		log_dbg("link: answer to command %" PRIu32 " nobody waits for",
			id);
}

/*
 * How the target sleeps, from its "suspend STATE MEM_SLEEP" and "enter
 * STATE" records: "deep" (suspend-to-RAM, which QEMU shows "suspended")
 * or not (s2idle, which it shows "running").
 */
static void sleep_kind(const char *arg)
{
	const char *last = strrchr(arg, ' ');

	last = last ? last + 1 : arg;
	rig.sleep_deep = !strcmp(last, "deep");
}

static void link_message(const struct sbrig_link_msg *m)
{
	struct rig_clock_row row;

	switch (m->type) {
	case SBRIG_LINK_HELLO:
		link_hello(m);
		break;
	case SBRIG_LINK_EVENT:
		if (!strcmp(m->event.type, "policy")) {	/* "POLICY REQUESTED" */
			rig.policy_known = true;
			rig.opportunistic = !strncmp(m->event.arg,
						     "opportunistic", 13);
		}
		if (!strcmp(m->event.type, "suspend") ||
		    !strcmp(m->event.type, "enter"))
			sleep_kind(m->event.arg);
		NOTIFY(event, &m->event);
		marker_event(&m->event);
		break;
	case SBRIG_LINK_GAP:
		/* the active set is unknown now, as after "lost" */
		marker_event(&(struct sbrig_event){ .type = "lost" });
		log_warn("link: target lost events %" PRIu64 "..%" PRIu64,
			 m->gap.from_seq, m->gap.to_seq);
		break;
	case SBRIG_LINK_STATS:
		link_reply(m->snapshot, m);
		break;
	case SBRIG_LINK_REPLY:
	case SBRIG_LINK_DONE:
		link_reply(m->cmd_id, m);
		break;
	case SBRIG_LINK_CLOCK:
		row = (struct rig_clock_row){ m->clock.host_send_ns,
					      m->clock.host_recv_ns,
					      m->clock.target_ns,
					      m->clock.retained };
		NOTIFY(clock, &row);
		break;
	case SBRIG_LINK_DOWN:
		log_warn("link: down: %s", m->text);
		break;
	}
}

/* Hand on at most a batch of decoded messages; the rest next turn. */
static void link_dispatch(void *data)
{
	struct sbrig_link_msg m;
	unsigned int n = 0;

	while (n < RIG_LINK_BATCH && sbrig_link_next(rig.link, &m) == 1) {
		link_message(&m);
		n++;
	}
	if (n == RIG_LINK_BATCH)
		sched_defer(&rig.link_more, link_dispatch, NULL);
}

static void link_io(int fd, short revents, void *data)
{
	sbrig_link_process(rig.link, revents, sbrig_now_ns());
	link_dispatch(NULL);
	link_rearm();
}

static void link_deadline(void *data)
{
	sbrig_link_process(rig.link, 0, sbrig_now_ns());
	link_dispatch(NULL);
	link_rearm();
}

int rig_link_command(const char *cmd, rig_reply_fn fn, void *data,
		     uint32_t *cmd_id)
{
	struct rig_command *slot = NULL;
	struct sbrig_link_status st;
	uint32_t id;
	int ret;

	if (!rig.link)
		return sbrig_set_error(-ENOTCONN, "no target link on rig %s",
				       rig.cfg.name);
	for (unsigned int i = 0; i < RIG_MAX_COMMANDS && !slot; i++)
		if (!rig.commands[i].id)
			slot = &rig.commands[i];
	if (!slot)
		return sbrig_set_error(-ENOBUFS, "more than %d agent commands "
				       "in flight", RIG_MAX_COMMANDS);
	ret = sbrig_link_command(rig.link, cmd, &id);
	if (ret < 0)
		return ret;
	*slot = (struct rig_command){ id, fn, data };
	*cmd_id = id;
	/* let the link send it now rather than at its next deadline; its
	 * answers come on a later turn, never from this call */
	sbrig_link_process(rig.link, 0, sbrig_now_ns());
	link_rearm();
	sbrig_link_get_status(rig.link, &st);
	if (st.queued)
		sched_defer(&rig.link_more, link_dispatch, NULL);
	return 0;
}

void rig_link_forget(uint32_t cmd_id)
{
	struct rig_command *c = command_find(cmd_id);

	if (c)
		*c = (struct rig_command){ 0 };
	/* not resent either: a command given up is no longer in flight */
	if (rig.link && cmd_id)
		sbrig_link_cancel(rig.link, cmd_id);
}

/* ---- witnesses of the target's sleep ------------------------------------ */

const char *rig_witness_name(enum rig_witness w)
{
	static const char *const names[] = {
		[RIG_WITNESS_MACHINE] = "machine",
		[RIG_WITNESS_POWER] = "power",
		[RIG_WITNESS_MARKER] = "marker",
		[RIG_WITNESS_LINK] = "link",
	};

	return names[w];
}

const char *rig_awake_why(char *buf, size_t size)
{
	struct rig_asleep w;
	int64_t next;

	if (rig_asleep_poll(TIME_NEVER, &next, &w) < 0 ||
	    w.witness == RIG_WITNESS_LINK)
		snprintf(buf, size, "its agent was never quiet for quiet_ms "
			 "%u ms", rig.cfg.quiet_ms);
	else
		snprintf(buf, size, "the %s sees it awake: %s",
			 rig_witness_name(w.witness), w.detail);
	return buf;
}

static void machine_rearm(void);

static void machine_io(int fd, short revents, void *data)
{
	sbrig_machine_process(rig.machine, revents);
	machine_rearm();
}

/* Ask again every RIG_MACHINE_POLL_NS; follow the fd and the deadline. */
static void machine_tick(void *data)
{
	sbrig_machine_process(rig.machine, 0);
	if (sbrig_machine_poll(rig.machine) < 0)
		log_dbg("machine: %s", sbrig_errmsg());
	machine_rearm();
}

static void machine_rearm(void)
{
	short events;
	int fd = sbrig_machine_fd(rig.machine, &events);
	int64_t at = time_after(RIG_MACHINE_POLL_NS);

	if (fd != rig.machine_fd) {
		if (rig.machine_fd >= 0)
			sched_fd_del(rig.machine_fd);
		rig.machine_fd = -1;
		if (fd >= 0 && sched_fd_add(fd, events, machine_io, NULL) == 0)
			rig.machine_fd = fd;
	} else if (fd >= 0) {
		sched_fd_events(fd, events);
	}
	if (sbrig_machine_deadline(rig.machine) < at)
		at = sbrig_machine_deadline(rig.machine);
	sched_timer_start(&rig.machine_timer, at, machine_tick, NULL);
}

static void machine_close(void)
{
	if (!rig.machine)
		return;
	sched_timer_stop(&rig.machine_timer);
	if (rig.machine_fd >= 0)
		sched_fd_del(rig.machine_fd);
	rig.machine_fd = -1;
	sbrig_machine_free(rig.machine);
	rig.machine = NULL;
}

/* The machine's run state: 1 asleep, 0 awake, -1 it cannot tell. */
static int witness_machine(int64_t now, struct rig_asleep *w)
{
	int64_t at;
	const char *st;

	if (!rig.machine)
		return -1;
	st = sbrig_machine_state(rig.machine, &at);
	if (!*st || time_sub(now, at) > RIG_MACHINE_STALE_NS)
		return -1;	/* unknown */
	if (!strcmp(st, "running")) {
		/* s2idle looks like running; a deep sleep does not */
		if (!rig.sleep_deep)
			return -1;
		snprintf(w->detail, sizeof(w->detail), "%s says running "
			 "(its sleep is deep)", sbrig_machine_uri(rig.machine));
		return 0;
	}
	snprintf(w->detail, sizeof(w->detail), "%s says %s",
		 sbrig_machine_uri(rig.machine), st);
	return !strcmp(st, "suspended");
}

/*
 * The supply: 1 at or below asleep_uA, 0 above, -1 no reading (the
 * capture's last sample, else the last reading if fresh: a new one is
 * asked for, the next poll sees it).
 */
static int witness_power(int64_t now, struct rig_asleep *w)
{
	struct sbrig_sample s;

	if (!rig.cfg.asleep_uA || !rig_has_power())
		return -1;
	rig.watched_until_ns = time_add(now, RIG_WATCH_HOLD_NS);
	power_pace(now);
	if (rig.power_state != POWER_IDLE) {
		s = rig.last_sample;
	} else {
		power_refresh(now);
		if (!rig.have_reading)
			return -1;
		s = rig.reading;
	}
	if (!s.t_ns || time_sub(now, s.t_ns) > RIG_SAMPLE_STALE_NS)
		return -1;
	snprintf(w->detail, sizeof(w->detail), "the supply draws %.3f mA, "
		 "%s the %.3f mA of its sleep", s.current_uA / 1000.0,
		 s.current_uA <= (int64_t)rig.cfg.asleep_uA ? "within" :
		 "above", rig.cfg.asleep_uA / 1000.0);
	return s.current_uA <= (int64_t)rig.cfg.asleep_uA;
}

/* The marker, opportunistic policy: 0 high (awake), -1 it cannot tell. */
static int witness_marker(struct rig_asleep *w)
{
	if (!rig.cfg.marker.present || !rig.gpio || !rig.policy_known ||
	    !rig.opportunistic ||
	    sbrig_gpio_get(rig.gpio, rig.cfg.marker.name) != 1)
		return -1;
	snprintf(w->detail, sizeof(w->detail), "the marker is high: a "
		 "blocker is active (opportunistic policy)");
	return 0;
}

int rig_asleep_poll(int64_t deadline_ns, int64_t *next_ns,
		    struct rig_asleep *why)
{
	struct sbrig_link_status st;
	struct rig_asleep w = { 0 };
	int64_t now = sbrig_now_ns(), at = -1;
	int verdict = -1;

	if (!rig.link)
		return sbrig_set_error(-ENOTCONN, "no target link on rig %s",
				       rig.cfg.name);
	sbrig_link_get_status(rig.link, &st);
	w.quiet_since_ns = st.last_rx_ns;
	/* the strongest witness that can tell decides */
	w.witness = RIG_WITNESS_MACHINE;
	verdict = witness_machine(now, &w);
	if (verdict < 0) {
		w.witness = RIG_WITNESS_POWER;
		verdict = witness_power(now, &w);
	}
	if (verdict < 0) {
		w.witness = RIG_WITNESS_MARKER;
		verdict = witness_marker(&w);
	}
	if (verdict < 0) {
		w.witness = RIG_WITNESS_LINK;
		verdict = 0;
		if (st.boot_id[0] && st.last_rx_ns) {
			/* events it sent before it slept are still waiting
			 * for the clock model: not asleep until they are out */
			if (st.queued)
				at = time_add(now, 100 * NS_PER_MS);
			else
				at = time_add(st.last_rx_ns,
					      (int64_t)rig.cfg.quiet_ms *
					      NS_PER_MS);
			verdict = !st.queued && now >= at;
			snprintf(w.detail, sizeof(w.detail), "no frame from "
				 "the agent for %" PRId64 " ms (quiet_ms %u)",
				 time_sub(now, st.last_rx_ns) / NS_PER_MS,
				 rig.cfg.quiet_ms);
		} else {
			snprintf(w.detail, sizeof(w.detail), "no agent seen "
				 "yet");
		}
	}
	/* whoever decided: what the agent sent before it slept must be out
	 * of the link first (waiting for the clock model), so that a
	 * "wait asleep" consumes it, not a later wait */
	if (verdict == 1 && st.queued) {
		verdict = 0;
		at = time_add(now, 100 * NS_PER_MS);
	}
	w.asleep = verdict == 1;
	if (why)
		*why = w;
	if (w.asleep)
		return 1;
	if (now >= deadline_ns)
		return -ETIMEDOUT;
	/* a witness besides the link may tell any time */
	if (rig.machine || (rig.cfg.asleep_uA && rig_has_power()) ||
	    (rig.cfg.marker.present && rig.gpio)) {
		int64_t soon = time_add(now, RIG_WITNESS_POLL_NS);

		if (at < 0 || soon < at)
			at = soon;
	}
	*next_ns = at >= 0 && at < deadline_ns ? at : deadline_ns;
	return 0;
}

int64_t rig_link_last_rx_ns(void)
{
	struct sbrig_link_status st;

	if (!rig.link)
		return 0;
	sbrig_link_get_status(rig.link, &st);
	return st.last_rx_ns;
}

/* ---- status ------------------------------------------------------------- */

static void status_line(struct rig_status *st, const struct sbrig_line_cfg *l)
{
	struct rig_line_status *ls;

	if (!l->present || !rig.gpio)
		return;
	ls = &st->lines[st->nlines++];
	snprintf(ls->name, sizeof(ls->name), "%s", l->name);
	ls->dir = is_marker(l) ? RIG_LINE_IN : RIG_LINE_OUT;
	ls->value = sbrig_gpio_get(rig.gpio, l->name);
	if (ls->value < 0)
		snprintf(ls->err, sizeof(ls->err), "%s", sbrig_errmsg());
}

void rig_get_status(struct rig_status *st)
{
	memset(st, 0, sizeof(*st));
	st->cfg = &rig.cfg;
	for (unsigned int i = 0; i < rig.cfg.nkeys; i++)
		status_line(st, &rig.cfg.keys[i]);
	status_line(st, &rig.cfg.charger);
	status_line(st, &rig.cfg.marker);

	st->has_power = rig_has_power();
	if (st->has_power) {
		const char *busy = worker_busy(rig.power_wk, &st->sensor_busy_ns);

		if (busy) {
			snprintf(st->sensor_busy, sizeof(st->sensor_busy), "%s",
				 busy);
			st->sensor_busy_ns = time_sub(sbrig_now_ns(),
						      st->sensor_busy_ns);
		}
		st->sensor_ok = rig.power != NULL;
		if (st->sensor_ok)
			st->sensor = rig.power_info;
		st->capturing = rig.power_state != POWER_IDLE;
		if (!st->capturing && rig.have_reading) {
			st->reading = rig.reading;
			st->have_reading = true;
		}
		snprintf(st->sensor_err, sizeof(st->sensor_err), "%s",
			 !st->sensor_ok ? rig.power_err :
			 st->capturing || st->have_reading ? "" :
			 rig.reading_err);
		if (!st->sensor_ok && !st->sensor_err[0])
			snprintf(st->sensor_err, sizeof(st->sensor_err),
				 "opening it");
	}

	st->has_link = rig.link != NULL;
	if (st->has_link) {
		int64_t next;

		sbrig_link_get_status(rig.link, &st->link);
		st->asleep = rig_asleep_poll(sbrig_now_ns(), &next,
					     &st->why) == 1;
		sbrig_clock_get_state(sbrig_link_clock(rig.link), &st->clock);
		st->target = rig.target;
	}
}

/* ---- init/fini ---------------------------------------------------------- */

/**
 * rig_init() - load the rig description and open what it configures
 * @conf_path: rig .conf file
 * @overrides: "section.key=value" strings applied after the file
 * @noverrides: their number
 *
 * Return: 0, or -errno with sbrig_errmsg() set (bad config, GPIO lines
 * that cannot be requested, malformed link URI).
 */
int rig_init(const char *conf_path, char **overrides, int noverrides)
{
	struct sbrig_link_opts lo = { 0 };
	char *abs = realpath(conf_path, NULL);
	int ret;

	memset(&rig, 0, sizeof(rig));
	rig.link_fd = -1;
	rig.machine_fd = -1;
	/* provenance names the file wherever the daemon was started from */
	ret = sbrig_config_load(abs ? abs : conf_path, &rig.cfg);
	free(abs);
	if (ret < 0)
		return ret;
	for (int i = 0; i < noverrides; i++) {
		ret = sbrig_config_set(&rig.cfg, overrides[i]);
		if (ret < 0)
			return ret;
	}
	if (any_line()) {
		rig.gpio = sbrig_gpio_new(&rig.cfg, "sbrigd");
		if (!rig.gpio)
			return errno ? -errno : -EIO;	/* message is set */
		gpio_rearm();
	}
	if (rig_has_power()) {
		rig.power_wk = worker_new("sbrigd-sensor");
		if (!rig.power_wk) {
			ret = -ENOMEM;	/* message is set */
			goto close_power;
		}
		power_refresh(sbrig_now_ns());	/* open it, read it */
	}
	if (rig.cfg.target_uri[0]) {
		lo.ping_interval_ms = rig.cfg.ping_interval_ms;
		lo.timeout_ms = rig.cfg.link_timeout_ms;
		rig.link = sbrig_link_new(rig.cfg.target_uri, &lo);
		if (!rig.link) {
			ret = errno ? -errno : -EINVAL;
			goto close_power;
		}
		link_rearm();
		if (rig.cfg.marker.present) {
			rig.marker = sbrig_marker_new(RIG_MARKER_WINDOW_NS);
			if (!rig.marker) {
				ret = sbrig_set_error(-ENOMEM, "out of memory");
				goto free_link;
			}
			/* the line was requested above: its edges count from 1 */
			sbrig_marker_expect_seqno(rig.marker, 1);
		}
	}
	if (rig.cfg.machine_uri[0]) {
		/* connected on its first tick; unreachable: it tells nothing */
		rig.machine = sbrig_machine_new(rig.cfg.machine_uri);
		if (!rig.machine) {
			ret = errno ? -errno : -EINVAL;
			goto free_marker;
		}
		sched_defer(&rig.machine_timer, machine_tick, NULL);
	}
	log_info("rig %s from %s (sha256 %.12s): %u key(s)%s%s, sensor %s, "
		 "link %s", rig.cfg.name, rig.cfg.path, rig.cfg.sha256,
		 rig.cfg.nkeys, rig.cfg.charger.present ? ", charger" : "",
		 rig.cfg.marker.present ? ", marker" : "",
		 rig_has_power() ? rig.cfg.power_uri : "none",
		 rig.link ? rig.cfg.target_uri : "none");
	log_info("witnesses of the target's sleep: %s%s%s%slink",
		 rig.machine ? "machine " : "", rig.machine ? rig.cfg.machine_uri :
		 "", rig.machine ? ", " : "",
		 rig.cfg.asleep_uA && rig_has_power() ? "power, " :
		 rig.cfg.marker.present ? "marker, " : "");
	return 0;

free_marker:
	sbrig_marker_free(rig.marker);
	rig.marker = NULL;
free_link:
	sched_timer_stop(&rig.link_timer);
	if (rig.link_fd >= 0)
		sched_fd_del(rig.link_fd);
	sbrig_link_free(rig.link);
	rig.link = NULL;
close_power:
	rig_sensor_fini();
	gpio_close();
	return ret;
}

void rig_fini(void)
{
	for (unsigned int i = 0; i < SBRIG_MAX_KEYS; i++) {
		if (!rig.presses[i].key[0])
			continue;
		rig.presses[i].done = NULL;
		press_release(&rig.presses[i]);
	}
	memset(rig.observers, 0, sizeof(rig.observers));
	memset(rig.commands, 0, sizeof(rig.commands));
	sched_timer_stop(&rig.link_more);
	if (rig.link) {
		sched_timer_stop(&rig.link_timer);
		if (rig.link_fd >= 0)
			sched_fd_del(rig.link_fd);
		sbrig_link_free(rig.link);
		rig.link = NULL;
	}
	sbrig_marker_free(rig.marker);
	rig.marker = NULL;
	machine_close();
	rig_sensor_fini();
	gpio_close();
}
