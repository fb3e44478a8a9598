"""gdbsample on Debian's stock arm64 kernel (6.1) as it ships, on QEMU virt -cpu max: pointer
authentication on, KASLR on, the Image given as -e beside this boot's kallsyms. Busy kernel
samples unwind to where a kernel stack begins (return addresses stripped of their PAC, frameless
leaves through x30, interrupt vectors and exception frames continued into the interrupted code),
and idle vCPUs are tagged. One guest for the module (tools/linuxguest_arm64.py)."""
import os
import subprocess

import conftest
import pytest

from gdbsample_analysis import capture as capmod
from gdbsample_analysis import symbols as symmod
from linuxguest_arm64 import ArchiveUnreachable, Arm64Guest

pytestmark = pytest.mark.qemu

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
BUILD = os.path.join(conftest.BUILD, "linux")
# Where an arm64 Linux kernel stack begins: an exception from user mode (its entry stores a
# zero frame record), a new task's first frame, a CPU's startup code.
BOTTOMS = {"el0t_64_sync", "el0t_64_irq", "el0t_64_fiq", "el0t_64_error", "el0t_32_sync", "el0t_32_irq",
           "ret_from_fork", "secondary_start_kernel", "__primary_switched", "__secondary_switched"}


@pytest.fixture(scope="module")
def arm64():
    try:
        g = Arm64Guest(build=BUILD).start()
    except ArchiveUnreachable as e:
        pytest.skip(str(e))
    try:
        yield g
    finally:
        g.stop()


def gdbsample(g, *args):
    return subprocess.run([GDBSAMPLE, "-p", str(g.gdb_port), "-e", g.vmlinuz, "-e", g.kallsyms_path(), *args],
                          capture_output=True, text=True, timeout=180)


def test_busy_kernel_samples_reach_a_known_bottom(arm64, tmp_path):
    """>= 99 % of the non-idle kernel samples (dd from /dev/zero and /dev/urandom, a fork/exec
    loop: syscalls, page faults, interrupts) end where a kernel stack begins, with no unreliable
    step; samples stopped on an IRQ vector are counted as the interrupted code, none is left on
    `vectors`; the guest really signs return addresses (-cpu max: paca)."""
    g = arm64
    assert "paca" in g.cmd("cat /proc/cpuinfo"), "pointer authentication is not on"
    assert g.kaslr_slide() != 0
    pids = g.start_workloads(("zerodd", "rngdd", "forker"))
    syms = symmod.Symbolizer.load(g.kallsyms_path())
    kernel = reliable = on_vector = irq_vector = 0
    bad = {}
    try:
        for _ in range(4):  # runs are added on a loaded host until 1000 kernel samples were seen
            out = tmp_path / "run.cap"
            r = gdbsample(g, "-r", "200", "-d", "3", "-f", "capture", "-o", str(out))
            assert r.returncode == 0, r.stderr
            irq_vector += int(r.stderr.split("on an interrupt vector ")[1].split()[0])
            for s in capmod.Capture(str(out)).samples():
                if s.flags & (capmod.FLAG_IDLE | capmod.FLAG_USER):
                    continue
                kernel += 1
                root = syms.frame_name(s.frames[-1], symmod.is_return(len(s.frames) - 1, s.exact))
                on_vector += syms.frame_name(s.frames[0], False) == "vectors"
                if not s.flags & capmod.FLAG_UNRELIABLE and root in BOTTOMS:
                    reliable += 1
                else:
                    key = (root, bool(s.flags & capmod.FLAG_UNRELIABLE))
                    bad[key] = bad.get(key, 0) + 1
            if kernel >= 1000:
                break
    finally:
        g.stop_workloads(pids)
    assert kernel >= 1000, (kernel, r.stderr)
    assert reliable >= 0.99 * kernel, (reliable, kernel, sorted(bad.items(), key=lambda kv: -kv[1])[:10])
    assert irq_vector > 0 and on_vector <= 0.01 * kernel, (irq_vector, on_vector, kernel)


def test_the_leaf_caller_comes_from_x30(arm64):
    """dd from /dev/zero spends its time in __arch_clear_user, a frameless assembly leaf: its
    caller read_zero (in x30 only) is in the chain, under the whole syscall path."""
    pids = arm64.start_workloads(["zerodd"])
    try:
        r = gdbsample(arm64, "-r", "200", "-d", "2", "-f", "folded")
    finally:
        arm64.stop_workloads(pids)
    assert r.returncode == 0, r.stderr
    want = ["el0t_64_sync", "el0t_64_sync_handler", "el0_svc", "do_el0_svc", "el0_svc_common.constprop.0",
            "invoke_syscall", "__arm64_sys_read", "ksys_read", "vfs_read", "read_zero", "__arch_clear_user"]
    rows = conftest.folded_rows(r.stdout)
    assert any(frames[1:] == want for frames, _ in rows), r.stdout[:3000]


def test_idle_vcpus_are_tagged(arm64, tmp_path):
    """A quiet guest: with --idle, the halted vCPUs' samples are flagged idle, at cpu_do_idle
    (after its wfi), and unwind to the CPU's startup code."""
    cap = tmp_path / "idle.cap"
    r = gdbsample(arm64, "-r", "100", "-d", "2", "--idle", "-f", "capture", "-o", str(cap))
    assert r.returncode == 0, r.stderr
    syms = symmod.Symbolizer.load(arm64.kallsyms_path())
    idle = [s for s in capmod.Capture(str(cap)).samples() if s.flags & capmod.FLAG_IDLE]
    assert len(idle) >= 100, r.stderr
    at = sum(syms.frame_name(s.frames[0], False) == "cpu_do_idle" for s in idle)
    assert at >= 0.95 * len(idle), (at, len(idle))
    roots = [syms.frame_name(s.frames[-1], symmod.is_return(len(s.frames) - 1, s.exact)) for s in idle]
    assert sum(r_ in BOTTOMS for r_ in roots) >= 0.95 * len(idle), sorted(set(roots))
