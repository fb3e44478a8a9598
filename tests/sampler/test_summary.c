/* SPDX-License-Identifier: MIT */
/* test_summary.c: the counter table -- its three renderings on literals, and the human and key
 * value text of a run byte for byte as the code before the table wrote them (data/summary_golden.txt,
 * written by the old stats_human/stats_kv/session_kv/session_modules_line on this same fixture). */
#include "check.h"
#include "../../sampler/session.h"
#include "../../sampler/stats.h"
#include <stddef.h>
#include <stdlib.h>

static void test_renderings(void)
{
	static struct summary t;
	char out[4096] = "";
	summary_init(&t);
	summary_u64(&t, "rescues", "gdbsample: %v rescue%s", 1);
	summary_u64(&t, "rounds", ", %v round%s", 2);
	summary_i64(&t, "late_ns", " (late %v ms)", 1500000);
	summary_scale(&t, 1e6, 1);
	summary_real(&t, "fraction", NULL, 5, 0.0123);
	summary_real(&t, NULL, "; %v%%\n", 2, 1.23);
	summary_str(&t, "what", NULL, "a \"quoted\"\tname\\");
	summary_u64(&t, "gone", "never shown %v", 7);
	summary_hide(&t);
	summary_text(&t, "end\n");
	summary_human(&t, out, sizeof out);
	CHECK_STR(out, "gdbsample: 1 rescue, 2 rounds (late 1.5 ms); 1.23%\nend\n");
	out[0] = 0;
	summary_kv(&t, out, sizeof out);
	CHECK_STR(out, "rescues 1\nrounds 2\nlate_ns 1500000\nfraction 0.01230\nwhat a \"quoted\"\tname\\\ngone 7\n");
	out[0] = 0;
	summary_json(&t, out, sizeof out);
	CHECK_STR(out, "{\"schema\": \"gdbsample summary\", \"schema_version\": 7, \"summary\": {\"fraction\": 0.01230, "
		       "\"gone\": 7, \"late_ns\": 1500000, \"rescues\": 1, \"rounds\": 2, "
		       "\"what\": \"a \\\"quoted\\\"\\u0009name\\\\\"}}\n");
	CHECK(summary_find(&t, "rounds") && summary_find(&t, "rounds")->v.u == 2);
	CHECK(summary_find(&t, "nope") == NULL);
	/* absent keys are null in JSON and nowhere else; UTF-8 as \\u escapes, a stray byte as U+FFFD */
	summary_init(&t);
	summary_null(&t, "image");
	summary_u64(&t, "zero", NULL, 0);
	summary_json_only(&t);
	summary_str(&t, "name", NULL, "caf\xc3\xa9 \xf0\x9f\x98\x80 \xff");
	out[0] = 0;
	summary_kv(&t, out, sizeof out);
	CHECK_STR(out, "name caf\xc3\xa9 \xf0\x9f\x98\x80 \xff\n");
	out[0] = 0;
	summary_json(&t, out, sizeof out);
	CHECK_STR(out, "{\"schema\": \"gdbsample summary\", \"schema_version\": 7, \"summary\": {\"image\": null, "
		       "\"name\": \"caf\\u00e9 \\ud83d\\ude00 \\ufffd\", \"zero\": 0}}\n");
	/* a full table loses rows visibly, never silently */
	summary_init(&t);
	for (int i = 0; i < SUMMARY_MAX + 3; i++) summary_u64(&t, "k", NULL, (uint64_t)i);
	CHECK(t.n == SUMMARY_MAX && t.lost == 3);
	static char big[SUMMARY_MAX * 16 + 64];
	big[0] = 0;
	summary_kv(&t, big, sizeof big);
	CHECK(strstr(big, "\nsummary_rows_lost 3\n") != NULL);
	/* a cut message is marked (err.h) */
	struct { int err; char errstr[16]; } e = { 0, "" };
	ERR_SET(&e, 1, "%s", "a message much longer than sixteen bytes");
	CHECK_STR(e.errstr, "a message [...]");
	e.err = 0;
	ERR_SET(&e, 1, "%s", "fits exactly!!!");
	CHECK_STR(e.errstr, "fits exactly!!!");
}

/* ---- the fixture the golden file was written from ---- */

static struct stats st;
static struct session ss;

static void fill(struct sampler_stats *s, struct wire_stats *w, struct gdb_stats *g, int big)
{
	memset(s, 0, sizeof *s);
	memset(w, 0, sizeof *w);
	memset(g, 0, sizeof *g);
	if (!big) return;
	/* every counter its own value, given in the order the golden file's code held them in one
	 * struct (the wire's and the plan's together), so the file stays what that code wrote */
	uint64_t v = 3, *once[] = {
		&w->vcpu_samples, &s->hits, &s->misses, &w->trips, &w->no_stop_reply, &s->reg_errors,
		&s->mem_errors, &s->stale_windows, &s->cross_reads, &s->cross_failed, &s->mem_reads,
		&s->mem_bytes, &w->hg_elided, &s->idle_reused, &w->hg_wrong, &w->rejected, &s->text_reads,
		&s->irq_vector, &s->reg_reads,
	};
	for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) *once[i] = v++ * 7;
	uint64_t *p = (uint64_t *)(void *)&s->task;   /* then task, stops, frames, stops_by: all uint64_t */
	for (size_t i = 0; i < (sizeof *s - offsetof(struct sampler_stats, task)) / 8; i++) p[i] = v++ * 7;
	g->naks = 11;
	g->retransmits = 12;
	g->badsum = 13;
	g->console = 14;
}

static void session_fixture(int big)
{
	static struct module m[3];
	memset(&ss, 0, sizeof ss);
	memset(m, 0, sizeof m);
	strcpy(ss.g.conn.where, "127.0.0.1:1234");
	if (!big) {
		strcpy(ss.img.os.why, "no image");
		return;
	}
	ss.at.kind = ATTACH_QMP;
	ss.at.target = "/run/q.sock";
	strcpy(ss.at.accel, "tcg");
	ss.at.ncpu = 2;
	ss.at.tids[0] = 4242;
	ss.at.tids[1] = 4243;
	ss.held_episodes = 2;
	ss.held_rounds = 31;
	ss.migration_rounds = 7;
	ss.hotplugged = 1;
	ss.img.syms.n = 5;
	ss.img.syms.demangled = 3;
	ss.img.syms.undemangled = 1;
	strcpy(ss.img.what, "vmlinuz-6.1 (xz payload) + kallsyms");
	ss.nmethods = 2;
	ss.methods[0] = UM_ORC;
	ss.methods[1] = UM_FP;
	ss.img.has_orc = 1;
	ss.img.orc.layout = 1;
	ss.img.orc.n = 12345;
	ss.orc_from_guest = 1;
	ss.kaslr.slide = 0xdc00000;
	ss.kaslr.how = 1;
	ss.kaslr.names_slide = -0x1000;
	ss.kaslr.names_how = 2;
	ss.mods.m = m;
	ss.mods.n = 3;
	m[0].addr = 1;
	m[1].addr = 2;
	m[0].nsyms = 10;
	m[1].nsyms = 20;
	m[0].has_orc = 1;
	m[0].orc.n = 77;
	ss.mods.head = 0x1234;
	strcpy(ss.mods.l.what, "mem[] (6.4 on)");
	ss.mods.st.loaded = 3;
	ss.mods.st.unloaded = 1;
	ss.mods.st.bad = 2;
	ss.mods.st.changed = 4;
	ss.mods.st.walks = 9;
	ss.mods.st.unknown_pcs = 6;
	ss.mods.st.bytes = 654321;
	ss.mods_sl.stops = 12;
	ss.mods_sl.longest_ns = 26543210;
	ss.img.os.os = OS_LINUX;
	strcpy(ss.img.os.what, "BTF, per-CPU current_task at +0x1fb80");
}

/* The golden file's section after "=== name\n", up to the next "===". */
static char *section(const char *gold, const char *name)
{
	char head[96];
	snprintf(head, sizeof head, "=== %s\n", name);
	const char *p = strstr(gold, head);
	if (!p) return NULL;
	p += strlen(head);
	const char *e = strstr(p, "\n===");
	size_t n = !strncmp(p, "===", 3) ? 0 : e ? (size_t)(e - p) + 1 : strlen(p);
	char *s = malloc(n + 1);
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The same lines, in any order (the key value form is read into a dictionary). */
static int same_lines(char *a, char *b)
{
	char *la[512], *lb[512];
	int na = 0, nb = 0;
	for (char *s = strtok(a, "\n"); s && na < 512; s = strtok(NULL, "\n")) la[na++] = s;
	for (char *s = strtok(b, "\n"); s && nb < 512; s = strtok(NULL, "\n")) lb[nb++] = s;
	qsort(la, (size_t)na, sizeof la[0], cmp_line);
	qsort(lb, (size_t)nb, sizeof lb[0], cmp_line);
	int same = na == nb && na > 0;
	for (int i = 0; same && i < na; i++) same = !strcmp(la[i], lb[i]);
	return same;
}

static void test_golden(void)
{
	static char gold[65536], out[65536];
	static struct summary t;
	FILE *f = fopen("tests/sampler/data/summary_golden.txt", "r");
	CHECK(f != NULL);
	if (!f) return;
	gold[fread(gold, 1, sizeof gold - 1, f)] = 0;
	fclose(f);
	struct sampler_stats s;
	struct wire_stats w;
	struct gdb_stats g;
	struct pace p;
	memset(&p, 0, sizeof p);
	for (int big = 0; big < 2; big++) {
		char name[64];
		fill(&s, &w, &g, big);
		stats_init(&st, 1000);
		if (big) {
			for (int i = 0; i < 100; i++) stats_pause(&st, (i * 37 + 5) * 1000LL + 123, (i * 11 + 3) * 1000LL);
			st.end_ns = 1000 + 2345678901LL;
			st.kept = 398;
			st.idle = 17;
			st.dropped = 2;
			st.filtered = 5;
			st.unnamed_frames = 9;
			st.firmware = 3;
			st.failed_stops = 1;
			st.rescues = 1;
			st.rescue_max_ns = 1234567890;
			st.rescued_samples = 1;
			p.skipped = 4;
			p.late_max_ns = 4123456;
		}
		for (int ki = 0; ki < 2; ki++) {
			summary_init(&t);
			stats_summary(&st, &s, &w, &g, big ? &p : NULL, big ? 2 : 1, 100, ki, &t);
			out[0] = 0;
			summary_human(&t, out, sizeof out);
			snprintf(name, sizeof name, "human big=%d keep_idle=%d", big, ki);
			char *want = section(gold, name);
			CHECK_STR(out, want);
			free(want);
		}
		out[0] = 0;
		summary_kv(&t, out, sizeof out);
		snprintf(name, sizeof name, "kv big=%d", big);
		char *want = section(gold, name);
		CHECK(want && same_lines(out, want));
		free(want);

		session_fixture(big);
		summary_init(&t);
		session_summary(&ss, &t);
		out[0] = 0;
		summary_kv(&t, out, sizeof out);
		snprintf(name, sizeof name, "session kv big=%d", big);
		want = section(gold, name);
		CHECK(want && same_lines(out, want));
		free(want);
		out[0] = 0;
		summary_human(&t, out, sizeof out);
		snprintf(name, sizeof name, "modules line big=%d", big);
		want = section(gold, name);
		CHECK_STR(out, want);
		free(want);
		session_image_line(&ss, out, sizeof out);
		strcat(out, "\n");
		snprintf(name, sizeof name, "image line big=%d", big);
		want = section(gold, name);
		CHECK_STR(out, want);
		free(want);
	}
}

void test_summary(void)
{
	test_renderings();
	test_golden();
}
