# gdbsample: top-level build. `make` builds everything, `make test` runs every test,
# `make demo` runs the main job. Missing Debian packages are installed by `make deps`.

BUILD   ?= build
CC      ?= gcc
GDBPORT ?= 1234
SMP     ?= 2
# The version of gdbsample and gdbsample-analyze: the VERSION file is its one home (debian/changelog
# must agree: `make deb` checks).
GDBSAMPLE_VERSION := $(shell cat VERSION)

# The Python that runs analysis/ and the tests must import elftools and pytest:
# Debian's /usr/bin/python3 with python3-pyelftools and python3-pytest. The python3
# first on PATH may be another interpreter without them, so pick explicitly.
PY := $(shell for p in /usr/bin/python3 python3; do \
	  $$p -c 'import elftools, pytest' >/dev/null 2>&1 && { command -v $$p; break; }; done)
ifeq ($(PY),)
PY := /usr/bin/python3
endif

.PHONY: all kernel test unit-test check system-test deps run demo bench clean pmu-matrix libvirt-xml crosscheck
all: kernel $(BUILD)/gdbsample

include kernel/kernel.mk
-include sampler/sampler.mk

# Debian packages the build, the tests, the demo and the package (make deb: dpkg-dev, debhelper,
# fakeroot, lintian; man pages: groff-base, man-db, mandoc) need; installed only when missing.
DEB_PKGS := gcc make binutils qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu python3 python3-pyelftools python3-pytest \
	    libelf-dev libdw-dev libbpf-dev zlib1g-dev liblzma-dev libzstd-dev liblz4-dev \
	    gdb socat chromium busybox-static cpio clang libclang-rt-14-dev python3-pyflakes python3-pytest-xdist \
	    libvirt-dev libvirt-clients libvirt-daemon libvirt-daemon-driver-qemu \
	    pkg-config dpkg-dev debhelper fakeroot lintian groff-base man-db mandoc bash-completion
deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$(echo ' '$$missing)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
	    || { echo "deps: apt-get install failed for: $$missing" >&2; exit 1; }; \
	fi

# Boot the kernel under QEMU TCG with the serial console on this terminal and a
# gdbstub on loopback only; CONFIG picks a row of vm-configs/configs.toml (an aarch64 row, e.g.
# CONFIG=tcg-a64-max, boots build/aarch64/kernel.elf). Quit with `poweroff` (or Ctrl-A X).
CONFIG ?= tcg-qemu64
run: deps kernel
	@vm-configs/run $(CONFIG) --build $(BUILD) --smp $(SMP) --serial mon:stdio \
	  --gdb tcp:127.0.0.1:$(GDBPORT); s=$$?; [ $$s = 0 ] || [ $$s = 33 ] || exit $$s  # 33: poweroff

# Main job: boot the kernel with -smp 2, start known workloads and look at them.
demo: deps all
	$(PY) tools/demo.py --kernel $(BUILD)/kernel.elf

# The in-guest profile and gdbsample over the same window, through `compare` (exit 1: differs).
# ARCH=aarch64: on QEMU virt, where the in-guest source is the PMU (x86_64 under TCG: the tick).
crosscheck: deps all
	$(PY) tools/crosscheck.py --arch $(firstword $(ARCH)) \
	  --kernel $(BUILD)/$(if $(filter aarch64,$(firstword $(ARCH))),aarch64/)kernel.elf \
	  --smp $(SMP) --out $(BUILD)/crosscheck$(if $(filter aarch64,$(firstword $(ARCH))),-aarch64)

test: deps all
	$(MAKE) --no-print-directory unit-test
	$(PY) -m pytest -q -p no:cacheprovider tests

unit-test: kernel-unit sampler-unit

# The edit-compile loop: the C unit tests, a lint of the Python, and the tests that start no QEMU
# and build no package (pytest -m "not qemu and not slow"; tests/conftest.py says which) -- a minute.
check: all
	$(MAKE) --no-print-directory unit-test
	$(PY) -m pyflakes analysis tools tests bench gdbscripts vm-configs/vmconfig.py
	$(PY) -m pytest -q -p no:cacheprovider -n 2 -m "not qemu and not slow" tests

# Benchmarks (never timed tests): figures go to docs/benchmarks.md, each tool its own section.
bench: deps all
	$(MAKE) --no-print-directory sampler-bench
	$(PY) bench/analysis_bench.py --out docs/benchmarks.md
	$(PY) bench/net_bench.py --out docs/benchmarks.md
	$(PY) bench/attach_bench.py --gdbsample $(BUILD)/gdbsample --rtt $(BUILD)/rtt --out docs/benchmarks.md
	$(MAKE) --no-print-directory $(BUILD)/walk-bench $(BUILD)/rtt
	$(PY) bench/unwind_bench.py --gdbsample $(BUILD)/gdbsample --walk-bench $(BUILD)/walk-bench --rtt $(BUILD)/rtt \
	  --linux-build $(BUILD)/linux --out docs/benchmarks.md
	$(PY) bench/task_bench.py --gdbsample $(BUILD)/gdbsample --kernel $(BUILD)/kernel.elf --linux-build $(BUILD)/linux \
	  --out docs/benchmarks.md
	$(PY) bench/soak_bench.py --gdbsample $(BUILD)/gdbsample --out docs/benchmarks.md

# Every configuration and CPUID persona of vm-configs/configs.toml: what the kernel decides
# about its PMU, against what the table expects (KVM rows only where /dev/kvm works).
pmu-matrix: deps kernel
	$(PY) tools/pmu_matrix.py --kernel $(BUILD)/kernel.elf

# Regenerate vm-configs/libvirt/*.xml from the table (a test checks they are current).
libvirt-xml:
	for n in $$(vm-configs/run --list | awk '$$2 != "persona" {print $$1}'); do \
	  vm-configs/run --libvirt $$n > vm-configs/libvirt/$$n.xml || exit 1; done

clean:
	rm -rf $(BUILD)

# Debian's stock kernels for the Linux-guest tests (6.1 from bookworm, 6.12 from bookworm-backports
# through a private apt configuration) and their busybox initramfs, cached under $(BUILD)/linux.
.PHONY: linux-image
linux-image:
	$(PY) tools/linuxguest.py fetch --build $(BUILD)/linux

# make install / uninstall (PREFIX, default /usr/local; DESTDIR), the man pages (make man) and the
# Debian package (make deb, into $(BUILD)/deb/): install/install.mk. Only the tools, not the kernel.
include install/install.mk

# Fuzzing and sanitizers (fuzz/fuzz.mk): `make fuzz` builds every libFuzzer harness into
# $(BUILD)/fuzz and runs each FUZZ_SECONDS (default 60), printing executions, coverage and crashes;
# `make asan-test` runs the C unit tests and the sampler's system tests under ASan + UBSan;
# `make unit-test` (so `make test`) also replays the seed corpora and every fixed crash.
include fuzz/fuzz.mk
unit-test: fuzz-replay
