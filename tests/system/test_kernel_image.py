# SPDX-License-Identifier: MIT
"""The kernel image: upper-half ELF64 with DWARF, PVH note, and a baked symbol table that
matches the final link (and a build that refuses one that does not)."""
import os
import shutil
import struct
import subprocess
import tempfile

import conftest
import pytest
from elftools.elf.elffile import ELFFile

pytestmark = pytest.mark.qemu  # rebuilds the kernel in a scratch tree

KERNBASE = 0xffffffff80000000


def baked_table(elf):
    sec = elf.get_section_by_name(".symtab_data")
    data, base = sec.data(), sec["sh_addr"]
    symtab = elf.get_section_by_name(".symtab")
    addr_of = {s.name: s["st_value"] for s in symtab.iter_symbols()}
    count = struct.unpack_from("<Q", data, addr_of["symtab_count"] - base)[0]
    addrs = struct.unpack_from(f"<{count}Q", data, addr_of["symtab_addr"] - base)
    names = struct.unpack_from(f"<{count}I", data, addr_of["symtab_name"] - base)
    strings = addr_of["symtab_strings"] - base
    out = []
    for a, n in zip(addrs, names):
        end = data.index(b"\0", strings + n)
        out.append((a, data[strings + n:end].decode()))
    return out


def test_image_is_upper_half_elf64_with_dwarf_and_pvh_note():
    with open(conftest.KERNEL, "rb") as f:
        elf = ELFFile(f)
        assert elf.elfclass == 64 and elf["e_machine"] == "EM_X86_64"
        assert elf.has_dwarf_info() and elf.get_section_by_name(".debug_info")
        text = elf.get_section_by_name(".text")
        assert text["sh_addr"] >= KERNBASE
        notes = [n for seg in elf.iter_segments() if seg["p_type"] == "PT_NOTE" for n in seg.iter_notes()]
        pvh = [n for n in notes if n["n_name"] == "Xen" and n["n_type"] == 18]
        assert pvh, "no XEN_ELFNOTE_PHYS32_ENTRY note in a PT_NOTE segment"
        entry = struct.unpack("<Q", pvh[0]["n_descdata"][:8])[0]
        assert entry == elf.get_section_by_name(".symtab").get_symbol_by_name("pvh_start32")[0]["st_value"] - KERNBASE
        assert not any(s.name.startswith(".multiboot") for s in elf.iter_sections())


def test_baked_table_matches_every_function_in_the_elf():
    with open(conftest.KERNEL, "rb") as f:
        elf = ELFFile(f)
        table = baked_table(elf)
        assert [a for a, _ in table] == sorted(a for a, _ in table)
        by_addr = dict(table)
        funcs = [s for s in elf.get_section_by_name(".symtab").iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]]
        assert len(funcs) > 100
        for s in funcs:
            assert s["st_value"] in by_addr, s.name
        for name in ("kmain", "trap", "split_a", "split_b", "split_c", "chain1", "chain8", "irqoff_spin"):
            assert name in by_addr.values()


def test_build_fails_when_the_table_disagrees_with_the_final_link():
    root = conftest.ROOT
    with tempfile.TemporaryDirectory() as tmp:
        build = os.path.join(tmp, "build")
        run = lambda *a: subprocess.run(["make", "--no-print-directory", "-j2", f"BUILD={build}", *a],
                                        cwd=root, capture_output=True, text=True)
        r = run(f"{build}/kernel.elf")
        assert r.returncode == 0, r.stderr
        table = os.path.join(build, "kernel", "symtab1.S")
        with open(table) as f:
            text = f.read()
        i = text.index("\t.quad 0xffffffff8")  # first function address
        with open(table, "w") as f:
            f.write(text[:i] + "\t.quad 0xffffffff80000000" + text[i + len("\t.quad 0xffffffff80000000"):])
        os.remove(os.path.join(build, "kernel.elf"))
        r = run(f"{build}/kernel.elf")
        assert r.returncode != 0
        assert "final link moved symbols relative to the baked-in table" in r.stderr
        shutil.rmtree(build)
