/* SPDX-License-Identifier: MIT */
/* sbi.h: the Supervisor Binary Interface calls the kernel makes to OpenSBI (SBI spec v1.0). */
#ifndef SBI_H
#define SBI_H
#include <stdint.h>

/* Extension ids (a7) and function ids (a6), SBI spec v1.0.0 chapters 4-11. */
#define SBI_EXT_BASE 0x10
#define SBI_BASE_GET_SPEC_VERSION 0
#define SBI_BASE_GET_IMPL_ID 1
#define SBI_BASE_GET_IMPL_VERSION 2
#define SBI_BASE_PROBE_EXT 3
#define SBI_BASE_GET_MVENDORID 4
#define SBI_BASE_GET_MARCHID 5
#define SBI_BASE_GET_MIMPID 6
#define SBI_EXT_TIME 0x54494d45		/* "TIME": set_timer (fid 0) */
#define SBI_EXT_IPI 0x735049		/* "sPI": send_ipi(hart_mask, hart_mask_base) (fid 0) */
#define SBI_EXT_HSM 0x48534d		/* "HSM" */
#define SBI_HSM_HART_START 0		/* hartid, start_addr, opaque (a1 at entry) */
#define SBI_HSM_HART_GET_STATUS 2	/* 0 started, 1 stopped, 2 start pending, ... */
#define SBI_EXT_SRST 0x53525354		/* "SRST": system_reset(type, reason) (fid 0) */
#define SBI_SRST_SHUTDOWN 0
#define SBI_EXT_PMU 0x504d55		/* "PMU" */
/* its functions: pmu_riscv.c (the decision logic is host-tested without this header) */

#define SBI_SUCCESS 0
#define SBI_ERR_NOT_SUPPORTED (-2)
#define SBI_ERR_INVALID_PARAM (-3)

struct sbiret {
	long error;			/* SBI_SUCCESS or a negative SBI_ERR_* */
	unsigned long value;
};
struct sbiret sbi_call(unsigned long ext, unsigned long fid, unsigned long a0, unsigned long a1,
		       unsigned long a2, unsigned long a3, unsigned long a4);
int sbi_has(unsigned long ext);		/* BASE probe_extension: non-zero if implemented */
#endif
