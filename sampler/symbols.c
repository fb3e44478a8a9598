/* symbols.c: kernel symbols (ELF .symtab or nm-style map) as a sorted table, plus ELF text bytes. */
#include "symbols.h"
#include "err.h"
#include "files.h"
#include "insn.h"
#include "rsp.h"
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const symmark_names[MARK_N] = {
	"_stext", "_etext", "__start_orc_unwind_ip", "__stop_orc_unwind_ip", "__start_orc_unwind",
	"__stop_orc_unwind", "__start_orc_header", "__stop_orc_header", "linux_banner",
};

/* Remember addr if name is one of the marks. */
static void mark(struct symtab *t, const char *name, uint64_t addr)
{
	for (int m = 0; m < MARK_N; m++)
		if (!strcmp(name, symmark_names[m]) && !((t->marks >> m) & 1)) {
			t->mark[m] = addr;
			t->marks |= 1u << m;
		}
}

void syms_mark(struct symtab *t, const char *name, uint64_t addr)
{
	mark(t, name, addr);
}

int syms_add(struct symtab *t, uint64_t addr, uint64_t size, const char *name)
{
	if ((t->n & (t->n - 1)) == 0) { /* grow at powers of two */
		struct sym *n = realloc(t->syms, (t->n ? t->n * 2 : 64) * sizeof *n);
		if (!n) {
			ERR_SET(t, ERR_SYS, "out of memory");
			return -1;
		}
		t->syms = n;
	}
	char *dup = strdup(name);
	if (!dup) {
		ERR_SET(t, ERR_SYS, "out of memory");
		return -1;
	}
	t->syms[t->n++] = (struct sym){ addr, size, dup };
	return 0;
}

static int symcmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0)) return x->size == 0 ? 1 : -1; /* sized first */
	return strcmp(x->name, y->name);
}

void syms_finish(struct symtab *t)
{
	size_t o = 0;
	if (!t->n) return;
	qsort(t->syms, t->n, sizeof *t->syms, symcmp);
	for (size_t i = 0; i < t->n; i++) { /* keep one symbol per address: aliases print alike */
		if (o && t->syms[o - 1].addr == t->syms[i].addr) {
			free((char *)t->syms[i].name);
			continue;
		}
		t->syms[o++] = t->syms[i];
	}
	t->n = o;
}

const struct sym *syms_lookup(const struct symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	if (!t->n || addr < t->syms[0].addr) return NULL;
	while (hi - lo > 1) { /* last symbol with .addr <= addr */
		size_t mid = (lo + hi) / 2;
		if (t->syms[mid].addr <= addr) lo = mid;
		else hi = mid;
	}
	const struct sym *s = &t->syms[lo];
	if (s->size && addr - s->addr >= s->size) return NULL;
	if (!s->size && !t->is_elf && lo + 1 == t->n && addr - s->addr > 0x100000) return NULL;
	return s;
}

const struct sym *syms_frame(const struct symtab *t, uint64_t addr, int is_return)
{
	return syms_lookup(t, is_return ? addr - 1 : addr);
}

void syms_relocate(struct symtab *t, int64_t names_slide, int64_t text_slide)
{
	uint64_t dn = (uint64_t)(names_slide - t->slide), dt = (uint64_t)(text_slide - t->text_slide);
	for (size_t i = 0; i < t->n; i++) t->syms[i].addr += dn;
	for (int m = 0; m < MARK_N; m++) t->mark[m] += dn;
	for (int i = 0; i < t->nsecs; i++) t->secs[i].addr += dt;
	t->slide = names_slide;
	t->text_slide = text_slide;
}

int syms_byte(const struct symtab *t, uint64_t addr)
{
	for (int i = 0; i < t->nsecs; i++)
		if (addr >= t->secs[i].addr && addr - t->secs[i].addr < t->secs[i].len)
			return t->secs[i].data[addr - t->secs[i].addr];
	return -1;
}

static int text_byte(const void *t, uint64_t addr)
{
	return syms_byte(t, addr);
}

enum unwind_pc syms_pc_kind(const struct symtab *t, uint64_t pc, int *adj)
{
	const struct sym *s = syms_lookup(t, pc);
	return insn_pc_kind(t->machine, text_byte, t, s ? s->addr : 0, s != NULL, pc, adj);
}

int syms_idle(const struct symtab *t, uint64_t pc)
{
	return insn_idle(t->machine, text_byte, t, pc, NULL);
}

void syms_format(const struct symtab *t, uint64_t addr, char *out, size_t cap)
{
	const struct sym *s = syms_lookup(t, addr);
	if (s) snprintf(out, cap, "%s+0x%llx", s->name, (unsigned long long)(addr - s->addr));
	else snprintf(out, cap, "0x%llx", (unsigned long long)addr);
}

/*
 * nm-style maps: one symbol a line, "ADDR TYPE NAME" (System.map, `nm`) or "ADDR SIZE TYPE NAME"
 * (`nm -S`), ADDR and SIZE in hex. Only text symbols (type t/T/w/W) are kept.
 */
int syms_parse_map(struct symtab *t, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t good = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) nl = end;
		char line[512], name[256], f2[64], f3[64];
		size_t l = (size_t)(nl - p) < sizeof line - 1 ? (size_t)(nl - p) : sizeof line - 1;
		memcpy(line, p, l);
		while (l && line[l - 1] == '\r') l--; /* a map that came through a serial port */
		line[l] = 0;
		p = nl + 1;
		unsigned long long addr, size = 0;
		char type;
		if (sscanf(line, "%llx %63s %63s %255s", &addr, f2, f3, name) == 4 && strlen(f3) == 1) {
			size = strtoull(f2, NULL, 16);
			type = f3[0];
		} else if (sscanf(line, "%llx %63s %255s", &addr, f2, name) == 3 && strlen(f2) == 1) {
			type = f2[0];
		} else {
			if (line[0]) {
				for (char *c = line; *c; c++) /* never echo control bytes to a terminal */
					if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
				ERR_SET(t, ERR_FORMAT, "not an ELF or nm-style symbol map (line: %.40s)", line);
				return -1;
			}
			continue;
		}
		good++;
		mark(t, name, addr);
		if (strchr("tTwW", type) && syms_add(t, addr, size, name) < 0) return -1;
	}
	if (!good) {
		ERR_SET(t, ERR_FORMAT, "empty symbol map");
		return -1;
	}
	syms_finish(t);
	return 0;
}

static uint64_t fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

int syms_add_elf(struct symtab *t, const char *path, const uint8_t *file, size_t flen)
{
	Elf *e = elf_memory((char *)file, flen);
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t shstr;
	if (!e || !gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstr)) {
		ERR_SET(t, ERR_FORMAT, "%s: bad ELF: %s", path, elf_errmsg(-1));
		if (e) elf_end(e);
		return -1;
	}
	t->is_elf = 1;
	t->machine = eh.e_machine;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh)) continue;
		const char *sname = elf_strptr(e, shstr, sh.sh_name);
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) && (sh.sh_flags & SHF_ALLOC) &&
		    (d = elf_getdata(scn, NULL)) && d->d_size) {
			struct textsec *ns = realloc(t->secs, (size_t)(t->nsecs + 1) * sizeof *ns);
			if (!ns) break;
			t->secs = ns;
			ns[t->nsecs].addr = sh.sh_addr;
			ns[t->nsecs].len = d->d_size;
			ns[t->nsecs].data = malloc(d->d_size);
			if (!ns[t->nsecs].data) break;
			memcpy(ns[t->nsecs].data, d->d_buf, d->d_size);
			t->nsecs++;
		}
		if (sh.sh_type == SHT_NOTE && sname && !strcmp(sname, ".note.gnu.build-id") &&
		    (d = elf_getdata(scn, NULL)) && d->d_size > 16) {
			const uint8_t *n = d->d_buf; /* namesz, descsz, type, "GNU\0", desc */
			uint32_t namesz = (uint32_t)rsp_le(n, 4), descsz = (uint32_t)rsp_le(n + 4, 4);
			size_t at = 12 + ((namesz + 3) & ~3u);
			if (descsz && at + descsz <= d->d_size) {
				t->idkind = SYMID_BUILD_ID;
				t->idlen = descsz > sizeof t->id ? (int)sizeof t->id : (int)descsz;
				memcpy(t->id, n + at, (size_t)t->idlen);
			}
		}
		if (sh.sh_type == SHT_SYMTAB && (d = elf_getdata(scn, NULL))) {
			size_t cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t i = 0; i < cnt; i++) {
				GElf_Sym s;
				if (!gelf_getsym(d, (int)i, &s)) continue;
				int ty = GELF_ST_TYPE(s.st_info);
				const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
				if (!nm || !nm[0]) continue;
				if (s.st_shndx != SHN_UNDEF) mark(t, nm, s.st_value);
				if ((ty != STT_FUNC && ty != STT_NOTYPE) || s.st_shndx == SHN_UNDEF ||
				    s.st_shndx >= SHN_LORESERVE)
					continue;
				GElf_Shdr ts;
				Elf_Scn *tscn = elf_getscn(e, s.st_shndx);
				if (!tscn || !gelf_getshdr(tscn, &ts) || !(ts.sh_flags & SHF_EXECINSTR)) continue;
				/* local labels; aarch64's mapping symbols ($x code, $d data: ELF for the Arm
				 * 64-bit Architecture, 5.5.4) */
				if (ty == STT_NOTYPE && (nm[0] == '.' || nm[0] == '$')) continue;
				if (syms_add(t, s.st_value, s.st_size, nm) < 0) break;
			}
		}
	}
	elf_end(e);
	if (t->idkind == SYMID_NONE) {
		uint64_t h = fnv64(file, flen);
		t->idkind = SYMID_FNV64;
		t->idlen = 8;
		for (int i = 0; i < 8; i++) t->id[i] = (uint8_t)(h >> (8 * i));
	}
	syms_finish(t);
	return t->err ? -1 : 0;
}

int syms_load(struct symtab *t, const char *path)
{
	uint8_t *buf;
	size_t len;
	memset(t, 0, sizeof *t);
	if (file_read(path, FILE_MAX_IMAGE, &buf, &len, t->errstr, sizeof t->errstr) < 0) {
		t->err = ERR_SYS;
		return -1;
	}
	int rc;
	elf_version(EV_CURRENT);
	if (len >= 4 && !memcmp(buf, ELFMAG, SELFMAG)) {
		rc = syms_add_elf(t, path, buf, len);
		if (rc == 0 && !t->n) {
			ERR_SET(t, ERR_FORMAT, "%s: no function symbols (stripped?)", path);
			rc = -1;
		}
	} else {
		rc = syms_parse_map(t, (const char *)buf, len);
		if (rc < 0) {
			char why[128];
			snprintf(why, sizeof why, "%s", t->errstr);
			t->err = 0;
			ERR_SET(t, ERR_FORMAT, "%s: %s", path, why);
		}
	}
	free(buf);
	return rc;
}

void syms_free(struct symtab *t)
{
	for (size_t i = 0; i < t->n; i++) free((char *)t->syms[i].name);
	for (int i = 0; i < t->nsecs; i++) free(t->secs[i].data);
	free(t->syms);
	free(t->secs);
	memset(t, 0, sizeof *t);
}
