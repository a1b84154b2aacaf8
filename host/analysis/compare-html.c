// SPDX-License-Identifier: GPL-2.0
/*
 * compare-html.c - the comparison page (sbrig compare --html;
 * host/doc/compare-format.md, "The comparison page"): compare.json and
 * a trace summary of the representative base and new run, drawn by
 * assets/compare.js with report.html's machinery (html-page.h).
 */
#include <stdint.h>

#include <json-c/json.h>

#include <sbrig/compare.h>

#include "cm-shared.h"
#include "html-page.h"
#include "report-html.h"

typedef struct json_object jobj;

/* the coarsest envelope level of @trace, the timeline and the states */
static jobj *trace_summary(jobj *report, const char *input)
{
	jobj *t = cm_get(report, "trace"), *lv = cm_get(t, "levels"), *o, *best = NULL;
	size_t nb = SIZE_MAX;

	for (size_t i = 0; i < json_object_array_length(lv); i++) {
		jobj *l = json_object_array_get_idx(lv, i);
		size_t k = json_object_array_length(cm_get(l, "mean"));

		if (k && k < nb) {
			nb = k;
			best = l;
		}
	}
	o = json_object_new_object();
	cm_put(o, "input", json_object_new_string(input));
	cm_put(o, "capture", json_object_new_string(cm_str(cm_get(report, "capture"), "path")));
	cm_put(o, "start_ns", json_object_get(cm_get(cm_get(report, "capture"), "start_ns")));
	cm_put(o, "level", json_object_get(best));
	cm_put(o, "timeline", json_object_get(cm_get(t, "timeline")));
	cm_put(o, "states", json_object_get(cm_get(t, "states")));
	return o;
}

int sbrig_compare_render_html(const struct sbrig_compare *c, const char *path)
{
	jobj *data = json_object_new_object(), *runs;
	int ret;

	cm_put(data, "compare", json_object_get(c->doc));
	for (int side = 0; side < 2; side++) {
		runs = cm_get(cm_get(c->doc, side ? "new" : "base"), "runs");
		cm_put(data, side ? "new_run" : "base_run", trace_summary(
			c->rep[side], cm_str(json_object_array_get_idx(runs,
				c->rep_idx[side]), "input")));
	}
	ret = an_page_write(&(struct an_page){
		.title = "sbrig compare",
		.noscript = "This page draws its charts with JavaScript; the "
			    "data is compare.json.",
		.main_id = "compare", .data_id = "sbrig-compare", .data = data,
		.css = sbrig_compare_page_css, .js = sbrig_compare_page_js,
	}, path);
	json_object_put(data);
	return ret;
}
