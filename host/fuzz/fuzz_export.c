// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_export - libFuzzer harness of sbrig export's renderers
 * (sbrig_export_render(), analysis/export*.c) on hostile report.json and
 * compare.json documents.
 *
 * The input is the document, handed over as a memfd (the renderer takes a
 * path: /proc/self/fd/N). Every export runs on it; a document refused for
 * one must be refused with a message, and what is written must keep its
 * reader's rules (export-formats.md), whatever the document holds:
 *
 *  - LAVA: each line "lava-test-case NAME --result pass|fail" with NAME
 *    of [A-Za-z0-9_.-], 1-100 characters, optionally " --measurement X
 *    --units U" (X a decimal number below 1e20, U of [A-Za-z0-9_%/.-],
 *    1-100 characters); no NAME twice; one line per figure (a comparison:
 *    a line per metric and the verdict; a report: its headline figures,
 *    a line per blocker, two for the findings), none injected;
 *  - JUnit: UTF-8 of XML 1.0 characters only, no "<" or "&" but markup's;
 *  - CSV: no cell a spreadsheet would run as a formula (one that begins
 *    with = + @ tab CR, or with - and is no number);
 *  - Perfetto: JSON that json-c parses.
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sbrig/export.h>
#include <sbrig/sbrig.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_name(const char *s, size_t n, const char *extra)
{
	if (n < 1 || n > 100)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr("_.-", c) ||
		      (extra && strchr(extra, c))) || !c)
			return false;
	}
	return true;
}

/* -?DIGITS[.DIGITS] with at most @max integer digits */
static bool is_number(const char *s, size_t n, size_t max)
{
	size_t i = 0, digits = 0;

	if (i < n && s[i] == '-')
		i++;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		digits++;
	if (i < n && s[i] == '.')
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
	return digits && digits <= max && i == n;
}

/* One "lava-test-case ..." line of @n bytes; its NAME in @name. */
static bool lava_line(const char *s, size_t n, const char **name, size_t *nlen)
{
	static const char head[] = "lava-test-case ";
	const char *p, *end = s + n, *sp;

	if (n < sizeof(head) || memcmp(s, head, sizeof(head) - 1))
		return false;
	p = s + sizeof(head) - 1;
	sp = memchr(p, ' ', (size_t)(end - p));
	if (!sp || !is_name(p, (size_t)(sp - p), NULL))
		return false;
	*name = p;
	*nlen = (size_t)(sp - p);
	p = sp;
	if ((size_t)(end - p) >= 14 && !memcmp(p, " --result pass", 14))
		p += 14;
	else if ((size_t)(end - p) >= 14 && !memcmp(p, " --result fail", 14))
		p += 14;
	else
		return false;
	if (p == end)
		return true;
	if ((size_t)(end - p) < 15 || memcmp(p, " --measurement ", 15))
		return false;
	p += 15;
	sp = memchr(p, ' ', (size_t)(end - p));
	if (!sp || !is_number(p, (size_t)(sp - p), 19))
		return false;
	p = sp;
	if ((size_t)(end - p) < 9 || memcmp(p, " --units ", 9))
		return false;
	p += 9;
	return is_name(p, (size_t)(end - p), "%/");
}

/* The number of LAVA lines the document @doc gives (export-formats.md). */
static size_t lava_figures(struct json_object *doc)
{
	struct json_object *v, *e;
	size_t n;

	if (json_object_object_get_ex(doc, "metrics", &v))	/* a comparison */
		return json_object_array_length(v) + 1;
	n = 3 + 2;	/* energy total/suspended/awake; leaks, aborted suspends */
	if (json_object_object_get_ex(doc, "energy", &e) &&
	    json_object_object_get_ex(e, "baseline_uW", &v) && v)
		n++;
	if (json_object_object_get_ex(doc, "wakeups", &v) &&
	    json_object_array_length(v))
		n += 2;
	if (json_object_object_get_ex(doc, "latency", &e) &&
	    json_object_object_get_ex(e, "n", &v) && json_object_get_int64(v) > 0)
		n += 2;
	if (json_object_object_get_ex(doc, "blockers", &v))
		n += json_object_array_length(v);
	return n;
}

static void check_lava(const char *t, size_t len, struct json_object *doc)
{
	const char **names = NULL;
	size_t *lens = NULL, n = 0;

	for (const char *p = t; p < t + len;) {
		const char *nl = memchr(p, '\n', (size_t)(t + len - p)), *name;
		size_t nlen;

		if (!nl || !lava_line(p, (size_t)(nl - p), &name, &nlen))
			abort();
		for (size_t i = 0; i < n; i++)
			if (lens[i] == nlen && !memcmp(names[i], name, nlen))
				abort();	/* a name twice */
		names = realloc(names, (n + 1) * sizeof(*names));
		lens = realloc(lens, (n + 1) * sizeof(*lens));
		if (!names || !lens)
			abort();
		names[n] = name;
		lens[n++] = nlen;
		p = nl + 1;
	}
	if (n != lava_figures(doc))
		abort();	/* a line injected, or one lost */
	free(names);
	free(lens);
}

/* UTF-8 of XML 1.0 characters; '<' and '&' only as markup and references */
static void check_xml(const char *t, size_t len)
{
	const unsigned char *s = (const unsigned char *)t;
	bool in_tag = false;

	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t k;

		if (c < 0x80) {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				abort();
			if (c == '<') {
				if (in_tag)
					abort();
				in_tag = true;
			} else if (c == '>') {
				in_tag = false;
			} else if (c == '&' && !memchr(s + i, ';', len - i < 8 ?
							len - i : 8)) {
				abort();
			}
			i++;
			continue;
		}
		k = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : 0;
		if (!k || c > 0xf4 || i + k >= len)
			abort();
		cp = c & (0x3f >> k);
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				abort();
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
		    cp == 0xfffe || cp == 0xffff)
			abort();
		i += k + 1;
	}
	if (in_tag)
		abort();
}

/* CSV: walk the cells (RFC 4180); none may begin like a formula */
static void check_csv(const char *t, size_t len)
{
	size_t i = 0;

	while (i < len) {
		const char *cell;
		size_t n;

		if (t[i] == '"') {
			/* quoted: the cell's first character follows */
			cell = t + i + 1;
			n = i + 1 < len ? 1 : 0;
			if (n && strchr("=+-@\t\r", *cell) && *cell)
				abort();	/* quoted cells are text */
			for (i++; i < len; i++) {
				if (t[i] == '"' && i + 1 < len && t[i + 1] == '"')
					i++;
				else if (t[i] == '"')
					break;
			}
			i++;	/* the closing quote */
		} else {
			cell = t + i;
			n = strcspn(cell, ",\n");
			if (n > len - i)
				n = len - i;
			if (n && strchr("=+@\t\r", *cell))
				abort();
			if (n && *cell == '-' && !is_number(cell, n, SIZE_MAX))
				abort();
			i += n;
		}
		if (i < len && (t[i] == ',' || t[i] == '\n'))
			i++;
		else if (i < len)
			abort();	/* text after a quoted cell */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum sbrig_export what[] = {
		SBRIG_EXPORT_PERFETTO, SBRIG_EXPORT_CSV_BLOCKERS,
		SBRIG_EXPORT_CSV_WAKEUPS, SBRIG_EXPORT_CSV_ENVELOPE,
		SBRIG_EXPORT_JUNIT, SBRIG_EXPORT_LAVA,
	};
	static int fd = -1;
	char path[64], *copy;

	if (fd < 0) {
		fd = memfd_create("fuzz.json", 0);
		if (fd < 0)
			abort();
		sbrig_log_set_sink(NULL, NULL, SBRIG_LOG_ERR);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	copy = strndup((const char *)data, size);	/* NUL-terminated */
	if (!copy)
		abort();
	for (size_t k = 0; k < sizeof(what) / sizeof(what[0]); k++) {
		char *text = NULL;
		size_t len = 0;

		if (sbrig_export_render(path, what[k], &text, &len)) {
			if (!*sbrig_errmsg() || text)
				abort();	/* refused without a reason */
			continue;
		}
		switch (what[k]) {
		case SBRIG_EXPORT_LAVA: {
			/* the renderer read it: json-c reads it the same */
			struct json_object *doc = json_tokener_parse(
				(const char *)copy);

			if (!doc)
				abort();
			check_lava(text, len, doc);
			json_object_put(doc);
			break;
		}
		case SBRIG_EXPORT_JUNIT:
			check_xml(text, len);
			break;
		case SBRIG_EXPORT_PERFETTO: {
			struct json_object *o = json_tokener_parse(text);

			if (!o)
				abort();
			json_object_put(o);
			break;
		}
		default:
			check_csv(text, len);
		}
		free(text);
	}
	free(copy);
	return 0;
}
