/* SPDX-License-Identifier: MIT */
/* stats.c: run statistics -- pause histogram, counters, and the end-of-run summary text. */
#include "stats.h"
#include <stdio.h>
#include <string.h>

void stats_init(struct stats *st, int64_t now_ns)
{
	memset(st, 0, sizeof *st);
	st->start_ns = st->end_ns = now_ns;
}

void stats_pause(struct stats *st, int64_t ns, int64_t stopped_ns)
{
	int64_t us = ns / 1000;
	st->hist[us > STATS_HIST_US ? STATS_HIST_US : us]++;
	st->stops++;
	st->paused_ns += ns;
	st->stopped_ns += stopped_ns;
	if (ns > st->max_pause_ns) st->max_pause_ns = ns;
}

double stats_pause_pct(const struct stats *st, double pct)
{
	if (!st->stops) return 0;
	uint64_t want = (uint64_t)(pct / 100.0 * (double)st->stops + 0.5), seen = 0;
	if (want < 1) want = 1;
	for (int i = 0; i <= STATS_HIST_US; i++) {
		seen += st->hist[i];
		if (seen >= want) return i;
	}
	return STATS_HIST_US;
}

static double seconds(const struct stats *st)
{
	return (double)(st->end_ns - st->start_ns) / 1e9;
}

static uint64_t late_count(const struct pace *p)
{
	return p ? p->skipped : 0;
}

void stats_kv(const struct stats *st, const struct sampler_stats *ss, const struct gdb_stats *gs,
	      const struct pace *p, int ncpu, int rate_hz, char *out, size_t cap)
{
	double s = seconds(st);
	size_t o = 0;
#define KV(...) do { if (o < cap) o += (size_t)snprintf(out + o, cap - o, __VA_ARGS__); } while (0)
	KV("duration_ns %lld\n", (long long)(st->end_ns - st->start_ns));
	KV("vcpus %d\nrate_requested_hz %d\nrate_achieved_hz %.2f\n", ncpu, rate_hz,
	   s > 0 ? (double)st->stops / s : 0.0);
	KV("stops %llu\nsamples %llu\nidle %llu\ndropped %llu\n", (unsigned long long)st->stops,
	   (unsigned long long)st->kept, (unsigned long long)st->idle, (unsigned long long)st->dropped);
	KV("pause_p50_us %.0f\npause_p99_us %.0f\npause_max_us %lld\n", stats_pause_pct(st, 50),
	   stats_pause_pct(st, 99), (long long)(st->max_pause_ns / 1000));
	KV("stopped_fraction %.5f\npaused_fraction %.5f\n", s > 0 ? (double)st->stopped_ns / 1e9 / s : 0.0,
	   s > 0 ? (double)st->paused_ns / 1e9 / s : 0.0);
	KV("prediction_hits %llu\nprediction_misses %llu\nround_trips %llu\n",
	   (unsigned long long)ss->hits, (unsigned long long)ss->misses, (unsigned long long)ss->trips);
	KV("mem_reads %llu\nmem_bytes %llu\n", (unsigned long long)ss->mem_reads, (unsigned long long)ss->mem_bytes);
	KV("cross_page_reads %llu\ncross_page_failed %llu\n", (unsigned long long)ss->cross_reads,
	   (unsigned long long)ss->cross_failed);
	KV("idle_reused %llu\n", (unsigned long long)ss->idle_reused);
	KV("hg_elided %llu\nhg_elided_wrong %llu\n", (unsigned long long)ss->hg_elided,
	   (unsigned long long)ss->hg_wrong);
	for (int i = 0; i < UW_NSTOPS; i++)
		KV("unwind_stop_%s %llu\n", unwind_stop_names[i], (unsigned long long)ss->stops[i]);
	for (int m = 0; m < UM_N; m++) KV("frames_%s %llu\n", unwind_method_names[m], (unsigned long long)ss->frames[m]);
	for (int m = 0; m <= UM_N; m++)
		for (int i = 0; i < UW_NSTOPS; i++)
			if (ss->stops_by[m][i])
				KV("unwind_stop_%s_%s %llu\n", m < UM_N ? unwind_method_names[m] : "none",
				   unwind_stop_names[i], (unsigned long long)ss->stops_by[m][i]);
	KV("text_reads %llu\nstale_windows %llu\n", (unsigned long long)ss->text_reads,
	   (unsigned long long)ss->stale_windows);
	if (ss->reg_reads) KV("reg_reads %llu\n", (unsigned long long)ss->reg_reads);
	KV("errors_register %llu\nerrors_memory %llu\nerrors_rejected %llu\nno_stop_reply %llu\n",
	   (unsigned long long)ss->reg_errors, (unsigned long long)ss->mem_errors,
	   (unsigned long long)ss->rejected, (unsigned long long)ss->no_stop_reply);
	KV("failed_rounds %llu\nnaks %lu\nretransmits %lu\nbad_checksums %lu\n",
	   (unsigned long long)st->failed_stops, gs->naks, gs->retransmits, gs->badsum);
	KV("deadlines_skipped %llu\nlateness_max_ns %lld\n", (unsigned long long)late_count(p),
	   (long long)(p ? p->late_max_ns : 0));
	KV("watchdog_rescues %llu\nwatchdog_longest_ns %lld\nwatchdog_lost_rounds %llu\n",
	   (unsigned long long)st->rescues, (long long)st->rescue_max_ns, (unsigned long long)st->rescued_samples);
	const struct task_stats *t = &ss->task;
	if (t->verified + t->hits + t->misses + t->lost)
		KV("task_verified %llu\ntask_hits %llu\ntask_misses %llu\ntask_renamed %llu\ntask_lost %llu\n"
		   "task_reads %llu\ntask_bytes %llu\n", (unsigned long long)t->verified, (unsigned long long)t->hits,
		   (unsigned long long)t->misses, (unsigned long long)t->renamed, (unsigned long long)t->lost,
		   (unsigned long long)t->reads, (unsigned long long)t->bytes);
	if (st->filtered) KV("filtered %llu\n", (unsigned long long)st->filtered);
#undef KV
}

void stats_human(const struct stats *st, const struct sampler_stats *ss, const struct gdb_stats *gs,
		 const struct pace *p, int ncpu, int rate_hz, int keep_idle, char *out, size_t cap)
{
	double s = seconds(st);
	size_t o = 0;
#define P(...) do { if (o < cap) o += (size_t)snprintf(out + o, cap - o, __VA_ARGS__); } while (0)
	P("gdbsample: %llu samples of %d vCPU%s in %.2f s: %.1f Hz achieved, %d Hz requested\n",
	  (unsigned long long)st->kept, ncpu, ncpu == 1 ? "" : "s", s,
	  s > 0 ? (double)st->stops / s : 0.0, rate_hz);
	P("gdbsample: pause per sample p50 %.0f us, p99 %.0f us, max %lld us; guest stopped %.2f%% of wall time "
	  "(at most %.2f%%, counting from the stop byte)\n",
	  stats_pause_pct(st, 50), stats_pause_pct(st, 99), (long long)(st->max_pause_ns / 1000),
	  s > 0 ? 100.0 * (double)st->stopped_ns / 1e9 / s : 0.0, s > 0 ? 100.0 * (double)st->paused_ns / 1e9 / s : 0.0);
	P("gdbsample: idle samples %llu (%s), dropped %llu, prediction hits %llu misses %llu (%llu speculative "
	  "reads unmapped), round trips %llu, "
	  "stack reads %llu (%.0f bytes each, %llu across a page, %llu of those re-read), "
	  "on an interrupt vector %llu (counted as the interrupted pc)\n",
	  (unsigned long long)st->idle, keep_idle ? "kept" : "not reported", (unsigned long long)st->dropped,
	  (unsigned long long)ss->hits, (unsigned long long)ss->misses, (unsigned long long)ss->stale_windows,
	  (unsigned long long)ss->trips,
	  (unsigned long long)ss->mem_reads, ss->mem_reads ? (double)ss->mem_bytes / (double)ss->mem_reads : 0.0,
	  (unsigned long long)ss->cross_reads, (unsigned long long)ss->cross_failed,
	  (unsigned long long)ss->irq_vector);
	P("gdbsample: unwind stops:");
	for (int i = 0; i < UW_NSTOPS; i++)
		P(" %s %llu", unwind_stop_names[i], (unsigned long long)ss->stops[i]);
	P("\n");
	P("gdbsample: frames by method:");
	for (int m = UM_N - 1; m >= 0; m--) /* orc, cfi, fp: the order auto prefers them */
		P(" %s %llu", unwind_method_names[m], (unsigned long long)ss->frames[m]);
	P("; stops by method:");
	int any = 0;
	for (int m = UM_N; m >= 0; m--) {
		int first = 1;
		for (int i = 0; i < UW_NSTOPS; i++) {
			if (!ss->stops_by[m][i]) continue;
			if (first) P("%s%s", any ? "; " : " ", m < UM_N ? unwind_method_names[m] : "none");
			P("%s %s %llu", first ? "" : ",", unwind_stop_names[i], (unsigned long long)ss->stops_by[m][i]);
			first = 0;
			any = 1;
		}
	}
	if (ss->text_reads) P("; text bytes read %llu", (unsigned long long)ss->text_reads);
	if (ss->reg_reads) P("; registers read for walks %llu", (unsigned long long)ss->reg_reads);
	P("\n");
	P("gdbsample: errors: registers %llu, memory %llu, rejected %llu, no stop reply %llu, failed rounds %llu, "
	  "naks %lu, bad checksums %lu; deadlines skipped %llu (max late %.1f ms)\n",
	  (unsigned long long)ss->reg_errors, (unsigned long long)ss->mem_errors,
	  (unsigned long long)ss->rejected, (unsigned long long)ss->no_stop_reply,
	  (unsigned long long)st->failed_stops, gs->naks, gs->badsum, (unsigned long long)late_count(p),
	  p ? (double)p->late_max_ns / 1e6 : 0.0);
	const struct task_stats *t = &ss->task;
	if (t->verified + t->hits + t->misses + t->lost)
		P("gdbsample: tasks: %llu confirmed in the same round trip, %llu from the cache, %llu cost another trip, "
		  "%llu unattributed; %llu renamed (exec or a reused task struct)%s\n", (unsigned long long)t->verified,
		  (unsigned long long)t->hits, (unsigned long long)t->misses, (unsigned long long)t->lost,
		  (unsigned long long)t->renamed, "");
	if (st->filtered)
		P("gdbsample: %llu samples left out by --pid/--comm\n", (unsigned long long)st->filtered);
	if (st->rescues)
		P("gdbsample: the pause watchdog resumed the guest %llu time%s (gdbsample was held up, longest "
		  "stop %.0f ms; %llu sample round%s lost)\n", (unsigned long long)st->rescues, st->rescues == 1 ? "" : "s",
		  (double)st->rescue_max_ns / 1e6, (unsigned long long)st->rescued_samples,
		  st->rescued_samples == 1 ? "" : "s");
#undef P
}
