/* SPDX-License-Identifier: MIT */
/* symbols.c: kernel symbols (ELF .symtab or nm-style map) as a sorted table, plus ELF text bytes. */
#include "symbols.h"
#include "hash.h"
#include "bytes.h"
#include "demangle.h"
#include "err.h"
#include "files.h"
#include "insn.h"
#include "rsp.h"
#include "textnum.h"
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const symmark_names[MARK_N] = {
	"_stext", "_etext", "__start_orc_unwind_ip", "__stop_orc_unwind_ip", "__start_orc_unwind",
	"__stop_orc_unwind", "__start_orc_header", "__stop_orc_header", "linux_banner", "modules",
	"ret_from_fork_asm", "ret_from_fork", "init_task",
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

/* The length (1-4) of the well-formed UTF-8 sequence at p, its code point in *cp; 0 if the byte at
 * p starts none (a stray continuation, an overlong form, a surrogate, past U+10FFFF, cut short). */
static int utf8_at(const unsigned char *p, uint32_t *cp)
{
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	int n = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (!n) return 0;
	uint32_t c = n == 1 ? p[0] : p[0] & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
	*cp = c;
	return n;
}

/* Whether a code point is written escaped: ';' (it splits a folded frame), control characters but
 * tab, DEL and C1, U+2028/U+2029 (line ends to JavaScript and Unicode), U+FFFE/U+FFFF (XML refuses
 * them) -- gdbsample-analyze's folded.safe_name, character for character. */
static int unsafe_cp(uint32_t c)
{
	return c == ';' || (c < 0x20 && c != '\t') || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029 ||
	       c == 0xfffe || c == 0xffff;
}

/* Write name escaped at o (NULL: only count), as every output writes a frame: the characters above
 * as \xNN (up to U+00FF) or \uNNNN, and each byte that is not UTF-8 as \xNN, so that folded and
 * report text keep one record a line, and gdbsample-analyze reads what any ELF holds. Returns the
 * bytes written, not counting the NUL (written when o is not NULL). */
size_t syms_escape(char *o, const char *name)
{
	size_t len = 0;
	char tmp[8];
	for (const unsigned char *c = (const unsigned char *)name; *c;) {
		uint32_t cp = 0;
		int n = utf8_at(c, &cp);
		int k;
		if (!n) k = snprintf(tmp, sizeof tmp, "\\x%02x", *c), n = 1;
		else if (unsafe_cp(cp)) k = snprintf(tmp, sizeof tmp, cp <= 0xff ? "\\x%02x" : "\\u%04x", cp);
		else k = 0;
		if (o) {
			if (k) memcpy(o + len, tmp, (size_t)k);
			else memcpy(o + len, c, (size_t)n);
		}
		len += k ? (size_t)k : (size_t)n;
		c += n;
	}
	if (o) o[len] = 0;
	return len;
}

static size_t escaped_len(const char *name)
{
	return syms_escape(NULL, name);
}

/* Write name escaped at o (escaped_len(name) + 1 bytes); returns the byte after its NUL. */
static char *escape_into(char *o, const char *name)
{
	return o + syms_escape(o, name) + 1;
}

/* Append a symbol whose name (and module) sit in one allocation the table now owns. */
static int add(struct symtab *t, uint64_t addr, uint64_t size, char *owned, const char *mod)
{
	if ((t->n & (t->n - 1)) == 0) { /* grow at powers of two */
		struct sym *n = realloc(t->syms, (t->n ? t->n * 2 : 64) * sizeof *n);
		if (!n) {
			free(owned);
			ERR_SET(t, ERR_SYS, "out of memory");
			return -1;
		}
		t->syms = n;
	}
	t->syms[t->n++] = (struct sym){ .addr = addr, .size = size, .name = owned, .mod = mod };
	return 0;
}

int syms_add(struct symtab *t, uint64_t addr, uint64_t size, const char *name)
{
	return syms_add_mod(t, addr, size, name, NULL);
}

/* A symbol's name as every output writes it: demangled (unless --no-demangle), then escaped. */
int syms_add_mod(struct symtab *t, uint64_t addr, uint64_t size, const char *name, const char *mod)
{
	int rejected;
	char *readable = demangle(name, &rejected);
	const char *shown = readable ? readable : name;
	t->demangled += readable != NULL;
	t->undemangled += (unsigned)rejected;
	char *buf = malloc(escaped_len(shown) + (mod ? escaped_len(mod) + 1 : 0) + 1);
	if (!buf) {
		free(readable);
		ERR_SET(t, ERR_SYS, "out of memory");
		return -1;
	}
	char *m = escape_into(buf, shown);
	free(readable);
	if (mod) escape_into(m, mod);
	return add(t, addr, size, buf, mod ? m : NULL);
}

void syms_name(const struct sym *s, char *out, size_t cap)
{
	if (s->mod) snprintf(out, cap, "%s [%s]", s->name, s->mod);
	else snprintf(out, cap, "%s", s->name);
}

void syms_name_off(const struct sym *s, uint64_t off, char *out, size_t cap)
{
	if (s->mod) snprintf(out, cap, "%s+0x%llx [%s]", s->name, (unsigned long long)off, s->mod);
	else snprintf(out, cap, "%s+0x%llx", s->name, (unsigned long long)off);
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
	if (s->size) return addr - s->addr < s->size ? s : NULL;
	if (s->limit) return addr < s->limit ? s : NULL;
	if ((t->marks & (1u << MARK_ETEXT)) && s->addr < t->mark[MARK_ETEXT] && addr >= t->mark[MARK_ETEXT])
		return NULL;
	if (!t->is_elf && lo + 1 == t->n && addr - s->addr > 0x100000) return NULL;
	return s;
}

unsigned syms_unnamed(const struct symtab *t, const uint64_t *frames, int n, const uint64_t *exact)
{
	unsigned k = 0;
	for (int i = 0; i < n; i++)
		k += syms_frame(t, frames[i], i > 0 && !unwind_is_exact(exact, i)) == NULL;
	return k;
}

const struct sym *syms_frame(const struct symtab *t, uint64_t addr, int is_return)
{
	return syms_lookup(t, is_return ? addr - 1 : addr);
}

void syms_relocate(struct symtab *t, int64_t names_slide, int64_t text_slide)
{
	uint64_t dn = (uint64_t)(names_slide - t->slide), dt = (uint64_t)(text_slide - t->text_slide);
	for (size_t i = 0; i < t->n; i++) {
		t->syms[i].addr += dn;
		if (t->syms[i].limit) t->syms[i].limit += dn;
	}
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
	if (s) syms_name_off(s, addr - s->addr, out, cap);
	else snprintf(out, cap, "0x%llx", (unsigned long long)addr);
}

/*
 * nm-style maps: one symbol a line, "ADDR TYPE NAME" (System.map, `nm`, /proc/kallsyms, whose
 * module lines add a "[module]" field, ignored) or "ADDR SIZE TYPE NAME" (`nm -S`). Lines end at
 * '\n' (a trailing '\r' is dropped: a map that came through a serial port); nm's undefined symbols
 * ("U NAME", "w NAME", "v NAME": no ADDR) are skipped; fields are separated
 * by runs of ASCII white space (space, \t, \v, \f, \r); blank lines are skipped. ADDR and SIZE
 * are hex digits only (no 0x, no sign) and fit 64 bits, TYPE is one byte, NAME any length. Any
 * other line -- "ffffffff8O1000 T f", a NUL byte -- refuses the whole map with its line number:
 * a number read up to its first bad digit would name samples after the wrong function. Only text
 * symbols (type t/T/w/W) are kept; gdbsample-analyze's symbols.parse_map reads the same grammar.
 */
struct field {
	const char *s; /* first byte */
	size_t n;      /* bytes */
};

static int map_space(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

/* Up to 4 fields of the line [p, end) into f; the number of fields (4 means 4 or more). */
static int map_fields(const char *p, const char *end, struct field f[4])
{
	int nf = 0;
	while (nf < 4) {
		while (p < end && map_space(*p)) p++;
		if (p == end) break;
		const char *s = p;
		while (p < end && !map_space(*p)) p++;
		f[nf++] = (struct field){ s, (size_t)(p - s) };
	}
	return nf;
}

/* The first 40 bytes of a field for a message, control bytes and non-ASCII shown as '?'. */
static void map_quote(const struct field *f, char out[41])
{
	size_t n = f->n < 40 ? f->n : 40;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)f->s[i];
		out[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c; /* never echo control bytes to a terminal */
	}
	out[n] = 0;
}

int syms_parse_map(struct symtab *t, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t good = 0, line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) nl = end;
		const char *le = nl;
		line++;
		while (le > p && le[-1] == '\r') le--;
		struct field f[4], whole = { p, (size_t)(le - p) };
		int nf = map_fields(p, le, f);
		char q[41];
		p = nl + 1;
		if (!nf) continue;
		uint64_t addr, size = 0;
		const struct field *type, *name;
		if (memchr(whole.s, 0, whole.n)) {
			ERR_SET(t, ERR_FORMAT, "line %zu: a NUL byte (not an nm-style symbol map)", line);
			return -1;
		}
		if (nf == 2 && f[0].n == 1 && strchr("Uwv", f[0].s[0])) continue; /* nm's undefined: no ADDR */
		if (nf == 4 && f[2].n == 1 && !textnum_hex(f[1].s, f[1].n, UINT64_MAX, &size)) {
			type = &f[2];
			name = &f[3];
		} else if (nf >= 3 && f[1].n == 1) {
			type = &f[1];
			name = &f[2];
			size = 0;
		} else {
			map_quote(&whole, q);
			ERR_SET(t, ERR_FORMAT, "line %zu: not an ELF or nm-style symbol map (expected ADDR [SIZE] TYPE NAME, got '%s')",
				line, q);
			return -1;
		}
		if (textnum_hex(f[0].s, f[0].n, UINT64_MAX, &addr)) {
			map_quote(&f[0], q);
			ERR_SET(t, ERR_FORMAT, "line %zu: address '%s' is not a 64-bit hex number", line, q);
			return -1;
		}
		char *nm = strndup(name->s, name->n);
		if (!nm) {
			ERR_SET(t, ERR_SYS, "out of memory");
			return -1;
		}
		good++;
		mark(t, nm, addr);
		int rc = type->s[0] && strchr("tTwW", type->s[0]) ? syms_add(t, addr, size, nm) : 0;
		free(nm);
		if (rc < 0) return -1;
	}
	if (!good) {
		ERR_SET(t, ERR_FORMAT, "empty symbol map");
		return -1;
	}
	syms_finish(t);
	return 0;
}

int syms_add_text(struct symtab *t, uint64_t addr, const uint8_t *data, size_t len)
{
	struct textsec *ns = realloc(t->secs, (size_t)(t->nsecs + 1) * sizeof *ns);
	if (!ns) return -1;
	t->secs = ns;
	ns[t->nsecs].addr = addr;
	ns[t->nsecs].len = len;
	ns[t->nsecs].data = malloc(len ? len : 1);
	if (!ns[t->nsecs].data) return -1;
	memcpy(ns[t->nsecs].data, data, len);
	t->nsecs++;
	return 0;
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
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) && (sh.sh_flags & SHF_ALLOC) &&
		    (d = elf_getdata(scn, NULL)) && d->d_size) {
			if (syms_add_text(t, sh.sh_addr, d->d_buf, d->d_size) < 0) break;
		}
		/* the GNU build-id note: in .note.gnu.build-id, or among a kernel's other notes in
		 * .notes (vmlinux: Xen's, then GNU's); libelf walks the notes */
		if (sh.sh_type == SHT_NOTE && t->idkind == SYMID_NONE && (d = elf_getdata(scn, NULL))) {
			GElf_Nhdr nh;
			size_t off = 0, next, name_at, desc_at;
			while ((next = gelf_getnote(d, off, &nh, &name_at, &desc_at)) > 0) {
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
				    !memcmp((const char *)d->d_buf + name_at, "GNU", 4)) {
					t->idkind = SYMID_BUILD_ID;
					t->idlen = nh.n_descsz > sizeof t->id ? (int)sizeof t->id : (int)nh.n_descsz;
					memcpy(t->id, (const uint8_t *)d->d_buf + desc_at, (size_t)t->idlen);
					break;
				}
				off = next;
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
				/* its section's end: a label at or past it (_etext) names no instruction */
				t->syms[t->n - 1].limit = ts.sh_addr + ts.sh_size;
			}
		}
	}
	elf_end(e);
	if (t->idkind == SYMID_NONE) {
		uint64_t h = hash_bytes(file, flen);
		t->idkind = SYMID_FNV64;
		t->idlen = 8;
		put_le64(t->id, h);
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
