/* SPDX-License-Identifier: MIT */
/* koplace.c: a loaded module's .ko placed where the guest loaded its sections (libdwfl), for its
 * CFI and source lines; the files themselves are kofile.c's. */
#include "kofile.h"
#include "arch.h"
#include "err.h"
#include "files.h"
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>

/*
 * A .ko is ET_REL: its sections have no addresses, its symbols are offsets into their section,
 * and its DWARF and CFI need relocating against the sections' load addresses. The kernel lays a
 * module's sections out as it loads it (layout_sections: by flags, then order), so gdbsample
 * never guesses that layout: each section's base is derived from the module's own symbols as
 * the guest keeps them (mod->kallsyms, modules.c: runtime addresses) -- base = guest address -
 * st_value, for every .ko function found there by name, the base most of them agree on. Sections
 * with no function in the guest (.init.text once freed, data) are left unloaded. libdwfl then
 * relocates the DWARF (Dwfl_Callbacks.section_address, as for a live kernel's modules), and its
 * .debug_frame feeds the CFI unwinder (unwind_cfi.c) and its line table `dump`.
 *
 * Every function found in the guest must have the size the .ko says -- another build of the
 * module (same kernel, changed source) is refused, not placed wrongly.
 */

/* ---- pure part: the sections' bases ---- */

static int bycount(const void *a, const void *b)
{
	const struct ko_base *x = a, *y = b;
	if (x->shndx != y->shndx) return x->shndx < y->shndx ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int ko_section_bases(const struct ko_sym *ks, size_t nk, const struct ko_gsym *gs, size_t ng,
		     struct ko_base *out, int cap, struct ko_match *m)
{
	struct ko_base *c = malloc((nk ? nk : 1) * sizeof *c); /* one candidate per matched symbol */
	size_t nc = 0;
	memset(m, 0, sizeof *m);
	if (!c) return -1;
	for (size_t i = 0; i < nk; i++)
		for (size_t j = 0; j < ng; j++)
			if (!strcmp(ks[i].name, gs[j].name)) {
				c[nc++] = (struct ko_base){ ks[i].shndx, gs[j].addr - ks[i].value, 1 };
				if (ks[i].size && gs[j].size && ks[i].size != gs[j].size) m->sizes_differ++;
				break;
			}
	qsort(c, nc, sizeof *c, bycount);
	int n = 0;
	for (size_t i = 0; i < nc;) { /* per section: the base the most symbols give */
		size_t e = i, best = i, bestn = 0, total = 0;
		while (e < nc && c[e].shndx == c[i].shndx) {
			size_t r = e;
			while (r < nc && c[r].shndx == c[e].shndx && c[r].addr == c[e].addr) r++;
			if (r - e > bestn) bestn = r - e, best = e;
			total += r - e;
			e = r;
		}
		if (n < cap) out[n++] = (struct ko_base){ c[best].shndx, c[best].addr, (uint32_t)bestn };
		m->matched += (uint32_t)bestn;
		m->disagree += (uint32_t)(total - bestn);
		i = e;
	}
	free(c);
	return n;
}

/* ---- placement through libdwfl ---- */

static int find_elf(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr b, char **file, Elf **elfp)
{
	(void)mod;
	(void)name;
	(void)b;
	(void)file;
	struct kofile *k = *ud;
	uint8_t *copy = malloc(k->len); /* libdwfl relocates in place: a copy per placement */
	if (!copy) return -1;
	memcpy(copy, k->buf, k->len);
	*elfp = elf_memory((char *)copy, k->len);
	if (!*elfp) {
		free(copy);
		return -1;
	}
	k->work = copy;
	return -1; /* no file descriptor: *elfp is it */
}

static int no_debuginfo(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr b, const char *file,
			const char *link, GElf_Word crc, char **out)
{
	(void)mod, (void)ud, (void)name, (void)b, (void)file, (void)link, (void)crc, (void)out;
	return -1; /* the .ko holds its own DWARF */
}

static int sec_addr(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr b, const char *sec,
		    GElf_Word shndx, const GElf_Shdr *sh, Dwarf_Addr *addr)
{
	(void)mod, (void)name, (void)b, (void)sec, (void)sh;
	const struct kofile *k = *ud;
	*addr = (Dwarf_Addr)-1; /* not placed: not in accessible memory (freed .init.text, data) */
	for (int i = 0; i < k->nbases; i++)
		if (k->bases[i].shndx == shndx) *addr = k->bases[i].addr;
	return 0;
}

static const Dwfl_Callbacks callbacks = { find_elf, no_debuginfo, sec_addr, NULL };

void ko_unplace(struct kofile *k)
{
	if (k->has_cfi) { /* the tables are libdwfl's: only the rule cache is ours */
		k->cfi.eh = k->cfi.dbg = NULL;
		k->cfi.dw = NULL;
		cfi_free(&k->cfi);
	}
	if (k->dwfl) dwfl_end(k->dwfl);
	free(k->work);
	k->work = NULL;
	k->dwfl = NULL;
	k->dm = NULL;
	k->has_cfi = 0;
	k->placed = 0;
	k->modaddr = 0;
}

/* The .ko's function symbols (names point into its string table; valid while e lives). */
static size_t ko_syms(Elf *e, struct ko_sym **out)
{
	Elf_Scn *s = NULL;
	size_t n = 0;
	*out = NULL;
	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize || !(d = elf_getdata(s, NULL)))
			continue;
		size_t cnt = sh.sh_size / sh.sh_entsize;
		struct ko_sym *v = malloc((cnt ? cnt : 1) * sizeof *v);
		if (!v) return 0;
		for (size_t i = 0; i < cnt; i++) {
			GElf_Sym y;
			const char *nm;
			if (!gelf_getsym(d, (int)i, &y) || GELF_ST_TYPE(y.st_info) != STT_FUNC || y.st_shndx == SHN_UNDEF ||
			    y.st_shndx >= SHN_LORESERVE || !(nm = elf_strptr(e, sh.sh_link, y.st_name)) || !nm[0])
				continue;
			v[n++] = (struct ko_sym){ nm, y.st_shndx, y.st_value, y.st_size };
		}
		*out = v;
		return n;
	}
	return 0;
}

/* Place k for loaded module m: 0 placed, 1 refused (not the build loaded: k->refused, why in
 * s->errstr if explicit), -1 out of memory. */
static int place(struct koset *s, struct kofile *k, const struct module *m, const struct symtab *names)
{
	Elf *e = elf_memory((char *)k->buf, k->len);
	struct ko_sym *ks = NULL;
	struct ko_gsym *gs = NULL;
	size_t nk = e ? ko_syms(e, &ks) : 0, ng = 0;
	int rc = 1;
	gs = malloc(((size_t)m->nsyms + 1) * sizeof *gs);
	if (!gs) goto out;
	for (size_t i = 0; i < names->n && ng < (size_t)m->nsyms + 1; i++) {
		const struct sym *y = &names->syms[i];
		int in = 0;
		for (int r = 0; r < 2; r++) in |= y->addr >= m->text[r][0] && y->addr < m->text[r][1];
		if (in && y->mod && !strcmp(y->mod, m->name)) gs[ng++] = (struct ko_gsym){ y->name, y->addr, y->size };
	}
	k->nbases = ko_section_bases(ks, nk, gs, ng, k->bases, KO_MAX_SECS, &k->match);
	if (k->nbases <= 0 || k->match.sizes_differ || k->match.disagree) {
		k->refused = 1;
		if (!k->from_dir)
			ERR_SET(s, ERR_MISMATCH, "-e %s: not the build of %s the guest runs (%s; %u of %zu functions "
				"matched, %u of another size, %u at another offset)", file_base(k->path), m->name,
				k->nbases <= 0 ? "none of its functions is among the module's symbols in the guest"
					       : "its functions differ from the loaded ones",
				k->match.matched, nk, k->match.sizes_differ, k->match.disagree);
		goto out;
	}
	rc = -1;
	k->dwfl = dwfl_begin(&callbacks);
	if (!k->dwfl) goto out;
	dwfl_report_begin(k->dwfl);
	k->dm = dwfl_report_module(k->dwfl, m->name, m->text[0][0], m->text[0][1]);
	void **ud = NULL;
	if (!k->dm || !dwfl_module_info(k->dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL) || !ud) goto out;
	*ud = k;
	dwfl_report_end(k->dwfl, NULL, NULL);
	Dwarf_Addr bias = 0;
	Dwarf_CFI *dbg = dwfl_module_dwarf_cfi(k->dm, &bias), *eh = NULL;
	Dwarf_Addr ebias = 0;
	if (!dbg) eh = dwfl_module_eh_cfi(k->dm, &ebias);
	if (dbg || eh) {
		memset(&k->cfi, 0, sizeof k->cfi);
		GElf_Ehdr eh0;
		const struct arch *a = e && gelf_getehdr(e, &eh0) ? arch_by_machine(eh0.e_machine) : NULL;
		const struct uw_arch *ua = a ? a->uw : &uw_arch_x86_64;
		k->cfi.nregs = ua->nregs;
		k->cfi.nalias = ua->nalias;
		k->cfi.alias = ua->alias;
		k->cfi.dbg = dbg;
		k->cfi.eh = eh;
		k->cfi.bias = dbg ? bias : ebias;
		k->has_cfi = 1;
	}
	k->placed = 1;
	k->modaddr = m->addr;
	k->lo = m->text[0][0];
	k->hi = m->text[0][1];
	rc = 0;
out:
	if (rc < 0) ko_unplace(k);
	free(ks);
	free(gs);
	if (e) elf_end(e);
	return rc;
}

int ko_place(struct koset *s, const struct modset *mods, const struct symtab *names)
{
	for (int i = 0; i < s->n; i++) /* gone, or loaded again elsewhere */
		if (s->k[i].placed) {
			int live = 0;
			for (int j = 0; j < mods->n; j++)
				live |= mods->m[j].addr == s->k[i].modaddr && !strcmp(mods->m[j].name, s->k[i].name);
			if (!live) ko_unplace(&s->k[i]);
		}
	for (int j = 0; j < mods->n; j++) {
		const struct module *m = &mods->m[j];
		if (!m->addr) continue;
		struct kofile *k = ko_file_for(s, m->name);
		if (!k || k->placed || k->refused) continue;
		int rc = place(s, k, m, names);
		if (rc < 0) {
			ERR_SET(s, ERR_SYS, "%s: libdwfl could not take it: %s", file_base(k->path), dwfl_errmsg(-1));
			return -1;
		}
		if (rc == 1 && !k->from_dir) return -1;
		if (rc == 1) s->skipped++;
	}
	uint64_t missing = 0;
	for (int i = 0; i < s->n; i++) {
		int live = 0;
		for (int j = 0; j < mods->n; j++) live |= mods->m[j].addr && !strcmp(mods->m[j].name, s->k[i].name);
		missing += !live && !s->k[i].from_dir;
	}
	s->not_loaded = missing;
	return 0;
}

struct kofile *ko_find(struct koset *s, uint64_t pc)
{
	for (int i = 0; i < s->n; i++)
		if (s->k[i].placed && pc >= s->k[i].lo && pc < s->k[i].hi) return &s->k[i];
	return NULL;
}

struct cfi_ctx *ko_cfi(void *arg, uint64_t pc)
{
	struct koset *s = arg;
	struct kofile *k = ko_find(s, pc);
	if (!k || !k->has_cfi) return NULL;
	k->steps++;
	s->steps++;
	return &k->cfi;
}

int ko_srcline(struct koset *s, uint64_t pc, char *out, size_t cap)
{
	struct kofile *k = ko_find(s, pc);
	Dwfl_Line *l = k ? dwfl_module_getsrc(k->dm, pc) : NULL;
	int line = 0;
	const char *f = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	if (!f || line <= 0) return -1;
	size_t o = (size_t)snprintf(out, cap, "%s:%d", file_base(f), line);
	k->lines++;
	/* Inlined code: the functions the line is inlined from, innermost first, each with the line
	 * of its call site (DW_TAG_inlined_subroutine's DW_AT_call_file/call_line, libdw's scopes). */
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(k->dm, pc, &bias), *scopes = NULL, *chain = NULL;
	int n = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0, first = -1;
	for (int i = 0; i < n && first < 0; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine) first = i;
	/* dwarf_getscopes continues past an inlined instance with its abstract definition's scopes;
	 * the concrete callers are that instance's own parents (dwarf_getscopes_die) */
	n = first >= 0 ? dwarf_getscopes_die(&scopes[first], &chain) : 0;
	free(scopes);
	scopes = chain;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = NULL;
	for (int i = 0; i < n && o < cap; i++) {
		Dwarf_Attribute a;
		Dwarf_Word cl = 0, cf = 0;
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
		const char *nm = dwarf_diename(&scopes[i]);
		if (!nm) { /* the abstract instance's name */
			Dwarf_Die org;
			if (dwarf_attr(&scopes[i], DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &org))
				nm = dwarf_diename(&org);
		}
		dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl);
		dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &cf);
		const char *cfn = files && cf < nfiles ? dwarf_filesrc(files, cf, NULL, NULL) : NULL;
		o += (size_t)snprintf(out + o, cap - o, ", inlined %s from %s:%llu", nm ? nm : "?", cfn ? file_base(cfn) : "?",
				      (unsigned long long)cl);
	}
	free(scopes);
	return 0;
}
