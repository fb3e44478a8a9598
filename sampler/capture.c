/* SPDX-License-Identifier: MIT */
/* capture.c: the binary capture format -- versioned header, CRC-checked chunks of samples. */
#include "capture.h"
#include "offcpu.h"
#include "bytes.h"
#include "err.h"
#include "pace.h"
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

/*
 * File layout (all integers little-endian; full description in docs/capture-format.md):
 *   header, 128 bytes:
 *     0 magic "GDBSAMP\0"   8 u16 version   10 u16 header size (128)   12 u16 arch
 *    14 u16 ncpu   16 u32 rate_hz   20 u32 max_frames   24 u64 kernel lo   32 u64 kernel hi
 *    40 u64 start (unix ns)   48 u8 id kind   49 u8 id len   50 u16 flags   52 id[32]
 *    84 s64 kaslr offset (v2)   92 u64 runtime _stext (v2)   100 u8 methods (v2)
 *   101 u8 task_os (v3: 0 none, 1 linux, 2 testkernel)   102..123 zero   124 u32 CRC-32 of bytes 0..123
 *   then chunks:
 *     0 u32 "CHNK"   4 u32 type (1 samples, 2 summary)   8 u32 payload bytes
 *    12 u32 records   16 u32 CRC-32 (v1: of the payload; v2: of bytes 4..15 and the payload)
 *    20 payload
 *   a sample record: u64 t_ns, u16 cpu, u8 flags, u8 nframes, u64 frames[nframes]
 *     v2: flags bit 7 set = then u16 extension bytes, and that many bytes of records
 *     (u8 type, u8 length, data): type 1 = the indexes (u8 each) of exact frames;
 *     v3: type 2 (length 32) = the task: s32 pid, s32 tgid, u64 task pointer, comm[16].
 *     v6: type 3 (length 5) = off-CPU: u8 state (1 runnable, 2 blocked), u32 weight (periods).
 *   the summary payload: UTF-8 "key value\n" lines, written once at the end.
 *   v4: type 3 chunks (before the summary) list the guest's kernel modules, UTF-8 lines, hex
 *   numbers: "m NAME LO HI [LO HI]" (a module and its text ranges), then its symbols
 *   "s ADDR SIZE NAME"; records = lines; a list longer than a chunk continues in the next.
 *   v5 (written only by record --phase): type 4 chunks (after the modules) hold the phase, "p NAME
 *   BEGIN END" (hex), and its occurrences, "o N BEGIN_NS END_NS BEGIN_CPU END_CPU|- done|open
 *   sampled|skipped" (decimal); lines as for modules.
 * v2 readers treat an unknown chunk type as damage; unknown extension records are skipped.
 */

/* CRC-32 as zlib, gzip and PNG compute it (reflected 0xedb88320, initial and final ~0): Python's
 * zlib.crc32 checks the same bytes. */
uint32_t capture_crc32(const uint8_t *p, size_t n)
{
	return (uint32_t)crc32_z(0, p, n);
}

void capture_header_encode(uint8_t out[CAPTURE_HEADER_SIZE], const struct capture_header *h)
{
	memset(out, 0, CAPTURE_HEADER_SIZE);
	memcpy(out, CAPTURE_MAGIC, 8);
	put_le16(out + 8, h->version == CAPTURE_VERSION || h->version == CAPTURE_VERSION_PHASES ? h->version
										       : CAPTURE_VERSION_PLAIN);
	put_le16(out + 10, CAPTURE_HEADER_SIZE);
	put_le16(out + 12, h->arch);
	put_le16(out + 14, h->ncpu);
	put_le32(out + 16, h->rate_hz);
	put_le32(out + 20, h->max_frames);
	put_le64(out + 24, h->klo);
	put_le64(out + 32, h->khi);
	put_le64(out + 40, h->start_unix_ns);
	out[48] = h->id_kind;
	out[49] = h->id_len;
	put_le16(out + 50, h->flags);
	memcpy(out + 52, h->id, 32);
	put_le64(out + 84, (uint64_t)h->kaslr_offset);
	put_le64(out + 92, h->stext);
	out[100] = h->methods;
	out[101] = h->task_os;
	put_le32(out + 124, capture_crc32(out, 124));
}

int capture_header_decode(struct capture_header *h, const uint8_t in[CAPTURE_HEADER_SIZE])
{
	if (memcmp(in, CAPTURE_MAGIC, 8)) return -1;
	if (le32(in + 124) != capture_crc32(in, 124)) return -2;
	memset(h, 0, sizeof *h);
	h->version = (uint16_t)le16(in + 8);
	if (h->version < 1 || h->version > CAPTURE_VERSION || le16(in + 10) != CAPTURE_HEADER_SIZE) return -3;
	h->arch = (uint16_t)le16(in + 12);
	h->ncpu = (uint16_t)le16(in + 14);
	h->rate_hz = (uint32_t)le32(in + 16);
	h->max_frames = (uint32_t)le32(in + 20);
	h->klo = le64(in + 24);
	h->khi = le64(in + 32);
	h->start_unix_ns = le64(in + 40);
	h->id_kind = in[48];
	h->id_len = in[49] > 32 ? 32 : in[49];
	h->flags = (uint16_t)le16(in + 50);
	memcpy(h->id, in + 52, 32);
	if (h->version >= 2) {
		h->kaslr_offset = (int64_t)le64(in + 84);
		h->stext = le64(in + 92);
		h->methods = in[100];
	}
	if (h->version >= 3) h->task_os = in[101];
	return 0;
}

/* v2 chunk CRC: the header's type, length and count, then the payload. */
static uint32_t chunk_crc(const uint8_t *hdr, const uint8_t *payload, uint32_t len)
{
	uint8_t tmp[12];
	memcpy(tmp, hdr + 4, 12);
	return (uint32_t)crc32_z(capture_crc32(tmp, 12), payload, len); /* continued over the payload */
}

/* ---- writer ---- */

#define FLUSH_BYTES 65536
#define FLUSH_NS 1000000000LL /* at most a second of samples is lost if we die */

struct capw {
	struct writer w;                          /* interface, first */
	int fd;                                   /* output */
	uint8_t buf[CAPTURE_CHUNK_HEADER + FLUSH_BYTES + 16 + 8 * SAMPLE_MAX_FRAMES + 4 + SAMPLE_MAX_FRAMES +
		    2 + CAPX_TASK_LEN]; /* one chunk */
	uint32_t len;                             /* payload bytes buffered */
	uint32_t count;                           /* records buffered */
	int64_t last_flush;                       /* pace_now() at the last flush */
};

static int write_all(struct capw *c, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(c->fd, p, n);
		if (k < 0 && errno == EINTR) continue;
		if (k < 0) {
			ERR_SET(&c->w, ERR_SYS, "capture write: %s", strerror(errno));
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int flush_chunk(struct capw *c, uint32_t type)
{
	c->last_flush = pace_now();
	if (!c->len && type == CHUNK_SAMPLES) return 0;
	uint8_t *h = c->buf;
	put_le32(h, CAPTURE_CHUNK_MAGIC);
	put_le32(h + 4, type);
	put_le32(h + 8, c->len);
	put_le32(h + 12, c->count);
	put_le32(h + 16, chunk_crc(h, h + CAPTURE_CHUNK_HEADER, c->len));
	int rc = write_all(c, h, CAPTURE_CHUNK_HEADER + c->len);
	c->len = c->count = 0;
	return rc;
}

static int capw_add(struct writer *w, const struct sample *s)
{
	struct capw *c = (struct capw *)w;
	uint8_t *p = c->buf + CAPTURE_CHUNK_HEADER + c->len;
	put_le64(p, (uint64_t)s->t_ns);
	put_le16(p + 8, s->cpu);
	p[10] = s->flags & ~CAPS_EXT;
	p[11] = s->n;
	for (int i = 0; i < s->n; i++) put_le64(p + 12 + 8 * i, s->frames[i]);
	uint32_t len = 12 + 8u * s->n;
	uint8_t *x = p + len + 2; /* extension records after a u16 length */
	uint32_t xl = 0; /* extension bytes */
	int nx = 0;
	for (int i = 1; i < s->n; i++)
		if (unwind_is_exact(s->exact, i)) x[2 + nx++] = (uint8_t)i;
	if (nx) {
		x[0] = CAPX_EXACT;
		x[1] = (uint8_t)nx;
		xl += 2u + (uint32_t)nx;
	}
	if (s->has_task) {
		uint8_t *t = x + xl;
		t[0] = CAPX_TASK;
		t[1] = CAPX_TASK_LEN;
		put_le32(t + 2, (uint32_t)s->task.pid);
		put_le32(t + 6, (uint32_t)s->task.tgid);
		put_le64(t + 10, s->task.ptr);
		memcpy(t + 18, s->task.comm, TASK_COMM_LEN);
		xl += 2u + CAPX_TASK_LEN;
	}
	if (s->offcpu == OC_RUNNABLE || s->offcpu == OC_BLOCKED || s->offcpu == OC_UNINTERRUPTIBLE) {
		uint8_t *o = x + xl;
		o[0] = CAPX_OFFCPU;
		o[1] = CAPX_OFFCPU_LEN;
		o[2] = s->offcpu == OC_RUNNABLE ? CAPO_RUNNABLE : s->offcpu == OC_BLOCKED ? CAPO_BLOCKED : CAPO_UNINTERRUPTIBLE;
		put_le32(o + 3, s->weight);
		xl += 2u + CAPX_OFFCPU_LEN;
	}
	if (xl) {
		p[10] |= CAPS_EXT;
		put_le16(p + len, xl);
		len += 2 + xl;
	}
	c->len += len;
	c->count++;
	if (c->len >= FLUSH_BYTES || pace_now() - c->last_flush >= FLUSH_NS)
		return flush_chunk(c, CHUNK_SAMPLES);
	return 0;
}

/* Text of whole lines (modules, phases) in chunks of type, a chunk holding at most FLUSH_BYTES. */
static int text_chunks(struct capw *c, const char *m, uint32_t type)
{
	while (m && *m) {
		const char *end = m;
		uint32_t lines = 0;
		for (const char *nl; (nl = strchr(end, '\n')) && (size_t)(nl + 1 - m) <= FLUSH_BYTES; end = nl + 1) lines++;
		if (end == m) break; /* a line longer than a chunk (never written so) */
		memcpy(c->buf + CAPTURE_CHUNK_HEADER, m, (size_t)(end - m));
		c->len = (uint32_t)(end - m);
		c->count = lines;
		if (flush_chunk(c, type) < 0) return -1;
		m = end;
	}
	return 0;
}

static int capw_finish(struct writer *w, const struct run_info *ri)
{
	struct capw *c = (struct capw *)w;
	if (flush_chunk(c, CHUNK_SAMPLES) < 0) return -1;
	if (text_chunks(c, ri ? ri->modules : NULL, CHUNK_MODULES) < 0) return -1;
	if (text_chunks(c, ri ? ri->phases : NULL, CHUNK_PHASES) < 0) return -1;
	if (ri && ri->summary) {
		size_t n = strlen(ri->summary);
		if (n > FLUSH_BYTES) n = FLUSH_BYTES;
		memcpy(c->buf + CAPTURE_CHUNK_HEADER, ri->summary, n);
		c->len = (uint32_t)n;
		c->count = 1;
		if (flush_chunk(c, CHUNK_SUMMARY) < 0) return -1;
	}
	return 0;
}

static void capw_free(struct writer *w)
{
	free(w);
}

struct writer *capture_writer_new(int fd, const struct capture_header *h)
{
	struct capw *c = calloc(1, sizeof *c);
	uint8_t hdr[CAPTURE_HEADER_SIZE];
	if (!c) return NULL;
	c->w.add = capw_add;
	c->w.finish = capw_finish;
	c->w.free = capw_free;
	c->fd = fd;
	c->last_flush = pace_now();
	capture_header_encode(hdr, h);
	write_all(c, hdr, sizeof hdr); /* an error stays in c->w.err for the caller */
	return &c->w;
}

/* ---- reader ---- */

int capture_open(struct capture_reader *r, const char *path)
{
	uint8_t hdr[CAPTURE_HEADER_SIZE];
	memset(r, 0, sizeof *r);
	r->f = fopen(path, "rb");
	if (!r->f) {
		ERR_SET(r, ERR_SYS, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fread(hdr, 1, sizeof hdr, r->f) != sizeof hdr) {
		ERR_SET(r, ERR_FORMAT, "%s: truncated header", path);
		return -1;
	}
	int rc = capture_header_decode(&r->h, hdr);
	if (rc) {
		ERR_SET(r, ERR_FORMAT, "%s: %s", path, rc == -1 ? "not a gdbsample capture" :
			rc == -2 ? "header checksum mismatch" : "unsupported capture version");
		return -1;
	}
	r->offset = CAPTURE_HEADER_SIZE;
	return 0;
}

/* Load the next chunk; 1 loaded, 0 clean EOF, -1 damaged. */
static int next_chunk(struct capture_reader *r)
{
	uint8_t h[CAPTURE_CHUNK_HEADER];
	size_t got = fread(h, 1, sizeof h, r->f);
	if (got == 0 && feof(r->f)) return 0;
	if (got != sizeof h) {
		ERR_SET(r, ERR_FORMAT, "truncated chunk header at byte %llu", (unsigned long long)r->offset);
		return -1;
	}
	uint32_t len = (uint32_t)le32(h + 8);
	if (le32(h) != CAPTURE_CHUNK_MAGIC || len > CAPTURE_CHUNK_MAX) {
		ERR_SET(r, ERR_FORMAT, "bad chunk header at byte %llu", (unsigned long long)r->offset);
		return -1;
	}
	uint8_t *b = realloc(r->buf, len ? len : 1);
	if (!b) {
		ERR_SET(r, ERR_SYS, "out of memory");
		return -1;
	}
	r->buf = b;
	if (fread(r->buf, 1, len, r->f) != len) {
		ERR_SET(r, ERR_FORMAT, "truncated chunk at byte %llu", (unsigned long long)r->offset);
		return -1;
	}
	uint32_t want = r->h.version >= 2 ? chunk_crc(h, r->buf, len) : capture_crc32(r->buf, len);
	if (want != le32(h + 16)) {
		ERR_SET(r, ERR_FORMAT, "chunk checksum mismatch at byte %llu", (unsigned long long)r->offset);
		return -1;
	}
	r->type = (uint32_t)le32(h + 4);
	if (r->h.version >= 2 && r->type != CHUNK_SAMPLES && r->type != CHUNK_SUMMARY &&
	    !(r->h.version >= 4 && r->type == CHUNK_MODULES) && !(r->h.version >= 5 && r->type == CHUNK_PHASES)) {
		ERR_SET(r, ERR_FORMAT, "unknown chunk type %u at byte %llu", r->type, (unsigned long long)r->offset);
		return -1;
	}
	r->offset += sizeof h + len;
	r->chunks++;
	r->len = len;
	r->pos = 0;
	if (r->type == CHUNK_SUMMARY) {
		size_t n = len < sizeof r->summary - 1 ? len : sizeof r->summary - 1;
		memcpy(r->summary, r->buf, n);
		r->summary[n] = 0;
	}
	return 1;
}

int capture_next(struct capture_reader *r, struct sample *s)
{
	if (r->err) return -1;
	while (r->type != CHUNK_SAMPLES || r->pos >= r->len) {
		int rc = next_chunk(r);
		if (rc <= 0) return rc;
	}
	const uint8_t *p = r->buf + r->pos;
	if (r->len - r->pos < 12 || r->len - r->pos < 12 + 8u * p[11] || !p[11]) {
		ERR_SET(r, ERR_FORMAT, "sample overruns its chunk near byte %llu", (unsigned long long)r->offset);
		return -1;
	}
	s->t_ns = le64(p);
	s->cpu = (uint16_t)le16(p + 8);
	if (s->t_ns >> 63 || s->cpu >= CAPTURE_MAX_CPUS) { /* as the Python reader: nonsense is damage */
		ERR_SET(r, ERR_FORMAT, "a sample with time %llu ns on vCPU %u near byte %llu makes no sense",
			(unsigned long long)s->t_ns, s->cpu, (unsigned long long)r->offset);
		return -1;
	}
	s->flags = p[10];
	s->n = p[11];
	for (int i = 0; i < s->n; i++) s->frames[i] = le64(p + 12 + 8 * i);
	memset(s->exact, 0, sizeof s->exact);
	s->has_task = 0;
	memset(&s->task, 0, sizeof s->task);
	s->offcpu = 0;
	s->weight = 1;
	uint32_t len = 12 + 8u * s->n;
	if (r->h.version >= 2 && (s->flags & CAPS_EXT)) {
		uint32_t left = r->len - r->pos - len, xl;
		if (left < 2 || (xl = (uint32_t)le16(p + len)) > left - 2) {
			ERR_SET(r, ERR_FORMAT, "sample extension overruns its chunk near byte %llu",
				(unsigned long long)r->offset);
			return -1;
		}
		for (const uint8_t *x = p + len + 2, *xe = x + xl; x + 2 <= xe && x + 2 + x[1] <= xe; x += 2 + x[1])
			if (x[0] == CAPX_EXACT) {
				for (int k = 0; k < x[1]; k++)
					if (x[2 + k] && x[2 + k] < s->n) /* frame 0 is always exact */
						s->exact[x[2 + k] >> 6] |= 1ull << (x[2 + k] & 63);
			} else if (x[0] == CAPX_TASK && x[1] == CAPX_TASK_LEN) {
				s->has_task = 1;
				s->task.pid = (int32_t)le32(x + 2);
				s->task.tgid = (int32_t)le32(x + 6);
				s->task.ptr = le64(x + 10);
				memcpy(s->task.comm, x + 18, TASK_COMM_LEN);
			} else if (x[0] == CAPX_OFFCPU && x[1] == CAPX_OFFCPU_LEN && r->h.version >= 6 &&
				   (x[2] == CAPO_RUNNABLE || x[2] == CAPO_BLOCKED || x[2] == CAPO_UNINTERRUPTIBLE)) {
				s->offcpu = x[2] == CAPO_RUNNABLE ? OC_RUNNABLE : x[2] == CAPO_BLOCKED ? OC_BLOCKED : OC_UNINTERRUPTIBLE;
				s->weight = (uint32_t)le32(x + 3);
			}
		len += 2 + xl;
		s->flags &= ~CAPS_EXT;
	}
	r->pos += len;
	return 1;
}

void capture_close(struct capture_reader *r)
{
	if (r->f) fclose(r->f);
	free(r->buf);
	r->f = NULL;
	r->buf = NULL;
}
