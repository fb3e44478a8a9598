/* locate.c: find the guest kernel the image describes -- its KASLR offsets, its ORC tables in
 * guest memory when only a map was given -- and choose the unwinders. The VM is stopped. */
#include "session.h"
#include "err.h"
#include <stdlib.h>
#include <unistd.h>

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

/* A vCPU in kernel mode (its page tables map the kernel even with KPTI) and its pc. */
static int kernel_vcpu(struct session *ss, uint64_t *pc)
{
	const struct layout *l = &ss->g.layout;
	for (int i = 0; i < ss->ncpu; i++) {
		uint8_t regs[1024];
		int n = gdb_regs(&ss->g, ss->cpus[i], regs, sizeof regs);
		if (n < 0) return -2;
		uint64_t p = arch_reg(l->pc, regs, n);
		if (arch_is_user(l, regs, n) != 1 && p >= ss->klo && p <= ss->khi) {
			*pc = p;
			return ss->cpus[i];
		}
	}
	return -1;
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
		ERR_SET(ss, ss->kaslr.err, "%s %s", im->what, ss->kaslr.errstr);
		return -1;
	}
	if (ss->kaslr.names_how == KASLR_ASSUMED && !(im->syms.marks >> MARK_BANNER & 1) && im->has_map)
		session_warn(ss, "the map has no linux_banner to check it against the guest: assuming it matches");
	image_relocate(im, ss->kaslr.slide, ss->kaslr.names_slide);
	image_range(ss, ss->kaslr.slide);
	if (!im->has_orc && o->unwind != UNWIND_FP && o->unwind != UNWIND_CFI && guest_orc(ss, r.cpu) < 0)
		return -1;
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
