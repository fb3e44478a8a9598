# SPDX-License-Identifier: MIT
"""report and fold --group-by-cpu against gdbsample's own C writers (sampler/report.c, fold.c) on the
same samples: tests/analysis/replay.c feeds a capture through them (and sampler/capture.c's reader),
on the synthetic captures (version 1, version 2 with exact frames, version 3 with tasks) and on a
real version 4 capture recorded by build/gdbsample from the test kernel under QEMU."""
import os
import subprocess

import capgen
import conftest
import pytest

from analyze import DATA, HERE
from analyze import call as run  # in this process: no interpreter start per call (make check time)

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
OBJS = ["demangle", "capture", "symbols", "insn", "arch", "report", "fold", "hash", "rsp", "pace", "files", "task", "textnum", "offcpu"]


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    objs = [os.path.join(conftest.BUILD, "sampler", o + ".o") for o in OBJS]
    missing = [o for o in objs if not os.path.exists(o)]
    if missing:
        pytest.fail("%s missing: run `make build/gdbsample`" % missing[0])
    exe = str(tmp_path_factory.mktemp("replay") / "replay")
    # libz: capture.o's CRC-32; libiberty: symbols.o demangles
    subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-I", os.path.join(conftest.ROOT, "sampler"),
                    "-o", exe, os.path.join(HERE, "replay.c")] + objs + ["-lelf", "-lz", "-liberty"], check=True)
    return exe


def c_output(replay, kind, cap, elf, chains=8, idle=False):
    r = subprocess.run([replay, kind, str(cap), str(elf), str(chains)] + (["idle"] if idle else []),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 3), r.stderr
    return r.stdout


def same_as_gdbsample(replay, cap, elf):
    for chains, idle in ((8, False), (1, False), (3, True), (1000, True)):
        args = ["report", cap, "-e", elf, "--chains", chains] + (["--idle"] if idle else [])
        assert run(*args).stdout == c_output(replay, "report", cap, elf, chains, idle)
    assert run("fold", cap, "-e", elf, "--group-by-cpu").stdout == c_output(replay, "folded", cap, elf)
    assert run("fold", cap, "-e", elf, "--group-by-cpu", "--idle").stdout == \
        c_output(replay, "folded", cap, elf, idle=True)


@pytest.mark.parametrize("cap", ["sample.cap", "sample2.cap", "sample_v2.cap", "sample_v3.cap"])
@pytest.mark.parametrize("elf", ["tiny.elf", "tiny.map"])
def test_synthetic_capture(replay, cap, elf):
    same_as_gdbsample(replay, os.path.join(DATA, cap), os.path.join(DATA, elf))


def test_real_capture(replay, boot, tmp_path):
    if not os.path.exists(GDBSAMPLE):
        pytest.fail(f"{GDBSAMPLE} is missing: run `make build/gdbsample`")
    g = boot(smp=2)
    g.work("split 5 3 2")
    g.work("chain 6")
    cap = tmp_path / "real.cap"
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "200", "-d", "1.5", "-q",
                        "-f", "capture", "-o", str(cap)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    info = run("info", cap)
    assert info.returncode == 0 and "file intact" in info.stdout
    assert "format      version 4, x86_64\n" in info.stdout               # the C writer's version
    assert "tasks       testkernel" in info.stdout                         # whose tasks it named
    assert "kaslr       offset 0x" in info.stdout and "methods     " in info.stdout
    rep = run("report", cap, "-e", conftest.KERNEL)
    assert rep.returncode == 0
    assert any(w in rep.stdout for w in ("chain6+", "split_a+"))
    same_as_gdbsample(replay, cap, conftest.KERNEL)


@pytest.mark.parametrize("damage", ["unknown type", "type bit", "extension"])
def test_damaged_version_2_capture_stops_where_the_c_reader_stops(replay, tmp_path, damage):
    """Both readers keep the same samples of a v2 capture damaged mid-file, and both say so."""
    data = open(os.path.join(DATA, "sample_v2.cap"), "rb").read()
    offs = capgen.chunk_offsets(data)
    if damage == "unknown type":      # a well-formed chunk of a type v2 does not have
        data = data[:offs[2]] + capgen.chunk(7, b"later", 1, version=2) + data[offs[2]:]
    elif damage == "type bit":        # the samples chunk now claims type 3: its CRC catches it
        data = bytearray(data)
        data[offs[2] + 4] ^= 2
        data = bytes(data)
    else:                             # a record whose extension runs past its chunk
        rec = capgen.record(3_000_000_000, 0, 0, [0xffffffff80100065, 0xffffffff801000b3], {1}, version=2)
        data = data[:offs[2]] + capgen.chunk(1, rec[:-1], 1, version=2) + data[offs[2]:]
    cap = tmp_path / "damaged.cap"
    cap.write_bytes(data)
    elf = os.path.join(DATA, "tiny.elf")
    r = run("fold", cap, "-e", elf, "--group-by-cpu", "--idle")
    c = subprocess.run([replay, "folded", str(cap), elf, "8", "idle"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and c.returncode == 3 and r.stdout == c.stdout
    assert sum(int(line.rsplit(" ", 1)[1]) for line in r.stdout.splitlines()) == 80  # two chunks of 40


# tiny.elf's functions (tiny.map's addresses) renamed with ASCII names every output must escape
HOSTILE_NAMES = ["semi;colon", "esc\x1b[2J", "bell\x07", "del\x7f", "<&\"'>", "back\\slash"]
TINY = [0xffffffff80100000, 0xffffffff80100025, 0xffffffff80100065, 0xffffffff801000a9]


def test_maps_read_and_named_alike(replay, tmp_path):
    """The map grammar and the name rule are the same in C and Python (issue 22): hostile names
    fold byte for byte alike; every malformed map is refused by both, neither reads it in part."""
    from test_analysis_strict import BAD_MAPS
    m = tmp_path / "hostile.map"
    for names in (HOSTILE_NAMES[:4], HOSTILE_NAMES[2:]):
        m.write_text("".join("%x T %s\n" % (a, n) for a, n in zip(TINY, names)) + "ffffffff80101000 B sink\n")
        for cap in ("sample.cap", "sample_v3.cap"):
            same_as_gdbsample(replay, os.path.join(DATA, cap), m)
    for text, _ in BAD_MAPS:
        m.write_bytes(text.encode("utf-8"))
        c = subprocess.run([replay, "folded", os.path.join(DATA, "sample.cap"), str(m)],
                           capture_output=True, text=True, timeout=60)
        py = run("fold", "sample.cap", "-e", m)
        assert c.returncode == 1 and py.returncode == 1 and "line " in c.stderr and "line " in py.stderr, \
            (text, c.stderr, py.stderr)


MANGLED = ["_ZN2ns11SymbolTable7ResolveEm", "_ZN4core3fmt5write17h0123456789abcdefE",
           "_RNvCs15kBYyAo9fc_7mycrate7example", "_ZN3foo"]
READABLE = ["ns::SymbolTable::Resolve(unsigned long)", "core::fmt::write", "mycrate::example", "_ZN3foo"]


def test_mangled_names_read_alike(replay, tmp_path):
    """Demangling (issue 24) is the same in C (libiberty) and Python (c++filt -i): C++, Rust
    legacy and v0 names fold and report byte for byte alike; a name libiberty rejects stays raw;
    --no-demangle keeps every name raw."""
    m = tmp_path / "mangled.map"
    m.write_text("".join("%x T %s\n" % (a, n) for a, n in zip(TINY, MANGLED)) + "ffffffff80101000 B sink\n")
    cap = os.path.join(DATA, "sample.cap")
    same_as_gdbsample(replay, cap, m)
    folded = run("fold", cap, "-e", m).stdout
    assert any(name in folded for name in READABLE[:3]), folded
    assert not any(raw in folded for raw in MANGLED[:3]), folded
    raw = run("fold", cap, "-e", m, "--no-demangle").stdout
    assert any(name in raw for name in MANGLED[:3]) and not any(name in raw for name in READABLE[:3]), raw


def test_off_cpu_report_as_record_writes_it(replay, tmp_path):
    """record --off-cpu -f report (sampler/report.c counting periods, the off-CPU line, the state
    on each off-CPU chain's leaf and each task's off-CPU share) is `report --state all` byte for
    byte; without the off-CPU stacks both are the vCPUs' report."""
    from test_analysis_offcpu import write
    cap, mp = write(tmp_path)
    for chains in (8, 2):
        c = subprocess.run([replay, "report", cap, mp, str(chains), "offcpu"], capture_output=True, text=True, timeout=60)
        assert c.returncode == 0 and ("[off-cpu/runnable]" in c.stdout) == (chains == 8), (c.stderr, c.stdout)
        assert run("report", cap, "-e", mp, "--state", "all", "--chains", chains).stdout == c.stdout
    assert run("report", cap, "-e", mp).stdout == c_output(replay, "report", cap, mp)
