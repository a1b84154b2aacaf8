/* SPDX-License-Identifier: GPL-2.0 */
/*
 * csv.h - the one way the analysis and the history write a CSV text cell
 * (export-formats.md, "CSV"): RFC 4180 quoting, and OWASP's defence
 * against formula injection for spreadsheets that open the file.
 */
#ifndef SBRIG_ANALYSIS_CSV_H
#define SBRIG_ANALYSIS_CSV_H

#include <stdio.h>

/*
 * Write @s as one text cell (no separator). A cell that begins with '=',
 * '+', '-', '@', a tab or a carriage return (what a spreadsheet takes for
 * a formula) gets a "'" in front and is quoted; a cell holding ',', ';',
 * '"', a tab, CR or LF is quoted (a spreadsheet splitting at ';' keeps it
 * one cell too), quotes doubled. Numbers are not text cells: a negative
 * figure is written as it is.
 */
void an_csv_text(FILE *out, const char *s);

#endif /* SBRIG_ANALYSIS_CSV_H */
