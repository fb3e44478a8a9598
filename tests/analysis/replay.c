/* SPDX-License-Identifier: MIT */
/* replay.c: feed a capture through gdbsample's own report and folded writers (sampler/report.c,
 * sampler/fold.c), so tests compare gdbsample-analyze with `gdbsample -f report|folded` on the
 * very same samples. usage: replay report|folded CAPTURE ELF [CHAINS] [idle] [offcpu]
 * (offcpu: the off-CPU stacks too, as record --off-cpu's writers get them; else left out, as
 * gdbsample-analyze leaves them without --state) */
#include "capture.h"
#include "symbols.h"
#include "writer.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	static struct capture_reader r;
	static struct symtab t;
	static struct sample s;
	if (argc < 4) {
		fprintf(stderr, "usage: replay report|folded CAPTURE ELF [CHAINS] [idle] [offcpu]\n");
		return 2;
	}
	int keep_idle = 0, offcpu = 0;
	for (int i = 5; i < argc; i++) {
		keep_idle |= !strcmp(argv[i], "idle");
		offcpu |= !strcmp(argv[i], "offcpu");
	}
	if (capture_open(&r, argv[2]) < 0 || syms_load(&t, argv[3]) < 0) {
		fprintf(stderr, "replay: %s%s\n", r.errstr, t.errstr);
		return 1;
	}
	struct writer *w = !strcmp(argv[1], "report") ?
		report_writer_new(stdout, &t, argc > 4 ? atoi(argv[4]) : 8, offcpu) : fold_writer_new(stdout, &t, TF_CPU);
	uint64_t kept = 0, idle = 0, last = 0;
	int rc;
	while ((rc = capture_next(&r, &s)) == 1) {
		last = s.t_ns;
		if (s.offcpu && !offcpu) continue;
		if (s.flags & SF_IDLE) {
			idle++;
			if (!keep_idle) continue;
		}
		kept++;
		w->add(w, &s);
	}
	/* the run facts gdbsample's record loop gives its writers, from the summary chunk */
	const char *d = strstr(r.summary, "duration_ns "), *dr = strstr(r.summary, "dropped ");
	struct run_info ri = { r.h.ncpu, (int)r.h.rate_hz, d ? atoll(d + 12) : (int64_t)last, kept,
			       dr ? (uint64_t)atoll(dr + 8) : 0, idle, NULL, NULL, NULL };
	w->finish(w, &ri);
	return rc < 0 ? 3 : 0;
}
