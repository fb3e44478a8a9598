/* SPDX-License-Identifier: MIT */
/* session_summary.c: the session's rows of the end-of-run summary -- the modules read, how the VM
 * was reached, a VM held by someone else, the image and unwinders -- the report's header line and
 * the capture's module list. */
#include "session.h"
#include "err.h"
#include <stdlib.h>
#include <string.h>

/* The modules read and their costs: one line for people, and their keys. */
static void modules_rows(const struct session *ss, struct summary *t)
{
	const struct modset *m = &ss->mods;
	static const char *const keys[] = { "modules", "modules_layout", "modules_loaded_during_run", "modules_unloaded",
					    "modules_list_changed", "modules_unreadable", "modules_stop_max_us", "modules_symbols",
					    "modules_orc_entries", "modules_walks", "modules_pcs_unknown", "modules_read_bytes",
					    "modules_read_stops" };
	if (!m->head) { /* not read: absent */
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) summary_null(t, keys[i]);
		return;
	}
	int live = 0;
	uint64_t syms = 0, orcs = 0;
	for (int i = 0; i < m->n; i++)
		if (m->m[i].addr) {
			live++;
			syms += m->m[i].nsyms;
			orcs += m->m[i].has_orc ? m->m[i].orc.n : 0;
		}
	summary_i64(t, "modules", "gdbsample: modules: %v loaded", live);
	summary_u64(t, "modules_symbols", " (%v symbols", syms);
	summary_u64(t, "modules_orc_entries", ", %v ORC entries", orcs);
	summary_str(t, "modules_layout", "; %v)", m->l.what);
	summary_u64(t, "modules_walks", ", walks %v", m->st.walks);
	summary_u64(t, "modules_loaded_during_run", ", loaded during the run %v", m->st.loaded);
	summary_u64(t, "modules_unloaded", ", unloaded %v", m->st.unloaded);
	summary_u64(t, "modules_list_changed", ", list changed while read %v", m->st.changed);
	summary_u64(t, "modules_unreadable", ", unreadable %v", m->st.bad);
	summary_u64(t, "modules_pcs_unknown", ", pcs in no module %v", m->st.unknown_pcs);
	summary_u64(t, "modules_read_bytes", "; %v bytes read", m->st.bytes);
	summary_u64(t, "modules_read_stops", " in %v stops", ss->mods_sl.stops);
	summary_i64(t, NULL, ", longest %v ms\n", ss->mods_sl.longest_ns);
	summary_scale(t, 1e6, 1);
	summary_i64(t, "modules_stop_max_us", NULL, ss->mods_sl.longest_ns / 1000);
}

/* Every stop that read tables -- the attach's, the slices, the module walks, a bare -p's search
 * (keys only; absent when nothing was read). */
static void read_stop_rows(const struct session *ss, struct summary *t)
{
	const struct kfind_stats *k = &ss->kf;
	if (!ss->slst.stops && !k->stops) {
		summary_null(t, "read_stops");
		summary_null(t, "attach_stop_us");
		summary_null(t, "longest_stop_us");
		summary_null(t, "longest_stop_bytes");
		return;
	}
	int64_t l = ss->slst.longest_ns;
	uint64_t b = ss->slst.most_bytes > k->most_bytes ? ss->slst.most_bytes : k->most_bytes;
	if (k->first_ns > l) l = k->first_ns;
	if (k->longest_ns > l) l = k->longest_ns;
	int64_t a = k->stops ? k->first_ns : ss->slst.first_ns;
	summary_u64(t, "read_stops", NULL, ss->slst.stops + k->stops);
	summary_i64(t, "attach_stop_us", NULL, a / 1000);
	summary_i64(t, "longest_stop_us", NULL, l / 1000);
	summary_u64(t, "longest_stop_bytes", NULL, b);
}

/* The kernel image, its unwinders, KASLR offsets and task layout (keys only). */
static void image_rows(const struct session *ss, struct summary *t)
{
	char buf[512];
	static const char *const keys[] = { "image", "unwind", "orc", "kaslr_offset", "kaslr_how", "kaslr_names_offset",
					    "kaslr_names_how", "task_os", "task_layout", "task_off" };
	if (!ss->img.syms.n) { /* no kernel image: absent */
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) summary_null(t, keys[i]);
		return;
	}
	summary_str(t, "image", NULL, ss->img.what);
	size_t o = 0;
	buf[0] = 0;
	for (int k = 0; k < ss->nmethods && o < sizeof buf; k++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", k ? "," : "", unwind_method_names[ss->methods[k]]);
	summary_str(t, "unwind", NULL, buf);
	if (ss->img.has_orc) {
		snprintf(buf, sizeof buf, "%s, %zu entries%s", orc_layout_names[ss->img.orc.layout], ss->img.orc.n,
			 ss->orc_from_guest ? ", read from guest memory" : "");
		summary_str(t, "orc", NULL, buf);
	} else {
		summary_null(t, "orc");
	}
	int64_t k = ss->kaslr.slide, nk = ss->kaslr.names_slide;
	snprintf(buf, sizeof buf, "%s0x%llx", k < 0 ? "-" : "", (unsigned long long)(k < 0 ? -k : k));
	summary_str(t, "kaslr_offset", NULL, buf);
	summary_str(t, "kaslr_how", NULL, kaslr_how_names[ss->kaslr.how]);
	int same = nk == k && ss->kaslr.names_how == ss->kaslr.how; /* key value lines say it once */
	snprintf(buf, sizeof buf, "%s0x%llx", nk < 0 ? "-" : "", (unsigned long long)(nk < 0 ? -nk : nk));
	summary_str(t, "kaslr_names_offset", NULL, buf);
	if (same) summary_json_only(t);
	summary_str(t, "kaslr_names_how", NULL, kaslr_how_names[ss->kaslr.names_how]);
	if (same) summary_json_only(t);
	summary_str(t, "task_os", NULL, guestos_names[ss->img.os.os]);
	if (ss->img.os.os != OS_NONE) {
		summary_str(t, "task_layout", NULL, ss->img.os.what);
		summary_null(t, "task_off");
	} else {
		summary_null(t, "task_layout");
		summary_str(t, "task_off", NULL, ss->img.os.why);
	}
}

/* What demangling did to the kernel's (and its modules') names; people hear of refusals only. */
static void names_rows(const struct session *ss, struct summary *t)
{
	if (!ss->img.syms.n) {
		summary_null(t, "names_demangled");
		summary_null(t, "names_undemangled");
		return;
	}
	summary_u64(t, "names_demangled", NULL, ss->img.syms.demangled);
	summary_u64(t, "names_undemangled",
		    "gdbsample: symbol names that look mangled (_Z..., _R...) but libiberty rejects: %v, shown as they are\n",
		    ss->img.syms.undemangled);
	if (!ss->img.syms.undemangled) summary_hide(t);
}

void session_summary(const struct session *ss, struct summary *t)
{
	static char ko[8192];
	modules_rows(ss, t);
	ko_line(&ss->img.kos, ko, sizeof ko);  /* .ko files placed, what they gave: people only */
	if (ko[0]) summary_text(t, ko);
	attach_summary(&ss->at, ss->g.conn.where, t);
	summary_u64(t, "held_by_other", NULL, ss->held_episodes);
	summary_u64(t, "held_rounds", NULL, ss->held_rounds);
	summary_u64(t, "migration_rounds", NULL, ss->migration_rounds);
	summary_i64(t, "vcpus_hotplugged", NULL, ss->hotplugged);
	image_rows(ss, t);
	read_stop_rows(ss, t);
	names_rows(ss, t);
	if (ss->o && ss->o->cmd == CMD_REPLAY) session_replay_summary(ss, t);
}

void session_replay_summary(const struct session *ss, struct summary *t)
{
	const struct replay *rp = &ss->rp;
	summary_u64(t, "replay_samples", "gdbsample: replay: %v stops", rp->steps);
	summary_u64(t, "replay_every", ", one every %v instructions", ss->o->every);
	summary_u64(t, "replay_first_icount", ", from instruction %v", rp->first);
	summary_u64(t, "replay_last_icount", " to %v", rp->last);
	summary_u64(t, "replay_attach_icount", " (attached at %v)", rp->attach_icount);
	summary_str(t, "replay_end", "; ended: %v", replay_end_names[rp->ended]);
	summary_u64(t, "replay_off_target", ", %v stops not at the count asked for\n", rp->off_target);
	summary_str(t, "time_unit", NULL, "instructions");
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

/* The capture's module list (docs/capture-format.md, v4): "m NAME LO HI [LO HI]" per module,
 * then "s ADDR SIZE NAME" per symbol of its text. */
char *session_modules_text(const struct session *ss)
{
	const struct modset *m = &ss->mods;
	const struct symtab *t = &ss->img.syms;
	size_t cap = 4096, o = 0;
	char *out = m->head && m->n ? malloc(cap) : NULL;
	if (!out) return NULL;
	out[0] = 0;
	for (int i = 0; i < m->n; i++) {
		const struct module *d = &m->m[i];
		for (size_t k = 0; k <= t->n; k++) {
			const struct sym *y = k ? &t->syms[k - 1] : NULL;
			if (y) { /* its symbols, in address order (modules' names hold no blanks) */
				int in = 0;
				for (int r = 0; r < 2; r++) in |= y->addr >= d->text[r][0] && y->addr < d->text[r][1];
				if (!y->mod || !in || strcmp(y->mod, d->name)) continue;
			}
			if (cap - o < 512) {
				char *n = realloc(out, cap * 2);
				if (!n) {
					free(out);
					return NULL;
				}
				out = n;
				cap *= 2;
			}
			if (!y) {
				o += (size_t)snprintf(out + o, cap - o, "m %s %llx %llx", d->name,
						      (unsigned long long)d->text[0][0], (unsigned long long)d->text[0][1]);
				if (d->text[1][1] > d->text[1][0])
					o += (size_t)snprintf(out + o, cap - o, " %llx %llx", (unsigned long long)d->text[1][0],
							      (unsigned long long)d->text[1][1]);
				o += (size_t)snprintf(out + o, cap - o, "\n");
			} else {
				o += (size_t)snprintf(out + o, cap - o, "s %llx %llx %.400s\n", (unsigned long long)y->addr,
						      (unsigned long long)y->size, y->name);
			}
		}
	}
	return out;
}
