# SPDX-License-Identifier: MIT
"""Golden outputs of gdbsample-analyze on the committed tiny.elf and synthetic captures
(regenerate with tests/analysis/regen_golden.py after an intended change)."""
import os

import pytest

from analyze import DATA
from analyze import call as run  # in this process: no interpreter start per call (make check time)
from regen_golden import CASES

GOLDEN = os.path.join(DATA, "golden")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    r = run(*CASES[name])
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    with open(os.path.join(GOLDEN, name)) as f:
        assert r.stdout == f.read(), "output of %s changed; if intended, run regen_golden.py" % name


def test_map_names_frames_like_the_elf():
    assert run("fold", "sample.cap", "-e", "tiny.map").stdout == run("fold", "sample.cap", "-e", "tiny.elf").stdout
    with open(os.path.join(GOLDEN, "report.txt")) as a, open(os.path.join(GOLDEN, "report_map.txt")) as b:
        assert a.read() == b.read()


def test_diff_default_prints_movers_on_stderr():
    r = run("diff", "sample.cap", "sample2.cap", "-e", "tiny.elf")
    assert r.returncode == 0
    with open(os.path.join(GOLDEN, "diff.folded")) as f:
        assert r.stdout == f.read()
    assert r.stderr.startswith("biggest movers: ")
    assert len(r.stderr.splitlines()) == 2 + 6  # title, column heads, six functions (top 10)
