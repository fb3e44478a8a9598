# SPDX-License-Identifier: MIT
"""perf-script subcommand: perf script's text format, read back by a parser written here from
perf-script(1), collapsed as perf's collapsers do -- equal to `fold` -- and a golden file.

FlameGraph's stackcollapse-perf.pl is not packaged by Debian 12, so the collapser is this file's:
a record's stack is its COMM, then its frames from the outermost in, each frame its symbol
without the `+0xOFF`. Where no symbol is known perf prints `[unknown]`; fold names such a frame
by its address (0x...) in the kernel, and a user-mode sample under its task `[user]`: the
collapser maps those two as fold does (the DSO says which is which).
"""
import os
import re

import pytest
from analyze import DATA, call, one_line_error, run
from gdbsample_analysis.capture import Capture, FLAG_IDLE

V3, V3_ELF = "sample_v3.cap", "tiny.elf"          # tasks (5), user-mode samples, unknown frames
SMALL, SMALL_ELF = "sf_small.cap", "sf_tiny.elf"  # no task attribution
FOLDED = os.path.join(DATA, "fg_base.folded")

# perf-script(1): `COMM PID/TID [CPU] TIME: PERIOD EVENT:` (COMM may hold spaces), then for a
# sample with a call chain one line per frame, leaf first: a tab, the address in hex, the symbol
# (+0xOFFSET), the DSO in parentheses; a blank line after each record.
HEADER = re.compile(r"^(?P<comm>.+?) +(?P<pid>-?\d+)/(?P<tid>-?\d+) +\[(?P<cpu>\d+)\] +"
                    r"(?P<secs>\d+)\.(?P<usecs>\d{6}): +(?P<period>\d+) +(?P<event>[\w-]+): $")
FRAME = re.compile(r"^\t *(?P<addr>[0-9a-f]+) (?P<sym>.+) \((?P<dso>[^()]*)\)$")


def parse(text):
    """perf script text -> [dict(header fields, frames=[(addr, sym, dso)] leaf first)]."""
    records, cur = [], None
    for n, line in enumerate(text.split("\n"), 1):
        if cur is None:
            if line == "":
                continue
            m = HEADER.match(line)
            assert m, "line %d: not a record header: %r" % (n, line)
            cur = dict(m.groupdict(), frames=[])
            for k in ("pid", "tid", "cpu", "period"):
                cur[k] = int(cur[k])
            cur["time_us"] = int(cur.pop("secs")) * 1000000 + int(cur.pop("usecs"))
        elif line == "":
            records.append(cur)
            cur = None
        else:
            m = FRAME.match(line)
            assert m, "line %d: not a frame: %r" % (n, line)
            cur["frames"].append((int(m.group("addr"), 16), m.group("sym"), m.group("dso")))
    assert cur is None, "the last record is not ended by a blank line"
    return records


def collapse(records, tasks=True):
    """Folded stacks {stack: count}: COMM, then the frames outermost first, as perf's collapsers
    name them, [unknown] mapped as fold names it."""
    out = {}
    for r in records:
        names = [r["comm"]]
        for addr, sym, dso in reversed(r["frames"]):
            if sym == "[unknown]":
                sym = "[user]" if dso == "[unknown]" and tasks else "0x%x" % addr
            names.append(re.sub(r"\+0x[0-9a-f]+$", "", sym))
        stack = ";".join(names)
        out[stack] = out.get(stack, 0) + 1
    return out


def folded(*args):
    r = call("fold", *args)               # in this process: no interpreter start per case
    assert r.returncode == 0, r.stderr
    return {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in r.stdout.splitlines()}


def perf_script(*args):
    r = call("perf-script", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("extra", [[], ["--idle"], ["--pid", "1300"], ["--cpu", "1", "--from", "500ms"]])
def test_collapsed_equals_fold(extra):
    recs = parse(perf_script(V3, "-e", V3_ELF, *extra))
    assert recs and collapse(recs) == folded(V3, "-e", V3_ELF, "--task-format", "comm", *extra)


def test_without_tasks_the_comm_is_the_vcpu():
    recs = parse(perf_script(SMALL, "-e", SMALL_ELF))
    assert {r["comm"] for r in recs} == {"cpu0", "cpu1"}
    assert collapse(recs, tasks=False) == folded(SMALL, "-e", SMALL_ELF, "--group-by-cpu")


def test_header_fields_follow_the_samples():
    recs = parse(perf_script(V3, "-e", V3_ELF))
    cap = Capture(os.path.join(DATA, V3))
    kept = [s for s in cap.samples() if not s.flags & FLAG_IDLE]
    assert len(recs) == len(kept) == 156
    for r, s in zip(recs, kept):                        # the capture's order, one record a sample
        assert (r["cpu"], r["time_us"]) == (s.cpu, s.time_ns // 1000)
        assert (r["pid"], r["tid"]) == ((s.task.tgid, s.task.pid) if s.task else (0, 0))
        assert (r["period"], r["event"]) == (10000000, "cpu-clock")
        assert [f[0] for f in r["frames"]] == list(s.frames)
    worker = [r for r in recs if r["comm"] == "worker"]
    assert {(r["pid"], r["tid"]) for r in worker} == {(1300, 1301), (1300, 1302)}  # process/thread


def test_symbols_carry_offsets_and_dsos():
    recs = parse(perf_script(V3, "-e", V3_ELF))
    syms = {f[1] for r in recs for f in r["frames"]}
    assert {"leaf_a+0x10", "middle+0x9", "start_kernel+0xa"} <= syms   # as report prints them
    dsos = {(f[1] == "[unknown]", f[2]) for r in recs for f in r["frames"]}
    assert dsos == {(False, "[kernel.kallsyms]"), (True, "[kernel.kallsyms]"), (True, "[unknown]")}
    bare = parse(perf_script(V3))                       # no -e: no symbols
    assert {f[1] for r in bare for f in r["frames"]} == {"[unknown]"}


def test_folded_input_round_trips():
    text = perf_script(FOLDED)
    with open(FOLDED) as f:
        want = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in f}
    recs = parse(text)
    assert len(recs) == sum(want.values())
    assert collapse(recs) == want


def test_golden_output_is_byte_identical():
    import regen_golden_visual as regen
    r = run(*regen.golden_args("sf_small.perf-script"))
    assert r.returncode == 0, r.stderr
    with open(os.path.join(DATA, "sf_small.perf-script")) as f:
        assert r.stdout == f.read(), "run tests/analysis/regen_golden_visual.py after an intended change"


@pytest.mark.parametrize("args,code", [
    (["perf-script", FOLDED, "--idle", "-o", "OUT"], 2),          # filters on folded text
    (["perf-script", "BIG", "-o", "OUT"], 1),                     # too many samples to list
    (["perf-script", V3, "-e", V3_ELF, "--comm", "(", "-o", "OUT"], 2),
    (["perf-script", SMALL, "--pid", "1", "-o", "OUT"], 2),       # no task attribution
    (["perf-script", V3, "-e", V3_ELF, "-o", V3_ELF], 2),         # the output is an input
    (["perf-script", "nothing.cap", "-o", "OUT"], 1),
])
def test_bad_input_one_line_nothing_written(tmp_path, args, code):
    out = tmp_path / "out.txt"
    out.write_text("keep")
    big = tmp_path / "big.folded"
    big.write_text("a;b 99999999\nc 2\n")
    args = [str(out) if a == "OUT" else str(big) if a == "BIG" else a for a in args]
    r = call(*args)
    assert r.returncode == code and one_line_error(r), r.stderr
    assert out.read_text() == "keep" and sorted(os.listdir(tmp_path)) == ["big.folded", "out.txt"]
