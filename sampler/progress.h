/* SPDX-License-Identifier: MIT */
/* progress.h: `record`'s live status line on a terminal -- its text (a pure function) and drawing
 * it in place on stderr, at most PROGRESS_PERIOD_NS apart, erased before anything else prints. */
#ifndef PROGRESS_H
#define PROGRESS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROGRESS_PERIOD_NS 250000000LL /* redrawn at most 4 times a second */

/* The status line for a run elapsed_ns long: vCPU samples kept, stops (the achieved rate is
 * stops per second, as in the summary), the pause p50 in microseconds, dropped samples. Cut to
 * cols - 1 characters when cols > 0, so the terminal never wraps it (a wrapped line cannot be
 * redrawn with \r). Writes at most cap bytes, NUL included; returns the length. No I/O. */
size_t progress_format(char *out, size_t cap, int64_t elapsed_ns, uint64_t samples, uint64_t stops,
		       double pause_p50_us, uint64_t dropped, int cols);
/* 1 if the status line may be drawn on stream f: not quiet, f a terminal, TERM not "dumb". */
int progress_wanted(FILE *f, int quiet);
/* The width of the terminal on f in columns, 0 if unknown. */
int progress_columns(FILE *f);
/* Draw text over the status line on f: \r, the text, clear to the end of the line. */
void progress_draw(FILE *f, const char *text);
/* Erase the status line from f if one is drawn (before a warning, the report or the summary). */
void progress_erase(FILE *f);

#endif
