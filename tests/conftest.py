"""Shared pytest setup: paths, and a fixture that boots the test kernel and always stops it."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# GDBSAMPLE_BUILD points the tests at another build directory (make BUILD=...); default build/.
BUILD = os.environ.get("GDBSAMPLE_BUILD") or os.path.join(ROOT, "build")
KERNEL = os.path.join(BUILD, "kernel.elf")
KERNEL_NOFP = os.path.join(BUILD, "kernel-nofp.elf")  # the same kernel without frame pointers
sys.path.insert(0, os.path.join(ROOT, "tools"))

from guest import Guest  # noqa: E402


def folded_rows(text):
    """Folded stacks (`a;b;c COUNT` lines) -> [(frames root first, count)]."""
    rows = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        rows.append((stack.split(";"), int(count)))
    return rows


@pytest.fixture
def boot():
    """boot(smp=2, kernel=KERNEL, ...) -> a started Guest; every guest is stopped by pid at teardown."""
    if not os.path.exists(KERNEL):
        pytest.fail(f"{KERNEL} is missing: run `make kernel` (make test builds it)")
    guests = []

    def start(smp=2, kernel=None, **kw):
        path = kernel or KERNEL
        if not os.path.exists(path):
            pytest.fail(f"{path} is missing: run `make kernel` (make test builds it)")
        g = Guest(path, smp=smp, **kw)
        guests.append(g)
        return g.start()

    yield start
    for g in guests:
        g.stop()


@pytest.fixture(scope="module")
def shared_guest():
    """One -smp 2 guest for a module's tests that change nothing (bad-input tables)."""
    if not os.path.exists(KERNEL):
        pytest.fail(f"{KERNEL} is missing: run `make kernel` (make test builds it)")
    g = Guest(KERNEL, smp=2)
    try:
        yield g.start()
    finally:
        g.stop()


# The two builds of the test kernel the sampler is checked on: frame pointers in every function,
# and none (DWARF CFI only, as most kernels are built).
KERNELS = {"fp": KERNEL, "nofp": KERNEL_NOFP}
