// SPDX-License-Identifier: GPL-2.0
/*
 * rec.c - the running capture (at most one at a time).
 *
 * While a capture runs, the power sensor samples and everything the rig
 * sees or does is appended to the capture directory (libsbrig capture.c):
 * samples and gaps, marker edges, stimuli, target events with their host
 * times, stats snapshots (the agent's "stats" command every stats_every)
 * and the link's clock exchanges. A timer ticks every 250 ms: it syncs the
 * files (capture.c limits that to once a second) and sends a progress line
 * to the client that asked, every second.
 *
 * A capture ends when its duration is over, when rec_stop() is called (a
 * "stop" request, the end of a scenario, shutdown: status "aborted") or
 * when writing fails ("failed: why"); whatever the reason, the end
 * callback given to rec_start() runs exactly once, after the directory is
 * closed. A client that disconnects from an open-ended capture (no
 * duration, no scenario) stops it ("aborted: client disconnected"); a
 * capture with a duration or a scenario runs on to its end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbrigd.h"
#include "internal.h"

#define REC_TICK_NS (250 * NS_PER_MS)
#define REC_SNAPSHOTS 4

static struct {
	struct sbrig_capture *cap;
	char dir[4096];
	struct rec_opts opts;
	struct op_sink *sink;
	rec_end_fn end;
	void *end_data;
	struct rec_counts n;
	struct sched_timer tick;
	struct sched_timer stop_timer;
	struct sched_timer stats_timer;
	int64_t last_progress_ns;
	uint32_t snapshots[REC_SNAPSHOTS];	/* recent stats cmd ids */
	unsigned int nsnap;
	bool closing;
} rec;

bool rec_active(void)
{
	return rec.cap != NULL;
}

const char *rec_dir(void)
{
	return rec.cap ? rec.dir : NULL;
}

void rec_get_counts(struct rec_counts *c)
{
	*c = rec.n;
}

static double mean_mA(void)
{
	return rec.n.samples ? (double)rec.n.sum_current_uA / rec.n.samples /
		1000.0 : 0.0;
}

static void summary(char *buf, size_t size)
{
	snprintf(buf, size,
		 "dir=%s elapsed_ms=%" PRId64 " samples=%" PRIu64
		 " gaps=%" PRIu64 " missing=%" PRIu64 " edges=%" PRIu64
		 " stimuli=%" PRIu64 " events=%" PRIu64 " stats_rows=%" PRIu64
		 " clock_rows=%" PRIu64 " mean_mA=%.3f",
		 rec.dir, (sbrig_now_ns() - rec.n.start_ns) / NS_PER_MS,
		 rec.n.samples, rec.n.gaps, rec.n.missing, rec.n.edges,
		 rec.n.stimuli, rec.n.events, rec.n.stats_rows,
		 rec.n.clock_rows, mean_mA());
}

/* Close the capture with @status and tell the owner. */
static int finish(int err, const char *status)
{
	char sum[1024], st[512];
	rec_end_fn end = rec.end;
	void *data = rec.end_data;
	int ret;

	if (!rec.cap || rec.closing)
		return 0;
	rec.closing = true;
	rig_power_stop();	/* drains the last samples into the capture */
	sched_timer_stop(&rec.tick);
	sched_timer_stop(&rec.stop_timer);
	sched_timer_stop(&rec.stats_timer);
	snprintf(st, sizeof(st), "%s", status);
	summary(sum, sizeof(sum));
	ret = sbrig_capture_close(rec.cap, st);
	rec.cap = NULL;
	if (ret < 0 && !err) {
		err = ret;
		snprintf(st, sizeof(st), "failed: %s", sbrig_errmsg());
	}
	sbrig_info("capture %s closed: %s (%s)", rec.dir, st, sum);
	rec.sink = NULL;
	rec.end = NULL;
	rec.closing = false;
	if (end) {
		char msg[1600];

		snprintf(msg, sizeof(msg), "%s status=%s", sum, st);
		end(err, msg, data);
	}
	return err;
}

/* An appender failed: the capture cannot go on. */
static void failed(int err, const char *what)
{
	char st[512];

	if (!rec.cap || rec.closing)
		return;
	snprintf(st, sizeof(st), "failed: %s: %s", what, sbrig_errmsg());
	sbrig_err("capture %s: %s", rec.dir, st);
	finish(err, st);
}

/**
 * rec_fail() - end the running capture because a source failed
 * @err: -errno to answer with
 * @status: "failed: why"
 */
void rec_fail(int err, const char *status)
{
	if (!rec.cap || rec.closing)
		return;
	sbrig_err("capture %s: %s", rec.dir, status);
	finish(err, status);
}

static void progress(int64_t now)
{
	if (!rec.sink)
		return;
	op_line(rec.sink, "progress elapsed_ms=%" PRId64 " samples=%" PRIu64
		" gaps=%" PRIu64 " events=%" PRIu64 " mean_mA=%.3f",
		(now - rec.n.start_ns) / NS_PER_MS, rec.n.samples, rec.n.gaps,
		rec.n.events, mean_mA());
}

static void tick(void *data)
{
	int64_t now = sbrig_now_ns();
	int ret;

	ret = sbrig_capture_sync(rec.cap, now);
	if (ret < 0) {
		failed(ret, "sync");
		return;
	}
	if (now - rec.last_progress_ns >= NS_PER_S) {
		rec.last_progress_ns = now;
		progress(now);
	}
	sched_timer_start(&rec.tick, now + REC_TICK_NS, tick, NULL);
}

static void duration_over(void *data)
{
	finish(0, "complete");
}

static void ask_stats(void *data)
{
	uint32_t id;

	if (rig_has_link() && rig_target()->known &&
	    rig_link_command("stats", &id) == 0)
		rec.snapshots[rec.nsnap++ % REC_SNAPSHOTS] = id;
	if (rec.cap)
		sched_timer_start(&rec.stats_timer,
				  sbrig_now_ns() + rec.opts.stats_every_ns,
				  ask_stats, NULL);
}

bool rec_owns_snapshot(uint32_t cmd_id)
{
	unsigned int n = rec.nsnap < REC_SNAPSHOTS ? rec.nsnap : REC_SNAPSHOTS;

	for (unsigned int i = 0; i < n; i++)
		if (rec.snapshots[i] == cmd_id)
			return true;
	return false;
}

/**
 * rec_start() - create a capture directory and start recording into it
 * @opts: directory, duration, stats period, scenario (copied)
 * @sink: where progress lines go (NULL: nowhere)
 * @end: called once when the capture ends, for whatever reason
 * @data: for @end
 *
 * Return: 0, or -errno with sbrig_errmsg() (-EBUSY: a capture runs).
 */
int rec_start(const struct rec_opts *opts, struct op_sink *sink,
	      rec_end_fn end, void *data)
{
	const struct sbrig_config *cfg = rig_config();
	struct sbrig_provenance prov = { 0 };
	const char *sha = getenv("SBRIG_GIT_SHA");
	int64_t now;
	int ret;

	if (rec.cap)
		return sbrig_set_error(-EBUSY, "a capture is running into %s",
				       rec.dir);
	snprintf(prov.rig_name, sizeof(prov.rig_name), "%s", cfg->name);
	snprintf(prov.rig_config, sizeof(prov.rig_config), "%s", cfg->path);
	snprintf(prov.rig_sha256, sizeof(prov.rig_sha256), "%s", cfg->sha256);
	snprintf(prov.host_version, sizeof(prov.host_version), "%s",
		 sbrig_version);
	snprintf(prov.git_sha, sizeof(prov.git_sha), "%s", sha ? sha : "");
	if (opts->scenario) {
		snprintf(prov.scenario, sizeof(prov.scenario), "%s",
			 opts->scenario->path);
		snprintf(prov.scenario_sha256, sizeof(prov.scenario_sha256),
			 "%s", opts->scenario->sha256);
	}
	snprintf(prov.power_uri, sizeof(prov.power_uri), "%s", cfg->power_uri);
	snprintf(prov.target_uri, sizeof(prov.target_uri), "%s",
		 cfg->target_uri);

	rec.cap = sbrig_capture_new(opts->dir, &prov);
	if (!rec.cap)
		return errno ? -errno : -EIO;
	snprintf(rec.dir, sizeof(rec.dir), "%s", opts->dir);
	rec.opts = *opts;
	rec.opts.dir = rec.dir;
	rec.sink = sink;
	rec.end = end;
	rec.end_data = data;
	memset(&rec.n, 0, sizeof(rec.n));
	rec.nsnap = 0;
	if (rig_target()->known)
		rec_target(rig_target());
	if (rig_has_power()) {
		ret = rig_power_start();
		if (ret < 0) {
			char st[512];

			snprintf(st, sizeof(st), "failed: sensor: %s",
				 sbrig_errmsg());
			rec.end = NULL;
			finish(ret, st);
			return sbrig_set_error(ret, "%s", st + 8);
		}
	}
	now = sbrig_now_ns();
	rec.n.start_ns = now;
	rec.last_progress_ns = now;
	sched_timer_start(&rec.tick, now + REC_TICK_NS, tick, NULL);
	if (opts->duration_ns > 0)
		sched_timer_start(&rec.stop_timer, now + opts->duration_ns,
				  duration_over, NULL);
	if (opts->stats_every_ns > 0)
		ask_stats(NULL);
	sbrig_info("capture %s started", rec.dir);
	return 0;
}

/**
 * rec_stop() - end the running capture
 * @status: "complete", "aborted: why", "failed: why"
 *
 * Return: 0, -ENOENT if no capture runs, or the -errno closing hit.
 */
int rec_stop(const char *status)
{
	if (!rec.cap)
		return sbrig_set_error(-ENOENT, "no capture is running");
	return finish(0, status);
}

void rec_status(struct op_sink *sink)
{
	char sum[1024];

	if (!rec.cap) {
		op_line(sink, "data capture: none");
		return;
	}
	summary(sum, sizeof(sum));
	op_line(sink, "data capture: %s", sum);
}

void rec_sink_gone(struct op_sink *sink)
{
	if (!rec.cap || rec.sink != sink)
		return;
	rec.sink = NULL;
	if (rec.opts.duration_ns <= 0 && !rec.opts.scenario) {
		rec.end = NULL;		/* nobody to answer */
		finish(0, "aborted: client disconnected");
	} else if (rec.end_data == sink) {
		rec.end = NULL;		/* runs on to its end, silently */
	}
}

/* ---- feeds -------------------------------------------------------------- */

void rec_samples(const struct sbrig_sample *s, size_t n)
{
	int ret;

	if (!rec.cap || !n)
		return;
	ret = sbrig_capture_add_samples(rec.cap, s, n);
	if (ret < 0) {
		failed(ret, "samples");
		return;
	}
	rec.n.samples += n;
	for (size_t i = 0; i < n; i++)
		rec.n.sum_current_uA += s[i].current_uA;
}

void rec_gap(const struct sbrig_gap *gap)
{
	int ret;

	if (!rec.cap)
		return;
	ret = sbrig_capture_add_gap(rec.cap, gap);
	if (ret < 0) {
		failed(ret, "gaps");
		return;
	}
	rec.n.gaps++;
	rec.n.missing += gap->missing;
}

void rec_edge(const struct sbrig_edge *edge)
{
	int ret;

	if (!rec.cap)
		return;
	ret = sbrig_capture_add_edge(rec.cap, edge);
	if (ret < 0)
		failed(ret, "edges");
	else
		rec.n.edges++;
}

void rec_stimulus(const struct sbrig_stimulus *st)
{
	int ret;

	if (!rec.cap)
		return;
	ret = sbrig_capture_add_stimulus(rec.cap, st);
	if (ret < 0)
		failed(ret, "stimuli");
	else
		rec.n.stimuli++;
}

void rec_event(const struct sbrig_event *ev)
{
	int ret;

	if (!rec.cap)
		return;
	ret = sbrig_capture_add_event(rec.cap, ev);
	if (ret < 0)
		failed(ret, "events");
	else
		rec.n.events++;
}

void rec_stats_row(int64_t t_ns, const struct sbrig_blocker_stats *row)
{
	int ret;

	if (!rec.cap)
		return;
	ret = sbrig_capture_add_stats(rec.cap, t_ns, row);
	if (ret < 0)
		failed(ret, "stats");
	else
		rec.n.stats_rows++;
}

void rec_clock(int64_t send_ns, int64_t recv_ns, int64_t target_ns,
	       bool retained)
{
	int ret;

	if (!rec.cap)
		return;
	ret = sbrig_capture_add_clock(rec.cap, send_ns, recv_ns, target_ns,
				      retained);
	if (ret < 0)
		failed(ret, "clock");
	else
		rec.n.clock_rows++;
}

void rec_target(const struct rig_target *t)
{
	int ret;

	if (!rec.cap || !t->known)
		return;
	ret = sbrig_capture_set_target(rec.cap, t->boot_id, t->kernel,
				       t->module, t->agent);
	if (ret < 0)
		failed(ret, "meta.ini");
}

int rec_init(void)
{
	memset(&rec, 0, sizeof(rec));
	return 0;
}

void rec_fini(void)
{
	if (rec.cap)
		finish(0, "aborted");
}
