// SPDX-License-Identifier: GPL-2.0
/*
 * util.c - small helpers shared by libsbrig's modules (internal.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <sbrig/sbrig.h>

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

/* mkdir @dir unless it is a directory already */
static int mkdir_one(const char *dir, mode_t mode)
{
	struct stat st;
	int err;

	if (!mkdir(dir, mode))
		return 0;
	err = errno;
	if (err == EEXIST) {
		if (!stat(dir, &st) && S_ISDIR(st.st_mode))
			return 0;
		err = ENOTDIR;
	}
	return sbrig_set_error(-err, "%s: mkdir: %s", dir, strerror(err));
}

int sbrig_mkdir_p(const char *dir, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(dir);
	int ret;

	if (!len)
		return sbrig_set_error(-ENOENT, "an empty directory name");
	if (len >= sizeof(buf))
		return sbrig_set_error(-ENAMETOOLONG, "%.64s...: path too long",
				       dir);
	memcpy(buf, dir, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		ret = mkdir_one(buf, mode);
		*p = '/';
		if (ret < 0)
			return ret;
	}
	return mkdir_one(buf, mode);
}

const char *sbrig_term(const char *s, char *buf, size_t size)
{
	size_t k = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		size_t need = c < 0x20 || c == 0x7f ? 4 : c == '\\' ? 2 : 1;

		if (k + need + 4 > size) {	/* room for "..." and NUL */
			memcpy(buf + k, "...", 4);
			return buf;
		}
		if (need == 4)
			k += (size_t)snprintf(buf + k, size - k, "\\x%02x", c);
		else if (need == 2)
			k += (size_t)snprintf(buf + k, size - k, "\\\\");
		else
			buf[k++] = (char)c;
	}
	buf[k] = '\0';
	return buf;
}

int sbrig_rig_name_check(const char *name, char *why, size_t size)
{
	size_t len = strlen(name);

	if (!len) {
		snprintf(why, size, "it is empty");
		return -EINVAL;
	}
	if (len > SBRIG_RIG_NAME_MAX) {
		snprintf(why, size, "it has %zu characters, at most %d", len,
			 SBRIG_RIG_NAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '-')) {
			if (ch >= ' ' && ch < 0x7f)
				snprintf(why, size, "character %zu ('%c') is not "
					 "a letter, digit, '.', '_' or '-'",
					 i + 1, ch);
			else
				snprintf(why, size, "character %zu (byte 0x%02x) "
					 "is not a letter, digit, '.', '_' or "
					 "'-'", i + 1, ch);
			return -EINVAL;
		}
		if (i == 0 && (ch == '.' || ch == '-')) {
			snprintf(why, size, "it starts with '%c'", ch);
			return -EINVAL;
		}
		if (ch == '.' && name[i + 1] == '.') {
			snprintf(why, size, "characters %zu-%zu are '..'", i + 1,
				 i + 2);
			return -EINVAL;
		}
	}
	return 0;
}

int sbrig_mkdir_parent(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash || slash == path)
		return 0;
	len = (size_t)(slash - path);
	if (len >= sizeof(buf))
		return sbrig_set_error(-ENAMETOOLONG, "%.64s...: path too long",
				       path);
	memcpy(buf, path, len);
	buf[len] = '\0';
	return sbrig_mkdir_p(buf, mode);
}
