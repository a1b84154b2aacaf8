// SPDX-License-Identifier: GPL-2.0
/*
 * compare-load.c - sbrig compare's runs: reading them, and whether they
 * can be compared (host/doc/compare-format.md, "Comparable runs").
 *
 * An argument is a report.json, a directory holding one, or a capture
 * directory (it has a meta.ini), which is analysed on the fly in memory
 * (nothing is written next to it). Every report is checked against
 * report.json's table (report-load.c), so a run of another schema
 * version or with a field missing is refused, naming the file and the
 * field; its trace is cut to what compare uses. Then the runs as a whole:
 * enough of them for the exact test to reach alpha, one scenario on one
 * rig, every capture complete, without gaps and of like duration.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include <sbrig/analysis.h>
#include <sbrig/compare.h>
#include <sbrig/sbrig.h>

#include "cm-shared.h"
#include "compare-stats.h"
#include "report-load.h"

typedef struct json_object jobj;

static bool is_file(const char *dir, const char *name)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/*
 * Keep of @report's trace only what compare uses: the coarsest envelope
 * level, the timeline and the states (the comparison page's trace
 * summary). The finer levels and the raw samples are most of a report
 * (a one-hour run: MBs), and compare holds every run to the end.
 */
static void slim_trace(jobj *report)
{
	jobj *t = cm_get(report, "trace"), *lv = cm_get(t, "levels");
	jobj *best = NULL;
	size_t nb = SIZE_MAX;

	if (!t)
		return;
	json_object_object_del(t, "raw");
	for (size_t i = 0; i < json_object_array_length(lv); i++) {
		jobj *l = json_object_array_get_idx(lv, i);
		size_t k = json_object_array_length(cm_get(l, "mean"));

		if (k && k < nb) {
			nb = k;
			best = l;
		}
	}
	if (!lv || !best)
		return;
	json_object_get(best);
	json_object_object_add(t, "levels", json_object_new_array());
	json_object_array_add(cm_get(t, "levels"), best);
}

/* Read @arg into @r. 0 or -errno with the message naming @arg. */
static int load_report(const char *arg, const struct sbrig_compare_opts *o,
		       struct cm_run *r)
{
	struct sbrig_analysis_opts ao = { .leak_ns = o->leak_ns };
	struct sbrig_analysis *a;
	char p[4200];
	struct stat st;
	int ret;

	r->arg = arg;
	r->report = NULL;
	if (stat(arg, &st))
		return sbrig_set_error(-errno, "%s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return an_report_load(arg, &r->report);
	if (is_file(arg, "meta.ini")) {
		a = sbrig_analysis_run(arg, &ao);
		if (!a) {
			ret = -errno;
			sbrig_prefix_error("%s: analysing the capture", arg);
			return ret;
		}
		r->report = an_report_json(a);
		sbrig_analysis_free(a);
		if (!r->report)
			return sbrig_set_error(-ENOMEM, "%s: out of memory", arg);
		ret = an_report_check(r->report);
		if (ret) {
			sbrig_prefix_error("%s: its analysis", arg);
			json_object_put(r->report);
			r->report = NULL;
		}
		return ret;
	}
	if (is_file(arg, "report.json")) {
		snprintf(p, sizeof(p), "%s/report.json", arg);
		return an_report_load(p, &r->report);
	}
	return sbrig_set_error(-EINVAL, "%s: neither a report.json, nor a "
			       "directory with one, nor a capture directory "
			       "(no meta.ini)", arg);
}

int cm_load_run(const char *arg, const struct sbrig_compare_opts *o,
		struct cm_run *r)
{
	int ret = load_report(arg, o, r);

	if (!ret)
		slim_trace(r->report);
	return ret;
}

const char *cm_prov(const struct cm_run *r, const char *key)
{
	return cm_str(cm_get(cm_get(r->report, "capture"), "provenance"), key);
}

/* short hash for messages */
static const char *short_hash(const char *h, char *buf)
{
	snprintf(buf, 13, "%s", *h ? h : "(none)");
	return buf;
}

/*
 * 0 when every run has @runs[0]'s scenario and rig; else -EXDEV naming the
 * first that differs, or with @force a warning added to @warnings (one
 * per key) and 0.
 */
static int check_comparable(const struct cm_run *runs, size_t n, bool force,
			    jobj *warnings)
{
	static const struct { const char *hash, *name, *what; } keys[] = {
		{ "scenario_sha256", "scenario", "scenarios" },
		{ "rig_sha256", "rig_name", "rigs" },
	};
	char why[1024], h0[16], h1[16];

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		for (size_t i = 1; i < n; i++) {
			if (!strcmp(cm_prov(&runs[0], keys[k].hash),
				    cm_prov(&runs[i], keys[k].hash)))
				continue;
			snprintf(why, sizeof(why), "runs of different %s: %s "
				 "(%s \"%s\", %s %s) and %s (%s \"%s\", %s %s)",
				 keys[k].what, runs[0].arg, keys[k].name,
				 cm_prov(&runs[0], keys[k].name), keys[k].hash,
				 short_hash(cm_prov(&runs[0], keys[k].hash), h0),
				 runs[i].arg, keys[k].name,
				 cm_prov(&runs[i], keys[k].name), keys[k].hash,
				 short_hash(cm_prov(&runs[i], keys[k].hash), h1));
			if (!force)
				return sbrig_set_error(-EXDEV, "%s; compare runs "
						       "of one scenario on one "
						       "rig, or force it", why);
			json_object_array_add(warnings,
					      json_object_new_string(why));
			break;	/* one warning per key */
		}
	}
	return 0;
}

/* a run's duration differs "very" from the runs' median beyond this ratio */
#define DURATION_RATIO 1.5

/*
 * Runs that cannot be read as like for like: a capture still open (its
 * writer killed: its end is missing), one with gaps in its samples (energy
 * left out reads as "improved"), one whose duration is off the runs'
 * median by more than DURATION_RATIO. 0 when none; else -EXDEV naming the
 * first, or with @force a warning per run in @warnings and 0.
 */
static int check_quality(const struct cm_run *runs, size_t n, bool force,
			 jobj *warnings)
{
	double *d = calloc(n + 1, sizeof(*d)), med;
	char why[1024];
	int ret = 0;

	if (!d)
		return sbrig_set_error(-ENOMEM, "compare: out of memory");
	for (size_t i = 0; i < n; i++)
		d[i] = cm_num(cm_get(runs[i].report, "capture"), "duration_ns");
	med = cs_median(d, n);	/* sorts d */
	for (size_t i = 0; i < n && !ret; i++) {
		jobj *cap = cm_get(runs[i].report, "capture");
		double dur = cm_num(cap, "duration_ns"), gaps = cm_num(cap, "gaps");
		const char *status = cm_str(cap, "status");

		if (strcmp(status, "complete"))
			snprintf(why, sizeof(why), "%s: capture status \"%s\" "
				 "(not complete: its end is missing)",
				 runs[i].arg, status);
		else if (gaps > 0)
			snprintf(why, sizeof(why), "%s: %.0f gap%s in its "
				 "samples (their energy is not counted)",
				 runs[i].arg, gaps, gaps == 1 ? "" : "s");
		else if (med > 0 && (dur > med * DURATION_RATIO ||
				     dur * DURATION_RATIO < med))
			snprintf(why, sizeof(why), "%s: lasts %.3f s, the runs' "
				 "median %.3f s (more than %.1fx apart)",
				 runs[i].arg, dur / 1e9, med / 1e9,
				 DURATION_RATIO);
		else
			continue;
		if (!force)
			ret = sbrig_set_error(-EXDEV, "%s; compare complete "
					      "runs without gaps and of like "
					      "durations, or force it", why);
		else
			json_object_array_add(warnings,
					      json_object_new_string(why));
	}
	free(d);
	return ret;
}

/*
 * -ERANGE when @nb and @nn runs can never give a significant difference
 * at the smallest alpha of @cfg (the exact test's smallest p, 2 / C(nb +
 * nn, nb), is above it), naming the smallest number of runs a side that
 * can; with @force a warning in @warnings instead. Else 0.
 */
static int check_sample_size(size_t nb, size_t nn,
			     const struct sbrig_compare_config *cfg, bool force,
			     jobj *warnings)
{
	double alpha = cfg->alpha, minp = cs_min_p(nb, nn);
	char why[512];

	for (int m = 0; m < SBRIG_METRIC_COUNT; m++)
		if (m != SBRIG_M_LEAK && cfg->metric[m].alpha > 0)
			alpha = fmin(alpha, cfg->metric[m].alpha);
	if (minp <= alpha)
		return 0;
	snprintf(why, sizeof(why), "%zu base and %zu new runs can never show "
		 "a significant difference at alpha %g (the smallest p of the "
		 "exact test, 2 / C(%zu, %zu), is %.3g): give at least %u runs "
		 "a side", nb, nn, alpha, nb + nn, nb, minp,
		 cs_smallest_runs(alpha));
	if (!force)
		return sbrig_set_error(-ERANGE, "%s, or force it", why);
	json_object_array_add(warnings, json_object_new_string(why));
	return 0;
}

int cm_check_runs(const struct cm_run *runs, size_t nbase, size_t nnew,
		  const struct sbrig_compare_config *cfg, bool force,
		  struct json_object *warnings)
{
	int ret = check_sample_size(nbase, nnew, cfg, force, warnings);

	if (!ret)
		ret = check_comparable(runs, nbase + nnew, force, warnings);
	if (!ret)
		ret = check_quality(runs, nbase + nnew, force, warnings);
	return ret;
}
