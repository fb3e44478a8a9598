# gdbsample: top-level build. `make` builds everything, `make test` runs every test,
# `make demo` runs the main job. Missing Debian packages are installed by `make deps`.

BUILD   ?= build
CC      ?= gcc
GDBPORT ?= 1234
SMP     ?= 2

# The Python that runs analysis/ and the tests must import elftools and pytest:
# Debian's /usr/bin/python3 with python3-pyelftools and python3-pytest. The python3
# first on PATH may be another interpreter without them, so pick explicitly.
PY := $(shell for p in /usr/bin/python3 python3; do \
	  $$p -c 'import elftools, pytest' >/dev/null 2>&1 && { command -v $$p; break; }; done)
ifeq ($(PY),)
PY := /usr/bin/python3
endif

.PHONY: all kernel test unit-test system-test deps run demo bench clean
all: kernel $(BUILD)/gdbsample

include kernel/kernel.mk
-include sampler/sampler.mk

# Debian packages the build, the tests and the demo need; installed only when missing.
DEB_PKGS := gcc make binutils qemu-system-x86 python3 python3-pyelftools python3-pytest \
	    libelf-dev gdb socat
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
# gdbstub on loopback only. Quit with `poweroff` (or Ctrl-A X).
run: deps kernel
	qemu-system-x86_64 -machine pc -accel tcg -smp $(SMP) -m 128M -kernel $(BUILD)/kernel.elf \
	  -display none -nodefaults -no-reboot -serial mon:stdio \
	  -device isa-debug-exit,iobase=0xf4,iosize=0x04 -gdb tcp:127.0.0.1:$(GDBPORT)

# Main job: boot the kernel with -smp 2, start known workloads and look at them.
demo: deps all
	$(PY) tools/demo.py --kernel $(BUILD)/kernel.elf

test: deps all
	$(MAKE) --no-print-directory unit-test
	$(PY) -m pytest -q -p no:cacheprovider tests

unit-test: kernel-unit sampler-unit

bench: deps all
	$(MAKE) --no-print-directory sampler-bench

clean:
	rm -rf $(BUILD)
