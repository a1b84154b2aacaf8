/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cli.h - what sbrig's commands share: the command table's entry, exit
 * codes, usage errors and talking to the daemon (client.c). main.c holds
 * the table and the simple commands that talk to the daemon; the target
 * commands (target.c), status (status.c) and each offline command have a
 * file of their own.
 */
#ifndef SBRIG_CLI_H
#define SBRIG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DEFAULT_SOCKET "/run/sbrig/sbrigd.sock"
/* where the daemons' sockets are: NAME.sock for the rig NAME (sbrigd@NAME) */
#define DEFAULT_RUN_DIR "/run/sbrig"

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

/* ---- client.c: talking to the daemon ------------------------------------ */

/*
 * The daemon's socket (-s, -r, $SBRIG_SOCKET, $SBRIG_RIG, DEFAULT_SOCKET)
 * and the directory of the rigs' sockets (--run-dir, $SBRIG_RUN_DIR,
 * DEFAULT_RUN_DIR); set by main().
 */
extern const char *sock_path;
extern const char *run_dir;
/* Standard error is a terminal: live progress goes there. */
extern bool tty;

/**
 * struct reply - how a command renders the daemon's answer
 * @progress: called for each "progress ..." line (text after the verb)
 * @data: called for each "data ..." line (default: print it)
 * @final: the text after "ok"/"err N" (filled in)
 * @err: errno of an "err" answer (0 for "ok")
 * @ctx: for the callbacks
 * @timeout_ms: the longest wait for the connection and the whole answer
 *	(0: no limit; a long request waits as long as it runs)
 * @deadline_ns: with @timeout_ms, when the wait ends (sbrig_now_ns()),
 *	shared by requests made together; 0: @timeout_ms after the start
 * @quiet: do not print why the daemon could not be reached: @error says
 * @error: why the daemon could not be reached (EXIT_DAEMON)
 */
struct reply {
	void (*progress)(const char *text, void *ctx);
	void (*data)(const char *text, void *ctx);
	char final[4096];
	int err;
	void *ctx;
	int timeout_ms;
	int64_t deadline_ns;
	bool quiet;
	char error[512];
	/* the daemon's socket (NULL: sock_path) */
	const char *sock;
	/* leave SIGINT/SIGTERM alone (a request on a thread of its own) */
	bool no_signals;
};

/*
 * Send @line (and @body, @nbody bytes) and read the answer until its final
 * line; Ctrl-C sends "stop" and waits (30 s at most) for the final answer.
 * Return: EXIT_OK, EXIT_FAIL ("err"), or EXIT_DAEMON.
 */
int request(const char *line, const char *body, size_t nbody,
	    struct reply *r);
/* Append @arg to @line, quoted if needed. Return -1 if it does not fit. */
int add_arg(char *line, size_t size, const char *arg);
/*
 * The next "key=value" of an answer's text at *@p (a value may be
 * double-quoted with \" and \\ escapes). False at the end or at text that
 * is not a key=value word.
 */
bool kv_next(const char **p, char *key, size_t ksize, char *val,
	     size_t vsize);
/* Find @key in an answer's "key=value ..." text; copy its value. */
bool kv_get(const char *text, const char *key, char *out, size_t size);
/* Print "key=value ..." as "key: value" lines to @f. */
void print_kv(FILE *f, const char *text);
/*
 * A capture's summary (capture, run, latency): on stdout as print_kv(),
 * and on stderr a warning for what the status does not say (the sensor's
 * tail lost at the stop: tail_lost_ms).
 */
void print_summary(const char *what, const char *final);
/* Only the warning of print_summary() (latency prints its own figures). */
void warn_tail_lost(const char *what, const char *final);
/*
 * Report an "err" answer to request @what (ret EXIT_FAIL; other values are
 * returned as they are): the message on stderr; a capture's summary on
 * stdout. Return @ret.
 */
int fail(struct reply *r, int ret, const char *what);
/* A positive DURATION for @what of command @cmd, or a usage error. */
int check_duration(const char *cmd, const char *what, const char *s,
		   int64_t *ns);
/* An absolute path for @dir (which need not exist yet). 0 or -errno. */
int abs_dir(const char *dir, char *out, size_t size);

/* ---- target.c, status.c ------------------------------------------------- */

extern const char target_args[], target_help[];
int cmd_target(const struct command *c, int argc, char **argv);
int cmd_hold(const struct command *c, int argc, char **argv);
extern const char status_args[], status_help[];
int cmd_status(const struct command *c, int argc, char **argv);

/* analyze.c */
extern const char analyze_help[];
int cmd_analyze(const struct command *c, int argc, char **argv);

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
