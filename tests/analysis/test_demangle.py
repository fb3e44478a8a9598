# SPDX-License-Identifier: MIT
"""Demangling (issue 24, item 3): C++ from g++ and Rust (legacy and v0) from Debian's rustc, in
gdbsample-analyze's names through c++filt -i -- the names gdbsample's libiberty gives."""
import os
import shutil
import subprocess

import pytest

from analyze import call as run
from analyze import one_line_error

from gdbsample_analysis import demangle
from gdbsample_analysis.symbols import Symbolizer

CASES = [  # the same table as tests/sampler/test_demangle.c (None: not mangled; "": rejected)
    ("_ZN2ns11SymbolTable7ResolveEm", "ns::SymbolTable::Resolve(unsigned long)"),
    ("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"),
    ("_ZN2ns5Table7ResolveEv", "ns::Table::Resolve()"),
    ("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"),
    ("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example"),
    ("_ZN12_GLOBAL__N_14workEv", "(anonymous namespace)::work()"),
    ("_ZN3foo", ""), ("_RX", ""),
    ("chain4", None), ("_Zero", None), ("_raw_spin_lock", None), ("_", None),
]


def test_the_c_table():
    """The same answers as sampler/demangle.c on the same names."""
    table, rejected = demangle.demangle_all(n for n, _ in CASES)
    for name, want in CASES:
        if want:
            assert table.get(name) == want, name
        else:
            assert name not in table, name
        assert demangle.looks_mangled(name) == (want is not None), name
    assert rejected == sum(1 for _, w in CASES if w == "")


CXX = """namespace ns {
struct SymbolTable { unsigned long Resolve(unsigned long a); };
unsigned long SymbolTable::Resolve(unsigned long a) { return a * 3 + 1; }
}
extern "C" unsigned long plain_c(unsigned long a) { return a + 7; }
"""


def test_cxx_object_names_are_demangled(tmp_path):
    src, obj = tmp_path / "t.cc", tmp_path / "t.o"
    src.write_text(CXX)
    subprocess.run(["g++", "-c", "-O1", "-o", str(obj), str(src)], check=True)
    names = Symbolizer.load(str(obj)).names
    assert "ns::SymbolTable::Resolve(unsigned long)" in names and "plain_c" in names, names
    demangle.enabled = False
    try:
        assert "_ZN2ns11SymbolTable7ResolveEm" in Symbolizer.load(str(obj)).names
    finally:
        demangle.enabled = True


RUST = """#[no_mangle] pub extern "C" fn plain_entry(a: u64) -> u64 { walker::step(a) }
pub mod walker { #[inline(never)] pub fn step(a: u64) -> u64 { a.wrapping_mul(3) ^ 5 } }
"""


@pytest.mark.parametrize("mangling", ["legacy", "v0"])
def test_rust_object_names_are_demangled(tmp_path, mangling):
    rustc = "/usr/bin/rustc"   # Debian's (rustc package), not a rustup toolchain on PATH
    if not os.path.exists(rustc):
        pytest.skip("Debian's rustc is not installed (apt-get install rustc; make deps does)")
    src, obj, elf = tmp_path / "walk.rs", tmp_path / "walk.o", tmp_path / "walk.elf"
    src.write_text(RUST)
    flags = [] if mangling == "legacy" else ["-C", "symbol-mangling-version=v0"]   # legacy: the default
    r = subprocess.run([rustc, "--crate-type=lib", "--crate-name=walk", "--emit=obj", "-O"] + flags +
                       ["-o", str(obj), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # linked at a kernel address (an object's functions all start at 0 of their own sections)
    subprocess.run(["ld", "-e", "plain_entry", "-Ttext=0xffffffff81000000", "--build-id=none", "-o", str(elf),
                    str(obj)], check=True)
    raw = subprocess.run(["nm", str(elf)], capture_output=True, text=True, check=True).stdout
    assert ("_RNvNtCs" if mangling == "v0" else "_ZN4walk6walker4step17h") in raw, raw
    names = Symbolizer.load(str(elf)).names
    assert "walk::walker::step" in names and "plain_entry" in names, names


def test_missing_cxxfilt_is_one_line(tmp_path, monkeypatch):
    """Without c++filt a table with mangled names is refused in one line naming the fixes."""
    m = tmp_path / "m.map"
    m.write_text("ffffffff80100000 T _ZN2ns5Table7ResolveEv\n")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(Exception) as e:
        Symbolizer.load(str(m))
    assert "c++filt is missing" in str(e.value) and "--no-demangle" in str(e.value)


def test_no_demangle_flag_on_every_naming_verb(tmp_path):
    """Every verb with -e takes --no-demangle (a typo in it is a usage error, exit 2)."""
    from gdbsample_analysis.cli import build_parser
    verbs = build_parser()._subparsers._group_actions[0].choices
    for verb in ("fold", "report", "diff", "flamegraph", "speedscope", "pprof", "perf-script", "compare"):
        assert "--no-demangle" in verbs[verb].format_help(), verb
    r = run("fold", "x.cap", "--no-demangel")
    assert r.returncode == 2 and one_line_error(r)


INGUEST = """profiled 2000 ms
30 samples on 2 cpus, 0 dropped, source tick 100 Hz
cpu 0: 10 samples
cpu 1: 20 samples
66.7% 20 _ZNK4prof11SymbolTable7ResolveEm+0x1c
        <- _ZN4prof6Walker3RunEPVim+0x78
        <- work_symbols+0x83
33.3% 10 _ZN4prof4RingImLj64EE4PushEm+0x8
        <- _ZN4prof6Walker3RunEPVim+0x90
        <- work_symbols+0x83
"""


def test_inguest_profile_names_are_demangled_for_compare(tmp_path):
    """The in-guest `profile` names C++ functions as the kernel's table holds them (mangled); a
    profile read for `compare` demangles them as gdbsample prints them, so both sides name a
    function alike -- and keeps them raw under --no-demangle."""
    from gdbsample_analysis import profiles
    f = tmp_path / "inguest.txt"
    f.write_text(INGUEST)
    p = profiles.load(str(f), None, None)
    assert p.leaf == {"prof::SymbolTable::Resolve(unsigned long) const": 20,
                      "prof::Ring<unsigned long, 64u>::Push(unsigned long)": 10}, p.leaf
    assert p.chains[("prof::SymbolTable::Resolve(unsigned long) const", "prof::Walker::Run(int volatile*, unsigned long)",
                     "work_symbols")] == 20, p.chains
    demangle.enabled = False
    try:
        assert set(profiles.load(str(f), None, None).leaf) == {"_ZNK4prof11SymbolTable7ResolveEm",
                                                                "_ZN4prof4RingImLj64EE4PushEm"}
    finally:
        demangle.enabled = True


def test_no_demangle_lasts_one_run(tmp_path):
    """--no-demangle is one run's choice: an in-process run (analyze.call, as the tests and a
    library user run it) with it leaves demangling on for the next caller -- CI failed six
    demangle tests that ran on a worker after a --no-demangle call."""
    f = tmp_path / "t.folded"
    f.write_text("main;_ZN2ns11SymbolTable7ResolveEm 3\n")
    r = run("perf-script", str(f), "--no-demangle")
    assert r.returncode == 0, r.stderr
    assert demangle.enabled
    assert demangle.demangle_all(["_ZN2ns11SymbolTable7ResolveEm"])[0] == \
        {"_ZN2ns11SymbolTable7ResolveEm": "ns::SymbolTable::Resolve(unsigned long)"}
