/* SPDX-License-Identifier: MIT */
/* test_modules.c: kernel modules from guest memory -- struct module's layout from synthetic BTF
 * (6.1's core_layout, 6.4's mem[]), the list walk over synthetic guest memory (names, symbols,
 * ORC, a frame unwound through a module), garbage, a list changing mid-read, loads and unloads. */
#include "check.h"
#include "../../sampler/modules.h"
#include "../../sampler/err.h"
#include <bpf/btf.h>
#include <stdlib.h>

/* ---- synthetic BTF ---- */

/* 6.1-like (mem = 0) or 6.4-like (mem = 1) struct module; returns raw BTF bytes (malloc'd). */
static void *make_btf(int mem, int with_enum, size_t *len)
{
	struct btf *b = btf__new_empty();
	int u32 = btf__add_int(b, "unsigned int", 4, 0), chr = btf__add_int(b, "char", 1, BTF_INT_SIGNED);
	int vp = btf__add_ptr(b, 0), cp = btf__add_ptr(b, chr);
	int lh = btf__add_struct(b, "list_head", 16);
	int lhp = btf__add_ptr(b, lh);
	btf__add_field(b, "next", lhp, 0, 0);
	btf__add_field(b, "prev", lhp, 64, 0);
	int name = btf__add_array(b, u32, chr, 56);
	int ks = btf__add_struct(b, "mod_kallsyms", 24);
	btf__add_field(b, "symtab", vp, 0, 0);
	btf__add_field(b, "num_symtab", u32, 64, 0);
	btf__add_field(b, "strtab", cp, 128, 0);
	int ksp = btf__add_ptr(b, ks);
	int arch = btf__add_struct(b, "mod_arch_specific", 24);
	btf__add_field(b, "num_orcs", u32, 0, 0);
	btf__add_field(b, "orc_unwind_ip", vp, 64, 0);
	btf__add_field(b, "orc_unwind", vp, 128, 0);
	int st = btf__add_enum(b, "module_state", 4);
	btf__add_enum_value(b, "MODULE_STATE_LIVE", 0);
	btf__add_enum_value(b, "MODULE_STATE_COMING", 1);
	btf__add_enum_value(b, "MODULE_STATE_GOING", 2);
	btf__add_enum_value(b, "MODULE_STATE_UNFORMED", 3);
	int lay = -1, mm = -1, mems = -1;
	if (!mem) {
		lay = btf__add_struct(b, "module_layout", 16);
		btf__add_field(b, "base", vp, 0, 0);
		btf__add_field(b, "size", u32, 64, 0);
		btf__add_field(b, "text_size", u32, 96, 0);
	} else {
		mm = btf__add_struct(b, "module_memory", 16);
		btf__add_field(b, "base", vp, 0, 0);
		btf__add_field(b, "size", u32, 64, 0);
		mems = btf__add_array(b, u32, mm, 7);
		if (with_enum) {
			btf__add_enum(b, "mod_mem_type", 4);
			static const char *const n[] = { "MOD_TEXT", "MOD_DATA", "MOD_RODATA", "MOD_RO_AFTER_INIT",
							 "MOD_INIT_TEXT", "MOD_INIT_DATA", "MOD_INIT_RODATA" };
			for (int i = 0; i < 7; i++) btf__add_enum_value(b, n[i], i);
		}
	}
	int m = btf__add_struct(b, "module", mem ? 224 : 144);
	btf__add_field(b, "state", st, 0, 0);
	btf__add_field(b, "list", lh, 64, 0);
	btf__add_field(b, "name", name, 192, 0);
	if (!mem) {
		btf__add_field(b, "core_layout", lay, 80 * 8, 0);
		btf__add_field(b, "init_layout", lay, 96 * 8, 0);
		btf__add_field(b, "arch", arch, 112 * 8, 0);
		btf__add_field(b, "kallsyms", ksp, 136 * 8, 0);
	} else {
		btf__add_field(b, "mem", mems, 80 * 8, 0);
		btf__add_field(b, "arch", arch, 192 * 8, 0);
		btf__add_field(b, "kallsyms", ksp, 216 * 8, 0);
	}
	(void)m;
	__u32 sz = 0;
	const void *raw = btf__raw_data(b, &sz);
	void *out = malloc(sz);
	memcpy(out, raw, sz);
	*len = sz;
	btf__free(b);
	return out;
}

static void test_layout(void)
{
	struct mod_layout l;
	size_t len;
	void *b = make_btf(0, 1, &len);
	CHECK(mods_layout_btf(&l, b, len) == 0 && l.ok);
	CHECK(l.size == 144 && l.list == 8 && l.name == 24 && l.name_len == 56);
	CHECK(l.text_base[0] == 80 && l.text_size[0] == 92 && l.text_base[1] == 96 && l.text_size[1] == 108);
	CHECK(l.kallsyms == 136 && l.ks_symtab == 0 && l.ks_num == 8 && l.ks_strtab == 16);
	CHECK(l.has_orc && l.num_orcs == 112 && l.orc_ip == 120 && l.orc == 128);
	CHECK(l.has_state && l.unformed == 3 && strstr(l.what, "6.3"));
	free(b);
	b = make_btf(1, 1, &len); /* 6.4 on: mem[MOD_TEXT] and mem[MOD_INIT_TEXT] (index 4) */
	CHECK(mods_layout_btf(&l, b, len) == 0 && l.ok);
	CHECK(l.text_base[0] == 80 && l.text_size[0] == 88 && l.text_base[1] == 80 + 4 * 16 && l.text_size[1] == 152);
	CHECK(l.kallsyms == 216 && l.orc_ip == 200 && strstr(l.what, "6.4"));
	free(b);
	b = make_btf(1, 0, &len); /* mem[] but no enum mod_mem_type: unknown, not guessed */
	CHECK(mods_layout_btf(&l, b, len) == -1 && !l.ok && strstr(l.why, "mod_mem_type"));
	free(b);
	CHECK(mods_layout_btf(&l, "garbage!", 8) == -1 && strstr(l.why, "does not parse"));
	struct btf *e = btf__new_empty(); /* BTF without struct module */
	btf__add_int(e, "int", 4, BTF_INT_SIGNED);
	__u32 sz;
	const void *raw = btf__raw_data(e, &sz);
	CHECK(mods_layout_btf(&l, raw, sz) == -1 && strstr(l.why, "no struct module"));
	btf__free(e);
}

/* ---- synthetic guest memory ---- */

#define HEAD 0xffffffff82a00000ull   /* &modules */
#define MOD(i) (0xffffffffc0100000ull + (uint64_t)(i) * 0x100000) /* module i's area */
#define TEXT(i) (MOD(i) + 0x1000)    /* its text, 0x800 bytes */
#define STRUCT(i) (MOD(i) + 0x8000)  /* its struct module */
#define KS(i) (MOD(i) + 0x9000)      /* its mod_kallsyms */
#define SYMS(i) (MOD(i) + 0xa000)    /* its Elf64_Sym[] */
#define STR(i) (MOD(i) + 0xb000)     /* its strtab */
#define ORCIP(i) (MOD(i) + 0xc000)   /* its ORC tables */
#define ORCE(i) (MOD(i) + 0xd000)

static struct region { uint64_t addr; uint8_t b[0x100]; } reg[64];
static int nreg, reads, change_after; /* change_after: at that read, load module 2 */
static struct mod_layout L;

static uint8_t *at(uint64_t a, size_t len)
{
	for (int i = 0; i < nreg; i++)
		if (a >= reg[i].addr && a + len <= reg[i].addr + sizeof reg[i].b) return reg[i].b + (a - reg[i].addr);
	if (nreg == 64 || len > sizeof reg[0].b) return NULL;
	reg[nreg].addr = a & ~0xffull;
	memset(reg[nreg].b, 0, sizeof reg[nreg].b);
	if (a + len > reg[nreg].addr + sizeof reg[nreg].b) return NULL;
	return reg[nreg++].b + (a - (a & ~0xffull));
}

static void put(uint64_t a, uint64_t v, int n)
{
	uint8_t *p = at(a, (size_t)n);
	for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void link_list(const int *mods, int n)
{
	uint64_t prev = HEAD;
	for (int i = 0; i < n; i++) {
		put(prev, STRUCT(mods[i]) + L.list, 8);
		prev = STRUCT(mods[i]) + L.list;
	}
	put(prev, HEAD, 8);
}

static void add_loaded(int i, const char *name, const char *fn, int with_orc)
{
	uint64_t s = STRUCT(i);
	memcpy(at(s + L.name, strlen(name) + 1), name, strlen(name) + 1);
	put(s + L.text_base[0], TEXT(i), 8);
	put(s + L.text_size[0], 0x800, 4);
	put(s + L.kallsyms, KS(i), 8);
	put(KS(i) + L.ks_symtab, SYMS(i), 8);
	put(KS(i) + L.ks_num, 3, 4);
	put(KS(i) + L.ks_strtab, STR(i), 8);
	/* symbols: "" (the null symbol), fn at text+0, "data_thing" outside the text */
	put(SYMS(i) + 24 + 0, 1, 4);
	put(SYMS(i) + 24 + 8, TEXT(i), 8);
	put(SYMS(i) + 24 + 16, 0x400, 8);
	put(SYMS(i) + 48 + 0, 1 + strlen(fn) + 1, 4);
	put(SYMS(i) + 48 + 8, MOD(i) + 0x20000, 8);
	char str[64];
	snprintf(str, sizeof str, "%c%s%c%s", 0, fn, 0, "data_thing");
	memcpy(at(STR(i), 1 + strlen(fn) + 1 + 11), str, 1 + strlen(fn) + 1 + 11);
	if (with_orc) { /* two entries: text+0 a call frame (sp+8), text+0x400 undefined */
		put(s + L.num_orcs, 2, 4);
		put(s + L.orc_ip, ORCIP(i), 8);
		put(s + L.orc, ORCE(i), 8);
		put(ORCIP(i), (uint32_t)(int32_t)(TEXT(i) - ORCIP(i)), 4);
		put(ORCIP(i) + 4, (uint32_t)(int32_t)(TEXT(i) + 0x400 - (ORCIP(i) + 4)), 4);
		uint8_t *e = at(ORCE(i), 12);
		e[0] = 8; e[4] = ORC_REG_SP; e[5] = 0;        /* v1: call, sp + 8 */
		e[6 + 4] = ORC_REG_UNDEFINED; e[6 + 5] = 0;    /* v1: undefined, not end */
	}
}

static int mem_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	if (++reads == change_after) { /* module 2 is loaded right now, at the head */
		add_loaded(2, "late", "late_fn", 0);
		static const int l3[] = { 2, 0, 1 };
		link_list(l3, 3);
	}
	for (size_t o = 0; o < len;) { /* region by region */
		uint64_t a = addr + o;
		int found = 0;
		for (int i = 0; i < nreg && !found; i++)
			if (a >= reg[i].addr && a < reg[i].addr + sizeof reg[i].b) {
				size_t n = reg[i].addr + sizeof reg[i].b - a;
				if (n > len - o) n = len - o;
				memcpy((uint8_t *)buf + o, reg[i].b + (a - reg[i].addr), n);
				o += n;
				found = 1;
			}
		if (!found) {
			if (a >= MOD(0) && a < MOD(8)) { /* module memory reads as zeros */
				((uint8_t *)buf)[o++] = 0;
				continue;
			}
			return -1;
		}
	}
	return 0;
}

static void setup_guest(void)
{
	size_t len;
	void *b = make_btf(0, 1, &len);
	mods_layout_btf(&L, b, len);
	free(b);
	nreg = reads = change_after = 0;
	add_loaded(0, "hotmod", "hot_fn", 1);
	add_loaded(1, "other", "other_fn", 0);
	static const int l2[] = { 0, 1 };
	link_list(l2, 2);
}

static void test_walk(void)
{
	struct modset s;
	struct symtab names;
	char buf[128];
	setup_guest();
	memset(&s, 0, sizeof s);
	memset(&names, 0, sizeof names);
	syms_add(&names, 0xffffffff81000000ull, 0x100, "core_fn");
	syms_finish(&names);
	s.l = L;
	s.head = HEAD;
	s.orc_layout = ORC_LAYOUT_V1;
	s.last = -1;
	CHECK(mods_walk(&s, &names, mem_read, NULL) == 0);
	CHECK(s.n == 2 && !strcmp(s.m[0].name, "hotmod") && !strcmp(s.m[1].name, "other"));
	CHECK(s.m[0].nsyms == 1 && s.m[0].has_orc && !s.m[1].has_orc && s.st.bad == 0);
	CHECK(s.st.loaded == 0 && s.st.changed == 0);
	/* names: the module's text symbol, tagged; the data symbol left out; the core untouched */
	const struct sym *y = syms_lookup(&names, TEXT(0) + 0x10);
	CHECK(y && !strcmp(y->name, "hot_fn") && y->mod && !strcmp(y->mod, "hotmod"));
	syms_name(y, buf, sizeof buf);
	CHECK_STR(buf, "hot_fn [hotmod]");
	syms_format(&names, TEXT(0) + 0x10, buf, sizeof buf);
	CHECK_STR(buf, "hot_fn+0x10 [hotmod]");
	CHECK(syms_lookup(&names, MOD(0) + 0x20000) == NULL);
	y = syms_lookup(&names, 0xffffffff81000010ull);
	CHECK(y && y->mod == NULL);
	/* the range map and ORC */
	CHECK(mods_find(&s, TEXT(1) + 0x7ff) == &s.m[1] && mods_find(&s, TEXT(1) + 0x800) == NULL);
	CHECK(mods_find(&s, TEXT(0)) == &s.m[0] && mods_find(&s, TEXT(0) - 1) == NULL);
	struct orc_table *t = mods_orc(&s, TEXT(0) + 0x20);
	struct orc_entry e;
	CHECK(t && orc_find(t, TEXT(0) + 0x20, &e) == 0 && e.type == ORC_CALL && e.sp_off == 8);
	CHECK(mods_orc(&s, TEXT(1)) == NULL && !s.want_walk);  /* a module without ORC: known */
	CHECK(mods_orc(&s, MOD(5)) == NULL && s.want_walk && s.st.unknown_pcs == 1); /* no module */

	/* a frame in the module unwinds by its ORC through the core table's `more` */
	struct orc_table core;
	uint8_t cip[4] = { 0 }, cent[6] = { 0, 0, 0, 0, 0, 4 }; /* one core entry: end of stack */
	CHECK(orc_load(&core, cip, 4, 0xffffffff81000000ull, cent, 6, NULL, 0, 0xffffffff81000000ull,
		       0xffffffff81001000ull) == 0);
	core.more = mods_orc;
	core.more_arg = &s;
	static uint8_t stk[256];
	uint64_t sp = 0xffffc90000010000ull, ret = 0xffffffff81000040ull;
	for (int i = 0; i < 8; i++) stk[i] = (uint8_t)(ret >> (8 * i));
	struct unwinder u = { UM_ORC, &core, orc_step };
	struct unwind_in in;
	memset(&in, 0, sizeof in);
	in.arch = &uw_arch_x86_64;
	in.pc = TEXT(0) + 0x20;
	in.regs.r[7] = sp;
	in.regs.valid = 1u << 7;
	in.klo = 0xffff800000000000ull;
	in.khi = ~0ull;
	in.span = 0x10000;
	in.max_frames = 8;
	in.nmethods = 1;
	in.methods[0] = &u;
	in.nchunks = 1;
	in.chunks[0] = (struct unwind_chunk){ sp, sizeof stk, stk };
	uint64_t f[8];
	struct unwind_out out;
	unwind_walk(&in, f, &out);
	CHECK(out.n == 2 && f[1] == ret && out.stop == UW_END && out.by_method[UM_ORC] == 1);
	orc_free(&core);

	/* walked again after module 1 is unloaded and module 3 loaded */
	add_loaded(3, "newmod", "new_fn", 0);
	static const int l3[] = { 3, 0 };
	link_list(l3, 2);
	CHECK(mods_walk(&s, &names, mem_read, NULL) == 0);
	CHECK(s.st.loaded == 1 && s.st.unloaded == 1 && !s.want_walk);
	CHECK(mods_find(&s, TEXT(1)) == NULL && mods_find(&s, TEXT(3)) != NULL);
	y = syms_lookup(&names, TEXT(3));
	CHECK(y && !strcmp(y->name, "new_fn") && !strcmp(y->mod, "newmod"));
	y = syms_lookup(&names, TEXT(1)); /* an unloaded module's names stay for earlier samples */
	CHECK(y && !strcmp(y->mod, "other"));
	mods_free(&s);
	syms_free(&names);
}

static void test_changes_and_garbage(void)
{
	struct modset s;
	struct symtab names;
	/* the list changes while it is read: walked again, the new module found */
	setup_guest();
	memset(&s, 0, sizeof s);
	memset(&names, 0, sizeof names);
	s.l = L;
	s.head = HEAD;
	s.last = -1;
	change_after = 5;
	CHECK(mods_walk(&s, &names, mem_read, NULL) == 0);
	CHECK(s.st.changed >= 1 && s.n == 3 && mods_find(&s, TEXT(2)) != NULL);
	mods_free(&s);
	syms_free(&names);

	/* garbage: a module whose kallsyms pointer is junk is kept (named by nothing), counted */
	setup_guest();
	memset(&s, 0, sizeof s);
	memset(&names, 0, sizeof names);
	s.l = L;
	s.head = HEAD;
	s.last = -1;
	put(STRUCT(1) + L.kallsyms, 0x1234, 8);
	CHECK(mods_walk(&s, &names, mem_read, NULL) == 0 && s.n == 2 && s.st.bad == 1);
	mods_free(&s);
	syms_free(&names);
	/* a list pointer into user space, and a list that loops without reaching the head */
	setup_guest();
	memset(&s, 0, sizeof s);
	s.l = L;
	s.head = HEAD;
	s.last = -1;
	put(STRUCT(0) + L.list, 0x7fff0000, 8);
	CHECK(mods_walk(&s, &names, mem_read, NULL) == -1 && s.err == ERR_MISMATCH && strstr(s.errstr, "garbage"));
	mods_free(&s);
	setup_guest();
	memset(&s, 0, sizeof s);
	s.l = L;
	s.head = HEAD;
	s.last = -1;
	put(STRUCT(1) + L.list, STRUCT(0) + L.list, 8);
	CHECK(mods_walk(&s, &names, mem_read, NULL) == -1 && strstr(s.errstr, "garbage"));
	mods_free(&s);
	/* an unreadable head; no layout */
	memset(&s, 0, sizeof s);
	s.l = L;
	s.head = 0xffffffff8f000000ull;
	CHECK(mods_walk(&s, &names, mem_read, NULL) == -1);
	memset(&s, 0, sizeof s);
	CHECK(mods_walk(&s, &names, mem_read, NULL) == -1 && strstr(s.errstr, "modules:"));
	syms_free(&names);
	/* decode: a name with control bytes is made printable; a text range that wraps is refused */
	uint8_t raw[144] = { 0 };
	struct mod_raw r;
	for (int i = 0; i < 8; i++) raw[L.list + i] = (uint8_t)(HEAD >> (8 * i));
	memcpy(raw + L.name, "ev\033il", 6);
	CHECK(mods_decode(&L, raw, &r) == 0 && !strcmp(r.name, "ev?il"));
	for (int i = 0; i < 8; i++) raw[L.text_base[0] + i] = 0xff;
	raw[L.text_size[0]] = 0xff;
	raw[L.text_size[0] + 1] = 0xff;
	CHECK(mods_decode(&L, raw, &r) == -1);
}

void test_modules(void)
{
	test_layout();
	test_walk();
	test_changes_and_garbage();
}
