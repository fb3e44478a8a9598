/* SPDX-License-Identifier: MIT */
/* test_top.c: how `top` draws -- full screen (ncurses) only on a terminal that is not TERM=dumb;
 * plain frames otherwise, every line cut to the terminal's width (issue 22: it ignored it). */
#include "check.h"
#include "../../sampler/cmds.h"
#include <stdlib.h>

/* top_emit of text on s, into out (NUL-terminated). */
static void emit(const struct top_screen *s, const char *text, char *out, size_t cap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	top_emit(f, s, text, strlen(text));
	fclose(f);
	snprintf(out, cap, "%s", buf);
	free(buf);
}

void test_top(void)
{
	struct top_screen s;
	top_screen_decide(&s, 1, "xterm-256color", 100, 30, NULL, NULL);
	CHECK(s.curses && s.cols == 100 && s.rows == 30);
	top_screen_decide(&s, 1, "dumb", 100, 30, NULL, NULL);
	CHECK(!s.curses && s.cols == 100 && s.rows == 0);
	top_screen_decide(&s, 1, NULL, 0, 0, NULL, NULL);        /* no TERM: nothing to trust */
	CHECK(!s.curses && s.cols == 80);
	top_screen_decide(&s, 1, "", 0, 0, "132", "50");          /* no size from the tty: $COLUMNS, $LINES */
	CHECK(!s.curses && s.cols == 132);
	top_screen_decide(&s, 1, "vt100", 0, 0, "132", "50");
	CHECK(s.curses && s.cols == 132 && s.rows == 50);
	top_screen_decide(&s, 1, "vt100", 0, 0, " 132x", "-1");    /* garbage: the defaults */
	CHECK(s.curses && s.cols == 80 && s.rows == 24);
	top_screen_decide(&s, 0, "xterm", 0, 0, NULL, NULL);      /* a pipe: appended, not cut */
	CHECK(!s.curses && s.cols == 0 && s.rows == 0);

	char out[512];
	struct top_screen narrow = { 0, 10, 0 };                  /* a plain frame is never cut in height */
	emit(&narrow, "0123456789abcdef\nshort\nthird line\nfourth\n", out, sizeof out);
	CHECK_STR(out, "\n0123456789\nshort\nthird line\nfourth\n");
	struct top_screen dumb = { 0, 4, 0 };
	emit(&dumb, "\xc3\xa9t\xc3\xa9s\xc3\xa9\nab\n", out, sizeof out); /* UTF-8: characters, not bytes */
	CHECK_STR(out, "\n\xc3\xa9t\xc3\xa9s\nab\n");
	CHECK(strchr(out, '\033') == NULL);
	struct top_screen pipe = { 0, 0, 0 };
	emit(&pipe, "a long line that stays whole\n", out, sizeof out);
	CHECK_STR(out, "\na long line that stays whole\n");
}
