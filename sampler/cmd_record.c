/* SPDX-License-Identifier: MIT */
/* cmd_record.c: `gdbsample [record]` -- sample until -d or a signal, then write the report, the
 * folded stacks or the capture (to a temporary file renamed into place at the end). */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "bpoint.h"
#include "capture.h"
#include "cmds.h"
#include "err.h"
#include "output.h"
#include "offcpu_io.h"
#include "phase.h"
#include "progress.h"
#include "record.h"
#include "writer.h"

static void capture_header_fill(struct capture_header *h, const struct session *ss, const struct opts *o)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(h, 0, sizeof *h);
	h->version = o->offcpu ? CAPTURE_VERSION : o->phase ? CAPTURE_VERSION_PHASES : CAPTURE_VERSION_PLAIN; /* v6: off-CPU
	 * samples; v5: a phases chunk follows */
	h->arch = (uint16_t)ss->g.layout.arch->id;
	h->ncpu = (uint16_t)ss->ncpu;
	h->flags = CAPF_IDLE_KEPT | (o->cmd == CMD_REPLAY ? CAPF_ICOUNT : 0);
	h->rate_hz = o->cmd == CMD_REPLAY ? 0 : (uint32_t)o->rate; /* a replay samples by instruction count */
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

/* What -f svg / -f speedscope hand their data to. */
struct ext_plan {
	char tool[PATH_MAX];   /* gdbsample-analyze */
	const char *elf;       /* speedscope: the -e it names frames with */
};

/* The -e file gdbsample-analyze can name frames with: an ELF (file:line from DWARF; not a .ko),
 * else a symbol map (it reads no compressed vmlinuz); NULL if none. */
static const char *analyze_elf(const struct opts *o)
{
	const char *map = NULL;
	for (int i = 0; i < o->nelf; i++) {
		unsigned char b[4] = { 0 };
		size_t len = strlen(o->elf[i]);
		if (len > 3 && !strcmp(o->elf[i] + len - 3, ".ko")) continue; /* a module's, not the kernel's */
		FILE *f = fopen(o->elf[i], "rb");
		size_t n = f ? fread(b, 1, sizeof b, f) : 0;
		if (f) fclose(f);
		if (n == 4 && !memcmp(b, "\x7f" "ELF", 4)) return o->elf[i];
		if (n && isxdigit(b[0]) && !map) map = o->elf[i];
	}
	return map;
}

/* -f svg and -f speedscope: refused before the VM is touched if they cannot be written. */
static int ext_check(const struct opts *o, struct ext_plan *x)
{
	char exe[PATH_MAX];
	const char *what = o->format == FMT_SVG ? "svg" : "speedscope";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	if (ext_find_analyze(exe, x->tool, sizeof x->tool) < 0) {
		fprintf(stderr, "gdbsample: -f %s is written by gdbsample-analyze, which is not beside gdbsample, in "
			"../analysis or on PATH: install it, or record -f %s and convert later\n", what,
			o->format == FMT_SVG ? "folded" : "capture");
		return ERR_USAGE;
	}
	x->elf = o->format == FMT_SPEEDSCOPE ? analyze_elf(o) : NULL;
	if (o->format == FMT_SPEEDSCOPE && !x->elf) {
		fprintf(stderr, "gdbsample: -f speedscope names frames through gdbsample-analyze, which needs the "
			"kernel ELF or a symbol map (System.map, /proc/kallsyms) with -e; -f svg needs neither\n");
		return ERR_USAGE;
	}
	return 0;
}

static struct writer *make_writer(const struct opts *o, struct session *ss, struct output *out, struct sinks *k,
				  const struct ext_plan *ext)
{
	const struct symtab *syms = session_syms(ss);
	struct capture_header h;
	switch (o->format) {
	case FMT_CAPTURE:
		capture_header_fill(&h, ss, o);
		return k->all = capture_writer_new(out->fd, &h);
	case FMT_FOLDED:
		return k->text = fold_writer_new(out->f, syms, ss->img.os.os != OS_NONE ? o->task_format : TF_CPU);
	case FMT_SVG:
		return k->text = ext_writer_new(EXT_SVG, out->fd, ext->tool, syms,
						ss->img.os.os != OS_NONE ? o->task_format : TF_CPU, NULL, NULL, NULL);
	case FMT_SPEEDSCOPE:
		capture_header_fill(&h, ss, o);
		return k->all = ext_writer_new(EXT_SPEEDSCOPE, out->fd, ext->tool, NULL, 0, &h, ext->elf, o->out);
	default:
		return k->text = report_writer_new(out->f, syms, o->chains, o->offcpu);
	}
}

/* The sinks' question each round: has the output's reader gone (`| head` read enough)? */
static int out_gone(void *arg)
{
	return output_gone(arg);
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

/* --off-cpu: the guest's task table found, the round's buffer made. 0, -1 (ss->err: ERR_USAGE). */
static int offcpu_place(struct session *ss)
{
	static struct sample ocs[OFFCPU_PER_ROUND];
	char why[ERR_MAX];
	if (offcpu_open(ss, &ss->oc, why, sizeof why) < 0) {
		ERR_SET(ss, ERR_USAGE, "%s", why);
		return -1;
	}
	ss->ocs = ocs;
	return 0;
}

/* --phase: parsed (cli checked it), BEGIN and END found in the kernel's symbols. 0, -1 (ss->err). */
static int phase_place(struct session *ss, struct phase *ph, const struct opts *o)
{
	if (phase_parse(ph, o->phase, ss->errstr, sizeof ss->errstr) < 0) {
		ss->err = ERR_USAGE;
		return -1;
	}
	if (bp_resolve(ss, "--phase", ph->begin_sym, &ph->begin) < 0 || bp_resolve(ss, "--phase", ph->end_sym, &ph->end) < 0)
		return -1;
	if (ph->begin == ph->end) {
		ERR_SET(ss, ERR_USAGE, "--phase %s: BEGIN and END are at the same address", ph->name);
		return -1;
	}
	ph->want = o->phase_occurrence;
	return 0;
}

int cmd_record(const struct opts *o)
{
	static struct session ss;
	static struct stats st; /* large (pause histogram): not on the stack */
	static struct output out;
	static struct summary sum;                                      /* the run's counters, one table */
	static char kv[65536], text[65536], kline[512];
	static struct ext_plan ext;
	static struct phase ph;                                         /* --phase: its bounds */
	struct pace p;
	struct sinks k = { 0 };
	int failed = 0;

	if (o->format == FMT_CAPTURE && !o->out && isatty(1)) {
		fprintf(stderr, "gdbsample: -f capture writes binary data: give -o FILE\n");
		return ERR_USAGE;
	}
	if ((o->format == FMT_SVG || o->format == FMT_SPEEDSCOPE) && (failed = ext_check(o, &ext)))
		return failed;                                          /* gdbsample-analyze, and -e */
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
	if (o->phase && phase_place(&ss, &ph, o) < 0) {                 /* BEGIN and END found */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		session_close(&ss);                                     /* resumed, as found */
		output_abort(&out);
		return ss.err;
	}
	if (o->offcpu && offcpu_place(&ss) < 0) {                       /* the task table found */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		session_close(&ss);
		output_abort(&out);
		return ss.err;
	}
	struct writer *w = make_writer(o, &ss, &out, &k, &ext);         /* report, folded, capture, svg... */
	if (w && w->err && output_gone(&out)) {                         /* the capture's header met EPIPE */
		w->free(w);
		failed = session_close(&ss) < 0;                        /* the VM resumed, as after a run */
		if (failed) fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		output_abort(&out);
		return failed ? ss.err : 0;
	}
	if (!w || w->err) {
		fprintf(stderr, "gdbsample: %s\n", w ? w->errstr : "out of memory");
		session_close(&ss);
		output_abort(&out);
		return ERR_SYS;
	}
	k.gone = out_gone;                                              /* a closed pipe ends the run */
	k.gone_arg = &out;
	if (progress_wanted(stderr, o->quiet)) {                        /* a terminal: live status line */
		k.tick = status_tick;
		k.tick_ns = PROGRESS_PERIOD_NS;
	}
	if (o->phase) failed = record_phase_loop(&ss, &k, &st, &p, &ph) < 0 ? ss.err : 0; /* only inside it */
	else failed = record_loop(&ss, &k, &st, &p) < 0 ? ss.err : 0;  /* sample until -d or a signal */
	progress_erase(stderr);                                         /* gone before anything else */
	summary_init(&sum);
	stats_summary(&st, &ss.s.p.st, &ss.s.st, &ss.g.st, &p, ss.ncpu, o->cmd == CMD_REPLAY ? 0 : o->rate, o->idle, &sum);
	if (o->phase) phase_summary(&ph, &sum);                          /* its occurrences, what they cost */
	if (ss.oc) offcpu_summary(ss.oc, &sum);                          /* the tasks that waited */
	session_summary(&ss, &sum);                                     /* modules, the VM, the image */
	summary_kv(&sum, kv, sizeof kv);                                /* the capture's trailer */
	session_image_line(&ss, kline, sizeof kline);
	struct run_info ri = { ss.ncpu, o->rate, st.end_ns - st.start_ns, st.kept, st.dropped, st.idle, kv,
			       ss.how[0] ? ss.how : NULL, kline[0] ? kline : NULL, NULL, NULL };
	char *modtext = session_modules_text(&ss);                      /* the capture names module frames */
	ri.modules = modtext;
	size_t phlen = 0;
	char *phtext = o->phase ? phase_text(&ph, &phlen) : NULL;      /* the capture's bounds (v5) */
	ri.phases = phtext;
	int wfail = !output_gone(&out) && w->finish(w, &ri) < 0;        /* what we have, to a reader */
	if (wfail && output_gone(&out)) wfail = 0;                      /* it left while we wrote */
	free(modtext);
	free(phtext);
	phase_free(&ph);
	if (failed) fprintf(stderr, "gdbsample: %s%s\n", ss.errstr,
			    ss.err == ERR_EOF ? " (QEMU exited?); the samples taken so far were written" : "");
	if (wfail) fprintf(stderr, "gdbsample: %s\n", w->errstr);
	if (session_close(&ss) < 0 && !failed) {                        /* stop, D;1 resumes, guard reaped */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		failed = ss.err;
	}
	if (ss.how[0] && !failed && !o->quiet)
		fprintf(stderr, "gdbsample: closed the gdbstub on %s; the VM is %s\n", ss.g.conn.where,
			ss.held ? "left stopped as we found it" : "running");
	if (o->cmd == CMD_REPLAY && !failed && !o->quiet && ss.rp.ended == REPLAY_END)
		fprintf(stderr, "gdbsample: the recording ended after instruction %llu (QEMU exited, status %d)\n",
			(unsigned long long)ss.rp.last, ss.rp.exit_code);
	if (ss.hotplugged && !o->quiet)
		fprintf(stderr, "gdbsample: warning: %d vCPU%s hot-plugged during the run %s not sampled\n",
			ss.hotplugged, ss.hotplugged > 1 ? "s" : "", ss.hotplugged > 1 ? "were" : "was");
	if (ss.held_rounds && !o->quiet)
		fprintf(stderr, "gdbsample: the VM was stopped by someone else %llu time%s; %llu sampling round%s "
			"skipped meanwhile\n", (unsigned long long)ss.held_episodes, ss.held_episodes > 1 ? "s" : "",
			(unsigned long long)ss.held_rounds, ss.held_rounds > 1 ? "s" : "");
	if (ss.migration_rounds && !o->quiet)
		fprintf(stderr, "gdbsample: %llu sampling round%s skipped while a migration was under way\n",
			(unsigned long long)ss.migration_rounds, ss.migration_rounds > 1 ? "s" : "");
	if (cli_summary_wanted(o)) {                                    /* unless -q; as asked */
		text[0] = 0;
		if (o->summary_format == SUMFMT_JSON) summary_json(&sum, text, sizeof text);
		else if (o->summary_format == SUMFMT_KV) summary_kv(&sum, text, sizeof text);
		else summary_human(&sum, text, sizeof text);
		fputs(text, stderr);
	}
	w->free(w);
	offcpu_close(ss.oc);
	ss.oc = NULL;
	if (wfail) output_abort(&out);
	else if (output_commit(&out) < 0) {                             /* into place, now complete */
		fprintf(stderr, "gdbsample: %s\n", out.errstr);
		wfail = 1;
	}
	return failed ? failed : wfail ? ERR_SYS : 0;
}
