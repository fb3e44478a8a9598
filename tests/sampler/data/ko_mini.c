/* ko_mini.c: a stand-in kernel module for test_kofile.c -- an ET_REL object with a .modinfo, two
 * text sections, an inlined function and DWARF (built with gcc -c -g -O1 -fno-asynchronous-unwind-tables: .debug_frame,
 * as kbuild builds modules). Not a real module: nothing here runs. */
__attribute__((section(".modinfo"), used, aligned(1)))
static const char modinfo[] = "license=MIT\0vermagic=6.1.0-57-amd64 SMP preempt mod_unload modversions \0name=ko_mini";

volatile int sink;

__attribute__((noinline)) int ko_leaf(int x)
{
	for (int i = 0; i < x; i++) sink += i;
	return sink;
}

static inline __attribute__((always_inline)) int ko_inl(int x)
{
	return ko_leaf(x + 1) * 3;
}

__attribute__((noinline)) int ko_mid(int x)
{
	return ko_inl(x) + sink;
}

__attribute__((noinline, section(".text.unlikely"))) int ko_cold(int x)
{
	return ko_mid(x) + 7;
}
