# SPDX-License-Identifier: MIT
"""Tasks by description (--tasks FILE, docs/tasks.md) on our x86_64 kernel: its layout said as
data (docs/tasks/testkernel.tasks, through the per-CPU base register) and as a global array
indexed by the vCPU's number (cpus[cpu].current, no register, from stdin) both root every chain
sample at the chain task's pid -- an exact oracle, no tolerance; bad descriptions and a register
the stub lacks end in one line and exit 2, the guest running. A booted kernel of another shape --
riscv64, laid out as xv6 (tests/system/shape: cpus[$tp].proc, struct proc) -- is attributed
exactly too. The resolution of further shapes (per-CPU variables, typedef'd tasks) is unit-tested
on DWARF (tests/sampler/test_taskdesc_dwarf.c). Every guest is stopped by its pid; every
gdbsample is run to completion.
"""
import os
import re
import subprocess

import conftest
import pytest
from guest import Guest

GDBSAMPLE = conftest.GDBSAMPLE
DOCS = os.path.join(conftest.ROOT, "docs", "tasks")
SHAPE = os.path.join(conftest.BUILD, "riscv64", "shape.elf")


@pytest.fixture(autouse=True)
def need_binary(need_gdbsample):
    """(tests/conftest.py)"""


def gdbsample(port, elf, *args, stdin=None, timeout=120):
    return subprocess.run([GDBSAMPLE, "-p", str(port), "-e", elf] + [str(a) for a in args], input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def kv(stderr):
    """The kv summary's lines as a dict (--summary-format kv)."""
    return dict(l.split(" ", 1) for l in stderr.splitlines() if " " in l and not l.startswith("gdbsample:"))


def described_run(g, path, stdin):
    """One 2 s run at 200 Hz with --tasks PATH (stdin for "-"), folded as comm-pid: its
    CompletedProcess, checked to have ended 0 with the tasks described."""
    r = gdbsample(g.gdbport, g.kernel, "-r", "200", "-d", "2", "-f", "folded", "--task-format", "comm-pid",
                  "--summary-format", "kv", "--tasks", path, stdin=stdin)
    assert r.returncode == 0, r.stderr
    assert kv(r.stderr)["task_os"] == "described", r.stderr
    return r


BAD = [  # (description, what the one line says), on our kernel (struct cpu, struct task)
    ("current = cpus[cpu].curent\npid = pid\nname = name\n", "--tasks: line 1: `struct cpu` has no member `curent`"),
    ("current = cpus[cpu].current\npid = stack\nname = name\n",
     "line 2: pid `stack` is a `uint8_t *`: it must be an integer of 1, 2, 4 or 8 bytes"),
    ("current = cpus[cpu].current\npid = pid\nname = stack\n", "line 3: name `stack` is a `uint8_t *`"),
    ("current = cpus[cpu]\npid = pid\nname = name\n", "line 1: `cpus[cpu]` is a `struct cpu`, not a pointer"),
    ("current = kcpus[cpu].current\npid = pid\nname = name\n", "`kcpus`: no such global variable"),
    ("current = cpus[cpu.current\npid = pid\nname = name\n", "line 1: "),
    ("current = cpus[cpu].current\nname = name\n", "no `pid = ...` line"),
    ("current = cpus[cpu].current\npid = pid\nname = name\nname = name\n", "line 4: "),
]


@pytest.mark.parametrize("text,want", BAD)
def test_bad_descriptions_one_line_exit_2(shared_guest, tmp_path, text, want):
    """Refused before the guest is touched: one line naming the line, exit 2."""
    f = tmp_path / "bad.tasks"
    f.write_text(text)
    r = gdbsample(shared_guest.gdbport, shared_guest.kernel, "-d", "1", "--tasks", f)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gdbsample: --tasks") and want in lines[0], r.stderr


def test_missing_register_exit_2_guest_running(boot, tmp_path):
    """A register the gdbstub lacks is found only once attached: exit 2, one line, and the guest
    is resumed (QMP says running) -- not a silently unattributed profile."""
    g = boot(smp=2, qmp=True)
    f = tmp_path / "reg.tasks"
    f.write_text("current = cpus[$nosuch].current\npid = pid\nname = name\n")
    r = gdbsample(g.gdbport, g.kernel, "-d", "1", "--tasks", f)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == ["gdbsample: --tasks: the gdbstub's x86_64 registers include no `nosuch`"]
    assert conftest.wait_running(g.qmp_path) == "running"


def test_usage_errors():
    """--tasks without -e, with --os, and an unreadable file: exit 2 before connecting (no guest)."""
    r = subprocess.run([GDBSAMPLE, "-p", "1", "--tasks", "x"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--tasks needs the kernel image (-e)" in r.stderr, r.stderr
    r = subprocess.run([GDBSAMPLE, "-p", "1", "-e", conftest.KERNEL, "--os", "linux", "--tasks", "x"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--tasks and --os linux" in r.stderr, r.stderr
    r = subprocess.run([GDBSAMPLE, "-p", "1", "-e", conftest.KERNEL, "--tasks", "/nonexistent.tasks"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip() == "gdbsample: --tasks /nonexistent.tasks: No such file or directory", r.stderr


@pytest.mark.parametrize("tasks", ["testkernel.tasks", "by-cpu"])
def test_our_kernel_described_as_data(boot, tasks):
    """Our x86_64 kernel through docs/tasks/testkernel.tasks (the built-in description, as a file)
    and through cpus[cpu].current (no register at all): every chain sample is rooted at the chain
    task by its pid, as the built-in attribution roots them."""
    g = boot(smp=2)
    pid = g.work("chain 6")
    stdin = None
    if tasks == "by-cpu":  # from standard input
        path, stdin = "-", "# the vCPU's number, no register\ncurrent = cpus[cpu].current\npid = pid\nname = name\n"
    else:
        path = os.path.join(DOCS, tasks)
    mine = named = 0
    log = ""
    for _ in range(4):
        r = described_run(g, path, stdin)
        log += r.stdout + r.stderr
        for frames, n in conftest.folded_rows(r.stdout):
            if "chain6" in frames:
                mine += n
                named += n if frames[0] == f"chain-{pid}" else 0
        if mine >= 200:
            break
    assert mine >= 200, log
    assert named == mine, (named, mine, log)


class ShapeGuest(Guest):
    """build/riscv64/shape.elf (tests/system/shape): no shell; it says `shape: ready` once every
    hart runs its two processes."""
    READY = "shape: ready\n"


@pytest.fixture(scope="module")
def shape_guest():
    """The shape guest at -smp 2 on the system's QEMU (qemu-system-riscv64 7.2), stopped by its pid."""
    if not os.path.exists(SHAPE):
        pytest.fail(f"{SHAPE} is missing: run `make kernel` (make test builds it)")
    g = ShapeGuest(SHAPE, smp=2, config="tcg-rv64", qemu="7.2")
    try:
        yield g.start()
    finally:
        g.stop()


@pytest.mark.parametrize("tasks", ["xv6-riscv.tasks", "by-cpu", "u64-id"])
def test_a_kernel_of_another_shape(shape_guest, tasks):
    """A riscv64 kernel laid out as xv6 (struct cpu cpus[], indexed by the hart id in tp; struct
    proc with name at +20 and pid at +36), described by docs/tasks/xv6-riscv.tasks (through tp),
    by cpus[cpu].proc (the vCPU's number), and with its pid taken from `id`, a u64 at +40 as a
    Rust kernel keeps one: hart h runs even<h> (pid 100(h+1)) in spin_even and
    odd<h> (pid 100(h+1)+1) in spin_odd, so every sample in either function has exactly one right
    task, and the hart is told by the chain (boot_main on the boot hart, secondary_entry on the
    other) -- an exact oracle, no tolerance, over >= 400 samples and both harts."""
    g = shape_guest
    path = os.path.join(DOCS, tasks) if tasks == "xv6-riscv.tasks" else "-"
    stdin = {"by-cpu": "current = cpus[cpu].proc\npid = pid\nname = name\n",
             "u64-id": "current = cpus[$tp].proc\npid = id\nname = name\n"}.get(tasks)
    layout = "struct proc id +40 name +20" if tasks == "u64-id" else "struct proc pid +36 name +20"
    seen, harts, log = 0, {}, ""
    for _ in range(4):
        r = described_run(g, path, stdin)
        log += r.stdout + r.stderr
        assert kv(r.stderr)["task_layout"].endswith(layout), r.stderr
        for frames, n in conftest.folded_rows(r.stdout):
            leaf, path_ = frames[-1], frames[1:-1]
            if leaf not in ("spin_even", "spin_odd"):
                continue
            m = re.fullmatch(r"(even|odd)(\d)-(\d+)", frames[0])
            assert m, (frames, log)
            h = int(m.group(2))
            assert m.group(1) == leaf[5:] and int(m.group(3)) == 100 * (h + 1) + (leaf == "spin_odd"), (frames, log)
            side = "boot" if "boot_main" in path_ else "secondary" if "secondary_entry" in path_ else None
            assert side and harts.setdefault(side, h) == h, (frames, harts, log)
            seen += n
        if seen >= 400 and len(harts) == 2:
            break
    assert seen >= 400 and len(harts) == 2 and len(set(harts.values())) == 2, (seen, harts, log)
