/* SPDX-License-Identifier: MIT */
/* boot.S: PVH entry: 32-bit protected mode, paging off -> long mode, upper half, kmain. */
#include "layout.h"

#define PA(x) ((x) - KERNBASE)
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define CR0_PE (1 << 0)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)
#define PTE_P 0x1
#define PTE_W 0x2
#define PTE_PWT 0x8
#define PTE_PCD 0x10
#define PTE_PS 0x80			/* 2 MiB page in a page directory entry */

/*
 * The PVH note: QEMU's -kernel loader finds it in a PT_NOTE segment and starts the
 * kernel at its 32-bit physical address with EBX = &hvm_start_info (Xen's PVH ABI).
 */
	.section .note.pvh, "a"
	.balign 4
	.long 4				/* name size: "Xen\0" */
	.long 8				/* descriptor size */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.balign 4
	.quad PA(pvh_start32)

	.section .boot.text, "ax"
	.code32
	.globl pvh_start32
pvh_start32:
	cli
	cld
	/* Zero .bss (the page tables live there). hvm_start_info is below 1 MiB, clear of it. */
	mov $PA(__bss_start), %edi
	mov $PA(__bss_end), %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb

	/* Copy hvm_start_info (56 bytes) before anything can overwrite it (EBX is untouched so far). */
	mov %ebx, %esi
	mov $PA(boot_start_info), %edi
	mov $14, %ecx
	rep movsl

	mov $PA(boot_stack_top), %esp

	/*
	 * Page tables. Four page directories of 2 MiB pages map 0..4 GiB. The same PDPT
	 * is hung at PML4[0] (identity: needed while we switch, and by the AP trampoline)
	 * and at PML4[256] (the direct map at DIRECTMAP). PML4[511] -> pdpt_high, whose
	 * entry 510 maps KERNBASE to physical 0 (the first GiB).
	 */
	mov $PA(boot_pd), %edi
	xor %ecx, %ecx			/* ecx = 2 MiB page index, 0 .. 2047 */
1:	mov %ecx, %eax
	shl $21, %eax
	or $(PTE_P | PTE_W | PTE_PS), %eax
	cmp $(3 * 512), %ecx		/* the 4th GiB holds MMIO (LAPIC, IOAPIC): uncached */
	jb 2f
	or $(PTE_PCD | PTE_PWT), %eax
2:	mov %eax, (%edi, %ecx, 8)
	mov %ecx, %eax
	shr $11, %eax			/* high dword: bits 32+ of the address */
	mov %eax, 4(%edi, %ecx, 8)
	inc %ecx
	cmp $(DIRECTMAP_GB * 512), %ecx
	jb 1b

	mov $PA(boot_pdpt_low), %edi
	xor %ecx, %ecx
3:	mov %ecx, %eax
	shl $12, %eax
	add $(PA(boot_pd) + PTE_P + PTE_W), %eax
	mov %eax, (%edi, %ecx, 8)
	inc %ecx
	cmp $DIRECTMAP_GB, %ecx
	jb 3b

	movl $(PA(boot_pd) + PTE_P + PTE_W), PA(boot_pdpt_high) + 510 * 8
	movl $(PA(boot_pdpt_low) + PTE_P + PTE_W), PA(boot_pml4)
	movl $(PA(boot_pdpt_low) + PTE_P + PTE_W), PA(boot_pml4) + 256 * 8
	movl $(PA(boot_pdpt_high) + PTE_P + PTE_W), PA(boot_pml4) + 511 * 8

	/* Long mode: PAE, CR3, EFER.LME, then paging on. */
	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $PA(boot_pml4), %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	mov %cr0, %eax
	or $(CR0_PG | CR0_PE), %eax
	mov %eax, %cr0

	lgdt PA(boot_gdtr)
	ljmp $0x08, $PA(boot_long)

	.code64
boot_long:
	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	xor %eax, %eax
	mov %eax, %fs
	mov %eax, %gs
	movabs $boot_high, %rax		/* leave the identity map for the upper half */
	jmp *%rax
boot_high:
	/*
	 * CFI: the outermost frame of the boot CPU, whose idle loop runs under kmain forever.
	 * An undefined return address is how DWARF says "no caller": unwinders stop here
	 * cleanly instead of reading past the top of boot_stack.
	 */
	.cfi_startproc
	.cfi_undefined rip
	movabs $boot_stack_top, %rsp
	xor %ebp, %ebp			/* ends every frame-pointer walk on the boot CPU */
	movabs $boot_start_info, %rdi
	call kmain
4:	cli
	hlt
	jmp 4b
	.cfi_endproc

	.section .rodata
	.balign 16
boot_gdt:
	.quad 0				/* null */
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
boot_gdt_end:
	.globl boot_gdtr
boot_gdtr:
	.word boot_gdt_end - boot_gdt - 1
	.quad PA(boot_gdt)

	.bss
	.balign 4096
	.globl boot_pml4
boot_pml4:	.space 4096
boot_pdpt_low:	.space 4096
boot_pdpt_high:	.space 4096
boot_pd:	.space 4096 * DIRECTMAP_GB
	.globl boot_stack, boot_stack_top
boot_stack:	.space BOOT_STACK_SIZE
boot_stack_top:
	.globl boot_start_info
	.balign 8
boot_start_info: .space 56
