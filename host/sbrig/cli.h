/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cli.h - what sbrig's commands share: the command table's entry, exit
 * codes and usage errors. main.c holds the table and the commands that
 * talk to the daemon; each offline command has a file of its own.
 */
#ifndef SBRIG_CLI_H
#define SBRIG_CLI_H

#include <stdio.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_DAEMON = 3 };

/* sbrig compare's own (compare.c, documented in its help and sbrig(1)) */
enum {
	EXIT_REGRESSED = 1,	/* a metric regressed */
	EXIT_INCONCLUSIVE = 4,	/* none regressed, one is inconclusive */
	EXIT_NOT_COMPARABLE = 5, /* different scenarios or rigs */
	EXIT_BAD_INPUT = 6,	/* a run cannot be read or analysed */
	EXIT_WRITE = 7,		/* compare.json cannot be written */
};

/**
 * struct command - one sbrig command
 * @name: the word on the command line
 * @args: its synopsis
 * @summary: one line for sbrig --help
 * @help: the text of sbrig NAME --help
 * @fn: runs it with argv[0] = @name; returns the exit status
 */
struct command {
	const char *name;
	const char *args;
	const char *summary;
	const char *help;
	int (*fn)(const struct command *cmd, int argc, char **argv);
};

/* Print "Usage: sbrig NAME ARGS" and the help text. */
void command_help(const struct command *c, FILE *f);
/* Report a usage error of command @cmd; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* analyze.c */
extern const char analyze_help[];
int cmd_analyze(const struct command *c, int argc, char **argv);
/* Create @dir and its parents (mode 0755). 0 or -errno. */
int mkdir_p(const char *dir);

/* compare.c */
extern const char compare_args[], compare_help[];
int cmd_compare(const struct command *c, int argc, char **argv);

/* history.c (its exit codes: those of compare above, see its help) */
extern const char history_args[], history_help[];
int cmd_history(const struct command *c, int argc, char **argv);

/* export.c */
extern const char export_help[];
int cmd_export(const struct command *c, int argc, char **argv);

#endif /* SBRIG_CLI_H */
