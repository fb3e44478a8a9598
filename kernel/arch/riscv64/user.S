/* SPDX-License-Identifier: MIT */
/* user.S (riscv64): `work user`, a task that drops to U-mode and spins there until it is stopped. */
/*
 * enter_user(&t->killed) does not return: with interrupts off (a trap between writing sepc and
 * sret would overwrite it) it sets sepc to user_spin, sstatus.SPP to U and SPIE on, and srets.
 * user_spin runs in U-mode on the task's own stack (satp is Bare and OpenSBI's PMP gives U-mode
 * the kernel's RAM, so it reads its killed flag itself); a trap from it lands on that stack like
 * any other (entry.S), and sret takes it back to U-mode. Once the flag is set it makes an ecall,
 * which trap.c turns into task_exit(). It leaves tp and gp alone: entry.S does not restore them.
 */
#define SSTATUS_SIE (1 << 1)
#define SSTATUS_SPIE (1 << 5)
#define SSTATUS_SPP (1 << 8)

	.text
	.balign 4
	.globl enter_user
	.type enter_user, %function
enter_user:
	csrci sstatus, SSTATUS_SIE
	la t0, user_spin
	csrw sepc, t0
	li t0, SSTATUS_SPP
	csrc sstatus, t0
	li t0, SSTATUS_SPIE
	csrs sstatus, t0
	li s0, 0
	li ra, 0
	sret
	.size enter_user, . - enter_user

	.globl user_spin
	.type user_spin, %function
user_spin:				/* a0 = &killed, in U-mode */
1:	lw t0, 0(a0)
	bnez t0, 3f
	li t1, 4096
2:	addi t1, t1, -1
	bnez t1, 2b
	j 1b
3:	ecall				/* stopped: trap.c ends the task */
	j 3b
	.size user_spin, . - user_spin
