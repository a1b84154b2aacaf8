// SPDX-License-Identifier: GPL-2.0
/*
 * power.c - supply measurement through libiio (Linux ina2xx-adc, or an
 * iiod / libiio-protocol server of one).
 *
 * The model. The device (default "ina226") has the channels ina2xx-adc
 * gives it: voltage0 (shunt), voltage1 (bus), power2, current3 and
 * timestamp. Raw values become sbrig units through each channel's scale
 * (IIO base units: mV, mA, mW) and offset. The driver declares all four
 * as u16, but the INA226's shunt voltage and current registers are two's
 * complement, so those two are read as signed 16-bit (a reverse current is
 * negative here, not 65535 LSB). libiio shows the shared sysfs files
 * in_shunt_resistor (ohm), in_sampling_frequency and in_oversampling_ratio
 * as pseudo-channels "shunt"/"resistor", "sampling"/"frequency" and
 * "oversampling"/"ratio"; the rate is set through the conversion times and
 * averaging (ina2xx-adc refuses writes to the frequency), and the nominal
 * period is computed from them, not from the rounded integer frequency.
 *
 * Capture runs in its own thread: iio_buffer_refill() blocks on the
 * sensor, samples are demultiplexed in place (struct sbrig_power_field:
 * each channel's offset in the scan and its format, decoded as
 * iio_channel_convert() would, without a library call per value),
 * converted with precomputed integer factors (struct sbrig_power_conv:
 * IIO scales are decimals with at most 9 fractional digits, so exact) and
 * pushed to a bounded queue (power->lock, taken once per buffer). The
 * eventfd is written only when it is not already readable (efd_armed), and
 * for plain samples at most every wake interval (take_buffer(); the
 * caller's choice, sbrig_power_set_wake_interval()): waking the caller's
 * thread costs more than the samples of a small buffer. The
 * caller's poll() loop only ever takes what is queued.
 *
 * Stopping loses no sample. On local: contexts the buffer is non-blocking
 * and the thread polls its fd (readable at a whole buffer: libiio sets
 * the watermark to the buffer size) next to stop_efd; at a stop it takes
 * what the kernel holds, a partial buffer included, then ends
 * (drain_local()). libiio's network backend has no non-blocking mode and
 * no partial refill, so on ip: contexts sbrig_power_stop() lets the
 * refills go on until one reaches the stop and the thread takes it: a
 * stop then waits up to one buffer's duration (the samples delivered
 * reach past the stop by up to that much), longer for a sensor that is
 * late but still delivers (its samples come behind our clock: a loaded
 * sensor host, or a clock mapping that has not caught up yet), as long as
 * each buffer comes within a buffer's duration and a quarter plus a
 * second of the one before and for STOP_LATE_MAX_NS at most. It cancels
 * the refill only when no buffer came for that long (a hung server) or
 * past that limit: that buffer is lost, said in the stats' tail_lost.
 *
 * A killed capture leaves the device's buffer enabled on local: contexts
 * (Linux 6.1 does not disable it when the device node is closed): the
 * driver keeps polling the chip and refuses attribute writes with EBUSY.
 * clear_stale_buffer() disables it when nobody has the device node open
 * (the kernel lets one process at a time open it), and refuses to touch a
 * buffer another process is using.
 *
 * Sample times. The IIO timestamp channel is required for capture: without
 * it neither sample times nor gaps can be known (host arrival times of
 * whole buffers would bridge every drop), so sbrig_power_start() fails
 * with -ENOTSUP; sbrig_power_read_now() still works (host time of the
 * read). On local: contexts current_timestamp_clock is set to "monotonic"
 * first, and the timestamps are host CLOCK_MONOTONIC as they are. On other
 * contexts (ip:) the timestamps are on the remote host's clock (we still
 * ask for its monotonic clock, which does not step): each buffer's arrival
 * time A (local, after refill returns) and its last sample's timestamp T
 * give A - T = offset(T) + d, where d >= 0 is the delay from the remote's
 * timestamp to our wake-up (buffer hand-over, network, scheduling) and
 * offset(T) drifts: two crystals differ by tens of ppm (20 ppm is 1.2 ms
 * a minute, 72 ms an hour), and a board without RTC or NTP is not
 * disciplined at all. struct sbrig_clockmap keeps the least-delay point
 * of every 10 s window of remote time and, from the second window on,
 * fits a line through the last 30 (five minutes) by least squares, moved
 * down so that no point lies below it: its slope is the drift, the
 * points' spread about it the uncertainty (sbrig_power_get_stats():
 * clock_drift_ppb, clock_uncert_ns; the least delay itself cannot be
 * measured from here, typically well under a millisecond on a LAN).
 * Mapped times are therefore never after the arrival of their buffer.
 * Until the fit exists the offset is the least A - T seen. The offset
 * applied moves towards the estimate by at most a quarter period per
 * sample, and down by at most the remote interval from the sample before,
 * so that mapped times never run backwards (slew_offset()). Gap
 * detection uses the raw remote timestamps, which the mapping does not
 * disturb.
 *
 * Gaps: a sample that no run of conversions without a loss can reach from
 * the conversion grid of the samples before it closes a gap
 * (sbrig_power_gap(), power-internal.h: the driver's stamps jitter by up
 * to a period, so the interval from the previous stamp cannot tell); it
 * is queued in order between the two samples and counted. If the caller falls so far behind that the queue is
 * full, samples are dropped and counted as overruns, and a gap record
 * spanning them is queued before the next sample that fits, so the data
 * the caller sees is never silently bridged.
 *
 * A vanished device (refill error: ENODEV, EPIPE when an iiod connection
 * closes, ...) ends the thread; its -errno and message (naming URI and
 * device) are returned by sbrig_power_read() once the queue is drained.
 * libiio 0.24's network backend writes to its sockets without
 * MSG_NOSIGNAL: the capture thread blocks SIGPIPE, but programs using ip:
 * contexts must ignore SIGPIPE too (calls from their own threads, e.g. the
 * CLOSE that sbrig_power_stop() sends to a dead server).
 */
#include <errno.h>
#include <fcntl.h>
#include <iio.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <sbrig/power.h>

#include "internal.h"
#include "power-internal.h"

#define AUTO_BUFFER_NS		250000000
#define MIN_AUTO_BUFFER		8
#define MIN_QUEUE_ITEMS		8192
/* ip: a stop waits this long at most for a late sensor that delivers */
#define STOP_LATE_MAX_NS	10000000000LL

enum power_chan {
	CH_SHUNT,
	CH_BUS,
	CH_POWER,
	CH_CURRENT,
	CH_TS,
	CH_COUNT,
};

static const char *const chan_ids[CH_COUNT] = {
	[CH_SHUNT] = "voltage0",
	[CH_BUS] = "voltage1",
	[CH_POWER] = "power2",
	[CH_CURRENT] = "current3",
	[CH_TS] = "timestamp",
};

static const unsigned int ina226_ct_us[] = {
	140, 204, 332, 588, 1100, 2116, 4156, 8244,
};
static const unsigned int ina226_avg[] = {
	1, 4, 16, 64, 128, 256, 512, 1024,
};

struct power_item {
	bool is_gap;
	union {
		struct sbrig_sample s;
		struct sbrig_gap g;
	};
};

struct sbrig_power {
	char uri[256];
	char devname[64];
	struct iio_context *ctx;
	struct iio_device *dev;
	bool remote;			/* timestamps on another host's clock */
	struct iio_channel *ch[CH_COUNT];
	struct sbrig_power_conv conv[CH_TS];
	struct sbrig_power_field field[CH_COUNT];
	bool plain;			/* layout_is_plain() */
	double rate_hz;
	int64_t period_ns;
	uint32_t shunt_uohm;
	uint32_t i2c_hz;		/* the sensor's bus (opts) */
	size_t buffer_samples;
	int efd;

	/* capture thread: started/stopped by the caller's thread only */
	pthread_t thread;
	bool running;
	atomic_bool stopping;
	struct iio_buffer *buf;
	bool nonblock;			/* local: our own poll, drained at stop */
	int stop_efd;			/* written by sbrig_power_stop() */
	_Atomic int64_t stop_ns;	/* host time of the stop (ip:) */
	_Atomic int64_t arrival_ns;	/* host time the last buffer came */
	unsigned int timeout_ms;	/* no buffer for this long: stuck */
	bool stale_cleared;		/* a killed capture's buffer disabled */

	/* capture-thread-only state */
	struct sbrig_clockmap clock;
	int64_t target_off_ns;		/* the clock map's offset, per buffer */
	int64_t applied_off_ns;		/* slewed towards target_off_ns */
	int64_t slew_step_ns;		/* at most this per sample: period / 4 */
	int64_t last_wake_ns;		/* host time the caller was last woken */
	int64_t wake_interval_ns;	/* under lock: take_buffer() */
	bool have_applied_off;
	bool have_prev;
	int64_t prev_ts_ns;		/* raw timestamp of the last sample */
	struct sbrig_power_grid grid;	/* the stamps' conversion grid */

	/*
	 * lock protects the queue (q, q_cap, q_head, q_len, q_dropped,
	 * q_last_t_ns), stats, the thread's end (ended, thread_err,
	 * thread_msg) and efd_armed (the eventfd has been written and not
	 * read since).
	 */
	pthread_mutex_t lock;
	struct power_item *q;
	size_t q_cap, q_head, q_len;
	uint64_t q_dropped;		/* overrun samples not yet in a gap */
	int64_t q_last_t_ns;		/* last sample queued */
	struct sbrig_power_stats stats;
	bool ended;
	int thread_err;
	char thread_msg[512];
	bool efd_armed;
};

/* ---- pure helpers (power-internal.h) ---------------------------------- */

void sbrig_power_grid_init(struct sbrig_power_grid *grid, int64_t period_ns)
{
	memset(grid, 0, sizeof(*grid));
	grid->period_ns = period_ns;
}

/* an upper bound on the chip's real period (power-internal.h) */
static int64_t grid_period_hi(const struct sbrig_power_grid *grid)
{
	int64_t p = grid->period_ns;
	int64_t hi = p + p * SBRIG_POWER_PERIOD_TOL_PCT / 100;
	int64_t span = grid->anchor_ns - grid->first_ns;

	if (grid->conversions > 0 && span > 0) {
		int64_t est = (span + hi) / (int64_t)grid->conversions + 1;

		if (est < hi)
			hi = est > p / 2 ? est : p / 2;
	}
	return hi;
}

/* the period to count missing conversions with: the measured one */
static int64_t grid_period_mid(const struct sbrig_power_grid *grid)
{
	int64_t span = grid->anchor_ns - grid->first_ns;

	if (grid->conversions >= 8 && span > 0)
		return span / (int64_t)grid->conversions;
	return grid->period_ns;
}

bool sbrig_power_gap(struct sbrig_power_grid *grid, int64_t t_ns,
		     uint64_t *missing)
{
	int64_t p = grid->period_ns, hi, d, low, n = 1, next;
	bool gap;

	if (!grid->valid || p <= 0) {
		grid->first_ns = grid->anchor_ns = t_ns;
		grid->conversions = 0;
		grid->valid = true;
		return false;
	}
	if (t_ns < grid->anchor_ns) {	/* backwards: a new anchor */
		grid->anchor_ns = t_ns;
		grid->conversions++;
		return false;
	}
	hi = grid_period_hi(grid);
	d = t_ns - grid->anchor_ns;
	/* conversions from the anchor's to t_ns's, at least (>= 2: a loss) */
	low = (d - p / 4) / hi;
	gap = low >= 2;
	if (gap) {
		int64_t m = d / grid_period_mid(grid);

		n = m > low ? m : low;
		*missing = (uint64_t)(n - 1);
	}
	/*
	 * The anchor moves on by the conversions counted, in upper-bound
	 * periods, never past t_ns. Where a loss cannot be told from a late
	 * stamp, by one: a real loss then leaves it a period behind, and the
	 * next stamp that lies late enough in its period shows it.
	 */
	if (__builtin_mul_overflow(n, hi, &next) ||
	    __builtin_add_overflow(grid->anchor_ns, next, &next) ||
	    next > t_ns)
		next = t_ns;
	grid->anchor_ns = next;
	/* counted low, never high: the period estimate stays an upper bound */
	grid->conversions += (uint64_t)(gap ? low : 1);
	return gap;
}

int64_t sbrig_power_scale(int64_t raw, double offset, double scale,
			  double factor)
{
	return llround(((double)raw + offset) * scale * factor);
}

/* A decimal with at most 9 significant fractional digits, in units of 1e-9. */
static int parse_nano(const char *s, int64_t *nano)
{
	int64_t ip = 0, frac = 0;
	bool neg = false, digits = false;
	int nfrac = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	for (; *s >= '0' && *s <= '9'; s++) {
		if (ip > INT64_C(900000000))
			return -ERANGE;	/* keeps ip * 1e9 in range */
		ip = ip * 10 + (*s - '0');
		digits = true;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++) {
			digits = true;
			if (nfrac < 9) {
				frac = frac * 10 + (*s - '0');
				nfrac++;
			} else if (*s != '0') {
				return -ERANGE;	/* more precise than nano */
			}
		}
	}
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (!digits || *s)
		return -EINVAL;
	for (; nfrac < 9; nfrac++)
		frac *= 10;
	*nano = ip * 1000000000 + frac;
	if (neg)
		*nano = -*nano;
	return 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int sbrig_power_conv_init(struct sbrig_power_conv *cv, const char *scale,
			  const char *offset, unsigned int factor)
{
	const int64_t max_mul = INT64_C(1) << 40;	/* 2 * 2^21 * mul fits */
	int64_t scale_n, offset_n = 0, mul, g;
	char *end;

	memset(cv, 0, sizeof(*cv));
	cv->factor_d = factor;
	cv->scale_d = 1.0;
	if (scale) {
		cv->scale_d = strtod(scale, &end);
		if (end == scale)
			return -EINVAL;
	}
	if (offset) {
		cv->offset_d = strtod(offset, &end);
		if (end == offset)
			return -EINVAL;
	}

	/* the exact path, if the numbers allow it */
	if (scale) {
		if (parse_nano(scale, &scale_n))
			return 0;
	} else {
		scale_n = 1000000000;
	}
	if (offset && parse_nano(offset, &offset_n))
		return 0;
	if (offset_n % 1000000000)
		return 0;	/* fractional offset */
	cv->offset = offset_n / 1000000000;
	if (cv->offset > SBRIG_POWER_CONV_MAX_RAW ||
	    cv->offset < -SBRIG_POWER_CONV_MAX_RAW)
		return 0;
	if (__builtin_mul_overflow(scale_n, (int64_t)factor, &mul))
		return 0;
	cv->div = 1000000000;
	g = gcd64(mul < 0 ? -mul : mul, cv->div);
	if (g > 1) {
		mul /= g;
		cv->div /= g;
	}
	if (mul > max_mul || mul < -max_mul)
		return 0;
	cv->mul = mul;
	cv->exact = true;
	return 0;
}

int sbrig_power_field_init(struct sbrig_power_field *f,
			   const struct iio_data_format *fmt)
{
	memset(f, 0, sizeof(*f));
	if ((fmt->length != 16 && fmt->length != 64) || fmt->repeat > 1 ||
	    !fmt->bits || fmt->bits > fmt->length ||
	    fmt->shift >= fmt->length)
		return -ENOTSUP;
	f->length = fmt->length;
	f->bits = fmt->bits;
	f->shift = fmt->shift;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	f->swap = fmt->is_be;
#else
	f->swap = !fmt->is_be;
#endif
	f->sign_extend = fmt->is_signed;
	f->fix_bits = !fmt->is_fully_defined && fmt->bits < fmt->length;
	return 0;
}

void sbrig_power_pick_timing(double rate_hz, double max_hz,
			     unsigned int *ct_us, unsigned int *avg)
{
	double best = INFINITY;
	size_t i, j;

	*ct_us = ina226_ct_us[0];
	*avg = ina226_avg[0];
	for (i = 0; i < SBRIG_ARRAY_SIZE(ina226_avg); i++) {
		for (j = 0; j < SBRIG_ARRAY_SIZE(ina226_ct_us); j++) {
			double f = 1e6 / (2.0 * ina226_ct_us[j] * ina226_avg[i]);
			double d = fabs(log(f / rate_hz));

			if (f > max_hz)
				continue;	/* the driver loses conversions */

			if (d < best) {
				best = d;
				*ct_us = ina226_ct_us[j];
				*avg = ina226_avg[i];
			}
		}
	}
}

/* Fit the closed windows' points (see sbrig_clockmap_update()). */
static void clockmap_fit(struct sbrig_clockmap *map)
{
	const struct sbrig_clockmap_point *ref =
		&map->win[(map->head + map->nwin - 1) % SBRIG_CLOCKMAP_WINDOWS];
	double st = 0, so = 0, stt = 0, sto = 0, n = map->nwin, b, a;
	double lo = 0, hi = 0;
	unsigned int i;

	/* relative to the newest point: small numbers, exact in a double */
	for (i = 0; i < map->nwin; i++) {
		const struct sbrig_clockmap_point *p =
			&map->win[(map->head + i) % SBRIG_CLOCKMAP_WINDOWS];
		double t = (double)(p->t_ns - ref->t_ns);
		double o = (double)(p->off_ns - ref->off_ns);

		st += t;
		so += o;
		stt += t * t;
		sto += t * o;
	}
	if (n * stt - st * st <= 0)
		return;
	b = (n * sto - st * so) / (n * stt - st * st);
	if (fabs(b) > SBRIG_CLOCKMAP_MAX_DRIFT) {
		map->have_drift = false;	/* not a clock's drift */
		return;
	}
	a = (so - b * st) / n;
	for (i = 0; i < map->nwin; i++) {
		const struct sbrig_clockmap_point *p =
			&map->win[(map->head + i) % SBRIG_CLOCKMAP_WINDOWS];
		double r = (double)(p->off_ns - ref->off_ns) -
			   (a + b * (double)(p->t_ns - ref->t_ns));

		if (i == 0 || r < lo)
			lo = r;
		if (i == 0 || r > hi)
			hi = r;
	}
	map->drift = b;
	map->line_t_ns = ref->t_ns;
	map->line_off_ns = ref->off_ns + llround(a + lo);
	map->uncert_ns = llround(hi - lo);
	map->have_drift = true;
}

void sbrig_clockmap_update(struct sbrig_clockmap *map, int64_t arrival_ns,
			   int64_t last_ts_ns)
{
	struct sbrig_clockmap_point p = { last_ts_ns, arrival_ns - last_ts_ns };

	if (!map->valid) {
		memset(map, 0, sizeof(*map));
		map->valid = true;
		map->min_off_ns = p.off_ns;
		map->cur = p;
		map->cur_start_ns = p.t_ns;
		return;
	}
	if (p.off_ns < map->min_off_ns)
		map->min_off_ns = p.off_ns;
	map->last = p;
	if (p.t_ns - map->cur_start_ns < SBRIG_CLOCKMAP_WIN_NS) {
		/* the least delay: the lowest point once the drift is out */
		double dt = (double)(p.t_ns - map->cur.t_ns);

		if ((double)(p.off_ns - map->cur.off_ns) <
		    (map->have_drift ? map->drift * dt : 0))
			map->cur = p;
		return;
	}
	/* the window under way is over: keep its point, fit, start anew */
	if (map->nwin == SBRIG_CLOCKMAP_WINDOWS) {
		map->head = (map->head + 1) % SBRIG_CLOCKMAP_WINDOWS;
		map->nwin--;
	}
	map->win[(map->head + map->nwin++) % SBRIG_CLOCKMAP_WINDOWS] =
		map->cur;
	map->cur = p;
	map->cur_start_ns = p.t_ns;
	if (map->nwin >= 2)
		clockmap_fit(map);
}

int64_t sbrig_clockmap_offset(const struct sbrig_clockmap *map,
			      int64_t ts_ns)
{
	int64_t line, bound;

	if (!map->have_drift)
		return map->min_off_ns;
	line = map->line_off_ns +
	       llround(map->drift * (double)(ts_ns - map->line_t_ns));
	/* a point of the window under way below the line moves it down */
	bound = map->cur.off_ns +
		llround(map->drift * (double)(ts_ns - map->cur.t_ns));
	if (bound < line)
		line = bound;
	/* and the newest buffer's samples are not mapped after its arrival */
	bound = map->last.off_ns +
		llround(map->drift * (double)(ts_ns - map->last.t_ns));
	return line < bound ? line : bound;
}

/* ---- libiio edge: errors become -errno + a message once ---------------- */

static int iio_fail(struct sbrig_power *pwr, int err, const char *what)
{
	char buf[128];

	if (err >= 0)
		err = -EIO;
	iio_strerror(-err, buf, sizeof(buf));
	return sbrig_set_error(err, "%s: %s: %s: %s", pwr->uri,
			       pwr->devname[0] ? pwr->devname : "?", what, buf);
}

static struct iio_channel *pseudo_chan(struct sbrig_power *pwr,
				       const char *id, const char *attr)
{
	struct iio_channel *ch = iio_device_find_channel(pwr->dev, id, false);

	return ch && iio_channel_find_attr(ch, attr) ? ch : NULL;
}

static int chan_write(struct sbrig_power *pwr, struct iio_channel *ch,
		      const char *attr, const char *val)
{
	char what[96];
	ssize_t ret = iio_channel_attr_write(ch, attr, val);

	if (ret < 0) {
		snprintf(what, sizeof(what), "write %s %s = %s",
			 iio_channel_get_id(ch), attr, val);
		return iio_fail(pwr, (int)ret, what);
	}
	return 0;
}

static int chan_read_double(struct sbrig_power *pwr, struct iio_channel *ch,
			    const char *attr, double *val)
{
	char what[96];
	int ret = iio_channel_attr_read_double(ch, attr, val);

	if (ret < 0) {
		snprintf(what, sizeof(what), "read %s %s",
			 iio_channel_get_id(ch), attr);
		return iio_fail(pwr, ret, what);
	}
	return 0;
}

static int program_shunt(struct sbrig_power *pwr, uint32_t uohm)
{
	struct iio_channel *ch = pseudo_chan(pwr, "shunt", "resistor");
	double ohm;
	char val[32];
	int ret;

	if (!ch) {
		if (uohm)
			return sbrig_set_error(-ENOTSUP,
				"%s: %s: no shunt resistor attribute",
				pwr->uri, pwr->devname);
		return 0;
	}
	if (uohm) {
		/* in_shunt_resistor is in ohms (iio fixpoint, 6 decimals) */
		snprintf(val, sizeof(val), "%u.%06u", uohm / 1000000,
			 uohm % 1000000);
		ret = chan_write(pwr, ch, "resistor", val);
		if (ret)
			return ret;
	}
	ret = chan_read_double(pwr, ch, "resistor", &ohm);
	if (ret)
		return ret;
	pwr->shunt_uohm = (uint32_t)llround(ohm * 1e6);
	return 0;
}

static int program_rate(struct sbrig_power *pwr, uint32_t rate_hz)
{
	struct iio_channel *ratio = pseudo_chan(pwr, "oversampling", "ratio");
	struct iio_channel *v[2] = { pwr->ch[CH_SHUNT], pwr->ch[CH_BUS] };
	unsigned int ct_us, avg;
	char val[32];
	int i, ret;

	unsigned int max = sbrig_power_max_rate(pwr->i2c_hz);

	if (rate_hz > max)
		return sbrig_set_error(-EINVAL,
			"%s: %s: sample rate %u S/s is above what ina2xx-adc reads without losses (%u S/s: five SMBus word reads a sample at %u Hz)",
			pwr->uri, pwr->devname, rate_hz, max,
			pwr->i2c_hz ? pwr->i2c_hz : SBRIG_POWER_DEFAULT_I2C_HZ);
	/* ina2xx-adc: the rate follows conversion times and averaging */
	sbrig_power_pick_timing(rate_hz, max, &ct_us, &avg);
	if (!ratio || !iio_channel_find_attr(v[0], "integration_time") ||
	    !iio_channel_find_attr(v[1], "integration_time"))
		return sbrig_set_error(-ENOTSUP,
			"%s: %s: cannot set the rate (no integration_time/oversampling_ratio)",
			pwr->uri, pwr->devname);
	snprintf(val, sizeof(val), "%u", avg);
	ret = chan_write(pwr, ratio, "ratio", val);
	if (ret)
		return ret;
	snprintf(val, sizeof(val), "0.%06u", ct_us);
	for (i = 0; i < 2; i++) {
		ret = chan_write(pwr, v[i], "integration_time", val);
		if (ret)
			return ret;
	}
	return 0;
}

/* The rate the device really uses: from its timing if it shows it. */
static int read_rate(struct sbrig_power *pwr)
{
	struct iio_channel *ratio = pseudo_chan(pwr, "oversampling", "ratio");
	struct iio_channel *freq = pseudo_chan(pwr, "sampling", "frequency");
	double t_s[2], avg, hz;
	int ret;

	if (ratio && iio_channel_find_attr(pwr->ch[CH_SHUNT], "integration_time") &&
	    iio_channel_find_attr(pwr->ch[CH_BUS], "integration_time")) {
		ret = chan_read_double(pwr, pwr->ch[CH_SHUNT], "integration_time",
				       &t_s[0]);
		if (!ret)
			ret = chan_read_double(pwr, pwr->ch[CH_BUS],
					       "integration_time", &t_s[1]);
		if (!ret)
			ret = chan_read_double(pwr, ratio, "ratio", &avg);
		if (ret)
			return ret;
		pwr->period_ns = llround((t_s[0] + t_s[1]) * avg * 1e9);
	} else if (freq) {
		ret = chan_read_double(pwr, freq, "frequency", &hz);
		if (ret)
			return ret;
		pwr->period_ns = hz > 0 ? llround(1e9 / hz) : 0;
	} else {
		pwr->period_ns = 0;
	}
	if (pwr->period_ns <= 0)
		return sbrig_set_error(-ENOTSUP,
			"%s: %s: sampling rate unknown", pwr->uri, pwr->devname);
	pwr->rate_hz = 1e9 / (double)pwr->period_ns;
	return 0;
}

/* Read an optional attribute's text; *present false if there is none. */
static int chan_read_opt(struct sbrig_power *pwr, struct iio_channel *ch,
			 const char *attr, char *val, size_t size,
			 bool *present)
{
	char what[96];
	ssize_t ret;

	*present = iio_channel_find_attr(ch, attr) != NULL;
	if (!*present)
		return 0;
	ret = iio_channel_attr_read(ch, attr, val, size);
	if (ret < 0) {
		snprintf(what, sizeof(what), "read %s %s",
			 iio_channel_get_id(ch), attr);
		return iio_fail(pwr, (int)ret, what);
	}
	if ((size_t)ret < size)
		val[ret] = '\0';
	val[size - 1] = '\0';
	return 0;
}

/* sbrig units: nV for the shunt voltage, uV/uW/uA for the others */
static const unsigned int chan_factor[CH_TS] = {
	[CH_SHUNT] = 1000000,
	[CH_BUS] = 1000,
	[CH_POWER] = 1000,
	[CH_CURRENT] = 1000,
};

static int read_scales(struct sbrig_power *pwr)
{
	char scale[64], offset[64];
	bool has_scale, has_offset;
	int c, ret;

	for (c = 0; c < CH_TS; c++) {
		ret = chan_read_opt(pwr, pwr->ch[c], "scale", scale,
				    sizeof(scale), &has_scale);
		if (!ret)
			ret = chan_read_opt(pwr, pwr->ch[c], "offset", offset,
					    sizeof(offset), &has_offset);
		if (ret)
			return ret;
		ret = sbrig_power_conv_init(&pwr->conv[c],
					    has_scale ? scale : NULL,
					    has_offset ? offset : NULL,
					    chan_factor[c]);
		if (ret)
			return sbrig_set_error(ret,
				"%s: %s: %s: scale '%s' or offset '%s' is no number",
				pwr->uri, pwr->devname, chan_ids[c],
				has_scale ? scale : "", has_offset ? offset : "");
	}
	return 0;
}

/* Ask for CLOCK_MONOTONIC timestamps; required on local: contexts. */
/*
 * A buffer left enabled by a capture that was killed (see top). Local
 * contexts only. Holding the device node open while disabling it makes
 * sure the buffer is nobody's: the kernel refuses a second open with
 * EBUSY. Return: 0 (nothing stale, or disabled), -EBUSY if another process
 * is capturing (@need: an error then; otherwise 0, as its later attribute
 * writes would fail anyway), or another -errno.
 */
static int clear_stale_buffer(struct sbrig_power *pwr, bool need)
{
	const char *id = iio_device_get_id(pwr->dev);
	char path[96], val[8] = "";
	ssize_t ret;
	int fd;

	if (pwr->remote || !id)
		return 0;
	snprintf(path, sizeof(path), "/dev/%s", id);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EBUSY && need)
			return sbrig_set_error(-EBUSY,
				"%s: %s: another process is capturing (%s is open)",
				pwr->uri, pwr->devname, path);
		return 0;	/* the buffer set-up says what is wrong */
	}
	ret = iio_device_buffer_attr_read(pwr->dev, "enable", val,
					  sizeof(val));
	if (ret > 0 && val[0] == '1') {
		ret = iio_device_buffer_attr_write(pwr->dev, "enable", "0");
		if (ret >= 0)
			pwr->stale_cleared = true;
	} else {
		ret = 0;
	}
	close(fd);
	if (ret < 0)
		return iio_fail(pwr, (int)ret,
				"disable the buffer a killed capture left enabled");
	return 0;
}

static int set_timestamp_clock(struct sbrig_power *pwr)
{
	char val[32] = "";
	ssize_t ret;

	if (!iio_device_find_attr(pwr->dev, "current_timestamp_clock")) {
		if (pwr->remote)
			return 0;
		return sbrig_set_error(-ENOTSUP,
			"%s: %s: no current_timestamp_clock: timestamps would not be CLOCK_MONOTONIC",
			pwr->uri, pwr->devname);
	}
	ret = iio_device_attr_write(pwr->dev, "current_timestamp_clock",
				    "monotonic");
	if (ret >= 0)
		ret = iio_device_attr_read(pwr->dev, "current_timestamp_clock",
					   val, sizeof(val));
	if (pwr->remote)
		return 0;	/* mapped by the offset estimate anyway */
	if (ret < 0)
		return iio_fail(pwr, (int)ret, "set current_timestamp_clock");
	if (strncmp(val, "monotonic", 9) || (val[9] && val[9] != '\n'))
		return sbrig_set_error(-EIO,
			"%s: %s: current_timestamp_clock is '%s', not monotonic",
			pwr->uri, pwr->devname, val);
	return 0;
}

struct sbrig_power *sbrig_power_new(const char *uri,
				    const struct sbrig_power_opts *opts)
{
	const char *devname = opts && opts->device ? opts->device : "ina226";
	char uri_copy[sizeof(((struct sbrig_power *)0)->uri)];
	struct sbrig_power *pwr;
	const char *ctxname;
	int c, ret;

	if (!uri || !*uri) {
		errno = EINVAL;
		sbrig_set_error(-EINVAL, "power: no libiio URI");
		return NULL;
	}
	if (sbrig_power_check_uri(uri)) {	/* the syntax config.c checks */
		sbrig_prefix_error("power");
		errno = EINVAL;
		return NULL;
	}
	pwr = calloc(1, sizeof(*pwr));
	if (!pwr) {
		errno = ENOMEM;
		sbrig_set_error(-ENOMEM, "%s: out of memory", uri);
		return NULL;
	}
	pwr->efd = -1;
	pwr->stop_efd = -1;
	snprintf(pwr->uri, sizeof(pwr->uri), "%s", uri);
	snprintf(pwr->devname, sizeof(pwr->devname), "%s", devname);
	ret = pthread_mutex_init(&pwr->lock, NULL);
	if (ret) {
		ret = sbrig_set_error(-ret, "%s: mutex", uri);
		goto err_free;
	}
	pwr->wake_interval_ns = SBRIG_POWER_WAKE_NS;
	pwr->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pwr->efd < 0) {
		ret = sbrig_set_error(-errno, "%s: eventfd: %s", uri,
				      strerror(errno));
		goto err_mutex;
	}
	pwr->stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pwr->stop_efd < 0) {
		ret = sbrig_set_error(-errno, "%s: eventfd: %s", uri,
				      strerror(errno));
		goto err_efd;
	}

	/* libiio 0.24 cuts ip:HOST:PORT apart in place: give it a copy */
	snprintf(uri_copy, sizeof(uri_copy), "%s", pwr->uri);
	errno = 0;
	pwr->ctx = iio_create_context_from_uri(uri_copy);
	if (!pwr->ctx) {
		ret = errno ? -errno : -EIO;
		sbrig_set_error(ret, "%s: cannot create libiio context: %s",
				pwr->uri, strerror(-ret));
		goto err_efd;
	}
	ctxname = iio_context_get_name(pwr->ctx);
	pwr->remote = !ctxname || strcmp(ctxname, "local");

	pwr->dev = iio_context_find_device(pwr->ctx, devname);
	if (!pwr->dev) {
		ret = sbrig_set_error(-ENODEV, "%s: no IIO device '%s'", uri,
				      devname);
		goto err_ctx;
	}
	if (iio_device_get_name(pwr->dev))
		snprintf(pwr->devname, sizeof(pwr->devname), "%s",
			 iio_device_get_name(pwr->dev));
	for (c = 0; c < CH_COUNT; c++) {
		pwr->ch[c] = iio_device_find_channel(pwr->dev, chan_ids[c], false);
		if (!pwr->ch[c] && c != CH_TS) {
			ret = sbrig_set_error(-ENODEV,
				"%s: %s: no channel %s (not an ina2xx-adc device?)",
				uri, pwr->devname, chan_ids[c]);
			goto err_ctx;
		}
	}

	pwr->i2c_hz = opts ? opts->i2c_hz : 0;
	ret = clear_stale_buffer(pwr, false);
	if (!ret)
		ret = program_shunt(pwr, opts ? opts->shunt_uohm : 0);
	if (!ret && opts && opts->sample_rate_hz)
		ret = program_rate(pwr, opts->sample_rate_hz);
	if (!ret)
		ret = read_rate(pwr);
	if (!ret)
		ret = read_scales(pwr);
	if (ret)
		goto err_ctx;

	/*
	 * Default: a quarter second's worth (AUTO_BUFFER_NS), at least
	 * MIN_AUTO_BUFFER. A refill costs the same whatever its size (a
	 * wake-up, a request to iiod), so a buffer sized in time keeps that
	 * cost per second flat at any rate, and bounds how late a sample
	 * reaches the caller (and how long an ip: stop waits) alike.
	 */
	pwr->buffer_samples = (size_t)(pwr->rate_hz * AUTO_BUFFER_NS / 1e9);
	if (pwr->buffer_samples < MIN_AUTO_BUFFER)
		pwr->buffer_samples = MIN_AUTO_BUFFER;
	if (opts && opts->buffer_samples)
		pwr->buffer_samples = opts->buffer_samples;
	pwr->q_cap = 4 * pwr->buffer_samples;
	if (pwr->q_cap < 2 * (size_t)pwr->rate_hz)
		pwr->q_cap = 2 * (size_t)pwr->rate_hz;
	if (pwr->q_cap < MIN_QUEUE_ITEMS)
		pwr->q_cap = MIN_QUEUE_ITEMS;
	pwr->q = calloc(pwr->q_cap, sizeof(*pwr->q));
	if (!pwr->q) {
		ret = sbrig_set_error(-ENOMEM, "%s: out of memory", uri);
		goto err_ctx;
	}
	return pwr;

err_ctx:
	iio_context_destroy(pwr->ctx);
err_efd:
	if (pwr->stop_efd >= 0)
		close(pwr->stop_efd);
	close(pwr->efd);
err_mutex:
	pthread_mutex_destroy(&pwr->lock);
err_free:
	free(pwr);
	errno = -ret;
	return NULL;
}

void sbrig_power_free(struct sbrig_power *pwr)
{
	if (!pwr)
		return;
	sbrig_power_stop(pwr);
	free(pwr->q);
	iio_context_destroy(pwr->ctx);
	close(pwr->stop_efd);
	close(pwr->efd);
	pthread_mutex_destroy(&pwr->lock);
	free(pwr);
}

int sbrig_power_get_info(struct sbrig_power *pwr,
			 struct sbrig_power_info *info)
{
	if (!pwr || !info)
		return sbrig_set_error(-EINVAL, "power: get_info: NULL");
	memset(info, 0, sizeof(*info));
	snprintf(info->uri, sizeof(info->uri), "%s", pwr->uri);
	snprintf(info->device, sizeof(info->device), "%s", pwr->devname);
	info->sample_rate_hz = pwr->rate_hz;
	info->shunt_uohm = pwr->shunt_uohm;
	info->buffer_samples = (uint32_t)pwr->buffer_samples;
	info->has_timestamp = pwr->ch[CH_TS] &&
			      iio_channel_is_scan_element(pwr->ch[CH_TS]);
	info->stale_buffer_cleared = pwr->stale_cleared;
	return 0;
}

/* Shunt voltage and current registers are two's complement (see top). */
static inline int64_t raw_value(enum power_chan c, int64_t raw)
{
	if ((c == CH_SHUNT || c == CH_CURRENT) && raw >= 0x8000 && raw <= 0xffff)
		return raw - 0x10000;
	return raw;
}

static inline void fill_sample(const struct sbrig_power *pwr,
			       const int64_t raw[CH_TS], struct sbrig_sample *s)
{
	s->shunt_nV = (int32_t)sbrig_power_conv(&pwr->conv[CH_SHUNT],
				raw_value(CH_SHUNT, raw[CH_SHUNT]));
	s->bus_uV = (int32_t)sbrig_power_conv(&pwr->conv[CH_BUS], raw[CH_BUS]);
	s->power_uW = sbrig_power_conv(&pwr->conv[CH_POWER], raw[CH_POWER]);
	s->current_uA = (int32_t)sbrig_power_conv(&pwr->conv[CH_CURRENT],
				raw_value(CH_CURRENT, raw[CH_CURRENT]));
}

int sbrig_power_read_now(struct sbrig_power *pwr, struct sbrig_sample *s)
{
	int64_t raw[CH_TS];
	long long v;
	int c, ret;

	if (!pwr || !s)
		return sbrig_set_error(-EINVAL, "power: read_now: NULL");
	if (pwr->running)
		return sbrig_set_error(-EBUSY, "%s: %s: capturing", pwr->uri,
				       pwr->devname);
	for (c = 0; c < CH_TS; c++) {
		ret = iio_channel_attr_read_longlong(pwr->ch[c], "raw", &v);
		if (ret < 0) {
			char what[64];

			snprintf(what, sizeof(what), "read %s raw", chan_ids[c]);
			return iio_fail(pwr, ret, what);
		}
		raw[c] = v;
	}
	fill_sample(pwr, raw, s);
	s->t_ns = sbrig_now_ns();
	return 0;
}

/* ---- the queue --------------------------------------------------------- */

/* The next free slot (there must be one); the item is then queued. */
static inline struct power_item *q_push(struct sbrig_power *pwr)
{
	size_t i = pwr->q_head + pwr->q_len;

	if (i >= pwr->q_cap)
		i -= pwr->q_cap;
	pwr->q_len++;
	return &pwr->q[i];
}

static inline void q_put(struct sbrig_power *pwr, const struct power_item *it)
{
	*q_push(pwr) = *it;
}

/* Called with pwr->lock held. */
static inline void queue_sample(struct sbrig_power *pwr, const struct sbrig_sample *s)
{
	struct power_item *it;

	if (pwr->q_dropped) {
		if (pwr->q_len + 2 > pwr->q_cap)
			goto drop;
		it = q_push(pwr);
		it->is_gap = true;
		it->g.t_ns = pwr->q_last_t_ns;
		it->g.next_t_ns = s->t_ns;
		it->g.missing = pwr->q_dropped;
		pwr->q_dropped = 0;
	}
	if (pwr->q_len == pwr->q_cap)
		goto drop;
	it = q_push(pwr);
	it->is_gap = false;
	it->s = *s;
	pwr->q_last_t_ns = s->t_ns;
	return;
drop:
	pwr->q_dropped++;
	pwr->stats.overruns++;
}

/* Called with pwr->lock held. */
static void queue_gap(struct sbrig_power *pwr, const struct sbrig_gap *g)
{
	struct power_item it = { .is_gap = true, .g = *g };

	pwr->stats.gaps++;
	pwr->stats.missing += g->missing;
	if (pwr->q_dropped || pwr->q_len == pwr->q_cap) {
		/* folded into the overrun gap that comes next */
		pwr->q_dropped += g->missing;
		return;
	}
	q_put(pwr, &it);
}

/*
 * The eventfd is written only when it is not readable already. Under
 * pwr->lock, arm_locked() says whether a write is due and marks it done;
 * the write itself follows after unlocking (a reader woken by it must not
 * find the lock still held). drain_efd_locked() clears efd_armed only once
 * its read() succeeded: if the write is still on its way (EAGAIN), the
 * next call drains it, so the eventfd is never left readable unarmed.
 */
static bool arm_locked(struct sbrig_power *pwr)
{
	if (pwr->efd_armed)
		return false;
	pwr->efd_armed = true;
	return true;
}

static void notify(struct sbrig_power *pwr)
{
	uint64_t one = 1;

	if (write(pwr->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		sbrig_warn("%s: eventfd write: %s", pwr->uri, strerror(errno));
}

/* Make the eventfd unreadable again. Called with pwr->lock held. */
static int drain_efd_locked(struct sbrig_power *pwr)
{
	uint64_t cnt;

	if (!pwr->efd_armed)
		return 0;
	if (read(pwr->efd, &cnt, sizeof(cnt)) < 0) {
		if (errno == EAGAIN)
			return 0;	/* the write is on its way */
		return sbrig_set_error(-errno, "%s: eventfd read: %s",
				       pwr->uri, strerror(errno));
	}
	pwr->efd_armed = false;
	return 0;
}

/* ---- the capture thread ------------------------------------------------ */

static void thread_end(struct sbrig_power *pwr, int err)
{
	bool wake;

	pthread_mutex_lock(&pwr->lock);
	pwr->ended = true;
	pwr->thread_err = err;
	if (err)
		snprintf(pwr->thread_msg, sizeof(pwr->thread_msg), "%s",
			 sbrig_errmsg());
	wake = arm_locked(pwr);
	pthread_mutex_unlock(&pwr->lock);
	if (wake)
		notify(pwr);
}

/*
 * Move the offset applied to remote timestamps towards the estimate. A
 * step down would make mapped times run backwards, a step up would open
 * a hole between two samples, so it is slewed by at most a quarter
 * period per sample, and down by no more than the remote interval from
 * the previous stamp (@raw_dt, < 0 for none: ina2xx-adc stamps at
 * readout, and after a late wake-up reads the next sample well within a
 * period): mapped sample intervals stay within 5/4 of the remote ones and
 * are never negative.
 */
static inline void slew_offset(struct sbrig_power *pwr, int64_t raw_dt)
{
	if (!pwr->have_applied_off) {
		pwr->applied_off_ns = pwr->target_off_ns;
		pwr->have_applied_off = true;
		return;
	}
	pwr->applied_off_ns = sbrig_power_slew(pwr->applied_off_ns,
					       pwr->target_off_ns,
					       pwr->slew_step_ns,
					       raw_dt < 0 ? pwr->slew_step_ns :
					       raw_dt);
}

/*
 * The usual layout (ina2xx-adc, the emulator): host-order 16-bit raws
 * without shift or padding bits, a 64-bit timestamp, and a whole number
 * of output units per LSB. Decoded without any per-value branch.
 */
static bool layout_is_plain(const struct sbrig_power *pwr)
{
	int c;

	for (c = 0; c < CH_COUNT; c++) {
		const struct sbrig_power_field *f = &pwr->field[c];

		if (f->swap || f->shift || f->fix_bits)
			return false;
	}
	for (c = 0; c < CH_TS; c++) {
		if (!pwr->conv[c].exact || pwr->conv[c].div != 1)
			return false;
	}
	return true;
}

static inline int64_t plain_conv(const struct sbrig_power_conv *cv,
				 int64_t raw)
{
	return (raw + cv->offset) * cv->mul;
}

/* One scan -> sample (t_ns left to the caller) and raw remote timestamp. */
static inline __attribute__((always_inline))
void decode_scan(const struct sbrig_power *pwr, const char *p, bool plain,
		 struct sbrig_sample *s, int64_t *ts)
{
	const struct sbrig_power_field *f = pwr->field;
	const struct sbrig_power_conv *cv = pwr->conv;
	int64_t raw[CH_TS];
	int c;

	if (plain) {
		/* two's complement shunt/current: as raw_value() */
		int16_t shunt, current;
		uint16_t bus, power;

		memcpy(&shunt, p + f[CH_SHUNT].offset, sizeof(shunt));
		memcpy(&bus, p + f[CH_BUS].offset, sizeof(bus));
		memcpy(&power, p + f[CH_POWER].offset, sizeof(power));
		memcpy(&current, p + f[CH_CURRENT].offset, sizeof(current));
		memcpy(ts, p + f[CH_TS].offset, sizeof(*ts));
		s->shunt_nV = (int32_t)plain_conv(&cv[CH_SHUNT], shunt);
		s->bus_uV = (int32_t)plain_conv(&cv[CH_BUS], bus);
		s->power_uW = plain_conv(&cv[CH_POWER], power);
		s->current_uA = (int32_t)plain_conv(&cv[CH_CURRENT], current);
		return;
	}
	for (c = 0; c < CH_TS; c++)
		raw[c] = (int64_t)sbrig_power_field_get(&f[c], p);
	*ts = (int64_t)sbrig_power_field_get(&f[CH_TS], p);
	fill_sample(pwr, raw, s);
}

/* Timestamp, gap check and queueing for every scan. pwr->lock held. */
static inline __attribute__((always_inline))
void queue_scans(struct sbrig_power *pwr, const char *start, const char *end,
		 ptrdiff_t step, bool plain)
{
	const char *p;

	for (p = start; p + step <= end; p += step) {
		struct sbrig_sample s;
		struct sbrig_gap g;
		int64_t prev_off, ts;

		decode_scan(pwr, p, plain, &s, &ts);
		prev_off = pwr->applied_off_ns;
		if (pwr->remote)
			slew_offset(pwr, !pwr->have_prev ? -1 :
				    ts > pwr->prev_ts_ns ?
				    ts - pwr->prev_ts_ns : 0);
		s.t_ns = ts + pwr->applied_off_ns;
		if (sbrig_power_gap(&pwr->grid, ts, &g.missing) &&
		    pwr->have_prev) {
			g.t_ns = pwr->prev_ts_ns + prev_off;
			g.next_t_ns = s.t_ns;
			queue_gap(pwr, &g);
		}
		pwr->have_prev = true;
		pwr->prev_ts_ns = ts;
		queue_sample(pwr, &s);
	}
}

/*
 * Demultiplex, convert and queue one buffer's samples, and wake the caller
 * if that is due. Waking the caller's thread is the most expensive part of
 * a buffer after libiio's own I/O (a context switch, a poll() and a read()
 * of the eventfd in the caller), so plain samples wake it at most every
 * wake interval: by default (SBRIG_POWER_WAKE_NS, 250 ms) every buffer of
 * the automatic size (a quarter second), every fourth of small ones (64
 * samples at 893 S/s: 72 ms). The newest sample the caller has is then at
 * most that and a buffer old, under the 500 ms after which sbrigd's power
 * witness takes a sample for stale; sbrigd asks for a second
 * (SBRIG_POWER_WAKE_MAX_NS) while nobody watches the newest sample. Gaps are
 * data like samples (the ina2xx-adc under load drops samples in most
 * buffers): they wait too. An overrun or a queue over half full wakes it
 * at once, as does the end of the capture (thread_end()).
 */
static void take_buffer(struct sbrig_power *pwr, const char *start,
			const char *end, ptrdiff_t step, int64_t arrival)
{
	uint64_t overruns;
	bool wake;

	if (pwr->remote) {
		int64_t ts = (int64_t)sbrig_power_field_get(
					&pwr->field[CH_TS], end - step);

		sbrig_clockmap_update(&pwr->clock, arrival, ts);
		pwr->target_off_ns = sbrig_clockmap_offset(&pwr->clock, ts);
	}

	pthread_mutex_lock(&pwr->lock);
	if (pwr->remote) {
		pwr->stats.clock_drift_known = pwr->clock.have_drift;
		pwr->stats.clock_drift_ppb = pwr->clock.have_drift ?
			llround(pwr->clock.drift * 1e9) : 0;
		pwr->stats.clock_uncert_ns = pwr->clock.uncert_ns;
	}
	overruns = pwr->stats.overruns;
	if (pwr->plain)
		queue_scans(pwr, start, end, step, true);
	else
		queue_scans(pwr, start, end, step, false);
	wake = false;
	if (pwr->q_len &&
	    (arrival - pwr->last_wake_ns >= pwr->wake_interval_ns ||
	     pwr->stats.overruns != overruns ||
	     2 * pwr->q_len > pwr->q_cap)) {
		pwr->last_wake_ns = arrival;
		wake = arm_locked(pwr);
	}
	pthread_mutex_unlock(&pwr->lock);
	if (wake)
		notify(pwr);
}

/*
 * Refill once and take what came; Return: 1 taken, 0 nothing there
 * (a non-blocking refill found no sample), or -errno (message set).
 */
static int refill_take(struct sbrig_power *pwr)
{
	ssize_t ret = iio_buffer_refill(pwr->buf);
	int64_t arrival = sbrig_now_ns();
	char *start, *end;
	ptrdiff_t step;
	int c;

	if (ret == -EAGAIN && pwr->nonblock)
		return 0;
	if (ret < 0)
		return iio_fail(pwr, (int)ret, "capture: buffer refill");
	atomic_store(&pwr->arrival_ns, arrival);
	start = iio_buffer_start(pwr->buf);
	end = iio_buffer_end(pwr->buf);
	step = iio_buffer_step(pwr->buf);
	if (step <= 0 || end - start < step)
		return 0;
	for (c = 0; c < CH_COUNT; c++)
		pwr->field[c].offset = (size_t)
			((char *)iio_buffer_first(pwr->buf, pwr->ch[c]) - start);
	take_buffer(pwr, start, end, step, arrival);
	return 1;
}

/*
 * At a stop on a local: context: take everything the kernel holds (at
 * most the whole buffers that arrived since the last poll, then the
 * partial one).
 */
static int drain_local(struct sbrig_power *pwr)
{
	int ret;

	do
		ret = refill_take(pwr);
	while (ret > 0);
	return ret;
}

/* local: wait for a whole buffer or the stop, at most timeout_ms */
static int wait_local(struct sbrig_power *pwr, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = iio_buffer_get_poll_fd(pwr->buf), .events = POLLIN },
		{ .fd = pwr->stop_efd, .events = POLLIN },
	};
	int n;

	do
		n = poll(pfd, 2, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return sbrig_set_error(-errno, "%s: %s: capture: poll: %s",
				       pwr->uri, pwr->devname, strerror(errno));
	if (pfd[1].revents)
		return 2;		/* stop */
	if (pfd[0].revents & POLLNVAL)
		return sbrig_set_error(-EBADF, "%s: %s: capture: buffer closed",
				       pwr->uri, pwr->devname);
	return n ? 1 : 0;	/* 0: timed out */
}

static void *capture_thread(void *arg)
{
	struct sbrig_power *pwr = arg;
	sigset_t pipe_set;
	int err = 0, ret;

	/* a vanished iiod must be EPIPE here, not SIGPIPE (see top) */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);

	while (pwr->nonblock) {
		bool timed_out;

		ret = wait_local(pwr, pwr->timeout_ms);
		if (ret == 2) {
			ret = drain_local(pwr);
			err = ret < 0 ? ret : 0;
			goto out;
		}
		if (ret < 0) {
			err = ret;
			goto out;
		}
		timed_out = !ret;
		ret = refill_take(pwr);
		if (ret < 0) {
			err = ret;
			goto out;
		}
		if (!ret && timed_out) {
			/* a whole timeout without a buffer: the sensor is stuck */
			err = sbrig_set_error(-ETIMEDOUT,
				"%s: %s: capture: no buffer within %u ms",
				pwr->uri, pwr->devname, pwr->timeout_ms);
			goto out;
		}
	}
	/*
	 * ip: blocking refills, until one reaches the stop (see top), unless
	 * sbrig_power_stop() had to cancel it.
	 */
	for (;;) {
		if (atomic_load(&pwr->stopping) && pwr->have_prev &&
		    pwr->prev_ts_ns + pwr->applied_off_ns >=
		    atomic_load(&pwr->stop_ns))
			break;
		ret = refill_take(pwr);
		if (ret < 0) {
			if (!atomic_load(&pwr->stopping))
				err = ret;
			break;
		}
	}
out:
	thread_end(pwr, err);
	return NULL;
}

static int check_channel_formats(struct sbrig_power *pwr)
{
	int c;

	for (c = 0; c < CH_COUNT; c++) {
		const struct iio_data_format *f =
			iio_channel_get_data_format(pwr->ch[c]);
		unsigned int want = c == CH_TS ? 64 : 16;

		if (!iio_channel_is_scan_element(pwr->ch[c]) ||
		    f->length != want || f->repeat > 1 ||
		    sbrig_power_field_init(&pwr->field[c], f))
			return sbrig_set_error(-ENOTSUP,
				"%s: %s: channel %s is not a %u-bit scan element",
				pwr->uri, pwr->devname, chan_ids[c], want);
	}
	return 0;
}

int sbrig_power_start(struct sbrig_power *pwr)
{
	unsigned int i, n, timeout_ms;
	int c, ret;

	if (!pwr)
		return sbrig_set_error(-EINVAL, "power: start: NULL");
	if (pwr->running)
		return sbrig_set_error(-EBUSY, "%s: %s: already capturing",
				       pwr->uri, pwr->devname);
	if (!pwr->ch[CH_TS] || !iio_channel_is_scan_element(pwr->ch[CH_TS]))
		return sbrig_set_error(-ENOTSUP,
			"%s: %s: no timestamp channel: sample times and gaps cannot be known",
			pwr->uri, pwr->devname);
	ret = check_channel_formats(pwr);
	if (ret)
		return ret;
	pwr->plain = layout_is_plain(pwr);
	ret = clear_stale_buffer(pwr, true);
	if (ret)
		return ret;
	ret = set_timestamp_clock(pwr);
	if (ret)
		return ret;

	n = iio_device_get_channels_count(pwr->dev);
	for (i = 0; i < n; i++)
		iio_channel_disable(iio_device_get_channel(pwr->dev, i));
	for (c = 0; c < CH_COUNT; c++)
		iio_channel_enable(pwr->ch[c]);

	/* a refill waits for a whole buffer: let libiio wait that long */
	timeout_ms = (unsigned int)(3000.0 * pwr->buffer_samples / pwr->rate_hz);
	if (timeout_ms < 5000)
		timeout_ms = 5000;
	ret = iio_context_set_timeout(pwr->ctx, timeout_ms);
	if (ret < 0)
		return iio_fail(pwr, ret, "set context timeout");
	pwr->timeout_ms = timeout_ms;

	pwr->buf = iio_device_create_buffer(pwr->dev, pwr->buffer_samples,
					    false);
	if (!pwr->buf)
		return iio_fail(pwr, -errno, "create buffer");
	/* local: non-blocking, drained at the stop (see top) */
	pwr->nonblock = !pwr->remote &&
			!iio_buffer_set_blocking_mode(pwr->buf, false) &&
			iio_buffer_get_poll_fd(pwr->buf) >= 0;
	if (!pwr->remote && !pwr->nonblock) {
		iio_buffer_destroy(pwr->buf);
		pwr->buf = NULL;
		return sbrig_set_error(-ENOTSUP,
			"%s: %s: the buffer cannot be polled: a stop would lose its last samples",
			pwr->uri, pwr->devname);
	}
	{
		eventfd_t v;

		eventfd_read(pwr->stop_efd, &v);	/* an earlier stop's */
	}
	atomic_store(&pwr->stop_ns, INT64_MAX);
	atomic_store(&pwr->arrival_ns, sbrig_now_ns());

	pthread_mutex_lock(&pwr->lock);
	pwr->q_head = pwr->q_len = 0;
	pwr->q_dropped = 0;
	memset(&pwr->stats, 0, sizeof(pwr->stats));
	pwr->ended = false;
	pwr->thread_err = 0;
	pwr->thread_msg[0] = '\0';
	pthread_mutex_unlock(&pwr->lock);
	pwr->have_prev = false;
	sbrig_power_grid_init(&pwr->grid, pwr->period_ns);
	pwr->clock.valid = false;
	pwr->stats.remote_clock = pwr->remote;
	pwr->have_applied_off = false;
	pwr->applied_off_ns = 0;
	pwr->slew_step_ns = pwr->period_ns / 4;
	pwr->last_wake_ns = 0;
	atomic_store(&pwr->stopping, false);

	ret = pthread_create(&pwr->thread, NULL, capture_thread, pwr);
	if (ret) {
		iio_buffer_destroy(pwr->buf);
		pwr->buf = NULL;
		return sbrig_set_error(-ret, "%s: %s: pthread_create: %s",
				       pwr->uri, pwr->devname, strerror(ret));
	}
	pwr->running = true;
	return 0;
}

/*
 * ip: join the capture thread while its refills go on (see top): give up
 * when no buffer came for @wait_ns, or @max_ns after the stop. Return:
 * true joined, false the sensor is hung (or too late): not joined.
 */
static bool join_while_delivering(struct sbrig_power *pwr, int64_t stop,
				  int64_t wait_ns, int64_t max_ns)
{
	for (;;) {
		int64_t now = sbrig_now_ns();
		int64_t until_ns = atomic_load(&pwr->arrival_ns);
		struct timespec until;
		int64_t dt;

		if (until_ns < stop)
			until_ns = stop;	/* a buffer under way at the stop */
		until_ns += wait_ns;
		if (until_ns > stop + max_ns)
			until_ns = stop + max_ns;
		if (until_ns <= now)
			return false;
		dt = until_ns - now;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (until.tv_nsec + dt) / 1000000000;
		until.tv_nsec = (until.tv_nsec + dt) % 1000000000;
		if (!pthread_timedjoin_np(pwr->thread, NULL, &until))
			return true;
	}
}

int sbrig_power_stop(struct sbrig_power *pwr)
{
	int64_t wait_ns, stop;
	bool wake;
	int err;

	if (!pwr || !pwr->running)
		return 0;
	stop = sbrig_now_ns();
	atomic_store(&pwr->stop_ns, stop);
	pthread_mutex_lock(&pwr->lock);
	pwr->stats.stop_ns = stop;
	pthread_mutex_unlock(&pwr->lock);
	atomic_store(&pwr->stopping, true);
	if (pwr->nonblock) {
		/* the thread drains what the kernel holds, without blocking */
		eventfd_write(pwr->stop_efd, 1);
		pthread_join(pwr->thread, NULL);
	} else {
		/*
		 * ip: let the refills reach the stop (see top): each buffer
		 * may take a buffer's duration and a quarter, plus a second
		 * for the network (cap 10 s); a sensor that delivers is
		 * waited for up to STOP_LATE_MAX_NS. No buffer for longer:
		 * the sensor is hung; cancel (libiio prints an error) and
		 * say so in the stats.
		 */
		wait_ns = (int64_t)(1.25e9 * (double)pwr->buffer_samples /
				    pwr->rate_hz) + 1000000000;
		if (wait_ns > 10000000000LL)
			wait_ns = 10000000000LL;
		if (!join_while_delivering(pwr, stop, wait_ns,
					   STOP_LATE_MAX_NS)) {
			iio_buffer_cancel(pwr->buf);
			pthread_join(pwr->thread, NULL);
			pthread_mutex_lock(&pwr->lock);
			pwr->stats.tail_lost = true;
			pthread_mutex_unlock(&pwr->lock);
		}
	}
	iio_buffer_destroy(pwr->buf);
	pwr->buf = NULL;
	pwr->running = false;

	pthread_mutex_lock(&pwr->lock);
	err = pwr->thread_err;
	if (err)
		sbrig_set_error(err, "%s", pwr->thread_msg);
	wake = pwr->q_len && arm_locked(pwr);	/* they stay readable */
	pthread_mutex_unlock(&pwr->lock);
	if (wake)
		notify(pwr);
	return err;
}

int sbrig_power_fd(struct sbrig_power *pwr)
{
	return pwr ? pwr->efd : -EINVAL;
}

ssize_t sbrig_power_read(struct sbrig_power *pwr, struct sbrig_sample *s,
			 size_t max, struct sbrig_gap *gaps, size_t max_gaps,
			 size_t *ngaps)
{
	size_t n = 0, ng = 0;
	bool wake;
	ssize_t ret;

	if (ngaps)
		*ngaps = 0;
	if (!pwr || (!s && max))
		return sbrig_set_error(-EINVAL, "power: read: NULL");

	pthread_mutex_lock(&pwr->lock);
	ret = drain_efd_locked(pwr);
	if (ret) {
		pthread_mutex_unlock(&pwr->lock);
		return ret;
	}
	while (pwr->q_len) {
		struct power_item *it = &pwr->q[pwr->q_head];

		if (it->is_gap) {
			if (gaps && ng == max_gaps && max_gaps)
				break;	/* delivered by the next call */
			if (!gaps || !max_gaps) {
				/* the caller takes no gaps: only counted */
				if (n)
					break;
			} else {
				gaps[ng++] = it->g;
			}
		} else {
			if (n == max)
				break;
			s[n++] = it->s;
		}
		if (++pwr->q_head == pwr->q_cap)
			pwr->q_head = 0;
		pwr->q_len--;
	}
	pwr->stats.samples += n;
	ret = (ssize_t)n;
	/* still something to take: stay readable */
	wake = (pwr->q_len || (pwr->ended && pwr->thread_err)) &&
	       arm_locked(pwr);
	if (!n && !ng && !pwr->q_len && pwr->ended && pwr->thread_err)
		ret = sbrig_set_error(pwr->thread_err, "%s", pwr->thread_msg);
	pthread_mutex_unlock(&pwr->lock);
	if (wake)
		notify(pwr);
	if (ngaps)
		*ngaps = ng;
	return ret;
}

int sbrig_power_set_wake_interval(struct sbrig_power *pwr,
				  int64_t interval_ns)
{
	if (!pwr)
		return sbrig_set_error(-EINVAL, "power: set_wake_interval: NULL");
	if (interval_ns < 0 || interval_ns > SBRIG_POWER_WAKE_MAX_NS)
		return sbrig_set_error(-EINVAL, "%s: wake interval %" PRId64
				       " ns: not within 0..%lld", pwr->uri,
				       interval_ns, SBRIG_POWER_WAKE_MAX_NS);
	pthread_mutex_lock(&pwr->lock);
	pwr->wake_interval_ns = interval_ns ? interval_ns : SBRIG_POWER_WAKE_NS;
	pthread_mutex_unlock(&pwr->lock);
	return 0;
}

int sbrig_power_get_stats(struct sbrig_power *pwr,
			  struct sbrig_power_stats *st)
{
	if (!pwr || !st)
		return sbrig_set_error(-EINVAL, "power: get_stats: NULL");
	pthread_mutex_lock(&pwr->lock);
	*st = pwr->stats;
	pthread_mutex_unlock(&pwr->lock);
	return 0;
}
