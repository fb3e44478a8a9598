# SPDX-License-Identifier: MIT
"""Hostile values behind valid CRCs, in text inputs and in options: one line, a documented exit
code, never a traceback. A summary number that is not one counts as absent (with a warning); a
sample that makes no sense is damage (3); a header far out of range is unreadable (1); a bad
option value is a usage error (2)."""
import json
import os

import pytest

import capgen
from analyze import DATA, call, one_line_error

ELF = os.path.join(DATA, "tiny.elf")
A, M = 0xffffffff80100000, 0xffffffff80100065   # leaf_a, middle in tiny.elf
SAMPLES = [(1_000_000 * k, k % 2, 0, (A + 4, M + 9)) for k in range(20)]
BAD_NUMBERS = ["abc", "inf", "-inf", "nan", "-1", "1e400", "9" * 400, str(1 << 64), "1.5e9x"]


def cap(tmp_path, samples=SAMPLES, summary=None, name="h.cap", **hdr):
    p = tmp_path / name
    capgen.write(p, samples, {"duration_ns": 20_000_000, "dropped": 0} if summary is None else summary,
                 per_chunk=8, version=2, **hdr)
    return str(p)


def warnings(r):
    return [line for line in r.stderr.splitlines() if "is not a valid number; ignored" in line]


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_summary_number_that_is_not_one_counts_as_absent(tmp_path, value):
    p = cap(tmp_path, summary={"duration_ns": value, "dropped": value, "rate_achieved_hz": value,
                               "stopped_fraction": value, "pause_p50_us": 180})
    r = call("report", p, "-e", ELF)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("profiled 19 ms\n20 samples on 2 cpus, 0 dropped")  # last sample, 0
    assert len(warnings(r)) == 4 and all(w.startswith("gdbsample-analyze: ") for w in warnings(r))
    r = call("info", p)
    assert r.returncode == 0 and len(warnings(r)) == 4
    assert "duration    unknown (not in the summary)" in r.stdout and "achieved" not in r.stdout
    for verb in ("fold", "speedscope", "flamegraph"):
        r = call(verb, p, "-e", ELF, "-o", tmp_path / "out")
        assert r.returncode == 0 and len(warnings(r)) == 4, (verb, r.stderr)


def test_summary_valid_numbers_stay(tmp_path):
    p = cap(tmp_path, summary={"duration_ns": 5_000_000, "dropped": 3, "rate_achieved_hz": 99.5,
                               "stopped_fraction": 0.019, "pause_p50_us": 180})
    r = call("report", p, "-e", ELF)
    assert r.returncode == 0 and r.stderr == "" and r.stdout.startswith("profiled 5 ms\n20 samples on 2 cpus, 3 dropped")
    r = call("info", p)
    assert r.returncode == 0 and r.stderr == "" and "99.50 Hz achieved" in r.stdout


def test_stopped_share_bracket(tmp_path):
    """gdbsample's two bounds of the guest's stopped share (docs/capture-format.md): info shows
    both; a bad upper bound is dropped like any other number, the lower one stays."""
    base = {"duration_ns": 5_000_000, "stopped_fraction": 0.019, "pause_p50_us": 180}
    r = call("info", cap(tmp_path, summary=dict(base, paused_fraction=0.0245)))
    assert r.returncode == 0 and r.stderr == ""
    assert "guest stopped 1.90% of wall time (at most 2.45%, counting from the stop byte)" in r.stdout
    r = call("info", cap(tmp_path, summary=dict(base, paused_fraction="nan"), name="b.cap"))
    assert r.returncode == 0 and len(warnings(r)) == 1
    assert "guest stopped 1.90% of wall time\n" in r.stdout


def test_summary_control_characters_are_escaped(tmp_path):
    p = cap(tmp_path, summary={"duration_ns": 1, "image": "\x1b]0;owned\x07vmlinux", "x\x1bkey": "v"})
    r = call("info", p)
    assert r.returncode == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "image       \\x1b]0;owned\\x07vmlinux" in r.stdout and "x\\x1bkey" in r.stdout


@pytest.mark.parametrize("field, value", [("time", (1 << 64) - 1), ("time", 1 << 63), ("cpu", 65535),
                                          ("cpu", 4096)])
def test_sample_that_makes_no_sense_is_damage(tmp_path, field, value):
    s = list(SAMPLES)
    t, cpu, flags, frames = s[12]
    s[12] = (value, cpu, flags, frames) if field == "time" else (t, value, flags, frames)
    p = cap(tmp_path, s)
    for verb in ("fold", "report", "speedscope", "flamegraph", "info"):
        r = call(verb, p, *(["-e", ELF, "-o", tmp_path / "out"] if verb != "info" else []))
        assert r.returncode == 3, (verb, r.stderr)
        if verb != "info":
            assert one_line_error(r) and "makes no sense" in r.stderr, r.stderr
    assert "after 1 good chunks (8 samples)" in r.stdout    # info: the chunk before it counts
    r = call("fold", p, "--split-by-cpu", "-o", tmp_path / "s.folded")
    assert r.returncode == 3 and sorted(os.listdir(tmp_path)) == sorted(
        ["h.cap", "out", "s.cpu0.folded", "s.cpu1.folded"])


def test_largest_sample_time_is_fine(tmp_path):
    s = [(0, 0, 0, (A + 4,)), ((1 << 63) - 1, 0, 0, (A + 4,))]
    r = call("speedscope", cap(tmp_path, s), "-e", ELF)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["profiles"][0]["weights"] == [(1 << 63) - 1, (1 << 63) - 1]


@pytest.mark.parametrize("hdr, ok", [
    (dict(ncpus=65535), False),             # 65535 empty files with --split-by-cpu
    (dict(ncpus=4097), False),
    (dict(ncpus=4096), True),
    (dict(start_ns=(1 << 64) - 1, rate_hz=(1 << 32) - 1, max_frames=(1 << 32) - 1, arch=65535,
          klo=(1 << 64) - 1, khi=0, id_kind=255, kid=b"\xff" * 32, flags=0xffff,
          kaslr_offset=-(1 << 63), stext=(1 << 64) - 1, methods=255), True),
])
def test_header_fields_far_out_of_range(tmp_path, hdr, ok):
    p = cap(tmp_path, **hdr)
    for verb in ("info", "fold", "report"):
        r = call(verb, p, *(["-e", ELF] if verb != "info" else []))
        if ok:
            assert r.returncode == 0 and r.stderr == "", (verb, r.stderr)
        else:
            assert r.returncode == 1 and one_line_error(r) and "at most 4096" in r.stderr


@pytest.mark.parametrize("text", ["a;b %s\n" % ("9" * 400), "a;b %d\n" % (1 << 63), "a;b 1 %s\n" % ("9" * 30)])
def test_folded_count_that_overflows(tmp_path, text):
    (tmp_path / "big.folded").write_text(text)
    for args in (("diff", "big.folded", os.path.join(DATA, "fg_base.folded")), ("flamegraph", "big.folded")):
        r = call(*args, cwd=tmp_path)
        assert r.returncode == 1 and one_line_error(r) and "too large" in r.stderr, r.stderr


@pytest.mark.parametrize("text", ["profiled %s ms\n5 samples on 1 cpus, 0 dropped, source tick 100 Hz\n"
                                  "100.0%% 5 leaf_a+0x4\n" % ("9" * 400),
                                  "profiled 5 ms\n%s samples on 1 cpus, 0 dropped, source tick 100 Hz\n"
                                  % ("9" * 5000)])
def test_inguest_report_numbers_that_overflow(tmp_path, text):
    (tmp_path / "in.txt").write_text(text)
    r = call("compare", tmp_path / "in.txt", os.path.join(DATA, "fg_base.folded"))
    assert r.returncode == 2 and one_line_error(r), r.stderr


HUGE = "9" * 400
BAD_OPTIONS = [
    ["fold", "sample.cap", "--from", HUGE],
    ["fold", "sample.cap", "--until", HUGE + "ms"],
    ["fold", "sample.cap", "--from", "10000000000s"],            # past 2^63 ns
    ["fold", "sample.cap", "--until", "1e400"],
    ["fold", "sample.cap", "--until", "nan"],
    ["fold", "sample.cap", "--cpu", "9" * 5000],
    ["fold", "sample.cap", "--cpu", "0-" + HUGE],
    ["fold", "sample.cap", "--cpu", "70000"],
    ["fold", "sample.cap", "-e", "tiny.elf", "--kaslr-offset", "1" + "0" * 400],
    ["fold", "sample.cap", "-e", "tiny.elf", "--kaslr-offset", "0x10000000000000000"],
    ["diff", "sample.cap", "sample.cap", "--base-kaslr-offset=-0x" + "f" * 17],
    ["report", "sample.cap", "--chains", HUGE],
    ["report", "sample.cap", "--chains", "nan"],
    ["diff", "sample.cap", "sample2.cap", "--top", HUGE],
    ["diff", "sample.cap", "sample2.cap", "--top", "-3"],
    ["flamegraph", "fg_base.folded", "--width", HUGE],
    ["flamegraph", "fg_base.folded", "--width", "inf"],
    ["flamegraph", "fg_base.folded", "--width", "50"],
    ["compare", "fg_base.folded", "fg_new.folded", "--tolerance", "nan"],
    ["compare", "fg_base.folded", "fg_new.folded", "--tolerance", "inf"],
    ["compare", "fg_base.folded", "fg_new.folded", "--tolerance", "1e400"],
    ["compare", "fg_base.folded", "fg_new.folded", "--max-tvd", "NaN"],
    ["compare", "fg_base.folded", "fg_new.folded", "--max-tvd", "2"],
    ["compare", "fg_base.folded", "fg_new.folded", "--chains", HUGE],
]


@pytest.mark.parametrize("args", BAD_OPTIONS, ids=lambda a: " ".join(a)[:60])
def test_bad_option_value_is_a_usage_error(args):
    r = call(*args)
    assert r.returncode == 2 and one_line_error(r) and r.stdout == "", r.stderr


def test_time_options_are_exact(tmp_path):
    s = [(t, 0, 0, (A + 4,)) for t in (1_099_999, 1_100_000, 1_100_001, 9_223_372_036_854_775_806)]
    p = cap(tmp_path, s)
    r = call("fold", p, "--from", "1.1ms", "--until", "9223372036854775807")
    assert r.returncode == 0 and r.stdout == "0x%x 3\n" % (A + 4)
    r = call("fold", p, "--from", "0.0011000005s")     # rounds to 1100000 (half to even) + 0
    assert r.stdout == "0x%x 3\n" % (A + 4)


@pytest.mark.parametrize("at", [0, 1])
def test_every_subcommand_honours_an_unknown_chunk_type(tmp_path, at):
    """Version 2: an unknown chunk type (valid CRC) is damage, exit 3 everywhere -- even where
    nothing is left to draw or compare (damage before the first sample)."""
    good = capgen.capture_bytes(SAMPLES, {"duration_ns": 1}, per_chunk=8, version=2)
    off = capgen.chunk_offsets(good)[at]
    p = tmp_path / "u.cap"
    p.write_bytes(good[:off] + capgen.chunk(9, b"future", 1, version=2) + good[off:])
    (tmp_path / "in.txt").write_text(call("report", cap(tmp_path), "-e", ELF).stdout)
    for args in (["info", p], ["fold", p], ["report", p], ["speedscope", p], ["flamegraph", p, "-e", ELF],
                 ["diff", p, os.path.join(DATA, "fg_base.folded"), "--no-table"],
                 ["flamegraph", os.path.join(DATA, "fg_base.folded"), "--diff", p, "-e", ELF],
                 ["compare", tmp_path / "in.txt", p, "-e", ELF]):
        r = call(*args)
        assert r.returncode == 3, (args, r.stderr)
        assert args[0] == "info" or "unknown chunk type 9" in r.stderr, (args, r.stderr)
