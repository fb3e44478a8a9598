# SPDX-License-Identifier: MIT
"""The KASLR offset: frames are runtime addresses, symbol files have link addresses (ELF,
System.map) or runtime ones (/proc/kallsyms); the offset is chosen per capture (--kaslr-offset,
the header's KASLR offset, the runtime _stext against a map's) and applied by every subcommand."""
import json
import os

import pytest

import capgen
from analyze import DATA, one_line_error
from analyze import call as run  # in this process: no interpreter start per call (make check time)

from gdbsample_analysis.symbols import Symbolizer, choose_offset

ELF = os.path.join(DATA, "tiny.elf")
MAP = os.path.join(DATA, "tiny.map")
A, B, M, SK = 0xffffffff80100000, 0xffffffff80100025, 0xffffffff80100065, 0xffffffff801000a9
OFF = 0x1e00000                      # the guest's KASLR offset in these tests
STACKS = [  # (flags, frames at link addresses, exact)
    (2, (B + 0x12, M, SK + 0xa), {1}),                 # interrupted at middle's first byte
    (0, (A + 0x10, M + 0x9, SK + 0xa), ()),
    (0, (M + 0x20, SK + 0xa), ()),
    (4, (0x401000,), ()),                              # user mode: not moved by KASLR
]
FOLDED = "0x401000 10\nstart_kernel;middle 10\nstart_kernel;middle;leaf_a 10\nstart_kernel;middle;leaf_b 10\n"


def slid(frames, off):
    return tuple(f + off if A <= f < A + 0x1000 else f for f in frames)


def make(tmp_path, name="k.cap", off=OFF, **hdr):
    """40 samples of STACKS with every kernel frame moved by off (the running guest's addresses)."""
    s = [(k * 1000, 0, fl, slid(fr, off), frozenset(ex)) for k in range(10) for fl, fr, ex in STACKS]
    p = tmp_path / name
    capgen.write(p, s, {"duration_ns": 10_000}, version=2, ncpus=1, **hdr)
    return str(p)


def write_map(tmp_path, name, off, stext=True):
    """tiny.map moved by off, with an _stext line (a data-typed one, as a mark may be)."""
    text = "".join("%016x %s" % (int(line[:16], 16) + off, line[16:]) for line in open(MAP).read().splitlines(True))
    if stext:
        text = "%016x A _stext\n" % (A + off) + text
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- the rule, on its own


def test_choose_offset():
    elf = Symbolizer([(A, 0x10, "f")], is_elf=True, stext=A)
    link_map = Symbolizer([(A, 0, "f")], stext=A)
    runtime_map = Symbolizer([(A + OFF, 0, "f")], stext=A + OFF)
    bare_map = Symbolizer([(A, 0, "f")])
    assert choose_offset(elf, OFF, A + OFF) == OFF
    assert choose_offset(elf, None, A + OFF) == 0              # an ELF goes by the header only
    assert choose_offset(link_map, None, A + OFF) == OFF       # stext - map's _stext
    assert choose_offset(link_map, 0x400000, A + OFF) == OFF   # ... before the header's offset
    assert choose_offset(runtime_map, OFF, A + OFF) == 0       # a kallsyms dump of this boot
    assert choose_offset(link_map, OFF, 0) == OFF              # no runtime _stext: the header
    assert choose_offset(bare_map, OFF, A + OFF) == OFF        # no _stext in the map: the header
    assert choose_offset(bare_map, None, A + OFF) == 0
    for syms in (elf, link_map, runtime_map, bare_map):
        assert choose_offset(syms, OFF, A + OFF, forced=0x200000) == 0x200000
        assert choose_offset(syms, OFF, A + OFF, forced=0) == 0


def test_rebased_lookups_take_and_give_runtime_addresses():
    s = Symbolizer.load(ELF)
    r = s.rebased(OFF)
    assert r.lookup(M + OFF) == ("middle", M + OFF) and r.lookup(M) is None
    assert r.frame(M + OFF, True) == ("leaf_b", B + OFF) and r.frame_name(A + OFF, True) == "0x%x" % (A + OFF)
    assert s.lookup(M) == ("middle", M) and s.offset == 0     # the original is untouched
    assert r.line(M + OFF) == s.line(M) and r.line(M + OFF)[1] == 24
    assert r.inline_chain(B + 0x12 + OFF) == s.inline_chain(B + 0x12)
    assert s.rebased(-OFF).lookup(M - OFF) == ("middle", M - OFF)


# -- every subcommand


@pytest.mark.parametrize("how", ["elf", "map without _stext", "link map", "kallsyms"])
def test_fold_names_a_moved_kernel(tmp_path, how):
    syms = {"elf": ELF, "map without _stext": MAP, "link map": write_map(tmp_path, "System.map", 0),
            "kallsyms": write_map(tmp_path, "kallsyms", OFF)}[how]
    # the header's offset is wrong on purpose where the map's _stext must win
    kaslr = 0x400000 if how in ("link map", "kallsyms") else OFF
    r = run("fold", make(tmp_path, kaslr_offset=kaslr, stext=A + OFF), "-e", syms)
    assert r.returncode == 0 and r.stderr == "" and r.stdout == FOLDED


def test_unknown_offset_is_zero_and_kaslr_offset_wins(tmp_path):
    cap = make(tmp_path)                                           # no KASLR flag, no stext
    unnamed = run("fold", cap, "-e", ELF).stdout
    assert "middle" not in unnamed and "0x%x" % (M + OFF) in unnamed
    assert run("fold", cap, "-e", ELF, "--kaslr-offset", "%x" % OFF).stdout == FOLDED
    assert run("fold", cap, "-e", MAP, "--kaslr-offset", "0x%x" % OFF).stdout == FOLDED
    known = make(tmp_path, "known.cap", kaslr_offset=OFF)
    assert run("fold", known, "-e", ELF).stdout == FOLDED
    assert run("fold", known, "-e", ELF, "--kaslr-offset", "0").stdout == unnamed
    unslid = make(tmp_path, "zero.cap", off=0, kaslr_offset=OFF)  # the header lies: force 0
    assert run("fold", unslid, "-e", ELF, "--kaslr-offset", "0x0").stdout == FOLDED
    neg = make(tmp_path, "neg.cap", off=-OFF)                      # negative: give it with =
    assert run("fold", neg, "-e", ELF, "--kaslr-offset=-0x%x" % OFF).stdout == FOLDED


def test_report_lines_and_speedscope(tmp_path):
    cap = make(tmp_path, kaslr_offset=OFF)
    base = make(tmp_path, "base.cap", off=0, kaslr_offset=0)
    for args in (["report", "-e", ELF], ["fold", "-e", ELF, "--lines", "--inline"],
                 ["speedscope", "-e", ELF]):
        moved, at_link = run(args[0], cap, *args[1:]), run(args[0], base, *args[1:])
        assert moved.returncode == 0 and moved.stdout.replace("k.cap", "base.cap") == at_link.stdout, args
    assert "<- middle+0x0\n" in run("report", cap, "-e", ELF).stdout
    doc = json.loads(run("speedscope", cap, "-e", ELF).stdout)
    assert {"name": "middle", "file": "tiny.c", "line": 24} in doc["shared"]["frames"]


def test_diff_flamegraph_and_compare(tmp_path):
    moved = make(tmp_path)                                         # offset unknown to the capture
    base = make(tmp_path, "base.cap", off=0)
    r = run("diff", moved, base, "-e", ELF, "--no-table", "--kaslr-offset", "0", "--base-kaslr-offset", hex(OFF))
    assert r.returncode == 0 and r.stdout == "".join(
        "%s %s %s\n" % (line.rsplit(" ", 1)[0], line.rsplit(" ", 1)[1], line.rsplit(" ", 1)[1])
        for line in FOLDED.splitlines())
    r = run("diff", moved, moved, "-e", ELF, "--no-table", "--kaslr-offset", hex(OFF))
    assert "0x" not in r.stdout.replace("0x401000", "")            # --kaslr-offset is BASE's too
    f = tmp_path / "k.folded"
    f.write_text(FOLDED)
    svg = run("flamegraph", moved, "-e", ELF, "--kaslr-offset", hex(OFF), "--title", "t")
    assert svg.returncode == 0 and svg.stdout == run("flamegraph", f, "--title", "t").stdout
    svg = run("flamegraph", f, "--diff", moved, "-e", ELF, "--base-kaslr-offset", hex(OFF))
    assert svg.returncode == 0 and svg.stdout == run("flamegraph", f, "--diff", f).stdout
    r = run("compare", f, moved, "-e", ELF, "--kaslr-offset", hex(OFF))
    assert r.returncode == 0 and "verdict: consistent" in r.stdout


@pytest.mark.parametrize("cmd", [["fold"], ["report"], ["speedscope"], ["flamegraph"], ["compare", "x"],
                                 ["diff", "sample.cap"]])
def test_bad_offset_is_a_usage_error(cmd):
    r = run(*cmd, "sample.cap", "-e", "tiny.elf", "--kaslr-offset", "zz")
    assert r.returncode == 2 and one_line_error(r) and "--kaslr-offset" in r.stderr


def test_info_shows_the_header_facts(tmp_path):
    out = run("info", make(tmp_path, kaslr_offset=OFF, stext=A + OFF, methods=capgen.METHOD_ORC)).stdout
    assert "kaslr       offset 0x1e00000, known\n" in out
    assert "stext       0x%x (the guest's runtime _stext)\n" % (A + OFF) in out
    assert "methods     orc\n" in out and "10 through an interrupt (exact frames)" in out
    out = run("info", make(tmp_path)).stdout
    assert "kaslr       offset unknown (header flag clear)\n" in out and "stext       unknown\n" in out
    assert "methods     none recorded\n" in out
    assert "kaslr" not in run("info", "sample.cap").stdout          # version 1 has no such fields
