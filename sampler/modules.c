/* SPDX-License-Identifier: MIT */
/* modules.c: a Linux guest's loaded kernel modules read from its memory -- names, text, symbols, ORC. */
#include "modules.h"
#include "bytes.h"
#include "err.h"
#include "guestos.h"
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdlib.h>

/*
 * The kernel keeps its modules on the list `modules` (struct list_head; list_add_rcu puts a new
 * one at the head), each a struct module whose layout differs between versions:
 *   <= 6.3  core_layout and init_layout (struct module_layout: base, size, text_size, ...):
 *           text is [base, base + text_size)
 *   6.4 on  mem[MOD_MEM_NUM_TYPES] (struct module_memory: base, size, ...): text is
 *           mem[MOD_TEXT] and mem[MOD_INIT_TEXT], indexes from BTF's enum mod_mem_type
 * Its symbols are mod->kallsyms (struct mod_kallsyms: symtab, an Elf64_Sym array, num_symtab,
 * strtab), its ORC on x86_64 mod->arch.orc_unwind_ip / orc_unwind / num_orcs, sorted at load by
 * unwind_module_init(). Every offset comes from BTF through libbpf.
 */

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int nope(struct mod_layout *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->why, sizeof l->why, fmt, ap);
	va_end(ap);
	l->ok = 0;
	return -1;
}

/* Resolve typedefs and qualifiers. */
static const struct btf_type *skip(const struct btf *b, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(b, *id);
	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		*id = t->type;
		t = btf__type_by_id(b, *id);
	}
	return t;
}

/* A member's offset that must have the given size (0: any); -1 if absent or of another size. */
static long field(const struct btf *b, __u32 id, const char *name, long long want, __u32 *type)
{
	long long sz = 0;
	long off = guestos_btf_member(b, id, name, &sz, type, 0);
	if (off < 0 || (want && sz != want)) return -1;
	return off;
}

/* An enumerator's value in the named enum; 0 found, -1 not. */
static int enum_val(const struct btf *b, const char *ename, const char *name, int64_t *v)
{
	int id = btf__find_by_name_kind(b, ename, BTF_KIND_ENUM);
	if (id < 0) return -1;
	const struct btf_type *t = btf__type_by_id(b, (__u32)id);
	const struct btf_enum *e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++) {
		const char *n = btf__name_by_offset(b, e[i].name_off);
		if (n && !strcmp(n, name)) {
			*v = e[i].val;
			return 0;
		}
	}
	return -1;
}

static int layout(struct mod_layout *l, const struct btf *b)
{
	int mid = btf__find_by_name_kind(b, "module", BTF_KIND_STRUCT);
	if (mid < 0) return nope(l, "the image's BTF has no struct module");
	__u32 m = (__u32)mid, ty = 0;
	long long msz = btf__resolve_size(b, m);
	if (msz <= 0 || msz > MODS_STRUCT_MAX) return nope(l, "struct module in BTF has an odd size (%lld)", msz);
	l->size = (uint32_t)msz;
	long list = field(b, m, "list", 16, NULL), name = field(b, m, "name", 0, &ty);
	long long nsz = btf__resolve_size(b, ty);
	if (list < 0 || name < 0 || nsz < 8 || nsz > MODS_NAME + 8)
		return nope(l, "struct module in BTF lacks list or name[] in a layout gdbsample knows");
	l->list = (uint32_t)list;
	l->name = (uint32_t)name;
	l->name_len = (uint32_t)(nsz > MODS_NAME ? MODS_NAME : nsz);
	long st = field(b, m, "state", 4, NULL);
	if (st >= 0 && enum_val(b, "module_state", "MODULE_STATE_UNFORMED", &l->unformed) == 0) {
		l->has_state = 1;
		l->state = (uint32_t)st;
	}
	/* Text regions. */
	long mem = field(b, m, "mem", 0, &ty);
	if (mem >= 0) { /* 6.4 on */
		const struct btf_type *at = skip(b, &ty);
		int64_t text, init;
		if (!at || !btf_is_array(at)) return nope(l, "struct module's mem in BTF is not an array");
		const struct btf_array *a = btf_array(at);
		__u32 et = a->type;
		long long esz = btf__resolve_size(b, et);
		long base = field(b, et, "base", 8, NULL), size = field(b, et, "size", 4, NULL);
		if (esz <= 0 || base < 0 || size < 0 || enum_val(b, "mod_mem_type", "MOD_TEXT", &text) ||
		    enum_val(b, "mod_mem_type", "MOD_INIT_TEXT", &init) || text < 0 || init < 0 ||
		    (uint64_t)text >= a->nelems || (uint64_t)init >= a->nelems)
			return nope(l, "struct module_memory or enum mod_mem_type in BTF is not as gdbsample knows them");
		int64_t idx[2] = { text, init };
		for (int r = 0; r < 2; r++) {
			l->text_base[r] = (uint32_t)(mem + idx[r] * esz + base);
			l->text_size[r] = (uint32_t)(mem + idx[r] * esz + size);
		}
		snprintf(l->what, sizeof l->what, "mem[] (Linux >= 6.4)");
	} else { /* up to 6.3 */
		static const char *const names[2] = { "core_layout", "init_layout" };
		for (int r = 0; r < 2; r++) {
			long lo = field(b, m, names[r], 0, &ty);
			long base = lo < 0 ? -1 : field(b, ty, "base", 8, NULL);
			long tsz = lo < 0 ? -1 : field(b, ty, "text_size", 4, NULL);
			if (lo < 0 || base < 0 || tsz < 0)
				return nope(l, "struct module in BTF has neither mem[] (6.4 on) nor core_layout/init_layout "
					    "(<= 6.3) with base and text_size: a layout gdbsample does not know");
			l->text_base[r] = (uint32_t)(lo + base);
			l->text_size[r] = (uint32_t)(lo + tsz);
		}
		snprintf(l->what, sizeof l->what, "core_layout (Linux <= 6.3)");
	}
	l->ntext = 2;
	/* Symbols. */
	long ks = field(b, m, "kallsyms", 8, NULL);
	int kid = btf__find_by_name_kind(b, "mod_kallsyms", BTF_KIND_STRUCT);
	long sy = kid < 0 ? -1 : field(b, (__u32)kid, "symtab", 8, NULL);
	long nu = kid < 0 ? -1 : field(b, (__u32)kid, "num_symtab", 4, NULL);
	long sr = kid < 0 ? -1 : field(b, (__u32)kid, "strtab", 8, NULL);
	if (ks < 0 || sy < 0 || nu < 0 || sr < 0 || sy > 64 || nu > 64 || sr > 64)
		return nope(l, "struct module in BTF lacks kallsyms (struct mod_kallsyms: symtab, num_symtab, strtab)");
	l->kallsyms = (uint32_t)ks;
	l->ks_symtab = (uint32_t)sy;
	l->ks_num = (uint32_t)nu;
	l->ks_strtab = (uint32_t)sr;
	/* ORC (x86_64 only; optional). */
	long arch = field(b, m, "arch", 0, &ty);
	long oi = arch < 0 ? -1 : field(b, ty, "orc_unwind_ip", 8, NULL);
	long oe = arch < 0 ? -1 : field(b, ty, "orc_unwind", 8, NULL);
	long on = arch < 0 ? -1 : field(b, ty, "num_orcs", 4, NULL);
	if (oi >= 0 && oe >= 0 && on >= 0) {
		l->has_orc = 1;
		l->orc_ip = (uint32_t)(arch + oi);
		l->orc = (uint32_t)(arch + oe);
		l->num_orcs = (uint32_t)(arch + on);
	}
	uint32_t hiw = l->kallsyms + 8;
	for (int r = 0; r < 2; r++) {
		if (l->text_base[r] + 8 > hiw) hiw = l->text_base[r] + 8;
		if (l->text_size[r] + 4 > hiw) hiw = l->text_size[r] + 4;
	}
	if (hiw > l->size || l->list + 16 > l->size || l->name + l->name_len > l->size ||
	    (l->has_orc && (l->orc_ip + 8 > l->size || l->orc + 8 > l->size || l->num_orcs + 4 > l->size)))
		return nope(l, "struct module in BTF has members past its end");
	l->ok = 1;
	l->why[0] = 0;
	return 0;
}

int mods_layout_btf(struct mod_layout *l, const void *data, size_t len)
{
	memset(l, 0, sizeof *l);
	libbpf_set_print(quiet);
	struct btf *b = btf__new(data, (__u32)len);
	if (!b || libbpf_get_error(b)) return nope(l, "the image's BTF does not parse (libbpf)");
	int rc = layout(l, b);
	btf__free(b);
	return rc;
}

/* A kernel pointer: upper half (both x86_64 and arm64 keep modules there), 8-aligned when asked. */
static int kptr(uint64_t p, int aligned)
{
	return p >> 63 && (!aligned || !(p & 7));
}

int mods_decode(const struct mod_layout *l, const uint8_t *b, struct mod_raw *o)
{
	memset(o, 0, sizeof *o);
	o->next = le64(b + l->list);
	memcpy(o->name, b + l->name, l->name_len);
	o->name[l->name_len] = 0;
	for (char *c = o->name; *c; c++) /* never echo control bytes to a terminal */
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
	o->state_unformed = l->has_state && (int64_t)(int32_t)le32(b + l->state) == l->unformed;
	for (int r = 0; r < l->ntext; r++) {
		uint64_t base = le64(b + l->text_base[r]), sz = le32(b + l->text_size[r]);
		if (base && sz) {
			o->text[r][0] = base;
			o->text[r][1] = base + sz;
		}
	}
	o->kallsyms = le64(b + l->kallsyms);
	if (l->has_orc) {
		o->orc_ip = le64(b + l->orc_ip);
		o->orc = le64(b + l->orc);
		o->num_orcs = (uint32_t)le32(b + l->num_orcs);
	}
	if (!kptr(o->next, 1) || !o->name[0]) return -1;
	for (int r = 0; r < 2; r++)
		if (o->text[r][1] && (!kptr(o->text[r][0], 0) || o->text[r][1] < o->text[r][0])) return -1;
	return 0;
}

void mods_decode_kallsyms(const struct mod_layout *l, const uint8_t *b, uint64_t *symtab, uint32_t *num,
			  uint64_t *strtab)
{
	*symtab = le64(b + l->ks_symtab);
	*num = (uint32_t)le32(b + l->ks_num);
	*strtab = le64(b + l->ks_strtab);
}

/* ---- reading ---- */

struct rdctx {
	struct modset *s;
	mods_read_fn rd;
	void *arg;
	int failed;              /* -2 seen: the connection is gone */
};

static int get(struct rdctx *c, uint64_t addr, void *buf, size_t len)
{
	if (c->failed) return -2;
	int rc = c->rd(c->arg, addr, buf, len);
	if (rc == -2) c->failed = 1;
	else c->s->st.bytes += len;
	return rc;
}

/* The module's text symbols: every named Elf64_Sym whose value lies in its text. */
static int read_syms(struct rdctx *c, struct module *m, uint64_t ks, struct symtab *names)
{
	const struct mod_layout *l = &c->s->l;
	uint8_t kb[64 + 8 + 8];
	uint64_t symtab, strtab;
	uint32_t num;
	size_t need = l->ks_strtab + 8 > l->ks_num + 4 ? l->ks_strtab + 8 : l->ks_num + 4;
	if (need < l->ks_symtab + 8) need = l->ks_symtab + 8;
	if (!kptr(ks, 1) || need > sizeof kb) return -1;
	int rc = get(c, ks, kb, need);
	if (rc) return rc;
	mods_decode_kallsyms(l, kb, &symtab, &num, &strtab);
	if (!num) return 0;
	if (!kptr(symtab, 1) || !kptr(strtab, 0) || num > MODS_MAX_SYMS) return -1;
	uint8_t *syms = malloc((size_t)num * 24);
	char *str = NULL;
	if (!syms) return -1;
	if ((rc = get(c, symtab, syms, (size_t)num * 24))) goto out;
	uint32_t maxname = 0;
	for (uint32_t i = 0; i < num; i++) {
		uint32_t nm = (uint32_t)le32(syms + 24 * i);
		if (nm > maxname) maxname = nm;
	}
	size_t slen = (size_t)maxname + 256; /* the last name's bytes (names longer than that are cut) */
	if (slen > MODS_MAX_STRTAB) {
		rc = -1;
		goto out;
	}
	str = malloc(slen + 1);
	if (!str) {
		rc = -1;
		goto out;
	}
	if ((rc = get(c, strtab, str, slen))) goto out;
	str[slen] = 0;
	for (uint32_t i = 0; i < num; i++) {
		const uint8_t *e = syms + 24 * i; /* st_name, st_info, st_other, st_shndx, st_value, st_size */
		uint32_t nm = (uint32_t)le32(e);
		uint64_t v = le64(e + 8), sz = le64(e + 16);
		int in = 0;
		for (int r = 0; r < 2; r++) in |= v >= m->text[r][0] && v < m->text[r][1];
		if (!in || !str[nm]) continue;
		const char *n = str + nm;
		int ok = 1;
		for (const char *p = n; *p; p++) ok &= (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f;
		if (!ok || n[0] == '$' || n[0] == '.') continue; /* garbage; local labels, mapping symbols */
		if (syms_add_mod(names, v, sz < (1u << 24) ? sz : 0, n, m->name) < 0) {
			rc = -1;
			goto out;
		}
		m->nsyms++;
	}
out:
	free(syms);
	free(str);
	return rc;
}

/* The module's ORC table, with the core kernel's layout (modules are built with it). */
static int read_orc(struct rdctx *c, struct module *m, const struct mod_raw *raw)
{
	if (!raw->num_orcs || !raw->orc_ip || !raw->orc) return 0;
	if (!kptr(raw->orc_ip, 0) || !kptr(raw->orc, 0) || raw->num_orcs > MODS_MAX_ORCS) return -1;
	size_t n = raw->num_orcs;
	uint8_t *ips = malloc(n * 4), *ents = malloc(n * 6);
	int rc = -1;
	if (!ips || !ents) goto out;
	if ((rc = get(c, raw->orc_ip, ips, n * 4)) || (rc = get(c, raw->orc, ents, n * 6))) goto out;
	uint64_t lo = ~0ull, hi = 0;
	for (int r = 0; r < 2; r++)
		if (m->text[r][1]) {
			if (m->text[r][0] < lo) lo = m->text[r][0];
			if (m->text[r][1] > hi) hi = m->text[r][1];
		}
	rc = orc_load_as(&m->orc, c->s->orc_layout, ips, n * 4, raw->orc_ip, ents, n * 6, lo, hi);
	if (rc == 0) m->has_orc = 1;
	else rc = -1;
out:
	free(ips);
	free(ents);
	return rc;
}

/* The chain of struct module addresses from the head: n of them, -1 garbage, -2 connection. */
static int chain(struct rdctx *c, uint64_t *addrs, int *n)
{
	uint64_t at = c->s->head, next;
	*n = 0;
	for (;;) {
		int rc = get(c, at, &next, 8);
		if (rc) return rc;
		if (next == c->s->head) return 0;
		if (!kptr(next, 1) || *n == MODS_MAX) return -1;
		addrs[(*n)++] = next - c->s->l.list;
		at = next;
	}
}

static int rangecmp(const void *a, const void *b)
{
	const struct mod_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int rebuild_ranges(struct modset *s)
{
	struct mod_range *r = realloc(s->r, (size_t)(s->n ? s->n : 1) * 2 * sizeof *r);
	if (!r) return -1;
	s->r = r;
	s->nr = 0;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < 2; k++)
			if (s->m[i].seen && s->m[i].text[k][1] > s->m[i].text[k][0])
				r[s->nr++] = (struct mod_range){ s->m[i].text[k][0], s->m[i].text[k][1], i };
	qsort(r, (size_t)s->nr, sizeof *r, rangecmp);
	s->last = -1;
	return 0;
}

/* Read one module not known yet. 0 added, -1 skipped (bad, counted), -2 connection. */
static int add_module(struct rdctx *c, uint64_t addr, struct symtab *names, int first)
{
	struct modset *s = c->s;
	uint8_t buf[MODS_STRUCT_MAX];
	struct mod_raw raw;
	int rc = get(c, addr, buf, s->l.size);
	if (rc == -2) return -2;
	if (rc || mods_decode(&s->l, buf, &raw) < 0) {
		s->st.bad++;
		return -1;
	}
	if (raw.state_unformed) return -1; /* still being set up: found by a later walk */
	struct module *nm = realloc(s->m, (size_t)(s->n + 1) * sizeof *nm);
	if (!nm) return -1;
	s->m = nm;
	struct module *m = &s->m[s->n];
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", raw.name);
	m->addr = addr;
	memcpy(m->text, raw.text, sizeof m->text);
	m->seen = 1;
	if ((rc = read_syms(c, m, raw.kallsyms, names)) == -2) return -2;
	if (rc) s->st.bad++;
	if ((rc = read_orc(c, m, &raw)) == -2) return -2;
	if (rc) s->st.bad++;
	s->n++;
	if (!first) s->st.loaded++;
	return 0;
}

int mods_walk(struct modset *s, struct symtab *names, mods_read_fn rd, void *arg)
{
	static uint64_t a[MODS_MAX], b[MODS_MAX];
	struct rdctx c = { s, rd, arg, 0 };
	int na = 0, nb = 0, rc, first = s->st.walks == 0;
	if (!s->l.ok || !s->head) {
		ERR_SET(s, ERR_FORMAT, "modules: %s", s->l.ok ? "no address for the list `modules`" : s->l.why);
		return -1;
	}
	s->st.walks++;
	for (int tries = 0;; tries++) {
		if ((rc = chain(&c, a, &na))) goto bad;
		for (int i = 0; i < s->n; i++) s->m[i].seen = 0;
		size_t before = names->n;
		for (int i = 0; i < na; i++) {
			int known = 0;
			for (int k = 0; k < s->n && !known; k++)
				if (s->m[k].addr == a[i] && !s->m[k].seen) known = 1, s->m[k].seen = 1;
			if (!known && (rc = add_module(&c, a[i], names, first)) == -2) goto bad;
		}
		if (names->n != before) syms_finish(names);
		if ((rc = chain(&c, b, &nb))) goto bad;
		if (na == nb && !memcmp(a, b, (size_t)na * 8)) break;
		s->st.changed++; /* loaded or unloaded while we read: once more */
		if (tries == 2) break;
	}
	for (int i = 0; i < s->n; i++)
		if (!s->m[i].seen && s->m[i].addr) { /* gone: keep its names for earlier samples */
			s->st.unloaded++;
			s->m[i].addr = 0;
			if (s->m[i].has_orc) orc_free(&s->m[i].orc);
			s->m[i].has_orc = 0;
		}
	s->want_walk = 0;
	if (rebuild_ranges(s) < 0) {
		ERR_SET(s, ERR_SYS, "out of memory");
		return -1;
	}
	return 0;
bad:
	if (rc == -2 || c.failed) return -2;
	ERR_SET(s, ERR_MISMATCH, "modules: the list at 0x%llx holds garbage (not a list of struct module)",
		(unsigned long long)s->head);
	return -1;
}

const struct module *mods_find(struct modset *s, uint64_t pc)
{
	if (s->last >= 0 && s->last < s->nr && pc >= s->r[s->last].lo && pc < s->r[s->last].hi)
		return &s->m[s->r[s->last].mod];
	int lo = 0, hi = s->nr; /* the last range starting at or below pc */
	if (!s->nr || pc < s->r[0].lo) return NULL;
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (s->r[mid].lo <= pc) lo = mid;
		else hi = mid;
	}
	if (pc >= s->r[lo].hi) return NULL;
	s->last = lo;
	return &s->m[s->r[lo].mod];
}

struct orc_table *mods_orc(void *arg, uint64_t pc)
{
	struct modset *s = arg;
	const struct module *m = mods_find(s, pc);
	if (!m) {
		s->st.unknown_pcs++;
		s->want_walk = 1;
		return NULL;
	}
	return m->has_orc ? (struct orc_table *)&m->orc : NULL;
}

void mods_free(struct modset *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->m[i].has_orc) orc_free(&s->m[i].orc);
	free(s->m);
	free(s->r);
	s->m = NULL;
	s->r = NULL;
	s->n = s->nr = 0;
}
