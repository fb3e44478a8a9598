# SPDX-License-Identifier: MIT
# kernel/kernel.mk: builds build/kernel.elf and build/kernel-nofp.elf (x86_64), build/aarch64/kernel.elf
# and build/aarch64/kernel-nofp.elf, build/riscv64/kernel.elf and build/riscv64/kernel-nofp.elf (QEMU virt;
# ARCH= picks architectures), each with a symbol table baked in by a multi-pass link.
#
# Pass 0 links with an empty table; the table generated from pass 0 is linked into pass 1;
# the table generated from pass 1 must equal the one inside it, or the build fails. The table
# lives in its own section after all code, so its size never moves a function.
#
# Two builds of the same sources, differing only in how their stacks can be walked:
#   kernel.elf       every function keeps a frame pointer: an RBP walk works from anywhere.
#   kernel-nofp.elf  no frame pointers, asynchronous DWARF CFI in .eh_frame instead, as most
#                    kernels and distributions build: for unwinders that read CFI (libdw, GDB)
#                    or tables made from it (ORC). The in-guest profiler and the panic backtrace
#                    walk frame pointers, so on this build their chains stop at the leaf or
#                    after a frame or two: expected. Their walks stay within the known stacks
#                    (stacktrace.c), so an RBP holding data cuts them short and nothing worse;
#                    the shell, `work`, `profile` and `panic` run as on kernel.elf.
# Both keep .eh_frame (kernel.ld): in kernel.elf it holds only the assembly files' CFI (entry
# stubs, context switch, boot), the C code's CFI goes to .debug_frame there.

# The architectures `make` builds a kernel for: all three by default, fewer with e.g. ARCH=riscv64.
ARCH ?= x86_64 aarch64 riscv64
KARCHES := $(filter x86_64 aarch64 riscv64,$(ARCH))
ifneq ($(words $(ARCH)),$(words $(KARCHES)))
$(error ARCH must be some of x86_64 aarch64 riscv64, not '$(ARCH)')
endif

KCFLAGS_COMMON := -std=c11 -ffreestanding -fno-builtin -fno-stack-protector -fno-pic -fno-pie \
	   -fno-optimize-sibling-calls -fno-ipa-icf -g -O2 -Wall -Wextra -Werror=implicit-function-declaration
# Both builds, both arches:
#   -fno-optimize-sibling-calls: a tail call (`jmp`) replaces the caller's frame, return address
#   included, so the caller vanishes from every unwind, frame-pointer or CFI alike; `work chain`'s
#   functions must each keep a frame in the chain.
#   -fno-ipa-icf: `work split`'s three functions have identical bodies on purpose;
#   identical-code folding would merge them into one.
KCFLAGS_X86 := $(KCFLAGS_COMMON) -mno-red-zone -mcmodel=kernel -mgeneral-regs-only -mno-sse -mno-mmx \
	   -fcf-protection=none -Ikernel -Ikernel/arch/x86_64
KCFLAGS_FP := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	   -fno-shrink-wrap -pg -mnop-mcount -fno-schedule-insns2 \
	   -fno-asynchronous-unwind-tables
# kernel.elf only: -fno-shrink-wrap: otherwise GCC sets up the frame only on paths that make
#   calls, and a function spinning on its leaf path has no frame at all.
#   -pg -mnop-mcount: GCC 12 drops the frame of any leaf function that needs no stack, even
#   with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer; -pg makes it keep one in every
#   function, and -mnop-mcount turns the profiling call into a 5-byte NOP (nothing is called).
#   -fno-schedule-insns2 keeps the body from being scheduled past the `pop %rbp`.
#   -fno-asynchronous-unwind-tables: no .eh_frame for C code (-g still writes .debug_frame).
KCFLAGS_NOFP := -fomit-frame-pointer -fasynchronous-unwind-tables
# kernel-nofp.elf only: RBP is a general register; -fasynchronous-unwind-tables makes the CFI
#   exact at every instruction (not only at call sites), so a sample may stop anywhere.
KASFLAGS_X86 := -g -Ikernel -Ikernel/arch/x86_64
# C++ (kernel/cxxwork.cpp, `work symbols`): the build's C flags but the C-only ones, and what a
#   freestanding kernel can link -- no exceptions, RTTI, guarded statics, atexit or libstdc++.
KCFLAGS_C_ONLY := -std=c11 -Werror=implicit-function-declaration
KCXXFLAGS := -std=gnu++17 -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit -nostdinc++
KCXX_x86 = $(CXX)
KCXX_a64 = $(A64_CROSS)g++
KCXX_rv = $(RV_CROSS)g++
KLDFLAGS := -nostdlib -no-pie -z max-page-size=0x1000 -z noexecstack

# aarch64 (QEMU virt): the same sources but the arch directory, with GCC's cross compiler.
#   -mbranch-protection=none: no pointer authentication (-cpu max implements it): a signed
#   return address in a frame record would be garbage to every walker outside the guest.
#   -mno-outline-atomics: atomics inline (LL/SC), not calls into libgcc, which a kernel lacks.
#   -fno-tree-loop-distribute-patterns: string.c's byte loops must not become calls to memcpy.
#   -mno-omit-leaf-frame-pointer gives leaf functions a frame record on aarch64 without -pg
#   (which has no NOP form there); -fno-shrink-wrap as on x86_64.
A64_CROSS ?= aarch64-linux-gnu-
KCC_x86 = $(CC)
KLD_x86 = $(LD)
KNM_x86 = nm
KCC_a64 = $(A64_CROSS)gcc
KLD_a64 = $(A64_CROSS)ld
KNM_a64 = $(A64_CROSS)nm
KCFLAGS_A64 := $(KCFLAGS_COMMON) -mgeneral-regs-only -mbranch-protection=none -mno-outline-atomics \
	   -fno-tree-loop-distribute-patterns -Ikernel -Ikernel/arch/aarch64
KCFLAGS_A64_FP := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-shrink-wrap \
	   -fno-asynchronous-unwind-tables
KASFLAGS_A64 := -g -Ikernel -Ikernel/arch/aarch64

# riscv64 (QEMU virt, S-mode under OpenSBI): the same sources but the arch directory.
#   -march=rv64ima_zicsr_zifencei: no C (compressed) extension, so every instruction is 4 bytes
#   and the unwinder's prologue checks (arch/riscv64/stackwalk.c) read whole words; no F/D: the
#   kernel saves no FP state. -mcmodel=medany: the kernel sits at 0x80200000, above 2 GiB.
#   -mno-relax: no linker relaxation, so a pass's code size never depends on the symbol table.
#   -fno-schedule-insns2 keeps GCC's prologue in its canonical order (sd ra, sd s0, addi s0).
#   GCC 12 still saves no ra in a leaf function's frame: stackwalk.c handles that case.
RV_CROSS ?= riscv64-linux-gnu-
KCC_rv = $(RV_CROSS)gcc
KLD_rv = $(RV_CROSS)ld
KNM_rv = $(RV_CROSS)nm
RV_ARCHFLAGS := -march=rv64ima_zicsr_zifencei -mabi=lp64 -mcmodel=medany -mno-relax
KCFLAGS_RV := $(KCFLAGS_COMMON) $(RV_ARCHFLAGS) -mstrict-align -fno-tree-loop-distribute-patterns \
	   -Ikernel -Ikernel/arch/riscv64
KCFLAGS_RV_FP := -fno-omit-frame-pointer -fno-shrink-wrap -fno-schedule-insns2 -fno-asynchronous-unwind-tables
KASFLAGS_RV := -g $(RV_ARCHFLAGS) -Ikernel -Ikernel/arch/riscv64

KSRCS_SHARED := $(addprefix kernel/,console.c mem.c panic.c pmu.c printf.c prof_report.c profiler.c sched.c \
		shell.c spinlock.c stacktrace.c string.c symtab.c txwait.c work.c cxxwork.cpp)
KSRCS_C := $(KSRCS_SHARED) $(addprefix kernel/,net.c netload.c pci.c pmu_x86.c udpsh.c virtio_net.c) \
	   $(wildcard kernel/arch/x86_64/*.c)
KSRCS_S := $(wildcard kernel/arch/x86_64/*.S)
KSRCS_A64_C := $(KSRCS_SHARED) kernel/pmu_armv8.c $(wildcard kernel/arch/aarch64/*.c)
KSRCS_A64_S := $(wildcard kernel/arch/aarch64/*.S)
KSRCS_RV_C := $(KSRCS_SHARED) kernel/pmu_riscv.c $(wildcard kernel/arch/riscv64/*.c)
KSRCS_RV_S := $(wildcard kernel/arch/riscv64/*.S)
MKSYMTAB := sh kernel/tools/mksymtab.sh

# $(call KERNEL_VARIANT,NAME,CFLAGS,TOOLS (x86|a64|rv: KCC_/KLD_/KNM_),ASFLAGS,LDSCRIPT,C SOURCES,S SOURCES): the rules that
# compile into $(BUILD)/NAME/ and link $(BUILD)/NAME.elf, symbol-table passes and check included.
# One call per build; $$ is left for the $(eval) to expand.
define KERNEL_VARIANT
$(1)_DIR  := $(BUILD)/$(1)
$(1)_OBJS := $(patsubst kernel/%.c,$(BUILD)/$(1)/%.o,$(filter %.c,$(6))) \
	     $(patsubst kernel/%.cpp,$(BUILD)/$(1)/%.o,$(filter %.cpp,$(6))) \
	     $(patsubst kernel/%.S,$(BUILD)/$(1)/%.o,$(7))

$$($(1)_DIR)/%.o: kernel/%.c kernel/kernel.mk
	@mkdir -p $$(dir $$@)
	$$(KCC_$(3)) $(2) -MMD -MP -c $$< -o $$@

$$($(1)_DIR)/%.o: kernel/%.cpp kernel/kernel.mk
	@mkdir -p $$(dir $$@)
	$$(KCXX_$(3)) $$(filter-out $(KCFLAGS_C_ONLY),$(2)) $(KCXXFLAGS) -MMD -MP -c $$< -o $$@

$$($(1)_DIR)/%.o: kernel/%.S kernel/kernel.mk
	@mkdir -p $$(dir $$@)
	$$(KCC_$(3)) $(4) -MMD -MP -c $$< -o $$@

$$($(1)_DIR)/symtab0.S:
	@mkdir -p $$(dir $$@)
	$$(MKSYMTAB) /dev/null > $$@

$$($(1)_DIR)/symtab%.o: $$($(1)_DIR)/symtab%.S
	$$(KCC_$(3)) $(4) -c $$< -o $$@

$$($(1)_DIR)/kernel0.elf: $$($(1)_OBJS) $$($(1)_DIR)/symtab0.o $(5)
	$$(KLD_$(3)) $$(KLDFLAGS) -T $(5) -o $$@ $$($(1)_OBJS) $$($(1)_DIR)/symtab0.o

$$($(1)_DIR)/symtab1.S: $$($(1)_DIR)/kernel0.elf kernel/tools/mksymtab.sh
	NM=$$(KNM_$(3)) $$(MKSYMTAB) $$< > $$@

$$($(1)_DIR)/kernel1.elf: $$($(1)_OBJS) $$($(1)_DIR)/symtab1.o $(5)
	$$(KLD_$(3)) $$(KLDFLAGS) -T $(5) -o $$@ $$($(1)_OBJS) $$($(1)_DIR)/symtab1.o

# The check that makes the table trustworthy: regenerate from the final image and compare.
$(BUILD)/$(1).elf: $$($(1)_DIR)/kernel1.elf
	NM=$$(KNM_$(3)) $$(MKSYMTAB) $$< > $$($(1)_DIR)/symtab-check.S
	@cmp -s $$($(1)_DIR)/symtab1.S $$($(1)_DIR)/symtab-check.S || \
	  { echo "$(1): final link moved symbols relative to the baked-in table" >&2; exit 1; }
	cp $$< $$@

-include $$($(1)_OBJS:.o=.d)
endef

$(eval $(call KERNEL_VARIANT,kernel,$(KCFLAGS_X86) $(KCFLAGS_FP),x86,$(KASFLAGS_X86),kernel/kernel.ld,$(KSRCS_C),$(KSRCS_S)))
$(eval $(call KERNEL_VARIANT,kernel-nofp,$(KCFLAGS_X86) $(KCFLAGS_NOFP),x86,$(KASFLAGS_X86),kernel/kernel.ld,$(KSRCS_C),$(KSRCS_S)))
$(eval $(call KERNEL_VARIANT,aarch64/kernel,$(KCFLAGS_A64) $(KCFLAGS_A64_FP),a64,$(KASFLAGS_A64),kernel/arch/aarch64/kernel.ld,$(KSRCS_A64_C),$(KSRCS_A64_S)))
$(eval $(call KERNEL_VARIANT,aarch64/kernel-nofp,$(KCFLAGS_A64) $(KCFLAGS_NOFP),a64,$(KASFLAGS_A64),kernel/arch/aarch64/kernel.ld,$(KSRCS_A64_C),$(KSRCS_A64_S)))
$(eval $(call KERNEL_VARIANT,riscv64/kernel,$(KCFLAGS_RV) $(KCFLAGS_RV_FP),rv,$(KASFLAGS_RV),kernel/arch/riscv64/kernel.ld,$(KSRCS_RV_C),$(KSRCS_RV_S)))
# kernel-hartrace: each hart started at _start, as OpenSBI's hart_start race may send it (smp.c).
$(eval $(call KERNEL_VARIANT,riscv64/kernel-hartrace,$(KCFLAGS_RV) $(KCFLAGS_RV_FP) -DHART_START_AT_ENTRY,rv,$(KASFLAGS_RV),kernel/arch/riscv64/kernel.ld,$(KSRCS_RV_C),$(KSRCS_RV_S)))
$(eval $(call KERNEL_VARIANT,riscv64/kernel-nofp,$(KCFLAGS_RV) $(KCFLAGS_NOFP),rv,$(KASFLAGS_RV),kernel/arch/riscv64/kernel.ld,$(KSRCS_RV_C),$(KSRCS_RV_S)))

KERNEL_ELFS_x86_64 := $(BUILD)/kernel.elf $(BUILD)/kernel-nofp.elf
KERNEL_ELFS_aarch64 := $(BUILD)/aarch64/kernel.elf $(BUILD)/aarch64/kernel-nofp.elf
KERNEL_ELFS_riscv64 := $(BUILD)/riscv64/kernel.elf $(BUILD)/riscv64/kernel-nofp.elf $(BUILD)/riscv64/shape.elf \
		       $(BUILD)/riscv64/kernel-hartrace.elf

# The shape guest (tests/system/shape): a riscv64 kernel that keeps its running process as xv6
# does (cpus[tp].proc), for the --tasks system test on a kernel of another shape than ours.
SHAPE_SRCS := tests/system/shape/entry.S tests/system/shape/main.c
$(BUILD)/riscv64/shape.elf: $(SHAPE_SRCS) tests/system/shape/shape.ld
	@mkdir -p $(dir $@)
	$(KCC_rv) $(RV_ARCHFLAGS) -ffreestanding -nostdlib -fno-pie -no-pie -static -O2 -g -Wall -Wextra \
	  -fno-omit-frame-pointer -T tests/system/shape/shape.ld -Wl,--build-id=none -o $@ $(SHAPE_SRCS)
kernel: $(foreach a,$(KARCHES),$(KERNEL_ELFS_$(a)))

# Host unit tests of kernel logic that needs no hardware (stack walks, symbols, printf).
KHOST_SRCS := tests/kernel/test_kernel_host.c kernel/stacktrace.c kernel/symtab.c kernel/printf.c \
	      kernel/string.c kernel/txwait.c
$(BUILD)/kernel-host-tests: $(KHOST_SRCS) $(wildcard kernel/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -DHOST_TEST -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KHOST_SRCS)

# Host unit tests of the PMU decision and overflow logic against a simulated CPU: sim_cpu.c
# implements hal/pmu.h in place of arch/x86_64/pmu_hal.c.
KPMU_SRCS := tests/kernel/test_pmu_host.c tests/kernel/sim_cpu.c kernel/pmu.c kernel/pmu_x86.c kernel/printf.c \
	     kernel/string.c
$(BUILD)/kernel-pmu-tests: $(KPMU_SRCS) tests/kernel/sim_cpu.h $(wildcard kernel/*.h kernel/hal/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KPMU_SRCS)

# The same for the Armv8 PMU logic: the test carries its own simulated PMU (hal/pmu_armv8.h).
KPMU_A64_SRCS := tests/kernel/test_pmu_armv8_host.c kernel/pmu.c kernel/pmu_armv8.c kernel/printf.c kernel/string.c
$(BUILD)/kernel-pmu-armv8-tests: $(KPMU_A64_SRCS) $(wildcard kernel/*.h kernel/hal/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KPMU_A64_SRCS)

# The RISC-V PMU logic: the test simulates the SBI PMU firmware and the hart (hal/pmu_riscv.h).
KPMU_RV_SRCS := tests/kernel/test_pmu_riscv_host.c kernel/pmu.c kernel/pmu_riscv.c kernel/printf.c kernel/string.c
$(BUILD)/kernel-pmu-riscv-tests: $(KPMU_RV_SRCS) $(wildcard kernel/*.h kernel/hal/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KPMU_RV_SRCS)

# The riscv64 frame walk (leaf frames without ra, prologue and epilogue words) on literal words:
# the shared walk built with RISC-V's record offset (RISCV_WALK), plus arch/riscv64/stackwalk.c.
KWALK_RV_SRCS := tests/kernel/test_stackwalk_riscv_host.c kernel/stacktrace.c kernel/arch/riscv64/stackwalk.c \
		 kernel/symtab.c kernel/printf.c kernel/string.c
$(BUILD)/kernel-stackwalk-riscv-tests: $(KWALK_RV_SRCS) $(wildcard kernel/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -DHOST_TEST -DRISCV_WALK -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KWALK_RV_SRCS)

.PHONY: kernel-unit
kernel-unit: $(BUILD)/kernel-host-tests $(BUILD)/kernel-pmu-tests $(BUILD)/kernel-pmu-armv8-tests \
	     $(BUILD)/kernel-pmu-riscv-tests $(BUILD)/kernel-stackwalk-riscv-tests
	$(BUILD)/kernel-host-tests
	$(BUILD)/kernel-pmu-tests
	$(BUILD)/kernel-pmu-armv8-tests
	$(BUILD)/kernel-pmu-riscv-tests
	$(BUILD)/kernel-stackwalk-riscv-tests
