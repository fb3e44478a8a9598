/* SPDX-License-Identifier: MIT */
/* session.c: one attachment to a guest -- the kernel image, connection, guard, sampler. */
#include "session.h"
#include "imgcache.h"
#include "err.h"
#include "files.h"
#include "insn.h"
#include "offcpu_io.h"
#include "pace.h"
#include "progress.h"
#include "record.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PLUG_EVERY_NS 1000000000LL /* how often a round looks for a hot-plugged vCPU */
#define MIGRATION_LOOK_NS 20000000LL   /* how often a round asks whether a migration is under way */
#define MIGRATION_QUIET_NS 1000000000LL /* while one is, how long between the rounds that stop the VM */

void session_warn(const struct session *ss, const char *fmt, ...)
{
	va_list ap;
	if (ss->o->quiet) return;
	progress_erase(stderr); /* on a line of its own, not after the status line */
	fprintf(stderr, "gdbsample: warning: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int fail(struct session *ss, int code, const char *what)
{
	ERR_SET(ss, code, "%s", what);
	return -1;
}

const struct symtab *session_syms(const struct session *ss)
{
	return ss->img.syms.n ? &ss->img.syms : NULL;
}

static int syms_text_byte(const void *t, uint64_t addr)
{
	return syms_byte(t, addr);
}

/*
 * aarch64 Linux: the per-CPU __entry_task (BTF says it exists) is current; its address comes from
 * the entry code that loads it into SP_EL0 (el0t_64_sync, from the image's text, already at the
 * guest's addresses). Without image text or that code: attribution off, saying why.
 */
static void linux_percpu_addr(struct session *ss, const struct arch *ga)
{
	struct guestos *os = &ss->img.os;
	const struct symtab *t = &ss->img.syms;
	if (ga->id != ARCH_AARCH64 || !os->cur_sym) {
		os->os = OS_NONE;
		snprintf(os->why, sizeof os->why, "Linux tasks are found on x86_64 and arm64 guests only (%s "
			 "is not supported yet)", ga->name);
		return;
	}
	uint64_t addr = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->syms[i].name, "el0t_64_sync")) {
			uint64_t len = t->syms[i].size ? t->syms[i].size : 0x400;
			if (a64_sp_el0_source(syms_text_byte, t, t->syms[i].addr, len, &addr) == 0) break;
			addr = 0;
		}
	if (!addr) {
		os->os = OS_NONE;
		snprintf(os->why, sizeof os->why, "the address of the per-CPU %s is not known: el0t_64_sync's text "
			 "(from the kernel image) does not load SP_EL0 from it as 6.1's entry code does", os->cur_sym);
		return;
	}
	os->cur_off = addr;
	size_t n = strlen(os->what);
	snprintf(os->what + n, sizeof os->what - n, " (__entry_task at 0x%llx)", (unsigned long long)addr);
	os->cur_sym = NULL;
}

/* What reading the kernel from guest memory found and cost, on stderr. */
static void kfind_note(const struct session *ss)
{
	const struct kfind_stats *k = &ss->kf;
	progress_erase(stderr);
	fprintf(stderr, "gdbsample: kernel found in guest memory%s: %zu function names%s%s; read %.1f MB in %u stops "
		"(the attach's %.1f ms, the longest other %.1f ms, %u over 20 ms, %u rescued) in %.2f s\n",
		k->cached ? " (cached, checked)" : k->cache_written ? " (kept in the cache)" : "", ss->img.syms.n,
		k->orc ? ", ORC" : "", k->btf ? ", BTF" : "", (double)k->bytes / 1e6, k->stops, (double)k->first_ns / 1e6,
		(double)k->longest_ns / 1e6, k->over, k->rescued, (double)k->elapsed_ns / 1e9);
}

/* --tasks FILE: read and parse the description (its DWARF resolution comes with the image). */
static int read_tasks(struct session *ss, const char *path)
{
	uint8_t *buf;
	size_t len;
	char why[512];
	if (file_read(path, TD_TEXT_MAX + 1, &buf, &len, why, sizeof why) < 0) {
		ERR_SET(ss, ERR_USAGE, "--tasks %s", why);
		return -1;
	}
	int rc = taskdesc_parse((const char *)buf, len, &ss->desc, why, sizeof why);
	free(buf);
	if (rc < 0) {
		ERR_SET(ss, ERR_USAGE, "--tasks %s: %s", strcmp(path, "-") ? file_base(path) : "-", why);
		return -1;
	}
	return 0;
}

/* A description's place, after the attach: globals move with the KASLR slide; the register it
 * names must be the stub's, the fields must fit one read. An error, never a silent fallback. */
static int check_tasks(struct session *ss, const struct arch *ga)
{
	struct guestos *os = &ss->img.os;
	if (os->os != OS_DESC || plan_tasks_on(&ss->s.p)) return 0;
	uint32_t lo, len;
	task_span(os, &lo, &len);
	if (len > SAMPLE_WINDOW)
		ERR_SET(ss, ERR_USAGE, "--tasks: the task's pid and name lie %u bytes apart, more than one read "
			"(%d bytes) holds", len, SAMPLE_WINDOW);
	else
		ERR_SET(ss, ERR_USAGE, "--tasks: the gdbstub's %s registers include no `%s`", ga->name,
			os->cur_reg[0] ? os->cur_reg : ga->pcpu ? ga->pcpu : "per-CPU base register");
	return -1;
}

/* What the image cache did, once, unless -q: a refused entry or a failed store as a warning, a
 * first store as a note (where, and how not to). */
static void image_cache_said(const struct session *ss)
{
	const struct image *im = &ss->img;
	if (ss->o->quiet) return;
	if (im->cache == IMGCACHE_REFUSED)
		session_warn(ss, "the image cache refused %s; decompressed again%s", im->cache_why,
			     im->cache_stored ? " and kept anew" : "");
	else if (im->cache == IMGCACHE_UNSTORED)
		session_warn(ss, "the decompressed kernel could not be kept for the next start: %s", im->cache_why);
	else if (im->cache == IMGCACHE_STORED)
		fprintf(stderr, "gdbsample: the decompressed kernel (%.0f MB) kept in %s for the next start "
			"(--no-cache: neither kept nor read)\n", (double)im->elflen / 1e6, im->cache_why);
}

#define FIND_MIN_S 120.0 /* the least time finding the kernel in the guest may take (seconds) */

int session_open(struct session *ss, const struct opts *o)
{
	memset(ss, 0, sizeof *ss);
	ss->o = o;
	ss->klo = o->klo;
	ss->khi = o->khi;
	int want = o->unwind == UNWIND_FP ? 0 : o->unwind == UNWIND_CFI ? IMG_WANT_CFI
		   : o->unwind == UNWIND_ORC ? IMG_WANT_ORC : IMG_WANT_ORC | IMG_WANT_CFI;
	if (o->offcpu) want |= IMG_WANT_OFFCPU;
	if (o->tasks && read_tasks(ss, o->tasks) < 0) return -1;                      /* before touching the VM */
	if (o->no_cache) want |= IMG_NO_CACHE;
	if (o->nelf && image_load(&ss->img, o->elf, o->nelf, want, o->os, o->tasks ? &ss->desc : NULL) < 0)
		return fail(ss, ss->img.err, ss->img.errstr);
	image_cache_said(ss);
	if (o->offcpu && offcpu_image_check(&ss->img, ss->errstr, sizeof ss->errstr) < 0) { /* before the VM */
		ss->err = ERR_USAGE;
		return -1;
	}
	ss->stopped_since = pace_now(); /* at the latest: connecting (below) stops the VM */
	int kind = o->qmp ? ATTACH_QMP : o->domain ? ATTACH_DOMAIN : ATTACH_GDBSTUB;
	ss->at.kind = kind;
	/* One deadline for the whole connection phase -- the monitor, connect, handshake -- and
	 * every signal that ends a run ends it too (record_stop): a stub that
	 * answers each request just inside its timeout must not hold gdbsample for minutes. */
	long long deadline = conn_now_ms() + (long long)(o->connect_timeout * 1000);
	if (kind != ATTACH_GDBSTUB &&
	    attach_open(&ss->at, kind, o->qmp ? o->qmp : o->domain, o->uri, deadline, &record_stop) < 0)
		return fail(ss, ss->at.err, ss->at.errstr);
	/* The guard connects and hands us the connection: whoever stops the VM by connecting, the
	 * guard (in a session of its own) already holds the socket to resume it. */
	int gr = kind != ATTACH_GDBSTUB
		 ? guard_start(&ss->guard, &ss->g, "127.0.0.1", ss->at.port, NULL, "$c#63", (int64_t)(o->max_pause * 1e9),
			       attach_rescue, &ss->at, deadline, &record_stop)
		 : guard_start(&ss->guard, &ss->g, o->sock ? NULL : o->host, o->port, o->sock, "$c#63",
			       (int64_t)(o->max_pause * 1e9), NULL, NULL, deadline, &record_stop);
	if (gr < 0) return fail(ss, ss->g.err ? ss->g.err : ERR_SYS, ss->g.err ? ss->g.errstr : ss->guard.errstr);
	ss->g.conn.deadline_ms = deadline;
	ss->g.conn.intr = &record_stop;
	ss->g.gate = guard_gate; /* every write to the stub under the watchdog's lock */
	ss->g.gate_arg = &ss->guard;
	ss->attached = 1;
	if (kind != ATTACH_GDBSTUB) {
		char tids[128] = "";
		for (int i = 0, n = 0; i < ss->at.ncpu && n < (int)sizeof tids - 12; i++)
			n += snprintf(tids + n, sizeof tids - (size_t)n, "%s%ld", i ? "," : "", ss->at.tids[i]);
		snprintf(ss->how, sizeof ss->how, "via %s %s, accel %s, %d vCPUs (host threads %s), gdbstub %s",
			 attach_kind_name(kind), ss->at.target, ss->at.accel, ss->at.ncpu, tids, ss->g.conn.where);
		if (!o->quiet) fprintf(stderr, "gdbsample: attached %s\n", ss->how);
	}
	if (gdb_handshake(&ss->g) < 0) {
		if (ss->g.not_stub) { /* a QEMU monitor: nothing was stopped, nothing to detach from */
			guard_finish(&ss->guard, 1);
			ss->attached = 0;
		}
		return fail(ss, ss->g.err, ss->g.errstr);
	}
	/* Was the VM paused before we came? With --qmp/--domain attach_open saw it running
	 * (query-status) or refused it. Through a gdbstub alone, QEMU < 8.1 tells: it greets a
	 * client whose connection stopped a running VM (gdb_handshake). QEMU >= 8.1 greets nobody and
	 * no reply tells the two apart: there we cannot see it (docs/attach.md). */
	if (ss->g.runstate[0] ||
	    (kind == ATTACH_GDBSTUB && ss->g.qemu_version && ss->g.qemu_version < 801 && !ss->g.greeted)) {
		snprintf(ss->held_buf, sizeof ss->held_buf, "%s%s%s before gdbsample came", ss->g.runstate[0] ? "in state " : "paused",
			 ss->g.runstate, "");
		ss->held = ss->held_at_start = 1;
		ss->held_why = ss->held_buf;
		ss->held_episodes = 1;
		ss->g.running = 1; /* our next stop starts with a 0x03: it tells when the VM runs again */
		guard_leave(&ss->guard); /* not ours: the guard must not resume it */
	} else {
		/* Ours: from here on the watchdog bounds the attach's stop as it bounds a sample's (the
		 * handshake itself it cannot: until then the stop may be an operator's pause). A rescue
		 * during what follows ends the attach with ERR_RESCUED, or a slice's read recovers. */
		guard_arm(&ss->guard);
	}
	if (!ss->g.conn.loopback)
		session_warn(ss, "%s is not a loopback address: the gdbstub gives full control of the guest "
			     "to anyone who can reach it", ss->g.conn.where);
	const struct arch *ga = ss->g.layout.arch;
	if (ss->img.syms.machine && ss->img.syms.machine != ga->elf_machine) {
		ERR_SET(ss, ERR_MISMATCH, "the kernel image is not for %s, which the guest is", ga->name);
		return -1;
	}
	struct opts *mo = (struct opts *)o;
	ss->ncpu = cli_cpus(mo, ss->g.ncpu, ss->cpus);
	if (ss->ncpu < 0) return fail(ss, ERR_USAGE, mo->errstr);
	/* Finding the kernel reads megabytes in slices (a bare -p: ~15 MB; the KASLR search with a vCPU
	 * in a module: ~500 candidates), and a loaded host takes seconds more than a quiet one: it gets
	 * a deadline of its own, FIND_MIN_S or --connect-timeout if longer, from here. */
	double find_s = o->connect_timeout > FIND_MIN_S ? o->connect_timeout : FIND_MIN_S;
	ss->g.conn.deadline_ms = conn_now_ms() + (long long)(find_s * 1000);
	int bare = !o->nelf || ss->img.only_kos;                          /* no kernel given (.ko files only) */
	if (bare && kfind_kernel(ss) < 0) return -1;                      /* a bare -p: the kernel from memory */
	if (bare && ss->kf.found && !o->quiet) kfind_note(ss);
	if (bare && !ss->kf.tried)                                         /* kfind said nothing: say why */
		session_warn(ss, "no kernel image (-e): frames are raw addresses, because %s (give the kernel ELF, "
			     "its vmlinuz or a System.map/kallsyms with -e)", ga->id != ARCH_X86_64 && ga->id != ARCH_AARCH64
			     ? "gdbsample reads a kernel's names from guest memory on x86_64 and aarch64 only"
			     : "no vCPU runs a kernel in the upper half, where gdbsample reads a Linux kernel's names "
			       "from guest memory");
	if (ss->img.syms.n && locate_kernel(ss) < 0) return -1;            /* KASLR, tables, unwinders */
	if (ss->img.has_orc) { /* names are at this boot's addresses now */
		const struct symtab *t = &ss->img.syms;
		int m = (t->marks >> MARK_FORK_ASM) & 1 ? MARK_FORK_ASM : MARK_FORK;
		ss->img.orc.fork_ret = (t->marks >> m) & 1 ? t->mark[m] : 0;
	}
	struct sampler_cfg cfg = { session_syms(ss), ss->nmethods, { 0 }, ss->img.has_orc ? &ss->img.orc : NULL,
				   ss->img.has_cfi ? &ss->img.cfi : NULL, ss->klo, ss->khi, o->max_frames, NULL, 0 };
	memcpy(cfg.order, ss->methods, sizeof cfg.order);
	if (ss->img.os.os == OS_DESC && ss->img.os.cur_linked) ss->img.os.cur_off += (uint64_t)ss->kaslr.slide;
	cfg.os = &ss->img.os;
	cfg.pac_mask = ss->pac_mask;
	if (sampler_init(&ss->s, &ss->g, &cfg, ss->cpus, ss->ncpu) < 0)
		return fail(ss, ERR_SYS, ss->s.errstr);
	if (ss->img.os.os == OS_LINUX && ga->id != ARCH_X86_64) linux_percpu_addr(ss, ga);
	if (check_tasks(ss, ga) < 0) return -1;
	if (ss->img.os.os != OS_NONE && !plan_tasks_on(&ss->s.p)) {
		ss->img.os.os = OS_NONE;
		snprintf(ss->img.os.why, sizeof ss->img.os.why, "the gdbstub's %s registers include no %s (the "
			 "per-CPU base)", ga->name, ga->pcpu ? ga->pcpu : "per-CPU base register");
	}
	if (ss->img.os.os == OS_NONE && ss->img.syms.n && o->os != OS_NONE) {
		if (task_filter_on(&o->filter)) {
			ERR_SET(ss, ERR_USAGE, "--pid/--comm: task attribution is off: %s", ss->img.os.why);
			return -1;
		}
		session_warn(ss, "task attribution off: %s", ss->img.os.why);
	}
	for (int i = 0; i < ss->g.ncpu; i++)
		if (ss->g.tids[i] >= ss->next_tid) ss->next_tid = ss->g.tids[i] + 1;
	ss->next_plug_ns = pace_now() + PLUG_EVERY_NS;
	ss->next_mig_ns = 0; /* the first round looks */
	ss->g.conn.deadline_ms = 0; /* connected: from here on each request has its own timeout */
	ss->g.conn.intr = NULL;     /* and a signal ends the run after the sample in flight */
	if (o->cmd == CMD_REPLAY) return session_replay_begin(ss); /* stopped, on the grid */
	if (ss->held_at_start)
		session_warn(ss, "the VM was %s: it is left so%s", ss->held_why,
			     o->cmd == CMD_DUMP ? "" : "; sampling starts when it runs again");
	return 0;
}

int session_recover(struct session *ss)
{
	if (ss->g.err != ERR_RESCUED) return -1;
	if (ss->g.raced && gdb_resync(&ss->g) < 0) return -1;
	ss->g.err = 0;
	ss->g.running = 1;
	ss->rescues = guard_acknowledge(&ss->guard);
	return 0;
}

/* Someone else stopped the VM: say so, once per episode. */
static void hold(struct session *ss, const char *why)
{
	ss->held = 1;
	ss->held_why = why;
	ss->migrating = 0; /* a migration's own end (T18, postmigrate) is a hold like any other */
	ss->mig_quiet_until_ns = 0;
	ss->held_episodes++;
	session_warn(ss, "the VM was %s: not sampling it, and leaving it stopped; sampling goes on when it "
		     "runs again", why);
}

/* Once a second, with the VM stopped by us: has a vCPU been hot-plugged (a thread id past the last
 * one we know answers QEMU's `T`)? It is not sampled -- the sampler's vCPU set is fixed at attach
 * -- but counted and named. One request; -1 on a lost connection. */
static int look_for_hotplug(struct session *ss)
{
	int64_t now = pace_now();
	if (now < ss->next_plug_ns) return 0;
	ss->next_plug_ns = now + PLUG_EVERY_NS;
	for (int k = 0; k < 8; k++) { /* several may have come at once */
		int alive = gdb_alive(&ss->g, ss->g.pids[0], ss->next_tid);
		if (alive < 0) return -1;
		if (!alive) return 0;
		ss->hotplugged++;
		session_warn(ss, "a vCPU was hot-plugged during the run (gdbstub thread %d): it is not sampled; "
			     "restart gdbsample to sample it", ss->next_tid);
		ss->next_tid++;
	}
	return 0;
}

/*
 * A migration under way. Its last step stops the VM, saves it and marks it `postmigrate`. Landing
 * while we hold the VM it makes the destination start paused (the state it saves is our pause),
 * and it races our `c`: a resume between QEMU's save and its `postmigrate` aborts QEMU 7.2
 * ("invalid runstate transition: 'running' -> 'postmigrate'"; a `make test` beside CPU hogs lost
 * its guest so, where gdbsample was held up between changed_hands and its `c`). The stub cannot
 * be asked while the VM runs (any byte stops it), so a round asks with the VM stopped, at most
 * every MIGRATION_LOOK_NS: once one is under way, rounds stop the VM only once a second (to see
 * how it goes) until it ends -- by its own stop (a stop reply: held like any other) or failed or
 * cancelled (sampling goes on). Rounds skipped meanwhile are counted. Not seen: a migration that
 * starts and ends between two looks (ours took 34 ms on QEMU 7.2), or inside one pause.
 * -1 on a lost connection.
 */
static int look_for_migration(struct session *ss)
{
	int64_t now = pace_now();
	if (!ss->g.qemu_version || now < ss->next_mig_ns) return 0;
	ss->next_mig_ns = now + MIGRATION_LOOK_NS;
	int m = gdb_migrating(&ss->g);
	if (m < 0) return -1; /* ss->g.err: a rescue the round recovers from, or the error it reports */
	if (m == 2) { /* not the text we know: say so once, and stop asking */
		ss->next_mig_ns = INT64_MAX;
		session_warn(ss, "QEMU's \"info migrate\" is not the text gdbsample knows (%.60s): a migration "
			     "during the run will not be seen", ss->g.cons);
		return 0;
	}
	if (m && !ss->migrating)
		session_warn(ss, "a migration is under way: stopping the VM only once a second until it ends");
	if (!m && ss->migrating) session_warn(ss, "no migration is under way any more: sampling goes on");
	ss->migrating = m;
	ss->mig_quiet_until_ns = m ? now + MIGRATION_QUIET_NS : 0;
	return 0;
}

/*
 * Why the VM our 0x03 found stopped, unannounced, is stopped: its run state, on a QEMU stub (one
 * round trip; the VM is stopped). QEMU >= 8.1 sends a stop reply only after a `c` (or a 0x03), so
 * a migration that ends after our resume through the monitor (resume_in_migration) stops the VM
 * without a word, as a `stop` would after `D;1`.
 */
static const char *stopped_why(struct session *ss)
{
	char state[24];
	if (!ss->g.qemu_version) return "stopped by someone else";
	int r = gdb_run_state(&ss->g, state, sizeof state);
	return r < 0 ? "stopped by someone else" : gdb_state_reason(r, state);
}

/*
 * Our resume while a migration is under way: HMP `cont` through the stub instead of `c`. The
 * run-state check before a resume (changed_hands) leaves a window -- its reply, then our `c` -- and
 * a migration finishing lands in it more often than chance: a VM we hold dirties no memory, so the
 * migration's last pass comes in our pause. Its first step moves the VM to finish-migrate; `c`
 * would then start it, and QEMU 7.2 and 10.0 abort on the next ('running' -> 'postmigrate': seen
 * on 10.0 in a `make test` beside CPU hogs). `cont` checks and resumes under QEMU's lock, and
 * refuses finish-migrate ("Migration is not finalized yet"): 1, and the VM is held; 0 resumed;
 * -1 on a lost connection. One more round trip than `c` (which has no reply), so only while a
 * migration is known: one that starts after this pause's look and ends inside the same pause is
 * not covered. A migration that ends after the check and after `cont` -- the time of one round
 * trip -- would be resumed from postmigrate (undone), not aborted.
 */
static int resume_in_migration(struct session *ss)
{
	return gdb_monitor_cont(&ss->g); /* -1: ss->g.err, as changed_hands */
}

/*
 * Whether the VM we stopped has meanwhile passed into a run state that is not a plain pause -- a
 * migration finishing (`finish-migrate`), a shutdown, an I/O error: QEMU changes the state of a
 * stopped VM silently, and our `c` would start it again. For a migration that is worse than an
 * undone pause: QEMU 7.2 then aborts ("invalid runstate transition: 'running' -> 'postmigrate'",
 * seen twice beside CPU hogs). Our own stop is `paused` (the gdbstub stops a running VM with
 * RUN_STATE_PAUSED), and so is a monitor `stop` meanwhile, which cannot be told apart (the limit
 * below). One qRcmd round trip before every resume, on QEMU stubs only: 1 (and *why) if the VM is
 * not ours to resume, 0 if it is, -1 on a lost connection. A state change between this reply and
 * our `c` (the time of one packet) is not seen.
 */
static int changed_hands(struct session *ss, const char **why)
{
	static char state[24], text[160];
	if (!ss->g.qemu_version) return 0;
	int r = gdb_run_state(&ss->g, state, sizeof state);
	if (r < 0) return -1; /* ss->g.err: set on the session by the round -- unless it was a rescue,
			       * which the round recovers from (a session error would outlive it) */
	if (gdb_state_is_ours(r, state)) return 0;
	/* A migration that ended inside our pause saved our pause: its destination starts paused. */
	int migrated = !strcmp(state, "postmigrate") || !strcmp(state, "finish-migrate");
	snprintf(text, sizeof text, "put in state %s while we held it%s", state,
		 migrated ? " (the migration ended inside our pause, so its destination starts paused: "
			    "`cont` it there)" : "");
	*why = text;
	return 1;
}

/* A round whose samples were read while the VM was ours, after which it is not ours to resume:
 * held, its pause accounted as any round's. 0. */
static int held_after_sample(struct session *ss, struct pause *pz, int64_t t0, const char *why)
{
	ss->g.running = 1; /* as for any stop not ours: the probe each round sees it end */
	guard_leave(&ss->guard);
	hold(ss, why);
	int64_t t1 = pace_now();
	pz->pause_ns = t1 - t0;
	pz->stopped_ns = t1 - (ss->s.stopped_at_ns > t0 ? ss->s.stopped_at_ns : t0);
	return 0;
}

/*
 * Never resume a VM someone else stopped. The evidence, from the gdbstub itself (every way of
 * attaching goes through one), checked on QEMU 7.2 and 10.0:
 *  - a stop while the VM runs -- a monitor `stop` (what `virsh suspend` does), a shutdown with
 *    -no-shutdown, an I/O error, a watchdog -- makes QEMU send a stop reply unasked
 *    (gdb_vm_state_change; the signal says which). We look for one, without waiting, before
 *    every round (gdb_take_unasked).
 *  - a 0x03 to a VM that is already stopped is discarded: the requests behind it are answered
 *    with no stop reply first. That tells "still stopped by someone else" from "running again"
 *    (gdb_probe_stop), and catches a stop that came with no reply (sampler_take counts it).
 * Held, we send only that probe each round (the VM is stopped anyway), never a `c`; the guard is
 * told the VM is not ours, so neither its watchdog nor its last-resort resume undoes the pause.
 * Not seen: a stop that lands while we hold the VM stopped for a sample (QEMU itself does nothing
 * then, and our `c` resumes the VM), or between the look and our 0x03 (tens of microseconds).
 */
int session_sample(struct session *ss, struct sample *out, int *n, struct pause *pz)
{
	*n = 0;
	int64_t t0 = pace_now();
	pz->pause_ns = pz->stopped_ns = 0;
	if (!ss->held && ss->g.running) {
		int sig = 0, k = gdb_take_unasked(&ss->g, &sig);
		if (k < 0) {
			ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
			return -1;
		}
		if (k > 0) hold(ss, gdb_stop_reason(sig));
	}
	if (!ss->held && ss->mig_quiet_until_ns > t0) { /* a migration under way: leave the VM be */
		ss->migration_rounds++;
		return 2;
	}
	guard_enter(&ss->guard);
	if (ss->held && ss->read_held) { /* dump: read the stopped VM as it is, resume nothing */
		ss->g.running = 0;
		guard_leave(&ss->guard);
		int rc = sampler_take(&ss->s, out, n);
		if (rc < 0) ERR_SET(ss, ss->s.err, "%s", ss->s.errstr);
		ss->g.running = 1;
		return rc;
	}
	if (ss->held) {
		int r = gdb_probe_stop(&ss->g);
		if (r == 0) {
			guard_leave(&ss->guard); /* still stopped, not by us */
			ss->held_rounds++;
			return 2;
		}
		if (r > 0) {
			ss->held = 0; /* it ran again, and our 0x03 stopped it: a round like any other */
			session_warn(ss, "the VM runs again: sampling goes on");
		}
	}
	int was_running = ss->g.running;
	uint64_t no_reply = ss->s.st.no_stop_reply;
	if (ss->oc && !ss->held) { /* the off-CPU reads, known before the stop, ride in its write */
		ss->s.nxb = offcpu_prepare(ss->oc);
		ss->s.xb = ss->oc->blocks;
		ss->s.xcpu = ss->oc->cpu;
	}
	int taken = ss->held ? -1 : sampler_take(&ss->s, out, n);
	int x_sent = ss->s.x_sent;
	ss->s.nxb = 0;
	ss->s.x_sent = 0;
	if (taken == 0 && was_running && ss->s.st.no_stop_reply != no_reply) {
		/* Our 0x03 found the VM stopped, and no stop reply had told us: not ours to resume. */
		*n = 0;
		ss->g.running = 1;
		guard_leave(&ss->guard);
		hold(ss, stopped_why(ss));
		ss->held_rounds++;
		return 2;
	}
	ss->noc = 0;
	if (taken == 0 && ss->oc) { /* the tasks that are not running, in the same stop */
		int64_t now = pace_now();
		offcpu_running(ss->oc, out, *n, now); /* who ran: time they are owed nothing for */
		int cpu = -1, user = 0; /* a vCPU in kernel mode (KPTI); was the one read through not? */
		for (int i = 0; i < *n; i++) {
			int k = out[i].flags & (SF_USER | SF_FIRMWARE);
			if (!k && (cpu < 0 || out[i].cpu == ss->oc->cpu)) cpu = out[i].cpu;
			if (k && out[i].cpu == ss->oc->cpu) user = 1;
		}
		int k = offcpu_take(ss, ss->oc, x_sent, cpu, user, now, ss->ocs, OFFCPU_PER_ROUND);
		if (k < 0) taken = -1;
		else ss->noc = k;
	}
	if (taken == 0 && look_for_hotplug(ss) < 0) taken = -1;
	if (taken == 0 && look_for_migration(ss) < 0) taken = -1;
	if (taken == 0) {
		const char *why = NULL;
		int k = changed_hands(ss, &why);
		if (k < 0) taken = -1;
		if (k > 0) /* e.g. a migration finishing: our `c` would abort QEMU (see changed_hands) */
			return held_after_sample(ss, pz, t0, why);
	}
	int resumed = taken != 0 ? -1 : ss->migrating ? resume_in_migration(ss) : sampler_resume(&ss->s);
	if (resumed == 1) /* the monitor refused: the migration is finishing (see resume_in_migration) */
		return held_after_sample(ss, pz, t0, "put in state finish-migrate while we held it (the migration "
					 "ended inside our pause, so its destination starts paused: `cont` it there)");
	int64_t t1 = pace_now(), from = ss->s.stopped_at_ns > t0 ? ss->s.stopped_at_ns : t0;
	pz->pause_ns = t1 - t0;
	pz->stopped_ns = t1 - from;
	if (resumed == 0) {
		guard_leave(&ss->guard);
		return 0;
	}
	if (ss->g.err == ERR_RESCUED) {
		/* We were held up and the guard's watchdog resumed the guest; our write was refused, so
		 * the stream holds nothing stale -- or it raced the rescue, and we resume and drain
		 * (gdb_resync): the VM runs and sampling goes on. A round read whole before the rescue
		 * is still good. */
		if (session_recover(ss) < 0) {
			ERR_SET(ss, ss->g.err, "after the pause watchdog's rescue: %s", ss->g.errstr);
			return -1;
		}
		ss->s.err = 0;
		if (ss->guard.sh && ss->guard.sh->longest_ns > ss->rescue_max_ns) ss->rescue_max_ns = ss->guard.sh->longest_ns;
		if (ss->guard.sh && ss->guard.sh->rescued_at_ns > t0) { /* the guest ran from the rescue on */
			pz->pause_ns = ss->guard.sh->rescued_at_ns - t0;
			pz->stopped_ns = ss->guard.sh->rescued_at_ns > from ? ss->guard.sh->rescued_at_ns - from : 0;
		}
		session_warn(ss, "gdbsample was held up and the pause watchdog resumed the guest after more than "
			     "%.0f ms (rescue %llu)", ss->o->max_pause * 1e3, (unsigned long long)ss->rescues);
		if (taken == 0) return 0;
		ss->rescued_rounds++;
		*n = 0;
		return 1;
	}
	ERR_SET(ss, ss->s.err ? ss->s.err : ss->g.err, "%s", ss->s.err ? ss->s.errstr : ss->g.errstr);
	return -1;
}

int session_close(struct session *ss)
{
	int rc = 0;
	ss->g.conn.deadline_ms = 0; /* a failed open: the detach has its own timeouts */
	ss->g.conn.intr = NULL;
	if (ss->attached && !ss->held && ss->g.running) { /* stopped by someone since the last round? */
		int sig = 0, k = gdb_take_unasked(&ss->g, &sig);
		if (k > 0) hold(ss, gdb_stop_reason(sig));
	}
	if (ss->attached && !ss->held && ss->g.running) {
		/* D;1 must reach a stopped VM: a byte sent to a running QEMU 7.2 stops it and is eaten.
		 * The probe stops it -- or finds it stopped already, by someone else. */
		guard_enter(&ss->guard);
		int r = gdb_probe_stop(&ss->g);
		if (r == 0) {
			guard_leave(&ss->guard);
			hold(ss, "stopped by someone else");
		} else if (r < 0) {
			ss->g.running = 0; /* the error path below resumes it through the guard */
		}
	}
	if (ss->attached && ss->held) {
		/* Someone else holds it stopped: leave without D;1 (which would resume it). Closing the
		 * connection leaves a QEMU VM as it is; the guard, told it is not ours, goes quietly. */
		guard_finish(&ss->guard, 1);
		ss->attached = 0;
		ss->at.leave_paused = 1;
		session_warn(ss, "left the VM stopped as we found it (%s)", ss->held_why);
	}
	if (ss->attached) {
		guard_enter(&ss->guard); /* a second enter after the probe's only starts a new generation */
		if ((ss->g.running && gdb_stop(&ss->g) < 0) || gdb_sync(&ss->g) < 0 || gdb_detach(&ss->g) < 0) {
			if (ss->g.err == ERR_RESCUED) { /* held up while detaching: the guard resumed the
							 * guest, as during a round; the result stands */
				session_warn(ss, "gdbsample was held up while detaching and the pause watchdog "
					     "resumed the guest");
			} else {
				ERR_SET(ss, ss->g.err, "detach: %s", ss->g.errstr);
				rc = -1;
			}
		} else {
			guard_finish(&ss->guard, 1); /* detached cleanly: the guard has nothing to do */
		}
		ss->attached = 0;
	}
	guard_finish(&ss->guard, 0); /* after a failure the guard (still armed) resumes the VM itself */
	gdb_close(&ss->g);
	if (attach_close(&ss->at) < 0) { /* `gdbserver none`, and the VM must be running */
		if (!rc) ERR_SET(ss, ss->at.err, "%s", ss->at.errstr);
		rc = -1;
	}
	sampler_free(&ss->s);
	mods_free(&ss->mods);
	image_free(&ss->img);
	return rc;
}
