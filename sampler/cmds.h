/* SPDX-License-Identifier: MIT */
/* cmds.h: the subcommands main() dispatches to; each prints its own messages and returns 0 or
 * the ERR_* code of what failed (main turns it into the exit code). */
#ifndef CMDS_H
#define CMDS_H
#include "cli.h"
#include <stdio.h>

/* `gdbsample [record]`: sample until -d or a signal, then write the result (cmd_record.c). */
int cmd_record(const struct opts *o);
/* `gdbsample dump`: stop once, print every vCPU's stack, detach (cmd_dump.c). */
int cmd_dump(const struct opts *o);
/* `gdbsample top`: a live view until q or a signal (cmd_top.c). */
int cmd_top(const struct opts *o);
/* `gdbsample count FUNC...`: calls counted at entry breakpoints until -d or a signal (cmd_count.c). */
int cmd_count(const struct opts *o);

/* How `top` draws: what the terminal takes, decided from its facts (cmd_top.c). */
struct top_screen {
	int curses; /* 1: the full-screen view (a terminal, TERM set and not "dumb"); 0: plain frames appended */
	int cols;   /* characters a plain line is cut to (0: not cut) */
	int rows;   /* the terminal's height (0: unknown or not a full screen; ncurses reads it itself) */
};
/* tty: stdout is a terminal; ws_cols/ws_rows its TIOCGWINSZ size (0 unknown); term, columns and
 * lines: $TERM, $COLUMNS and $LINES (may be NULL). */
void top_screen_decide(struct top_screen *s, int tty, const char *term, int ws_cols, int ws_rows,
		       const char *columns, const char *lines);
/* Write one plain frame (len bytes of text, lines ending in \n) to out, after a blank line, each
 * line cut to s->cols characters. */
void top_emit(FILE *out, const struct top_screen *s, const char *text, size_t len);

#endif
