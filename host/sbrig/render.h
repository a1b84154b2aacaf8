/* SPDX-License-Identifier: GPL-2.0 */
/*
 * render.h - `sbrig render`: one entry of sbrig's command table (main.c).
 */
#ifndef SBRIG_CLI_RENDER_H
#define SBRIG_CLI_RENDER_H

struct command;

/* the table entry's texts */
extern const char render_args[], render_summary[], render_help[];

/**
 * cmd_render() - sbrig render REPORT.json [-o FILE]
 * @c: its command table entry (unused: the texts above are its own)
 * @argc: arguments from "render" on
 * @argv: the arguments
 *
 * Return: the exit status: 0 ok, 1 the rendering failed, 2 usage error.
 */
int cmd_render(const struct command *c, int argc, char **argv);

#endif /* SBRIG_CLI_RENDER_H */
