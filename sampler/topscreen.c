/* SPDX-License-Identifier: MIT */
/* topscreen.c: `top`'s full-screen view through ncurses -- alternate screen, keys, size, restore. */
#include "topscreen.h"
#include "topview.h"
#include <curses.h>
#include <term.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static SCREEN *scr;                      /* the ncurses screen, NULL when closed */
static volatile sig_atomic_t winched;    /* SIGWINCH seen since the last topscreen_resized */
static struct sigaction old_winch;       /* the handler before ours */
static int saved_err = -1;               /* the real stderr while ours goes to kept */
static FILE *kept;                       /* what was written to stderr meanwhile (a temporary file) */
static off_t kept_read;                  /* how much of it topscreen_warning has looked at */
static char last_warning[256];           /* its last complete line */

static void on_winch(int sig)
{
	(void)sig;
	winched = 1;
}

/* Send stderr to a temporary file while the view is open (a warning written to the terminal
 * would stay on the screen until the next full repaint). Nothing is lost: a file never blocks
 * and is written out at close. */
static void keep_stderr(void)
{
	if (!isatty(2) || !(kept = tmpfile())) return;
	fflush(stderr);
	saved_err = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (saved_err < 0 || dup2(fileno(kept), 2) < 0) {
		if (saved_err >= 0) close(saved_err);
		saved_err = -1;
		fclose(kept);
		kept = NULL;
	}
	kept_read = 0;
	last_warning[0] = 0;
}

static void give_back_stderr(void)
{
	if (saved_err < 0) return;
	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	saved_err = -1;
	char buf[4096];
	ssize_t n;
	for (off_t off = 0; (n = pread(fileno(kept), buf, sizeof buf, off)) > 0; off += n) {
		for (ssize_t w = 0, k; w < n; w += k)
			if ((k = write(2, buf + w, (size_t)(n - w))) < 0) {
				if (errno == EINTR) k = 0;
				else break;
			}
	}
	fclose(kept);
	kept = NULL;
}

int topscreen_open(char *why, size_t cap)
{
	int err = 0;
	const char *term = getenv("TERM");
	if (scr) return 0;
	/* Ask terminfo first: newterm on an unknown $TERM would print and exit */
	if (setupterm(term, 1, &err) != OK) {
		snprintf(why, cap, "TERM=%.40s: %s", term ? term : "", err == 0 ? "no terminfo entry" : "terminfo unreadable");
		return -1;
	}
	int cup = tigetstr("cup") != NULL && tigetstr("cup") != (char *)-1;
	del_curterm(cur_term);
	if (!cup) {
		snprintf(why, cap, "TERM=%.40s cannot move the cursor", term);
		return -1;
	}
	setlocale(LC_CTYPE, ""); /* UTF-8 names drawn as characters; numbers keep the C locale */
	/* ours before newterm: ncurses installs its own only where the default is (SIGINT and
	 * SIGTERM are record's already), and ours restarts system calls */
	struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, &old_winch);
	use_env(TRUE);
	use_tioctl(TRUE); /* the terminal's own size wins over $LINES/$COLUMNS */
	scr = newterm(term, stdout, stdin);
	if (!scr) {
		sigaction(SIGWINCH, &old_winch, NULL);
		snprintf(why, cap, "TERM=%.40s: ncurses could not start", term);
		return -1;
	}
	cbreak();                 /* keys one by one; Ctrl-C stays a signal */
	noecho();
	nodelay(stdscr, TRUE);    /* getch never waits: keys are read between samples */
	leaveok(stdscr, TRUE);
	curs_set(0);
	keep_stderr();
	winched = 0;
	return 0;
}

int topscreen_active(void)
{
	return scr != NULL;
}

int topscreen_key(void)
{
	if (!scr) return -1;
	int ch = getch();
	return ch == ERR ? -1 : ch;
}

int topscreen_resized(void)
{
	if (!scr || !winched) return 0;
	winched = 0;
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) resizeterm(ws.ws_row, ws.ws_col);
	return 1;
}

void topscreen_size(int *rows, int *cols)
{
	*rows = scr ? LINES : 0;
	*cols = scr ? COLS : 0;
}

const char *topscreen_warning(void)
{
	if (!kept) return last_warning;
	char buf[4096];
	ssize_t n;
	fflush(stderr);
	while ((n = pread(fileno(kept), buf, sizeof buf - 1, kept_read)) > 0) {
		buf[n] = 0;
		char *end = memrchr(buf, '\n', (size_t)n);
		if (!end) {                     /* a partial line: wait for its end, unless it is huge */
			if (n < (ssize_t)sizeof buf - 1) break;
			end = buf + n - 1;
		}
		*end = 0;
		char *start = memrchr(buf, '\n', (size_t)(end - buf));
		snprintf(last_warning, sizeof last_warning, "%s", start ? start + 1 : buf);
		kept_read += end - buf + 1;
	}
	return last_warning;
}

void topscreen_clear(void)
{
	if (scr) erase();
}

void topscreen_put(int y, const char *text, size_t len, int style)
{
	if (!scr || y < 0 || y >= LINES) return;
	size_t cut = top_cut(text, len, COLS);
	int attr = style == TS_BOLD ? A_BOLD : style == TS_BAR ? A_REVERSE : A_NORMAL;
	attrset(attr);
	mvaddnstr(y, 0, text, (int)cut);
	if (style == TS_BAR) {             /* the bar spans the width */
		int cy, cx;
		getyx(stdscr, cy, cx);
		for (; cy == y && cx < COLS; cx++) addch(' ');
	}
	attrset(A_NORMAL);
}

void topscreen_show(void)
{
	if (scr) refresh();
}

void topscreen_close(void)
{
	if (!scr) return;
	endwin();                 /* the normal screen back, modes and cursor restored */
	delscreen(scr);
	scr = NULL;
	sigaction(SIGWINCH, &old_winch, NULL);
	give_back_stderr();
}
