/* SPDX-License-Identifier: MIT */
/* walk_bench.c: host CPU per stack walk for each unwinding method, on real stacks -- it samples a
 * guest like gdbsample (the same session, plan and unwinders), keeps each vCPU's registers and
 * stack windows, lets the guest go, then times unwind_walk over the kept inputs per method.
 * usage: walk-bench SAMPLES REPEAT GDBSAMPLE-OPTIONS...   (e.g. 300 50 -p 1234 -e kernel.elf)
 * Prints, per method the image supports (alone) and for auto: "METHOD ns_per_walk N
 * frames_per_walk F complete_pct C walks W" (complete: the walk reached a stack's end or user
 * mode). The first pass over the inputs compiles CFI rules; the timed passes run warm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../sampler/cli.h"
#include "../sampler/session.h"

/* This thread's CPU time: the figure is the walk's cost, whatever else the host runs. */
static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Walk every kept input with plan p's methods, repeat times; prints one line. Only the walk is
 * timed: the inputs were built once (pointing into the kept windows). */
static void run(const char *name, const struct plan *p, struct unwind_in *in, int n, int repeat)
{
	static uint64_t frames[SAMPLE_MAX_FRAMES];
	struct unwind_out out;
	long walks = 0, nframes = 0, complete = 0;
	double t0 = 0;
	for (int i = 0; i < n; i++) {
		in[i].nmethods = p->nmethods;
		memcpy(in[i].methods, p->methods, sizeof in[i].methods);
	}
	for (int pass = -1; pass < repeat; pass++) { /* pass -1 warms the rule caches */
		if (pass == 0) t0 = now_ns();
		for (int i = 0; i < n; i++) {
			unwind_walk(&in[i], frames, &out);
			if (pass < 0) continue;
			walks++;
			nframes += out.n;
			complete += out.stop == UW_END || out.stop == UW_USER;
		}
	}
	double ns = (now_ns() - t0) / (double)(walks ? walks : 1);
	printf("%s ns_per_walk %.0f frames_per_walk %.2f complete_pct %.1f walks %ld\n", name, ns,
	       (double)nframes / (double)(walks ? walks : 1), 100.0 * (double)complete / (double)(walks ? walks : 1),
	       walks);
}

int main(int argc, char **argv)
{
	static struct opts o;
	static struct session ss;
	static struct sample out[GDB_MAX_CPUS];
	if (argc < 4) {
		fprintf(stderr, "usage: walk-bench SAMPLES REPEAT GDBSAMPLE-OPTIONS...\n");
		return 2;
	}
	int want = atoi(argv[1]), repeat = atoi(argv[2]), n = 0;
	argv[2] = "walk-bench";
	if (want <= 0 || repeat <= 0 || cli_parse(&o, argc - 2, argv + 2) < 0) {
		fprintf(stderr, "walk-bench: %s\n", o.errstr[0] ? o.errstr : "bad SAMPLES or REPEAT");
		return 2;
	}
	if (session_open(&ss, &o) < 0) {
		fprintf(stderr, "walk-bench: %s\n", ss.errstr);
		session_close(&ss);
		return 1;
	}
	struct vcpu *k = calloc((size_t)want * (size_t)ss.ncpu, sizeof *k); /* the inputs kept */
	for (int s = 0; k && s < want; s++) { /* ~100 Hz: the guest runs between samples */
		int got;
		if (sampler_take(&ss.s, out, &got) < 0 || sampler_resume(&ss.s) < 0) break;
		for (int i = 0; i < ss.s.nv; i++)
			if (!ss.s.v[i].failed && ss.s.v[i].nregs) k[n++] = ss.s.v[i];
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	/* Time each method alone, then auto, while the guest runs (the walks need only the image's
	 * tables, which the open session keeps). */
	struct sampler_cfg cfg = ss.s.p.cfg;
	struct unwind_in *in = calloc((size_t)(n ? n : 1), sizeof *in);
	for (int i = 0; in && i < n; i++) plan_walk_input(&ss.s.p, &k[i], &in[i]);
	for (int m = -1; m < UM_N && n; m++) {
		struct plan p;
		if (m >= 0 && ((m == UM_ORC && !cfg.orc) || (m == UM_CFI && !cfg.cfi))) continue;
		struct sampler_cfg c = cfg;
		if (m >= 0) {
			c.nmethods = 1;
			c.order[0] = m;
		}
		plan_init(&p, &ss.g.layout, &c);
		run(m < 0 ? "auto" : unwind_method_names[m], &p, in, n, repeat);
		plan_free(&p);
	}
	int rc = n ? 0 : 1;
	if (session_close(&ss) < 0) {
		fprintf(stderr, "walk-bench: %s\n", ss.errstr);
		rc = 1;
	}
	free(in);
	free(k);
	return rc;
}
