/* SPDX-License-Identifier: MIT */
/* capture.h: the binary capture format -- versioned header, CRC-checked chunks of samples. */
#ifndef CAPTURE_H
#define CAPTURE_H
#include "err.h"
#include <stdint.h>
#include <stdio.h>
#include "sample.h"
#include "writer.h"

#define CAPTURE_MAGIC "GDBSAMP"    /* 8 bytes with the NUL */
#define CAPTURE_VERSION 6          /* the newest read; written with off-CPU samples (record --off-cpu) */
#define CAPTURE_VERSION_PHASES 5   /* written with a phases chunk (record --phase) */
#define CAPTURE_VERSION_PLAIN 4    /* written with neither, so a v4 reader reads it */
#define CAPTURE_HEADER_SIZE 128
#define CAPTURE_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" little-endian */
#define CAPTURE_CHUNK_HEADER 20
#define CAPTURE_CHUNK_MAX (1u << 20)    /* largest payload a reader accepts */
#define CAPTURE_MAX_CPUS 4096           /* a sample of a higher vCPU index is damage */
enum { CHUNK_SAMPLES = 1, CHUNK_SUMMARY = 2, CHUNK_MODULES = 3, CHUNK_PHASES = 4 }; /* 3: v4; 4: v5 */
enum { CAPF_IDLE_KEPT = 1, CAPF_KASLR = 2, CAPF_ICOUNT = 4 }; /* header flag bits (CAPF_KASLR: kaslr_offset is
								 * known; CAPF_ICOUNT: sample times are instruction counts, a replay's) */
#define CAPS_EXT 0x80                   /* sample flag bit (v2): an extension block follows the frames */
enum { CAPX_EXACT = 1, CAPX_TASK = 2, CAPX_OFFCPU = 3 }; /* extension records: exact (interrupted)
					  * frame indexes; the task (v3); off-CPU state and weight (v6) */
#define CAPX_TASK_LEN 32
#define CAPX_OFFCPU_LEN 5                /* u8 state (CAPO_*), u32 weight in sample periods */
enum { CAPO_RUNNABLE = 1, CAPO_BLOCKED = 2, CAPO_UNINTERRUPTIBLE = 3 }; /* the file's off-CPU states (offcpu.h's OC_* mapped) */

/* The decoded header. */
struct capture_header {
	uint16_t version;       /* as read; written: CAPTURE_VERSION_PLAIN, or 5 (a phases chunk follows) or 6
				 * (off-CPU samples) when set so */
	uint16_t arch;          /* ARCH_* */
	uint16_t ncpu;          /* vCPUs sampled */
	uint16_t flags;         /* CAPF_* */
	uint32_t rate_hz;       /* requested rate */
	uint32_t max_frames;    /* frame cap */
	uint64_t klo, khi;      /* kernel range */
	uint64_t start_unix_ns; /* wall-clock start (CLOCK_REALTIME) */
	uint8_t id_kind;        /* SYMID_*: what id holds */
	uint8_t id_len;         /* bytes of id used */
	uint8_t id[32];         /* ELF build-id or FNV-1a 64 hash */
	int64_t kaslr_offset;   /* v2: the guest kernel's KASLR offset (runtime - link address) */
	uint64_t stext;         /* v2: where the guest's _stext is (0 unknown): a reader's map with
				 * _stext at S needs an offset of stext - S */
	uint8_t methods;        /* v2: unwinding methods used, bit 1 << UM_* */
	uint8_t task_os;        /* v3: OS_* whose tasks the samples name (0: no attribution) */
};

/* Writer: streams chunks to fd, flushing at least every second. */
struct writer *capture_writer_new(int fd, const struct capture_header *h);

/* Reader state. */
struct capture_reader {
	FILE *f;                     /* the file */
	struct capture_header h;     /* its header */
	uint8_t *buf;                /* current chunk payload */
	uint32_t len, pos;           /* payload size and read position */
	uint32_t type;               /* current chunk type */
	uint64_t chunks;             /* good chunks read */
	uint64_t offset;             /* file offset of the next chunk */
	char summary[4096];          /* the summary chunk's text, if seen */
	int err;                     /* sticky error code */
	char errstr[ERR_MAX];            /* what went wrong (truncation, CRC, ...) */
};

int capture_open(struct capture_reader *r, const char *path);
/* Next sample: 1 got one, 0 clean end of file, -1 truncated or corrupt (err set; samples read
 * so far are intact). */
int capture_next(struct capture_reader *r, struct sample *s);
void capture_close(struct capture_reader *r);
/* Serialize / parse the header (pure, for tests). */
void capture_header_encode(uint8_t out[CAPTURE_HEADER_SIZE], const struct capture_header *h);
int capture_header_decode(struct capture_header *h, const uint8_t in[CAPTURE_HEADER_SIZE]);
uint32_t capture_crc32(const uint8_t *p, size_t n);

#endif
