/* kfind.c: a bare `gdbsample -p PORT` on a Linux guest -- the kernel found from a vCPU's pc in guest
 * memory: its kallsyms tables (names), then by those names its ORC and BTF, read in slices so that
 * no single stop of the VM lasts longer than KFIND_SLICE_MS. */
#include "kfind.h"
#include "err.h"
#include "kallsyms.h"
#include "pace.h"
#include "session.h"
#include <stdlib.h>
#include <time.h>

#define CHUNK 4096u             /* bytes per gdb_read_block: 2 `m` packets in one write */
#define BLOCK (256u << 10)      /* the scan reads this much between searches for the tables */
#define PAGE 4096u
#define HOLE_MAX (8u << 20)     /* unmapped bytes in a row that end the scan */
#define AFTER (2u << 20)        /* read past the token table (kallsyms_offsets follow it on 6.x+) */
#define AFTER_MAX (16u << 20)   /* ...at most */
#define KERNEL_WAIT 200         /* stops to wait for a vCPU in the kernel (KPTI: a user-mode vCPU's
				 * page tables do not map the kernel) */
#define TABLE_MAX (64u << 20)   /* larger ORC or BTF than any kernel has: bad names */

/* Reads of guest memory in slices: each stop ends after KFIND_SLICE_MS, the VM runs, stops again. */
struct slicer {
	struct session *ss;     /* the session */
	int cpu;                /* a vCPU in kernel mode at this stop */
	uint64_t pc;            /* its pc */
	int64_t since;          /* when this stop began */
	struct kfind_stats *st; /* what it cost */
};

/* A vCPU in the kernel's upper half at this stop: 1 (s->cpu, s->pc), 0 none, -1 connection error. */
static int kernel_vcpu(struct slicer *s)
{
	struct session *ss = s->ss;
	const struct layout *l = &ss->g.layout;
	for (int i = 0; i < ss->ncpu; i++) {
		uint8_t regs[1024];
		int n = gdb_regs(&ss->g, ss->cpus[i], regs, sizeof regs);
		if (n < 0) return -1;
		uint64_t pc = arch_reg(l->pc, regs, n);
		if (arch_is_user(l, regs, n) != 1 && pc >> 63) {
			s->cpu = ss->cpus[i];
			s->pc = pc;
			return 1;
		}
	}
	return 0;
}

static void end_stop(struct slicer *s)
{
	int64_t d = pace_now() - s->since;
	if (s->st->stops <= 1) s->st->first_ns = d;
	else if (d > s->st->longest_ns) s->st->longest_ns = d;
	if (s->st->stops > 1 && d > 20 * 1000000LL) s->st->over++;
}

/* Resume, let the VM run KFIND_RUN_MS, stop it again with a vCPU in the kernel: 0, -1 error. */
static int restop(struct slicer *s)
{
	struct session *ss = s->ss;
	for (int tries = 0; tries < KERNEL_WAIT; tries++) {
		end_stop(s);
		if (gdb_cont(&ss->g) < 0) return -1;
		guard_leave(&ss->guard);
		struct timespec ts = { 0, KFIND_RUN_MS * 1000000L };
		nanosleep(&ts, NULL);
		guard_enter(&ss->guard);
		if (gdb_stop(&ss->g) < 0) return -1;
		s->since = pace_now();
		s->st->stops++;
		int rc = kernel_vcpu(s);
		if (rc != 0) return rc < 0 ? -1 : 0;
	}
	ERR_SET(&ss->g, ERR_MISMATCH, "no vCPU ran in the kernel at %d stops in a row", KERNEL_WAIT);
	return -1;
}

/* Read len bytes at addr in slices: 0, -2 some of it unmapped, -1 connection error (ss->g.err). */
static int sl_read(struct slicer *s, uint64_t addr, uint8_t *buf, size_t len)
{
	for (size_t o = 0; o < len;) {
		if (pace_now() - s->since > (int64_t)KFIND_SLICE_MS * 1000000 && restop(s) < 0) return -1;
		size_t n = len - o < CHUNK ? len - o : CHUNK;
		int rc = gdb_read_block(&s->ss->g, s->cpu, addr + o, buf + o, n);
		if (rc == -1) return -1;
		if (rc == -2) return -2;
		s->st->bytes += n;
		o += n;
	}
	return 0;
}

/* Read len bytes at addr, zeros for the pages that are not mapped: 0, or -1; *holes counts them. */
static int sl_read_pages(struct slicer *s, uint64_t addr, uint8_t *buf, size_t len, size_t *holes)
{
	int rc = sl_read(s, addr, buf, len);
	if (rc != -2) return rc;
	for (size_t o = 0; o < len; o += PAGE) {
		size_t n = len - o < PAGE ? len - o : PAGE;
		rc = sl_read(s, addr + o, buf + o, n);
		if (rc == -1) return -1;
		if (rc == -2) {
			memset(buf + o, 0, n);
			*holes += n;
		} else {
			*holes = 0;
		}
	}
	return 0;
}

/* The kallsyms tables above the vCPU's pc: read forward from its 2 MiB boundary until the token
 * table's anchor shows, a little further, and decode. 0 found, 1 not found, -1 error. */
static int scan(struct slicer *s, struct kallsyms *k)
{
	uint64_t base = s->pc & ~((2ull << 20) - 1);
	size_t have = 0, cap = 0, holes = 0, anchor_end = 0, next_try = 0;
	uint8_t *buf = NULL;
	int rc = 1;
	while (have < KFIND_SCAN_MAX && holes < HOLE_MAX && base + have + BLOCK > base) {
		if (have + BLOCK > cap) {
			size_t nc = cap ? cap * 2 : 8u << 20;
			uint8_t *nb = realloc(buf, nc);
			if (!nb) {
				ERR_SET(s->ss, ERR_SYS, "out of memory reading the kernel from guest memory");
				rc = -1;
				break;
			}
			buf = nb;
			cap = nc;
		}
		if (sl_read_pages(s, base + have, buf + have, BLOCK, &holes) < 0) {
			ERR_SET(s->ss, s->ss->g.err, "%s", s->ss->g.errstr);
			rc = -1;
			break;
		}
		size_t from = have > 32 ? have - 32 : 0;
		have += BLOCK;
		if (!anchor_end && ksyms_anchor(buf + from, have - from) >= 0) anchor_end = next_try = have;
		if (!anchor_end || have < next_try + AFTER) continue;
		/* the token table is here: the names are before it, the offsets maybe after (6.x+) */
		if (ksyms_find(k, buf, have, base) == 0) {
			rc = 0;
			break;
		}
		if (k->err == ERR_SYS) {
			ERR_SET(s->ss, ERR_SYS, "%s", k->errstr);
			rc = -1;
			break;
		}
		next_try = have;
		if (have - anchor_end >= AFTER_MAX) {
			session_warn(s->ss, "kallsyms in guest memory at 0x%llx: %s", (unsigned long long)(base + anchor_end),
				     k->errstr);
			break;
		}
	}
	free(buf);
	return rc;
}

static const struct ksym *by_name(const struct kallsyms *k, const char *name)
{
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(ksyms_name(k, i), name)) return &k->syms[i];
	return NULL;
}

/* [*lo, *hi) of a table the names bracket: 1, 0 if not both named, -1 if they make no sense. */
static int span(const struct kallsyms *k, const char *start, const char *stop, uint64_t *lo, uint64_t *hi)
{
	const struct ksym *a = by_name(k, start), *b = by_name(k, stop);
	if (!a || !b) return 0;
	*lo = a->addr;
	*hi = b->addr;
	return *hi > *lo && *hi - *lo <= TABLE_MAX ? 1 : -1;
}

/* A table the names bracket, read whole (malloc'd): 1, 0 not named, -1 error (ss->err). */
static int read_table(struct slicer *s, const struct kallsyms *k, const char *start, const char *stop, uint8_t **out,
		      size_t *len, uint64_t *addr)
{
	uint64_t lo, hi;
	int rc = span(k, start, stop, &lo, &hi);
	if (rc <= 0) {
		if (rc < 0) session_warn(s->ss, "%s .. %s in guest memory make no sense: not read", start, stop);
		return 0;
	}
	uint8_t *b = malloc(hi - lo);
	if (!b) {
		ERR_SET(s->ss, ERR_SYS, "out of memory");
		return -1;
	}
	rc = sl_read(s, lo, b, hi - lo);
	if (rc < 0) {
		free(b);
		if (rc == -1) {
			ERR_SET(s->ss, s->ss->g.err, "%s", s->ss->g.errstr);
			return -1;
		}
		session_warn(s->ss, "%s .. %s is not mapped in guest memory: not read", start, stop);
		return 0;
	}
	*out = b;
	*len = hi - lo;
	*addr = lo;
	return 1;
}

/* The ORC tables by their names (the guest's own, at running addresses). */
static int read_orc(struct slicer *s, const struct kallsyms *k)
{
	struct image *im = &s->ss->img;
	uint8_t *ips = NULL, *ents = NULL, *hdr = NULL;
	size_t iplen, elen, hlen = 0;
	uint64_t ip0, e0, h0;
	int rc = read_table(s, k, "__start_orc_unwind_ip", "__stop_orc_unwind_ip", &ips, &iplen, &ip0);
	if (rc > 0) rc = read_table(s, k, "__start_orc_unwind", "__stop_orc_unwind", &ents, &elen, &e0);
	if (rc > 0 && read_table(s, k, "__start_orc_header", "__stop_orc_header", &hdr, &hlen, &h0) < 0) rc = -1;
	if (rc > 0) {
		const struct symtab *t = &im->syms;
		uint64_t lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : t->syms[0].addr;
		uint64_t hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : t->syms[t->n - 1].addr + 1;
		if (orc_load(&im->orc, ips, iplen, ip0, ents, elen, hdr, hlen, lo, hi) < 0) {
			session_warn(s->ss, "the ORC tables in guest memory: %s; not used", im->orc.errstr);
		} else {
			im->has_orc = 1;
			s->ss->orc_from_guest = 1;
			s->st->orc = 1;
		}
	}
	free(ips);
	free(ents);
	free(hdr);
	return rc < 0 ? -1 : 0;
}

/* BTF by its names, for the tasks. */
static int read_btf(struct slicer *s, const struct kallsyms *k)
{
	struct image *im = &s->ss->img;
	uint8_t *btf;
	size_t len;
	uint64_t at;
	if (s->ss->o->os == OS_NONE) return 0;
	int rc = read_table(s, k, "__start_BTF", "__stop_BTF", &btf, &len, &at);
	if (rc < 0) return -1;
	if (rc == 0) {
		snprintf(im->os.why, sizeof im->os.why, "the guest's kallsyms name no __start_BTF/__stop_BTF (a kernel "
			 "built without CONFIG_DEBUG_INFO_BTF)");
		return 0;
	}
	guestos_linux_btf(&im->os, btf, len);
	s->st->btf = im->os.os == OS_LINUX;
	free(btf);
	return 0;
}

int kfind_kernel(struct session *ss)
{
	struct kfind_stats *st = &ss->kf;
	struct slicer s = { ss, 0, 0, ss->stopped_since, st };
	struct kallsyms k;
	const struct arch *ga = ss->g.layout.arch;
	memset(&k, 0, sizeof k);
	if (ga->id != ARCH_X86_64 && ga->id != ARCH_AARCH64) return 0;
	int rc = kernel_vcpu(&s);
	if (rc < 0) goto conn;
	if (rc == 0) return 0; /* no vCPU in an upper-half kernel: nothing to look for */
	st->tried = 1;
	st->stops = 1;
	rc = scan(&s, &k);
	if (rc < 0) goto out;
	if (rc == 1) {
		session_warn(ss, "no kallsyms tables in guest memory above the kernel pc 0x%llx: frames are not named "
			     "(give the kernel image or a map: -e)", (unsigned long long)s.pc);
		rc = 0;
		goto out;
	}
	struct image *im = &ss->img;
	if (image_add_kallsyms(&im->syms, &k) < 0) {
		ERR_SET(ss, im->syms.err, "%s", im->syms.errstr);
		rc = -1;
		goto out;
	}
	im->has_map = 1; /* names at this boot's addresses, like a dump of its /proc/kallsyms */
	im->want_os = ss->o->os;
	st->found = 1;
	st->names_at = k.at[KT_NAMES];
	snprintf(im->what, sizeof im->what, "guest memory (kallsyms at 0x%llx, %zu symbols)",
		 (unsigned long long)k.at[KT_NAMES], k.n);
	snprintf(im->os.why, sizeof im->os.why, "--os none");
	if (ss->o->unwind != UNWIND_FP && ss->o->unwind != UNWIND_CFI && read_orc(&s, &k) < 0) rc = -1;
	else if (read_btf(&s, &k) < 0) rc = -1;
out:
	end_stop(&s);
	st->elapsed_ns = pace_now() - ss->stopped_since;
	ksyms_free(&k);
	return rc;
conn:
	ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
	return -1;
}
