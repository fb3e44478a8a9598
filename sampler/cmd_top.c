/* SPDX-License-Identifier: MIT */
/* cmd_top.c: `gdbsample top` -- a live view of the hottest functions and chains: full screen
 * (ncurses, keys) on a terminal, plain frames one after another on a pipe or a dumb terminal. */
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "cli.h"
#include "cmds.h"
#include "err.h"
#include "output.h"
#include "record.h"
#include "session.h"
#include "textnum.h"
#include "topscreen.h"
#include "topview.h"
#include "writer.h"

#define TOP_FUNCS 15            /* function rows of a plain frame */
#define TOP_CHAINS 4            /* chains shown */
#define TOP_KEYS_NS 50000000LL  /* the full-screen view looks for keys this often (between samples) */

static const char title[] = "  %self  %total      self     total  function";
static const char keys_help[] = "keys: q quit  s/t sort by self/total  c chains  p pause";

/* What one refresh showed: kept whole, so a paused view redraws (re-sorted, resized) from it. */
struct frame {
	char head[2][320];          /* the header's two lines (the second without the sort) */
	char lost[96];              /* ", N frames not counted ..." or "" */
	struct toprow *rows;        /* every function, sorted by the state's column */
	size_t n, cap;              /* rows used / allocated */
	uint64_t samples;           /* the shares' denominator */
	char *chains;               /* the chains' text (the report writer's) */
	size_t chains_len;
};

struct top {
	struct session *ss;         /* the session */
	struct top_screen scr;      /* plain frames: how to cut them (top_screen_decide) */
	int full;                   /* 1: the full-screen view is open (topscreen.c) */
	struct top_state st;        /* sort, chains, pause: what the keys chose */
	struct topview v;           /* counts per function */
	struct writer *chains;      /* a report writer fed the same samples, into cbuf */
	FILE *cbuf;                 /* its text (open_memstream) */
	char *ctext;
	size_t clen;
	FILE *buf;                  /* a plain frame is drawn here, then cut to the screen */
	char *text;
	size_t len;
	struct frame f;             /* the last refresh */
	int64_t interval_ns;        /* --interval */
	int64_t next_draw;          /* when the full-screen view refreshes next (pace_now) */
	int err;                    /* out of memory while refreshing */
	char errstr[128];
	struct writer fan;          /* forwards each sample to the counts and the chains */
};

void top_screen_decide(struct top_screen *s, int tty, const char *term, int ws_cols, int ws_rows,
		       const char *columns, const char *lines)
{
	uint64_t v;
	s->curses = tty && term && *term && strcmp(term, "dumb") != 0;
	s->cols = ws_cols > 0 ? ws_cols : columns && !textnum_decz(columns, 100000, &v) && v ? (int)v : tty ? 80 : 0;
	s->rows = !s->curses ? 0 : ws_rows > 0 ? ws_rows : lines && !textnum_decz(lines, 100000, &v) && v ? (int)v : 24;
}

void top_emit(FILE *out, const struct top_screen *s, const char *text, size_t len)
{
	fputs("\n", out); /* frames one after another, a blank line between */
	for (const char *p = text, *end = text + len; p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		fwrite(p, 1, top_cut(p, n, s->cols), out);
		fputc('\n', out);
		p += n + 1;
	}
	fflush(out);
}

static int fan_add(struct writer *w, const struct sample *s)
{
	struct top *t = (struct top *)((char *)w - offsetof(struct top, fan));
	if (topview_add(&t->v, s) < 0) {
		ERR_SET(w, ERR_SYS, "out of memory");
		return -1;
	}
	if (t->chains->add(t->chains, s) < 0) {
		ERR_SET(w, t->chains->err, "%s", t->chains->errstr);
		return -1;
	}
	return 0;
}

/* One function's row: shares of samples, counts, name. */
static void row_line(char *out, size_t cap, const struct toprow *r, uint64_t samples)
{
	double d = samples ? (double)samples : 1.0;
	snprintf(out, cap, "  %5.1f  %6.1f  %8llu  %8llu  %s", 100.0 * (double)r->self / d, 100.0 * (double)r->total / d,
		 (unsigned long long)r->self, (unsigned long long)r->total, r->name);
}

/* Take this moment's counts into t->f: header, every function sorted, the chains' text. */
static int refresh(struct top *t, const struct stats *st)
{
	struct frame *f = &t->f;
	double secs = (double)(st->end_ns - st->start_ns) / 1e9;
	snprintf(f->head[0], sizeof f->head[0], "gdbsample top: %d vCPUs, %.0f Hz achieved of %d requested, "
		 "pause p50 %.0f us p99 %.0f us, guest stopped %.2f%%", t->ss->ncpu, secs > 0 ? (double)st->stops / secs : 0.0,
		 t->ss->o->rate, stats_pause_pct(st, 50), stats_pause_pct(st, 99),
		 secs > 0 ? 100.0 * (double)st->stopped_ns / 1e9 / secs : 0.0);
	f->lost[0] = 0;
	if (t->v.lost)
		snprintf(f->lost, sizeof f->lost, ", %llu frames not counted (more than %d functions)",
			 (unsigned long long)t->v.lost, TOPVIEW_MAX_FNS);
	snprintf(f->head[1], sizeof f->head[1], "%llu samples, %llu idle%s, %.0f s", (unsigned long long)t->v.samples,
		 (unsigned long long)st->idle, t->ss->o->idle ? "" : " (hidden)", secs);
	if (f->cap < t->v.fns.n) {
		struct toprow *nr = realloc(f->rows, t->v.fns.n * sizeof *nr);
		if (!nr) return -1;
		f->rows = nr;
		f->cap = t->v.fns.n;
	}
	f->n = topview_rows(&t->v, f->rows, f->cap);
	toprows_sort(f->rows, f->n, t->st.sort);
	f->samples = t->v.samples;
	fseeko(t->cbuf, 0, SEEK_SET);
	fprintf(t->cbuf, "hottest chains:\n");
	struct run_info ri = { t->ss->ncpu, t->ss->o->rate, st->end_ns - st->start_ns, st->kept, st->dropped,
			       st->idle, NULL, NULL, NULL, NULL, NULL };
	if (t->chains->finish(t->chains, &ri) < 0 || fflush(t->cbuf)) return -1;
	char *c = realloc(f->chains, t->clen + 1);
	if (!c) return -1;
	memcpy(c, t->ctext, t->clen + 1);
	f->chains = c;
	f->chains_len = t->clen;
	return 0;
}

/* The header's second line: the counts, then what the state says now (a paused view re-sorted
 * says so). */
static void head1(const struct top *t, char *out, size_t cap)
{
	snprintf(out, cap, "%s, sorted by %s%s%s", t->f.head[1], t->st.sort == TOP_BY_SELF ? "self" : "total",
		 t->f.lost, t->st.paused ? "  [PAUSED: sampling goes on]" : "");
}

/* A plain frame: the header, TOP_FUNCS rows, the chains; appended to stdout. */
static void draw_plain(struct top *t)
{
	FILE *out = t->buf;
	char line[512];
	fseeko(out, 0, SEEK_SET);
	head1(t, line, sizeof line);
	fprintf(out, "%s\n%s\n\n%s\n", t->f.head[0], line, title);
	for (size_t i = 0; i < t->f.n && i < TOP_FUNCS; i++) {
		row_line(line, sizeof line, &t->f.rows[i], t->f.samples);
		fprintf(out, "%s\n", line);
	}
	fprintf(out, "\n%s", t->f.chains);
	if (fflush(out) == 0) top_emit(stdout, &t->scr, t->text, t->len);
}

static int count_lines(const char *s, size_t n)
{
	int k = 0;
	for (size_t i = 0; i < n; i++) k += s[i] == '\n';
	return k + (n && s[n - 1] != '\n');
}

/* The full screen from t->f: header, keys, a warning if one came, the rows that fit, the chains. */
static void draw_full(struct top *t)
{
	int rows, cols, y = 0;
	char line[512];
	topscreen_size(&rows, &cols);
	topscreen_clear();
	topscreen_put(y++, t->f.head[0], strlen(t->f.head[0]), TS_BOLD);
	head1(t, line, sizeof line);
	topscreen_put(y++, line, strlen(line), TS_PLAIN);
	topscreen_put(y++, keys_help, strlen(keys_help), TS_PLAIN);
	const char *w = topscreen_warning();
	if (*w) topscreen_put(y++, w, strlen(w), TS_BOLD);
	struct top_layout l = top_layout(rows, y, t->f.n, t->st.chains, count_lines(t->f.chains, t->f.chains_len));
	if (rows > y) topscreen_put(y++, title, strlen(title), TS_BAR);
	for (int i = 0; i < l.fn_rows; i++) {
		row_line(line, sizeof line, &t->f.rows[i], t->f.samples);
		topscreen_put(y++, line, strlen(line), TS_PLAIN);
	}
	y++;                                   /* a blank line before the chains */
	const char *p = t->f.chains, *end = p + t->f.chains_len;
	for (int i = 0; i < l.chain_lines && p < end; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		topscreen_put(y++, p, n, TS_PLAIN);
		p += n + 1;
	}
	topscreen_show();
}

/* Called by record_loop between samples: keys and size (full screen), refreshes every interval. */
static void tick(void *arg, const struct stats *st, const struct pace *p)
{
	struct top *t = arg;
	(void)p;
	if (!t->full) { /* plain frames: every interval */
		if (refresh(t, st) < 0) goto oom;
		draw_plain(t);
		return;
	}
	int now_due = st->end_ns >= t->next_draw, redraw = topscreen_resized(), ch;
	while ((ch = topscreen_key()) >= 0) {
		enum top_sort before = t->st.sort;
		switch (top_key(&t->st, ch)) {
		case TOPK_QUIT: record_stop = 1; return;  /* the loop ends as on SIGINT: resume, detach */
		case TOPK_RESUME: now_due = 1; break;
		case TOPK_PAUSE: redraw = 1; break;
		case TOPK_REDRAW:
			if (t->st.sort != before && t->st.paused) toprows_sort(t->f.rows, t->f.n, t->st.sort);
			else if (t->st.sort != before) now_due = 1;
			redraw = 1;
			break;
		case TOPK_NONE: break;
		}
	}
	if ((now_due && !t->st.paused) || !t->f.chains) { /* (a pause before the first frame freezes that) */
		if (refresh(t, st) < 0) goto oom;
		t->next_draw = st->end_ns + t->interval_ns;
		redraw = 1;
	}
	if (redraw) draw_full(t);
	return;
oom:
	ERR_SET(t, ERR_SYS, "out of memory drawing the view");
	record_stop = 1;
}

/* Plain frames into a pipe whose reader has gone (`| head`): the view ends, as on q. */
static int stdout_gone(void *arg)
{
	(void)arg;
	return output_fd_gone(1);
}

/* Open the full-screen view if stdout is a terminal that can take it; else plain frames. */
static void choose_screen(struct top *t, const struct opts *o)
{
	struct winsize ws = { 0 };
	int tty = isatty(1);
	if (!tty || ioctl(1, TIOCGWINSZ, &ws) < 0) ws.ws_col = ws.ws_row = 0;
	top_screen_decide(&t->scr, tty, getenv("TERM"), ws.ws_col, ws.ws_row, getenv("COLUMNS"), getenv("LINES"));
	char why[128];
	if (t->scr.curses && topscreen_open(why, sizeof why) == 0) t->full = 1;
	else if (t->scr.curses && !o->quiet) fprintf(stderr, "gdbsample: warning: %s: plain frames instead\n", why);
}

static void top_free(struct top *t)
{
	if (t->chains) t->chains->free(t->chains);
	if (t->cbuf) fclose(t->cbuf);
	if (t->buf) fclose(t->buf);
	free(t->ctext);
	free(t->text);
	free(t->f.rows);
	free(t->f.chains);
	topview_free(&t->v);
}

int cmd_top(const struct opts *o)
{
	static struct session ss;
	static struct stats st;
	static struct top t;
	struct pace p;
	struct sinks k = { 0 };
	record_signals();                                      /* Ctrl-C, SIGTERM end the view */
	if (session_open(&ss, o) < 0) {                        /* attach, check, guard */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		session_close(&ss);
		return ss.err;
	}
	t.ss = &ss;
	t.v.syms = session_syms(&ss);
	t.st = (struct top_state){ TOP_BY_SELF, 1, 0 };
	t.interval_ns = (int64_t)(o->interval * 1e9);
	t.buf = open_memstream(&t.text, &t.len);
	t.cbuf = open_memstream(&t.ctext, &t.clen);
	t.chains = t.buf && t.cbuf ? report_writer_new(t.cbuf, t.v.syms, TOP_CHAINS, 0) : NULL;
	if (!t.chains) {
		fprintf(stderr, "gdbsample: out of memory\n");
		session_close(&ss);
		top_free(&t);
		return ERR_SYS;
	}
	choose_screen(&t, o);                                  /* full screen, or plain frames */
	t.fan.add = fan_add;
	k.text = &t.fan;
	k.tick = tick;
	k.tick_arg = &t;
	k.tick_ns = t.full && t.interval_ns > TOP_KEYS_NS ? TOP_KEYS_NS : t.interval_ns;
	if (!t.full) k.gone = stdout_gone;
	t.next_draw = pace_now();                              /* the full screen: a first frame at once */
	int err = record_loop(&ss, &k, &st, &p) < 0 ? ss.err : 0; /* until q, a signal or a failure */
	topscreen_close();                                     /* the terminal back before any message */
	if (err) fprintf(stderr, "gdbsample: %s%s\n", ss.errstr, ss.err == ERR_EOF ? " (QEMU exited?)" : "");
	else if (t.err) {
		fprintf(stderr, "gdbsample: %s\n", t.errstr);
		err = t.err;
	}
	if (session_close(&ss) < 0) {                          /* D;1 resumes the guest */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		if (!err) err = ss.err;
	}
	top_free(&t);
	return err;
}
