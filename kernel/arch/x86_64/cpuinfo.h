/* SPDX-License-Identifier: MIT */
/* cpuinfo.h: what CPUID says about the part, including its performance-monitoring claims. */
#ifndef CPUINFO_H
#define CPUINFO_H
#include <stdint.h>
#include "lib.h"

struct cpuinfo {
	char vendor[13];		/* "GenuineIntel", "AuthenticAMD", ... */
	uint32_t family, model, stepping;
	int hypervisor;			/* CPUID.1:ECX[31] */
	char hv_vendor[13];		/* CPUID 0x40000000 EBX/ECX/EDX, if hypervisor */
	uint32_t max_leaf, max_ext_leaf;
	/* Intel architectural perfmon, CPUID 0xA (SDM vol. 3B 20.2) */
	uint32_t pm_version, pm_gp_counters, pm_gp_width, pm_fixed_counters, pm_fixed_width;
	uint32_t pm_events_unavailable;	/* EBX: a set bit = event NOT available */
	/* AMD: CPUID 0x80000001 ECX[23] PerfCtrExtCore, 0x80000022 EAX[0] PerfMonV2 */
	int amd_perfctr_core, amd_perfmon_v2;
};

void cpuinfo_read(struct cpuinfo *ci);
void cpuinfo_print(struct out *o, const struct cpuinfo *ci);
#endif
