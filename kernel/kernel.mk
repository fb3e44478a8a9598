# kernel/kernel.mk: builds build/kernel.elf and build/kernel-nofp.elf, each with a symbol table
# baked in by a multi-pass link.
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

KCFLAGS_COMMON := -std=c11 -ffreestanding -fno-builtin -fno-stack-protector -fno-pic -fno-pie \
	   -mno-red-zone -mcmodel=kernel -mgeneral-regs-only -mno-sse -mno-mmx \
	   -fno-optimize-sibling-calls -fno-ipa-icf -fcf-protection=none \
	   -g -O2 -Wall -Wextra -Werror=implicit-function-declaration \
	   -Ikernel -Ikernel/arch/x86_64
# Both builds:
#   -fno-optimize-sibling-calls: a tail call (`jmp`) replaces the caller's frame, return address
#   included, so the caller vanishes from every unwind, frame-pointer or CFI alike; `work chain`'s
#   functions must each keep a frame in the chain.
#   -fno-ipa-icf: `work split`'s three functions have identical bodies on purpose;
#   identical-code folding would merge them into one.
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
KASFLAGS := -g -Ikernel -Ikernel/arch/x86_64
KLDFLAGS := -nostdlib -no-pie -z max-page-size=0x1000 -z noexecstack -T kernel/kernel.ld

KSRCS_C := $(wildcard kernel/*.c kernel/arch/x86_64/*.c)
KSRCS_S := $(wildcard kernel/arch/x86_64/*.S)
MKSYMTAB := sh kernel/tools/mksymtab.sh

# $(call KERNEL_VARIANT,NAME,CFLAGS): the rules that compile into $(BUILD)/NAME/ and link
# $(BUILD)/NAME.elf, symbol-table passes and check included. One call per build; $$ is left
# for the $(eval) to expand.
define KERNEL_VARIANT
$(1)_DIR  := $(BUILD)/$(1)
$(1)_OBJS := $(patsubst kernel/%.c,$(BUILD)/$(1)/%.o,$(KSRCS_C)) \
	     $(patsubst kernel/%.S,$(BUILD)/$(1)/%.o,$(KSRCS_S))

$$($(1)_DIR)/%.o: kernel/%.c kernel/kernel.mk
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) -MMD -MP -c $$< -o $$@

$$($(1)_DIR)/%.o: kernel/%.S kernel/kernel.mk
	@mkdir -p $$(dir $$@)
	$$(CC) $$(KASFLAGS) -MMD -MP -c $$< -o $$@

$$($(1)_DIR)/symtab0.S:
	@mkdir -p $$(dir $$@)
	$$(MKSYMTAB) /dev/null > $$@

$$($(1)_DIR)/symtab%.o: $$($(1)_DIR)/symtab%.S
	$$(CC) $$(KASFLAGS) -c $$< -o $$@

$$($(1)_DIR)/kernel0.elf: $$($(1)_OBJS) $$($(1)_DIR)/symtab0.o kernel/kernel.ld
	$$(LD) $$(KLDFLAGS) -o $$@ $$($(1)_OBJS) $$($(1)_DIR)/symtab0.o

$$($(1)_DIR)/symtab1.S: $$($(1)_DIR)/kernel0.elf kernel/tools/mksymtab.sh
	$$(MKSYMTAB) $$< > $$@

$$($(1)_DIR)/kernel1.elf: $$($(1)_OBJS) $$($(1)_DIR)/symtab1.o kernel/kernel.ld
	$$(LD) $$(KLDFLAGS) -o $$@ $$($(1)_OBJS) $$($(1)_DIR)/symtab1.o

# The check that makes the table trustworthy: regenerate from the final image and compare.
$(BUILD)/$(1).elf: $$($(1)_DIR)/kernel1.elf
	$$(MKSYMTAB) $$< > $$($(1)_DIR)/symtab-check.S
	@cmp -s $$($(1)_DIR)/symtab1.S $$($(1)_DIR)/symtab-check.S || \
	  { echo "$(1): final link moved symbols relative to the baked-in table" >&2; exit 1; }
	cp $$< $$@

-include $$($(1)_OBJS:.o=.d)
endef

$(eval $(call KERNEL_VARIANT,kernel,$(KCFLAGS_COMMON) $(KCFLAGS_FP)))
$(eval $(call KERNEL_VARIANT,kernel-nofp,$(KCFLAGS_COMMON) $(KCFLAGS_NOFP)))

kernel: $(BUILD)/kernel.elf $(BUILD)/kernel-nofp.elf

# Host unit tests of kernel logic that needs no hardware (stack walks, symbols, printf).
KHOST_SRCS := tests/kernel/test_kernel_host.c kernel/stacktrace.c kernel/symtab.c kernel/printf.c \
	      kernel/string.c
$(BUILD)/kernel-host-tests: $(KHOST_SRCS) $(wildcard kernel/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KHOST_SRCS)

# Host unit tests of the PMU decision and overflow logic against a simulated CPU: sim_cpu.c
# implements hal/pmu.h in place of arch/x86_64/pmu_hal.c.
KPMU_SRCS := tests/kernel/test_pmu_host.c tests/kernel/sim_cpu.c kernel/pmu_x86.c kernel/printf.c \
	     kernel/string.c
$(BUILD)/kernel-pmu-tests: $(KPMU_SRCS) tests/kernel/sim_cpu.h $(wildcard kernel/*.h kernel/hal/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KPMU_SRCS)

.PHONY: kernel-unit
kernel-unit: $(BUILD)/kernel-host-tests $(BUILD)/kernel-pmu-tests
	$(BUILD)/kernel-host-tests
	$(BUILD)/kernel-pmu-tests
