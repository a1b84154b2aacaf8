/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: analysis of captures (libsbrig-analysis)
 *
 * Offline: a capture directory (capture-format.md) in, a report out. The
 * analysis re-maps the target's events onto host time with a clock model
 * fitted over the whole capture, integrates the measured power over the
 * sample timestamps, attributes the energy of awake time to the blockers
 * active at each instant, finds the wakeups and what went wrong, and
 * writes report.json (schema: host/doc/report-format.md); report.html and
 * the text summary are rendered from that JSON file alone.
 *
 * Memory is bounded by the number of events and by the report, not by the
 * number of samples: samples are streamed.
 *
 * Errors follow libsbrig's convention (sbrig.h): 0 / -errno, NULL + errno,
 * sbrig_errmsg() naming the file, line and field.
 */
#ifndef SBRIG_ANALYSIS_H
#define SBRIG_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* report.json's "schema" and "version" */
#define SBRIG_REPORT_SCHEMA "sbrig-report"
#define SBRIG_REPORT_VERSION 1

/* A blocker still active at the end after this long is a leak. */
#define SBRIG_ANALYSIS_DEFAULT_LEAK_NS (5 * (int64_t)1000000000)

/**
 * struct sbrig_analysis_opts - how to analyse (zero: the defaults)
 * @leak_ns: the leak threshold (0: SBRIG_ANALYSIS_DEFAULT_LEAK_NS)
 */
struct sbrig_analysis_opts {
	int64_t leak_ns;
};

/**
 * struct sbrig_latency_stats - wakeup latency over n measurements
 * @n: measurements
 * @min_ns: fastest
 * @median_ns: median (the mean of the two middle ones for an even @n)
 * @p95_ns: 95th percentile, nearest rank
 * @max_ns: slowest
 * @uncert_ns: the largest uncertainty of a measurement
 *
 * All zero when @n is 0.
 */
struct sbrig_latency_stats {
	unsigned int n;
	int64_t min_ns, median_ns, p95_ns, max_ns;
	int64_t uncert_ns;
};

/**
 * struct sbrig_wakeup - one wakeup the rig caused
 * @t_ns: the stimulus (host CLOCK_MONOTONIC)
 * @resume_t_ns: the target's resume, on host time
 * @marker_t_ns: the marker's first rising edge after @t_ns, up to the
 *	resume, or -1 (no marker wired, or no edge)
 * @latency_ns: @marker_t_ns - @t_ns if there is an edge, else
 *	@resume_t_ns - @t_ns (report-format.md, section 3)
 * @uncert_ns: the uncertainty of @latency_ns
 */
struct sbrig_wakeup {
	int64_t t_ns;
	int64_t resume_t_ns;
	int64_t marker_t_ns;
	int64_t latency_ns;
	int64_t uncert_ns;
};

struct sbrig_analysis;

/**
 * sbrig_analysis_run() - analyse a capture
 * @capture_dir: the capture directory (format version 1 or 2)
 * @opts: options, or NULL for the defaults
 *
 * Return: the analysis, which the caller frees with sbrig_analysis_free(),
 * or NULL with errno set and sbrig_errmsg() naming the file:line (a
 * corrupt capture) or the directory.
 */
struct sbrig_analysis *sbrig_analysis_run(const char *capture_dir,
					  const struct sbrig_analysis_opts *opts);

/** sbrig_analysis_free() - free an analysis; NULL ok */
void sbrig_analysis_free(struct sbrig_analysis *a);

/**
 * sbrig_analysis_write_json() - write report.json
 * @a: the analysis
 * @path: the file to write (replaced atomically: a temporary file renamed
 *	into place, so a failure leaves no half-written report)
 *
 * Return: 0 or -errno with sbrig_errmsg().
 */
int sbrig_analysis_write_json(const struct sbrig_analysis *a,
			      const char *path);

/**
 * sbrig_analysis_latency() - the wakeup-latency statistics of @a
 * @a: the analysis
 * @st: out
 */
void sbrig_analysis_latency(const struct sbrig_analysis *a,
			    struct sbrig_latency_stats *st);

/**
 * sbrig_analysis_wakeups() - the stimulus wakeups of @a, in time order
 *	(those a rig stimulus explains: their latencies)
 * @a: the analysis
 * @out: filled with the first @max of them (may be NULL if @max is 0)
 * @max: room in @out
 *
 * Return: how many wakeups there are (may be more than @max).
 */
size_t sbrig_analysis_wakeups(const struct sbrig_analysis *a,
			      struct sbrig_wakeup *out, size_t max);

/**
 * sbrig_latency_stats() - statistics of @n latencies
 * @v: the latencies (ns); sorted in place
 * @u: their uncertainties (ns), or NULL
 * @n: how many
 * @st: out
 */
void sbrig_latency_stats(int64_t *v, const int64_t *u, size_t n,
			 struct sbrig_latency_stats *st);

/**
 * sbrig_report_render_html() - report.html from report.json
 * @json_path: a report.json (schema SBRIG_REPORT_SCHEMA)
 * @html_path: the file to write (replaced atomically)
 *
 * The page is self-contained: the charting library and the report's data
 * are inlined, nothing is fetched when it opens.
 *
 * Return: 0 or -errno with sbrig_errmsg() (a JSON file that is not a
 * report of a known version: -EINVAL naming the field).
 */
int sbrig_report_render_html(const char *json_path, const char *html_path);

/**
 * sbrig_report_render_text() - the report's headline as text
 * @json_path: a report.json
 * @out: where to write: the findings, the energy totals, the blockers by
 *	energy and the wakeup latency, one "key: value" line each
 *
 * Return: 0 or -errno with sbrig_errmsg().
 */
int sbrig_report_render_text(const char *json_path, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_ANALYSIS_H */
