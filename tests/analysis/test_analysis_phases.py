# SPDX-License-Identifier: MIT
"""Capture version 5's phases chunk (`gdbsample record --phase`): the reader's parse of good chunks
and of every kind of damage (the samples before it kept), --phase / --phase-occurrence in the
subcommands (exactly the samples inside, at both ends of an occurrence), their usage errors, and
info's phase lines in text and JSON; type 4 stays damage before version 5."""
import json
import re

import pytest

import capgen
from analyze import call as run  # in this process: no interpreter start per call
from analyze import one_line_error
from gdbsample_analysis.capture import Capture, Occurrence, Phase, parse_phases

MS = 1000000                        # ns
KTEXT = 0xffffffff81000000          # the map's text: every sample's pc is KTEXT + 0x10 * its index,
                                    # called from main (KTEXT + 0x800)
BEGIN, END = 0xffffffff81234560, 0xffffffff812345a0
# Sample times (ns): before, at and after each end of each occurrence below.
TIMES = [0, 999999, 1 * MS, 1500000, 3 * MS - 1, 3 * MS, 4 * MS, 5 * MS, 5999999, 6 * MS, 7999999,
         8 * MS, 8500000, 9 * MS]
RUN_END = 9 * MS
# work: #1 [1 ms, 3 ms) done, #2 [5 ms, 6 ms) done but skipped, #3 [8 ms, 9 ms] open at the run's end.
WORK = ("work", BEGIN, END, [(1, 1 * MS, 3 * MS, 0, 1, True, True),
                             (2, 5 * MS, 6 * MS, 1, 0, True, False),
                             (3, 8 * MS, RUN_END, 1, None, False, True)])
OTHER = ("other.phase-2", 0xffffffff81000010, 0xffffffff81000020, [])   # opened never
SUMMARY = {"duration_ns": RUN_END, "samples": len(TIMES), "dropped": 0, "phase": "work",
           "phase_begin": "do_work", "phase_end": "end_work", "phase_occurrences": 3, "phase_complete": 2,
           "phase_sampled_ns": 3 * MS, "phase_on_bound": 4, "phase_rescues": 1, "phase_hits": 10}
IN_1 = {1 * MS, 1500000, 3 * MS - 1}          # t == BEGIN_NS kept, t == END_NS dropped (done)
IN_2 = {5 * MS, 5999999}
IN_3 = {8 * MS, 8500000, 9 * MS}              # t == END_NS kept: the occurrence was still open


def samples():
    return [(t, i % 2, 0, (KTEXT + 0x10 * i, KTEXT + 0x808)) for i, t in enumerate(TIMES)]


def write(tmp_path, phases=(WORK, OTHER), name="ph.cap", version=5, summary=SUMMARY, **kw):
    path = tmp_path / name
    capgen.write(str(path), samples(), summary, per_chunk=5, phases=phases, version=version, ncpus=2, **kw)
    return path


def kept_times(text):
    """The sample times of a fold --task-format none without -e: each sample has its own pc."""
    out = set()
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        assert count == "1", line
        out.add(TIMES[(int(stack.split(";")[-1], 16) - KTEXT) // 0x10])
    return out


def fold(path, *args):
    return run("fold", path, "--task-format", "none", *args)


# --- the reader --------------------------------------------------------------------------------

def test_reader_reads_the_phases_and_their_occurrences(tmp_path):
    c = Capture(str(write(tmp_path)))
    assert c.version == 5
    expect = [Phase("work", BEGIN, END, [Occurrence(1, 1 * MS, 3 * MS, 0, 1, True, True),
                                         Occurrence(2, 5 * MS, 6 * MS, 1, 0, True, False),
                                         Occurrence(3, 8 * MS, RUN_END, 1, None, False, True)]),
              Phase("other.phase-2", 0xffffffff81000010, 0xffffffff81000020, [])]
    assert c.load_phases() == (expect, None)          # ahead of the samples: the filters need it first
    assert len(list(c.samples())) == len(TIMES) and c.intact
    assert c.phases == expect
    assert c.summary["phase_hits"] == 10 and c.summary_bad == []


def test_a_list_longer_than_a_chunk_continues_in_the_next(tmp_path):
    """As the modules do: the next chunk's first lines continue the last phase, N counting on."""
    first = capgen.phases_text([WORK[:3] + (WORK[3][:2],)])
    rest = "o 3 %d %d 1 - open sampled\n" % (8 * MS, RUN_END)
    data = capgen.capture_bytes(samples(), None, 5, version=5, ncpus=2, phases=first)
    data += capgen.chunk(4, rest.encode(), 1, 5) + capgen.chunk(2, capgen.summary_text(SUMMARY), 1, 5)
    path = tmp_path / "two.cap"
    path.write_bytes(data)
    c = Capture(str(path))
    assert [o.n for o in c.load_phases()[0][0].occurrences] == [1, 2, 3]
    list(c.samples())
    assert c.intact and [o.n for o in c.phases[0].occurrences] == [1, 2, 3]
    assert c.phases[0].occurrences[2] == Occurrence(3, 8 * MS, RUN_END, 1, None, False, True)


def test_parse_phases_leaves_what_came_before_as_it_was():
    before = parse_phases(b"p a 10 20\no 1 5 6 0 0 done sampled\n", 2)
    with pytest.raises(ValueError, match="line 3: occurrence 9 where 4 comes next"):
        parse_phases(b"o 2 7 8 0 0 done sampled\no 3 9 9 0 0 done sampled\no 9 9 9 0 0 done sampled\n",
                     3, before)
    assert len(before[0].occurrences) == 1           # the damaged chunk added nothing, not even 2 and 3
    assert parse_phases(b"", 0) == [] and parse_phases(b"", 0, before) == before


DAMAGE = [
    ("other shape", "p work 10 20\nx 1 2 3\n", "line 2: 'x 1 2 3'"),
    ("occurrence before any phase", "o 1 0 10 0 1 done sampled\np work 10 20\n", "before any phase"),
    ("bad name character", "p wo/rk 10 20\n", "line 1"),
    ("name too long", "p %s 10 20\n" % ("a" * 65), "line 1"),
    ("empty name", "p  10 20\n", "line 1"),
    ("name given twice", "p work 10 20\np work 30 40\n", "listed twice"),
    ("N not from 1", "p work 10 20\no 2 0 10 0 1 done sampled\n", "occurrence 2 where 1 comes next"),
    ("N skips", "p work 10 20\no 1 0 10 0 1 done sampled\no 3 20 30 0 1 done sampled\n",
     "occurrence 3 where 2 comes next"),
    ("N repeats", "p work 10 20\no 1 0 10 0 1 done sampled\no 1 20 30 0 1 done sampled\n", "where 2"),
    ("end before begin", "p work 10 20\no 1 100 99 0 1 done sampled\n", "before it began"),
    ("end past 2^63", "p work 10 20\no 1 0 9223372036854775808 0 1 done sampled\n", "past 2^63"),
    ("open with an end vCPU", "p work 10 20\no 1 0 10 0 1 open sampled\n", "open with end vCPU 1"),
    ("done without an end vCPU", "p work 10 20\no 1 0 10 0 - done sampled\n", "done with end vCPU -"),
    ("vCPU 4096", "p work 10 20\no 1 0 10 4096 1 done sampled\n", "4096"),
    ("unknown state", "p work 10 20\no 1 0 10 0 1 closed sampled\n", "line 2"),
    ("unknown sampled word", "p work 10 20\no 1 0 10 0 1 done yes\n", "line 2"),
    ("upper-case hex", "p work ABC 20\n", "line 1"),
    ("0x prefix", "p work 0x10 20\n", "line 1"),
    ("address past 64 bits", "p work 1%s 20\n" % ("0" * 16), "line 1"),
    ("two spaces", "p work  10 20\n", "line 1"),
    ("an extra field", "p work 10 20 30\n", "line 1"),
    ("a field missing", "p work 10 20\no 1 0 10 0 1 done\n", "line 2"),
    ("empty line", "p work 10 20\n\n", "line 2"),
    ("CR LF", "p work 10 20\r\n", "line 1"),
    ("last line cut off", "p work 10 20\no 1 0 10 0 1 done sampled", "cut off"),
]


def damaged(tmp_path, payload, records=None, version=5):
    """8 samples in two chunks, a phases chunk with payload (records: its line count unless
    given), then the summary."""
    s = samples()[:8]
    body = b"".join(capgen.chunks(s, 4, version))
    body += capgen.chunk(4, payload, payload.count(b"\n") if records is None else records, version)
    body += capgen.chunk(2, capgen.summary_text(SUMMARY), 1, version)
    path = tmp_path / "bad.cap"
    path.write_bytes(capgen.header(version=version, ncpus=2) + body)
    return path


@pytest.mark.parametrize("text,why", [d[1:] for d in DAMAGE], ids=[d[0] for d in DAMAGE])
def test_damage_stops_the_reader_and_keeps_the_samples_before(tmp_path, text, why):
    path = damaged(tmp_path, text.encode())
    c = Capture(str(path))
    got = list(c.samples())
    assert len(got) == 8 and c.chunks_ok == 2 and not c.intact
    assert c.problem.startswith("bad phases chunk: ") and why in c.problem, c.problem
    assert c.phases == [] and c.summary == {}      # nothing of the damaged chunk, nothing after it
    r = fold(path)
    assert r.returncode == 3 and one_line_error(r) and "bad phases chunk" in r.stderr
    assert len(r.stdout.splitlines()) == 8         # the samples before the damage, all there


@pytest.mark.parametrize("payload,records,why", [
    (b"p work 10 20\n", 2, "1 lines where its header says 2"),
    (b"p work 10 20\no 1 0 10 0 1 done sampled\n", 1, "2 lines where its header says 1"),
    (b"p w\xff 10 20\n", None, "not UTF-8"),
])
def test_records_and_encoding_are_checked(tmp_path, payload, records, why):
    c = Capture(str(damaged(tmp_path, payload, records)))
    assert len(list(c.samples())) == 8 and not c.intact and why in c.problem, c.problem


def test_a_bad_crc_in_the_phases_chunk_is_damage(tmp_path):
    data = bytearray(write(tmp_path).read_bytes())
    at = [o for o in capgen.chunk_offsets(bytes(data)) if data[o + 4] == 4][0]
    data[at + 22] ^= 1                             # a payload byte
    path = tmp_path / "crc.cap"
    path.write_bytes(bytes(data))
    c = Capture(str(path))
    assert c.load_phases() == ([], "chunk checksum mismatch")
    assert len(list(c.samples())) == len(TIMES) and "checksum" in c.problem and c.phases == []


@pytest.mark.parametrize("version", [2, 3, 4])
def test_type_4_is_an_unknown_chunk_before_version_5(tmp_path, version):
    path = write(tmp_path, version=version)
    c = Capture(str(path))
    assert c.load_phases() == ([], None)
    assert len(list(c.samples())) == len(TIMES) and not c.intact
    assert c.problem.startswith("unknown chunk type 4") and c.phases == []
    r = fold(path)
    assert r.returncode == 3 and "unknown chunk type 4" in r.stderr
    r = fold(path, "--phase", "work")
    assert r.returncode == 2 and one_line_error(r)
    assert "lists no phases (capture version %d: phases come in version 5" % version in r.stderr


def test_version_1_skips_type_4_as_any_unknown_chunk(tmp_path):
    c = Capture(str(write(tmp_path, phases="p work zz\n", version=1)))
    assert len(list(c.samples())) == len(TIMES) and c.intact and c.phases == []


# --- the filters -------------------------------------------------------------------------------

@pytest.mark.parametrize("args,expect", [
    ([], set(TIMES)),
    (["--phase", "work"], IN_1 | IN_2 | IN_3),
    (["--phase", "work", "--phase-occurrence", "1"], IN_1),
    (["--phase", "work", "--phase-occurrence", "2"], IN_2),    # skipped, but these samples are in it
    (["--phase", "work", "--phase-occurrence", "3"], IN_3),
    (["--phase", "work", "--from", "1500000", "--until", "8500000"], {1500000, 3 * MS - 1} | IN_2 | {8 * MS}),
    (["--phase", "work", "--phase-occurrence", "3", "--cpu", "1"], {8 * MS, 9 * MS}),
    (["--phase", "other.phase-2"], set()),                      # a phase that never opened: nothing
])
def test_phase_filter_keeps_exactly_the_samples_inside(tmp_path, args, expect):
    r = fold(write(tmp_path), "--idle", *args)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert kept_times(r.stdout) == expect


def test_a_sample_is_in_a_done_occurrence_up_to_its_last_ns(tmp_path):
    """The rule on literal occurrences: [BEGIN, END) when done, [BEGIN, END] when open."""
    from gdbsample_analysis.phases import Timeline
    done = Occurrence(1, 10, 20, 0, 0, True, True)
    line = Timeline([done, Occurrence(2, 20, 30, 0, None, False, True)])
    assert [line.holds(t) for t in (9, 10, 19, 20, 29, 30, 31)] == [False, True, True, True, True, True, False]
    assert [line.at(t) for t in (19, 20, 30)] == [[0], [1], [1]]
    assert Timeline([done]).holds(20) is False
    assert line.covered_ns(0, 25) == 15 and line.covered_ns(12, 18) == 6 and line.covered_ns(40, 50) == 0


def test_overlapping_occurrences_are_answered_too():
    """Never written so, but the reader does not refuse it: every occurrence holding t is found."""
    from gdbsample_analysis.phases import Timeline
    line = Timeline([Occurrence(1, 0, 100, 0, 0, True, True), Occurrence(2, 10, 20, 0, 0, True, True),
                     Occurrence(3, 30, 40, 0, 0, True, True)])
    assert sorted(line.at(35)) == [0, 2] and line.holds(99) and not line.holds(100)
    assert line.covered_ns(0, 1000) == 100


@pytest.fixture
def named(tmp_path):
    """ph.cap and a map naming its pcs: f0 .. f13, one function per sample, called from main."""
    write(tmp_path)
    (tmp_path / "k.map").write_text("".join("%x T f%d\n" % (KTEXT + 0x10 * i, i) for i in range(len(TIMES)))
                                    + "%x T main\n%x T _etext\n" % (KTEXT + 0x800, KTEXT + 0x1000))
    return tmp_path


def test_report_counts_the_phase_and_the_time_it_covers(named):
    r = run("report", "ph.cap", "-e", "k.map", "--idle", "--phase", "work", cwd=str(named))
    assert r.returncode == 0, r.stderr
    # 2 ms of #1, 1 ms of #2, #3 up to the run's end (1 ms): 4 ms; 8 samples
    assert r.stdout.startswith("profiled 4 ms\n8 samples on 2 cpus, 0 dropped")
    r = run("report", "ph.cap", "-e", "k.map", "--phase", "work", "--phase-occurrence", "1",
            "--from", "1.5ms", cwd=str(named))
    assert r.stdout.startswith("profiled 1 ms\n2 samples on 2 cpus"), r.stdout   # 1.5 ms
    assert "f3+0x0" in r.stdout and "f4+0x0" in r.stdout and "f2+0x0" not in r.stdout
    r = run("report", "ph.cap", "-e", "k.map", "--phase", "work", "--phase-occurrence", "3", cwd=str(named))
    assert r.stdout.startswith("profiled 1 ms\n3 samples on 2 cpus"), r.stdout   # open: to the run's end


def test_every_capture_subcommand_filters_by_phase(named):
    """The same two samples of occurrence 1 (from 1.5 ms) through each output."""
    sel = ["--phase", "work", "--phase-occurrence", "1", "--from", "1500000"]
    r = run("perf-script", "ph.cap", "-e", "k.map", *sel, cwd=str(named))
    assert r.returncode == 0, r.stderr
    assert re.findall(r"\] +([0-9.]+):", r.stdout) == ["0.001500", "0.002999"]
    r = run("diff", "ph.cap", "ph.cap", "-e", "k.map", "--no-table", *sel, cwd=str(named))
    assert r.stdout == "main;f3 1 1\nmain;f4 1 1\n", r.stdout
    r = run("speedscope", "ph.cap", "-e", "k.map", "-o", "s.json", *sel, cwd=str(named))
    assert r.returncode == 0, r.stderr
    doc = json.loads((named / "s.json").read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert sorted(names) == ["f3", "f4", "main"]
    r = run("flamegraph", "ph.cap", "-e", "k.map", "-o", "f.svg", *sel, cwd=str(named))
    assert r.returncode == 0, r.stderr
    svg = (named / "f.svg").read_text()
    assert ">f3<" in svg and ">f4<" in svg and ">f2<" not in svg and ">f5<" not in svg


def test_compare_filters_its_external_capture(named):
    (named / "in.txt").write_text("profiled 2 ms\n2 samples on 2 cpus, 0 dropped, source tick 100 Hz\n"
                                  "50.0% 1 f3+0x0\n        <- main+0x0\n50.0% 1 f4+0x0\n        <- main+0x0\n")
    r = run("compare", "in.txt", "ph.cap", "-e", "k.map", "--phase", "work", "--phase-occurrence", "1",
            "--from", "1500000", cwd=str(named))
    assert r.returncode == 0, r.stdout + r.stderr                # the same two samples: consistent
    assert "external: ph.cap (gdbstub 100 Hz, phase work #1, 2 samples)\n" in r.stdout
    r = run("compare", "in.txt", "ph.cap", "-e", "k.map", "--phase", "work", cwd=str(named))
    assert "external: ph.cap (gdbstub 100 Hz, phase work, 8 samples)\n" in r.stdout, r.stdout


# --- usage errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("args,code,says", [
    (["--phase-occurrence", "1"], 2, "--phase-occurrence needs --phase NAME"),
    (["--phase", "nope"], 2, "ph.cap has no phase 'nope'; its phases: work, other.phase-2"),
    (["--phase", "work", "--phase-occurrence", "4"], 2, "phase work of ph.cap has 3 occurrences (1-3)"),
    (["--phase", "other.phase-2", "--phase-occurrence", "1"], 2, "phase other.phase-2 of ph.cap has no occurrences"),
    (["--phase", "work", "--phase-occurrence", "0"], 2, "--phase-occurrence"),
    (["--phase", "work", "--phase-occurrence", "x"], 2, "--phase-occurrence"),
])
def test_usage_errors_are_one_line_and_exit_2(tmp_path, args, code, says):
    write(tmp_path)
    r = run("fold", "ph.cap", "--task-format", "none", *args, cwd=str(tmp_path))
    assert r.returncode == code and one_line_error(r), r.stderr
    assert says in r.stderr and r.stdout == ""


def test_one_occurrence_is_singular(tmp_path):
    write(tmp_path, phases=[WORK[:3] + (WORK[3][:1],)])
    r = run("fold", "ph.cap", "--phase", "work", "--phase-occurrence", "2", cwd=str(tmp_path))
    assert r.returncode == 2 and "phase work of ph.cap has 1 occurrence (1-1)" in r.stderr


def test_a_version_5_capture_listing_no_phase(tmp_path):
    write(tmp_path, phases="")
    c = Capture(str(tmp_path / "ph.cap"))
    assert c.load_phases() == ([], None) and len(list(c.samples())) == len(TIMES) and c.intact
    r = run("fold", "ph.cap", "--phase", "work", cwd=str(tmp_path))
    assert r.returncode == 2 and one_line_error(r) and "ph.cap lists no phases" in r.stderr


def test_damaged_phases_make_phase_a_damage_error(tmp_path):
    """A phase asked for that damage hid: the capture is at fault, not the arguments (exit 3)."""
    damaged(tmp_path, b"p work 10 20\nbogus\n")
    r = run("fold", "bad.cap", "--phase", "work", cwd=str(tmp_path))
    assert r.returncode == 3 and one_line_error(r) and r.stdout == ""
    assert "lists no phases" in r.stderr and "could not all be read (bad phases chunk: line 2" in r.stderr


@pytest.mark.parametrize("verb,args", [
    ("perf-script", ["x.folded"]), ("pprof", ["x.folded", "-o", "o.pb.gz"]),
    ("flamegraph", ["x.folded", "-o", "o.svg"]), ("diff", ["x.folded", "ph.cap"]),
    ("diff", ["ph.cap", "x.folded"]), ("flamegraph", ["ph.cap", "-e", "k.map", "--diff", "x.folded", "-o", "o.svg"]),
    ("compare", ["in.txt", "x.folded"]),
])
@pytest.mark.parametrize("sel", [["--phase", "work"], ["--phase", "work", "--phase-occurrence", "1"]])
def test_folded_text_refuses_phase_options(named, verb, args, sel):
    (named / "x.folded").write_text("main;f1 3\n")
    (named / "in.txt").write_text("profiled 2 ms\n3 samples on 1 cpus, 0 dropped, source tick 100 Hz\n50.0% 3 f1\n")
    if verb in ("diff", "compare"):
        args = args + ["-e", "k.map"]
    r = run(verb, *args, *sel, cwd=str(named))
    assert r.returncode == 2 and one_line_error(r), (r.returncode, r.stderr)
    assert "x.folded is not a capture: --phase and --phase-occurrence select a capture's samples" in r.stderr
    assert not (named / "o.svg").exists() and not (named / "o.pb.gz").exists()
    if "ph.cap" not in args:                       # --phase-occurrence alone: the same line
        r = run(verb, *args, "--phase-occurrence", "1", cwd=str(named))
        assert r.returncode == 2 and "x.folded is not a capture" in r.stderr, r.stderr


# --- info --------------------------------------------------------------------------------------

def test_info_lists_each_occurrence_with_its_samples(tmp_path):
    write(tmp_path)
    r = run("info", "ph.cap", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = lines.index("phase       work = do_work:end_work, begin 0xffffffff81234560, end 0xffffffff812345a0: "
                     "3 occurrences, 2 done, 1 open, 2 sampled; 6 samples outside them")
    assert lines[at + 1:at + 7] == [
        "  #1        0.001000000 s to 0.003000000 s (2.000 ms), vCPU 0 to 1, done, sampled, 3 samples",
        "  #2        0.005000000 s to 0.006000000 s (1.000 ms), vCPU 1 to 0, done, skipped, 2 samples",
        "  #3        0.008000000 s to 0.009000000 s (1.000 ms), vCPU 1 to -, open, sampled, 3 samples",
        "phase       other.phase-2, begin 0xffffffff81000010, end 0xffffffff81000020: 0 occurrences, "
        "0 done, 0 open, 0 sampled; 14 samples outside them",
        "  breakpoints 10 hits, 4 samples on a bound (left out), 1 watchdog rescues; "
        "2 of 3 occurrences closed by END; sampled 3.000 ms",
        "dropped     0 (vCPU samples whose registers could not be read)"]
    assert "phase_hits" not in r.stdout                  # shown above, not again under "summary"


def test_info_json_gives_the_numbers(tmp_path):
    write(tmp_path)
    r = run("info", "--json", "ph.cap", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 3 and doc["capture"]["version"] == 5 and doc["offcpu"] is None
    work, other = doc["phases"]
    assert (work["name"], work["begin"], work["end"], work["samples_outside"]) == \
        ("work", "0xffffffff81234560", "0xffffffff812345a0", 6)
    assert work["occurrences"] == [
        {"n": 1, "begin_ns": 1000000, "end_ns": 3000000, "duration_ns": 2000000, "begin_cpu": 0, "end_cpu": 1,
         "state": "done", "sampled": True, "samples": 3},
        {"n": 2, "begin_ns": 5000000, "end_ns": 6000000, "duration_ns": 1000000, "begin_cpu": 1, "end_cpu": 0,
         "state": "done", "sampled": False, "samples": 2},
        {"n": 3, "begin_ns": 8000000, "end_ns": 9000000, "duration_ns": 1000000, "begin_cpu": 1,
         "end_cpu": None, "state": "open", "sampled": True, "samples": 3}]
    assert other == {"name": "other.phase-2", "begin": "0xffffffff81000010", "end": "0xffffffff81000020",
                     "samples_outside": 14, "occurrences": []}
    assert doc["summary"]["phase_sampled_ns"] == 3 * MS


def test_info_counts_samples_in_the_file_whatever_their_kind(tmp_path):
    """Idle samples count too (info counts the file), and samples at both ends by the rule."""
    s = [(t, 0, 1, (KTEXT,)) for t in (1 * MS, 3 * MS, 8 * MS, 9 * MS)]     # all idle
    capgen.write(str(tmp_path / "idle.cap"), s, SUMMARY, phases=[WORK], version=5)
    doc = json.loads(run("info", "--json", "idle.cap", cwd=str(tmp_path)).stdout)
    assert [o["samples"] for o in doc["phases"][0]["occurrences"]] == [1, 0, 2]
    assert doc["phases"][0]["samples_outside"] == 1


def test_info_on_damaged_phases_still_writes_json_exit_3(tmp_path):
    damaged(tmp_path, b"p work 10 20\no 1 5 4 0 1 done sampled\n")
    r = run("info", "--json", "bad.cap", cwd=str(tmp_path))
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["phases"] == [] and doc["integrity"]["intact"] is False
    assert doc["integrity"]["problem"].startswith("bad phases chunk: line 2: occurrence 1 ends at 4 ns")
    text = run("info", "bad.cap", cwd=str(tmp_path)).stdout
    assert "phases      none listed\n" in text and "DAMAGED: bad phases chunk" in text


def test_info_before_version_5_says_nothing_of_phases(tmp_path):
    capgen.write(str(tmp_path / "v4.cap"), samples(), {"duration_ns": RUN_END}, version=4)
    r = run("info", "v4.cap", cwd=str(tmp_path))
    assert r.returncode == 0 and "phase" not in r.stdout
    assert json.loads(run("info", "--json", "v4.cap", cwd=str(tmp_path)).stdout)["phases"] is None
