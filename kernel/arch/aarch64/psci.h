/* SPDX-License-Identifier: MIT */
/* psci.h: the Power State Coordination Interface calls QEMU's virt machine answers over HVC. */
#ifndef PSCI_H
#define PSCI_H
#include <stdint.h>

#define PSCI_VERSION 0x84000000u
#define PSCI_CPU_ON 0xc4000003u		/* SMC64: target MPIDR, entry, context id */
#define PSCI_AFFINITY_INFO 0xc4000004u	/* SMC64: 0 on, 1 off, 2 on pending, <0 no such CPU */
#define PSCI_SYSTEM_OFF 0x84000008u
#define PSCI_SUCCESS 0

int64_t psci_call(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3);
#endif
