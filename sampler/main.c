/* main.c: gdbsample's command line -- record (default), dump and top; the only place that prints
 * errors and chooses exit codes (0 ok, 1 failure, 2 bad usage). */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "capture.h"
#include "cli.h"
#include "cmds.h"
#include "err.h"
#include "record.h"
#include "session.h"
#include "stats.h"
#include "writer.h"


static struct stats st; /* large (pause histogram): not on the stack */

static int usage_error(const struct opts *o)
{
	fprintf(stderr, "gdbsample: %s\n", o->errstr);
	return 2;
}

/* Report a failed session and let the guest go. */
static int session_failed(struct session *ss)
{
	fprintf(stderr, "gdbsample: %s\n", ss->errstr);
	session_close(ss);
	return ss->err == ERR_USAGE || ss->err == ERR_FORMAT ? 2 : 1; /* bad flags or input files: 2 */
}

/* -o FILE or stdout; a capture is never written to a terminal. */
static int open_output(const struct opts *o, FILE **out, int *fd)
{
	if (!o->out) {
		if (o->format == FMT_CAPTURE && isatty(1)) {
			fprintf(stderr, "gdbsample: -f capture writes binary data: give -o FILE\n");
			return 2;
		}
		*out = stdout;
		*fd = 1;
		return 0;
	}
	*fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (*fd < 0 || !(*out = fdopen(*fd, "w"))) {
		fprintf(stderr, "gdbsample: %s: %s\n", o->out, strerror(errno));
		return 1;
	}
	return 0;
}

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
	h->klo = o->klo;
	h->khi = o->khi;
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
}

static struct writer *make_writer(const struct opts *o, struct session *ss, FILE *out, int fd, struct sinks *k)
{
	const struct symtab *syms = session_syms(ss);
	struct capture_header h;
	switch (o->format) {
	case FMT_CAPTURE:
		capture_header_fill(&h, ss, o);
		return k->all = capture_writer_new(fd, &h);
	case FMT_FOLDED:
		return k->text = fold_writer_new(out, syms);
	default:
		return k->text = report_writer_new(out, syms, o->chains);
	}
}

static int cmd_record(const struct opts *o)
{
	struct session ss;
	struct pace p;
	struct sinks k = { 0 };
	FILE *out;
	int fd, rc;
	static char kv[4096], human[4096];

	if ((rc = open_output(o, &out, &fd))) return rc;              /* -o FILE or stdout */
	record_signals();                                               /* SIGINT/SIGTERM end the run */
	if (session_open(&ss, o) < 0) return session_failed(&ss);      /* symbols, attach, check, guard */
	struct writer *w = make_writer(o, &ss, out, fd, &k);            /* report, folded or capture */
	if (!w || w->err) {
		fprintf(stderr, "gdbsample: %s\n", w ? w->errstr : "out of memory");
		session_close(&ss);
		return 1;
	}
	int failed = record_loop(&ss, &k, &st, &p) < 0;                 /* sample until -d or a signal */
	stats_kv(&st, &ss.s.p.st, &ss.g.st, &p, ss.ncpu, o->rate, kv, sizeof kv);
	session_kv(&ss, kv, sizeof kv);                                 /* how the VM was reached */
	static char kline[512];
	session_image_line(&ss, kline, sizeof kline);
	struct run_info ri = { ss.ncpu, o->rate, st.end_ns - st.start_ns, st.kept, st.dropped, st.idle, kv,
			       ss.how[0] ? ss.how : NULL, kline[0] ? kline : NULL };
	int wfail = w->finish(w, &ri) < 0;                              /* write what we have, always */
	if (failed) fprintf(stderr, "gdbsample: %s%s\n", ss.errstr,
			    ss.err == ERR_EOF ? " (QEMU exited?); the samples taken so far were written" : "");
	if (wfail) fprintf(stderr, "gdbsample: %s\n", w->errstr);
	if (session_close(&ss) < 0 && !failed) {                        /* stop, D;1 resumes, guard reaped */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		failed = 1;
	}
	if (ss.how[0] && !failed)
		fprintf(stderr, "gdbsample: closed the gdbstub on %s; the VM is running\n", ss.g.conn.where);
	stats_human(&st, &ss.s.p.st, &ss.g.st, &p, ss.ncpu, o->rate, o->idle, human, sizeof human);
	fputs(human, stderr);                                           /* the summary, always */
	w->free(w);
	if (out != stdout && fclose(out)) wfail = 1;
	return failed || wfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	static struct opts o;
	struct session ss;
	struct pace p;

	if (cli_parse(&o, argc, argv) < 0) return usage_error(&o);     /* bad flag: one line, exit 2 */
	if (o.help) {
		fputs(cli_usage, stdout);
		return 0;
	}
	switch (o.cmd) {
	case CMD_DUMP: return cmd_dump(&o, &ss);                        /* stop once, print stacks */
	case CMD_TOP: return cmd_top(&o, &ss, &st, &p);                 /* live view */
	default: return cmd_record(&o);                                 /* sample, then report */
	}
}
