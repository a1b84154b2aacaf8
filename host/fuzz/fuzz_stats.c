// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_stats - libFuzzer harness of the parsers of the module's debugfs
 * text (lib/stats.c): each line of the input through both
 * sbrig_stats_parse_line() (suspend_blockers) and
 * sbrig_event_parse_line() (suspend_blocker_events).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/records.h>
#include <sbrig/stats.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct sbrig_blocker_stats row;
	struct sbrig_event ev;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		char *line = malloc(n + 1);

		if (!line)
			abort();
		memcpy(line, p, n);
		line[n] = '\0';	/* a NUL inside ends the C string early */
		if (sbrig_stats_parse_line(line, &row) == 0 &&
		    strlen(row.name) >= sizeof(row.name))
			abort();
		memset(&ev, 0, sizeof(ev));
		if (sbrig_event_parse_line(line, &ev) == 0 &&
		    (strlen(ev.arg) >= sizeof(ev.arg) || !ev.type[0]))
			abort();
		free(line);
		p += n;
	}
	return 0;
}
