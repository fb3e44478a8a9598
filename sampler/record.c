/* SPDX-License-Identifier: MIT */
/* record.c: the sampling loop shared by `record` and `top`. */
#include "record.h"
#include "offcpu_io.h"
#include "err.h"

volatile sig_atomic_t record_stop;

static void on_signal(int sig)
{
	(void)sig;
	record_stop = 1;
}

/* Every signal whose default would end the process takes the clean way out instead: finish the
 * sample, resume the guest, detach, write what was sampled. (SIGKILL cannot be caught: then the
 * guard resumes the guest.) */
static const int fatal_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
				     SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ };

void record_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: wake clock_nanosleep */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
		sigaction(fatal_signals[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int record_sinks_gone(const struct sinks *k)
{
	return k->gone && k->gone(k->gone_arg);
}

int record_deliver(struct session *ss, struct sinks *k, struct stats *st, const struct sample *s)
{
	if (!task_filter_match(&ss->o->filter, &s->task, s->has_task)) {
		st->filtered++;
		return 0;
	}
	int idle = s->flags & SF_IDLE;
	if (idle) st->idle++;
	if (k->all && k->all->add(k->all, s) < 0) {
		if (record_sinks_gone(k)) return 1;           /* EPIPE: the end of the output, not an error */
		ERR_SET(ss, k->all->err, "%s", k->all->errstr);
		return -1;
	}
	if (idle && !ss->o->idle) return 0;
	st->kept++;
	const struct symtab *syms = session_syms(ss);
	if (s->flags & SF_FIRMWARE) st->firmware++; /* its pc is the firmware's: no kernel symbol's */
	else if (syms) st->unnamed_frames += syms_unnamed(syms, s->frames, s->n, s->exact);
	if (k->text && k->text->add(k->text, s) < 0) {
		if (record_sinks_gone(k)) return 1;
		ERR_SET(ss, k->text->err, "%s", k->text->errstr);
		return -1;
	}
	return 0;
}

/* An off-CPU stack (record --off-cpu) to the writers (the capture, the text): not a vCPU sample,
 * so it counts in none of the run's sample counters (offcpu_summary has its own). 0, -1, 1 as
 * record_deliver. */
int record_deliver_offcpu(struct session *ss, struct sinks *k, const struct sample *s)
{
	if (!task_filter_match(&ss->o->filter, &s->task, s->has_task)) return 0;
	struct writer *w[2] = { k->all, k->text };
	for (int i = 0; i < 2; i++) {
		if (!w[i] || w[i]->add(w[i], s) >= 0) continue;
		if (record_sinks_gone(k)) return 1;
		ERR_SET(ss, w[i]->err, "%s", w[i]->errstr);
		return -1;
	}
	return 0;
}

/* The sinks' tick when due (also in rounds that read nothing: a held VM, a rescue -- `top` reads
 * its keys there). */
void record_tick_if_due(struct sinks *k, struct stats *st, const struct pace *p, int64_t now, int64_t every,
			int64_t *next)
{
	if (!k->tick || now < *next) return;
	st->end_ns = now;
	k->tick(k->tick_arg, st, p);
	*next += every;
	if (*next < now) *next = now + every;
}

/* `replay`: a step to each count of the grid, its samples stamped with it (t_ns holds the
 * instruction count), until the replay is over. */
static int replay_loop(struct session *ss, struct sinks *k, struct stats *st)
{
	static struct sample out[GDB_MAX_CPUS];
	int64_t tick_every = k->tick_ns > 0 ? k->tick_ns : 1000000000LL, next_tick = st->start_ns + tick_every;
	for (;;) {
		int n = 0;
		uint64_t icount = 0;
		int64_t held = 0;
		int got = session_replay_step(ss, out, &n, &icount, &held);
		if (got < 0) {
			st->failed_stops++;
			return -1;
		}
		if (got == 3) return 0;
		stats_pause(st, held, held);
		int d = 0;
		for (int i = 0; i < n && !d; i++) {
			out[i].t_ns = icount;
			d = record_deliver(ss, k, st, &out[i]);
		}
		if (d) return d < 0 ? -1 : 0;
		if (session_modules_refresh(ss, out, n) < 0) return -1;
		int64_t now = pace_now();
		if (k->tick && now >= next_tick) {
			st->end_ns = now;
			k->tick(k->tick_arg, st, NULL);
			next_tick = now + tick_every;
		}
	}
}

int record_loop(struct session *ss, struct sinks *k, struct stats *st, struct pace *p)
{
	static struct sample out[GDB_MAX_CPUS];
	const struct opts *o = ss->o;
	int64_t start = pace_now(), end = o->duration > 0 ? start + (int64_t)(o->duration * 1e9) : 0;
	int64_t tick_every = k->tick_ns > 0 ? k->tick_ns : 1000000000LL;
	int64_t next_tick = start + tick_every;
	stats_init(st, start);
	pace_init(p, o->rate, start);
	p->next_ns = start; /* first sample right away (the VM is stopped since we attached) */
	int stopped = 1, rc = 0;
	if (o->cmd == CMD_REPLAY) {
		rc = replay_loop(ss, k, st);
		st->end_ns = pace_now();
		return rc;
	}
	while (!record_stop) {
		if (!stopped) {
			pace_sleep(p);
			if (record_stop) break;
		}
		int64_t now = pace_now();
		if (end && now >= end) break;
		if (record_sinks_gone(k)) break;                          /* `| head` has read enough: as SIGINT */
		pace_tick(p, now);
		if (pace_should_warn(p, now))
			session_warn(ss, "falling behind: %llu sampling deadlines skipped so far; lower -r",
				     (unsigned long long)p->skipped);
		int n = 0;
		int64_t t0 = pace_now();
		struct pause pz;
		int got = session_sample(ss, out, &n, &pz);        /* stop, read, resume: the session's */
		if (got < 0) {
			st->failed_stops++;
			rc = -1;
			break;
		}
		stopped = 0;
		if (got > 0) {                                     /* a round lost to the pause watchdog, or held */
			record_tick_if_due(k, st, p, now, tick_every, &next_tick);
			continue;
		}
		stats_pause(st, pz.pause_ns, pz.stopped_ns);
		st->dropped = ss->s.p.st.reg_errors;
		int d = 0;
		for (int i = 0; i < n && !d; i++) {
			out[i].t_ns = (uint64_t)(t0 - start);
			d = record_deliver(ss, k, st, &out[i]);
		}
		for (int i = 0; i < ss->noc && !d; i++) { /* --off-cpu: the tasks that were not running */
			ss->ocs[i].t_ns = (uint64_t)(t0 - start);
			d = record_deliver_offcpu(ss, k, &ss->ocs[i]);
		}
		if (d < 0) rc = -1;
		if (d) break;
		if (session_modules_refresh(ss, out, n) < 0) {     /* a module loaded since: read it */
			rc = -1;
			break;
		}
		record_tick_if_due(k, st, p, now, tick_every, &next_tick);
	}
	st->end_ns = pace_now();
	if (end && st->end_ns > end && !rc) st->end_ns = end;
	if (ss->oc && !rc && !record_sinks_gone(k)) { /* --off-cpu: the time since each task's last visit */
		int got;
		while ((got = offcpu_finish(ss->oc, st->end_ns, ss->ocs, OFFCPU_PER_ROUND)) > 0) {
			int d = 0;
			for (int i = 0; i < got && !d; i++) {
				ss->ocs[i].t_ns = (uint64_t)(st->end_ns - start);
				d = record_deliver_offcpu(ss, k, &ss->ocs[i]);
			}
			if (d < 0) rc = -1;
			if (d) break;
		}
	}
	st->rescues = ss->rescues;
	st->rescue_max_ns = ss->rescue_max_ns;
	st->rescued_samples = ss->rescued_rounds;
	return rc;
}
