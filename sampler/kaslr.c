/* SPDX-License-Identifier: MIT */
/* kaslr.c: the running guest's KASLR offset against the image or map given, found by reading
 * guest memory where the image says known bytes are. */
#include "kaslr.h"
#include "err.h"

const char *const kaslr_how_names[] = { "none", "matched kernel text", "matched linux_banner",
					"assumed", "given (--kaslr-offset)" };

static const char banner[] = "Linux version ";

static const struct textsec *largest(const struct symtab *t)
{
	const struct textsec *big = NULL;
	for (int i = 0; i < t->nsecs; i++)
		if (t->secs[i].len >= KASLR_PROBE_LEN && (!big || t->secs[i].len > big->len)) big = &t->secs[i];
	return big;
}

/* Percent of probed text bytes that match at offset s; -1 unreadable, -2 connection failed.
 * Unless `all`, a first probe that is mostly wrong ends it (most candidates are not mapped or
 * plainly different). */
static int score(const struct textsec *big, int64_t s, int all, kaslr_read_fn rd, void *arg)
{
	int match = 0, total = 0, worst = KASLR_PROBE_LEN;
	for (int i = 0; i < KASLR_PROBES; i++) {
		uint64_t off = (uint64_t)(big->len - KASLR_PROBE_LEN) * (uint64_t)(2 * i + 1) / (2 * KASLR_PROBES);
		uint8_t buf[KASLR_PROBE_LEN];
		int rc = rd(arg, big->addr + off + (uint64_t)s, buf, KASLR_PROBE_LEN), m = 0;
		if (rc == -2) return -2;
		if (rc < 0 && i == 0) return -1;
		total += KASLR_PROBE_LEN;
		for (int b = 0; rc == 0 && b < KASLR_PROBE_LEN; b++) m += buf[b] == big->data[off + (uint64_t)b];
		match += m;
		if (m < worst) worst = m;
		if (!all && i == 0) break;
	}
	/* A window that differs in more than half its bytes is not patching: another kernel. */
	if (worst * 2 < KASLR_PROBE_LEN) return match * 100 / total < 49 ? match * 100 / total : 49;
	return match * 100 / total;
}

/* Candidate offsets, 0 first: every KASLR_ALIGN step that keeps [lo, hi) below KASLR_TOP and,
 * when a kernel pc is known that the moved text can hold, puts it inside [lo, hi). A pc no
 * candidate can cover (a module's, above KASLR_TOP; a vmalloc'd trampoline's) narrows nothing.
 * Returns how many (at most max). */
static int candidates(uint64_t lo, uint64_t hi, int have_pc, uint64_t pc, int64_t *out, int max)
{
	int n = 0;
	out[n++] = 0;
	if (hi <= lo || hi >= KASLR_TOP) return n;
	uint64_t smax = (KASLR_TOP - hi) & ~(KASLR_ALIGN - 1), smin = KASLR_ALIGN;
	if (have_pc && pc >= lo && pc < hi + smax) { /* some candidate's text holds it */
		uint64_t a = pc - lo, b = pc >= hi ? pc - hi + 1 : 0; /* lo + s <= pc < hi + s */
		if (a < smax) smax = a & ~(KASLR_ALIGN - 1);
		if (b > smin) smin = (b + KASLR_ALIGN - 1) & ~(KASLR_ALIGN - 1);
	}
	for (uint64_t s = smin; s <= smax && n < max; s += KASLR_ALIGN) out[n++] = (int64_t)s;
	return n;
}

int kaslr_pc_narrows(const struct symtab *t, uint64_t pc)
{
	uint64_t lo = ~0ull, hi = 0;
	for (int i = 0; i < t->nsecs; i++) {
		if (t->secs[i].addr < lo) lo = t->secs[i].addr;
		if (t->secs[i].addr + t->secs[i].len > hi) hi = t->secs[i].addr + t->secs[i].len;
	}
	if (!t->nsecs) { /* a map: its text, already where the map says */
		lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : t->n ? t->syms[0].addr : 0;
		hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : t->n ? t->syms[t->n - 1].addr + 1 : 0;
	}
	if (hi <= lo || hi >= KASLR_TOP) return 0;
	uint64_t smax = (KASLR_TOP - hi) & ~(KASLR_ALIGN - 1);
	return pc >= lo && pc < hi + smax;
}

static int text_slide(struct kaslr *k, const struct symtab *t, int have_pc, uint64_t pc, kaslr_read_fn rd,
		      void *arg)
{
	static int64_t cand[1024];
	const struct textsec *big = largest(t);
	uint64_t lo = ~0ull, hi = 0;
	for (int i = 0; i < t->nsecs; i++) {
		if (t->secs[i].addr < lo) lo = t->secs[i].addr;
		if (t->secs[i].addr + t->secs[i].len > hi) hi = t->secs[i].addr + t->secs[i].len;
	}
	int n = candidates(lo, hi, have_pc, pc, cand, 1024), best = -1, best_pct = -1;
	for (int i = 0; i < n; i++) {
		int pct = score(big, cand[i], 0, rd, arg);
		if (pct == -2) return -2;
		k->candidates++;
		if (pct < 50) continue;
		pct = score(big, cand[i], 1, rd, arg); /* a promising one: every probe */
		if (pct == -2) return -2;
		if (pct > best_pct) {
			best = i;
			best_pct = pct;
		}
		if (pct == 100) break;
	}
	if (best < 0 || best_pct < KASLR_MIN_MATCH) {
		ERR_SET(k, ERR_MISMATCH, "does not match the running guest (no KASLR offset makes its text "
			"match: best %d%% at %d candidates)", best_pct < 0 ? 0 : best_pct, n);
		return -1;
	}
	k->slide = cand[best];
	k->how = KASLR_TEXT;
	k->match_pct = best_pct;
	return 0;
}

/* Offsets at which the map's linux_banner reads "Linux version ": first 0, then the image's. */
static int banner_slide(struct kaslr *k, const struct symtab *t, int64_t hint, int have_pc, uint64_t pc,
			kaslr_read_fn rd, void *arg)
{
	static int64_t cand[1024];
	uint64_t lo = (t->marks >> MARK_STEXT) & 1 ? t->mark[MARK_STEXT] : t->n ? t->syms[0].addr : 0;
	uint64_t hi = (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : t->n ? t->syms[t->n - 1].addr + 1 : 0;
	int n = candidates(lo, hi, have_pc, pc, cand + 1, 1023) + 1;
	cand[0] = hint;
	for (int i = 0; i < n; i++) {
		uint8_t buf[sizeof banner - 1];
		if (i > 0 && cand[i] == cand[0]) continue; /* the hint, tried first */
		int rc = rd(arg, t->mark[MARK_BANNER] + (uint64_t)cand[i], buf, (int)sizeof buf);
		if (rc == -2) return -2;
		if (rc == 0 && !memcmp(buf, banner, sizeof buf)) {
			k->names_slide = cand[i];
			k->names_how = KASLR_BANNER;
			return 0;
		}
	}
	ERR_SET(k, ERR_MISMATCH, "does not match the running guest (the map's linux_banner reads no "
		"\"Linux version\" at any KASLR offset)");
	return -1;
}

/* The names' offset once the text's is known (k->slide, k->how): from the map's linux_banner,
 * else beside an image from the map's _stext, else the text's. */
static int names_slide(struct kaslr *k, const struct symtab *t, int names_from_map, int have_pc, uint64_t pc,
		       kaslr_read_fn rd, void *arg)
{
	if (!names_from_map) {
		k->names_slide = k->slide;
		k->names_how = k->how;
		return 0;
	}
	if ((t->marks >> MARK_BANNER) & 1) {
		int rc = banner_slide(k, t, k->slide, have_pc, pc, rd, arg);
		if (rc == -1 && have_pc) { /* the pc narrowed it wrongly: every candidate */
			k->err = 0;
			rc = banner_slide(k, t, k->slide, 0, 0, rd, arg);
		}
		return rc;
	}
	/* No banner in the map: beside an image, its _stext sits where the image's text starts. */
	k->names_slide = k->slide;
	k->names_how = KASLR_ASSUMED;
	if ((k->how == KASLR_TEXT || k->how == KASLR_FORCED) && t->nsecs && ((t->marks >> MARK_STEXT) & 1)) {
		uint64_t lo = ~0ull;
		for (int i = 0; i < t->nsecs; i++)
			if (t->secs[i].addr < lo) lo = t->secs[i].addr;
		k->names_slide = k->slide - (int64_t)(t->mark[MARK_STEXT] - lo);
	}
	return 0;
}

int kaslr_detect(struct kaslr *k, const struct symtab *t, int names_from_map, int have_pc, uint64_t pc,
		 kaslr_read_fn rd, void *arg)
{
	memset(k, 0, sizeof *k);
	int rc;
	if (t->nsecs && largest(t)) {
		rc = text_slide(k, t, have_pc, pc, rd, arg);
		if (rc == -1 && have_pc) { /* the pc was not in the image after all: every candidate */
			int tried = k->candidates;
			memset(k, 0, sizeof *k);
			rc = text_slide(k, t, 0, 0, rd, arg);
			k->candidates += tried;
		}
		if (rc < 0) return rc;
	}
	return names_slide(k, t, names_from_map, have_pc, pc, rd, arg);
}

/* Score offset s (the first probe, then all if it is promising) into best and best_pct. */
static int try_slide(struct kaslr *k, const struct textsec *big, int64_t s, int64_t *best, int *best_pct,
		     kaslr_read_fn rd, void *arg)
{
	int pct = score(big, s, 0, rd, arg);
	if (pct == -2) return -2;
	k->candidates++;
	if (pct < 50) return 0;
	pct = score(big, s, 1, rd, arg);
	if (pct == -2) return -2;
	if (pct > *best_pct) {
		*best = s;
		*best_pct = pct;
	}
	return 0;
}

int kaslr_detect_at(struct kaslr *k, const struct symtab *t, uint64_t at, uint64_t link, uint64_t granule,
		    kaslr_read_fn rd, void *arg)
{
	memset(k, 0, sizeof *k);
	const struct textsec *big = largest(t);
	uint64_t lo = ~0ull, hi = 0;
	for (int i = 0; i < t->nsecs; i++) {
		if (t->secs[i].addr < lo) lo = t->secs[i].addr;
		if (t->secs[i].addr + t->secs[i].len > hi) hi = t->secs[i].addr + t->secs[i].len;
	}
	int64_t best = 0;
	int best_pct = -1, rc = 0;
	if (!big || !granule) {
		ERR_SET(k, ERR_USAGE, "has no text to find the KASLR offset with");
		return -1;
	}
	if (link) rc = try_slide(k, big, (int64_t)(at - link), &best, &best_pct, rd, arg);
	if (rc == 0 && best_pct < KASLR_MIN_MATCH && hi > lo) {
		/* lo + s <= at < hi + s: s from above at - hi up to at - lo, on the granule */
		uint64_t s = (at - hi + granule) & ~(granule - 1), end = at - lo;
		for (; rc == 0 && (int64_t)(end - s) >= 0 && best_pct < 100; s += granule)
			if (!link || s != at - link) rc = try_slide(k, big, (int64_t)s, &best, &best_pct, rd, arg);
	}
	if (rc == -2) return -2;
	if (best_pct < KASLR_MIN_MATCH) {
		ERR_SET(k, ERR_MISMATCH, "does not match the running guest (no KASLR offset that puts 0x%llx in its "
			"text makes the text match: best %d%% at %d candidates)", (unsigned long long)at,
			best_pct < 0 ? 0 : best_pct, k->candidates);
		return -1;
	}
	k->slide = k->names_slide = best;
	k->how = k->names_how = KASLR_TEXT;
	k->match_pct = best_pct;
	return 0;
}

int kaslr_check(struct kaslr *k, const struct symtab *t, int names_from_map, int64_t slide, kaslr_read_fn rd,
		void *arg)
{
	const struct textsec *big = largest(t);
	memset(k, 0, sizeof *k);
	k->slide = k->names_slide = slide;
	k->how = k->names_how = KASLR_FORCED;
	if (big) {
		int pct = score(big, slide, 1, rd, arg);
		if (pct == -2) return -2;
		k->match_pct = pct < 0 ? 0 : pct;
		if (pct < KASLR_MIN_MATCH) {
			ERR_SET(k, ERR_MISMATCH, "does not match the running guest at --kaslr-offset 0x%llx (%d%% of "
				"its text matches there)", (unsigned long long)slide, k->match_pct);
			return -1;
		}
	}
	/* The offset moves the image; a map dumped from this boot has already moved: its banner
	 * says which (tried at the offset first, then at 0). */
	int rc = names_slide(k, t, names_from_map, 0, 0, rd, arg);
	if (rc == 0 && k->names_how == KASLR_BANNER) return 0;
	if (rc == 0) k->names_how = KASLR_FORCED;
	return rc;
}
