/* SPDX-License-Identifier: MIT */
/* kfind.c: a bare `gdbsample -p PORT` on a Linux guest -- the kernel found from a vCPU's pc in guest
 * memory: its kallsyms tables (names), then by those names its ORC and BTF, read in slices so that
 * no single stop of the VM lasts longer than KFIND_SLICE_MS. */
#include "kfind.h"
#include "hash.h"
#include "bytes.h"
#include "err.h"
#include "kallsyms.h"
#include "pace.h"
#include "files.h"
#include "kcache.h"
#include "session.h"
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096u             /* bytes per gdb_read_block: 2 `m` packets in one write */
#define BLOCK (256u << 10)      /* the scan reads this much between searches for the tables */
#define PAGE 4096u
#define HOLE_MAX (8u << 20)     /* unmapped bytes in a row that end the scan */
#define AFTER (1u << 20)        /* then read this much more past the token table at a time
				 * (kallsyms_offsets follow it on 6.x+: 650 KB on Debian's 6.12) */
#define AFTER_MAX (16u << 20)   /* ...at most */
#define KERNEL_WAIT 200         /* stops to wait for a vCPU in the kernel (KPTI: a user-mode vCPU's
				 * page tables do not map the kernel) */
#define TABLE_MAX (64u << 20)   /* larger ORC or BTF than any kernel has: bad names */
/* x86_64 Linux runs its image at __START_KERNEL_map + CONFIG_PHYSICAL_START (>= 2 MiB) + the KASLR
 * offset, below the module area: a pc outside is module code or another kernel (our test kernel
 * runs at 0xffffffff80100000). */
#define X86_IMAGE_LO 0xffffffff80200000ull
#define X86_IMAGE_HI 0xffffffffc0000000ull

/* Reads of guest memory in slices: each stop ends after KFIND_SLICE_MS, the VM runs, stops again. */
struct slicer {
	struct session *ss;     /* the session */
	int cpu;                /* a vCPU in kernel mode at this stop */
	uint64_t pc;            /* its pc */
	int64_t since;          /* when this stop began */
	int running;            /* the VM runs (released for host-side work) */
	struct kfind_stats *st; /* what it cost */
	uint64_t stop_bytes;    /* bytes read in this stop */
};

/* A vCPU in the kernel's upper half at this stop: 1 (s->cpu, s->pc), 0 none (2: none, but some
 * vCPU runs in user mode, so the kernel may yet show), -1 connection error. */
static int kernel_vcpu(struct slicer *s)
{
	struct session *ss = s->ss;
	const struct layout *l = &ss->g.layout;
	int user = 0;
	for (int i = 0; i < ss->ncpu; i++) {
		uint8_t regs[1024];
		int n = gdb_regs(&ss->g, ss->cpus[i], regs, sizeof regs);
		if (n < 0) return -1;
		uint64_t pc = arch_reg(l->pc, regs, n);
		user |= arch_is_user(l, regs, n) == 1;
		int x86 = l->arch->id == ARCH_X86_64;
		if (arch_is_user(l, regs, n) != 1 && pc >> 63 && (!x86 || (pc >= X86_IMAGE_LO && pc < X86_IMAGE_HI))) {
			s->cpu = ss->cpus[i];
			s->pc = pc;
			return 1;
		}
	}
	return user ? 2 : 0;
}

static void end_stop(struct slicer *s)
{
	int64_t d = pace_now() - s->since;
	if (s->stop_bytes > s->st->most_bytes) s->st->most_bytes = s->stop_bytes;
	if (s->st->stops <= 1) s->st->first_ns = d;
	else if (d > s->st->longest_ns) s->st->longest_ns = d;
	if (s->st->stops > 1 && d > 20 * 1000000LL) s->st->over++;
}

/* After a write refused (or raced) because the pause watchdog resumed the VM while we were held
 * up: the VM runs; acknowledge it, as a sampling round would. 0 recovered, -1 another error. */
static int recover(struct slicer *s)
{
	struct session *ss = s->ss;
	if (ss->g.err != ERR_RESCUED) return -1;
	if (!s->running) end_stop(s); /* the stop that was held up, to now */
	if (session_recover(ss) < 0) return -1;
	s->running = 1;
	s->st->rescued++;
	return 0;
}

/* Let the VM run (before host-side work, or between slices): 0, -1 error (ss->g). */
static int release(struct slicer *s)
{
	if (s->running) return 0;
	end_stop(s);
	if (gdb_cont(&s->ss->g) < 0) return recover(s); /* refused: the watchdog resumed it already */
	guard_leave(&s->ss->guard);
	s->running = 1;
	return 0;
}

/* Stop the running VM, a new stop of the slicer's: 0 stopped, 1 the watchdog's rescue got in
 * the way (acknowledged; the VM runs: try again), -1 error. */
static int stop(struct slicer *s)
{
	guard_enter(&s->ss->guard);
	if (gdb_stop(&s->ss->g) < 0) return recover(s) < 0 ? -1 : 1;
	s->running = 0;
	s->since = pace_now();
	s->stop_bytes = 0;
	return 0;
}

/* Stop the VM again with a vCPU in the kernel (waiting KFIND_RUN_MS between tries): 0, -1 error. */
static int acquire(struct slicer *s)
{
	struct session *ss = s->ss;
	for (int tries = 0; tries < KERNEL_WAIT; tries++) {
		if (tries) {
			if (release(s) < 0) return -1;
			struct timespec ts = { 0, KFIND_RUN_MS * 1000000L };
			nanosleep(&ts, NULL);
		}
		if (!s->running) return 0;
		int st = stop(s);
		if (st < 0) return -1;
		if (st > 0) continue;
		s->st->stops++;
		int rc = kernel_vcpu(s);
		if (rc < 0 && recover(s) == 0) continue;
		if (rc == 1 || rc < 0) return rc < 0 ? -1 : 0;
	}
	ERR_SET(&ss->g, ERR_MISMATCH, "no vCPU ran in the kernel at %d stops in a row", KERNEL_WAIT);
	return -1;
}

/* The attach's first look at the vCPUs (kernel_vcpu's answer). The pause watchdog bounds the
 * attach's stop once the handshake found it ours, so a gdbsample held up here may find the VM
 * resumed: then it is stopped again and looked at again. */
static int first_look(struct slicer *s)
{
	for (int tries = 0; tries < KERNEL_WAIT; tries++) {
		int st = s->running ? stop(s) : 0;
		if (st < 0) return -1;
		if (st > 0) continue;
		int rc = kernel_vcpu(s);
		if (rc >= 0 || recover(s) < 0) return rc;
	}
	return -1;
}

/* End this stop, let the VM run KFIND_RUN_MS, stop it again. */
static int restop(struct slicer *s)
{
	if (release(s) < 0) return -1;
	struct timespec ts = { 0, KFIND_RUN_MS * 1000000L };
	nanosleep(&ts, NULL);
	return acquire(s);
}

/* Read len bytes at addr in slices: 0, -2 some of it unmapped, -1 connection error (ss->g.err). */
static int sl_read(struct slicer *s, uint64_t addr, uint8_t *buf, size_t len)
{
	int64_t budget = (int64_t)KFIND_SLICE_MS * 1000000, mp = (int64_t)(s->ss->o->max_pause * 1e9) / 2;
	if (mp > 0 && mp < budget) budget = mp; /* a short --max-pause: shorter slices */
	if (acquire(s) < 0) return -1;
	for (size_t o = 0, fails = 0; o < len;) {
		if (pace_now() - s->since > budget && restop(s) < 0) return -1;
		size_t n = len - o < CHUNK ? len - o : CHUNK;
		int rc = gdb_read_block(&s->ss->g, s->cpu, addr + o, buf + o, n);
		if (rc == -1 && recover(s) == 0 && ++fails < 100) { /* rescued mid-read: stop again, read it again */
			if (acquire(s) < 0) return -1;
			continue;
		}
		if (rc == -1) return -1;
		if (rc == -2) return -2;
		s->st->bytes += n;
		s->stop_bytes += n;
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

/* 1 if the n bytes are all zero: free memory past an image counts as a hole too. */
static int zeros(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i]) return 0;
	return 1;
}

/* 1 if the 4 KiB at p look like kallsyms_offsets: u32s (as s32) that climb or fall in small steps
 * almost throughout (symbols are sorted by address; per-CPU-relative ones fall). */
static int offsets_like(const uint8_t *p)
{
	int up = 0, down = 0, same = 0;
	for (int i = 0; i + 1 < (int)(PAGE / 4); i++) {
		int32_t a = (int32_t)le32(p + 4 * i);
		int32_t b = (int32_t)le32(p + 4 * i + 4);
		int64_t d = (int64_t)b - a;
		if (d == 0) same++;
		else if (d > 0 && d <= (1 << 20)) up++;
		else if (d < 0 && d >= -(1 << 20)) down++;
	}
	int n = (int)(PAGE / 4) - 1;
	return same < n / 4 && (up >= n * 9 / 10 - same || down >= n * 9 / 10 - same);
}

/* Where to start reading: PROBE_LEN-byte probes every PROBE_STEP above base until one looks like
 * kallsyms_offsets (before the names in 6.1's order, after the token index later): the tables
 * start within PROBE_BACK below it. base if no probe does (then everything is read). */
#define PROBE_STEP (512u << 10)
#define PROBE_BACK (4u << 20)
static int probe_start(struct slicer *s, uint64_t base, uint64_t *start)
{
	uint8_t p[PAGE];
	*start = base;
	for (uint64_t o = 0; o < KFIND_SCAN_MAX; o += PROBE_STEP) {
		int rc = sl_read(s, base + o, p, PAGE);
		if (rc == -1) return -1;
		if (rc == 0 && offsets_like(p)) {
			*start = o > PROBE_BACK ? base + ((o - PROBE_BACK) & ~((uint64_t)BLOCK - 1)) : base;
			return 0;
		}
	}
	return 0;
}

/* The kallsyms tables from start on: read forward in blocks until the token table's anchor
 * shows, a little further, and decode. 0 found, 1 not found, -1 error. */
static int scan_from(struct slicer *s, uint64_t base, size_t limit, struct kallsyms *k)
{
	size_t have = 0, cap = 0, holes = 0, anchor_end = 0, next_try = 0;
	uint8_t *buf = NULL;
	int rc = 1;
	while (have < limit && holes < HOLE_MAX && base + have + BLOCK > base) {
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
		size_t unmapped = 0;
		if (sl_read_pages(s, base + have, buf + have, BLOCK, &unmapped) < 0) {
			ERR_SET(s->ss, s->ss->g.err, "%s", s->ss->g.errstr);
			rc = -1;
			break;
		}
		if (zeros(buf + have, BLOCK)) holes += BLOCK; /* unmapped pages read as zeros */
		else holes = 0;
		size_t from = have > 32 ? have - 32 : 0;
		have += BLOCK;
		if (!anchor_end && ksyms_anchor(buf + from, have - from) >= 0) anchor_end = next_try = have;
		if (!anchor_end || have < next_try) continue;
		/* the token table is here: the names are before it, the offsets maybe after (6.x+) */
		if (release(s) < 0) {
			ERR_SET(s->ss, s->ss->g.err, "%s", s->ss->g.errstr);
			rc = -1;
			break;
		}
		if (ksyms_find(k, buf, have, base) == 0) {
			rc = 0;
			break;
		}
		if (k->err == ERR_SYS) {
			ERR_SET(s->ss, ERR_SYS, "%s", k->errstr);
			rc = -1;
			break;
		}
		next_try = have + AFTER; /* 6.x+: the offsets follow the token index */
		if (have - anchor_end >= AFTER_MAX) break;
	}
	free(buf);
	return rc;
}

/* The kallsyms tables above the vCPU's pc: from where a probe found offsets-like data (a few MB),
 * else -- or if the tables are not there -- everything from the pc's 2 MiB boundary on. */
static int scan(struct slicer *s, struct kallsyms *k)
{
	uint64_t base = s->pc & ~((2ull << 20) - 1), start;
	if (probe_start(s, base, &start) < 0) {
		ERR_SET(s->ss, s->ss->g.err, "%s", s->ss->g.errstr);
		return -1;
	}
	int rc = 1;
	if (start != base) {
		rc = scan_from(s, start, 3 * PROBE_BACK, k);
		if (rc == 1) s->st->reread = 1;
	}
	if (rc == 1) rc = scan_from(s, base, KFIND_SCAN_MAX, k);
	if (rc == 1 && k->errstr[0])
		session_warn(s->ss, "kallsyms in guest memory above 0x%llx: %s", (unsigned long long)base, k->errstr);
	return rc;
}

static const struct ksym *by_name(const struct kallsyms *k, const char *name)
{
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(ksyms_name(k, i), name)) return &k->syms[i];
	return NULL;
}

/* A table the names bracket, read whole (malloc'd): 1, 0 not named or unmapped (warned), -1 error. */
static int read_table(struct slicer *s, const struct kallsyms *k, const char *start, const char *stop, uint8_t **out,
		      size_t *len, uint64_t *addr)
{
	const struct ksym *a = by_name(k, start), *b = by_name(k, stop);
	if (!a || !b) return 0;
	if (b->addr <= a->addr || b->addr - a->addr > TABLE_MAX) {
		session_warn(s->ss, "%s .. %s in guest memory make no sense: not read", start, stop);
		return 0;
	}
	size_t n = b->addr - a->addr;
	uint8_t *buf = malloc(n);
	if (!buf) {
		ERR_SET(s->ss, ERR_SYS, "out of memory");
		return -1;
	}
	int rc = sl_read(s, a->addr, buf, n);
	if (rc < 0) {
		free(buf);
		if (rc == -1) {
			ERR_SET(s->ss, s->ss->g.err, "%s", s->ss->g.errstr);
			return -1;
		}
		session_warn(s->ss, "%s .. %s is not mapped in guest memory: not read", start, stop);
		return 0;
	}
	*out = buf;
	*len = n;
	*addr = a->addr;
	return 1;
}

/* The kernel as read (cold) or from the cache, at the running addresses; what kcache stores. */
struct found {
	struct kcache c;       /* names (c.k), tables; *_rel relative to stext */
	uint64_t stext;        /* the running _stext */
	uint8_t *own[6];       /* buffers read cold (banner, tokens, ips, ents, hdr, btf), freed */
};

static void found_free(struct found *f)
{
	for (int i = 0; i < 6; i++) free(f->own[i]);
	kcache_free(&f->c);
}

/* Names, ORC and BTF into ss->img as a map of this boot would be. */
static int install(struct slicer *s, struct found *f)
{
	struct session *ss = s->ss;
	struct image *im = &ss->img;
	struct kcache *c = &f->c;
	if (image_add_kallsyms(&im->syms, &c->k) < 0) {
		ERR_SET(ss, im->syms.err, "%s", im->syms.errstr);
		return -1;
	}
	im->has_map = 1; /* names at this boot's addresses, like a dump of its /proc/kallsyms */
	snprintf(im->os.why, sizeof im->os.why, "--os none");
	if (c->iplen && c->elen && ss->o->unwind != UNWIND_FP && ss->o->unwind != UNWIND_CFI) {
		const struct symtab *t = &im->syms;
		uint64_t lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : t->syms[0].addr;
		uint64_t hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : t->syms[t->n - 1].addr + 1;
		if (orc_load(&im->orc, c->ips, c->iplen, f->stext + c->ip_rel, c->ents, c->elen, c->hdr, c->hlen, lo, hi) < 0) {
			session_warn(ss, "the ORC tables in guest memory: %s; not used", im->orc.errstr);
		} else {
			im->has_orc = 1;
			ss->orc_from_guest = 1;
			s->st->orc = 1;
		}
	}
	if (c->btf) { /* struct module's layout: the loaded modules are read as with an image */
		im->has_btf = 1;
		mods_layout_btf(&im->modl, c->btf, c->btflen);
	}
	if (ss->o->os == OS_NONE) return 0;
	if (!c->btf)
		snprintf(im->os.why, sizeof im->os.why, "the guest's kallsyms name no __start_BTF/__stop_BTF (a kernel "
			 "without CONFIG_DEBUG_INFO_BTF, or CONFIG_KALLSYMS_ALL); -e vmlinuz gives its BTF");
	else
		guestos_linux_btf(&im->os, c->btf, c->btflen);
	s->st->btf = im->os.os == OS_LINUX;
	return 0;
}

/* The cold read's tables by their names: 0, -1 error. */
static int read_rest(struct slicer *s, struct found *f)
{
	struct kcache *c = &f->c;
	const struct kallsyms *k = &c->k;
	const struct ksym *st = by_name(k, "_stext"), *et = by_name(k, "_etext"), *bn = by_name(k, "linux_banner");
	uint64_t a;
	size_t n;
	f->stext = st ? st->addr : 0;
	if (st && et && et->addr > st->addr) {
		c->stext_mod = st->addr & ((2u << 20) - 1);
		c->etext_rel = et->addr - st->addr;
	}
	if (bn && (f->own[0] = malloc(256)) && sl_read(s, bn->addr, f->own[0], 256) == 0) {
		c->banner = f->own[0];
		c->banner_len = (uint32_t)strnlen((const char *)f->own[0], 256);
		c->banner_rel = bn->addr - f->stext;
	}
	c->tokens_len = (uint32_t)(k->at[KT_TOKEN_INDEX] + 512 - k->at[KT_TOKEN_TABLE]);
	if ((f->own[1] = malloc(c->tokens_len)) && sl_read(s, k->at[KT_TOKEN_TABLE], f->own[1], c->tokens_len) == 0) {
		c->tokens = f->own[1];
		c->tokens_rel = k->at[KT_TOKEN_TABLE] - f->stext;
	}
	int unwind = s->ss->o->unwind != UNWIND_FP && s->ss->o->unwind != UNWIND_CFI;
	int rc = unwind ? read_table(s, k, "__start_orc_unwind_ip", "__stop_orc_unwind_ip", &f->own[2], &c->iplen, &a) : 0;
	if (rc > 0) {
		c->ips = f->own[2];
		c->ip_rel = a - f->stext;
		rc = read_table(s, k, "__start_orc_unwind", "__stop_orc_unwind", &f->own[3], &c->elen, &a);
		c->ents = f->own[3];
		c->e_rel = a - f->stext;
	}
	if (rc > 0 && (rc = read_table(s, k, "__start_orc_header", "__stop_orc_header", &f->own[4], &n, &a)) > 0) {
		c->hdr = f->own[4];
		c->hlen = n;
		c->h_rel = a - f->stext;
	}
	if (rc < 0) return -1;
	if (!c->elen) c->iplen = 0;
	if (s->ss->o->os != OS_NONE && read_table(s, k, "__start_BTF", "__stop_BTF", &f->own[5], &c->btflen, &a) < 0)
		return -1;
	c->btf = f->own[5];
	return 0;
}

/* Keep what the cold read found, as the image cache keeps its entries (files.h: written whole or
 * not at all, 0600, never through a symlink, in a directory only this user may write to). Failing
 * is a warning. */
static void cache_write(struct session *ss, struct found *f)
{
	char dir[512], path[600], why[700];
	uint8_t *buf;
	size_t len;
	const struct kcache *c = &f->c;
	if (ss->o->no_cache || !c->banner || !c->tokens || !c->etext_rel || file_cache_dir(dir, sizeof dir) < 0) return;
	snprintf(path, sizeof path, "%s/kernel-%016llx.cache", dir,
		 (unsigned long long)(hash_bytes(c->banner, c->banner_len) ^ hash_bytes(c->tokens, c->tokens_len)));
	if (kcache_encode(c, f->stext, &buf, &len) < 0) return;
	const uint8_t *part[] = { buf };
	if (file_cache_dir_ok(dir, 1, why, sizeof why) > 0 && file_write_atomic(path, part, &len, 1, why, sizeof why) == 0)
		ss->kf.cache_written = 1;
	else
		session_warn(ss, "could not keep the kernel read from guest memory: %s", why);
	free(buf);
}

/* Does the guest hold this cache entry's build at _stext = stext? Reads its token table, banner
 * and the first KiB of its ORC and BTF: 1 yes, 0 no, -1 error. */
static int cache_matches(struct slicer *s, const struct kcache *c, uint64_t stext)
{
	uint8_t buf[65536 + 1024];
	struct { uint64_t rel; const uint8_t *want; size_t len; } part[] = {
		{ c->tokens_rel, c->tokens, c->tokens_len }, { c->banner_rel, c->banner, c->banner_len },
		{ c->ip_rel, c->ips, c->iplen < 1024 ? c->iplen : 1024 }, { 0, c->btf, 0 },
	};
	for (size_t i = 0; i < sizeof part / sizeof *part; i++) {
		if (!part[i].len || !part[i].want) continue;
		int rc = sl_read(s, stext + part[i].rel, buf, part[i].len);
		if (rc == -1) return -1;
		if (rc < 0 || memcmp(buf, part[i].want, part[i].len)) return 0;
	}
	return 1;
}

/* A cache entry for the kernel the vCPU runs: 1 (f filled, relocated), 0 none, -1 error. */
static int cache_find(struct slicer *s, struct found *f)
{
	char dir[512], path[1100];
	if (s->ss->o->no_cache || file_cache_dir(dir, sizeof dir) < 0) return 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	int looked = 0, rc = 0;
	uint64_t pc = s->pc; /* this attach's kernel pc (later stops move s->pc) */
	if (!d) return 0;
	while (rc == 0 && looked < KCACHE_MAX_FILES && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "kernel-", 7) || l < 7 + 6 || strcmp(e->d_name + l - 6, ".cache")) continue;
		looked++;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		uint8_t *buf;
		size_t len;
		char why[160];
		if (file_read(path, KCACHE_MAX_BYTES, &buf, &len, why, sizeof why) < 0) continue;
		struct kcache c;
		if (kcache_decode(&c, buf, len) < 0) {
			session_warn(s->ss, "%s: %s (ignored)", path, c.errstr);
			free(buf);
			continue;
		}
		/* candidate _stext: the entry's residue modulo 2 MiB, pc inside [_stext, _etext] */
		uint64_t top = (pc & ~((2ull << 20) - 1)) | c.stext_mod;
		if (top > pc) top -= 2u << 20;
		for (uint64_t st = top; rc == 0 && pc - st <= c.etext_rel && st >> 63; st -= 2u << 20) {
			rc = cache_matches(s, &c, st);
			if (rc == 1) {
				kcache_relocate(&c, st);
				f->c = c;
				f->stext = st;
				f->own[0] = buf; /* c points into it */
				s->st->cached = 1;
			}
		}
		if (rc != 1) {
			kcache_free(&c);
			free(buf);
		}
	}
	closedir(d);
	return rc;
}

int kfind_kernel(struct session *ss)
{
	struct kfind_stats *st = &ss->kf;
	struct slicer s = { ss, 0, 0, ss->stopped_since, 0, st, 0 };
	struct found f;
	const struct arch *ga = ss->g.layout.arch;
	memset(&f, 0, sizeof f);
	if (ga->id != ARCH_X86_64 && ga->id != ARCH_AARCH64) return 0;
	int rc = first_look(&s);
	if (rc < 0) goto conn;
	if (rc == 0) return 0; /* no vCPU in an upper-half kernel, none in user mode: nothing to look for */
	st->tried = 1;
	st->stops = 1;
	if (rc == 2) { /* every vCPU in user mode: let the guest run until one enters the kernel */
		s.running = 0;
		if (restop(&s) < 0) {
			if (ss->g.err == ERR_MISMATCH) { /* never did: look no further */
				ss->g.err = 0;
				session_warn(ss, "no vCPU entered the kernel within %d stops: frames are not named (-e)",
					     KERNEL_WAIT);
				return 0;
			}
			goto conn;
		}
	}
	if (release(&s) < 0) goto conn; /* the attach's stop ends here: the cache is read with the VM running */
	rc = cache_find(&s, &f);
	if (rc == 0) {
		rc = scan(&s, &f.c.k);
		if (rc == 1) {
			session_warn(ss, "no kallsyms tables in guest memory above the kernel pc 0x%llx: frames are not "
				     "named (give the kernel image or a map: -e)", (unsigned long long)s.pc);
			rc = 0;
			goto out;
		}
		if (rc == 0 && read_rest(&s, &f) < 0) rc = -1;
		if (rc == 0) rc = 2; /* read cold: keep it */
	}
	if (rc < 0) goto out;
	const struct kallsyms *k = &f.c.k;
	st->found = 1;
	if (release(&s) < 0) goto conn;
	snprintf(ss->img.what, sizeof ss->img.what, "guest memory (%zu kallsyms%s)", k->n,
		 st->cached ? ", cached" : "");
	if (install(&s, &f) < 0) {
		rc = -1;
		goto out;
	}
	/* only a whole read is kept: one made under --unwind fp/cfi or --os none lacks ORC or BTF */
	if (rc == 2 && ss->o->unwind != UNWIND_FP && ss->o->unwind != UNWIND_CFI && ss->o->os != OS_NONE)
		cache_write(ss, &f);
	rc = 0;
out:
	if (rc == 0 && acquire(&s) < 0) goto conn; /* the session goes on with the VM stopped */
	if (!s.running) {
		end_stop(&s);
		st->left_stopped_ns = s.since; /* locate goes on in this stop, and ends it */
	}
	st->elapsed_ns = pace_now() - ss->stopped_since;
	found_free(&f);
	return rc;
conn:
	ERR_SET(ss, ss->g.err, "%s", ss->g.errstr);
	found_free(&f);
	return -1;
}
