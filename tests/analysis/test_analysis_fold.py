# SPDX-License-Identifier: MIT
"""fold: filters (vCPU, time window, idle), grouping, per-vCPU files, damaged captures."""
import os

import pytest

import capgen
from analyze import DATA
from analyze import call as run  # in this process: no interpreter start per call (make check time)

ELF = os.path.join(DATA, "tiny.elf")
A, B, M = 0xffffffff80100000, 0xffffffff80100025, 0xffffffff80100065  # leaf_a, leaf_b, middle


def make(tmp_path, summary=True):
    """3 vCPUs, 60 stops 10 ms apart: cpu0 leaf_a<-middle, cpu1 leaf_b (idle every 3rd), cpu2 middle."""
    s = []
    for k in range(60):
        t = k * 10_000_000
        s.append((t, 0, 0, (A + 4, M + 9)))
        s.append((t, 1, 1 if k % 3 == 0 else 0, (B + 2,)))
        s.append((t, 2, 0, (M + 1,)))
    p = tmp_path / "f.cap"
    capgen.write(p, s, {"duration_ns": 600_000_000} if summary else None, per_chunk=25, ncpus=3)
    return p


def folded(text):
    return {line.rpartition(" ")[0]: int(line.rpartition(" ")[2]) for line in text.splitlines()}


def test_default_merges_cpus_and_drops_idle(tmp_path):
    r = run("fold", make(tmp_path), "-e", ELF)
    assert r.returncode == 0 and r.stderr == ""
    assert folded(r.stdout) == {"middle;leaf_a": 60, "leaf_b": 40, "middle": 60}
    assert r.stdout == "leaf_b 40\nmiddle 60\nmiddle;leaf_a 60\n"  # sorted by stack text


def test_cpu_idle_and_grouping(tmp_path):
    r = run("fold", make(tmp_path), "-e", ELF, "--cpu", "1-2", "--idle", "--group-by-cpu")
    assert folded(r.stdout) == {"cpu1;leaf_b": 60, "cpu2;middle": 60}
    assert folded(run("fold", make(tmp_path), "-e", ELF, "--cpu", "0", "--no-idle").stdout) == {"middle;leaf_a": 60}


@pytest.mark.parametrize("lo, hi, n", [("0", "100ms", 10), ("100000000", "200000000", 10), ("585ms", None, 1), ("591ms", None, 0),
                                       (None, "5ms", 1), ("0.5s", "1s", 10)])
def test_time_window(tmp_path, lo, hi, n):
    args = ["fold", make(tmp_path), "-e", ELF, "--cpu", "0"]
    args += ["--from", lo] if lo else []
    args += ["--until", hi] if hi else []
    assert folded(run(*args).stdout) == ({"middle;leaf_a": n} if n else {})


def test_split_by_cpu_writes_one_file_per_vcpu(tmp_path):
    out = tmp_path / "out" / "prof.folded"
    out.parent.mkdir()
    r = run("fold", make(tmp_path), "-e", ELF, "--split-by-cpu", "-o", out, "--idle")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out.parent)) == ["prof.cpu0.folded", "prof.cpu1.folded", "prof.cpu2.folded"]
    assert (out.parent / "prof.cpu1.folded").read_text() == "leaf_b 60\n"
    assert (out.parent / "prof.cpu2.folded").read_text() == "middle 60\n"
    r = run("fold", make(tmp_path), "-e", ELF, "--split-by-cpu", "-o", tmp_path / "x", "--cpu", "2")
    assert (tmp_path / "x.cpu2").read_text() == "middle 60\n" and not (tmp_path / "x.cpu0").exists()


def test_damaged_capture_folds_the_good_part_and_exits_3(tmp_path):
    p = make(tmp_path)
    data = p.read_bytes()
    offs = capgen.chunk_offsets(data)
    p.write_bytes(data[:offs[2] + 30])  # two good chunks of 25 samples
    r = run("fold", p, "-e", ELF, "--idle", "--group-by-cpu")
    assert r.returncode == 3
    assert sum(folded(r.stdout).values()) == 50
    assert r.stderr.count("\n") == 1 and "truncated chunk" in r.stderr and "50 samples" in r.stderr
    p.write_bytes(capgen.capture_bytes([(0, 0, 0, (A,))], None))  # killed gdbsample: no summary
    r = run("fold", p, "-e", ELF)
    assert r.returncode == 3 and r.stdout == "leaf_a 1\n" and "no summary" in r.stderr


def test_unknown_addresses_print_as_hex(tmp_path):
    p = tmp_path / "u.cap"
    capgen.write(p, [(0, 0, 0, (0x10, 0x20)), (1, 0, 0, (2 ** 64 - 1,))], {"duration_ns": 1})
    r = run("fold", p, "-e", ELF, "--lines", "--inline")
    assert r.returncode == 0 and r.stdout == "0x20;0x10 1\n0xffffffffffffffff 1\n"
