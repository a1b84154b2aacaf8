// SPDX-License-Identifier: GPL-2.0
/*
 * ex-text.c - what the exporters write with, see ex-text.h.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ex-text.h"

void ex_json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n) {
		size_t len;
		int32_t c = ex_utf8_next(p, n, &len);

		if (c < 0)
			fputs("\\ufffd", out);	/* not UTF-8 */
		else if (c == '"' || c == '\\')
			fprintf(out, "\\%c", (char)c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", (unsigned int)c);
		else
			fwrite(p, 1, len, out);
		p += len;
		n -= len;
	}
}

int32_t ex_utf8_next(const unsigned char *s, size_t n, size_t *len)
{
	unsigned char c = s[0];
	size_t need;
	int32_t cp, min;

	*len = 1;
	if (c < 0x80)
		return c;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return -1;	/* a continuation byte, 0xc0, 0xc1, 0xf5.. */
	}
	if (n <= need)
		return -1;
	for (size_t i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = need + 1;
	return cp;
}

void ex_us(FILE *out, int64_t t_ns)
{
	uint64_t u = t_ns < 0 ? -(uint64_t)t_ns : (uint64_t)t_ns;

	fprintf(out, "%s%" PRIu64 ".%03" PRIu64, t_ns < 0 ? "-" : "",
		u / 1000, u % 1000);
}
