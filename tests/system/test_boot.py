# SPDX-License-Identifier: MIT
"""The kernel boots to the shell on 1, 2 and 4 CPUs and every CPU ticks at 100 Hz."""
import time

import crosscheck
import pytest

TICK_HZ = 100
TOLERANCE = 0.10  # the issue's ±10 %; TCG delivers the periodic LAPIC timer on the host clock


@pytest.mark.parametrize("smp", [1, 2, 4])
def test_boots_and_every_cpu_ticks(boot, smp):
    g = boot(smp=smp)
    up0, ticks0, online, total = g.cpus()
    window = crosscheck.WaitWindow(g.proc.pid)
    assert (online, total) == (smp, smp), g.tail()
    up1 = up0
    while up1 - up0 < 2000:  # two seconds of guest time (a loaded host gives the guest less)
        time.sleep(0.5)
        up1, ticks1, _, _ = g.cpus()
    elapsed = (up1 - up0) / 1000.0  # guest time: TCG freezes the guest clock while QEMU is stopped
    # A QEMU thread waiting for a host core misses timer deadlines (TCG coalesces them: never more
    # ticks, fewer): the lower bound gives up the share of the window the most-waiting QEMU thread
    # waited, as measured (4 vCPUs on 2 loaded cores: 20 % seen). Every thread, not only the smp
    # busiest: an idle guest's vCPU thread sleeps in hlt and is not the busiest, yet its late
    # wake-ups are what lose ticks (-smp 1 beside two hogs: 82 Hz while the busiest waited 3.8 %).
    waited = window.waited(None) or 0.0
    for cpu in range(smp):
        rate = (ticks1[cpu] - ticks0[cpu]) / elapsed
        assert TICK_HZ * (1 - TOLERANCE - waited) <= rate <= TICK_HZ * (1 + TOLERANCE), \
            f"cpu{cpu} ticks at {rate:.1f} Hz (QEMU threads waited up to {100 * waited:.1f} % of the window)"


def test_uptime_and_lscpu(boot):
    g = boot(smp=2)
    assert g.cmd("uptime").startswith("up ")
    out = g.cmd("lscpu")
    for field in ("vendor:", "model:", "hypervisor:", "intel pmu:", "amd pmu:", "cpus:        2 online"):
        assert field in out, out
    # QEMU TCG sets the hypervisor bit with its own vendor string.
    assert 'hypervisor:  yes, vendor "TCGTCGTCGTCG"' in out


@pytest.mark.qemu
def test_a_failed_start_leaves_no_qemu_behind():
    """A boot that fails -- here the prompt is not seen within 1 ms -- stops QEMU by its pid and
    removes the guest's temp dir (tools/qemuguest.py), as stop() does."""
    import conftest
    from guest import Guest, GuestError
    g = Guest(conftest.KERNEL, smp=1)
    with pytest.raises(GuestError, match="timed out"):
        g.start(boot_timeout=0.001)
    assert g.proc is not None and g.proc.poll() is not None, "QEMU still running after a failed start"
    assert g.dir is None
