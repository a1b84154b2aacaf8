// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_config - libFuzzer harness of the rig description loader
 * (sbrig_config_load(), lib/config.c with libinih) and its overrides.
 *
 * The input is a config file, handed over as a memfd (the loader takes a
 * path: /proc/self/fd/N, a regular file). A loaded config then gets each
 * line after a "\n--\n" marker as a "section.key=value" override. Every
 * failure must come with a message naming the file (or the override).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sbrig/config.h>
#include <sbrig/sbrig.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sbrig_config cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	const uint8_t *mark = memmem(data, size, "\n--\n", 4);
	size_t conf_len = mark ? (size_t)(mark - data) + 1 : size;
	char path[64];

	if (fd < 0) {
		fd = memfd_create("fuzz.conf", 0);
		if (fd < 0)
			abort();
		sbrig_log_set_sink(NULL, NULL, SBRIG_LOG_ERR);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, conf_len, 0) != (ssize_t)conf_len)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (sbrig_config_load(path, &cfg)) {
		if (strncmp(sbrig_errmsg(), path, strlen(path)))
			abort();	/* an error without its location */
		return 0;
	}
	if (strlen(cfg.sha256) != 64)
		abort();
	if (mark) {
		const char *p = (const char *)mark + 4, *end = (const char *)data + size;

		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
			char *a = strndup(p, n);

			if (!a)
				abort();
			if (sbrig_config_set(&cfg, a) &&
			    strncmp(sbrig_errmsg(), "override '", 10))
				abort();
			free(a);
			p += n + 1;
		}
	}
	return 0;
}
