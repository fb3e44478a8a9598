# SPDX-License-Identifier: MIT
"""speedscope subcommand: speedscope's file-format schema, real timestamps, idle, golden output."""
import copy
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

import regen_golden_visual as regen
from gdbsample_analysis.capture import Capture
from gdbsample_analysis.symbols import Symbolizer

DATA = regen.DATA
CAP, ELF = regen.CAPTURE, regen.ELF
SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}


# -- a validator written from speedscope's published schema (file-format-schema.json, draft-07)
# plus the rules its importer enforces: frame indices in bounds, one weight per sample, no
# negative weight, balanced evented profiles with non-decreasing times.

class Invalid(Exception):
    pass


def need(cond, where, what):
    if not cond:
        raise Invalid("%s: %s" % (where, what))


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_props(obj, where, required, optional):
    """required/optional: {key: checker(value, where)}; extra keys are allowed, as in the schema."""
    need(isinstance(obj, dict), where, "not an object")
    for k in required:
        need(k in obj, where, "missing %r" % k)
    for k, check in list(required.items()) + list(optional.items()):
        if k in obj:
            check(obj[k], "%s.%s" % (where, k))


def typed(pred, what):
    def check(v, where):
        need(pred(v), where, "not %s: %r" % (what, v))
    return check


STRING = typed(lambda v: isinstance(v, str), "a string")
NUMBER = typed(is_number, "a number")


def validate(doc):
    """Raises Invalid naming the first thing wrong with a speedscope file; returns doc."""
    check_props(doc, "file", {
        "$schema": typed(lambda v: v == SCHEMA_URL, "the schema URL"),
        "shared": lambda v, w: check_props(v, w, {"frames": typed(
            lambda f: isinstance(f, list), "an array")}, {}),
        "profiles": typed(lambda v: isinstance(v, list), "an array"),
    }, {"name": STRING, "exporter": STRING, "activeProfileIndex": NUMBER})
    frames = doc["shared"]["frames"]
    for i, f in enumerate(frames):
        check_props(f, "frames[%d]" % i, {"name": STRING},
                    {"file": STRING, "line": NUMBER, "col": NUMBER})
    if "activeProfileIndex" in doc:
        need(0 <= doc["activeProfileIndex"] < max(1, len(doc["profiles"])), "activeProfileIndex",
             "out of range")

    def frame_index(v, where):
        need(is_number(v) and v == int(v) and 0 <= v < len(frames), where,
             "frame index %r not in 0..%d" % (v, len(frames) - 1))

    for n, p in enumerate(doc["profiles"]):
        where = "profiles[%d]" % n
        need(isinstance(p, dict) and p.get("type") in ("sampled", "evented"), where,
             "type must be 'sampled' or 'evented'")
        common = {"name": STRING, "unit": typed(lambda v: v in UNITS, "a unit"),
                  "startValue": NUMBER, "endValue": NUMBER}
        if p["type"] == "sampled":
            check_props(p, where, dict(common, samples=typed(lambda v: isinstance(v, list),
                                                             "an array"),
                                       weights=typed(lambda v: isinstance(v, list), "an array")),
                        {})
            need(len(p["samples"]) == len(p["weights"]), where, "samples and weights differ in length")
            for i, stack in enumerate(p["samples"]):
                need(isinstance(stack, list), "%s.samples[%d]" % (where, i), "not an array")
                for j, f in enumerate(stack):
                    frame_index(f, "%s.samples[%d][%d]" % (where, i, j))
            for i, w in enumerate(p["weights"]):
                need(is_number(w) and w >= 0, "%s.weights[%d]" % (where, i), "negative or not a number")
        else:
            check_props(p, where, dict(common, events=typed(lambda v: isinstance(v, list),
                                                           "an array")), {})
            open_, at = [], p["startValue"]
            for i, e in enumerate(p["events"]):
                w = "%s.events[%d]" % (where, i)
                check_props(e, w, {"type": typed(lambda v: v in ("O", "C"), "O or C"),
                                   "at": NUMBER, "frame": frame_index}, {})
                need(e["at"] >= at, w, "time goes backwards")
                at = e["at"]
                if e["type"] == "O":
                    open_.append(e["frame"])
                else:
                    need(open_ and open_.pop() == e["frame"], w, "unbalanced close")
            need(not open_, where, "frames left open")
        need(p["endValue"] >= p["startValue"], where, "endValue before startValue")
    return doc


# -- helpers

def analyze(*args):
    return subprocess.run([sys.executable, regen.TOOL] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def speedscope(*args):
    r = analyze("speedscope", *args)
    assert r.returncode == 0, r.stderr
    return validate(json.loads(r.stdout))


def names(doc, stack):
    return [doc["shared"]["frames"][i]["name"] for i in stack]


def capture_times(path, cpu):
    return [s.time_ns for s in Capture(path).samples() if s.cpu == cpu]


@pytest.fixture(scope="module")
def small():
    return speedscope(CAP, "-e", ELF)


# -- the validator can fail, on each rule

def test_validator_accepts_golden_and_rejects_each_broken_rule():
    with open(os.path.join(DATA, "sf_small.json")) as f:
        good = validate(json.load(f))
    breakages = [
        lambda d: d.pop("$schema"),
        lambda d: d.update({"$schema": "https://example.com/schema.json"}),
        lambda d: d.pop("shared"),
        lambda d: d["shared"]["frames"][0].pop("name"),
        lambda d: d["shared"]["frames"][0].update(line="7"),
        lambda d: d.update(profiles={}),
        lambda d: d.update(activeProfileIndex=5),
        lambda d: d["profiles"][0].update(type="timed"),
        lambda d: d["profiles"][0].update(unit="ticks"),
        lambda d: d["profiles"][0].pop("weights"),
        lambda d: d["profiles"][0]["weights"].pop(),
        lambda d: d["profiles"][0]["weights"].__setitem__(0, -5),
        lambda d: d["profiles"][0]["samples"][0].append(len(d["shared"]["frames"])),
        lambda d: d["profiles"][0]["samples"][0].append(-1),
        lambda d: d["profiles"][0]["samples"].__setitem__(0, 3),
        lambda d: d["profiles"][0].update(endValue=d["profiles"][0]["startValue"] - 1),
        lambda d: d["profiles"][0].update(startValue="0"),
        lambda d: d["profiles"].append({"type": "evented", "name": "e", "unit": "none",
                                        "startValue": 0, "endValue": 9,
                                        "events": [{"type": "O", "at": 5, "frame": 0},
                                                   {"type": "C", "at": 4, "frame": 0}]}),
        lambda d: d["profiles"].append({"type": "evented", "name": "e", "unit": "none",
                                        "startValue": 0, "endValue": 9,
                                        "events": [{"type": "O", "at": 1, "frame": 0}]}),
    ]
    for n, breakage in enumerate(breakages):
        bad = copy.deepcopy(good)
        breakage(bad)
        with pytest.raises(Invalid):
            validate(bad)
            pytest.fail("breakage %d was accepted" % n)
    validate({"$schema": SCHEMA_URL, "shared": {"frames": [{"name": "a"}]}, "profiles": [
        {"type": "evented", "name": "e", "unit": "none", "startValue": 0, "endValue": 9,
         "events": [{"type": "O", "at": 1, "frame": 0}, {"type": "C", "at": 4, "frame": 0}]}]})


# -- the output

def test_golden_output_is_byte_identical():
    r = analyze("speedscope", CAP, "-e", ELF)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(DATA, "sf_small.json")) as f:
        assert r.stdout == f.read(), "run tests/analysis/regen_golden_visual.py after an intended change"


def test_file_fields_and_one_sampled_profile_per_vcpu(small):
    assert small["exporter"] == "gdbsample-analyze speedscope"
    assert small["name"] == "sf_small.cap"
    assert small["activeProfileIndex"] == 0
    assert [p["name"] for p in small["profiles"]] == ["cpu0", "cpu1"]
    assert all(p["type"] == "sampled" and p["unit"] == "nanoseconds" for p in small["profiles"])
    # one entry per function: no duplicate names in the frame table
    fnames = [f["name"] for f in small["shared"]["frames"]]
    assert len(fnames) == len(set(fnames))


def test_frames_carry_file_and_line_from_dwarf(small):
    syms = Symbolizer.load(ELF)
    by_name = {f["name"]: f for f in small["shared"]["frames"]}
    for fn in ("spin", "copy_words", "work", "_start"):
        start = syms.starts[syms.names.index(fn)]
        assert (by_name[fn]["file"], by_name[fn]["line"]) == syms.line(start)
        assert by_name[fn]["file"].endswith("sf_tiny.c")
    with open(os.path.join(DATA, "sf_tiny.c")) as f:
        src = f.read().splitlines()
    assert src[by_name["spin"]["line"] - 2].startswith("void spin(")   # the line after the name
    # addresses outside every symbol (user mode, unknown) are hex and have no location
    hexes = [f for f in small["shared"]["frames"] if f["name"].startswith("0x")]
    assert {f["name"] for f in hexes} == {"0x7f0000001234", "0x12345678"}
    assert all("file" not in f and "line" not in f for f in hexes)


def test_weights_are_real_intervals_and_profiles_share_the_clock(small):
    t_first = min(capture_times(CAP, 0)[0], capture_times(CAP, 1)[0])
    for p, cpu in zip(small["profiles"], (0, 1)):
        times = capture_times(CAP, cpu)
        w = p["weights"]
        assert p["startValue"] == t_first
        lead = times[0] - t_first
        if lead:   # vCPU 1 is first seen at the third stop: an empty stack holds the gap
            assert p["samples"][0] == [] and w[0] == lead
            w = w[1:]
        assert len(w) == len(times)
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert w[:-1] == gaps
        assert w[-1] == sorted(gaps)[(len(gaps) - 1) // 2]          # the median interval
        # replaying the weights gives back each sample's real timestamp
        t, replay = p["startValue"] + lead, []
        for x in w:
            replay.append(t)
            t += x
        assert replay == times
        assert p["endValue"] == t == p["startValue"] + sum(p["weights"])
        assert all(x > 0 for x in p["weights"])                      # speedscope drops zeros


def test_stacks_match_fold_and_idle_is_empty_by_default(small):
    r = analyze("fold", CAP, "-e", ELF, "--group-by-cpu")
    assert r.returncode == 0, r.stderr
    folded = {}
    for line in r.stdout.splitlines():
        stack, count = line.rsplit(" ", 1)
        folded[stack] = int(count)
    mine, empty = {}, 0
    idle_per_cpu = {c: sum(1 for s in Capture(CAP).samples() if s.cpu == c and s.flags & 1)
                    for c in (0, 1)}
    for p in small["profiles"]:
        lead = 1 if p["name"] == "cpu1" else 0
        assert sum(1 for s in p["samples"][lead:] if not s) == idle_per_cpu[int(p["name"][3:])]
        for s in p["samples"][lead:]:
            if not s:
                empty += 1
                continue
            key = ";".join([p["name"]] + names(small, s))
            mine[key] = mine.get(key, 0) + 1
    assert mine == folded                     # same stacks, same counts, root first
    assert empty == sum(idle_per_cpu.values()) == 6 and "idle_loop" not in {f["name"] for f in small["shared"]["frames"]}


def test_idle_flag_keeps_idle_stacks():
    doc = speedscope(CAP, "-e", ELF, "--idle")
    cpu0 = doc["profiles"][0]
    idle = [s for s in cpu0["samples"] if s and names(doc, s)[-1] == "idle_loop"]
    assert len(idle) == 2 and all(s for s in cpu0["samples"])
    assert names(doc, idle[0]) == ["_start", "idle_loop"]


def test_cpu_and_time_filters():
    doc = speedscope(CAP, "-e", ELF, "--cpu", "1")
    assert [p["name"] for p in doc["profiles"]] == ["cpu1"]
    times = capture_times(CAP, 1)
    p = doc["profiles"][0]
    assert p["startValue"] == times[0] and len(p["samples"]) == len(times)   # no lead alone
    times = capture_times(CAP, 0)
    doc = speedscope(CAP, "-e", ELF, "--cpu", "0", "--from", times[3], "--until", times[8])
    p = doc["profiles"][0]
    assert p["startValue"] == times[3] and len(p["samples"]) == 5
    assert p["weights"][:-1] == [b - a for a, b in zip(times[3:8], times[4:8])]


def test_truncated_capture_keeps_good_part_and_exits_3(tmp_path):
    samples = regen.small_samples(ELF)
    cut = tmp_path / "cut.cap"
    regen.write_capture(str(cut), samples, ncpus=2)
    data = cut.read_bytes()
    cut.write_bytes(data[:len(data) - 200])          # into the last samples chunk
    r = analyze("speedscope", cut, "-e", ELF)
    assert r.returncode == 3
    assert "cut.cap" in r.stderr and "lost" in r.stderr and len(r.stderr.splitlines()) == 1
    doc = validate(json.loads(r.stdout))
    kept = sum(len(p["samples"]) for p in doc["profiles"]) - 1     # minus cpu1's lead
    assert 0 < kept < len(samples)


@pytest.mark.parametrize("args, code", [
    (["/nonexistent.cap", "-e", ELF], 1),
    ([os.path.join(DATA, "sf_tiny.c"), "-e", ELF], 1),               # not a capture
    ([CAP, "-e", os.path.join(DATA, "sf_tiny.c")], 1),               # not an ELF or map
    ([CAP, "-e", ELF, "--cpu", "7"], 2),
    ([CAP, "-e", ELF, "-o", "/nonexistent/dir/out.json"], 1),
])
def test_bad_input_is_one_line_and_nonzero(args, code):
    r = analyze("speedscope", *args)
    assert r.returncode == code, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("gdbsample-analyze: ")
    assert r.stdout == ""
