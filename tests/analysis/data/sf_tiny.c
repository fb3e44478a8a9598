/* sf_tiny.c: a tiny program whose ELF (sf_tiny.elf) gives the speedscope/flamegraph tests
 * function symbols and DWARF lines; built and committed by tests/analysis/regen_golden_visual.py
 * --elf (sf_small.cap is synthesized against it). */
volatile unsigned long sink;

void spin(void)
{
	for (int i = 0; i < 100; i++)
		sink += i;
}

void copy_words(void)
{
	for (int i = 0; i < 50; i++)
		sink ^= i;
}

void work(void)
{
	spin();
	copy_words();
}

void idle_loop(void)
{
	for (;;)
		__asm__ volatile("hlt");
}

void _start(void)
{
	work();
	idle_loop();
}
