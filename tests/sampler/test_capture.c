/* SPDX-License-Identifier: MIT */
/* test_capture.c: capture writer/reader round trip, a truncated file and a flipped bit. */
#include "check.h"
#include "../../sampler/capture.h"
#include "../../sampler/offcpu.h"
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static struct sample mk(uint64_t t, int cpu, int flags, int n)
{
	struct sample s = { .t_ns = t, .cpu = (uint16_t)cpu, .flags = (uint8_t)flags, .n = (uint8_t)n };
	for (int i = 0; i < n; i++) s.frames[i] = 0xffffffff80000000ull + t * 16 + (uint64_t)i;
	if (t % 3 == 0) { /* a task on every third sample: a full 16-byte name, raw bytes included */
		s.has_task = 1;
		s.task = (struct task_id){ (int32_t)(t + 1), (int32_t)(t / 2), 0xffff888000000000ull + t * 0x1000, "" };
		for (int i = 0; i < TASK_COMM_LEN; i++) s.task.comm[i] = (char)('a' + (t + (uint64_t)i) % 26);
		s.task.comm[3] = (char)0xc3;
		if (t % 9) s.task.comm[TASK_COMM_LEN - 1] = 0;
	}
	if (t % 4 == 1 && n > 2) s.exact[0] |= 2; /* frame 1 interrupted: both records in one block */
	return s;
}

static long fsize(const char *p)
{
	FILE *f = fopen(p, "rb");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

static void test_roundtrip(void)
{
	char path[] = "/tmp/gdbsample-test-XXXXXX";
	int fd = mkstemp(path);
	struct capture_header h = { .arch = 1, .ncpu = 4, .flags = CAPF_IDLE_KEPT, .rate_hz = 1000,
				    .max_frames = 64, .klo = 0xffff800000000000ull, .khi = ~0ull,
				    .start_unix_ns = 1234567890123ull, .id_kind = 1, .id_len = 20, .task_os = 1 };
	for (int i = 0; i < 20; i++) h.id[i] = (uint8_t)i;
	struct writer *w = capture_writer_new(fd, &h);
	CHECK(w && !w->err);
	/* 5000 samples of 1..255 frames spill over many 64 KiB chunks. */
	int addfail = 0;
	for (int i = 0; i < 5000; i++) {
		struct sample s = mk((uint64_t)i, i % 4, i % 8, 1 + i % 255);
		addfail += w->add(w, &s) != 0;
	}
	CHECK(addfail == 0);
	/* v4: a module list longer than one chunk (lines stay whole), before the summary */
	static char mods[200000];
	size_t mo = (size_t)snprintf(mods, sizeof mods, "m hotmod ffffffffc0a00000 ffffffffc0a04000\n");
	for (int i = 0; mo < sizeof mods - 100 && i < 3000; i++)
		mo += (size_t)snprintf(mods + mo, sizeof mods - mo, "s %llx 10 hot_function_number_%d\n",
				       0xffffffffc0a00000ull + 16ull * (unsigned)i, i);
	struct run_info ri = { .summary = "samples 5000\npause_p50_us 180\n", .modules = mods };
	CHECK(w->finish(w, &ri) == 0);
	w->free(w);
	close(fd);

	struct capture_reader r;
	struct sample s;
	CHECK(capture_open(&r, path) == 0);
	CHECK(r.h.arch == 1 && r.h.ncpu == 4 && r.h.rate_hz == 1000 && r.h.max_frames == 64);
	CHECK(r.h.klo == 0xffff800000000000ull && r.h.khi == ~0ull && r.h.start_unix_ns == 1234567890123ull);
	CHECK(r.h.id_kind == 1 && r.h.id_len == 20 && r.h.id[19] == 19);
	CHECK(r.h.version == 4 && r.h.task_os == 1);
	int n = 0, bad = 0, rc;
	while ((rc = capture_next(&r, &s)) == 1) {
		struct sample e = mk((uint64_t)n, n % 4, n % 8, 1 + n % 255);
		if (s.t_ns != e.t_ns || s.cpu != e.cpu || s.flags != e.flags || s.n != e.n ||
		    memcmp(s.frames, e.frames, 8u * e.n) || s.has_task != e.has_task ||
		    memcmp(&s.task, &e.task, sizeof e.task) || memcmp(s.exact, e.exact, sizeof e.exact))
			bad++;
		n++;
	}
	CHECK(rc == 0);
	CHECK(n == 5000);
	CHECK(bad == 0);
	CHECK(r.chunks > 3);
	CHECK(strstr(r.summary, "pause_p50_us 180") != NULL);
	capture_close(&r);

	/* Truncated mid-chunk: every sample before the damaged chunk is read, then an error. */
	long size = fsize(path);
	CHECK(truncate(path, size - (long)mo - 1000) == 0); /* into the samples, before the modules */
	CHECK(capture_open(&r, path) == 0);
	n = 0;
	while ((rc = capture_next(&r, &s)) == 1) n++;
	CHECK(rc == -1);
	CHECK(n > 0 && n < 5000);
	CHECK(strstr(r.errstr, "truncated") != NULL);
	capture_close(&r);

	/* A flipped bit in the first chunk's payload: its CRC fails before any sample is trusted. */
	FILE *f = fopen(path, "r+b");
	fseek(f, CAPTURE_HEADER_SIZE + CAPTURE_CHUNK_HEADER + 100, SEEK_SET);
	int c = fgetc(f);
	fseek(f, CAPTURE_HEADER_SIZE + CAPTURE_CHUNK_HEADER + 100, SEEK_SET);
	fputc(c ^ 4, f);
	fclose(f);
	CHECK(capture_open(&r, path) == 0);
	CHECK(capture_next(&r, &s) == -1);
	CHECK(strstr(r.errstr, "checksum") != NULL);
	capture_close(&r);

	/* A damaged header is refused. */
	f = fopen(path, "r+b");
	fseek(f, 16, SEEK_SET);
	fputc(0x55, f);
	fclose(f);
	CHECK(capture_open(&r, path) == -1);
	capture_close(&r);
	unlink(path);
}

/* v6: off-CPU samples carry their state and weight (extension record 3, after the task); a v6
 * file is written only when asked (record --off-cpu), and its on-CPU samples read back with
 * weight 1. A v5 file's type 3 record (none is written) is skipped as unknown. */
static void test_offcpu_records(void)
{
	char path[] = "/tmp/gdbsample-test-XXXXXX";
	int fd = mkstemp(path);
	struct capture_header h = { .arch = 1, .ncpu = 2, .rate_hz = 100, .max_frames = 64, .task_os = 2,
				    .version = CAPTURE_VERSION };
	struct writer *w = capture_writer_new(fd, &h);
	struct sample on = mk(3, 1, 0, 4), blocked = mk(6, 0, 0, 7), runnable = mk(9, 0, 0, 5);
	blocked.offcpu = OC_BLOCKED;
	blocked.weight = 37;
	runnable.offcpu = OC_RUNNABLE;
	runnable.weight = 70000;
	CHECK(w->add(w, &on) == 0 && w->add(w, &blocked) == 0 && w->add(w, &runnable) == 0);
	struct run_info ri = { .summary = "samples 1\n" };
	CHECK(w->finish(w, &ri) == 0);
	w->free(w);
	close(fd);
	struct capture_reader r;
	struct sample s;
	CHECK(capture_open(&r, path) == 0 && r.h.version == 6);
	CHECK(capture_next(&r, &s) == 1 && s.offcpu == 0 && s.weight == 1 && s.has_task);
	CHECK(capture_next(&r, &s) == 1 && s.offcpu == OC_BLOCKED && s.weight == 37 && s.n == 7 && s.has_task &&
	      s.task.pid == 7);
	CHECK(capture_next(&r, &s) == 1 && s.offcpu == OC_RUNNABLE && s.weight == 70000 && s.task.pid == 10);
	CHECK(capture_next(&r, &s) == 0);
	capture_close(&r);
	/* the same bytes under a version 5 header: the record is not v5's, skipped */
	FILE *f = fopen(path, "r+b");
	uint8_t hd[CAPTURE_HEADER_SIZE];
	CHECK(fread(hd, 1, sizeof hd, f) == sizeof hd);
	h.version = CAPTURE_VERSION_PHASES;
	capture_header_encode(hd, &h);
	fseek(f, 0, SEEK_SET);
	fwrite(hd, 1, sizeof hd, f);
	fclose(f);
	CHECK(capture_open(&r, path) == 0 && r.h.version == 5);
	CHECK(capture_next(&r, &s) == 1 && capture_next(&r, &s) == 1 && s.offcpu == 0 && s.weight == 1 && s.n == 7);
	capture_close(&r);
	unlink(path);
}

static void test_header_literal(void)
{
	uint8_t b[CAPTURE_HEADER_SIZE];
	struct capture_header h = { .arch = 1, .ncpu = 2, .rate_hz = 100 }, g;
	capture_header_encode(b, &h);
	CHECK(memcmp(b, "GDBSAMP\0", 8) == 0);
	CHECK(b[8] == 4 && b[9] == 0);      /* version 4, little-endian */
	CHECK(b[101] == 0);                 /* no task attribution */
	CHECK(b[10] == 128);                /* header size */
	CHECK(b[16] == 100);                /* rate */
	CHECK(capture_header_decode(&g, b) == 0 && g.ncpu == 2);
	CHECK(capture_crc32((const uint8_t *)"123456789", 9) == 0xcbf43926u); /* the CRC-32 check value */
	b[0] = 'X';
	CHECK(capture_header_decode(&g, b) == -1);
}

void test_capture(void)
{
	test_header_literal();
	test_roundtrip();
	test_offcpu_records();
}
