/* SPDX-License-Identifier: MIT */
/* fuzz_conn.c: libFuzzer harness -- the /proc/net/tcp and /proc/net/unix row parsers the busy-stub
 * check reads (conn_parse_tcprow, conn_parse_unixrow), one row a line. */
#include "../sampler/conn.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *e = p + size;
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
		char *line = malloc(len + 1);
		if (!line) return 0;
		memcpy(line, p, len);
		line[len] = 0;
		struct conn_tcprow t;
		struct conn_unixrow u;
		if (conn_parse_tcprow(line, &t) == 0 && (strlen(t.local) >= sizeof t.local || strlen(t.remote) >= sizeof t.remote))
			abort();
		if (conn_parse_unixrow(line, &u) == 0 && strlen(u.path) >= sizeof u.path) abort();
		free(line);
		p += len + 1;
	}
	return 0;
}
