/* tiny.c: a small freestanding "kernel" for the analysis golden tests (tiny.elf is built from it
 * by tests/analysis/regen_golden.py --elf and committed): a few functions, one inlined helper. */
volatile unsigned long sink;

static inline __attribute__((always_inline)) void mix(unsigned long v)
{
	for (unsigned long i = 0; i < v; i++)
		sink = sink * 31 + i;
}

__attribute__((noinline)) void leaf_a(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void leaf_b(unsigned long n)
{
	mix(n);
	sink ^= n;
}

__attribute__((noinline)) void middle(unsigned long n)
{
	leaf_a(n);
	mix(n >> 1);
	leaf_b(n);
}

__attribute__((noinline)) void start_kernel(void)
{
	for (;;) {
		middle(100);
		leaf_a(7);
		__asm__ volatile("hlt");
	}
}
