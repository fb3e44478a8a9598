# SPDX-License-Identifier: MIT
# sampler/sampler.mk: builds gdbsample, its C unit tests and its benchmark; included by the top Makefile.
BUILD ?= build
SAMPLER_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wno-format-truncation
# libdw (DWARF CFI), libelf, and the codecs a compressed vmlinuz may use (zlib, xz, zstd, lz4).
SAMPLER_LIBS := -lbpf -ldw -lelf -lz -llzma -lzstd -llz4 -pthread
# libcrypto (OpenSSL): SHA-256, the key and the check of a cached decompressed image (imgcache.c).
SAMPLER_LIBS += -lcrypto
# libiberty (binutils' own, static) demangles C++ and Rust names (demangle.c).
SAMPLER_LIBS += -liberty
# ncurses (wide: UTF-8 names) draws `top`'s full-screen view (topscreen.c).
SAMPLER_CURSES_CFLAGS := $(shell pkg-config --cflags ncursesw 2>/dev/null)
SAMPLER_LIBS += $(or $(shell pkg-config --libs ncursesw 2>/dev/null),-lncursesw -ltinfo)
# libvirt is optional: with libvirt-dev (pkg-config libvirt-qemu) --domain works, without it says so.
SAMPLER_LIBVIRT := $(shell pkg-config --exists libvirt-qemu libvirt 2>/dev/null && echo yes)
ifeq ($(SAMPLER_LIBVIRT),yes)
SAMPLER_CFLAGS += -DHAVE_LIBVIRT $(shell pkg-config --cflags libvirt-qemu libvirt)
SAMPLER_LIBS += $(shell pkg-config --libs libvirt-qemu libvirt)
endif
SAMPLER_SRCS := $(sort $(wildcard sampler/*.c))
SAMPLER_OBJS := $(patsubst sampler/%.c,$(BUILD)/sampler/%.o,$(SAMPLER_SRCS))
SAMPLER_LIB_OBJS := $(filter-out $(BUILD)/sampler/main.o,$(SAMPLER_OBJS))
SAMPLER_TEST_SRCS := $(sort $(wildcard tests/sampler/*.c))
SAMPLER_TEST_OBJS := $(patsubst tests/sampler/%.c,$(BUILD)/tests/sampler/%.o,$(SAMPLER_TEST_SRCS))

# CPPFLAGS, CFLAGS and LDFLAGS from the environment come last (a package build's hardening flags).
$(BUILD)/sampler/%.o: sampler/%.c $(wildcard sampler/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLER_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# -Itests: the tests' `#include "check.h"` is tests/check.h, the harness every C test program shares.
$(BUILD)/tests/sampler/%.o: tests/sampler/%.c $(wildcard sampler/*.h tests/sampler/*.h) tests/check.h
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLER_CFLAGS) -Itests -c -o $@ $<

$(BUILD)/sampler/topscreen.o: SAMPLER_CFLAGS += $(SAMPLER_CURSES_CFLAGS)

# virt.o and cli.o depend on whether libvirt was found: a stamp holding the answer rebuilds them.
$(BUILD)/sampler/libvirt.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SAMPLER_LIBVIRT)' | cmp -s - $@ || echo '$(SAMPLER_LIBVIRT)' > $@
$(BUILD)/sampler/virt.o $(BUILD)/sampler/cli.o: $(BUILD)/sampler/libvirt.stamp
.PHONY: FORCE
FORCE:

# --version prints the top-level VERSION file (the one place the version lives), built into main.o.
$(BUILD)/sampler/main.o: SAMPLER_CFLAGS += -DGDBSAMPLE_VERSION='"$(GDBSAMPLE_VERSION)"'
$(BUILD)/sampler/main.o: VERSION

$(BUILD)/gdbsample: $(SAMPLER_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(SAMPLER_LIBS)

$(BUILD)/sampler-tests: $(SAMPLER_TEST_OBJS) $(SAMPLER_LIB_OBJS) $(BUILD)/tests/sampler/cfi_frames.elf \
		       $(BUILD)/tests/sampler/cfi_frames_a64.elf $(BUILD)/tests/sampler/cfi_frames_rv.elf \
		       $(BUILD)/aarch64/kernel.elf $(BUILD)/aarch64/kernel-nofp.elf $(BUILD)/kernel.elf $(BUILD)/riscv64/kernel.elf \
		       $(BUILD)/tests/sampler/ko_mini.ko $(BUILD)/tests/sampler/task_shapes.elf
	$(CC) -o $@ $(SAMPLER_TEST_OBJS) $(SAMPLER_LIB_OBJS) $(SAMPLER_LIBS)

# An ELF with known CFI for the CFI unwinder's test (its path is compiled into test_cfi.o).
$(BUILD)/tests/sampler/cfi_frames.elf: tests/sampler/data/cfi_frames.S
	@mkdir -p $(dir $@)
	$(CC) -nostdlib -static -no-pie -Wl,-Ttext=0x401000 -Wl,-e,start -Wl,--build-id=none -o $@ $<
# ...and its aarch64 twin (GCC-style frame records, a signal-frame exception entry).
A64_CC ?= $(or $(A64_CROSS),aarch64-linux-gnu-)gcc
$(BUILD)/tests/sampler/cfi_frames_a64.elf: tests/sampler/data/cfi_frames_a64.S
	@mkdir -p $(dir $@)
	$(A64_CC) -nostdlib -static -no-pie -Wl,-Ttext=0x40080000 -Wl,-e,start -Wl,--build-id=none -o $@ $<
# ...and its riscv64 one (a trap entry with the alternate return column, 64).
RV_CC ?= riscv64-linux-gnu-gcc
$(BUILD)/tests/sampler/cfi_frames_rv.elf: tests/sampler/data/cfi_frames_rv.S
	@mkdir -p $(dir $@)
	$(RV_CC) -nostdlib -static -no-pie -Wl,-Ttext=0x80200000 -Wl,-e,start -Wl,--build-id=none -o $@ $<
$(BUILD)/tests/sampler/test_cfi.o: SAMPLER_CFLAGS += -DCFI_FRAMES_ELF='"$(BUILD)/tests/sampler/cfi_frames.elf"' \
	-DCFI_FRAMES_A64_ELF='"$(BUILD)/tests/sampler/cfi_frames_a64.elf"' \
	-DCFI_FRAMES_RV_ELF='"$(BUILD)/tests/sampler/cfi_frames_rv.elf"'
# test_insn checks the frame-setup rules at every instruction of our aarch64 kernel against its CFI.
$(BUILD)/tests/sampler/test_insn.o: SAMPLER_CFLAGS += -DA64_KERNEL='"$(BUILD)/aarch64/kernel.elf"' \
	-DA64_KERNEL_NOFP='"$(BUILD)/aarch64/kernel-nofp.elf"'
$(BUILD)/tests/sampler/test_plan.o: SAMPLER_CFLAGS += -DCFI_FRAMES_A64_ELF='"$(BUILD)/tests/sampler/cfi_frames_a64.elf"'
# Literal inputs the tests read (QEMU's target descriptions).
$(BUILD)/tests/sampler/test_arch.o: SAMPLER_CFLAGS += -DTEST_DATA='"tests/sampler/data"'

# The benchmark's minimal reference client (reuses the codec and transport).
$(BUILD)/rtt: bench/rtt.c $(BUILD)/sampler/conn.o $(BUILD)/sampler/rsp.o $(BUILD)/sampler/textnum.o $(BUILD)/sampler/wirelog.o
	$(CC) $(SAMPLER_CFLAGS) -o $@ $^

# Host CPU per stack walk for each unwinding method, on stacks sampled from a live guest.
$(BUILD)/walk-bench: bench/walk_bench.c $(SAMPLER_LIB_OBJS)
	$(CC) $(SAMPLER_CFLAGS) -o $@ $^ $(SAMPLER_LIBS)

.PHONY: sampler-unit sampler-system sampler-bench
# C unit tests: codec, unwinder, pacer, capture, symbols, report (prints "N passed, N failed").
sampler-unit: $(BUILD)/sampler-tests
	$(BUILD)/sampler-tests

# System tests: boot the test kernel under QEMU TCG and sample it (needs $(BUILD)/kernel.elf).
sampler-system: $(BUILD)/gdbsample
	/usr/bin/python3 -m pytest -q tests/sampler

# Benchmarks against one QEMU; writes docs/benchmarks.md.
sampler-bench: $(BUILD)/gdbsample $(BUILD)/rtt
	/usr/bin/python3 bench/sampler_bench.py --gdbsample $(BUILD)/gdbsample --rtt $(BUILD)/rtt --out docs/benchmarks.md

# The tests' window on the kallsyms decoder: an image's tables printed as /proc/kallsyms prints them.
$(BUILD)/ksdump: tests/sampler/tools/ksdump.c $(SAMPLER_LIB_OBJS)
	$(CC) $(SAMPLER_CFLAGS) -o $@ $^ $(SAMPLER_LIBS)
all: $(BUILD)/ksdump
# A stand-in kernel module (ET_REL with .modinfo and DWARF) for test_kofile.c.
$(BUILD)/tests/sampler/ko_mini.ko: tests/sampler/data/ko_mini.c
	@mkdir -p $(dir $@)
	$(CC) -c -g -O1 -fno-asynchronous-unwind-tables -fno-pie -o $@ $<
$(BUILD)/tests/sampler/test_kofile.o: SAMPLER_CFLAGS += -DKO_MINI='"$(BUILD)/tests/sampler/ko_mini.ko"'
# Other kernels' current-task layouts, as DWARF, for the task descriptions' resolution (test_taskdesc_dwarf.c).
$(BUILD)/tests/sampler/task_shapes.elf: tests/sampler/data/task_shapes.c tests/sampler/data/task_shapes2.c
	@mkdir -p $(dir $@)
	$(CC) -g -O1 -nostdlib -static -no-pie -Wl,-e,start -Wl,--build-id=none -o $@ $^
$(BUILD)/tests/sampler/test_offcpu.o: SAMPLER_CFLAGS += -DKERNEL_X86='"$(BUILD)/kernel.elf"' \
	-DKERNEL_A64='"$(BUILD)/aarch64/kernel.elf"' -DKERNEL_RV64='"$(BUILD)/riscv64/kernel.elf"' \
	-DTASK_SHAPES_ELF='"$(BUILD)/tests/sampler/task_shapes.elf"'
$(BUILD)/tests/sampler/test_taskdesc_dwarf.o: SAMPLER_CFLAGS += -DTASK_SHAPES_ELF='"$(BUILD)/tests/sampler/task_shapes.elf"' \
	-DA64_KERNEL='"$(BUILD)/aarch64/kernel.elf"'
