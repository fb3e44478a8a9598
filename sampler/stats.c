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

/* A row is added plainly (summary.h: said to people by its label, in the key value lines and in
 * JSON by its key); one whose condition is false then takes these shapes (row_unless). */
enum {
	ROW_UNSAID = 1,  /* not said to people (a condition on the text: "only when it happened") */
	ROW_JSON = 2,    /* JSON only: the key value lines leave it out (a zero they never had) */
};

/* Give the last row added the shape `how` unless cond. */
static void row_unless(struct summary *t, int cond, int how)
{
	if (cond) return;
	if (how & ROW_UNSAID) summary_hide(t);
	if (how & ROW_JSON) summary_json_only(t);
}

/* A row whose key is keyfmt of a and b (the per-method and per-reason counters). */
static void named_u64(struct summary *t, const char *keyfmt, const char *a, const char *b, const char *label,
		      uint64_t v)
{
	char key[96];
	snprintf(key, sizeof key, keyfmt, a, b);
	summary_u64(t, key, label, v);
}

void stats_summary(const struct stats *st, const struct sampler_stats *ss, const struct wire_stats *ws,
		   const struct gdb_stats *gs,
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
	summary_i64(t, "rate_requested_hz", rate_hz ? ", %v Hz requested\n" : " (replay: at instruction counts)\n",
		    rate_hz); /* 0: `replay` asks for no rate */
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
	summary_u64(t, "round_trips", ", round trips %v", ws->trips);
	summary_u64(t, "mem_reads", ", stack reads %v", ss->mem_reads);
	summary_u64(t, "mem_bytes", NULL, ss->mem_bytes);
	summary_real(t, NULL, " (%v bytes each", 0, ss->mem_reads ? (double)ss->mem_bytes / (double)ss->mem_reads : 0.0);
	summary_u64(t, "cross_page_reads", ", %v across a page", ss->cross_reads);
	summary_u64(t, "cross_page_failed", ", %v of those re-read)", ss->cross_failed);
	summary_u64(t, NULL, ", on an interrupt vector %v (counted as the interrupted pc)\n", ss->irq_vector);
	summary_u64(t, "idle_reused", NULL, ss->idle_reused);
	summary_u64(t, "hg_elided", NULL, ws->hg_elided);
	summary_u64(t, "hg_elided_wrong", NULL, ws->hg_wrong);

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
			uint64_t v = ss->stops_by[m][i];
			snprintf(label, sizeof label, "%s%s%s %s %%v", first ? (any ? "; " : " ") : "", first ? mn : "",
				 first ? "" : ",", unwind_stop_names[i]);
			named_u64(t, "unwind_stop_%s_%s", mn, unwind_stop_names[i], v ? label : NULL, v);
			row_unless(t, v != 0, ROW_JSON); /* zeros: as key value lines never had them */
			if (v) {
				first = 0;
				any = 1;
			}
		}
	}
	summary_u64(t, "text_reads", "; text bytes read %v", ss->text_reads);
	row_unless(t, ss->text_reads != 0, ROW_UNSAID);
	summary_u64(t, "reg_reads", "; registers read for walks %v", ss->reg_reads);
	row_unless(t, ss->reg_reads != 0, ROW_UNSAID | ROW_JSON);
	summary_text(t, "\n");

	summary_u64(t, "errors_register", "gdbsample: errors: registers %v", ss->reg_errors);
	summary_u64(t, "errors_memory", ", memory %v", ss->mem_errors);
	summary_u64(t, "errors_rejected", ", rejected %v", ws->rejected);
	summary_u64(t, "no_stop_reply", ", no stop reply %v", ws->no_stop_reply);
	summary_u64(t, "failed_rounds", ", failed rounds %v", st->failed_stops);
	summary_u64(t, "naks", ", naks %v", gs->naks);
	summary_u64(t, "retransmits", NULL, gs->retransmits);
	summary_u64(t, "bad_checksums", ", bad checksums %v", gs->badsum);
	summary_u64(t, "deadlines_skipped", "; deadlines skipped %v", late_count(p));
	summary_i64(t, "lateness_max_ns", " (max late %v ms)\n", p ? p->late_max_ns : 0);
	summary_scale(t, 1e6, 1);

	const struct task_stats *k = &ss->task;
	int tasks = k->verified + k->hits + k->misses + k->lost != 0;
	const struct { const char *key, *label; uint64_t v; } task_rows[] = {
		{ "task_verified", "gdbsample: tasks: %v confirmed in the same round trip", k->verified },
		{ "task_hits", ", %v from the cache", k->hits },
		{ "task_misses", ", %v cost another trip", k->misses },
		{ "task_lost", ", %v unattributed", k->lost },
		{ "task_renamed", "; %v renamed (exec or a reused task struct)\n", k->renamed },
		{ "task_reads", NULL, k->reads },
		{ "task_bytes", NULL, k->bytes },
	};
	for (size_t i = 0; i < sizeof task_rows / sizeof task_rows[0]; i++) {
		summary_u64(t, task_rows[i].key, tasks ? task_rows[i].label : NULL, tasks ? task_rows[i].v : 0);
		row_unless(t, tasks, ROW_JSON); /* none counted: zeros */
	}
	summary_u64(t, "filtered", "gdbsample: %v samples left out by --pid/--comm\n", st->filtered);
	row_unless(t, st->filtered != 0, ROW_UNSAID | ROW_JSON);
	summary_u64(t, "unnamed_frames", "gdbsample: %v frames named by no symbol (past every symbol's end: shown as addresses)\n",
		    st->unnamed_frames);
	row_unless(t, st->unnamed_frames != 0, ROW_UNSAID);
	summary_u64(t, "firmware_samples",
		    "gdbsample: %v samples in firmware below the kernel (riscv64 M-mode): shown as [firmware]\n",
		    st->firmware);
	row_unless(t, st->firmware != 0, ROW_UNSAID);
	/* said to people only when it happened; always in the key value form */
	summary_u64(t, "watchdog_rescues", "gdbsample: the pause watchdog resumed the guest %v time%s", st->rescues);
	row_unless(t, st->rescues != 0, ROW_UNSAID);
	summary_i64(t, "watchdog_longest_ns", " (gdbsample was held up, longest stop %v ms", st->rescue_max_ns);
	summary_scale(t, 1e6, 0);
	row_unless(t, st->rescues != 0, ROW_UNSAID);
	summary_u64(t, "watchdog_lost_rounds", "; %v sample round%s lost)\n", st->rescued_samples);
	row_unless(t, st->rescues != 0, ROW_UNSAID);
}
