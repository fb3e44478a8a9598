# SPDX-License-Identifier: MIT
"""Exact frames (interrupted pcs, capture version 2) are named by their own address everywhere:
fold, report, speedscope, flame graph input, compare and diff -- one naming rule (symbols.py)."""
import json
import os

import pytest

import capgen
from analyze import DATA
from analyze import call as run  # in this process: no interpreter start per call (make check time)

ELF = os.path.join(DATA, "tiny.elf")
MAP = os.path.join(DATA, "tiny.map")
A, B, M, SK = 0xffffffff80100000, 0xffffffff80100025, 0xffffffff80100065, 0xffffffff801000a9
R_SK_M = SK + 0xa        # start_kernel's return address from its call of middle
R_M_A = M + 0x9          # middle's return address from its call of leaf_a
# leaf_b, in an interrupt taken at middle's first byte: frame 1 is exact. Named as a return
# address it would be leaf_b (address - 1 is leaf_b's last byte) -- the case where the rules differ.
AT_ENTRY = (B + 0x12, M, R_SK_M)
# leaf_b again, interrupting leaf_a at the text's first byte: address - 1 is in no function
AT_TEXT = (B + 0x4, A, R_M_A, R_SK_M)


def make(tmp_path, exact=True, name="x.cap"):
    """60 samples at middle's first byte, 20 at leaf_a's, 20 plain leaf_a <- middle calls."""
    e = frozenset({1}) if exact else frozenset()
    s = []
    for k in range(50):
        t = k * 10_000_000
        s.append((t, 0, 2, AT_ENTRY, e) if k % 5 < 3 else (t, 0, 2, AT_TEXT, e) if k % 5 == 3
                 else (t, 0, 0, (A + 0x10, R_M_A, R_SK_M)))
        s.append((t, 1, 2, AT_ENTRY, e))
    p = tmp_path / name
    capgen.write(p, s, {"duration_ns": 500_000_000, "samples": 100}, per_chunk=16, ncpus=2,
                 version=2, kaslr_offset=0)
    return str(p)


def folded(text):
    return {line.rpartition(" ")[0]: int(line.rpartition(" ")[2]) for line in text.splitlines()}


@pytest.mark.parametrize("syms", [ELF, MAP])
def test_fold(tmp_path, syms):
    r = run("fold", make(tmp_path), "-e", syms)
    assert r.returncode == 0 and r.stderr == ""
    assert folded(r.stdout) == {"start_kernel;middle;leaf_b": 80, "start_kernel;middle;leaf_a;leaf_b": 10,
                                "start_kernel;middle;leaf_a": 10}
    # the same frames without the exact marks: return addresses, named by address - 1
    plain = folded(run("fold", make(tmp_path, exact=False), "-e", syms).stdout)
    assert plain["start_kernel;leaf_b;leaf_b"] == 80
    assert ("start_kernel;middle;0x%x;leaf_b" % A) in plain


def test_fold_lines_use_the_interrupted_pc(tmp_path):
    r = run("fold", make(tmp_path), "-e", ELF, "--lines")
    stack = next(s for s in folded(r.stdout) if s.count(";") == 2 and "leaf_b" in s)
    assert stack.split(";")[1] == "middle (tiny.c:24)"   # middle's first line, not leaf_b's last


def test_report(tmp_path):
    r = run("report", make(tmp_path), "-e", ELF)
    assert r.returncode == 0
    assert "80.0% 80 leaf_b+0x12\n        <- middle+0x0\n        <- start_kernel+0xa\n" in r.stdout
    assert "10.0% 10 leaf_b+0x4\n        <- leaf_a+0x0\n        <- middle+0x9\n" in r.stdout
    plain = run("report", make(tmp_path, exact=False), "-e", ELF).stdout
    assert "        <- leaf_b+0x40\n" in plain and "        <- 0x%x\n" % A in plain


def test_report_keeps_exact_and_return_chains_apart(tmp_path):
    """The same addresses, once interrupted and once returned to, are two chains (as in C)."""
    s = [(0, 0, 0, AT_ENTRY, frozenset({1})), (1, 0, 0, AT_ENTRY), (2, 0, 0, AT_ENTRY)]
    p = tmp_path / "mixed.cap"
    capgen.write(p, s, {"duration_ns": 3}, version=2)
    out = run("report", p, "-e", ELF).stdout
    assert "66.7% 2 leaf_b+0x12\n        <- leaf_b+0x40\n" in out
    assert "33.3% 1 leaf_b+0x12\n        <- middle+0x0\n" in out


def test_speedscope(tmp_path):
    r = run("speedscope", make(tmp_path), "-e", ELF)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    frames = doc["shared"]["frames"]
    stacks = {tuple(frames[i]["name"] for i in st) for p in doc["profiles"] for st in p["samples"]}
    assert stacks == {("start_kernel", "middle", "leaf_b"), ("start_kernel", "middle", "leaf_a", "leaf_b"),
                      ("start_kernel", "middle", "leaf_a")}
    middle = next(f for f in frames if f["name"] == "middle")
    assert middle["file"] == "tiny.c" and middle["line"] == 24


EXPECTED = "start_kernel;middle;leaf_a 10\nstart_kernel;middle;leaf_a;leaf_b 10\nstart_kernel;middle;leaf_b 80\n"


def test_flamegraph_of_a_capture(tmp_path):
    f = tmp_path / "x.folded"
    f.write_text(EXPECTED)
    svg = run("flamegraph", make(tmp_path), "-e", ELF, "--title", "t")
    assert svg.returncode == 0 and svg.stdout == run("flamegraph", f, "--title", "t").stdout


def test_diff_against_the_fold(tmp_path):
    cap = make(tmp_path)
    f = tmp_path / "x.folded"
    f.write_text(EXPECTED)
    r = run("diff", f, cap, "-e", ELF, "--no-table")
    assert r.returncode == 0
    assert all(b == n for _, b, n in (line.rsplit(" ", 2) for line in r.stdout.splitlines()))


def test_compare_reduces_chains_by_the_same_rule(tmp_path):
    inguest = tmp_path / "serial.txt"
    inguest.write_text("profiled 1000 ms\n100 samples on 2 cpus, 0 dropped, source tick 100 Hz\n"
                       "80.0% 80 leaf_b+0x12\n        <- middle+0x0\n        <- start_kernel+0xa\n"
                       "10.0% 10 leaf_b+0x4\n        <- leaf_a+0x0\n        <- middle+0x9\n"
                       "        <- start_kernel+0xa\n"
                       "10.0% 10 leaf_a+0x10\n        <- middle+0x9\n        <- start_kernel+0xa\n")
    r = run("compare", inguest, make(tmp_path), "-e", ELF)
    assert r.returncode == 0, r.stdout + r.stderr
    chains = {line.split("  ")[1].strip(): line.split()[-2:] for line in r.stdout.splitlines()
              if line.startswith("  ") and " <- " in line}
    assert chains["leaf_b <- middle <- start_kernel"] == ["80.0", "80.0"]
    assert chains["leaf_b <- leaf_a <- middle <- start_kernel"] == ["10.0", "10.0"]
