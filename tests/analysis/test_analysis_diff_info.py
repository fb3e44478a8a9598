# SPDX-License-Identifier: MIT
"""diff (normalisation, movers, mixed inputs) and info (counts, pauses, integrity, exit codes)."""
import os

import capgen
from analyze import DATA, one_line_error
from analyze import call as run  # in this process: no interpreter start per call (make check time)

ELF = os.path.join(DATA, "tiny.elf")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_diff_normalises_base_to_new_total(tmp_path):
    base = write(tmp_path, "b.folded", "a;x 30\na;y 10\n")
    new = write(tmp_path, "n.folded", "a;x 20\na;z 60\n")
    r = run("diff", base, new, "--no-table")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout == "a;x 60 20\na;y 20 0\na;z 0 60\n"  # base x2: 40 -> 80 samples
    r = run("diff", base, new, "--no-table", "--no-normalize")
    assert r.stdout == "a;x 30 20\na;y 10 0\na;z 0 60\n"


def test_movers_in_percentage_points(tmp_path):
    base = write(tmp_path, "b.folded", "a;x 30\na;y 10\n")
    new = write(tmp_path, "n.folded", "a;x 20\na;z 60\n")
    rows = run("diff", base, new, "--table").stdout.splitlines()
    assert rows[0] == "biggest movers: self share of samples (base 40, new 80), change in percentage points"
    assert rows[2].split() == ["+75.0", "0.0%", "75.0%", "+75.0", "z"]
    assert rows[3].split() == ["-50.0", "75.0%", "25.0%", "-50.0", "x"]
    assert rows[4].split() == ["-25.0", "25.0%", "0.0%", "-25.0", "y"]
    assert rows[5].split() == ["+0.0", "0.0%", "0.0%", "+0.0", "a"]  # inclusive 100% both times
    assert len(run("diff", base, new, "--table", "--top", "2").stdout.splitlines()) == 4


def test_diff_capture_against_folded(tmp_path):
    folded = run("fold", "sample.cap", "-e", ELF).stdout
    f = write(tmp_path, "s.folded", folded)
    r = run("diff", "sample.cap", f, "-e", ELF, "--no-table")
    assert r.returncode == 0
    for line in r.stdout.splitlines():
        _, b, n = line.rsplit(" ", 2)
        assert b == n


def test_diff_malformed_folded(tmp_path):
    for text, why in (("a;b\n", "expected 'STACK COUNT'"), ("a;b x\n", "not an integer"), ("a -3\n", "negative")):
        r = run("diff", write(tmp_path, "bad", text), "sample.cap", "-e", ELF)
        assert r.returncode == 1 and one_line_error(r) and why in r.stderr and "bad:1" in r.stderr


def test_info_intact_and_damaged(tmp_path):
    r = run("info", "sample.cap")
    assert r.returncode == 0 and r.stderr == ""
    assert "vcpus       2\n" in r.stdout and "chunks      6 good, file intact\n" in r.stdout
    assert "pauses      p50 180 us, p99 420 us, max 900 us; guest stopped 1.90% of wall time" in r.stdout
    data = open(os.path.join(DATA, "sample.cap"), "rb").read()
    offs = capgen.chunk_offsets(data)
    bad = bytearray(data)
    bad[offs[3] + 25] ^= 4                      # a bit flip in the fourth chunk's payload
    p = tmp_path / "flip.cap"
    p.write_bytes(bytes(bad))
    r = run("info", p)
    assert r.returncode == 3
    assert ("chunks      3 good, DAMAGED: chunk checksum mismatch at byte %d" % offs[3]) in r.stdout
    assert "samples     120 in the file" in r.stdout
    r = run("report", p, "-e", ELF)
    assert r.returncode == 3 and "checksum mismatch" in r.stderr and r.stdout.startswith("profiled 1185 ms\n")  # no summary: up to the last sample
