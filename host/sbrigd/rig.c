// SPDX-License-Identifier: GPL-2.0
/*
 * rig.c - the rig the daemon owns: its config, GPIO lines, power sensor and
 * target link, wired into the poll() loop.
 *
 * What is not configured (an absent [key:]/[charger]/[marker] section, an
 * empty [power] or [target] uri) is simply not available. A configured
 * sensor that cannot be opened (iiod down) is not fatal either: it is
 * opened again when a capture or a status needs it, and the error is shown
 * there. Everything the rig does to the target goes through rig_set_line()
 * or rig_stimulus(), so it is recorded in the running capture.
 *
 * The power sensor samples only while a capture runs (rig_power_start());
 * its thread signals an eventfd that the loop watches. The link is driven
 * by its pollfd (which changes on reconnects) and its deadline (a timer).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/gpio.h>
#include <sbrig/marker.h>
#include <sbrig/power.h>

#include "sbrigd.h"
#include "internal.h"

#define RIG_SAMPLE_BATCH 512
#define RIG_GAP_BATCH 32
/* marker edge <-> event pairing: how far apart, and the GPIO path's spread */
#define RIG_MARKER_WINDOW_NS	(2 * 1000000LL)
#define RIG_MARKER_UNCERT_NS	(100 * 1000LL)

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
	void (*done)(int err, int64_t press_ns, void *data);
	void *data;
};

static struct {
	struct sbrig_config cfg;
	struct sbrig_gpio *gpio;
	struct sbrig_power *power;
	bool power_capturing;
	char power_err[256];
	struct sbrig_link *link;
	struct sbrig_marker *marker;	/* marker wired and a link: pairing */
	int link_fd;			/* registered with sched, or -1 */
	struct sched_timer link_timer;
	struct rig_target target;
	struct rig_press presses[SBRIG_MAX_KEYS];
	struct sbrig_sample samples[RIG_SAMPLE_BATCH];
	struct sbrig_gap gaps[RIG_GAP_BATCH];
} rig;

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

bool rig_has_output(const char *name)
{
	const struct sbrig_line_cfg *l = sbrig_config_line(&rig.cfg, name);

	return l && l->present && strcmp(name, "marker") != 0 && rig.gpio;
}

void rig_stimulus(const char *what, const char *arg, int64_t t_ns)
{
	struct sbrig_stimulus st = { .t_ns = t_ns };

	snprintf(st.what, sizeof(st.what), "%s", what);
	snprintf(st.arg, sizeof(st.arg), "%s", arg);
	sbrig_dbg("stimulus %s %s", what, arg);
	rec_stimulus(&st);
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
	if (ret < 0)
		return ret;
	rig_stimulus(what, name, t);
	if (t_ns)
		*t_ns = t;
	return 0;
}

/* ---- power -------------------------------------------------------------- */

static void power_readable(int fd, short revents, void *data);

/* Open the sensor if it is configured and not open yet. */
static int power_open(void)
{
	struct sbrig_power_opts o = {
		.device = rig.cfg.power_device,
		.shunt_uohm = rig.cfg.shunt_uohm,
		.sample_rate_hz = rig.cfg.sample_rate_hz,
		.buffer_samples = rig.cfg.buffer_samples,
	};

	if (rig.power)
		return 0;
	if (!rig_has_power())
		return sbrig_set_error(-ENODEV, "no power sensor on rig %s",
				       rig.cfg.name);
	rig.power = sbrig_power_new(rig.cfg.power_uri, &o);
	if (!rig.power) {
		int err = -errno;

		snprintf(rig.power_err, sizeof(rig.power_err), "%s",
			 sbrig_errmsg());
		return sbrig_set_error(err ? err : -EIO, "%s", rig.power_err);
	}
	rig.power_err[0] = '\0';
	if (sched_fd_add(sbrig_power_fd(rig.power), POLLIN, power_readable,
			 NULL) < 0) {
		sbrig_power_free(rig.power);
		rig.power = NULL;
		return -EMFILE;
	}
	return 0;
}

static void power_close(void)
{
	if (!rig.power)
		return;
	sched_fd_del(sbrig_power_fd(rig.power));
	sbrig_power_free(rig.power);
	rig.power = NULL;
	rig.power_capturing = false;
}

/* Drain the sensor's queue into the capture. */
static void power_drain(void)
{
	for (;;) {
		size_t ngaps = 0, gi = 0;
		ssize_t n = sbrig_power_read(rig.power, rig.samples,
					     RIG_SAMPLE_BATCH, rig.gaps,
					     RIG_GAP_BATCH, &ngaps);
		size_t from = 0;

		if (n < 0) {
			char why[300];

			sbrig_err("power: capture stopped: %s", sbrig_errmsg());
			snprintf(rig.power_err, sizeof(rig.power_err), "%s",
				 sbrig_errmsg());
			snprintf(why, sizeof(why), "failed: sensor: %s",
				 rig.power_err);
			/* the sensor is gone: reopen it next time */
			power_close();
			/* a capture without its samples is no capture */
			rec_fail((int)n, why);
			return;
		}
		/* keep gaps in time order with the samples around them */
		for (ssize_t i = 0; i < n; i++) {
			while (gi < ngaps &&
			       rig.gaps[gi].next_t_ns <= rig.samples[i].t_ns) {
				rec_samples(rig.samples + from, i - from);
				from = i;
				rec_gap(&rig.gaps[gi++]);
			}
		}
		rec_samples(rig.samples + from, n - from);
		while (gi < ngaps)
			rec_gap(&rig.gaps[gi++]);
		if (n == 0 && ngaps == 0)
			return;
	}
}

static void power_readable(int fd, short revents, void *data)
{
	if (rig.power)
		power_drain();
}

int rig_power_start(void)
{
	int ret = power_open();

	if (ret < 0)
		return ret;
	ret = sbrig_power_start(rig.power);
	if (ret < 0) {
		snprintf(rig.power_err, sizeof(rig.power_err), "%s",
			 sbrig_errmsg());
		power_close();
		return ret;
	}
	rig.power_capturing = true;
	return 0;
}

void rig_power_stop(void)
{
	int ret;

	if (!rig.power || !rig.power_capturing)
		return;
	ret = sbrig_power_stop(rig.power);
	rig.power_capturing = false;
	if (ret < 0)
		sbrig_warn("power: %s", sbrig_errmsg());
	if (rig.power)
		power_drain();
}

/* ---- marker line -------------------------------------------------------- */

/*
 * Marker edges paired with the events that drove them are clock samples a
 * hundred times tighter than UART pings: hand them to the link's clock
 * model and record them in clock.tsv (as zero-round-trip rows).
 */
static void marker_drain(void)
{
	struct sbrig_marker_pair p;
	int ret;

	while (sbrig_marker_next_pair(rig.marker, &p) == 1) {
		ret = sbrig_clock_add_marker(sbrig_link_clock(rig.link),
					     p.host_ns, p.target_ns,
					     RIG_MARKER_UNCERT_NS);
		rec_clock(p.host_ns, p.host_ns, p.target_ns, ret == 0);
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
	if (!rig.marker || strcmp(edge->line, "marker") != 0)
		return;
	sbrig_marker_add_edge(rig.marker, edge);
	marker_drain();
}

/* ---- GPIO --------------------------------------------------------------- */

static void gpio_readable(int fd, short revents, void *data)
{
	struct sbrig_edge edges[16];
	ssize_t n;

	do {
		n = sbrig_gpio_read_edges(rig.gpio, edges, 16);
		if (n < 0) {
			sbrig_err("gpio: %s", sbrig_errmsg());
			sched_fd_del(fd);
			return;
		}
		for (ssize_t i = 0; i < n; i++) {
			rec_edge(&edges[i]);
			marker_edge(&edges[i]);
			eng_edge(&edges[i]);
		}
	} while (n == 16);
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
	int ret;

	ret = rig_set_line(p->key, false, "release", NULL);
	if (ret < 0)
		sbrig_err("release %s: %s", p->key, sbrig_errmsg());
	p->key[0] = '\0';
	if (p->done)
		p->done(ret, p->press_ns, p->data);
}

int rig_press(const char *key, int64_t duration_ns, int64_t *press_ns,
	      void (*done)(int err, int64_t press_ns, void *data), void *data)
{
	struct rig_press *slot = NULL;
	int ret;

	if (strcmp(key, "charger") == 0 || strcmp(key, "marker") == 0 ||
	    !rig_has_output(key))
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
	sched_timer_start(&slot->timer, slot->press_ns + duration_ns,
			  press_release, slot);
	if (press_ns)
		*press_ns = slot->press_ns;
	return 0;
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

	t->known = true;
	snprintf(t->boot_id, sizeof(t->boot_id), "%s", m->hello.boot_id);
	snprintf(t->agent, sizeof(t->agent), "%s", m->hello.agent);
	snprintf(t->kernel, sizeof(t->kernel), "%s", m->hello.kernel);
	snprintf(t->module, sizeof(t->module), "%s", m->hello.module);
	sbrig_info("link: agent %s up: boot %s, kernel %s, module %s%s",
		   t->agent, t->boot_id, t->kernel, t->module,
		   m->hello.new_boot ? " (new boot)" :
		   m->hello.log_restart ? " (module reloaded: new event log)" :
		   "");
	rec_target(t);
}

static void link_dispatch(void)
{
	struct sbrig_link_msg m;

	while (sbrig_link_next(rig.link, &m) == 1) {
		switch (m.type) {
		case SBRIG_LINK_HELLO:
			if (rig.marker &&
			    (m.hello.new_boot || m.hello.log_restart))
				sbrig_marker_reset(rig.marker);
			link_hello(&m);
			break;
		case SBRIG_LINK_EVENT:
			rec_event(&m.event);
			marker_event(&m.event);
			eng_event(&m.event);
			break;
		case SBRIG_LINK_GAP:
			/* the active set is unknown now, as after "lost" */
			marker_event(&(struct sbrig_event){ .type = "lost" });
			sbrig_warn("link: target lost events %" PRIu64
				   "..%" PRIu64, m.gap.from_seq, m.gap.to_seq);
			break;
		case SBRIG_LINK_STATS:
			if (rec_owns_snapshot(m.snapshot))
				rec_stats_row(sbrig_now_ns(), &m.stats);
			else
				eng_link_reply(&m);
			break;
		case SBRIG_LINK_REPLY:
		case SBRIG_LINK_DONE:
			if (!rec_owns_snapshot(m.cmd_id))
				eng_link_reply(&m);
			break;
		case SBRIG_LINK_CLOCK:
			rec_clock(m.clock.host_send_ns, m.clock.host_recv_ns,
				  m.clock.target_ns, m.clock.retained);
			break;
		case SBRIG_LINK_DOWN:
			sbrig_warn("link: down: %s", m.text);
			break;
		}
	}
}

static void link_io(int fd, short revents, void *data)
{
	sbrig_link_process(rig.link, revents, sbrig_now_ns());
	link_dispatch();
	link_rearm();
}

static void link_deadline(void *data)
{
	sbrig_link_process(rig.link, 0, sbrig_now_ns());
	link_dispatch();
	link_rearm();
}

int rig_link_command(const char *cmd, uint32_t *cmd_id)
{
	int ret;

	if (!rig.link)
		return sbrig_set_error(-ENOTCONN, "no target link on rig %s",
				       rig.cfg.name);
	ret = sbrig_link_command(rig.link, cmd, cmd_id);
	if (ret < 0)
		return ret;
	/* let the link send it now rather than at its next deadline */
	sbrig_link_process(rig.link, 0, sbrig_now_ns());
	link_dispatch();
	link_rearm();
	return 0;
}

/* ---- status ------------------------------------------------------------- */

static void status_lines(struct op_sink *sink)
{
	const struct sbrig_line_cfg *l;

	for (unsigned int i = 0; i <= rig.cfg.nkeys + 1; i++) {
		const char *dir = "out";
		int v;

		if (i < rig.cfg.nkeys) {
			l = &rig.cfg.keys[i];
		} else if (i == rig.cfg.nkeys) {
			l = &rig.cfg.charger;
		} else {
			l = &rig.cfg.marker;
			dir = "in";
		}
		if (!l->present || !rig.gpio)
			continue;
		v = sbrig_gpio_get(rig.gpio, l->name);
		if (v < 0)
			op_line(sink, "data line.%s: %s error %s", l->name, dir,
				sbrig_errmsg());
		else
			op_line(sink, "data line.%s: %s %s", l->name, dir,
				v ? "active" : "inactive");
	}
}

static void status_power(struct op_sink *sink)
{
	struct sbrig_power_info info;
	struct sbrig_sample s;

	if (!rig_has_power()) {
		op_line(sink, "data sensor: none");
		return;
	}
	op_line(sink, "data sensor.uri: %s", rig.cfg.power_uri);
	if (power_open() < 0) {
		op_line(sink, "data sensor.error: %s", rig.power_err);
		return;
	}
	if (sbrig_power_get_info(rig.power, &info) == 0) {
		op_line(sink, "data sensor.device: %s", info.device);
		op_line(sink, "data sensor.rate_hz: %.1f", info.sample_rate_hz);
		op_line(sink, "data sensor.shunt_uohm: %" PRIu32,
			info.shunt_uohm);
	}
	if (rig.power_capturing)
		return;		/* the capture shows the current */
	if (sbrig_power_read_now(rig.power, &s) < 0) {
		op_line(sink, "data sensor.error: %s", sbrig_errmsg());
		return;
	}
	op_line(sink, "data sensor.current_mA: %.3f", s.current_uA / 1000.0);
	op_line(sink, "data sensor.bus_mV: %.3f", s.bus_uV / 1000.0);
}

static void status_link(struct op_sink *sink)
{
	struct sbrig_link_status st;
	struct sbrig_clock_state cs;

	if (!rig.link) {
		op_line(sink, "data link: none");
		return;
	}
	sbrig_link_get_status(rig.link, &st);
	op_line(sink, "data link.uri: %s", rig.cfg.target_uri);
	op_line(sink, "data link.connected: %s", st.connected ? "yes" : "no");
	if (rig.target.known) {
		op_line(sink, "data link.boot_id: %s", rig.target.boot_id);
		op_line(sink, "data link.kernel: %s", rig.target.kernel);
		op_line(sink, "data link.module: %s", rig.target.module);
		op_line(sink, "data link.agent: %s", rig.target.agent);
	}
	op_line(sink, "data link.frames_ok: %" PRIu64, st.frames_ok);
	op_line(sink, "data link.frames_bad: %" PRIu64, st.frames_bad);
	op_line(sink, "data link.reconnects: %" PRIu64, st.reconnects);
	op_line(sink, "data link.events_lost: %" PRIu64, st.events_lost);
	sbrig_clock_get_state(sbrig_link_clock(rig.link), &cs);
	op_line(sink, "data clock.samples: %u", cs.samples);
	if (cs.samples) {
		op_line(sink, "data clock.offset_ns: %" PRId64, cs.offset_ns);
		op_line(sink, "data clock.uncert_ns: %" PRId64, cs.uncert_ns);
		op_line(sink, "data clock.drift_ppb: %" PRId64, cs.drift_ppb);
	}
}

void rig_status(struct op_sink *sink)
{
	op_line(sink, "data rig.name: %s", rig.cfg.name);
	op_line(sink, "data rig.config: %s", rig.cfg.path);
	op_line(sink, "data rig.config_sha256: %s", rig.cfg.sha256);
	op_line(sink, "data daemon.version: %s", sbrig_version);
	status_lines(sink);
	status_power(sink);
	status_link(sink);
}


int64_t rig_link_asleep_at(void)
{
	struct sbrig_link_status st;

	if (!rig.link)
		return -1;
	sbrig_link_get_status(rig.link, &st);
	if (!st.boot_id[0] || !st.last_rx_ns)
		return -1;
	/* events it sent before it slept are still waiting for the clock
	 * model: not asleep until they are out (look again in 100 ms) */
	if (st.queued)
		return sbrig_now_ns() + 100 * NS_PER_MS;
	return st.last_rx_ns + (int64_t)rig.cfg.quiet_ms * NS_PER_MS;
}

int rig_link_clock_map(int64_t target_ns, int64_t *host_ns, int64_t *uncert_ns)
{
	if (!rig.link)
		return -ENOTCONN;
	return sbrig_clock_to_host(sbrig_link_clock(rig.link), target_ns,
				   host_ns, uncert_ns);
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
			return sbrig_set_error(errno ? -errno : -EIO, "%s",
					       sbrig_errmsg());
		if (sbrig_gpio_event_fd(rig.gpio) >= 0) {
			ret = sched_fd_add(sbrig_gpio_event_fd(rig.gpio), POLLIN,
					   gpio_readable, NULL);
			if (ret < 0)
				goto free_gpio;
		}
	}
	if (rig_has_power() && power_open() < 0)
		sbrig_warn("power: %s (will retry when needed)", rig.power_err);
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
				ret = -ENOMEM;
				goto free_link;
			}
		}
	}
	sbrig_info("rig %s from %s (sha256 %.12s): %u key(s)%s%s, sensor %s, "
		   "link %s", rig.cfg.name, rig.cfg.path, rig.cfg.sha256,
		   rig.cfg.nkeys, rig.cfg.charger.present ? ", charger" : "",
		   rig.cfg.marker.present ? ", marker" : "",
		   rig_has_power() ? rig.cfg.power_uri : "none",
		   rig.link ? rig.cfg.target_uri : "none");
	return 0;

free_link:
	sched_timer_stop(&rig.link_timer);
	if (rig.link_fd >= 0)
		sched_fd_del(rig.link_fd);
	sbrig_link_free(rig.link);
	rig.link = NULL;
close_power:
	power_close();
	if (rig.gpio && sbrig_gpio_event_fd(rig.gpio) >= 0)
		sched_fd_del(sbrig_gpio_event_fd(rig.gpio));
free_gpio:
	sbrig_gpio_free(rig.gpio);
	rig.gpio = NULL;
	return ret;
}

void rig_fini(void)
{
	for (unsigned int i = 0; i < SBRIG_MAX_KEYS; i++) {
		if (!rig.presses[i].key[0])
			continue;
		sched_timer_stop(&rig.presses[i].timer);
		rig.presses[i].done = NULL;
		press_release(&rig.presses[i]);
	}
	if (rig.link) {
		sched_timer_stop(&rig.link_timer);
		if (rig.link_fd >= 0)
			sched_fd_del(rig.link_fd);
		sbrig_link_free(rig.link);
		rig.link = NULL;
	}
	sbrig_marker_free(rig.marker);
	rig.marker = NULL;
	rig_power_stop();
	power_close();
	if (rig.gpio && sbrig_gpio_event_fd(rig.gpio) >= 0)
		sched_fd_del(sbrig_gpio_event_fd(rig.gpio));
	sbrig_gpio_free(rig.gpio);	/* outputs go inactive */
	rig.gpio = NULL;
}
