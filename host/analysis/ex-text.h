/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ex-text.h - what the exporters of sbrig export write with (ex-text.c),
 * private to host/analysis/: a JSON string's inside, a UTF-8 code point,
 * a time in µs.
 */
#ifndef SBRIG_EX_TEXT_H
#define SBRIG_EX_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* @s as the inside of a JSON string (no quotes; what is not UTF-8, as
 * U+FFFD) */
void ex_json_str(FILE *out, const char *s);

/*
 * The code point that starts @s (@n > 0 bytes) and its length in *@len;
 * -1 when @s does not start with a whole UTF-8 sequence of a Unicode
 * scalar value (an overlong form, a surrogate, a cut sequence): *@len is
 * then 1, the byte to skip.
 */
int32_t ex_utf8_next(const unsigned char *s, size_t n, size_t *len);

/* a time in ns as µs, exactly: "1234.567" */
void ex_us(FILE *out, int64_t t_ns);

#endif /* SBRIG_EX_TEXT_H */
