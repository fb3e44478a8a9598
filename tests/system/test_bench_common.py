# SPDX-License-Identifier: MIT
"""bench/common.py reads gdbsample's `--summary-format kv` summary: its parser on literals, and every
key the benches take present in a real run's summary (a renamed key fails here, not in `make bench`)."""
import os
import subprocess
import sys

import conftest

sys.path.insert(0, os.path.join(conftest.ROOT, "bench"))
import common  # noqa: E402


def test_parse_kv_types_and_skips_what_is_no_row():
    text = ("samples 812\nrate_achieved_hz 99.87\nkaslr_offset -0x1c000000\nattach gdbstub\n"
            "image\ngdbsample: warning: something for people\nstopped_fraction 0.01234\n"
            "unwind_stop_out-of-range 3\nkaslr_how matched kernel text\n")
    kv = common.parse_kv(text)
    assert kv == {"samples": 812, "rate_achieved_hz": 99.87, "kaslr_offset": "-0x1c000000", "attach": "gdbstub",
                  "image": None, "stopped_fraction": 0.01234, "unwind_stop_out-of-range": 3,
                  "kaslr_how": "matched kernel text"}


def test_percentile_is_a_rank_of_the_values():
    v = [5, 1, 4, 2, 3]
    assert (common.percentile(v, 0), common.percentile(v, 50), common.percentile(v, 100)) == (1, 3, 5)
    assert common.percentile([7], 99) == 7


def test_every_key_the_benches_read_is_in_the_summary(boot, need_gdbsample):
    g = boot(smp=2)
    g.work("chain 8")
    kv = common.gdbsample(conftest.GDBSAMPLE, "-p", g.gdbport, "-e", conftest.KERNEL, "-r", 100, "-d", 1,
                          "-f", "folded", "-o", os.devnull, timeout=120)
    missing = [k for k in common.KV_KEYS if k not in kv]
    assert not missing, (missing, sorted(kv))
    assert kv["samples"] > 0 and isinstance(kv["pause_p50_us"], int) and 0 <= kv["stopped_fraction"] < 1, kv


def test_the_benches_c_tools_build_and_run():
    """`make bench` links bench/rtt.c and bench/walk_bench.c against the sampler's objects: a new
    dependency of those objects (wirelog.o of conn.o once) must reach their rules too. Built in
    the tests' build directory, where `make test` has built the sampler already."""
    tools = [os.path.join(conftest.BUILD, t) for t in ("rtt", "walk-bench")]
    r = subprocess.run(["make", "--no-print-directory", "-C", conftest.ROOT, f"BUILD={conftest.BUILD}", *tools],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    for t in tools:  # each says how to use it when given nothing
        out = subprocess.run([t], capture_output=True, text=True, timeout=30)
        assert "usage" in (out.stdout + out.stderr).lower(), (t, out.stdout, out.stderr)
