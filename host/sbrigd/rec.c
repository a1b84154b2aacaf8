// SPDX-License-Identifier: GPL-2.0
/*
 * rec.c - the running capture, see rec.h.
 *
 * While a capture runs, the power sensor samples and everything the rig
 * reports to its observers is appended to the capture directory: samples
 * and gaps, marker edges, stimuli, target events with their host times,
 * stats snapshots (the agent's "stats" command every stats_every, answered
 * to our own reply callback) and the link's clock exchanges. Once a second
 * a tick syncs the files (capture.c: at most once a second) and tells the
 * owner the progress. A wake-up of the loop is the dearest thing it does
 * while capturing (a context switch), so the tick rides on the sensor's:
 * the samples that arrive (every quarter second, power.c) a second or
 * more after the last tick run it, and its timer, REC_TICK_SLACK_NS
 * later, only fires when none come (no sensor, or a late one).
 *
 * A capture ends when its duration is over, when rec_stop() is called (a
 * "stop" request, the end of a scenario, shutdown), when the sensor fails
 * or when writing fails ("failed: why"); whatever the reason, the end
 * callback runs exactly once, after the directory is closed. The sensor's
 * buffer is torn down on its own thread first (rig_power_stop()): the end
 * comes after the last samples, without the loop waiting for them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/capture.h>

#include "rec.h"
#include "rig.h"
#include "sched.h"
#include "util.h"

#define REC_TICK_NS NS_PER_S
#define REC_TICK_SLACK_NS (NS_PER_S / 4)
#define REC_SNAPSHOTS 4		/* stats commands in flight at most */

/* the recorder: only the loop's thread touches it */
static struct {
	struct sbrig_capture *cap;
	char dir[PATH_MAX];
	struct rec_opts opts;
	const struct rec_client_ops *ops;
	void *ctx;
	struct rec_counts n;
	int64_t start_ns;
	int64_t last_sample_ns;		/* the last sample's time, or start */
	int64_t last_tick_ns;
	struct sched_timer tick;
	struct sched_timer stop_timer;
	struct sched_timer stats_timer;
	int64_t last_progress_ns;
	uint32_t snapshots[REC_SNAPSHOTS];	/* stats cmd ids in flight */
	int64_t snap_t[REC_SNAPSHOTS];		/* their first row's time */
	unsigned int nsnap;
	bool closing;			/* finish() is under way */
	bool recording;			/* the sensor's first samples are in */
	int end_err;			/* finish()'s, for finish_close() */
	char end_status[512];
	struct rig_observer obs;
	struct op_handle handle;
} rec;

bool rec_active(void)
{
	return rec.cap != NULL;
}

static void fill_result(struct rec_result *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s", rec.dir);
	r->n = rec.n;
	r->elapsed_ns = time_sub(sbrig_now_ns(), rec.start_ns);
	r->mean_mA = rec.n.samples ? (double)rec.n.sum_current_uA /
		(double)rec.n.samples / 1000.0 : 0.0;
}

bool rec_get_result(struct rec_result *r)
{
	if (!rec.cap)
		return false;
	fill_result(r);
	return true;
}

static void forget_snapshots(void)
{
	for (unsigned int i = 0; i < REC_SNAPSHOTS; i++) {
		if (rec.snapshots[i])
			rig_link_forget(rec.snapshots[i]);
		rec.snapshots[i] = 0;
	}
}

/*
 * The sensor has stopped (@err: it never started, or failed meanwhile,
 * @why says how): close the capture and tell the owner.
 */
static void finish_close(void *data, int serr, const char *why)
{
	const struct rec_client_ops *ops = rec.ops;
	void *ctx = rec.ctx;
	struct sbrig_power_stats pst;
	struct rec_result res;
	int err = rec.end_err;
	int ret;

	if (serr && !err) {
		err = serr;
		snprintf(rec.end_status, sizeof(rec.end_status), "failed: %s",
			 why);
	}

	rig_unobserve(&rec.obs);
	forget_snapshots();
	sched_timer_stop(&rec.tick);
	sched_timer_stop(&rec.stop_timer);
	sched_timer_stop(&rec.stats_timer);
	fill_result(&res);
	snprintf(res.status, sizeof(res.status), "%s", rec.end_status);
	if (rig_power_last_stats(&pst)) {	/* how the sample times were mapped */
		sbrig_capture_set_sensor_clock(rec.cap, pst.remote_clock,
					       pst.clock_drift_known,
					       pst.clock_drift_ppb,
					       pst.clock_uncert_ns);
		if (pst.tail_lost) {	/* the capture ends early: say so */
			sbrig_capture_set_sensor_tail_lost(rec.cap, pst.stop_ns);
			res.tail_lost_ns = time_sub(pst.stop_ns,
						    rec.last_sample_ns);
			if (res.tail_lost_ns < 1)
				res.tail_lost_ns = 1;
		}
	}
	ret = sbrig_capture_close(rec.cap, res.status);
	rec.cap = NULL;
	if (ret < 0 && !err) {
		err = ret;
		snprintf(res.status, sizeof(res.status), "failed: %s",
			 sbrig_errmsg());
	}
	log_info("capture %s closed: %s (%" PRIu64 " samples, %" PRIu64
		 " events)", rec.dir, res.status, res.n.samples, res.n.events);
	rec.ops = NULL;
	rec.ctx = NULL;
	rec.closing = false;
	if (ops && ops->end)
		ops->end(ctx, err, &res);
}

/*
 * Close the capture with @status and tell the owner: once the sensor's
 * buffer is torn down (on its own thread) and its last samples are in,
 * finish_close() runs; at once if the sensor was not sampling.
 */
static int finish(int err, const char *status)
{
	if (!rec.cap || rec.closing)
		return 0;
	rec.closing = true;
	rec.end_err = err;
	snprintf(rec.end_status, sizeof(rec.end_status), "%s", status);
	if (!rig_power_stop(finish_close, NULL))
		finish_close(NULL, 0, "");
	return err;
}

/* An appender failed: the capture cannot go on. */
static void failed(int err, const char *what)
{
	char st[512];

	if (!rec.cap || rec.closing)
		return;
	snprintf(st, sizeof(st), "failed: %s: %s", what, sbrig_errmsg());
	log_err("capture %s: %s", rec.dir, st);
	finish(err, st);
}

static void tick(void *data)
{
	int64_t now = sbrig_now_ns();
	struct rec_result r;
	int ret;

	ret = sbrig_capture_sync(rec.cap, now);
	if (ret < 0) {
		failed(ret, "sync");
		return;
	}
	rec.last_tick_ns = now;
	sched_timer_start(&rec.tick,
			  time_add(now, REC_TICK_NS + REC_TICK_SLACK_NS), tick,
			  NULL);
	if (time_sub(now, rec.last_progress_ns) >= NS_PER_S) {
		rec.last_progress_ns = now;
		if (rec.ops && rec.ops->progress) {
			fill_result(&r);
			rec.ops->progress(rec.ctx, &r);
		}
	}
}

static void duration_over(void *data)
{
	finish(0, "complete");
}

/* ---- stats snapshots ---------------------------------------------------- */

/*
 * Every row of a snapshot is stamped with the time its first row came
 * (capture-format.md: one t_ns per snapshot, so that a reader can tell
 * snapshots apart when objects of one name give several rows).
 */
static int64_t snapshot_time(uint32_t snapshot, uint32_t index)
{
	int64_t now = sbrig_now_ns();

	for (unsigned int i = 0; i < REC_SNAPSHOTS; i++) {
		if (rec.snapshots[i] != snapshot)
			continue;
		if (index == 0 || !rec.snap_t[i])
			rec.snap_t[i] = now;
		return rec.snap_t[i];
	}
	return now;
}

static void stats_reply(const struct sbrig_link_msg *m, void *data)
{
	int ret;

	if (!rec.cap)
		return;
	if (m->type == SBRIG_LINK_STATS) {
		ret = sbrig_capture_add_stats(rec.cap,
					      snapshot_time(m->snapshot,
							    m->index),
					      &m->stats);
		if (ret < 0)
			failed(ret, "stats");
		else
			rec.n.stats_rows++;
		return;
	}
	/* the REPLY ends the snapshot (its rows come before it) */
	for (unsigned int i = 0; i < REC_SNAPSHOTS; i++) {
		if (rec.snapshots[i] == m->cmd_id) {
			rig_link_forget(m->cmd_id);
			rec.snapshots[i] = 0;
		}
	}
	if (m->err)
		log_warn("capture %s: stats: agent: %s", rec.dir, m->text);
}

static void ask_stats(void *data)
{
	unsigned int slot = rec.nsnap++ % REC_SNAPSHOTS;
	uint32_t id;

	/* an answer that has not come in REC_SNAPSHOTS periods never will */
	if (rec.snapshots[slot])
		rig_link_forget(rec.snapshots[slot]);
	rec.snapshots[slot] = 0;
	rec.snap_t[slot] = 0;
	if (rig_has_link() && rig_target()->known &&
	    rig_link_command("stats", stats_reply, NULL, &id) == 0)
		rec.snapshots[slot] = id;
	sched_timer_start(&rec.stats_timer,
			  time_after(rec.opts.stats_every_ns), ask_stats, NULL);
}

/* ---- what the rig reports ----------------------------------------------- */

static void on_samples(void *data, const struct sbrig_sample *s, size_t n)
{
	int ret = sbrig_capture_add_samples(rec.cap, s, n);

	if (ret < 0) {
		failed(ret, "samples");
		return;
	}
	rec.n.samples += n;
	if (n && !rec.recording) {
		rec.recording = true;
		if (rec.ops && rec.ops->recording)
			rec.ops->recording(rec.ctx);
	}
	for (size_t i = 0; i < n; i++)
		rec.n.sum_current_uA += s[i].current_uA;
	if (n)
		rec.last_sample_ns = s[n - 1].t_ns;
	/* the tick, on this wake-up rather than one of its own */
	if (time_sub(sbrig_now_ns(), rec.last_tick_ns) >= REC_TICK_NS)
		tick(NULL);
}

static void on_gap(void *data, const struct sbrig_gap *gap)
{
	int ret = sbrig_capture_add_gap(rec.cap, gap);

	if (ret < 0) {
		failed(ret, "gaps");
		return;
	}
	rec.n.gaps++;
	rec.n.missing += gap->missing;
}

static void on_edge(void *data, const struct sbrig_edge *edge)
{
	int ret = sbrig_capture_add_edge(rec.cap, edge);

	if (ret < 0)
		failed(ret, "edges");
	else
		rec.n.edges++;
}

static void on_stimulus(void *data, const struct sbrig_stimulus *st)
{
	int ret = sbrig_capture_add_stimulus(rec.cap, st);

	if (ret < 0)
		failed(ret, "stimuli");
	else
		rec.n.stimuli++;
}

static void on_event(void *data, const struct sbrig_event *ev)
{
	int ret = sbrig_capture_add_event(rec.cap, ev);

	if (ret < 0)
		failed(ret, "events");
	else
		rec.n.events++;
}

static void on_clock(void *data, const struct rig_clock_row *row)
{
	int ret = sbrig_capture_add_clock(rec.cap, row->send_ns, row->recv_ns,
					  row->target_ns, row->retained);

	if (ret < 0)
		failed(ret, "clock");
	else
		rec.n.clock_rows++;
}

static void on_target(void *data, const struct rig_target *t)
{
	int ret;

	if (!t->known)
		return;
	ret = sbrig_capture_set_target(rec.cap, t->boot_id, t->kernel,
				       t->module, t->agent);
	if (ret < 0)
		failed(ret, "meta.ini");
}

static void on_sensor_failed(void *data, int err, const char *why)
{
	char st[400];

	snprintf(st, sizeof(st), "failed: %s", why);
	log_err("capture %s: %s", rec.dir, st);
	/* a capture without its samples is no capture */
	finish(err, st);
}

static const struct rig_observer_ops rec_observer = {
	.samples = on_samples,
	.gap = on_gap,
	.edge = on_edge,
	.stimulus = on_stimulus,
	.event = on_event,
	.clock = on_clock,
	.target = on_target,
	.sensor_failed = on_sensor_failed,
};

/* ---- start / stop ------------------------------------------------------- */

static void fill_provenance(struct sbrig_provenance *prov,
			    const struct rec_opts *o)
{
	const struct sbrig_config *cfg = rig_config();
	const char *sha = getenv("SBRIG_GIT_SHA");

	memset(prov, 0, sizeof(*prov));
	snprintf(prov->rig_name, sizeof(prov->rig_name), "%s", cfg->name);
	snprintf(prov->rig_config, sizeof(prov->rig_config), "%s", cfg->path);
	snprintf(prov->rig_sha256, sizeof(prov->rig_sha256), "%s",
		 cfg->sha256);
	snprintf(prov->host_version, sizeof(prov->host_version), "%s",
		 sbrig_version);
	snprintf(prov->git_sha, sizeof(prov->git_sha), "%s", sha ? sha : "");
	if (o->scenario) {
		snprintf(prov->scenario, sizeof(prov->scenario), "%s",
			 o->scenario->path);
		snprintf(prov->scenario_sha256, sizeof(prov->scenario_sha256),
			 "%s", o->scenario->sha256);
	}
	snprintf(prov->power_uri, sizeof(prov->power_uri), "%s",
		 cfg->power_uri);
	snprintf(prov->target_uri, sizeof(prov->target_uri), "%s",
		 cfg->target_uri);
}

/**
 * rec_start() - create a capture directory and start recording into it
 * @o: directory, duration, stats period, scenario (copied)
 * @ops: the owner's callbacks (NULL: nobody is told)
 * @ctx: for @ops
 *
 * Return: 0, or -errno with sbrig_errmsg() (-EBUSY: a capture runs).
 */
int rec_start(const struct rec_opts *o, const struct rec_client_ops *ops,
	      void *ctx)
{
	struct sbrig_provenance prov;
	int64_t now;
	int ret;

	if (rec.cap)
		return sbrig_set_error(-EBUSY, "a capture is running into %s",
				       rec.dir);
	if (o->duration_ns < 0)
		return sbrig_set_error(-EINVAL, "duration: must not be negative");
	if (o->stats_every_ns < 0 || (o->stats_every_ns > 0 &&
				       o->stats_every_ns < REC_MIN_STATS_EVERY_NS))
		return sbrig_set_error(-EINVAL, "stats_every: must be 0 (never) "
				       "or at least %" PRId64 " ms",
				       REC_MIN_STATS_EVERY_NS / NS_PER_MS);
	fill_provenance(&prov, o);
	rec.cap = sbrig_capture_new(o->dir, &prov);
	if (!rec.cap)
		return errno ? -errno : -EIO;
	snprintf(rec.dir, sizeof(rec.dir), "%s", o->dir);
	rec.opts = *o;
	rec.opts.dir = rec.dir;
	rec.ops = ops;
	rec.ctx = ctx;
	memset(&rec.n, 0, sizeof(rec.n));
	memset(rec.snapshots, 0, sizeof(rec.snapshots));
	rec.nsnap = 0;
	rec.recording = false;
	now = sbrig_now_ns();
	rec.start_ns = now;
	rec.last_sample_ns = now;
	rec.last_progress_ns = now;
	rec.obs = (struct rig_observer){ &rec_observer, NULL };
	ret = rig_observe(&rec.obs);
	if (ret == 0 && rig_target()->known)
		on_target(NULL, rig_target());
	if (ret == 0 && rig_has_power()) {
		ret = rig_power_start();
		if (ret < 0)
			sbrig_prefix_error("sensor");
	}
	if (ret < 0) {
		char st[512];

		snprintf(st, sizeof(st), "failed: %s", sbrig_errmsg());
		rec.ops = NULL;		/* the caller hears it from us */
		finish(ret, st);
		return sbrig_set_error(ret, "%s", st + 8);
	}
	rec.last_tick_ns = now;
	sched_timer_start(&rec.tick, time_add(now, REC_TICK_NS), tick, NULL);
	if (o->duration_ns > 0)
		sched_timer_start(&rec.stop_timer, time_add(now, o->duration_ns),
				  duration_over, NULL);
	if (o->stats_every_ns > 0)
		ask_stats(NULL);
	log_info("capture %s started", rec.dir);
	return 0;
}

int rec_stop(const char *status)
{
	if (!rec.cap)
		return sbrig_set_error(-ENOENT, "no capture is running");
	return finish(0, status);
}

void rec_detach(void)
{
	rec.ops = NULL;
	rec.ctx = NULL;
}

/* ---- the handle of a capture request ------------------------------------ */

static void handle_stop(struct op_handle *h, enum op_stop why)
{
	/* Ctrl-C is the normal end of an open-ended capture: complete */
	rec_stop(why == OP_STOP_OWN ? "complete" :
		 why == OP_STOP_OTHER ? "aborted: stopped by a client" :
		 "aborted");
}

static void handle_detach(struct op_handle *h)
{
	rec_detach();
	/* nobody could end an open-ended capture otherwise */
	if (rec.opts.duration_ns <= 0)
		rec_stop("aborted: client disconnected");
}

static const struct op_handle_ops rec_handle_ops = {
	.kind = "capture",
	.stop = handle_stop,
	.detach = handle_detach,
};

struct op_handle *rec_handle(void)
{
	return rec.cap ? &rec.handle : NULL;
}

int rec_init(void)
{
	memset(&rec, 0, sizeof(rec));
	rec.handle.ops = &rec_handle_ops;
	return 0;
}

void rec_fini(void)
{
	if (rec.cap)
		finish(0, "aborted");
	/* the loop has ended: the sensor's stop calls finish_close() here */
	rig_sensor_drain(10 * NS_PER_S);
	if (rec.cap && rec.closing) {
		/* the sensor hangs in its tear-down: close without it */
		rig_power_forget_stop();
		finish_close(NULL, -ETIMEDOUT, "sensor: its buffer's tear-down does not end");
	}
}
