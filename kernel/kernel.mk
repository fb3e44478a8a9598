# kernel/kernel.mk: builds build/kernel.elf, with a symbol table baked in by a multi-pass link.
#
# Pass 0 links with an empty table; the table generated from pass 0 is linked into pass 1;
# the table generated from pass 1 must equal the one inside it, or the build fails. The table
# lives in its own section after all code, so its size never moves a function.

KBUILD  := $(BUILD)/kernel
KCFLAGS := -std=c11 -ffreestanding -fno-builtin -fno-stack-protector -fno-pic -fno-pie \
	   -mno-red-zone -mcmodel=kernel -mgeneral-regs-only -mno-sse -mno-mmx \
	   -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	   -fno-optimize-sibling-calls -fno-shrink-wrap -fno-ipa-icf -fcf-protection=none \
	   -pg -mnop-mcount -fno-schedule-insns2 \
	   -fno-asynchronous-unwind-tables \
	   -g -O2 -Wall -Wextra -Werror=implicit-function-declaration \
	   -Ikernel -Ikernel/arch/x86_64
# -fno-optimize-sibling-calls: a tail call would replace the caller's frame, and the
#   frame-pointer chain would skip it. -fno-shrink-wrap: otherwise GCC sets up the frame only
#   on paths that make calls, and a function spinning on its leaf path has no frame at all.
#   -pg -mnop-mcount: GCC 12 drops the frame of any leaf function that needs no stack, even
#   with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer; -pg makes it keep one in every
#   function, and -mnop-mcount turns the profiling call into a 5-byte NOP (nothing is called).
#   -fno-schedule-insns2 keeps the body from being scheduled past the `pop %rbp`.
#   -fno-ipa-icf: `work split`'s three functions have
#   identical bodies on purpose; identical-code folding would merge them into one.
KASFLAGS := -g -Ikernel -Ikernel/arch/x86_64
KLDFLAGS := -nostdlib -no-pie -z max-page-size=0x1000 -z noexecstack -T kernel/kernel.ld

KSRCS_C := $(wildcard kernel/*.c kernel/arch/x86_64/*.c)
KSRCS_S := $(wildcard kernel/arch/x86_64/*.S)
KOBJS   := $(patsubst kernel/%.c,$(KBUILD)/%.o,$(KSRCS_C)) \
	   $(patsubst kernel/%.S,$(KBUILD)/%.o,$(KSRCS_S))
KDEPS   := $(KOBJS:.o=.d)

kernel: $(BUILD)/kernel.elf

$(KBUILD)/%.o: kernel/%.c kernel/kernel.mk
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -MMD -MP -c $< -o $@

$(KBUILD)/%.o: kernel/%.S kernel/kernel.mk
	@mkdir -p $(dir $@)
	$(CC) $(KASFLAGS) -MMD -MP -c $< -o $@

MKSYMTAB := sh kernel/tools/mksymtab.sh

$(KBUILD)/symtab0.S:
	@mkdir -p $(dir $@)
	$(MKSYMTAB) /dev/null > $@

$(KBUILD)/symtab%.o: $(KBUILD)/symtab%.S
	$(CC) $(KASFLAGS) -c $< -o $@

$(KBUILD)/kernel0.elf: $(KOBJS) $(KBUILD)/symtab0.o kernel/kernel.ld
	$(LD) $(KLDFLAGS) -o $@ $(KOBJS) $(KBUILD)/symtab0.o

$(KBUILD)/symtab1.S: $(KBUILD)/kernel0.elf kernel/tools/mksymtab.sh
	$(MKSYMTAB) $< > $@

$(KBUILD)/kernel1.elf: $(KOBJS) $(KBUILD)/symtab1.o kernel/kernel.ld
	$(LD) $(KLDFLAGS) -o $@ $(KOBJS) $(KBUILD)/symtab1.o

# The check that makes the table trustworthy: regenerate from the final image and compare.
$(BUILD)/kernel.elf: $(KBUILD)/kernel1.elf
	$(MKSYMTAB) $< > $(KBUILD)/symtab-check.S
	@cmp -s $(KBUILD)/symtab1.S $(KBUILD)/symtab-check.S || \
	  { echo "kernel: final link moved symbols relative to the baked-in table" >&2; exit 1; }
	cp $< $@

-include $(KDEPS)

# Host unit tests of kernel logic that needs no hardware (stack walks, symbols, printf).
KHOST_SRCS := tests/kernel/test_kernel_host.c kernel/stacktrace.c kernel/symtab.c kernel/printf.c \
	      kernel/string.c
$(BUILD)/kernel-host-tests: $(KHOST_SRCS) $(wildcard kernel/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KHOST_SRCS)

# Host unit tests of the PMU decision and overflow logic against a simulated CPU: sim_cpu.c
# implements hal/pmu.h in place of arch/x86_64/pmu_hal.c.
KPMU_SRCS := tests/kernel/test_pmu_host.c tests/kernel/sim_cpu.c kernel/pmu.c kernel/printf.c \
	     kernel/string.c
$(BUILD)/kernel-pmu-tests: $(KPMU_SRCS) tests/kernel/sim_cpu.h $(wildcard kernel/*.h kernel/hal/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Ikernel -Ikernel/arch/x86_64 \
	  -Dvsnprintf=k_vsnprintf -Dsnprintf=k_snprintf -o $@ $(KPMU_SRCS)

.PHONY: kernel-unit
kernel-unit: $(BUILD)/kernel-host-tests $(BUILD)/kernel-pmu-tests
	$(BUILD)/kernel-host-tests
	$(BUILD)/kernel-pmu-tests
