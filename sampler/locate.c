/* SPDX-License-Identifier: MIT */
/* locate.c: find the guest kernel the image describes -- its KASLR offsets, its ORC tables in
 * guest memory when only a map was given -- and choose the unwinders. The VM is stopped. */
#include "session.h"
#include "err.h"
#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>
#include "insn.h"
#include "pace.h"
#include "progress.h"

#define ORC_MAX_BYTES (64u << 20) /* larger ORC sections than any kernel has: a bad map */

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
#define LOCATE_RESCUES 100   /* rescues a reader takes in its stride (then the error stands) */

/* A request refused (or raced) because the pause watchdog resumed the VM while gdbsample was held
 * up -- the attach's stop is under the watchdog too: acknowledged, the VM runs, 1 (stop it again
 * and go on), at most LOCATE_RESCUES times a reader; 0 any other error, which stands. */
static int rescued(struct session *ss)
{
	if (ss->sl.rescued >= LOCATE_RESCUES || session_recover(ss) < 0) return 0;
	ss->sl.rescued++;
	return 1;
}

static int kernel_vcpu_wait(struct session *ss, uint64_t *pc)
{
	int cpu = kernel_vcpu(ss, pc), running = 0;
	if (cpu == -2 && rescued(ss)) cpu = -1, running = 1;
	for (int i = 0; cpu == -1 && (running || (i < LOCATE_WAITS && !ss->held)); i++) {
		if (!running) {
			slice_end(&ss->sl); /* each stop counted, the attach's first */
			if (ss->sl.io.cont(ss) == -1) return -2; /* -3: resumed by the watchdog; it runs */
		}
		running = 1;
		usleep(LOCATE_RUN_US);
		int64_t t = pace_now();
		int rc = ss->sl.io.stop(ss);
		if (rc == -1) return -2;
		if (rc == -3) continue;
		running = 0;
		slice_begin(&ss->sl, t, ss->sl.cpu);
		cpu = kernel_vcpu(ss, pc);
		if (cpu == -2 && rescued(ss)) cpu = -1, running = 1;
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
	(void)cpu; /* read through the slicer's vCPU (one in kernel mode at each slice) */
	int a = slice_read(&ss->sl, ip0, ips, ipn - ip0);
	int b = a == -2 ? -2 : slice_read(&ss->sl, e0, ents, en - e0);
	int c = b == -2 || !have_hdr ? b : slice_read(&ss->sl, t->mark[MARK_ORC_HDR_START], hdr, sizeof hdr);
	if (a == -2 || b == -2 || c == -2) {
		ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.err ? ss->g.errstr : "reading the ORC tables failed");
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
 * Everything locate reads -- the KASLR probes, the map-only ORC tables (3.9 MB on Debian's 6.1),
 * the modules -- goes through one slicer (slice.c): at most SLICE_BYTES or SLICE_NS a stop, the
 * VM running between slices, so the attach's stop ends at the first slice and no later one lasts
 * long; the longest stop and the most bytes one stop read are reported (longest_stop_us). A VM
 * paused before we came is not ours to resume: it is read in the one stop it is in.
 */
static int sl_io_read(void *arg, int cpu, uint64_t addr, void *buf, size_t len)
{
	struct session *ss = arg;
	int rc = gdb_read_block(&ss->g, cpu, addr, buf, len);
	return rc == -1 ? (rescued(ss) ? -3 : -1) : rc ? -2 : 0;
}

static int sl_io_cont(void *arg)
{
	struct session *ss = arg;
	if (gdb_cont(&ss->g) < 0) return rescued(ss) ? -3 : -1;
	guard_leave(&ss->guard);
	return 0;
}

static int sl_io_stop(void *arg)
{
	struct session *ss = arg;
	guard_enter(&ss->guard);
	return gdb_stop(&ss->g) < 0 ? (rescued(ss) ? -3 : -1) : 0;
}

static int sl_io_kernel_cpu(void *arg)
{
	uint64_t pc;
	int cpu = kernel_vcpu(arg, &pc);
	return cpu == -2 && rescued(arg) ? -3 : cpu;
}

static int64_t sl_io_now(void *arg)
{
	(void)arg;
	return pace_now();
}

/* A slicer for this session's reads, in the stop that began at stopped_ns, through cpu. */
static void slicer_init(struct session *ss, int64_t stopped_ns, int cpu)
{
	ss->sl = (struct slice_reader){ .io = { sl_io_read, sl_io_cont, sl_io_stop, sl_io_kernel_cpu, sl_io_now, ss },
				  .may_run = !ss->held, .st = &ss->slst };
	slice_begin(&ss->sl, stopped_ns, cpu);
}

/* The KASLR search's reads (kaslr.c's reader: 0, -1 unmapped, -2 connection). */
static int rd(void *arg, uint64_t addr, uint8_t *buf, int len)
{
	struct session *ss = arg;
	return slice_read(&ss->sl, addr, buf, (size_t)len);
}

/* The modules' reads (mods_read_fn: 0, -1 unmapped, -2 connection; counted in ss->mods_sl too
 * while a walk sets sl.also). */
static int mods_rd(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct session *ss = arg;
	return slice_read(&ss->sl, addr, buf, len);
}

/* Walk the modules list through the slicer, the stops it spans counted in ss->mods_sl. */
static int mods_walk_sliced(struct session *ss)
{
	ss->sl.also = &ss->mods_sl;
	int rc = mods_walk(&ss->mods, &ss->img.syms, mods_rd, ss);
	return rc;
}

/* End the stop the reads are in and resume the VM if it is ours: 0, -1 connection (ss->g). */
static int slicer_release(struct session *ss)
{
	slice_end(&ss->sl);
	ss->sl.also = NULL;
	if (ss->held || ss->g.running) return 0;
	return ss->sl.io.cont(ss) == -1 ? -1 : 0; /* -3: the watchdog resumed it first */
}

/*
 * arm64 Linux without CONFIG_KALLSYMS_ALL (Debian's) names no `modules`, neither in its tables
 * nor in /proc/kallsyms: its address is taken from the code that walks the list. Every static
 * word find_module_all (else print_modules) loads through adrp is a candidate (insn.h); the one
 * whose words make a list of struct modules -- head->next->prev == head, the first entry's name
 * a module name -- is `modules`, marked as if a map had named it. An empty list proves nothing:
 * no candidate then (a guest with no module loaded reads none).
 */
#define A64_MODS_CANDIDATES 32
static int text_byte(const void *t, uint64_t addr)
{
	return syms_byte(t, addr);
}

static int a64_modules_head(struct session *ss) /* read through the slicer */
{
	struct symtab *t = &ss->img.syms;
	const struct mod_layout *l = &ss->img.modl;
	static const char *const walkers[] = { "find_module_all", "print_modules" };
	for (int w = 0; w < 2; w++) {
		uint64_t cand[A64_MODS_CANDIDATES];
		int n = 0;
		for (size_t i = 0; i < t->n && !n; i++)
			if (!strcmp(t->syms[i].name, walkers[w]) && !t->syms[i].mod)
				n = a64_static_loads(text_byte, t, t->syms[i].addr, t->syms[i].size ? t->syms[i].size : 0x200,
						     cand, A64_MODS_CANDIDATES);
		for (int c = 0; c < n; c++) {
			uint64_t h = cand[c], head[2], back;
			char name[MODS_NAME + 1];
			if ((h & 7) || !(h >> 63)) continue;
			int rc = slice_read(&ss->sl, h, head, sizeof head);
			if (rc == -2) return -2;
			if (rc || head[0] == h || (head[0] & 7) || !(head[0] >> 63) || head[0] < l->list) continue;
			rc = slice_read(&ss->sl, head[0] + 8, &back, sizeof back);
			if (rc == -2) return -2;
			if (rc || back != h) continue;
			rc = slice_read(&ss->sl, head[0] - l->list + l->name, name, MODS_NAME);
			if (rc == -2) return -2;
			name[MODS_NAME] = 0;
			size_t k = 0;
			while (name[k] && (isalnum((unsigned char)name[k]) || name[k] == '_' || name[k] == '-')) k++;
			if (rc || !k || name[k]) continue;
			t->mark[MARK_MODULES] = h;
			t->marks |= 1u << MARK_MODULES;
			return 0;
		}
	}
	return -1;
}

/* The loaded modules, from guest memory (a Linux image with BTF and a map naming `modules`).
 * Without them the run goes on as before, with a warning saying what is missing. */
static int locate_modules(struct session *ss, int cpu)
{
	struct image *im = &ss->img;
	const struct symtab *t = &im->syms;
	if (!im->has_btf) { /* not Linux, or no types: say so only for a Linux map that names `modules` */
		if ((t->marks >> MARK_MODULES) & 1)
			session_warn(ss, "kernel modules not read: without BTF the layout of struct module is not known "
				     "(give the kernel image too: -e vmlinuz); frames in module code are not unwound");
		return 0;
	}
	if (!im->modl.ok) {
		session_warn(ss, "kernel modules not read: %s", im->modl.why);
		return 0;
	}
	if (!((t->marks >> MARK_MODULES) & 1) && t->machine == EM_AARCH64 && a64_modules_head(ss) == -2) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	if (!((t->marks >> MARK_MODULES) & 1) && t->machine == EM_AARCH64) {
		session_warn(ss, "kernel modules not read: no list of modules found from find_module_all's code "
			     "(no module loaded?)");
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
	(void)cpu; /* the slicer's vCPU */
	int rc = mods_walk_sliced(ss);
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
	int64_t t0 = pace_now();
	guard_enter(&ss->guard);
	uint64_t pc;
	int cpu = gdb_stop(&ss->g) < 0 ? -2 : kernel_vcpu(ss, &pc);
	if (cpu == -2 && session_recover(ss) == 0) return 0; /* held up, and the watchdog resumed the VM: next time */
	if (cpu == -2) goto fail;
	slicer_init(ss, t0, cpu >= 0 ? cpu : ss->cpus[0]);
	ss->sl.also = &ss->mods_sl;
	int rc = cpu >= 0 ? mods_walk_sliced(ss) : 0;
	if (rc == 0 && cpu >= 0) ko_locate(ss, ss->sl.cpu, 0); /* files of modules loaded since */
	if (rc == -2 || slicer_release(ss) < 0) goto fail;
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
	int rc;
	while ((rc = gdb_reg(&ss->g, cpu, r->num, &v)) == -1 && rescued(ss)) /* the watchdog resumed it */
		if (slice_restop(&ss->sl, 1) < 0) break;
	if (rc == -1) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	if (rc == 0) ss->pac_mask = arch_pac_mask_stub(v, lo, hi);
	return 0;
}

/*
 * arm64 KASLR, for an Image named by its own kallsyms (link addresses): a kernel-mode vCPU's
 * VBAR_EL1 holds the runtime address of `vectors` (or, with Spectre-BHB mitigations, of a slot
 * of __bp_harden_el1_vectors, also in the text), whatever code the vCPU runs -- module code,
 * an idle loop. The offset it gives is checked against the text (kaslr_detect_at): arm64's
 * KASLR range (half the vmalloc area) is too wide to try every offset as on x86_64. Under KPTI
 * a vCPU entering from user mode briefly holds the trampoline's vectors: each kernel-mode
 * vCPU's register is tried.
 */
#define A64_KASLR_GRANULE 0x10000ull /* SEGMENT_ALIGN: the Image's placement (the EFI stub's 64 KiB) */
static int a64_kaslr(struct session *ss)
{
	const struct layout *l = &ss->g.layout;
	const struct reg *vbar = arch_find_reg(l, "VBAR_EL1");
	if (!vbar) vbar = arch_find_reg(l, "VBAR"); /* QEMU 7.2 names the AArch32/64 pair by its 32-bit name */
	int rc = -1, tried = 0;
	if (!vbar) {
		ERR_SET(&ss->kaslr, ERR_USAGE, "cannot be placed: the gdbstub shows no VBAR_EL1 to find the KASLR "
			"offset with; give this boot's kallsyms dump too (-e MAP)");
		return -1;
	}
	for (int i = 0; i < ss->ncpu && rc == -1; i++) {
		uint8_t regs[1024];
		uint64_t v = 0;
		int n = gdb_regs(&ss->g, ss->cpus[i], regs, sizeof regs);
		int got = n < 0 || arch_is_user(l, regs, n) == 1 ? 1 : gdb_reg(&ss->g, ss->cpus[i], vbar->num, &v);
		if (n < 0 || got == -1) { /* held up, the watchdog resumed the VM: stop it, look again */
			if (!rescued(ss) || slice_restop(&ss->sl, 1) < 0) return -2;
			i = -1;
			tried = 0;
			continue;
		}
		if (got || !(v >> 63)) continue;
		tried++;
		ss->sl.cpu = ss->cpus[i]; /* the reads translate through this kernel-mode vCPU */
		rc = kaslr_detect_at(&ss->kaslr, &ss->img.syms, v, ss->img.a64_vectors, A64_KASLR_GRANULE, rd, ss);
	}
	if (!tried)
		ERR_SET(&ss->kaslr, ERR_MISMATCH, "cannot be placed: no vCPU entered kernel mode (VBAR_EL1 places an arm64 "
			"kernel); try again, or give this boot's kallsyms dump too");
	return rc;
}

int locate_kernel(struct session *ss)
{
	const struct opts *o = ss->o;
	struct image *im = &ss->img;
	uint64_t pc = 0;
	image_range(ss, 0);
	/* the stop we are in: the attach's, or the one a bare -p's search left the session in */
	slicer_init(ss, ss->kf.left_stopped_ns ? ss->kf.left_stopped_ns : ss->stopped_since, ss->cpus[0]);
	int cpu = kernel_vcpu_wait(ss, &pc), rc = 0;
	if (cpu == -2) {
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	ss->sl.cpu = cpu >= 0 ? cpu : ss->cpus[0];
	if (o->have_kaslr && o->verify) {
		rc = kaslr_check(&ss->kaslr, &im->syms, im->has_map, o->kaslr, rd, ss);
	} else if (o->have_kaslr) { /* --no-verify: as given, names too */
		ss->kaslr.slide = ss->kaslr.names_slide = o->kaslr;
		ss->kaslr.how = ss->kaslr.names_how = KASLR_FORCED;
	} else if (o->verify && im->a64_vectors) {
		rc = a64_kaslr(ss);
	} else if (o->verify) {
		rc = kaslr_detect(&ss->kaslr, &im->syms, im->has_map, cpu >= 0, pc, rd, ss);
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
	if (ss->kaslr.names_how == KASLR_ASSUMED && !(im->syms.marks >> MARK_BANNER & 1) && im->has_map &&
	    !ss->kf.found) /* names read from guest memory are this boot's by construction */
		session_warn(ss, "the map has no linux_banner to check it against the guest: assuming it matches");
	image_relocate(im, ss->kaslr.slide, ss->kaslr.names_slide);
	image_range(ss, ss->kaslr.slide);
	if (stub_pac_mask(ss, ss->sl.cpu) < 0) return -1;
	if (!im->has_orc && o->unwind != UNWIND_FP && o->unwind != UNWIND_CFI && guest_orc(ss, ss->sl.cpu) < 0)
		return -1;
	if (cpu >= 0 && (locate_modules(ss, ss->sl.cpu) < 0 || ko_locate(ss, ss->sl.cpu, 1) < 0)) return -1;
	if (slicer_release(ss) < 0) { /* the stop ends here: sampling starts with a stop of its own */
		ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
		return -1;
	}
	if (!o->quiet && ss->slst.bytes >= SLICE_BYTES) { /* tables read in slices (a map's ORC): what it cost */
		progress_erase(stderr);
		fprintf(stderr, "gdbsample: read %.1f MB of the kernel's tables from guest memory in %llu stops (the "
			"attach's %.1f ms, the longest %.1f ms, at most %llu bytes a stop)\n", (double)ss->slst.bytes / 1e6,
			(unsigned long long)ss->slst.stops, (double)ss->slst.first_ns / 1e6,
			(double)ss->slst.longest_ns / 1e6, (unsigned long long)ss->slst.most_bytes);
	}
	return choose_methods(ss);
}

int session_slice_stop(struct session *ss)
{
	if (ss->held || !ss->g.running) { /* paused before we came, or stopped already: read as it is */
		slice_begin(&ss->sl, pace_now(), ss->sl.cpu);
		return 0;
	}
	ss->sl.rescued = 0;
	if (slice_restop(&ss->sl, 1) < 0) {
		ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.errstr);
		return -1;
	}
	return 0;
}

int session_slice_blocks(struct session *ss, struct gdb_block *b, int n)
{
	for (;;) {
		if (ss->sl.may_run && pace_now() - ss->sl.stopped_ns >= SLICE_NS && slice_restop(&ss->sl, 0) < 0) break;
		if (gdb_read_blocks(&ss->g, ss->sl.cpu, b, n) != -1) return 0;
		if (!ss->sl.may_run || !rescued(ss) || slice_restop(&ss->sl, 1) < 0) break;
	}
	ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.errstr);
	return -1;
}

int session_slice_release(struct session *ss)
{
	if (slicer_release(ss) < 0) {
		ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.errstr);
		return -1;
	}
	return 0;
}
