/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report-html.h - private to the HTML renderer (report-html*.c).
 *
 * The pages' own scripts and stylesheets. Their sources are
 * assets/report.js and assets/report.css (report.html), assets/compare.js
 * and assets/compare.css (sbrig compare --html); report-html-assets.c holds them
 * as C strings and is generated from them by assets/embed.py (run it
 * after editing an asset; tests/test_report_html.py fails while the two
 * disagree).
 */
#ifndef SBRIG_REPORT_HTML_H
#define SBRIG_REPORT_HTML_H

extern const char sbrig_report_page_js[];
extern const char sbrig_report_page_css[];
/* the comparison page's (assets/compare.js, assets/compare.css) */
extern const char sbrig_compare_page_js[];
extern const char sbrig_compare_page_css[];

#endif /* SBRIG_REPORT_HTML_H */
