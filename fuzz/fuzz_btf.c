/* SPDX-License-Identifier: MIT */
/* fuzz_btf.c: libFuzzer harness -- a Linux image's BTF from arbitrary bytes (guestos_linux_btf,
 * through libbpf), then the task identity it lays out decoded from the input's tail. */
#include "../sampler/guestos.h"
#include "../sampler/task.h"
#include <stdlib.h>
#include <string.h>

/* Input: u16 BTF length, the BTF bytes, then bytes decoded as a task struct's identity span.
 * Seeds: BTF written by libbpf's btf__add_* (6.1's current_task, 6.2's pcpu_hot), as in
 * tests/sampler/test_task.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct guestos os;
	if (size < 2) return 0;
	size_t n = (size_t)data[0] | (size_t)data[1] << 8;
	if (n > size - 2) n = size - 2;
	uint8_t *btf = malloc(n ? n : 1); /* exact size: ASan sees any read past it */
	if (!btf) return 0;
	memcpy(btf, data + 2, n);
	memset(&os, 0, sizeof os);
	int rc = guestos_linux_btf(&os, btf, n);
	if ((rc == 0) != (os.os == OS_LINUX) || (rc < 0 && !os.why[0])) abort();
	if (rc == 0) {
		uint32_t lo, len;
		task_span(&os, &lo, &len);
		if (os.comm_len > TASK_COMM_LEN || len < os.comm_len) abort();
		const uint8_t *tail = data + 2 + n;
		size_t left = size - 2 - n;
		if (len <= 1 << 20) {
			uint8_t *span = calloc(1, len ? len : 1);
			struct task_id id;
			if (span) {
				memcpy(span, tail, left < len ? left : len);
				if (task_decode(&os, 0xffff888000000000ull, span, len, &id) == 0 &&
				    (id.pid < 0 || id.tgid < 0 || !id.comm[0] || id.comm[TASK_COMM_LEN - 1]))
					abort();
				free(span);
			}
		}
	}
	free(btf);
	return 0;
}
