/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: exports of the analysis's documents (libsbrig-analysis)
 *
 * report.json (report-format.md) and compare.json (compare-format.md) in
 * the formats other programs read: a Perfetto / Chrome trace, CSV tables,
 * JUnit XML, LAVA test-case lines. Every export is rendered from the JSON
 * document alone (never from a capture), after the document is checked
 * against its schema; host/doc/export-formats.md is the contract.
 *
 * Errors follow libsbrig's convention (sbrig.h): 0 / -errno, with
 * sbrig_errmsg() naming the file and the field.
 */
#ifndef SBRIG_EXPORT_H
#define SBRIG_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * enum sbrig_export - what to render
 * @SBRIG_EXPORT_PERFETTO: a report as Chrome trace JSON (Perfetto)
 * @SBRIG_EXPORT_CSV_BLOCKERS: a report's blockers as CSV
 * @SBRIG_EXPORT_CSV_WAKEUPS: a report's wakeups as CSV
 * @SBRIG_EXPORT_CSV_ENVELOPE: a report's finest power envelope as CSV
 * @SBRIG_EXPORT_JUNIT: a comparison as JUnit XML
 * @SBRIG_EXPORT_LAVA: a report's headline figures, or a comparison's
 *	verdicts, as lava-test-case lines
 */
enum sbrig_export {
	SBRIG_EXPORT_PERFETTO,
	SBRIG_EXPORT_CSV_BLOCKERS,
	SBRIG_EXPORT_CSV_WAKEUPS,
	SBRIG_EXPORT_CSV_ENVELOPE,
	SBRIG_EXPORT_JUNIT,
	SBRIG_EXPORT_LAVA,
};

/**
 * sbrig_export_render() - render a document as @what
 * @json_path: a report.json, or for SBRIG_EXPORT_JUNIT a compare.json,
 *	for SBRIG_EXPORT_LAVA either
 * @what: the format
 * @text: out: the text, NUL-terminated, which the caller frees (free())
 * @len: out: its length
 *
 * Return: 0, or -errno with sbrig_errmsg() (-EINVAL: the file is not a
 * document of a schema and version this code reads, naming the field).
 */
int sbrig_export_render(const char *json_path, enum sbrig_export what,
			char **text, size_t *len);

/**
 * sbrig_export_write() - render a document as @what onto a stream
 * @json_path: as for sbrig_export_render()
 * @what: the format
 * @out: where the text goes, as it is made (the caller's; not closed):
 *	the output is never whole in memory
 *
 * The document is read and checked first (nothing is written when it is
 * refused); a write error is @out's (ferror()), for the caller to report.
 *
 * Return: 0, or -errno with sbrig_errmsg() as sbrig_export_render().
 */
int sbrig_export_write(const char *json_path, enum sbrig_export what,
		       FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_EXPORT_H */
