/* record.c: the sampling loop shared by `record` and `top`. */
#include "record.h"
#include "err.h"

volatile sig_atomic_t record_stop;

static void on_signal(int sig)
{
	(void)sig;
	record_stop = 1;
}

void record_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: wake clock_nanosleep */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int deliver(struct session *ss, struct sinks *k, struct stats *st, const struct sample *s)
{
	int idle = s->flags & SF_IDLE;
	if (idle) st->idle++;
	if (k->all && k->all->add(k->all, s) < 0) {
		ERR_SET(ss, k->all->err, "%s", k->all->errstr);
		return -1;
	}
	if (idle && !ss->o->idle) return 0;
	st->kept++;
	if (k->text && k->text->add(k->text, s) < 0) {
		ERR_SET(ss, k->text->err, "%s", k->text->errstr);
		return -1;
	}
	return 0;
}

int record_loop(struct session *ss, struct sinks *k, struct stats *st, struct pace *p)
{
	static struct sample out[GDB_MAX_CPUS];
	const struct opts *o = ss->o;
	int64_t start = pace_now(), end = o->duration > 0 ? start + (int64_t)(o->duration * 1e9) : 0;
	int64_t next_tick = start + 1000000000LL;
	stats_init(st, start);
	pace_init(p, o->rate, start);
	p->next_ns = start; /* first sample right away (the VM is stopped since we attached) */
	int stopped = 1, rc = 0;
	while (!record_stop) {
		if (!stopped) {
			pace_sleep(p);
			if (record_stop) break;
		}
		int64_t now = pace_now();
		if (end && now >= end) break;
		pace_tick(p, now);
		if (pace_should_warn(p, now))
			session_warn(ss, "falling behind: %llu sampling deadlines skipped so far; lower -r",
				     (unsigned long long)p->skipped);
		int n = 0;
		int64_t t0 = pace_now();
		guard_enter(&ss->guard);
		int taken = sampler_take(&ss->s, out, &n);
		int resumed = taken == 0 ? sampler_resume(&ss->s) : -1;
		int64_t t1 = pace_now();
		if (resumed == 0) {
			guard_leave(&ss->guard);
			stopped = 0;
		}
		if (taken < 0 || resumed < 0) {
			ERR_SET(ss, ss->s.err ? ss->s.err : ss->g.err, "%s", ss->s.err ? ss->s.errstr : ss->g.errstr);
			st->failed_stops++;
			rc = -1;
			break;
		}
		stats_pause(st, t1 - t0);
		st->dropped = ss->s.p.st.reg_errors;
		for (int i = 0; i < n; i++) {
			out[i].t_ns = (uint64_t)(t0 - start);
			if (deliver(ss, k, st, &out[i]) < 0) {
				rc = -1;
				break;
			}
		}
		if (rc) break;
		if (k->tick && now >= next_tick) {
			st->end_ns = now;
			k->tick(k->tick_arg, st, p);
			next_tick += 1000000000LL;
			if (next_tick < now) next_tick = now + 1000000000LL;
		}
	}
	st->end_ns = pace_now();
	if (end && st->end_ns > end && !rc) st->end_ns = end;
	return rc;
}
