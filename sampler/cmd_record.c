/* SPDX-License-Identifier: MIT */
/* cmd_record.c: `gdbsample [record]` -- sample until -d or a signal, then write the report, the
 * folded stacks or the capture (to a temporary file renamed into place at the end). */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "capture.h"
#include "cmds.h"
#include "err.h"
#include "output.h"
#include "progress.h"
#include "record.h"
#include "writer.h"

static void capture_header_fill(struct capture_header *h, const struct session *ss, const struct opts *o)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(h, 0, sizeof *h);
	h->arch = (uint16_t)ss->g.layout.arch->id;
	h->ncpu = (uint16_t)ss->ncpu;
	h->flags = CAPF_IDLE_KEPT;
	h->rate_hz = (uint32_t)o->rate;
	h->max_frames = (uint32_t)o->max_frames;
	h->klo = ss->klo;
	h->khi = ss->khi;
	h->start_unix_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	const struct symtab *t = &ss->img.syms;
	h->id_kind = (uint8_t)t->idkind;
	h->id_len = (uint8_t)t->idlen;
	memcpy(h->id, t->id, sizeof h->id);
	if (ss->kaslr.how != KASLR_NONE) {
		h->flags |= CAPF_KASLR;
		h->kaslr_offset = ss->kaslr.slide;
	}
	if ((t->marks >> MARK_STEXT) & 1) h->stext = t->mark[MARK_STEXT];
	for (int k = 0; k < ss->nmethods; k++) h->methods |= (uint8_t)(1u << ss->methods[k]);
	h->task_os = (uint8_t)ss->img.os.os;
}

static struct writer *make_writer(const struct opts *o, struct session *ss, struct output *out, struct sinks *k)
{
	const struct symtab *syms = session_syms(ss);
	struct capture_header h;
	switch (o->format) {
	case FMT_CAPTURE:
		capture_header_fill(&h, ss, o);
		return k->all = capture_writer_new(out->fd, &h);
	case FMT_FOLDED:
		return k->text = fold_writer_new(out->f, syms, ss->img.os.os != OS_NONE ? o->task_format : TF_CPU);
	default:
		return k->text = report_writer_new(out->f, syms, o->chains);
	}
}

/* The sink's tick on a terminal: the status line, redrawn in place. */
static void status_tick(void *arg, const struct stats *st, const struct pace *p)
{
	char line[256];
	(void)arg;
	(void)p;
	progress_format(line, sizeof line, st->end_ns - st->start_ns, st->kept, st->stops, stats_pause_pct(st, 50),
			st->dropped, progress_columns(stderr));
	progress_draw(stderr, line);
}

int cmd_record(const struct opts *o)
{
	static struct session ss;
	static struct stats st; /* large (pause histogram): not on the stack */
	static struct output out;
	static char kv[4096], human[4096], kline[512], modline[512];
	struct pace p;
	struct sinks k = { 0 };

	if (o->format == FMT_CAPTURE && !o->out && isatty(1)) {
		fprintf(stderr, "gdbsample: -f capture writes binary data: give -o FILE\n");
		return ERR_USAGE;
	}
	if (output_open(&out, o->out, o->elf, o->nelf) < 0) {          /* beside FILE, or stdout */
		fprintf(stderr, "gdbsample: %s\n", out.errstr);
		return out.err;
	}
	record_signals();                                               /* every fatal signal ends the run */
	if (session_open(&ss, o) < 0) {                                 /* image, attach, check, guard */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		session_close(&ss);
		output_abort(&out);                                     /* FILE untouched */
		return ss.err;
	}
	struct writer *w = make_writer(o, &ss, &out, &k);               /* report, folded or capture */
	if (!w || w->err) {
		fprintf(stderr, "gdbsample: %s\n", w ? w->errstr : "out of memory");
		session_close(&ss);
		output_abort(&out);
		return ERR_SYS;
	}
	if (progress_wanted(stderr, o->quiet)) {                        /* a terminal: live status line */
		k.tick = status_tick;
		k.tick_ns = PROGRESS_PERIOD_NS;
	}
	int failed = record_loop(&ss, &k, &st, &p) < 0 ? ss.err : 0;   /* sample until -d or a signal */
	progress_erase(stderr);                                         /* gone before anything else */
	stats_kv(&st, &ss.s.p.st, &ss.g.st, &p, ss.ncpu, o->rate, kv, sizeof kv);
	session_kv(&ss, kv, sizeof kv);                                 /* how the VM was reached, the image */
	session_image_line(&ss, kline, sizeof kline);
	session_modules_line(&ss, modline, sizeof modline);
	struct run_info ri = { ss.ncpu, o->rate, st.end_ns - st.start_ns, st.kept, st.dropped, st.idle, kv,
			       ss.how[0] ? ss.how : NULL, kline[0] ? kline : NULL, NULL };
	char *modtext = session_modules_text(&ss);                      /* the capture names module frames */
	ri.modules = modtext;
	int wfail = w->finish(w, &ri) < 0;                              /* what we have, always */
	free(modtext);
	if (failed) fprintf(stderr, "gdbsample: %s%s\n", ss.errstr,
			    ss.err == ERR_EOF ? " (QEMU exited?); the samples taken so far were written" : "");
	if (wfail) fprintf(stderr, "gdbsample: %s\n", w->errstr);
	if (session_close(&ss) < 0 && !failed) {                        /* stop, D;1 resumes, guard reaped */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		failed = ss.err;
	}
	if (ss.how[0] && !failed)
		fprintf(stderr, "gdbsample: closed the gdbstub on %s; the VM is %s\n", ss.g.conn.where,
			ss.held ? "left stopped as we found it" : "running");
	if (ss.hotplugged && !o->quiet)
		fprintf(stderr, "gdbsample: warning: %d vCPU%s hot-plugged during the run %s not sampled\n",
			ss.hotplugged, ss.hotplugged > 1 ? "s" : "", ss.hotplugged > 1 ? "were" : "was");
	if (ss.held_rounds)
		fprintf(stderr, "gdbsample: the VM was stopped by someone else %llu time%s; %llu sampling round%s "
			"skipped meanwhile\n", (unsigned long long)ss.held_episodes, ss.held_episodes > 1 ? "s" : "",
			(unsigned long long)ss.held_rounds, ss.held_rounds > 1 ? "s" : "");
	stats_human(&st, &ss.s.p.st, &ss.g.st, &p, ss.ncpu, o->rate, o->idle, human, sizeof human);
	fputs(human, stderr);                                           /* the summary, always */
	fputs(modline, stderr);                                         /* modules read, their costs */
	w->free(w);
	if (wfail) output_abort(&out);
	else if (output_commit(&out) < 0) {                             /* into place, now complete */
		fprintf(stderr, "gdbsample: %s\n", out.errstr);
		wfail = 1;
	}
	return failed ? failed : wfail ? ERR_SYS : 0;
}
