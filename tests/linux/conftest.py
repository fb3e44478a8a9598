# SPDX-License-Identifier: MIT
"""The stock Debian guests the tests under tests/linux/ share: each booted once for the package and
stopped by its pid when the package is done (a package-scoped fixture)."""
import os

import pytest

import conftest
from linuxguest import ArchiveUnreachable, LinuxGuest

BUILD = os.path.join(conftest.BUILD, "linux")


def start(cls=LinuxGuest, **kw):
    """A started cls (LinuxGuest, or Arm64Guest) on the tests' build directory. Skips (with apt's
    reason) only when Debian's archive is unreachable and nothing is cached; any other failure
    fails the test. The one way every tests/linux/ file boots a guest."""
    try:
        return cls(build=BUILD, **kw).start()
    except ArchiveUnreachable as e:
        pytest.skip(str(e))


@pytest.fixture
def busy():
    """busy(guest, names=(zerodd, rngdd, forker)) starts the guest's workloads (tools/linuxguest.py)
    and returns their {name: pid}; every one is stopped after the test."""
    started = []

    def start_workloads(g, names=("zerodd", "rngdd", "forker")):
        pids = g.start_workloads(names)
        started.append((g, pids))
        return pids

    yield start_workloads
    for g, pids in started:
        g.stop_workloads(pids)


# 6.1 is booted once for the whole package, modules included: a boot costs 20-50 s under TCG.
LINUX61 = dict(series="6.1", smp=2, append=["nmi_backtrace.backtrace_idle=1"], modules=("brd",),
               lazy_modules=("hotmod",))


@pytest.fixture(scope="package")
def linux61():
    """6.1 (ORC v1, xz vmlinuz) as shipped: KASLR on, -smp 2; the guest prints idle CPUs' stacks
    too when asked (nmi_backtrace.backtrace_idle=1, for the idle-chain check). It is also the 6.1
    module guest (linux61_modules below): brd loaded at boot, hotmod carried for insmod mid-run."""
    g = start(**LINUX61)
    try:
        if g.kaslr_slide() == 0:
            # KASLR may pick the link address itself (about one boot in 490): boot once more
            # rather than fail a test on a legitimate draw.
            g.stop()
            g = start(**LINUX61)
        yield g
    finally:
        g.stop()


@pytest.fixture(scope="package")
def linux612_nokaslr():
    """6.12 from bookworm-backports (ORC v3 with .orc_header, zstd vmlinuz), booted nokaslr."""
    g = start(series="6.12", smp=2, kaslr=False)
    try:
        yield g
    finally:
        g.stop()


# Guests with kernel modules (tools/linuxmods.py), one per series, shared by the package like the
# two above: 6.1 loads brd at boot and carries hotmod for insmod mid-run, 6.12 the other way
# round, so each series has a module loaded by /init and one loaded later. A test that loads or
# unloads a module leaves the guest as it found it.
@pytest.fixture(scope="package")
def linux61_modules(linux61):
    """6.1, KASLR on, -smp 2: brd loaded at boot (one sparse 64 GiB RAM disk), hotmod carried --
    the package's one 6.1 guest."""
    return linux61


@pytest.fixture(scope="package")
def linux612_modules():
    """6.12, KASLR on, -smp 2: hotmod loaded at boot, brd carried."""
    g = start(series="6.12", smp=2, modules=("hotmod",), lazy_modules=("brd",))
    try:
        yield g
    finally:
        g.stop()


MODULE_GUESTS = {"linux61_modules", "linux612_modules", "modguest"}  # fixtures that boot a guest


def pytest_collection_modifyitems(config, items):
    """A test that uses a module guest starts QEMU: mark it `qemu` (tests/conftest.py does so for
    its own guest fixtures), so `make check` leaves it out."""
    for item in items:
        if MODULE_GUESTS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.qemu)
