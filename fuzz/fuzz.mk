# SPDX-License-Identifier: MIT
# fuzz/fuzz.mk: libFuzzer harnesses (clang, ASan + UBSan) into $(BUILD)/fuzz and `make fuzz`; plain
# gcc replays of the committed corpus and fixed crashes (`make fuzz-replay`, part of unit-test);
# `make asan-test`: the C unit tests and the sampler's system tests built with ASan + UBSan.
# Included at the end of the top Makefile, after sampler/sampler.mk and kernel/kernel.mk.

FUZZ_CC        ?= clang
FUZZ_SECONDS   ?= 60
# One harness per parser: fuzz/fuzz_NAME.c, seeds in fuzz/corpus/NAME, fixed crashes in fuzz/crashes/NAME.
FUZZ_HARNESSES := rsp stop threads reply arch symmap capture qmp vmlinuz orc cfi conn knet btf insn textnum kallsyms ko summary taskdesc imgcache
FUZZ_DIR       := $(BUILD)/fuzz
FUZZ_SAN       := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS    := $(SAMPLER_CFLAGS) -O1 -Wno-unknown-warning-option $(FUZZ_SAN)
FUZZ_LIB_OBJS  := $(patsubst sampler/%.c,$(FUZZ_DIR)/obj/%.o,$(filter-out sampler/main.c,$(SAMPLER_SRCS)))
# The kernel's network code, compiled for the host (its headers, x86.h replaced in the harness).
FUZZ_KNET      := -std=gnu11 -g -O1 -Ikernel -Ikernel/arch/x86_64
FUZZ_KNET_SRCS := fuzz/fuzz_knet.c kernel/net.c kernel/udpsh.c $(wildcard kernel/*.h)

$(FUZZ_DIR)/obj/%.o: sampler/%.c $(wildcard sampler/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# An archive, so a harness links only the objects its parser needs.
$(FUZZ_DIR)/libsampler.a: $(FUZZ_LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_knet: $(FUZZ_KNET_SRCS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_KNET) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ fuzz/fuzz_knet.c

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_DIR)/libsampler.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_DIR)/libsampler.a $(SAMPLER_LIBS)

# The same harnesses with a plain main (fuzz/replay.c) and the normal build's objects.
FUZZ_REPLAY := $(addprefix $(BUILD)/fuzz-replay/fuzz_,$(FUZZ_HARNESSES))

$(BUILD)/fuzz-replay/fuzz_knet: $(FUZZ_KNET_SRCS) fuzz/replay.c
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_KNET) -o $@ fuzz/fuzz_knet.c fuzz/replay.c

$(BUILD)/fuzz-replay/fuzz_%: fuzz/fuzz_%.c fuzz/replay.c $(SAMPLER_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLER_CFLAGS) -o $@ $< fuzz/replay.c $(SAMPLER_LIB_OBJS) $(SAMPLER_LIBS)

.PHONY: fuzz fuzz-build fuzz-replay asan-test
fuzz-build: $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_HARNESSES))

# Each harness FUZZ_SECONDS from the seeds (and what earlier runs found, kept in $(FUZZ_DIR)/corpus);
# a table of executions, coverage and crashes (saved in $(FUZZ_DIR)/artifacts), also put in
# docs/benchmarks.md (bench/fuzz_doc.py). Exit 1 on a crash.
fuzz: fuzz-build
	@load=$$(cut -d' ' -f1 /proc/loadavg); \
	sh fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_HARNESSES) > $(FUZZ_DIR)/table.txt; rc=$$?; \
	cat $(FUZZ_DIR)/table.txt; \
	$(PY) bench/fuzz_doc.py --table $(FUZZ_DIR)/table.txt --seconds $(FUZZ_SECONDS) --load-before $$load \
	  --out docs/benchmarks.md && exit $$rc

# Seeds and every fixed crash, through each parser without the fuzzer (seconds; part of unit-test).
fuzz-replay: $(FUZZ_REPLAY)
	@for h in $(FUZZ_HARNESSES); do $(BUILD)/fuzz-replay/fuzz_$$h fuzz/corpus/$$h fuzz/crashes/$$h || exit 1; done

# C unit tests, fuzz replays and the sampler's system tests (pytest tests/sampler, GDBSAMPLE_BUILD
# pointing at the ASan build) with ASan + UBSan, any report fatal. The guest kernels and the test
# ELF are built without sanitizers (freestanding code).
ASAN_BUILD := $(BUILD)/asan
ASAN_CC    := $(CC) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_ENV   := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan-test:
	$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) kernel $(ASAN_BUILD)/tests/sampler/cfi_frames.elf \
	  $(ASAN_BUILD)/tests/sampler/cfi_frames_a64.elf $(ASAN_BUILD)/tests/sampler/ko_mini.ko
	$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CC="$(ASAN_CC)" $(ASAN_BUILD)/gdbsample \
	  $(ASAN_BUILD)/sampler-tests $(ASAN_BUILD)/kernel-host-tests $(ASAN_BUILD)/kernel-pmu-tests \
	  $(addprefix $(ASAN_BUILD)/fuzz-replay/fuzz_,$(FUZZ_HARNESSES))
	$(ASAN_ENV) $(ASAN_BUILD)/sampler-tests
	$(ASAN_ENV) $(ASAN_BUILD)/kernel-host-tests
	$(ASAN_ENV) $(ASAN_BUILD)/kernel-pmu-tests
	@for h in $(FUZZ_HARNESSES); do \
	  $(ASAN_ENV) $(ASAN_BUILD)/fuzz-replay/fuzz_$$h fuzz/corpus/$$h fuzz/crashes/$$h || exit 1; done
	$(ASAN_ENV) GDBSAMPLE_BUILD=$(abspath $(ASAN_BUILD)) $(PY) -m pytest -q -p no:cacheprovider tests/sampler
