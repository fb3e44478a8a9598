/* SPDX-License-Identifier: MIT */
/* rtt.c: minimal gdbstub client measuring stop/continue cycles -- the benchmark's reference floor.
 * usage: rtt PORT|/unix/path MODE COUNT [MLEN|K [GAP_US]]   MODE: floor | one | three | hg | g | m
 *   GAP_US: the guest runs this long between cycles (default 5000); a sample's cost depends on
 *   it (host threads go idle between sparse samples), so compare clients at the same gap.
 *   floor: 0x03 -> stop reply -> c
 *   hg, g, m: 0x03 + K packets of one kind (Hg1 / g / m rsp,MLEN=2048) in one write, then c:
 *          the slope over K is QEMU's cost per packet of that kind
 *   one:   0x03 + (Hg, g, m rsp,MLEN) per vCPU in one write, one read of all replies, c
 *   three: 0x03 -> stop reply; (Hg, g) per vCPU; (Hg, m) per vCPU; c   (a naive three-trip sample)
 * Prints "p50 P p99 Q" in microseconds. Reuses the sampler's codec (rsp.c) and transport (conn.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../sampler/conn.h"
#include "../sampler/rsp.h"

static struct conn c;
static struct rsp_dec d;
static unsigned char buf[1 << 16];
static size_t off, len;

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Read n packets (acks skipped); dies on error. */
static void packets(int n)
{
	while (n > 0) {
		if (off == len) {
			ssize_t k = conn_read(&c, buf, sizeof buf, 5000);
			if (k <= 0) { fprintf(stderr, "rtt: read failed: %s\n", c.errstr); exit(1); }
			off = 0;
			len = (size_t)k;
		}
		size_t used;
		enum rsp_event ev = rsp_feed(&d, buf + off, len - off, &used);
		off += used;
		if (ev == RSP_PACKET || ev == RSP_BADSUM) n--;
	}
}

static void put(char *out, size_t *o, const char *p)
{
	rsp_append(out, 8192, o, p);
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4) { fprintf(stderr, "usage: rtt PORT floor|one|three COUNT [MLEN [GAP_US]]\n"); return 2; }
	const char *path = argv[1][0] == '/' ? argv[1] : NULL; /* a unix socket path instead of a port */
	int port = atoi(argv[1]), count = atoi(argv[3]), mlen = argc > 4 ? atoi(argv[4]) : 512;
	long gap_us = argc > 5 ? atol(argv[5]) : 5000;
	if (count < 1 || gap_us < 0 || gap_us > 10000000) { fprintf(stderr, "rtt: bad COUNT or GAP_US\n"); return 2; }
	const char *mode = argv[2];
	if (conn_open(&c, NULL, port, path) < 0) { fprintf(stderr, "rtt: %s\n", c.errstr); return 1; }
	rsp_dec_init(&d);
	char out[8192], req[64];
	size_t o = 0;
	/* Connecting stops the VM, with a stop reply only if it was running: skip to qC's answer. */
	put(out, &o, "qC");
	conn_write(&c, out, o);
	do packets(1); while (d.pkt[0] != 'Q');
	o = 0;
	put(out, &o, "qfThreadInfo");
	conn_write(&c, out, o);
	packets(1);
	int ncpu = 0;
	for (;;) { /* count threads: "m1" / "mp01.01" one per reply until "l" */
		if (d.pkt[0] != 'm') break;
		ncpu++;
		o = 0;
		put(out, &o, "qsThreadInfo");
		conn_write(&c, out, o);
		packets(1);
	}
	uint64_t rsp[64];
	for (int i = 0; i < ncpu; i++) { /* each vCPU's rsp, to read its stack below */
		o = 0;
		snprintf(req, sizeof req, "Hg%x", i + 1);
		put(out, &o, req);
		put(out, &o, "g");
		conn_write(&c, out, o);
		packets(2);
		uint8_t r[64];
		rsp_unhex(r, d.pkt + 112, 8);
		rsp[i] = rsp_le(r, 8) & ~4095ull; /* page start: the read never crosses a page */
	}
	conn_write(&c, "$c#63", 5);
	double *t = calloc((size_t)count, sizeof *t);
	struct timespec gap = { gap_us / 1000000, gap_us % 1000000 * 1000 };
	for (int k = 0; k < count; k++) {
		nanosleep(&gap, NULL);
		double t0 = now_us();
		o = 0;
		out[o++] = 0x03;
		int want = 1;
		if (!strcmp(mode, "hg") || !strcmp(mode, "g") || !strcmp(mode, "m"))
			for (int i = 0; i < mlen; i++) {
				if (mode[0] == 'h') snprintf(req, sizeof req, "Hg1");
				else if (mode[0] == 'g') snprintf(req, sizeof req, "g");
				else snprintf(req, sizeof req, "m%llx,800", (unsigned long long)rsp[0]);
				put(out, &o, req);
				want++;
			}
		if (!strcmp(mode, "one"))
			for (int i = 0; i < ncpu; i++) {
				snprintf(req, sizeof req, "Hg%x", i + 1);
				put(out, &o, req);
				put(out, &o, "g");
				snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)rsp[i], mlen);
				put(out, &o, req);
				want += 3;
			}
		conn_write(&c, out, o);
		packets(want);
		if (!strcmp(mode, "three")) {
			o = 0;
			for (int i = 0; i < ncpu; i++) {
				snprintf(req, sizeof req, "Hg%x", i + 1);
				put(out, &o, req);
				put(out, &o, "g");
			}
			conn_write(&c, out, o);
			packets(2 * ncpu);
			o = 0;
			for (int i = 0; i < ncpu; i++) {
				snprintf(req, sizeof req, "Hg%x", i + 1);
				put(out, &o, req);
				snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)rsp[i], mlen);
				put(out, &o, req);
			}
			conn_write(&c, out, o);
			packets(2 * ncpu);
		}
		conn_write(&c, "$c#63", 5);
		t[k] = now_us() - t0;
	}
	qsort(t, (size_t)count, sizeof *t, cmpd);
	o = 0;
	out[o++] = 0x03;
	put(out, &o, "D;1");
	conn_write(&c, out, o);
	packets(2);
	printf("p50 %.0f p99 %.0f\n", t[count / 2], t[count * 99 / 100]);
	return 0;
}
