/* SPDX-License-Identifier: MIT */
/* topscreen.h: `top`'s full-screen view through ncurses -- the alternate screen, keys, the
 * terminal's size, and the terminal given back as it was on every way out. */
#ifndef TOPSCREEN_H
#define TOPSCREEN_H
#include <stddef.h>

enum { TS_PLAIN, TS_BOLD, TS_BAR };  /* a line's style; TS_BAR: reverse video, the whole width */

/* Take the terminal on stdout (keys from stdin): the alternate screen, no echo, keys one by one
 * without waiting, the cursor hidden; a SIGWINCH handler. While open, what is written to stderr
 * (when it is a terminal) is kept, not drawn over the view: topscreen_warning shows its last
 * line, topscreen_close writes it all out. -1 when the terminal cannot do it ($TERM unknown to
 * terminfo, no cursor addressing): why in why, nothing changed. */
int topscreen_open(char *why, size_t cap);
/* 1 if the view is open. */
int topscreen_active(void);
/* The next key pressed, or -1 if none is waiting (never blocks). */
int topscreen_key(void);
/* 1 once after the terminal changed size (the new size then holds). */
int topscreen_resized(void);
/* The screen's size now. */
void topscreen_size(int *rows, int *cols);
/* The last line written to stderr since the view opened, or "" (a NUL-terminated copy). */
const char *topscreen_warning(void);
/* Draw a frame: clear, put lines (y from 0, cut to the width, a line below the screen is
 * dropped), show. */
void topscreen_clear(void);
void topscreen_put(int y, const char *text, size_t len, int style);
void topscreen_show(void);
/* Give the terminal back (normal screen, modes, cursor), then write what stderr kept to it.
 * Idempotent; safe when never opened. */
void topscreen_close(void);

#endif
