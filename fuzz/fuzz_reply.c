/* SPDX-License-Identifier: MIT */
/* fuzz_reply.c: libFuzzer harness -- the handshake's and the readers' reply parsers (gdb_reply.h):
 * qSupported, "info version", "info replay", `g`, `p`, `m`, qXfer replies and target.xml's <xi:include>s. */
#include "../sampler/gdb_reply.h"
#include "../sampler/rsp.h"
#include <stdlib.h>
#include <string.h>

#define REGS_CAP 1024 /* room for a `g` reply: QEMU's aarch64 sends ~800 bytes */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1); /* exact size: ASan sees any read past the reply */
	uint8_t *regs = malloc(REGS_CAP), *mem = malloc(size / 2 + 1);
	if (!s || !regs || !mem) abort();
	memcpy(s, data, size);
	s[size] = 0;
	size_t len = strlen(s); /* replies reach the parsers NUL-terminated, as the decoder leaves them */

	struct gdb_features f;
	gdb_parse_supported(s, &f);
	if (f.packet_size < 0 || f.packet_size > RSP_PKT_MAX || (f.multiprocess | f.xfer_features | f.noack) > 1)
		abort();
	int v = gdb_parse_version(s);
	if (v < 0 || v > 9999) abort();

	uint64_t ic = 0;
	int rr = gdb_parse_replay(s, &ic);
	if (rr < -1 || rr > GDB_RR_RECORD || (rr > 0 && ic > INT64_MAX)) abort();

	int n = gdb_parse_regs(s, len, regs, REGS_CAP);
	if (n != -1 && (n < 0 || n > REGS_CAP || (size_t)n * 2 != len)) abort();
	uint64_t val;
	if (gdb_parse_reg(s, len, &val) == 0 && (len < 2 || len > 16 || (len < 16 && val >> (len * 4)))) abort();
	if (gdb_parse_mem(s, len, mem, len / 2) == 0 && (len % 2 || rsp_is_error(s, len))) abort();

	const char *d;
	size_t dn;
	int k = gdb_parse_xfer(s, len, &d, &dn);
	if (k != -1 && ((k != 'm' && k != 'l') || d != s + 1 || dn != len - 1)) abort();

	char href[64];
	size_t from = 0, at, end;
	while (gdb_parse_include(s, from, &at, &end, href, sizeof href) == 0) {
		if (at < from || end <= at || end > len || strlen(href) >= sizeof href) abort();
		from = end; /* each include is found once: the walk always moves on */
	}
	free(mem);
	free(regs);
	free(s);
	return 0;
}
