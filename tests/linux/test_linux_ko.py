# SPDX-License-Identifier: MIT
"""gdbsample -e hotmod.ko on Debian's stock kernels (issue 21, docs/unwinding.md "Kernel module
files"): the out-of-tree test module's own .ko (built with -g) adds its source lines to `dump`
and its DWARF CFI to the unwinder, placed where the guest loaded it; names stay those read from
guest memory; a .ko built for another kernel, or a damaged one, is refused in one line.

What runs where: the sampling checks on the package's 6.12 module guest (hotmod loaded at boot,
tests/linux/conftest.py), the refusal of a 6.12 hotmod.ko on the 6.1 guest -- no boot of its own."""
import os
import re
import time

import pytest

import conftest
from linuxguest import LinuxGuest
from .test_linux_modules import core_map

pytestmark = pytest.mark.qemu

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
HOTMOD_C = os.path.join(conftest.ROOT, "tests", "linux", "hotmod", "hotmod.c")
CHAIN = "proc_reg_read;hotmod_read [hotmod];hotmod_work [hotmod];hotmod_spin [hotmod]"
DUMPS = 10  # dumps taken until one stops a vCPU in hotmod_spin (~90 % each: all miss 1 in 10^10)


def gdbsample(*args, timeout=300):
    return conftest.gdbsample(*args, timeout=timeout)


def source_line(pattern):
    """The line number in hotmod.c of the first line matching pattern."""
    with open(HOTMOD_C) as f:
        for n, line in enumerate(f, 1):
            if re.search(pattern, line):
                return n
    raise AssertionError(pattern)


def folded(text):
    """{stack: count} of a folded output."""
    out = {}
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(n)
    return out


def module_functions(stacks):
    return {f[: -len(" [hotmod]")] for s in stacks for f in s.split(";") if f.endswith(" [hotmod]")}


@pytest.fixture(scope="module")
def runs(linux612_modules, tmp_path_factory):
    """With hotmod's workload running on 6.12: folded 3 s without and with -e hotmod.ko, folded
    2 s with --unwind cfi and the .ko, dumps with and without it, and a bare -p with the .ko."""
    g = linux612_modules
    tmp = str(tmp_path_factory.mktemp("ko612"))
    m = core_map(g, tmp)
    base = ["-p", g.gdb_port, "-e", g.vmlinuz, "-e", m]
    ko = g.hotmod_ko
    pids = g.start_workloads(["hotmod"])
    try:
        time.sleep(1)
        out = dict(g=g, ko=ko)
        out["plain"] = gdbsample(*base, "-r", 100, "-d", 3, "-f", "folded")
        out["with"] = gdbsample(*base, "-e", ko, "-r", 100, "-d", 3, "-f", "folded")
        out["cfi"] = gdbsample(*base, "-e", ko, "--unwind", "cfi", "-r", 100, "-d", 2, "-f", "folded")
        out["dump_plain"] = gdbsample("dump", *base)
        out["dumps"] = []
        for _ in range(DUMPS):
            r = gdbsample("dump", *base, "-e", ko)
            out["dumps"].append(r)
            if r.returncode or "hotmod_spin+" in r.stdout:
                break
        for _ in range(DUMPS):  # one stop: in hotmod most of the time, not always (as the dumps above)
            out["bare"] = r = gdbsample("dump", "-p", g.gdb_port, "-e", os.path.dirname(ko))
            if r.returncode or "[hotmod]" in r.stdout:
                break
        out["ref"] = g.module_symbols()["hotmod"]
    finally:
        g.stop_workloads(pids)
    return out


def test_names_with_the_ko_equal_names_without(runs):
    plain, withko = runs["plain"], runs["with"]
    assert plain.returncode == 0 and withko.returncode == 0, (plain.stderr, withko.stderr)
    a, b = folded(plain.stdout), folded(withko.stdout)
    fa, fb = module_functions(a), module_functions(b)
    assert {"hotmod_read", "hotmod_work", "hotmod_spin"} <= fa & fb, (fa, fb)
    assert fa | fb <= set(runs["ref"]), (fa | fb) - set(runs["ref"])  # every one is the guest's
    assert any(CHAIN in s for s in a) and any(CHAIN in s for s in b)
    assert re.search(r"\.ko files: 1 given, 0 found in 0 directories, 1 placed \(hotmod: \d+ sections? "
                     r"from [1-9]\d* functions\), for modules not loaded 0", withko.stderr), withko.stderr


def test_dump_gives_module_frames_their_source_lines(runs):
    """Each hotmod frame in dump carries a line of its .ko's DWARF: the leaf one in hotmod_spin's
    loop, hotmod_work's return address the line calling hotmod_spin, hotmod_read's the line
    calling hotmod_work; without the .ko, no frame has one."""
    assert runs["dump_plain"].returncode == 0 and " at " not in runs["dump_plain"].stdout
    last = runs["dumps"][-1]
    assert last.returncode == 0, last.stderr
    assert "hotmod_spin+" in last.stdout, [r.stdout for r in runs["dumps"]]
    spin = (source_line(r"u64 hotmod_spin\(u64 x"), source_line(r"^\s*return x;$") + 1)  # its body
    calls = {"hotmod_work": ("hotmod_spin", source_line(r"hotmod_spin\(seed")),
             "hotmod_read": ("hotmod_work", source_line(r"hotmod_work\(get_cycles"))}
    checked = 0
    for r in runs["dumps"]:
        for cpu in r.stdout.split("\ncpu"):
            frames = re.findall(r"#(\d+)\s+0x[0-9a-f]+ (\S+)\+0x[0-9a-f]+(?: \[(\w+)\])?(?: at ([^\s:]+):(\d+)(?:, inlined [^\n]*)?)?\n", cpu + "\n")
            for k, (i, fn, mod, f, n) in enumerate(frames):
                assert bool(f) == (mod == "hotmod"), (fn, cpu)  # a line exactly for module frames
                if fn == "hotmod_spin" and i == "0":
                    assert f == "hotmod.c" and spin[0] <= int(n) <= spin[1], (n, spin, cpu)
                    checked += 1
                elif fn in calls and k and frames[k - 1][1] == calls[fn][0]:  # returns from that call
                    assert f == "hotmod.c" and int(n) == calls[fn][1], (fn, n, calls, cpu)
                    checked += 1
    assert checked >= 2, runs["dumps"][-1].stdout  # hotmod_work and hotmod_read at least


def test_ko_cfi_alone_unwinds_module_frames(runs):
    """--unwind cfi: a distro kernel has no CFI, so only the .ko's .debug_frame can take a walk
    from hotmod_spin up through hotmod_work and hotmod_read to its caller (where it ends, no-info):
    every sample in hotmod_spin has that chain."""
    r = runs["cfi"]
    assert r.returncode == 0, r.stderr
    stacks = folded(r.stdout)
    leaf = {s: n for s, n in stacks.items() if s.endswith(";hotmod_spin [hotmod]")}
    whole = sum(n for s, n in leaf.items() if s.endswith(CHAIN))
    assert sum(leaf.values()) >= 20, stacks  # the workload holds a vCPU: ~90 of 200 samples
    assert whole == sum(leaf.values()), leaf
    m = re.search(r"frames by method: orc (\d+) cfi (\d+)", r.stderr)
    assert m and int(m.group(1)) == 0 and int(m.group(2)) >= 3 * whole, r.stderr
    assert re.search(r"CFI lookups [1-9]", r.stderr), r.stderr


def test_a_directory_with_a_bare_p(runs):
    """-e DIR alone: the kernel from guest memory, hotmod.ko found in the directory by its name."""
    r = runs["bare"]
    assert r.returncode == 0, r.stderr
    assert re.search(r"hotmod_\w+\+0x[0-9a-f]+ \[hotmod\] at \S+:\d+", r.stdout), (r.stdout, r.stderr)


def test_a_ko_for_another_kernel_is_refused(linux61, tmp_path):
    """hotmod.ko built for 6.12 given to the 6.1 guest: one line naming both releases, exit 1."""
    other = LinuxGuest(build=os.path.join(conftest.BUILD, "linux"), series="6.12")
    other.vmlinuz, other.config = other.fetch()
    ko612 = other.out_of_tree("hotmod")[0]
    r = gdbsample("dump", "-p", linux61.gdb_port, "-e", linux61.vmlinuz, "-e", linux61.kallsyms_path(), "-e", ko612)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "hotmod.ko: built for Linux 6.12" in lines[0] and linux61.release() in lines[0], lines
    assert not r.stdout
    # the same file cut short: refused before connecting (exit 2)
    cut = tmp_path / "hotmod.ko"
    with open(ko612, "rb") as f:
        cut.write_bytes(f.read()[:100000])
    r = gdbsample("dump", "-p", linux61.gdb_port, "-e", linux61.vmlinuz, "-e", cut)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "hotmod.ko: truncated" in lines[0], r.stderr
