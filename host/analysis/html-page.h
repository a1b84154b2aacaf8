/* SPDX-License-Identifier: GPL-2.0 */
/*
 * html-page.h - the analysis's one way to make a self-contained page
 * (report-html.c), for every page sbrig renders: report.html, and the
 * history's trend page (libsbrig-history, the one layer above that uses
 * it). A page is dygraphs (Debian's libjs-dygraphs, read when rendering)
 * and the page's own stylesheet and script, with its data inlined as
 * JSON; it opens from disk with no network.
 */
#ifndef SBRIG_HTML_PAGE_H
#define SBRIG_HTML_PAGE_H

#include <json-c/json.h>

/**
 * struct an_page - what a page is made of
 * @title: the <title> (escaped here)
 * @noscript: what the page says without JavaScript (escaped here)
 * @main_id: the id of the empty <main> the script fills
 * @data_id: the id of the <script type="application/json"> holding @data
 * @data: the page's data (every "<" written as \u003c)
 * @css: the page's stylesheet, after dygraphs'
 * @js: the page's script, after dygraphs
 */
struct an_page {
	const char *title, *noscript, *main_id, *data_id;
	struct json_object *data;
	const char *css, *js;
};

/*
 * Write the page @p to @path atomically (atomic.h). dygraphs is read from
 * $SBRIG_DYGRAPHS_DIR or /usr/share/javascript/dygraphs. 0 or -errno with
 * sbrig_errmsg() naming the file.
 */
int an_page_write(const struct an_page *p, const char *path);

#endif /* SBRIG_HTML_PAGE_H */
