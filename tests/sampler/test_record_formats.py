# SPDX-License-Identifier: MIT
"""`record -f svg` and `-f speedscope` write those files directly, through gdbsample-analyze's own
flamegraph and speedscope writers: the SVG is byte for byte what `gdbsample-analyze flamegraph`
draws from the same folded stacks, the speedscope file holds every sample the summary counts, -o
keeps its semantics (renamed into place when complete, the mode of a file it replaces kept), and
speedscope without a usable -e is refused before anything is touched. A fake gdbstub (no QEMU):
its one vCPU always stands at pc 0, so the folded stacks are known -- `cpu0;0x0 N`."""
import json
import os
import re
import subprocess

import conftest
import pytest
from test_teaching_errors import FakeStub, run

pytestmark = pytest.mark.slow  # gdbsample-analyze's writers run after each record: make test, not make check

ANALYZE = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")


def record(args):
    s = FakeStub()
    try:
        return run(["-p", str(s.port), "-d", "0.3", "-r", "20", "-q"] + args)
    finally:
        s.close()


def test_svg_is_gdbsample_analyze_flamegraph_of_the_same_stacks(tmp_path):
    out = tmp_path / "out.svg"
    out.write_text("old")
    os.chmod(out, 0o640)
    r = record(["-f", "svg", "-o", str(out), "--summary-format", "json"])
    assert r.returncode == 0, r
    svg = out.read_bytes()
    assert oct(os.stat(out).st_mode & 0o777) == oct(0o640)  # the replaced file's mode is kept
    samples = json.loads(r.stderr)["summary"]["samples"]
    assert samples > 0
    assert re.search(rb"<title>all\n%d samples, 100.00%%" % samples, svg), svg[:2000]
    folded = tmp_path / "same.folded"
    folded.write_text("cpu0;0x0 %d\n" % samples)
    want = subprocess.run([ANALYZE, "flamegraph", str(folded)], capture_output=True, timeout=60)
    assert want.returncode == 0, want.stderr
    assert svg == want.stdout
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]


def test_speedscope_holds_every_sample(tmp_path):
    out = tmp_path / "run.speedscope.json"
    r = record(["-f", "speedscope", "-e", conftest.KERNEL, "--no-verify", "-o", str(out),
                "--summary-format", "json"])
    assert r.returncode == 0, r
    doc = json.loads(out.read_text())
    assert doc["exporter"] == "gdbsample-analyze speedscope" and doc["name"] == out.name, doc
    samples = json.loads(r.stderr)["summary"]["samples"]
    assert sum(len(p["samples"]) for p in doc["profiles"]) == samples > 0, doc["profiles"]
    assert os.listdir(tmp_path) == [out.name]


def test_speedscope_without_a_usable_e_is_refused_first(tmp_path):
    out = tmp_path / "keep.json"
    out.write_text("untouched")
    s = FakeStub()
    try:
        r = run(["-p", str(s.port), "-d", "0.3", "-f", "speedscope", "-o", str(out)])
    finally:
        s.close()
    assert r.returncode == 2, r
    line, = r.stderr.splitlines()
    assert "-f speedscope" in line and "-e" in line and "-f svg" in line, line
    assert out.read_text() == "untouched"
