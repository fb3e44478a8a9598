# SPDX-License-Identifier: MIT
"""Seeded fuzzing of every subcommand, in-process: random damage to valid captures (bit flips in the
header, chunk headers and payloads, truncations, hostile field values and summary text behind valid
CRCs), to folded and report text and to symbol maps. Each run must exit 0, 1, 2 or 3 with only
`gdbsample-analyze: ...` lines on stderr (a traceback fails the test), and never leave a partial or
clobbered output: -o is either replaced whole or untouched."""
import json
import os
import random
import struct
import xml.etree.ElementTree as ET

import pytest

import capgen
from analyze import DATA, call

from gdbsample_analysis.capture import Capture, CaptureError
from gdbsample_analysis.folded import parse_folded

pytestmark = pytest.mark.slow  # thousands of mutated inputs (12 s): make test, not make check

ELF = os.path.join(DATA, "tiny.elf")
MAP = os.path.join(DATA, "tiny.map")
K = 0xffffffff80100000
OLD = "old output\n"
SEED = 20240611
U64 = [0, 1, 255, 4095, 4096, 65535, (1 << 32) - 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
HOSTILE = ["abc", "inf", "-inf", "nan", "-1", "1e400", "9" * 400, str(1 << 64), "0", "1.5", "",
           "\x1b[2J", "0x10", "\xff", "٣"]
SUMMARY_KEYS = ["duration_ns", "dropped", "samples", "idle", "rate_achieved_hz", "pause_p50_us",
                "pause_p99_us", "pause_max_us", "stopped_fraction", "vcpus", "kaslr_offset", "image",
                "unwind", "unwind_stop_end", "unwind_stop_fp_end", "frames_fp", "kaslr_names_offset"]
# file header fields: (offset, struct format)
HEADER_FIELDS = [(8, "<H"), (10, "<H"), (12, "<H"), (14, "<H"), (16, "<I"), (20, "<I"), (24, "<Q"),
                 (32, "<Q"), (40, "<Q"), (48, "<B"), (49, "<B"), (50, "<H"), (84, "<Q"), (92, "<Q"),
                 (100, "<B")]
RECORD_FIELDS = [(0, "<Q"), (8, "<H"), (10, "<B"), (11, "<B"), (12, "<Q"), (20, "<Q")]
CHUNK_FIELDS = [(4, "<I"), (8, "<I"), (12, "<I")]


def base_captures():
    """A version 2 capture (exact frames, extensions) and a version 1 one, a few chunks each."""
    s = [(1_000_000 * i, i % 3, (1 if i % 7 == 0 else 0) | (2 if i % 5 == 0 else 0),
          tuple(K + 0x25 * (k % 3) + 4 + i % 5 for k in range(1 + i % 5)),
          frozenset({1}) if i % 4 == 0 and i % 5 else frozenset()) for i in range(40)]
    summary = {"duration_ns": 40_000_000, "samples": 34, "idle": 6, "dropped": 1,
               "rate_achieved_hz": 99.5, "pause_p50_us": 180, "stopped_fraction": 0.02,
               "unwind_stop_end": 30, "frames_fp": 80, "image": "tiny (ELF)"}
    return [capgen.capture_bytes(s, summary, per_chunk=9, version=2, ncpus=3, kaslr_offset=0,
                                 stext=K, methods=capgen.METHOD_FP),
            capgen.capture_bytes([x[:4] for x in s], summary, per_chunk=13, ncpus=3)]


def put(b, off, fmt, value):
    if off + struct.calcsize(fmt) <= len(b):
        struct.pack_into(fmt, b, off, value & ((1 << 8 * struct.calcsize(fmt)) - 1))


def mutate(rng, data):
    """One random kind of damage; hostile values are sealed with valid CRCs."""
    b = bytearray(data)
    offs = capgen.chunk_offsets(data)
    kind = rng.randrange(7)
    if kind == 0:                                      # bit flips anywhere
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:                                    # bit flips in the header or a chunk header
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(128) if rng.random() < 0.5 else rng.choice(offs) + rng.randrange(20)
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 2:                                    # cut short anywhere
        b = b[:rng.randrange(len(b))]
    elif kind == 3:                                    # a header field far out of range
        put(b, *rng.choice(HEADER_FIELDS), rng.choice(U64))
    elif kind == 4:                                    # a field of a chunk's first sample
        off, fmt = rng.choice(RECORD_FIELDS)
        put(b, rng.choice(offs[:-1]) + 20 + off, fmt, rng.choice(U64))
    elif kind == 5:                                    # random summary text
        if rng.random() < 0.8:
            text = "".join("%s %s\n" % (k, rng.choice(HOSTILE))
                           for k in rng.sample(SUMMARY_KEYS, rng.randint(1, 6))).encode()
        else:
            text = bytes(rng.randrange(256) for _ in range(rng.randint(0, 80)))
        b = b[:offs[-1]] + capgen.chunk(2, text, 1, struct.unpack_from("<H", b, 8)[0])
    else:                                              # a chunk header field
        put(b, rng.choice(offs) + rng.choice(CHUNK_FIELDS)[0], "<I",
            rng.choice([0, 1, 2, 3, 9, 1 << 20, (1 << 20) + 1, (1 << 32) - 1, rng.randrange(64)]))
    if kind >= 3 or rng.random() < 0.5:
        b = capgen.reseal(bytes(b))
    return bytes(b)


def complete(verb, text):
    """True if text is a whole output of verb (not cut short)."""
    if verb == "speedscope":
        return "profiles" in json.loads(text)
    if verb == "flamegraph":                           # whole, and well-formed XML (issue 22)
        return text.endswith("</svg>\n") and ET.fromstring(text.encode("utf-8")).tag.endswith("svg")
    if verb == "report":
        return text.startswith("profiled ") and text.endswith("\n")
    if verb == "info":
        return "\nchunks      " in text and text.endswith("\n")
    if verb == "diff":
        return all(len(line.rsplit(" ", 2)) == 3 for line in text.split("\n")[:-1])
    parse_folded(text.split("\n"))                     # fold: raises if malformed (lines end at \n only)
    return True


def check(tmp_path, args, out=None):
    """Runs one command; asserts the exit code, stderr and what became of -o out."""
    if out is not None:
        (tmp_path / out).write_text(OLD)
    r = call(*args, cwd=tmp_path)
    assert r.returncode in (0, 1, 2, 3), (args, r.returncode, r.stderr)
    assert all(line.startswith("gdbsample-analyze: ") for line in r.stderr.splitlines()), (args, r.stderr)
    names = os.listdir(tmp_path)
    assert not [n for n in names if ".partial-" in n], (args, names)
    if out is not None:
        text = (tmp_path / out).read_text()
        if r.returncode in (1, 2) or text == OLD:
            assert text == OLD and r.returncode != 0, (args, r.returncode, r.stderr)
        else:
            assert complete(args[0], text), (args, text[-200:])
    return r


def commands(cap):
    """Every subcommand on capture file cap, writing to -o out where it can."""
    return [(["info", cap, "-o", "out"], "out"),
            (["fold", cap, "-e", ELF, "-o", "out", "--group-by-cpu"], "out"),
            (["fold", cap, "-e", MAP, "--cpu", "0-1", "--from", "3ms", "-o", "out"], "out"),
            (["report", cap, "-e", ELF, "-o", "out", "--idle"], "out"),
            (["speedscope", cap, "-e", MAP, "-o", "out"], "out"),
            (["flamegraph", cap, "-e", ELF, "-o", "out"], "out"),
            (["diff", cap, "base.cap", "-e", MAP, "--no-table", "-o", "out"], "out"),
            (["compare", "in.txt", cap, "-e", ELF], None)]


def test_fuzz_captures(tmp_path):
    rng = random.Random(SEED)
    bases = base_captures()
    (tmp_path / "base.cap").write_bytes(bases[0])
    (tmp_path / "in.txt").write_text(call("report", tmp_path / "base.cap", "-e", ELF).stdout)
    for case in range(300):
        data = mutate(rng, rng.choice(bases))
        (tmp_path / "c.cap").write_bytes(data)
        try:                                           # the reader alone: CaptureError or samples
            c = Capture(str(tmp_path / "c.cap"))
            n = sum(1 for _ in c.samples())
            assert c.intact in (True, False) and n == c.samples_read
        except CaptureError:
            pass
        for args, out in rng.sample(commands("c.cap"), 2):
            check(tmp_path, args, out)
        if case % 25 == 0:                             # split outputs: all there or none
            for f in os.listdir(tmp_path):
                if f.startswith("s.cpu"):
                    os.unlink(tmp_path / f)
            r = check(tmp_path, ["fold", "c.cap", "--split-by-cpu", "-o", "s.folded"])
            made = [f for f in os.listdir(tmp_path) if f.startswith("s.cpu")]
            assert r.returncode in (0, 3) or not made, (r.returncode, made)


def mutate_text(rng, text):
    lines = text.splitlines() or [""]
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        words = lines[i].split(" ")
        words[rng.randrange(len(words))] = rng.choice(HOSTILE + [";", ";;", "a;b", "-5", "1_0", "a\x01b", "f\x0cg",
                                                                 "u\u2028v", "<&\"'>", "]]>", "\ufffe", "+7"])
        lines[i] = " ".join(words)
    if rng.random() < 0.2:
        lines = lines[:rng.randrange(len(lines) + 1)]
    return "\n".join(lines) + "\n"


def test_fuzz_text_inputs(tmp_path):
    rng = random.Random(SEED + 1)
    (tmp_path / "base.cap").write_bytes(base_captures()[0])
    texts = [call(*args, cwd=tmp_path).stdout for args in (
        ["report", "base.cap", "-e", ELF], ["fold", "base.cap", "-e", ELF],
        ["diff", "base.cap", os.path.join(DATA, "sample_v2.cap"), "-e", ELF, "--no-table"])]
    for _ in range(80):
        (tmp_path / "t.txt").write_text(mutate_text(rng, rng.choice(texts)))
        for args, out in rng.sample([(["diff", "t.txt", "base.cap", "-e", ELF, "--no-table", "-o", "out"], "out"),
                                     (["flamegraph", "t.txt", "-o", "out"], "out"),
                                     (["flamegraph", "base.cap", "-e", ELF, "--diff", "t.txt", "-o", "out"], "out"),
                                     (["compare", "t.txt", "base.cap", "-e", ELF], None),
                                     (["compare", "t.txt", "t.txt"], None)], 2):
            check(tmp_path, args, out)


@pytest.mark.parametrize("which", ["map", "elf"])
def test_fuzz_symbol_files(tmp_path, which):
    rng = random.Random(SEED + 2)
    (tmp_path / "base.cap").write_bytes(base_captures()[0])
    data = open(MAP if which == "map" else ELF, "rb").read()
    for _ in range(40):
        b = bytearray(data)
        if rng.random() < 0.3:
            b = b[:rng.randrange(len(b))]
        for _ in range(rng.randint(1, 6)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        (tmp_path / "sym").write_bytes(bytes(b))
        for args in (["fold", "base.cap", "-e", "sym", "-o", "out"], ["report", "base.cap", "-e", "sym", "-o", "out"]):
            check(tmp_path, args, "out")


def task_capture():
    """A version 3 capture with task records (some hostile names, some samples without one)."""
    names = [b"bash", b"kworker/0:1", b"\x1b[2J;<&>\xff", b"x" * 16, b""]
    s = [(1_000_000 * i, i % 3, (1 if i % 7 == 0 else 0) | (4 if i % 6 == 0 else 0),
          tuple(K + 0x25 * (k % 3) + 4 + i % 5 for k in range(1 + i % 5)),
          frozenset({1}) if i % 4 == 0 and i % 5 else frozenset(),
          None if i % 9 == 0 else (i % 4, i % 2, 0xffff888000000000 + i % 4, names[i % len(names)]))
         for i in range(40)]
    summary = {"duration_ns": 40_000_000, "task_verified": 30, "task_hits": 5, "task_misses": 1}
    return capgen.capture_bytes(s, summary, per_chunk=9, version=3, ncpus=3, task_os=1)


def mutate_tasks(rng, data):
    """mutate(), or damage aimed at version 3: the task_os byte, or bytes inside the samples'
    extension blocks (record types and lengths, pids, names), sealed with valid CRCs."""
    if rng.random() < 0.5:
        return mutate(rng, data)
    b = bytearray(data)
    if rng.random() < 0.3:
        b[101] = rng.choice([0, 1, 2, 3, 255])
    else:
        offs = capgen.chunk_offsets(data)[:-1]
        for _ in range(rng.randint(1, 6)):
            at = rng.choice(offs)
            length = struct.unpack_from("<I", b, at + 8)[0]
            b[at + 20 + rng.randrange(length)] = rng.choice([0, 1, 2, 31, 32, 33, 0x80, 0xff, rng.randrange(256)])
    return capgen.reseal(bytes(b))


def task_commands(cap):
    return [(["fold", cap, "-e", ELF, "-o", "out", "--task-format", "comm-pid", "--group-by-cpu"], "out"),
            (["fold", cap, "-e", MAP, "--pid", "1-2", "--comm", "a|x", "-o", "out"], "out"),
            (["report", cap, "-e", ELF, "-o", "out", "--by-task", "--idle"], "out"),
            (["speedscope", cap, "-e", MAP, "-o", "out", "--comm", "."], "out"),
            (["flamegraph", cap, "-e", ELF, "-o", "out", "--pid", "0-3"], "out"),
            (["info", cap, "-o", "out"], "out")]


def test_fuzz_task_captures(tmp_path):
    rng = random.Random(SEED + 3)
    base = task_capture()
    for case in range(150):
        data = mutate_tasks(rng, base)
        (tmp_path / "c.cap").write_bytes(data)
        try:
            c = Capture(str(tmp_path / "c.cap"))
            for s in c.samples():
                assert s.task is None or all(32 <= ord(ch) < 127 for ch in s.task.comm)
        except CaptureError:
            pass
        for args, out in rng.sample(task_commands("c.cap"), 2):
            check(tmp_path, args, out)
