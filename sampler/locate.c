/* SPDX-License-Identifier: MIT */
/* locate.c: find the guest kernel the image describes -- its KASLR offsets, its ORC tables in
 * guest memory when only a map was given -- and choose the unwinders. The VM is stopped. */
#include "session.h"
#include "err.h"
#include <stdlib.h>
#include <unistd.h>
#include "pace.h"

#define ORC_MAX_BYTES (64u << 20) /* larger ORC sections than any kernel has: a bad map */

struct reader {
	struct session *ss;  /* the session */
	int cpu;             /* vCPU whose page tables map the kernel */
};

static int rd(void *arg, uint64_t addr, uint8_t *buf, int len)
{
	struct reader *r = arg;
	int rc = gdb_mem(&r->ss->g, r->cpu, addr, buf, len);
	return rc == -1 ? -2 : rc == -2 ? -1 : 0;
}

/* A vCPU in kernel mode (its page tables map the kernel even with KPTI) and its pc: one whose pc
 * the image's text can hold if there is one (it narrows the KASLR search), else any other. */
static int kernel_vcpu(struct session *ss, uint64_t *pc)
{
	const struct layout *l = &ss->g.layout;
	int found = -1;
	for (int i = 0; i < ss->ncpu; i++) {
		uint8_t regs[1024];
		int n = gdb_regs(&ss->g, ss->cpus[i], regs, sizeof regs);
		if (n < 0) return -2;
		uint64_t p = arch_reg(l->pc, regs, n);
		if (arch_is_user(l, regs, n) == 1 || p < ss->klo || p > ss->khi) continue;
		int narrows = kaslr_pc_narrows(&ss->img.syms, p);
		if (found < 0 || narrows) {
			found = ss->cpus[i];
			*pc = p;
		}
		if (narrows) break;
	}
	return found;
}

/*
 * A kernel-mode vCPU, letting the guest run a moment at a time while every vCPU is in user mode:
 * with KPTI a user-mode vCPU's page tables do not map the kernel, so its memory says nothing
 * about KASLR. Gives up (-1: read through the first vCPU) after LOCATE_WAITS short runs.
 */
#define LOCATE_WAITS 50      /* runs of LOCATE_RUN_US: ~0.1 s at most */
#define LOCATE_RUN_US 2000
static int kernel_vcpu_wait(struct session *ss, uint64_t *pc)
{
	int cpu = kernel_vcpu(ss, pc);
	for (int i = 0; cpu == -1 && i < LOCATE_WAITS; i++) {
		if (gdb_cont(&ss->g) < 0) return -2;
		usleep(LOCATE_RUN_US);
		if (gdb_stop(&ss->g) < 0) return -2;
		cpu = kernel_vcpu(ss, pc);
	}
	return cpu;
}

/* ORC tables at the map's __start_orc_unwind_ip & co, read from the guest (relocated marks). */
static int guest_orc(struct session *ss, int cpu)
{
	const struct symtab *t = &ss->img.syms;
	uint32_t need = 1u << MARK_ORC_IP_START | 1u << MARK_ORC_IP_STOP | 1u << MARK_ORC_START | 1u << MARK_ORC_STOP;
	if ((t->marks & need) != need) return 0;
	uint64_t ip0 = t->mark[MARK_ORC_IP_START], ipn = t->mark[MARK_ORC_IP_STOP];
	uint64_t e0 = t->mark[MARK_ORC_START], en = t->mark[MARK_ORC_STOP];
	if (ipn <= ip0 || en <= e0 || ipn - ip0 > ORC_MAX_BYTES || en - e0 > ORC_MAX_BYTES) {
		ERR_SET(ss, ERR_FORMAT, "the map's ORC table symbols make no sense (__start_orc_unwind_ip ... "
			"__stop_orc_unwind)");
		return -1;
	}
	uint8_t *ips = malloc(ipn - ip0), *ents = malloc(en - e0), hdr[20];
	int have_hdr = ((t->marks >> MARK_ORC_HDR_START) & 1) && ((t->marks >> MARK_ORC_HDR_STOP) & 1) &&
		       t->mark[MARK_ORC_HDR_STOP] - t->mark[MARK_ORC_HDR_START] == sizeof hdr;
	int rc = -1;
	if (!ips || !ents) {
		ERR_SET(ss, ERR_SYS, "out of memory");
		goto out;
	}
	int a = gdb_read_block(&ss->g, cpu, ip0, ips, ipn - ip0);
	int b = a == -1 ? -1 : gdb_read_block(&ss->g, cpu, e0, ents, en - e0);
	int c = b == -1 || !have_hdr ? b : gdb_read_block(&ss->g, cpu, t->mark[MARK_ORC_HDR_START], hdr, sizeof hdr);
	if (a == -1 || b == -1 || c == -1) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		goto out;
	}
	if (a || b || c) {
		ERR_SET(ss, ERR_MISMATCH, "cannot read the ORC tables the map names from the guest (unmapped)");
		goto out;
	}
	uint64_t lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : t->syms[0].addr;
	uint64_t hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : t->syms[t->n - 1].addr + 1;
	if (orc_load(&ss->img.orc, ips, ipn - ip0, ip0, ents, en - e0, have_hdr ? hdr : NULL, sizeof hdr, lo, hi) < 0) {
		ERR_SET(ss, ERR_FORMAT, "ORC tables in guest memory: %s", ss->img.orc.errstr);
		goto out;
	}
	ss->img.has_orc = 1;
	ss->orc_from_guest = 1;
	rc = 0;
out:
	free(ips);
	free(ents);
	return rc;
}

/*
 * Modules are read through a reader that lets the guest run every MODS_SLICE bytes, so no single
 * stop lasts long (the longest is measured and reported); mods_walk's generation check catches a
 * list that changed while it ran.
 */
#define MODS_SLICE (16u << 10)     /* bytes per stop at most ... */
#define MODS_SLICE_NS 8000000LL    /* ...and at most this long (a loaded host answers slowly) */
struct mods_reader {
	struct session *ss;
	int cpu;                 /* vCPU whose page tables map the kernel */
	size_t since;            /* bytes read since the guest last ran */
	int64_t stopped_ns;      /* when this stop began */
};

static void mods_stop_done(struct mods_reader *r)
{
	int64_t d = pace_now() - r->stopped_ns;
	if (d > r->ss->mods_stop_max_ns) r->ss->mods_stop_max_ns = d;
	r->ss->mods_stops++;
}

static int mods_rd(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct mods_reader *r = arg;
	struct session *ss = r->ss;
	while (len) {
		if (r->since >= MODS_SLICE || (r->since && pace_now() - r->stopped_ns >= MODS_SLICE_NS)) {
			/* let it run a moment: a slice per stop */
			mods_stop_done(r);
			if (gdb_cont(&ss->g) < 0) return -2;
			usleep(1000);
			if (gdb_stop(&ss->g) < 0) return -2;
			r->stopped_ns = pace_now();
			r->since = 0;
		}
		size_t room = MODS_SLICE > r->since ? MODS_SLICE - r->since : 0, n = len < room ? len : room;
		if (!n) continue;
		int rc = gdb_read_block(&ss->g, r->cpu, addr, buf, n);
		if (rc == -1) return -2;
		if (rc) return -1;
		r->since += n;
		addr += n;
		buf = (uint8_t *)buf + n;
		len -= n;
	}
	return 0;
}

/* The loaded modules, from guest memory (a Linux image with BTF and a map naming `modules`).
 * Without them the run goes on as before, with a warning saying what is missing. */
static int locate_modules(struct session *ss, int cpu)
{
	struct image *im = &ss->img;
	const struct symtab *t = &im->syms;
	if (!im->has_btf) return 0; /* not Linux, or no types: nothing to say */
	if (!im->modl.ok) {
		session_warn(ss, "kernel modules not read: %s", im->modl.why);
		return 0;
	}
	if (!((t->marks >> MARK_MODULES) & 1)) {
		session_warn(ss, "kernel modules not read: no address for `modules` (give a kallsyms dump or "
			     "System.map with -e)");
		return 0;
	}
	ss->mods.l = im->modl;
	ss->mods.head = t->mark[MARK_MODULES];
	ss->mods.orc_layout = im->has_orc ? im->orc.layout : ORC_LAYOUT_UNKNOWN;
	ss->mods.last = -1;
	struct mods_reader r = { ss, cpu, 0, pace_now() };
	int rc = mods_walk(&ss->mods, &im->syms, mods_rd, &r);
	mods_stop_done(&r);
	ss->mods_walked_ns = pace_now();
	if (rc == -2) {
		ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.err ? ss->g.errstr : "reading modules failed");
		return -1;
	}
	if (rc < 0) {
		session_warn(ss, "kernel modules not read: %s", ss->mods.errstr);
		ss->mods.head = 0;
		return 0;
	}
	if (im->has_orc) {
		im->orc.more = mods_orc;
		im->orc.more_arg = &ss->mods;
	}
	if (ss->mods.st.bad)
		session_warn(ss, "%llu module table%s unreadable or garbage: their frames are named or unwound less",
			     (unsigned long long)ss->mods.st.bad, ss->mods.st.bad == 1 ? "" : "s");
	return 0;
}

/* A kernel-mode pc outside the core text that no module holds. */
static int unknown_pc(const struct session *ss, uint64_t pc)
{
	const struct image *im = &ss->img;
	uint64_t lo = im->text_lo + (uint64_t)ss->kaslr.slide, hi = im->text_hi + (uint64_t)ss->kaslr.slide;
	if (!im->text_hi) {
		const struct symtab *t = &im->syms;
		lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : 0;
		hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : 0;
	}
	if (!(pc >> 63) || (pc >= lo && pc < hi)) return 0;
	return mods_find((struct modset *)&ss->mods, pc) == NULL;
}

int session_modules_refresh(struct session *ss, const struct sample *s, int n)
{
	if (!ss->mods.head) return 0;
	for (int i = 0; i < n && !ss->mods.want_walk; i++)
		if (!(s[i].flags & SF_USER) && s[i].n && unknown_pc(ss, s[i].frames[0])) {
			ss->mods.st.unknown_pcs++;
			ss->mods.want_walk = 1;
		}
	int64_t now = pace_now();
	if (!ss->mods_every_ns) ss->mods_every_ns = MODS_RESCAN_NS;
	if (!ss->mods.want_walk || now - ss->mods_walked_ns < ss->mods_every_ns) return 0;
	uint64_t before = ss->mods.st.loaded + ss->mods.st.unloaded;
	guard_enter(&ss->guard);
	if (gdb_stop(&ss->g) < 0) goto fail;
	struct mods_reader r = { ss, ss->cpus[0], 0, pace_now() };
	uint64_t pc;
	int cpu = kernel_vcpu(ss, &pc);
	if (cpu == -2) goto fail;
	if (cpu >= 0) r.cpu = cpu;
	int rc = cpu >= 0 ? mods_walk(&ss->mods, &ss->img.syms, mods_rd, &r) : 0;
	mods_stop_done(&r);
	if (rc == -2 || gdb_cont(&ss->g) < 0) goto fail;
	guard_leave(&ss->guard);
	ss->mods_walked_ns = pace_now();
	if (cpu < 0) return 0; /* every vCPU in user mode: next time */
	if (ss->mods.st.loaded + ss->mods.st.unloaded != before) ss->mods_every_ns = MODS_RESCAN_NS;
	else if (ss->mods_every_ns < MODS_RESCAN_MAX_NS) ss->mods_every_ns *= 2; /* nothing new: wait longer */
	if (rc < 0) {
		session_warn(ss, "walking the modules list again failed: %s", ss->mods.errstr);
		ss->mods.err = 0;
		ss->mods.want_walk = 0;
	}
	return 0;
fail:
	ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "reading modules: %s", ss->g.errstr);
	return -1;
}

void session_modules_line(const struct session *ss, char *out, size_t cap)
{
	const struct modset *m = &ss->mods;
	out[0] = 0;
	if (!m->head) return;
	int live = 0;
	size_t syms = 0, orcs = 0;
	for (int i = 0; i < m->n; i++)
		if (m->m[i].addr) {
			live++;
			syms += m->m[i].nsyms;
			orcs += m->m[i].has_orc ? m->m[i].orc.n : 0;
		}
	snprintf(out, cap, "gdbsample: modules: %d loaded (%zu symbols, %zu ORC entries; %s), walks %llu, "
		 "loaded during the run %llu, unloaded %llu, list changed while read %llu, unreadable %llu, "
		 "pcs in no module %llu; %llu bytes read in %llu stops, longest %.1f ms\n", live, syms, orcs,
		 m->l.what, (unsigned long long)m->st.walks, (unsigned long long)m->st.loaded,
		 (unsigned long long)m->st.unloaded, (unsigned long long)m->st.changed, (unsigned long long)m->st.bad,
		 (unsigned long long)m->st.unknown_pcs, (unsigned long long)m->st.bytes,
		 (unsigned long long)ss->mods_stops, (double)ss->mods_stop_max_ns / 1e6);
}

char *session_modules_text(const struct session *ss)
{
	const struct modset *m = &ss->mods;
	const struct symtab *t = &ss->img.syms;
	size_t cap = 4096, o = 0;
	char *out = m->head && m->n ? malloc(cap) : NULL;
	if (!out) return NULL;
	out[0] = 0;
	for (int i = 0; i < m->n; i++) {
		const struct module *d = &m->m[i];
		for (size_t k = 0; k <= t->n; k++) {
			const struct sym *y = k ? &t->syms[k - 1] : NULL;
			if (y) { /* its symbols, in address order (modules' names hold no blanks) */
				int in = 0;
				for (int r = 0; r < 2; r++) in |= y->addr >= d->text[r][0] && y->addr < d->text[r][1];
				if (!y->mod || !in || strcmp(y->mod, d->name)) continue;
			}
			if (cap - o < 512) {
				char *n = realloc(out, cap * 2);
				if (!n) {
					free(out);
					return NULL;
				}
				out = n;
				cap *= 2;
			}
			if (!y) {
				o += (size_t)snprintf(out + o, cap - o, "m %s %llx %llx", d->name,
						      (unsigned long long)d->text[0][0], (unsigned long long)d->text[0][1]);
				if (d->text[1][1] > d->text[1][0])
					o += (size_t)snprintf(out + o, cap - o, " %llx %llx", (unsigned long long)d->text[1][0],
							      (unsigned long long)d->text[1][1]);
				o += (size_t)snprintf(out + o, cap - o, "\n");
			} else {
				o += (size_t)snprintf(out + o, cap - o, "s %llx %llx %.400s\n", (unsigned long long)y->addr,
						      (unsigned long long)y->size, y->name);
			}
		}
	}
	return out;
}

static int choose_methods(struct session *ss)
{
	const struct image *im = &ss->img;
	int u = ss->o->unwind, n = 0;
	if (u == UNWIND_ORC && !im->has_orc) {
		ERR_SET(ss, ERR_USAGE, "--unwind orc: %s has no ORC tables (.orc_unwind_ip; or, with a map, "
			"__start_orc_unwind_ip)", im->what);
		return -1;
	}
	if (u == UNWIND_CFI && !im->has_cfi) {
		ERR_SET(ss, ERR_USAGE, "--unwind cfi: %s has no .eh_frame or .debug_frame", im->what);
		return -1;
	}
	if ((u == UNWIND_AUTO || u == UNWIND_ORC) && im->has_orc) ss->methods[n++] = UM_ORC;
	if ((u == UNWIND_AUTO || u == UNWIND_CFI) && im->has_cfi) ss->methods[n++] = UM_CFI;
	if (u == UNWIND_AUTO || u == UNWIND_FP) ss->methods[n++] = UM_FP;
	ss->nmethods = n;
	return 0;
}

/*
 * A kernel linked below the upper half -- our aarch64 kernel runs identity-mapped at 0x40080000 --
 * has no half of its own: without --kernel-range its range is the image's text, moved by the
 * KASLR offset (the map's _stext.._etext or its first and last symbol, already moved, when no
 * image text was given). Kernels in the upper half keep all of it: their modules lie outside
 * the image.
 */
static void image_range(struct session *ss, int64_t slide)
{
	const struct image *im = &ss->img;
	const struct symtab *t = &im->syms;
	uint64_t lo, hi;
	if (ss->o->have_range || !t->n) return;
	if (im->text_hi) {
		lo = im->text_lo + (uint64_t)slide;
		hi = im->text_hi + (uint64_t)slide;
	} else {
		lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : t->syms[0].addr;
		hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : t->syms[t->n - 1].addr + 1;
	}
	if (lo >> 63 || hi <= lo) return;
	ss->klo = lo;
	ss->khi = hi; /* inclusive: the return address of a call that ends the text (task_start's) */
}

/*
 * QEMU 8 and later describe pointer authentication (org.gnu.gdb.aarch64.pauth_v2 on 10.0:
 * pauth_dmask, pauth_cmask, pauth_dmask_high, pauth_cmask_high): the bits of a code pointer that
 * hold its code, for the lower and the upper half, as GDB strips them. Read once, from a vCPU,
 * for the kernel's half; QEMU 7.2 has none, and the text's own top bits serve (arch_pac_mask).
 */
static int stub_pac_mask(struct session *ss, int cpu)
{
	const struct symtab *t = &ss->img.syms;
	ss->pac_mask = 0;
	if (ss->g.layout.arch->id != ARCH_AARCH64 || !((t->marks >> MARK_STEXT) & 1) || !((t->marks >> MARK_ETEXT) & 1))
		return 0;
	uint64_t lo = t->mark[MARK_STEXT], hi = t->mark[MARK_ETEXT], v = 0;
	const struct reg *r = arch_find_reg(&ss->g.layout, lo >> 63 ? "pauth_cmask_high" : "pauth_cmask");
	if (!r) return 0;
	int rc = gdb_reg(&ss->g, cpu, r->num, &v);
	if (rc == -1) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	if (rc == 0) ss->pac_mask = arch_pac_mask_stub(v, lo, hi);
	return 0;
}

int locate_kernel(struct session *ss)
{
	const struct opts *o = ss->o;
	struct image *im = &ss->img;
	uint64_t pc = 0;
	image_range(ss, 0);
	int cpu = kernel_vcpu_wait(ss, &pc), rc = 0;
	if (cpu == -2) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	struct reader r = { ss, cpu >= 0 ? cpu : ss->cpus[0] };
	if (o->have_kaslr && o->verify) {
		rc = kaslr_check(&ss->kaslr, &im->syms, im->has_map, o->kaslr, rd, &r);
	} else if (o->have_kaslr) { /* --no-verify: as given, names too */
		ss->kaslr.slide = ss->kaslr.names_slide = o->kaslr;
		ss->kaslr.how = ss->kaslr.names_how = KASLR_FORCED;
	} else if (o->verify) {
		rc = kaslr_detect(&ss->kaslr, &im->syms, im->has_map, cpu >= 0, pc, rd, &r);
	}
	if (rc == -2) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	if (rc < 0) {
		ERR_SET(ss, ss->kaslr.err, "%s %s%s", im->what, ss->kaslr.errstr,
			im->text_from_map ? "; the map must be this boot's" : ""); /* it placed the text */
		return -1;
	}
	if (im->text_from_map && ss->kaslr.how == KASLR_TEXT) { /* the map placed the text that matched */
		ss->kaslr.names_slide = ss->kaslr.slide;
		ss->kaslr.names_how = KASLR_TEXT;
	}
	if (ss->kaslr.names_how == KASLR_ASSUMED && !(im->syms.marks >> MARK_BANNER & 1) && im->has_map)
		session_warn(ss, "the map has no linux_banner to check it against the guest: assuming it matches");
	image_relocate(im, ss->kaslr.slide, ss->kaslr.names_slide);
	image_range(ss, ss->kaslr.slide);
	if (stub_pac_mask(ss, r.cpu) < 0) return -1;
	if (!im->has_orc && o->unwind != UNWIND_FP && o->unwind != UNWIND_CFI && guest_orc(ss, r.cpu) < 0)
		return -1;
	if (cpu >= 0 && locate_modules(ss, r.cpu) < 0) return -1;
	return choose_methods(ss);
}

void session_image_kv(const struct session *ss, char *out, size_t cap)
{
	size_t o = strlen(out);
#define KV(...) do { if (o < cap) o += (size_t)snprintf(out + o, cap - o, __VA_ARGS__); } while (0)
	if (!ss->img.syms.n) return;
	KV("image %s\n", ss->img.what);
	KV("unwind");
	for (int k = 0; k < ss->nmethods; k++) KV("%s%s", k ? "," : " ", unwind_method_names[ss->methods[k]]);
	KV("\n");
	if (ss->img.has_orc)
		KV("orc %s, %zu entries%s\n", orc_layout_names[ss->img.orc.layout], ss->img.orc.n,
		   ss->orc_from_guest ? ", read from guest memory" : "");
	int64_t k = ss->kaslr.slide, nk = ss->kaslr.names_slide;
	KV("kaslr_offset %s0x%llx\nkaslr_how %s\n", k < 0 ? "-" : "", (unsigned long long)(k < 0 ? -k : k),
	   kaslr_how_names[ss->kaslr.how]);
	if (nk != k || ss->kaslr.names_how != ss->kaslr.how)
		KV("kaslr_names_offset %s0x%llx\nkaslr_names_how %s\n", nk < 0 ? "-" : "",
		   (unsigned long long)(nk < 0 ? -nk : nk), kaslr_how_names[ss->kaslr.names_how]);
	if (ss->mods.head) {
		int live = 0;
		for (int i = 0; i < ss->mods.n; i++) live += ss->mods.m[i].addr != 0;
		KV("modules %d\nmodules_layout %s\nmodules_loaded_during_run %llu\nmodules_unloaded %llu\n"
		   "modules_unreadable %llu\nmodules_list_changed %llu\nmodules_stop_max_us %lld\n", live, ss->mods.l.what,
		   (unsigned long long)ss->mods.st.loaded, (unsigned long long)ss->mods.st.unloaded,
		   (unsigned long long)ss->mods.st.bad, (unsigned long long)ss->mods.st.changed,
		   (long long)(ss->mods_stop_max_ns / 1000));
	}
	KV("task_os %s\n", guestos_names[ss->img.os.os]);
	if (ss->img.os.os != OS_NONE) KV("task_layout %s\n", ss->img.os.what);
	else KV("task_off %s\n", ss->img.os.why);
#undef KV
}

void session_image_line(const struct session *ss, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	if (!ss->img.syms.n) return;
	o += (size_t)snprintf(out + o, cap - o, "kernel %s, unwound by", ss->img.what);
	for (int k = 0; k < ss->nmethods && o < cap; k++)
		o += (size_t)snprintf(out + o, cap - o, "%s%s", k ? "," : " ", unwind_method_names[ss->methods[k]]);
	if (o < cap && ss->kaslr.how != KASLR_NONE)
		o += (size_t)snprintf(out + o, cap - o, ", kaslr offset 0x%llx (%s)", (unsigned long long)ss->kaslr.slide,
				      kaslr_how_names[ss->kaslr.how]);
	if (o < cap && ss->img.os.os != OS_NONE)
		snprintf(out + o, cap - o, ", tasks %s", ss->img.os.what);
}
