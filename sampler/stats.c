/* SPDX-License-Identifier: MIT */
/* stats.c: run statistics -- pause histogram, counters, and their rows of the end-of-run summary. */
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

/* A row whose label is "LABEL" + name + " %v" (the per-method and per-reason counters). */
static void named_u64(struct summary *t, const char *keyfmt, const char *a, const char *b, const char *label, uint64_t v)
{
	char key[96];
	snprintf(key, sizeof key, keyfmt, a, b);
	summary_u64(t, key, label, v);
}

void stats_summary(const struct stats *st, const struct sampler_stats *ss, const struct gdb_stats *gs,
		   const struct pace *p, int ncpu, int rate_hz, int keep_idle, struct summary *t)
{
	double s = seconds(st);
	char label[128];
	summary_u64(t, "samples", "gdbsample: %v samples", st->kept);
	summary_i64(t, "vcpus", " of %v vCPU%s", ncpu);
	summary_i64(t, "duration_ns", " in %v s", st->end_ns - st->start_ns);
	summary_scale(t, 1e9, 2);
	summary_real(t, "rate_achieved_hz", ": %v Hz achieved", 2, s > 0 ? (double)st->stops / s : 0.0);
	summary_scale(t, 1, 1);
	summary_i64(t, "rate_requested_hz", ", %v Hz requested\n", rate_hz);
	summary_u64(t, "stops", NULL, st->stops);

	summary_real(t, "pause_p50_us", "gdbsample: pause per sample p50 %v us", 0, stats_pause_pct(st, 50));
	summary_real(t, "pause_p99_us", ", p99 %v us", 0, stats_pause_pct(st, 99));
	summary_i64(t, "pause_max_us", ", max %v us", st->max_pause_ns / 1000);
	summary_real(t, "stopped_fraction", NULL, 5, s > 0 ? (double)st->stopped_ns / 1e9 / s : 0.0);
	summary_real(t, "paused_fraction", NULL, 5, s > 0 ? (double)st->paused_ns / 1e9 / s : 0.0);
	summary_real(t, NULL, "; guest stopped %v%% of wall time", 2, s > 0 ? 100.0 * (double)st->stopped_ns / 1e9 / s : 0.0);
	summary_real(t, NULL, " (at most %v%%, counting from the stop byte)\n", 2,
		     s > 0 ? 100.0 * (double)st->paused_ns / 1e9 / s : 0.0);

	summary_u64(t, "idle", keep_idle ? "gdbsample: idle samples %v (kept)" : "gdbsample: idle samples %v (not reported)",
		    st->idle);
	summary_u64(t, "dropped", ", dropped %v", st->dropped);
	summary_u64(t, "prediction_hits", ", prediction hits %v", ss->hits);
	summary_u64(t, "prediction_misses", " misses %v", ss->misses);
	summary_u64(t, "stale_windows", " (%v speculative reads unmapped)", ss->stale_windows);
	summary_u64(t, "round_trips", ", round trips %v", ss->trips);
	summary_u64(t, "mem_reads", ", stack reads %v", ss->mem_reads);
	summary_u64(t, "mem_bytes", NULL, ss->mem_bytes);
	summary_real(t, NULL, " (%v bytes each", 0, ss->mem_reads ? (double)ss->mem_bytes / (double)ss->mem_reads : 0.0);
	summary_u64(t, "cross_page_reads", ", %v across a page", ss->cross_reads);
	summary_u64(t, "cross_page_failed", ", %v of those re-read)", ss->cross_failed);
	summary_u64(t, NULL, ", on an interrupt vector %v (counted as the interrupted pc)\n", ss->irq_vector);
	summary_u64(t, "idle_reused", NULL, ss->idle_reused);
	summary_u64(t, "hg_elided", NULL, ss->hg_elided);
	summary_u64(t, "hg_elided_wrong", NULL, ss->hg_wrong);

	summary_text(t, "gdbsample: unwind stops:");
	for (int i = 0; i < UW_NSTOPS; i++) {
		snprintf(label, sizeof label, " %s %%v", unwind_stop_names[i]);
		named_u64(t, "unwind_stop_%s%s", unwind_stop_names[i], "", label, ss->stops[i]);
	}
	summary_text(t, "\ngdbsample: frames by method:");
	for (int m = UM_N - 1; m >= 0; m--) { /* orc, cfi, fp: the order auto prefers them */
		snprintf(label, sizeof label, " %s %%v", unwind_method_names[m]);
		named_u64(t, "frames_%s%s", unwind_method_names[m], "", label, ss->frames[m]);
	}
	summary_text(t, "; stops by method:");
	int any = 0;
	for (int m = UM_N; m >= 0; m--) {
		const char *mn = m < UM_N ? unwind_method_names[m] : "none";
		int first = 1;
		for (int i = 0; i < UW_NSTOPS; i++) {
			if (!ss->stops_by[m][i]) { /* zeros: for JSON only, as key value lines never had them */
				named_u64(t, "unwind_stop_%s_%s", mn, unwind_stop_names[i], NULL, 0);
				summary_json_only(t);
				continue;
			}
			snprintf(label, sizeof label, "%s%s%s %s %%v", first ? (any ? "; " : " ") : "", first ? mn : "",
				 first ? "" : ",", unwind_stop_names[i]);
			char key[96];
			snprintf(key, sizeof key, "unwind_stop_%s_%s", mn, unwind_stop_names[i]);
			summary_u64(t, key, label, ss->stops_by[m][i]);
			first = 0;
			any = 1;
		}
	}
	summary_u64(t, "text_reads", "; text bytes read %v", ss->text_reads);
	if (!ss->text_reads) summary_hide(t);
	summary_u64(t, "reg_reads", "; registers read for walks %v", ss->reg_reads);
	if (!ss->reg_reads) {
		summary_hide(t);
		summary_json_only(t);
	}
	summary_text(t, "\n");

	summary_u64(t, "errors_register", "gdbsample: errors: registers %v", ss->reg_errors);
	summary_u64(t, "errors_memory", ", memory %v", ss->mem_errors);
	summary_u64(t, "errors_rejected", ", rejected %v", ss->rejected);
	summary_u64(t, "no_stop_reply", ", no stop reply %v", ss->no_stop_reply);
	summary_u64(t, "failed_rounds", ", failed rounds %v", st->failed_stops);
	summary_u64(t, "naks", ", naks %v", gs->naks);
	summary_u64(t, "retransmits", NULL, gs->retransmits);
	summary_u64(t, "bad_checksums", ", bad checksums %v", gs->badsum);
	summary_u64(t, "deadlines_skipped", "; deadlines skipped %v", late_count(p));
	summary_i64(t, "lateness_max_ns", " (max late %v ms)\n", p ? p->late_max_ns : 0);
	summary_scale(t, 1e6, 1);

	const struct task_stats *k = &ss->task;
	int tasks = k->verified + k->hits + k->misses + k->lost != 0;
	static const char *const task_keys[] = { "task_verified", "task_hits", "task_misses", "task_lost",
						 "task_renamed", "task_reads", "task_bytes" };
	for (size_t i = 0; !tasks && i < sizeof task_keys / sizeof task_keys[0]; i++) {
		summary_u64(t, task_keys[i], NULL, 0); /* none counted: zeros, for JSON only */
		summary_json_only(t);
	}
	if (tasks) {
		summary_u64(t, "task_verified", "gdbsample: tasks: %v confirmed in the same round trip", k->verified);
		summary_u64(t, "task_hits", ", %v from the cache", k->hits);
		summary_u64(t, "task_misses", ", %v cost another trip", k->misses);
		summary_u64(t, "task_lost", ", %v unattributed", k->lost);
		summary_u64(t, "task_renamed", "; %v renamed (exec or a reused task struct)\n", k->renamed);
		summary_u64(t, "task_reads", NULL, k->reads);
		summary_u64(t, "task_bytes", NULL, k->bytes);
	}
	summary_u64(t, "filtered", "gdbsample: %v samples left out by --pid/--comm\n", st->filtered);
	if (!st->filtered) {
		summary_hide(t);
		summary_json_only(t);
	}
	summary_u64(t, "unnamed_frames", "gdbsample: %v frames named by no symbol (past every symbol's end: shown as addresses)\n",
		    st->unnamed_frames);
	if (!st->unnamed_frames) summary_hide(t);
	/* said to people only when it happened; always in the key value form */
	summary_u64(t, "watchdog_rescues", "gdbsample: the pause watchdog resumed the guest %v time%s", st->rescues);
	if (!st->rescues) summary_hide(t);
	summary_i64(t, "watchdog_longest_ns", " (gdbsample was held up, longest stop %v ms", st->rescue_max_ns);
	summary_scale(t, 1e6, 0);
	if (!st->rescues) summary_hide(t);
	summary_u64(t, "watchdog_lost_rounds", "; %v sample round%s lost)\n", st->rescued_samples);
	if (!st->rescues) summary_hide(t);
}
