/* SPDX-License-Identifier: MIT */
/* kofile.c: kernel module files (-e NAME.ko, or a directory of them) -- read, checked to be a
 * module for the guest's kernel, found for each loaded module; koplace.c places them. */
#include "kofile.h"
#include "elfsec.h"
#include "bytes.h"
#include "err.h"
#include "files.h"
#include <dirent.h>
#include <gelf.h>
#include <stdlib.h>
#include <sys/stat.h>

/*
 * A file is checked before it is used: an ELF of type ET_REL whose section headers and sections
 * lie inside the file, with a symbol table, and a .modinfo giving the module's name and its
 * vermagic -- whose first word must be the guest's release (read from its linux_banner by
 * kolocate.c). A file named with -e that fails is an error; in a directory (searched for NAME.ko
 * of each module the guest loads), one that is no module is passed over, and one built for
 * another release is kept refused and counted as skipped.
 */

/* ---- pure parts ---- */

int ko_modinfo(const uint8_t *p, size_t len, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < len;) {
		const uint8_t *z = memchr(p + i, 0, len - i);
		size_t n = z ? (size_t)(z - (p + i)) : len - i;
		if (n > kl && p[i + kl] == '=' && !memcmp(p + i, key, kl)) {
			size_t v = n - kl - 1;
			if (v >= cap) v = cap - 1;
			memcpy(out, p + i + kl + 1, v);
			out[v] = 0;
			return 0;
		}
		i += n + 1;
	}
	return -1;
}

static int word(const char *s, size_t len, char *out, size_t cap)
{
	size_t i = 0, n = 0;
	while (i < len && s[i] == ' ') i++;
	while (i + n < len && s[i + n] && s[i + n] != ' ' && s[i + n] != '\n') n++;
	if (!n || n >= cap) return -1;
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)s[i + k] <= 0x20 || (unsigned char)s[i + k] >= 0x7f) return -1;
	memcpy(out, s + i, n);
	out[n] = 0;
	return 0;
}

int ko_vermagic_release(const char *vermagic, char *out, size_t cap)
{
	return word(vermagic, strlen(vermagic), out, cap);
}

int ko_banner_release(const char *banner, size_t len, char *out, size_t cap)
{
	static const char pre[] = "Linux version ";
	if (len < sizeof pre || memcmp(banner, pre, sizeof pre - 1)) return -1;
	return word(banner + sizeof pre - 1, len - (sizeof pre - 1), out, cap);
}

/* ---- files ---- */

/* Why buf is not a usable kernel module, or NULL; name and vermagic filled in. */
static const char *ko_check(const uint8_t *buf, size_t len, char *name, size_t ncap, char *vm, size_t vcap)
{
	Elf *e = NULL;
	GElf_Ehdr eh;
	size_t nsec = 0;
	const char *why = NULL;
	if (len >= 64 && !memcmp(buf, ELFMAG, SELFMAG) && buf[EI_CLASS] == ELFCLASS64 && buf[EI_DATA] == ELFDATA2LSB) {
		uint64_t shoff = le64(buf + 0x28); /* Elf64_Ehdr e_shoff (0x28), e_shentsize (0x3a), e_shnum (0x3c) */
		uint64_t shsz = (uint64_t)le16(buf + 0x3a) * le16(buf + 0x3c);
		if (shoff > len || shsz > len - shoff) {
			why = "truncated (its section headers lie past the end of the file)";
			goto out;
		}
	}
	e = elf_memory((char *)buf, len);
	if (!e || !gelf_getehdr(e, &eh) || elf_getshdrnum(e, &nsec) || !nsec) {
		why = "not an ELF file, or its headers are cut short";
		goto out;
	}
	if (eh.e_type != ET_REL) {
		why = "not a relocatable object (ET_REL), as a kernel module is";
		goto out;
	}
	if (eh.e_shoff > len || nsec > (len - eh.e_shoff) / (eh.e_shentsize ? eh.e_shentsize : 1)) {
		why = "truncated (its section headers lie past the end of the file)";
		goto out;
	}
	Elf_Scn *s = NULL;
	int has_symtab = 0;
	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh)) {
			why = "a section header does not read";
			goto out;
		}
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset)) {
			why = "truncated (a section's bytes lie past the end of the file)";
			goto out;
		}
		has_symtab |= sh.sh_type == SHT_SYMTAB;
	}
	GElf_Shdr sh;
	Elf_Scn *mi = elfsec_find(e, ".modinfo", &sh);
	Elf_Data *d = mi ? elf_getdata(mi, NULL) : NULL;
	if (!d || !d->d_buf || ko_modinfo(d->d_buf, d->d_size, "vermagic", vm, vcap) < 0) {
		why = "no .modinfo with a vermagic (not a kernel module)";
		goto out;
	}
	if (ko_modinfo(d->d_buf, d->d_size, "name", name, ncap) < 0 || !name[0]) {
		why = "no name= in its .modinfo (built before Linux 5.3?)";
		goto out;
	}
	for (char *c = name; *c; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f || *c == '/') {
			why = "its .modinfo name is not a module name";
			goto out;
		}
	if (!has_symtab) why = "no symbol table (stripped): nothing to place it by";
out:
	if (e) elf_end(e);
	return why;
}

int ko_add_file(struct koset *s, const char *path, uint8_t *buf, size_t len)
{
	char name[MODS_NAME + 1] = "", vm[128] = "";
	const char *why = ko_check(buf, len, name, sizeof name, vm, sizeof vm);
	if (why) {
		free(buf);
		ERR_SET(s, ERR_FORMAT, "-e %s: %s", file_base(path), why);
		return -1;
	}
	for (int i = 0; i < s->n; i++)
		if (!s->k[i].from_dir && !strcmp(s->k[i].name, name)) {
			free(buf);
			ERR_SET(s, ERR_USAGE, "-e %s: a second file for module %s (give one)", file_base(path), name);
			return -1;
		}
	struct kofile *nk = realloc(s->k, (size_t)(s->n + 1) * sizeof *nk);
	if (!nk) {
		free(buf);
		ERR_SET(s, ERR_SYS, "out of memory");
		return -1;
	}
	s->k = nk;
	struct kofile *k = &s->k[s->n++];
	memset(k, 0, sizeof *k);
	snprintf(k->path, sizeof k->path, "%s", path);
	snprintf(k->name, sizeof k->name, "%s", name);
	snprintf(k->vermagic, sizeof k->vermagic, "%s", vm);
	k->buf = buf;
	k->len = len;
	return 0;
}

int ko_add_dir(struct koset *s, const char *path)
{
	if (s->ndirs == KO_MAX_FILES) {
		ERR_SET(s, ERR_USAGE, "-e %s: too many directories", file_base(path));
		return -1;
	}
	if (!(s->dirs[s->ndirs] = strdup(path))) {
		ERR_SET(s, ERR_SYS, "out of memory");
		return -1;
	}
	s->ndirs++;
	return 0;
}

static int release_of(const struct kofile *k, char *rel, size_t cap)
{
	return ko_vermagic_release(k->vermagic, rel, cap);
}

int ko_check_release(struct koset *s)
{
	if (!s->release[0]) return 0;
	for (int i = 0; i < s->n; i++) {
		char rel[KO_RELEASE] = "";
		struct kofile *k = &s->k[i];
		if (k->from_dir || (release_of(k, rel, sizeof rel) == 0 && !strcmp(rel, s->release))) continue;
		ERR_SET(s, ERR_MISMATCH, "-e %s: built for Linux %s (vermagic '%.60s'), but the guest runs %s",
			file_base(k->path), rel[0] ? rel : "(unknown)", k->vermagic, s->release);
		return -1;
	}
	return 0;
}

/* Module file names use '-' and '_' alike (kbuild turns '-' into '_' in the module's name). */
static int same_modname(const char *file, size_t n, const char *mod)
{
	if (strlen(mod) != n) return 0;
	for (size_t i = 0; i < n; i++) {
		char a = file[i] == '-' ? '_' : file[i], b = mod[i] == '-' ? '_' : mod[i];
		if (a != b) return 0;
	}
	return 1;
}

/* dir searched (depth first, names sorted: deterministic) for NAME.ko; 0 found (path), -1 not. */
static int find_in(const char *dir, const char *mod, int depth, char *path, size_t cap)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort), found = -1;
	if (n < 0) return -1;
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		size_t l = strlen(nm);
		char p[1024];
		struct stat st;
		if (found == 0 || nm[0] == '.') continue;
		snprintf(p, sizeof p, "%s/%s", dir, nm);
		if (stat(p, &st) < 0) continue;
		if (S_ISREG(st.st_mode) && l > 3 && !strcmp(nm + l - 3, ".ko") && same_modname(nm, l - 3, mod)) {
			snprintf(path, cap, "%s", p);
			found = 0;
		} else if (S_ISDIR(st.st_mode) && depth > 0 && strcmp(nm, "source") && strcmp(nm, "build")) {
			found = find_in(p, mod, depth - 1, path, cap); /* build/source: the headers' trees */
		}
	}
	for (int i = 0; i < n; i++) free(ents[i]);
	free(ents);
	return found;
}

static struct kofile *file_for(struct koset *s, const char *mod)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->k[i].name, mod)) return &s->k[i];
	return NULL;
}

/* A module seen for the first time: its NAME.ko from the directories, if one is there. */
static struct kofile *from_dirs(struct koset *s, const char *mod)
{
	char path[1024];
	for (int d = 0; d < s->ndirs; d++) {
		if (find_in(s->dirs[d], mod, KO_DIR_DEPTH, path, sizeof path) < 0) continue;
		uint8_t *buf;
		size_t len;
		char why[160];
		if (file_read(path, FILE_MAX_IMAGE, &buf, &len, why, sizeof why) < 0) return NULL;
		int n = s->n;
		int err = s->err;
		if (ko_add_file(s, path, buf, len) < 0) { /* a bad file in a tree: skipped */
			if (!err) s->err = 0;
			return NULL;
		}
		struct kofile *k = &s->k[n];
		k->from_dir = 1;
		char rel[KO_RELEASE] = "";
		if (s->release[0] && (release_of(k, rel, sizeof rel) < 0 || strcmp(rel, s->release))) {
			k->refused = 1;
			s->skipped++;
		}
		return k;
	}
	return NULL;
}

struct kofile *ko_file_for(struct koset *s, const char *mod)
{
	struct kofile *k = file_for(s, mod);
	return k || !s->ndirs ? k : from_dirs(s, mod);
}

void ko_line(const struct koset *s, char *out, size_t cap)
{
	size_t o = 0;
	int placed = 0, given = 0;
	uint64_t lines = 0;
	out[0] = 0;
	if (!s->n && !s->ndirs) return;
	for (int i = 0; i < s->n; i++) {
		placed += s->k[i].placed;
		given += !s->k[i].from_dir;
		lines += s->k[i].lines;
	}
	o += (size_t)snprintf(out + o, cap - o, "gdbsample: .ko files: %d given, %d found in %d director%s, %d placed (",
			      given, s->n - given, s->ndirs, s->ndirs == 1 ? "y" : "ies", placed);
	for (int i = 0, first = 1; i < s->n && o < cap; i++)
		if (s->k[i].placed) {
			o += (size_t)snprintf(out + o, cap - o, "%s%s: %d section%s from %u functions", first ? "" : "; ",
					      s->k[i].name, s->k[i].nbases, s->k[i].nbases == 1 ? "" : "s",
					      s->k[i].match.matched);
			first = 0;
		}
	if (o < cap)
		snprintf(out + o, cap - o, "), for modules not loaded %llu, skipped in directories %llu; CFI "
			 "lookups %llu, source lines %llu\n", (unsigned long long)s->not_loaded,
			 (unsigned long long)s->skipped, (unsigned long long)s->steps, (unsigned long long)lines);
}

void ko_free(struct koset *s)
{
	for (int i = 0; i < s->n; i++) {
		ko_unplace(&s->k[i]);
		free(s->k[i].buf);
	}
	for (int i = 0; i < s->ndirs; i++) free(s->dirs[i]);
	free(s->k);
	memset(s, 0, sizeof *s);
}
