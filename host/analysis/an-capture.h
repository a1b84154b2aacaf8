/* SPDX-License-Identifier: GPL-2.0 */
/*
 * an-capture.h - the analysis of one capture, private to host/analysis/:
 * each step's result (analysis.c runs the steps, report-json.c writes
 * what they found).
 */
#ifndef SBRIG_AN_CAPTURE_H
#define SBRIG_AN_CAPTURE_H

#include <sbrig/analysis.h>
#include <sbrig/capture-read.h>

#include "an-clock.h"
#include "an-markers.h"
#include "an-results.h"
#include "an-timeline.h"

struct sbrig_analysis {
	char dir[4096];
	struct sbrig_capture_meta meta;
	struct sbrig_analysis_opts opts;
	struct an_clock clk;
	struct an_markers mk;
	struct an_timeline tl;
	struct an_wakeups wk;
	struct an_energy en;
	struct an_costs co;
	struct an_findings fd;
};

#endif /* SBRIG_AN_CAPTURE_H */
