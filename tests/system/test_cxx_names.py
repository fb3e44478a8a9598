# SPDX-License-Identifier: MIT
"""C++ names end to end (issue 24, item 3): our x86_64 kernel's `work symbols` is C++
(kernel/cxxwork.cpp: a namespaced class's const member, a template's member, a function in an
anonymous namespace), so its frames reach every output mangled unless demangled. gdbsample's
folded output names them as `c++filt -i` does, and --no-demangle keeps them raw; a capture of the
same guest read by gdbsample-analyze names them alike; and `compare` of the in-guest profile (whose
table holds the raw names) against gdbsample's report names both sides demangled. The guest is
stopped by its pid (the `boot` fixture); every gdbsample and gdbsample-analyze runs to completion."""
import os
import subprocess

import conftest
import pytest

GDBSAMPLE = conftest.GDBSAMPLE
ANALYZE = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")
RESOLVE = "prof::SymbolTable::Resolve(unsigned long) const"
RUN = "prof::Walker::Run(int volatile*, unsigned long)"
PUSH = "prof::Ring<unsigned long, 64u>::Push(unsigned long)"
RAW = {RESOLVE: "_ZNK4prof11SymbolTable7ResolveEm", RUN: "_ZN4prof6Walker3RunEPVim",
       PUSH: "_ZN4prof4RingImLj64EE4PushEm"}


@pytest.fixture(autouse=True)
def need_binary(need_gdbsample):
    """(tests/conftest.py)"""


def gdbsample(g, *args):
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", g.kernel] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def analyze(*args):
    r = subprocess.run([ANALYZE] + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    return r


def frames_of(folded):
    return {f for frames, _ in conftest.folded_rows(folded) for f in frames}


def test_cxx_workload_names_in_every_output(boot, tmp_path):
    g = boot(smp=2)
    g.work("symbols")
    # gdbsample, folded: the chain under work_symbols, demangled; the summary counts the names
    rows, log = {}, ""
    for _ in range(4):  # a loaded host reaches fewer samples per run
        r = gdbsample(g, "-r", "200", "-d", "2", "-f", "folded", "--summary-format", "kv")
        log += r.stdout
        for frames, n in conftest.folded_rows(r.stdout):
            if frames[-1] == RESOLVE:
                assert frames[-3:-1] == ["work_symbols", RUN], frames
                rows[RESOLVE] = rows.get(RESOLVE, 0) + n
        if rows.get(RESOLVE, 0) >= 100:
            break
    assert rows.get(RESOLVE, 0) >= 100, log
    assert not any(f.startswith(("_Z", "_R")) for f in frames_of(log)), log
    kv = dict(l.split(" ", 1) for l in r.stderr.splitlines() if " " in l and not l.startswith("gdbsample:"))
    assert int(kv["names_demangled"]) >= 3 and int(kv["names_undemangled"]) == 0, r.stderr
    # --no-demangle: the raw names, and none demangled
    raw = gdbsample(g, "-r", "200", "-d", "2", "-f", "folded", "-q", "--no-demangle").stdout
    assert RAW[RESOLVE] in frames_of(raw) and not any("prof::" in f for f in frames_of(raw)), raw
    # a capture, named by gdbsample-analyze (binutils' c++filt): the same names
    cap = tmp_path / "symbols.cap"
    gdbsample(g, "-r", "200", "-d", "2", "-f", "capture", "-o", cap, "-q")
    a = analyze("fold", "-e", g.kernel, cap)
    assert a.returncode == 0, a.stderr
    names = frames_of(a.stdout)
    assert {RESOLVE, RUN} <= names and not any(f.startswith(("_Z", "_R")) for f in names), a.stdout
    # compare: the in-guest profile's raw names and gdbsample's demangled ones meet
    inguest, ext = tmp_path / "inguest.txt", tmp_path / "external.txt"
    inguest.write_text(g.cmd("profile 2000", timeout=60))
    assert RAW[RESOLVE] in inguest.read_text(), inguest.read_text()
    gdbsample(g, "-r", "200", "-d", "2", "-f", "report", "-o", ext, "-q")
    c = analyze("compare", inguest, ext)
    assert c.returncode in (0, 1, 4) and not c.stderr.strip().startswith("gdbsample-analyze:"), c.stderr
    assert RESOLVE in c.stdout and "_ZNK4prof" not in c.stdout, c.stdout
