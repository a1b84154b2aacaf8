// SPDX-License-Identifier: GPL-2.0
/*
 * csv.c - CSV text cells, see csv.h.
 *
 * OWASP's "CSV Injection" page: a cell that begins with = + - @, a tab or
 * a carriage return may be run as a formula by the spreadsheet that opens
 * the file (=cmd|' /C calc'!A0 starts a program in some). Such a cell is
 * written as "'=cmd|..." (quoted, with a leading apostrophe, which makes
 * it text); and since a separator or a quote inside a cell could start a
 * new cell that begins with one of them, every cell holding one is quoted.
 */
#include <stdbool.h>
#include <string.h>

#include "csv.h"

void an_csv_text(FILE *out, const char *s)
{
	bool formula = *s && strchr("=+-@\t\r", *s);

	if (!formula && !strpbrk(s, ",;\"\t\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	if (formula)
		fputc('\'', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}
