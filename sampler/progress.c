/* SPDX-License-Identifier: MIT */
/* progress.c: `record`'s live status line on a terminal -- its text and drawing it in place. */
#include "progress.h"
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int shown; /* a status line is on the terminal (erase it before other output) */

size_t progress_format(char *out, size_t cap, int64_t elapsed_ns, uint64_t samples, uint64_t stops,
		       double pause_p50_us, uint64_t dropped, int cols)
{
	if (!cap) return 0;
	double s = elapsed_ns > 0 ? (double)elapsed_ns / 1e9 : 0.0;
	int n = snprintf(out, cap, "gdbsample: recording %.1f s: %llu samples, %.1f Hz, pause p50 %.0f us, %llu dropped",
			 s, (unsigned long long)samples, s > 0 ? (double)stops / s : 0.0, pause_p50_us,
			 (unsigned long long)dropped);
	size_t len = n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
	if (cols > 0 && len > (size_t)cols - 1) len = (size_t)cols - 1; /* the last column would wrap */
	out[len] = 0;
	return len;
}

int progress_wanted(FILE *f, int quiet)
{
	const char *term = getenv("TERM");
	return !quiet && isatty(fileno(f)) && !(term && !strcmp(term, "dumb"));
}

int progress_columns(FILE *f)
{
	struct winsize ws;
	return ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

void progress_draw(FILE *f, const char *text)
{
	fprintf(f, "\r%s\033[K", text); /* \033[K: clear what a longer line left after it */
	fflush(f);
	shown = 1;
}

void progress_erase(FILE *f)
{
	if (!shown) return;
	fputs("\r\033[K", f);
	fflush(f);
	shown = 0;
}
