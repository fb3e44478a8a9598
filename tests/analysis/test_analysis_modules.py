# SPDX-License-Identifier: MIT
"""Capture version 4's modules chunk: a capture that lists the guest's kernel modules names their
frames offline -- `fold` and `report` as "func [module]", perf-script with the module as DSO,
pprof with a mapping per module -- with or without a kernel map; damage in the chunk is damage."""
import gzip
import importlib.util
import os

import conftest
import pytest
from analyze import call
from capgen import chunk, header, record, summary_text
from gdbsample_analysis.capture import Capture

KTEXT = 0xffffffff81000000          # core kernel text (the map below)
MOD = 0xffffffffc0a00000            # hotmod's text
MODS = ("m hotmod %x %x\n"
        "s %x 40 hot_spin\n"
        "s %x 40 hot_read\n"
        "m other %x %x\n"
        "s %x 100 other_fn\n") % (MOD, MOD + 0x1000, MOD, MOD + 0x40, MOD + 0x100000, MOD + 0x101000,
                                    MOD + 0x100000)
MAP = "%x T _stext\n%x T do_syscall_64\n%x T vfs_read\n%x T _etext\n" % (KTEXT, KTEXT + 0x100, KTEXT + 0x200,
                                                                        KTEXT + 0x1000)


def write_v4(path, mods=MODS, crc_ok=True):
    samples = [
        # hot_spin <- hot_read <- vfs_read <- do_syscall_64, 6 times
        (1000 * i, i % 2, 0, (MOD + 0x10, MOD + 0x48, KTEXT + 0x210, KTEXT + 0x120)) for i in range(6)
    ] + [(9000, 0, 0, (MOD + 0x100010, KTEXT + 0x120))]   # other_fn <- do_syscall_64
    body = chunk(1, b"".join(record(*s, version=4) for s in samples), len(samples), 4)
    m = chunk(3, mods.encode(), mods.count("\n"), 4)
    if not crc_ok:
        m = m[:-3] + bytes([m[-3] ^ 1]) + m[-2:]
    body += m + chunk(2, summary_text({"samples": len(samples)}), 1, 4)
    with open(path, "wb") as f:
        f.write(header(version=4, kaslr_offset=0, stext=KTEXT) + body)


@pytest.fixture
def cap(tmp_path):
    p = tmp_path / "mods.cap"
    write_v4(str(p))
    (tmp_path / "k.map").write_text(MAP)
    return tmp_path


def test_reader_lists_modules(cap):
    c = Capture(str(cap / "mods.cap"))
    assert c.version == 4
    mods = c.load_modules()               # before the samples: namers need it first
    assert [m.name for m in mods] == ["hotmod", "other"]
    assert mods[0].ranges == [(MOD, MOD + 0x1000)] and mods[0].syms[1] == (MOD + 0x40, 0x40, "hot_read")
    assert len(list(c.samples())) == 7 and c.intact and [m.name for m in c.modules] == ["hotmod", "other"]


def test_fold_names_module_frames(cap):
    r = call("fold", "mods.cap", "-e", "k.map", "--task-format", "none", cwd=str(cap))
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.splitlines())
    assert lines == ["do_syscall_64;other_fn [other] 1",
                     "do_syscall_64;vfs_read;hot_read [hotmod];hot_spin [hotmod] 6"]
    # without a kernel map the modules are still named (the core frames are addresses)
    r = call("fold", "mods.cap", "--task-format", "none", cwd=str(cap))
    assert r.returncode == 0 and "hot_read [hotmod];hot_spin [hotmod] 6" in r.stdout
    assert "0x%x" % (KTEXT + 0x120) in r.stdout


def test_perf_script_module_dso(cap):
    r = call("perf-script", "mods.cap", "-e", "k.map", cwd=str(cap))
    assert r.returncode == 0, r.stderr
    assert "%16x hot_spin+0x10 ([hotmod])" % (MOD + 0x10) in r.stdout
    assert "%16x hot_read+0x8 ([hotmod])" % (MOD + 0x48) in r.stdout
    assert "%16x vfs_read+0x10 ([kernel.kallsyms])" % (KTEXT + 0x210) in r.stdout
    assert "[hotmod]" not in r.stdout.replace("([hotmod])", "")   # the module is the DSO, not the name


def test_pprof_mapping_per_module(cap):
    pb2 = os.path.join(conftest.BUILD, "pprof", "profile_pb2.py")
    if not os.path.exists(pb2):
        pytest.fail(f"{pb2} is missing: run `make` (protoc generates it from analysis/proto/profile.proto)")
    spec = importlib.util.spec_from_file_location("mods_profile_pb2", pb2)
    pb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pb)
    r = call("pprof", "mods.cap", "-e", "k.map", "-o", "out.pb.gz", cwd=str(cap))
    assert r.returncode == 0, r.stderr
    prof = pb.Profile()
    prof.ParseFromString(gzip.decompress((cap / "out.pb.gz").read_bytes()))
    names = {m.id: prof.string_table[m.filename] for m in prof.mapping}
    assert names[2] == "[hotmod]" and names[3] == "[other]"
    by_addr = {loc.address: loc.mapping_id for loc in prof.location}
    assert by_addr[MOD + 0x10] == 2 and by_addr[MOD + 0x100010] == 3 and by_addr[KTEXT + 0x120] == 1
    funcs = {prof.string_table[f.name] for f in prof.function}
    assert "hot_spin [hotmod]" in funcs


def test_damaged_modules_chunk(tmp_path):
    p = tmp_path / "bad.cap"
    write_v4(str(p), mods="s %x 10 orphan\n" % MOD)     # a symbol before any module
    c = Capture(str(p))
    list(c.samples())
    assert not c.intact and "bad modules chunk" in c.problem
    write_v4(str(p), crc_ok=False)
    c = Capture(str(p))
    assert c.load_modules() == []                       # a bad CRC: nothing from it is trusted
    list(c.samples())
    assert not c.intact and "checksum" in c.problem


def test_v3_reader_refuses_chunk_type_3_in_v3(tmp_path):
    """A modules chunk is only known from version 4 on: in a v3 file it stays damage."""
    p = tmp_path / "v3.cap"
    body = chunk(1, record(0, 0, 0, (KTEXT,), version=3), 1, 3) + chunk(3, MODS.encode(), 5, 3)
    p.write_bytes(header(version=3) + body)
    c = Capture(str(p))
    list(c.samples())
    assert not c.intact and "unknown chunk type 3" in c.problem
