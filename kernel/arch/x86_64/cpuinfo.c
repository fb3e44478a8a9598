/* SPDX-License-Identifier: MIT */
/* cpuinfo.c: reads and prints the CPUID leaves lscpu shows (vendor, model, hypervisor, PMU). */
#include "cpuinfo.h"
#include "x86.h"

#define CPUID1_ECX_HYPERVISOR (1u << 31)
#define CPUID_EXT_AMD_PERFCTR_CORE (1u << 23)	/* 0x80000001 ECX, AMD APM vol. 3 E.4.2 */
#define CPUID_AMD_PERFMON_V2 (1u << 0)		/* 0x80000022 EAX */

static void regs_str(char *dst, uint32_t a, uint32_t b, uint32_t c)
{
	memcpy(dst, &a, 4);
	memcpy(dst + 4, &b, 4);
	memcpy(dst + 8, &c, 4);
	dst[12] = 0;
}

void cpuinfo_read(struct cpuinfo *ci)
{
	uint32_t r[4];
	memset(ci, 0, sizeof(*ci));
	cpuid(0, 0, r);
	ci->max_leaf = r[0];
	regs_str(ci->vendor, r[1], r[3], r[2]);		/* EBX EDX ECX */
	cpuid(1, 0, r);
	uint32_t base_family = (r[0] >> 8) & 0xf, base_model = (r[0] >> 4) & 0xf;
	ci->family = base_family == 0xf ? base_family + ((r[0] >> 20) & 0xff) : base_family;
	ci->model = (base_family == 0x6 || base_family == 0xf) ? base_model | ((r[0] >> 12) & 0xf0) : base_model;
	ci->stepping = r[0] & 0xf;
	ci->hypervisor = (r[2] & CPUID1_ECX_HYPERVISOR) != 0;
	if (ci->hypervisor) {
		cpuid(0x40000000, 0, r);
		regs_str(ci->hv_vendor, r[1], r[2], r[3]);	/* EBX ECX EDX */
	}
	if (ci->max_leaf >= 0xa) {
		cpuid(0xa, 0, r);
		ci->pm_version = r[0] & 0xff;
		ci->pm_gp_counters = (r[0] >> 8) & 0xff;
		ci->pm_gp_width = (r[0] >> 16) & 0xff;
		ci->pm_events_unavailable = r[1];
		if (ci->pm_version >= 2) {
			ci->pm_fixed_counters = r[3] & 0x1f;
			ci->pm_fixed_width = (r[3] >> 5) & 0xff;
		}
	}
	cpuid(0x80000000, 0, r);
	ci->max_ext_leaf = r[0];
	if (ci->max_ext_leaf >= 0x80000001) {
		cpuid(0x80000001, 0, r);
		ci->amd_perfctr_core = (r[2] & CPUID_EXT_AMD_PERFCTR_CORE) != 0;
	}
	if (ci->max_ext_leaf >= 0x80000022) {
		cpuid(0x80000022, 0, r);
		ci->amd_perfmon_v2 = (r[0] & CPUID_AMD_PERFMON_V2) != 0;
	}
}

void cpuinfo_print(struct out *o, const struct cpuinfo *ci)
{
	out_printf(o, "vendor:      %s\n", ci->vendor);
	out_printf(o, "model:       family 0x%x model 0x%x stepping %u\n", ci->family, ci->model, ci->stepping);
	if (ci->hypervisor)
		out_printf(o, "hypervisor:  yes, vendor \"%s\"\n", ci->hv_vendor);
	else
		out_puts(o, "hypervisor:  no\n");
	if (ci->max_leaf >= 0xa)
		out_printf(o, "intel pmu:   cpuid 0xa version %u, %u gp counters x %u bits, %u fixed x %u bits, "
			   "events unavailable mask 0x%x\n", ci->pm_version, ci->pm_gp_counters, ci->pm_gp_width,
			   ci->pm_fixed_counters, ci->pm_fixed_width, ci->pm_events_unavailable);
	else
		out_printf(o, "intel pmu:   not claimed (max cpuid leaf 0x%x < 0xa)\n", ci->max_leaf);
	out_printf(o, "amd pmu:     PerfCtrExtCore %s, PerfMonV2 %s\n",
		   ci->amd_perfctr_core ? "yes" : "no", ci->amd_perfmon_v2 ? "yes" : "no");
}
