# SPDX-License-Identifier: MIT
"""pprof subcommand: profile.proto's structure, wall time, determinism, and go tool pprof's view.

The profile is decoded with the module protoc generated (BUILD/pprof/profile_pb2.py, made by
`make`); `go tool pprof` (Debian's golang-go) must rank functions as `report` does.
"""
import gzip
import importlib.util
import os
import re
import shutil
import subprocess

import conftest
import pytest
from analyze import DATA, call, one_line_error
from gdbsample_analysis import profiles
from gdbsample_analysis.capture import Capture, FLAG_IDLE

V3, V3_ELF = "sample_v3.cap", "tiny.elf"          # tasks, user-mode samples, unknown frames
SMALL, SMALL_ELF = "sf_small.cap", "sf_tiny.elf"  # no tasks; DWARF lines
FOLDED = os.path.join(DATA, "fg_base.folded")
PB2 = os.path.join(conftest.BUILD, "pprof", "profile_pb2.py")


@pytest.fixture(scope="module")
def pb():
    if not os.path.exists(PB2):
        pytest.fail(f"{PB2} is missing: run `make` (protoc generates it from analysis/proto/profile.proto)")
    spec = importlib.util.spec_from_file_location("test_profile_pb2", PB2)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def go():
    exe = shutil.which("go")
    if not exe:
        pytest.skip("go is not installed (Debian's golang-go; make deps installs it): "
                    "go tool pprof cannot be checked")
    return exe


def convert(tmp_path, *args):
    out = tmp_path / "out.pb.gz"
    r = call("pprof", *args, "-o", out)   # in this process (test_stdout_... runs the tool)
    assert r.returncode == 0, r.stderr
    return out


def decode(pb, path):
    prof = pb.Profile()
    with open(path, "rb") as f:
        prof.ParseFromString(gzip.decompress(f.read()))
    return prof


def report_leaves(*args):
    """{leaf function: samples} from `report --chains 1000000` (every chain shown)."""
    r = call("report", *args, "--chains", "1000000")
    assert r.returncode == 0, r.stderr
    return profiles.parse_reports(r.stdout, "report").leaf


def pprof_top(go, path, tmp_path, *extra):
    """{function: flat} of every function with flat samples in `go tool pprof -top`."""
    env = dict(os.environ, HOME=str(tmp_path), PPROF_TMPDIR=str(tmp_path))
    r = subprocess.run([go, "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0",
                        "-edgefraction=0"] + list(extra) + [str(path)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.+)$", line)
        if m and int(m.group(1)):
            rows[m.group(2)] = int(m.group(1))
    return r.stdout, rows


# -- go tool pprof: the hottest functions, as report counts them ---------------------------------

@pytest.mark.parametrize("cap,elf", [(V3, V3_ELF), (SMALL, SMALL_ELF)])
def test_pprof_top_equals_report(go, tmp_path, cap, elf):
    path = convert(tmp_path, cap, "-e", elf)
    text, top = pprof_top(go, path, tmp_path)
    assert "Type: samples" in text                      # default_sample_type: counts, not time
    assert top == report_leaves(cap, "-e", elf), text


def test_pprof_top_follows_filters_and_task_labels(go, tmp_path):
    path = convert(tmp_path, V3, "-e", V3_ELF, "--idle")
    _, top = pprof_top(go, path, tmp_path)
    assert top == report_leaves(V3, "-e", V3_ELF, "--idle")
    _, top = pprof_top(go, path, tmp_path, "-tagfocus=comm=^worker$")   # the task labels
    assert top == report_leaves(V3, "-e", V3_ELF, "--idle", "--comm", "^worker$")
    _, top = pprof_top(go, path, tmp_path, "-tagfocus=cpu=^1$")
    assert top == report_leaves(V3, "-e", V3_ELF, "--idle", "--cpu", "1")


def test_pprof_top_of_folded_stacks(go, tmp_path):
    # demangle=full: pprof otherwise shortens C++-looking names (`<odd & "name">` to <unknown>)
    _, top = pprof_top(go, convert(tmp_path, FOLDED), tmp_path, "-symbolize=demangle=full")
    leaves = {}
    with open(FOLDED) as f:
        for line in f:
            stack, count = line.rsplit(" ", 1)
            leaf = stack.split(";")[-1]
            leaves[leaf] = leaves.get(leaf, 0) + int(count)
    assert top == leaves


# -- the profile itself --------------------------------------------------------------------------

def strings(prof):
    return list(prof.string_table)


def stacks(prof):
    """{(frame names root first, labels): [values summed]} of a decoded profile (stacks of the
    same functions through different call sites are different samples in the profile)."""
    st = strings(prof)
    fn = {f.id: st[f.name] for f in prof.function}
    loc = {lc.id: fn[lc.line[0].function_id] for lc in prof.location}
    out = {}
    for s in prof.sample:
        key = (";".join(loc[i] for i in reversed(s.location_id)),
               tuple(sorted((st[lb.key], st[lb.str]) for lb in s.label)))
        out[key] = [a + b for a, b in zip(out.get(key, [0] * len(s.value)), s.value)]
    return out


def test_capture_profile_structure(pb, tmp_path):
    prof = decode(pb, convert(tmp_path, V3, "-e", V3_ELF))
    st = strings(prof)
    assert st[0] == ""
    assert [(st[v.type], st[v.unit]) for v in prof.sample_type] == [("samples", "count"), ("wall", "nanoseconds")]
    assert st[prof.default_sample_type] == "samples"
    assert (st[prof.period_type.type], st[prof.period_type.unit], prof.period) == ("wall", "nanoseconds", 10000000)
    cap = Capture(os.path.join(DATA, V3))
    kept = [s for s in cap.samples() if not s.flags & FLAG_IDLE]
    assert prof.time_nanos == cap.start_ns and prof.duration_nanos == cap.summary["duration_ns"]
    assert sum(s.value[0] for s in prof.sample) == len(kept) == 156
    # every id is unique and non-zero; locations point at functions and the one mapping
    assert sorted(f.id for f in prof.function) == list(range(1, len(prof.function) + 1))
    assert sorted(lc.id for lc in prof.location) == list(range(1, len(prof.location) + 1))
    (m,) = prof.mapping
    assert (m.id, m.memory_start, st[m.filename], m.has_functions) == (1, cap.kernel_lo, "tiny.elf", True)
    for lc in prof.location:
        assert lc.mapping_id == (1 if cap.kernel_lo <= lc.address <= cap.kernel_hi else 0)
    # labels name each sample's vCPU and task ([unknown] without a task record)
    got = stacks(prof)
    by_task = {}
    for (_, labels), values in got.items():
        d = dict(labels)
        assert set(d) in ({"cpu", "comm", "pid", "tgid"}, {"cpu", "comm"})
        by_task[d["comm"]] = by_task.get(d["comm"], 0) + values[0]
    assert by_task == {"bash": 47, "kworker/0:1": 38, "worker": 63, "[unknown]": 8}
    # a user-mode sample is its pc, as report shows it
    assert any(k[0] == "0x401000" for k in got)


def test_wall_is_the_time_to_the_vcpus_next_sample(pb, tmp_path):
    """Each sample stands for the time to its vCPU's next sample in the capture (idle ones too);
    the last of each vCPU for one period of the requested rate."""
    prof = decode(pb, convert(tmp_path, V3, "-e", V3_ELF))
    cap = Capture(os.path.join(DATA, V3))
    by_cpu = {}
    for s in cap.samples():
        by_cpu.setdefault(s.cpu, []).append(s)
    want = 0
    for ss in by_cpu.values():
        for i, s in enumerate(ss):
            if not s.flags & FLAG_IDLE:
                want += ss[i + 1].time_ns - s.time_ns if i + 1 < len(ss) else 10000000
    assert sum(s.value[1] for s in prof.sample) == want
    # --idle: the intervals stay, the idle samples count too: the vCPUs' whole spans
    prof = decode(pb, convert(tmp_path, V3, "-e", V3_ELF, "--idle"))
    span = sum(ss[-1].time_ns - ss[0].time_ns + 10000000 for ss in by_cpu.values())
    assert sum(s.value[1] for s in prof.sample) == span


def test_lines_and_files_from_dwarf(pb, tmp_path):
    prof = decode(pb, convert(tmp_path, SMALL, "-e", SMALL_ELF))
    st = strings(prof)
    funcs = {st[f.name]: (st[f.filename], f.start_line) for f in prof.function}
    assert funcs["spin"][0] == "sf_tiny.c" and funcs["spin"][1] > 0
    assert funcs["0x12345678"] == ("", 0)                # no symbol: no file
    assert all(lc.line[0].line > 0 for lc in prof.location
               if st[prof.function[lc.line[0].function_id - 1].name] in ("spin", "work", "copy_words"))
    assert prof.mapping[0].has_line_numbers
    with_map = decode(pb, convert(tmp_path, SMALL, "-e", os.path.join(DATA, "tiny.map")))
    assert not with_map.mapping[0].has_line_numbers   # a symbol map has no lines


def test_folded_profile_round_trips(pb, tmp_path):
    prof = decode(pb, convert(tmp_path, FOLDED))
    st = strings(prof)
    assert [(st[v.type], st[v.unit]) for v in prof.sample_type] == [("samples", "count")]
    assert not prof.mapping
    got = {k[0]: v for k, v in stacks(prof).items()}
    with open(FOLDED) as f:
        want = {line.rsplit(" ", 1)[0]: [int(line.rsplit(" ", 1)[1])] for line in f}
    assert got == want


def test_same_input_same_bytes(tmp_path):
    a = convert(tmp_path, V3, "-e", V3_ELF).read_bytes()
    b = convert(tmp_path, V3, "-e", V3_ELF).read_bytes()
    assert a == b and a[:2] == b"\x1f\x8b"


def test_stdout_when_not_a_terminal(pb, tmp_path):
    r = subprocess.run([os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze"), "pprof", V3, "-e", V3_ELF],
                       cwd=DATA, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == convert(tmp_path, V3, "-e", V3_ELF).read_bytes()


@pytest.mark.parametrize("args,code", [
    (["pprof", FOLDED, "--cpu", "0", "-o", "OUT"], 2),          # filters on folded text
    (["pprof", FOLDED, "--task-format", "comm", "-o", "OUT"], 2),
    (["pprof", "missing.cap", "-o", "OUT"], 1),
    (["pprof", V3, "-e", V3_ELF, "--pid", "x", "-o", "OUT"], 2),
    (["pprof", SMALL, "-e", SMALL_ELF, "--pid", "1", "-o", "OUT"], 2),  # no task attribution
    (["pprof", V3, "-e", V3_ELF], 2),                             # binary data to a StringIO: -o needed
    (["pprof", V3, "-e", V3_ELF, "-o", V3], 2),                   # the output is the input
])
def test_bad_input_one_line_nothing_written(tmp_path, args, code):
    out = tmp_path / "out.pb.gz"
    out.write_bytes(b"keep")
    args = [str(out) if a == "OUT" else a for a in args]
    r = call(*args)
    assert r.returncode == code and one_line_error(r), r.stderr
    assert out.read_bytes() == b"keep" and os.listdir(tmp_path) == ["out.pb.gz"]


def test_hostile_times_stay_in_int64(pb, tmp_path):
    """A start past 2^63 ns and intervals summing past 2^63 - 1: still a profile (int64 fields)."""
    import capgen
    big = (1 << 63) - 1
    cap = tmp_path / "h.cap"
    capgen.write(str(cap), [(0, 0, 0, [0xffffffff80000000]), (big, 0, 0, [0xffffffff80000000]),
                            (big, 1, 0, [0xffffffff80000000])],
                 {"samples": 3}, start_ns=(1 << 64) - 1, rate_hz=1)
    prof = decode(pb, convert(tmp_path, cap))
    assert prof.time_nanos == 0
    assert sum(s.value[0] for s in prof.sample) == 3
    assert max(s.value[1] for s in prof.sample) == big
