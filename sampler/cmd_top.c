/* SPDX-License-Identifier: MIT */
/* cmd_top.c: `gdbsample top` -- a live view, redrawn every second, of the hottest functions and chains. */
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "cli.h"
#include "cmds.h"
#include "err.h"
#include "record.h"
#include "session.h"
#include "textnum.h"
#include "writer.h"


#define TOP_FUNCS 15   /* leaf functions shown */
#define TOP_CHAINS 4   /* chains shown */
#define TOP_MAXLEAF 8192

/* Samples per leaf function since the start. */
struct leaves {
	struct writer w;            /* interface, first */
	const struct symtab *syms;  /* may be NULL */
	uint64_t key[TOP_MAXLEAF];  /* symbol address (or pc if unknown) */
	uint64_t count[TOP_MAXLEAF];/* samples */
	int n;                      /* distinct leaves */
	uint64_t other;             /* leaves beyond the table */
	uint64_t total;             /* samples */
};

struct top {
	struct session *ss;         /* the session */
	struct top_screen scr;      /* how to draw on stdout */
	FILE *buf;                  /* one frame is drawn here (open_memstream), then cut to the screen */
	char *text;                 /* buf's bytes */
	size_t len;                 /* ...and their count at the last fflush */
	struct leaves lv;           /* leaf counts */
	struct writer *chains;      /* a report writer fed the same samples */
	struct writer fan;          /* forwards each sample to both */
};

void top_screen_decide(struct top_screen *s, int tty, const char *term, int ws_cols, int ws_rows,
		       const char *columns, const char *lines)
{
	uint64_t v;
	s->ansi = tty && term && *term && strcmp(term, "dumb") != 0;
	s->cols = ws_cols > 0 ? ws_cols : columns && !textnum_decz(columns, 100000, &v) && v ? (int)v : tty ? 80 : 0;
	s->rows = !s->ansi ? 0 : ws_rows > 0 ? ws_rows : lines && !textnum_decz(lines, 100000, &v) && v ? (int)v : 24;
}

void top_emit(FILE *out, const struct top_screen *s, const char *text, size_t len)
{
	int row = 0;
	if (s->ansi) fputs("\033[H\033[2J", out);  /* home, clear */
	else fputs("\n", out);                     /* frames one after another, a blank line between */
	for (const char *p = text, *end = text + len; p < end && (!s->rows || row < s->rows - 1); row++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), cut = n;
		if (s->cols) { /* the bytes of the first cols characters (UTF-8: continuation bytes are free) */
			int chars = 0;
			for (cut = 0; cut < n; cut++)
				if (((unsigned char)p[cut] & 0xc0) != 0x80 && ++chars > s->cols) break;
		}
		fwrite(p, 1, cut, out);
		fputc('\n', out);
		p += n + 1;
	}
	fflush(out);
}

static int leaves_add(struct leaves *l, const struct sample *s)
{
	const struct sym *sym = l->syms ? syms_lookup(l->syms, s->frames[0]) : NULL;
	uint64_t k = sym ? sym->addr : s->frames[0];
	l->total++;
	for (int i = 0; i < l->n; i++)
		if (l->key[i] == k) {
			l->count[i]++;
			return 0;
		}
	if (l->n == TOP_MAXLEAF) {
		l->other++;
		return 0;
	}
	l->key[l->n] = k;
	l->count[l->n++] = 1;
	return 0;
}

static int fan_add(struct writer *w, const struct sample *s)
{
	struct top *t = (struct top *)((char *)w - offsetof(struct top, fan));
	leaves_add(&t->lv, s);
	return t->chains->add(t->chains, s);
}

static void draw(void *arg, const struct stats *st, const struct pace *p)
{
	struct top *t = arg;
	struct leaves *l = &t->lv;
	double secs = (double)(st->end_ns - st->start_ns) / 1e9;
	FILE *out = t->buf; /* the frame is drawn whole, then cut to the screen */
	(void)p;
	fseeko(out, 0, SEEK_SET);
	fprintf(out, "gdbsample top: %d vCPUs, %.0f Hz achieved of %d requested, pause p50 %.0f us p99 %.0f us, "
	       "guest stopped %.2f%%\n", t->ss->ncpu, secs > 0 ? (double)st->stops / secs : 0.0,
	       t->ss->o->rate, stats_pause_pct(st, 50), stats_pause_pct(st, 99),
	       secs > 0 ? 100.0 * (double)st->stopped_ns / 1e9 / secs : 0.0);
	fprintf(out, "%llu samples, %llu idle%s, %.0f s\n\n  %%self  samples  function\n",
	       (unsigned long long)l->total, (unsigned long long)st->idle, t->ss->o->idle ? "" : " (hidden)", secs);
	for (int shown = 0; shown < TOP_FUNCS; shown++) { /* selection of the largest, ties by key */
		int best = -1;
		for (int i = 0; i < l->n; i++)
			if (l->count[i] && (best < 0 || l->count[i] > l->count[best] ||
					    (l->count[i] == l->count[best] && l->key[i] < l->key[best])))
				best = i;
		if (best < 0) break;
		char name[256]; /* the key is the function's start, or a raw pc where none is known */
		const struct sym *sym = l->syms ? syms_lookup(l->syms, l->key[best]) : NULL;
		if (sym && sym->addr == l->key[best]) syms_name(sym, name, sizeof name);
		else snprintf(name, sizeof name, "0x%llx", (unsigned long long)l->key[best]);
		fprintf(out, "  %5.1f  %7llu  %s\n", 100.0 * (double)l->count[best] / (double)l->total,
		       (unsigned long long)l->count[best], name);
		l->count[best] = ~l->count[best]; /* mark as shown; restored below */
	}
	for (int i = 0; i < l->n; i++)
		if (l->count[i] >> 63) l->count[i] = ~l->count[i];
	fprintf(out, "\nhottest chains:\n");
	struct run_info ri = { t->ss->ncpu, t->ss->o->rate, st->end_ns - st->start_ns, st->kept, st->dropped,
			       st->idle, NULL, NULL, NULL, NULL };
	t->chains->finish(t->chains, &ri);
	if (fflush(out) == 0) top_emit(stdout, &t->scr, t->text, t->len);
}

int cmd_top(const struct opts *o)
{
	static struct session ss;
	static struct stats st;
	static struct top t;
	struct pace p;
	struct sinks k = { 0 };
	record_signals();                                      /* Ctrl-C ends the view */
	if (session_open(&ss, o) < 0) {                        /* attach, check, guard */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		session_close(&ss);
		return ss.err;
	}
	t.ss = &ss;
	t.lv.syms = session_syms(&ss);
	struct winsize ws = { 0 };
	int tty = isatty(1);
	if (!tty || ioctl(1, TIOCGWINSZ, &ws) < 0) ws.ws_col = ws.ws_row = 0;
	top_screen_decide(&t.scr, tty, getenv("TERM"), ws.ws_col, ws.ws_row, getenv("COLUMNS"), getenv("LINES"));
	t.buf = open_memstream(&t.text, &t.len);
	t.chains = t.buf ? report_writer_new(t.buf, t.lv.syms, TOP_CHAINS) : NULL;
	if (!t.chains) {
		fprintf(stderr, "gdbsample: out of memory\n");
		session_close(&ss);
		return ERR_SYS;
	}
	t.fan.add = fan_add;
	k.text = &t.fan;
	k.tick = draw;
	k.tick_arg = &t;
	int err = record_loop(&ss, &k, &st, &p) < 0 ? ss.err : 0; /* redraws once a second */
	if (err) fprintf(stderr, "gdbsample: %s\n", ss.errstr);
	if (session_close(&ss) < 0) {                          /* D;1 resumes the guest */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		if (!err) err = ss.err;
	}
	t.chains->free(t.chains);
	fclose(t.buf);
	free(t.text);
	return err;
}
