# SPDX-License-Identifier: MIT
"""Symbolizer: the lookup rules shared with sampler/symbols.c, maps, ELF, DWARF lines and inlines."""
import os
import subprocess

import conftest
import pytest

from analyze import DATA

from gdbsample_analysis.symbols import Symbolizer, SymbolError, is_return, parse_map

ELF = os.path.join(DATA, "tiny.elf")


def test_lookup_rules():
    s = Symbolizer([(0x1000, 0x10, "sized"), (0x1000, 0, "alias"), (0x2000, 0, "open"), (0x3000, 0x8, "last")])
    assert s.lookup(0xfff) is None
    assert s.lookup(0x1000) == ("sized", 0x1000)       # sized wins over an alias at one address
    assert s.lookup(0x100f) == ("sized", 0x1000)
    assert s.lookup(0x1010) is None                    # past a sized symbol: no fallback
    assert s.lookup(0x2fff) == ("open", 0x2000)        # unsized: up to the next symbol
    assert s.lookup(0x3008) is None
    assert s.frame_name(0x1010, False) == "0x1010" and s.frame_name(0x1001, True) == "sized"
    assert s.frame_name(0x1000, True) == "0x1000"      # ret - 1 is before every symbol: hex of ret
    assert s.frame_name(0, False) == "0x0" and s.frame_name(2 ** 64 - 1, False) == "0xffffffffffffffff"


def test_one_naming_rule_for_frames():
    s = Symbolizer([(0x1000, 0x10, "first"), (0x1010, 0x10, "second")])
    assert not is_return(0) and is_return(1) and is_return(2)
    assert not is_return(1, frozenset({1})) and is_return(2, frozenset({1}))
    assert not is_return(0, frozenset({1}))            # the leaf is always named by itself
    # a frame at second's first byte: an interrupted pc is in second, a return address's call in first
    assert s.frame(0x1010, False) == ("second", 0x1010) and s.frame(0x1010, True) == ("first", 0x1000)
    assert s.frame_name(0x1010, is_return(1, frozenset({1}))) == "second"
    assert s.frame_name(0x1010, is_return(1)) == "first"
    assert s.frame_addr(0x1010, True) == 0x100f and s.frame_addr(0x1010, False) == 0x1010


def test_unsized_last_map_symbol_reaches_1mib_only():
    s = Symbolizer([(0x1000, 0, "last")])
    assert s.lookup(0x1000 + 0x100000) == ("last", 0x1000)
    assert s.lookup(0x1000 + 0x100001) is None
    e = Symbolizer([(0x1000, 0, "last")], is_elf=True)
    assert e.lookup(0x1000 + 0x200000) == ("last", 0x1000)


def test_map_formats():
    text = "ffffffff80100000 T start\n\nffffffff80100010 0000000000000008 t sized\n" \
           "ffffffff80100020 D data\nffffffff80100030 W weak [mod]\n"
    assert parse_map(text) == [(0xffffffff80100000, 0, "start"), (0xffffffff80100010, 8, "sized"),
                               (0xffffffff80100030, 0, "weak")]


def test_maps_record_stext_of_any_type(tmp_path):
    marks = {}
    parse_map("ffffffff81000000 A _stext\nffffffff81000000 T start\nffffffff81000040 A _stext\n", marks)
    assert marks == {"_stext": 0xffffffff81000000}     # the first one, though not a text symbol
    p = tmp_path / "System.map"
    p.write_text("ffffffff81000000 D _stext\nffffffff81000010 T f\n")
    m = Symbolizer.load(str(p))
    assert m.stext == 0xffffffff81000000 and m.names == ["f"]
    p.write_text("ffffffff81000010 T f\n")
    assert Symbolizer.load(str(p)).stext is None
    assert Symbolizer.load(ELF).stext is None          # tiny.elf has no _stext


@pytest.mark.parametrize("text, why", [("", "empty symbol map"), ("hello world\n", "not an ELF or nm-style"),
                                       ("zz T x\n", "line 1: address .zz. is not a 64-bit hex")])
def test_bad_maps(tmp_path, text, why):
    p = tmp_path / "m"
    p.write_text(text)
    with pytest.raises(SymbolError, match=why) as e:
        Symbolizer.load(str(p))
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_elf_matches_nm(tmp_path):
    elf = Symbolizer.load(ELF)
    assert elf.is_elf and elf.names == ["leaf_a", "leaf_b", "middle", "start_kernel"]
    m = Symbolizer.load(os.path.join(DATA, "tiny.map"))
    assert m.starts == elf.starts


def test_stripped_elf_and_garbage(tmp_path):
    data = open(ELF, "rb").read()
    p = tmp_path / "broken.elf"
    p.write_bytes(data[:64] + b"\xff" * 100)
    with pytest.raises(SymbolError, match="bad ELF|no function symbols"):
        Symbolizer.load(str(p))
    p.write_bytes(b"\x00\x01\x02\xff" * 10)
    with pytest.raises(SymbolError):
        Symbolizer.load(str(p))
    with pytest.raises(SymbolError, match="No such file"):
        Symbolizer.load(str(tmp_path / "missing"))


def test_lines_and_inlines_from_dwarf():
    s = Symbolizer.load(ELF)
    a = s.starts[s.names.index("leaf_a")]
    f, line = s.line(a)
    assert f == "tiny.c" and 11 <= line <= 15
    assert s.line(0x10) is None
    mid = s.starts[s.names.index("middle")]
    end = s.starts[s.names.index("start_kernel")]
    inl = [s.inlined(x) for x in range(mid, end)]
    assert ["mix"] in inl and [] in inl                 # middle inlines mix on some addresses only
    assert s.inlined(a) == [] and s.inlined(0x10) == []
    chain = next(s.inline_chain(x) for x in range(mid, end) if s.inlined(x))
    assert chain[0][0] == "mix" and chain[0][1] == "tiny.c" and chain[0][2] == 26  # call site
    m = Symbolizer.load(os.path.join(DATA, "tiny.map"))
    assert m.line(a) is None and m.inlined(a) == []     # a map has no DWARF: no crash


def test_aarch64_mapping_symbols_are_not_functions():
    """The aarch64 kernel's $x/$d mapping symbols (NOTYPE, in .text) mark code and literal pools,
    not functions: a pc after a literal pool is still in its function, as gdbsample names it."""
    if not os.path.exists(conftest.KERNEL_A64):
        pytest.fail(f"{conftest.KERNEL_A64} is missing: run `make kernel`")
    s = Symbolizer.load(conftest.KERNEL_A64)
    assert s.names and not [n for n in s.names if n.startswith("$")]
    assert "trap_common" in s.names and "idle_loop" in s.names


BOUNDED_S = """\t.text
\t.globl f
\t.type f, @function
f:\t.fill 16, 1, 0x90
\t.size f, 16
\t.globl g
\t.type g, @function
g:\t.fill 48, 1, 0x90
\t.globl _etext
_etext:
"""


def test_names_are_bounded_by_what_they_name(tmp_path):
    """Issue 24: a pc past a symbol's size, past its ELF section's end, or past _etext (for a
    symbol below it) is unknown -- shown as its address -- never "g+0x3f7fff..." or "_etext+...".
    The ELF is a real one, linked here (.text: 64 bytes holding sized f, unsized g, then the
    _etext label at the section's end); sampler/symbols.c has the same case (test_symbols.c)."""
    src, elf = tmp_path / "b.s", tmp_path / "b.elf"
    src.write_text(BOUNDED_S)
    subprocess.run(["gcc", "-nostdlib", "-static", "-no-pie", "-Wl,-Ttext=0xffffffff81000000", "-Wl,-e,f",
                  "-Wl,--build-id=none", "-o", str(elf), str(src)], check=True)
    s = Symbolizer.load(str(elf))
    va = 0xffffffff81000000
    assert s.lookup(va + 15) == ("f", va) and s.lookup(va + 16) == ("g", va + 16)
    assert s.lookup(va + 63) == ("g", va + 16)          # unsized: up to its section's end
    assert s.lookup(va + 64) is None                    # _etext names no instruction
    assert s.frame_name(va + 0x3000000, False) == "0x%x" % (va + 0x3000000)
    assert s.frame_name(va + 64, True) == "g"           # a return address: its call is at 63
    moved = s.rebased(0x200000)                         # KASLR moves the bound with the name
    assert moved.lookup(va + 0x200000 + 63) == ("g", va + 0x200000 + 16)
    assert moved.lookup(va + 0x200000 + 64) is None
    # a map has no sections: _etext bounds what lies below it, not the init text above it
    m = Symbolizer(parse_map("ffffffff81000000 T a\nffffffff81000100 T _etext\nffffffff81800000 T init_fn\n"),
                   etext=0xffffffff81000100)
    assert m.lookup(0xffffffff810000ff) == ("a", 0xffffffff81000000)
    assert m.lookup(0xffffffff81000100) == ("_etext", 0xffffffff81000100)
    assert m.lookup(0xffffffff81800010) == ("init_fn", 0xffffffff81800000)
    mp = tmp_path / "b.map"
    mp.write_text("ffffffff81000000 T a\nffffffff81000100 T _etext\n")
    assert Symbolizer.load(str(mp)).etext == 0xffffffff81000100
