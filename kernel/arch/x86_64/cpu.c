/* SPDX-License-Identifier: MIT */
/* cpu.c: per-CPU GDT and TSS (with IST stacks for NMI, #DF, #MC), the shared IDT, GS base. */
#include "cpu.h"
#include "lib.h"
#include "mem.h"
#include "panic.h"
#include "trap.h"
#include "x86.h"

#define MSR_GS_BASE 0xc0000101		/* SDM vol. 4, table 2-2 */
#define SEG_KCODE 0x08
#define SEG_KDATA 0x10
#define SEG_TSS 0x18
#define IST_NMI 1
#define IST_DF 2
#define IST_MC 3

struct cpu cpus[MAX_CPUS];
int ncpu = 1;

struct idt_entry {
	uint16_t off_lo, sel;
	uint8_t ist, type;		/* type 0x8e = present, DPL 0, 64-bit interrupt gate */
	uint16_t off_mid;
	uint32_t off_hi, zero;
} __attribute__((packed));

struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

static struct idt_entry idt[256];
extern uint64_t vector_table[256];	/* entry.S */

void idt_init(void)
{
	for (int v = 0; v < 256; v++) {
		uint64_t a = vector_table[v];
		idt[v] = (struct idt_entry){
			.off_lo = (uint16_t)a, .sel = SEG_KCODE, .ist = 0, .type = 0x8e,
			.off_mid = (uint16_t)(a >> 16), .off_hi = (uint32_t)(a >> 32),
		};
	}
	/* NMI, #DF and #MC can arrive on a broken stack: give them their own (IST). */
	idt[T_NMI].ist = IST_NMI;
	idt[T_DF].ist = IST_DF;
	idt[T_MC].ist = IST_MC;
}

static uint8_t *ist_alloc(void)
{
	uint8_t *s = kzalloc(IST_STACK_SIZE);
	if (!s)
		panic("cpu: out of memory for IST stacks");
	return s;
}

void cpu_init(struct cpu *c)
{
	c->self = c;
	c->ist_nmi = ist_alloc();
	c->ist_df = ist_alloc();
	c->ist_mc = ist_alloc();
	memset(&c->tss, 0, sizeof(c->tss));
	c->tss.ist[IST_NMI - 1] = (uint64_t)(c->ist_nmi + IST_STACK_SIZE);
	c->tss.ist[IST_DF - 1] = (uint64_t)(c->ist_df + IST_STACK_SIZE);
	c->tss.ist[IST_MC - 1] = (uint64_t)(c->ist_mc + IST_STACK_SIZE);
	c->tss.iomap = sizeof(c->tss);	/* no I/O permission bitmap */

	uint64_t base = (uint64_t)&c->tss, limit = sizeof(c->tss) - 1;
	c->gdt[0] = 0;
	c->gdt[1] = 0x00af9a000000ffffull;	/* 64-bit code, DPL 0 */
	c->gdt[2] = 0x00cf92000000ffffull;	/* data */
	/* 64-bit available TSS (type 9), present: a 16-byte descriptor (SDM vol. 3A 8.2.3). */
	c->gdt[3] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
		    ((limit >> 16) & 0xf) << 48 | ((base >> 24) & 0xff) << 56;
	c->gdt[4] = base >> 32;

	struct desc_ptr gdtr = { sizeof(c->gdt) - 1, (uint64_t)c->gdt };
	struct desc_ptr idtr = { sizeof(idt) - 1, (uint64_t)idt };
	__asm__ volatile(
		"lgdt %0\n\t"
		"mov %2, %%ds\n\t"
		"mov %2, %%es\n\t"
		"mov %2, %%ss\n\t"
		"pushq %1\n\t"		/* reload CS with a far return */
		"leaq 1f(%%rip), %%rax\n\t"
		"pushq %%rax\n\t"
		"lretq\n"
		"1:\n\t"
		"ltr %w3\n\t"
		"lidt %4"
		:: "m"(gdtr), "i"(SEG_KCODE), "r"((uint64_t)SEG_KDATA), "r"(SEG_TSS), "m"(idtr)
		: "rax", "memory");
	wrmsr(MSR_GS_BASE, (uint64_t)c);	/* mycpu() reads gs:0 */
}

int cpu_online_count(void)
{
	int n = 0;
	for (int i = 0; i < ncpu; i++)
		n += cpus[i].online != 0;
	return n;
}
