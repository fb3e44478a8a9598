/* SPDX-License-Identifier: MIT */
/* kolocate.c: the session's side of .ko files -- the guest's release checked against them, each
 * loaded module's file placed after every walk of the modules list, CFI asked through them. */
#include "err.h"
#include "session.h"

/*
 * The guest's kernel release is read from its linux_banner ("Linux version 6.1.0-57-amd64 (...")
 * at the address the names give (a map of this boot, or the guest's own kallsyms), once, and each
 * file given must have been built for it (.modinfo vermagic's first word). Without a banner the
 * check cannot be made: said once, and the files are still placed (their functions must match
 * the loaded ones' sizes, kofile.c).
 */
static void guest_release(struct session *ss, int cpu)
{
	struct image *im = &ss->img;
	const struct symtab *t = &im->syms;
	uint8_t b[160];
	(void)cpu; /* the slicer's */
	if ((t->marks >> MARK_BANNER) & 1 && slice_read(&ss->sl, t->mark[MARK_BANNER], b, sizeof b) == 0)
		ko_banner_release((const char *)b, sizeof b, im->kos.release, sizeof im->kos.release);
	if (!im->kos.release[0])
		session_warn(ss, ".ko files: the guest's linux_banner was not read: their vermagic is not checked");
}

int ko_locate(struct session *ss, int cpu, int first)
{
	struct image *im = &ss->img;
	struct koset *ks = &im->kos;
	if (!ks->n && !ks->ndirs) return 0;
	if (first) {
		guest_release(ss, cpu);
		if (ko_check_release(ks) < 0) {
			ERR_SET(ss, ks->err, "%s", ks->errstr);
			return -1;
		}
		if (!ss->mods.head) {
			session_warn(ss, ".ko files not used: the guest's modules were not read");
			return 0;
		}
		im->cfi.more = ko_cfi; /* modules' CFI first; the image's own (if any) for the rest */
		im->cfi.more_arg = ks;
		im->has_cfi = 1;
	}
	if (!ss->mods.head) return 0;
	if (ko_place(ks, &ss->mods, &im->syms) < 0) {
		if (first) {
			ERR_SET(ss, ks->err, "%s", ks->errstr);
			return -1;
		}
		session_warn(ss, "%s; not used", ks->errstr); /* a module loaded during the run */
		ks->err = 0;
	}
	if (first && ks->not_loaded)
		session_warn(ss, "%llu .ko file%s for module%s the guest has not loaded (used if %s loaded during "
			     "the run)", (unsigned long long)ks->not_loaded, ks->not_loaded == 1 ? "" : "s",
			     ks->not_loaded == 1 ? "" : "s", ks->not_loaded == 1 ? "it is" : "they are");
	return 0;
}
