// SPDX-License-Identifier: GPL-2.0
/*
 * util.c - small helpers shared by libsbrig's modules (internal.h).
 */
#include <string.h>

#include "internal.h"

void sbrig_path_stem(char *dst, size_t size, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strcspn(base, ".");
	if (n >= size)
		n = size - 1;
	memcpy(dst, base, n);
	dst[n] = '\0';
}
