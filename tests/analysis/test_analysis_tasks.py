# SPDX-License-Identifier: MIT
"""Task attribution (capture version 3) in every view: fold's --task-format roots and [user],
--pid/--comm in each subcommand and their errors, report --by-task, speedscope and flame graph
names (escaped), diff's shared roots, info's tasks line."""
import json
import os
import xml.etree.ElementTree as ET

import pytest

import capgen
from analyze import DATA, one_line_error
from analyze import call as run  # in this process: no interpreter start per call (make check time)

ELF = os.path.join(DATA, "tiny.elf")
A, B, M = 0xffffffff80100000, 0xffffffff80100025, 0xffffffff80100065  # leaf_a, leaf_b, middle
P = 0xffff888003a00000
BASH = (1234, 1234, P, b"bash")
WORKER1 = (1301, 1300, P + 0x2000, b"worker")      # two threads of process 1300, one name
WORKER2 = (1302, 1300, P + 0x4000, b"worker")
SWAPPER = (0, 0, 0xffffffff82a12940, b"swapper/1")
HOSTILE = (66, 66, P + 0x6000, b"\x1b[2J<a&\"b>;\xff")   # escapes, markup, a frame separator
HOSTILE_TEXT = "\\x1b[2J<a&\"b>;\\xff"                     # its name as printed
SUMMARY = {"duration_ns": 1_000_000_000, "task_verified": 90, "task_hits": 20, "task_misses": 4,
           "task_renamed": 1, "task_lost": 2}


def make(tmp_path, name="t.cap", task_os=capgen.TASK_OS_LINUX, version=3, tasks=True):
    """100 stops 10 ms apart on 3 vCPUs:
    cpu0: bash, middle<-leaf_a (60) or user mode (40, pc 0x401000+k);
    cpu1: worker 1301 leaf_b (50), worker 1302 middle (30), idle swapper/1 (20);
    cpu2: every 10th stop, a hostile name in leaf_a (5) or no task record (5)."""
    s = []
    for k in range(100):
        t = k * 10_000_000
        if k % 5 < 3:
            s.append((t, 0, 0, (A + 4, M + 9), (), BASH))
        else:
            s.append((t, 0, 4, (0x401000 + k,), (), BASH))
        if k % 10 < 5:
            s.append((t, 1, 0, (B + 2,), (), WORKER1))
        elif k % 10 < 8:
            s.append((t, 1, 2, (M + 1,), (), WORKER2))
        else:
            s.append((t, 1, 1, (B + 1,), (), SWAPPER))
        if k % 10 == 0:
            s.append((t, 2, 0, (A + 1,), (), HOSTILE if k % 20 == 0 else None))
    if not tasks:
        s = [x[:5] for x in s]
    p = tmp_path / name
    capgen.write(p, s, SUMMARY, per_chunk=40, ncpus=3, version=version, task_os=task_os)
    return str(p)


def folded(text):
    return {line.rpartition(" ")[0]: int(line.rpartition(" ")[2]) for line in text.splitlines()}


def ok(r):
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


# --- fold ---------------------------------------------------------------------------------------

def test_fold_defaults_to_comm_roots_and_user_frames(tmp_path):
    got = folded(ok(run("fold", make(tmp_path), "-e", ELF)))
    assert got == {"bash;middle;leaf_a": 60, "bash;[user]": 40, "worker;leaf_b": 50, "worker;middle": 30,
                   HOSTILE_TEXT.replace(";", "\\x3b") + ";leaf_a": 5, "[unknown];leaf_a": 5}
    assert not any("0x401" in k for k in got)                       # the user pc is not shown


@pytest.mark.parametrize("fmt, want", [
    ("comm-pid", {"bash-1234;middle;leaf_a": 60, "bash-1234;[user]": 40, "worker-1301;leaf_b": 50,
                  "worker-1302;middle": 30, "[unknown];leaf_a": 5}),
    ("pid", {"1234;middle;leaf_a": 60, "1234;[user]": 40, "1301;leaf_b": 50, "1302;middle": 30,
             "66;leaf_a": 5, "[unknown];leaf_a": 5}),
    # without a task root a user-mode sample shows its pc, as before (and as gdbsample -f folded)
    ("cpu", dict({"cpu0;middle;leaf_a": 60, "cpu1;leaf_b": 50, "cpu1;middle": 30, "cpu2;leaf_a": 10},
                 **{"cpu0;0x%x" % (0x401000 + k): 1 for k in range(100) if k % 5 >= 3})),
    ("none", dict({"middle;leaf_a": 60, "leaf_b": 50, "middle": 30, "leaf_a": 10},
                  **{"0x%x" % (0x401000 + k): 1 for k in range(100) if k % 5 >= 3})),
])
def test_fold_task_formats(tmp_path, fmt, want):
    got = folded(ok(run("fold", make(tmp_path), "-e", ELF, "--task-format", fmt)))
    if fmt == "comm-pid":
        want = dict(want, **{HOSTILE_TEXT.replace(";", "\\x3b") + "-66;leaf_a": 5})
    assert got == want


def test_fold_task_and_cpu_roots_together(tmp_path):
    got = folded(ok(run("fold", make(tmp_path), "-e", ELF, "--task-format", "comm", "--group-by-cpu", "--idle")))
    assert got["bash;cpu0;middle;leaf_a"] == 60 and got["swapper/1;cpu1;leaf_b"] == 20
    assert got["[unknown];cpu2;leaf_a"] == 5 and got["bash;cpu0;[user]"] == 40
    # --group-by-cpu alone: the cpuN root alone, as without tasks (gdbsample -f folded's default);
    # with the cpu format too: still one cpuN root
    cpu = ok(run("fold", make(tmp_path), "-e", ELF, "--task-format", "cpu"))
    assert ok(run("fold", make(tmp_path), "-e", ELF, "--group-by-cpu")) == cpu
    assert ok(run("fold", make(tmp_path), "-e", ELF, "--group-by-cpu", "--task-format", "cpu")) == cpu


def test_fold_split_by_cpu_keeps_task_roots(tmp_path):
    cap = make(tmp_path)
    out = tmp_path / "p.folded"
    ok(run("fold", cap, "-e", ELF, "--split-by-cpu", "-o", out))
    assert folded((tmp_path / "p.cpu1.folded").read_text()) == {"worker;leaf_b": 50, "worker;middle": 30}
    r = run("fold", cap, "-e", ELF, "--split-by-cpu", "-o", out, "--task-format", "cpu")
    assert r.returncode == 2 and one_line_error(r)


def test_versions_1_and_2_fold_as_before(tmp_path):
    for version in (1, 2):
        cap = make(tmp_path, "v%d.cap" % version, version=version)
        got = folded(ok(run("fold", cap, "-e", ELF)))
        assert "0x401003" in got and "leaf_b" in got and "[user]" not in got
        assert not any("bash" in k or "worker" in k for k in got)


def test_a_capture_without_attribution_has_no_task_roots(tmp_path):
    cap = make(tmp_path, task_os=0, tasks=False)
    got = folded(ok(run("fold", cap, "-e", ELF)))
    assert len(got) == 4 + 40 and got["middle;leaf_a"] == 60 and got["0x401003"] == 1


# --- filters --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, want", [
    (["--pid", "1234"], {"bash;middle;leaf_a": 60, "bash;[user]": 40}),
    (["--pid", "1300"], {"worker;leaf_b": 50, "worker;middle": 30}),           # a tgid: the process
    (["--pid", "1302"], {"worker;middle": 30}),                                  # a pid: the thread
    (["--pid", "1301-1302,66"], {"worker;leaf_b": 50, "worker;middle": 30, HOSTILE_TEXT.replace(";", "\\x3b") + ";leaf_a": 5}),
    (["--pid", "0", "--idle"], {"swapper/1;leaf_b": 20}),
    (["--pid", "0"], {}),                                                        # idle: left out
    (["--pid", "7"], {}),
    (["--comm", "^wor"], {"worker;leaf_b": 50, "worker;middle": 30}),
    (["--comm", "bash|swapper", "--idle"], {"bash;middle;leaf_a": 60, "bash;[user]": 40, "swapper/1;leaf_b": 20}),
    (["--comm", r"\\x1b\[2J"], {HOSTILE_TEXT.replace(";", "\\x3b") + ";leaf_a": 5}),   # the printed name
    (["--comm", ""], {"bash;middle;leaf_a": 60, "bash;[user]": 40, "worker;leaf_b": 50, "worker;middle": 30,
                      HOSTILE_TEXT.replace(";", "\\x3b") + ";leaf_a": 5}),       # no task: never matches
    (["--pid", "1300", "--comm", "bash"], {}),                                   # both must match
    (["--pid", "1234", "--cpu", "0", "--from", "500ms"], {"bash;middle;leaf_a": 30, "bash;[user]": 20}),
])
def test_pid_and_comm_filters(tmp_path, args, want):
    assert folded(ok(run("fold", make(tmp_path), "-e", ELF, *args))) == want


@pytest.mark.parametrize("args, message", [
    (["--pid", "5-3"], "--pid: bad list '5-3'"),
    (["--pid", "x"], "--pid: bad list 'x'"),
    (["--pid", ""], "--pid: bad list ''"),
    (["--pid", "-1"], "--pid: bad list '-1'"),
    (["--pid", "2147483648"], "--pid: '2147483648': pids are at most 2147483647"),
    (["--comm", "("], "--comm: bad regular expression '('"),
    (["--comm", "a{2,1}"], "--comm: bad regular expression"),
])
@pytest.mark.parametrize("verb", ["fold", "report", "speedscope", "flamegraph", "diff", "compare"])
def test_bad_filter_values_are_one_line_and_exit_2(tmp_path, verb, args, message):
    cap = make(tmp_path)
    inguest = tmp_path / "in.txt"
    inguest.write_text("profiled 10 ms\n1 samples on 1 cpus, 0 dropped, source tick 100 Hz\n100.0% 1 leaf_a+0x1\n")
    first = {"diff": [cap, cap], "compare": [inguest, cap]}.get(verb, [cap])
    r = run(verb, *first, "-e", ELF, *args)
    assert r.returncode == 2 and one_line_error(r) and message in r.stderr, r.stderr


@pytest.mark.parametrize("verb, args", [
    ("fold", ["--pid", "1"]), ("fold", ["--comm", "x"]), ("fold", ["--task-format", "comm"]),
    ("fold", ["--task-format", "pid"]), ("report", ["--pid", "1"]), ("report", ["--by-task"]),
    ("speedscope", ["--comm", "x"]), ("speedscope", ["--task-format", "comm-pid"]),
    ("flamegraph", ["--pid", "1"]), ("diff", ["--pid", "1"]), ("diff", ["--task-format", "comm"]),
    ("compare", ["--pid", "1"]),
])
@pytest.mark.parametrize("version, task_os", [(2, 0), (3, 0)])
def test_task_options_on_a_capture_without_tasks(tmp_path, verb, args, version, task_os):
    cap = make(tmp_path, version=version, task_os=task_os, tasks=False)
    inguest = tmp_path / "in.txt"
    inguest.write_text("profiled 10 ms\n1 samples on 1 cpus, 0 dropped, source tick 100 Hz\n100.0% 1 leaf_a+0x1\n")
    first = {"diff": [cap, cap], "compare": [inguest, cap]}.get(verb, [cap])
    r = run(verb, *first, "-e", ELF, *args)
    assert r.returncode == 2 and one_line_error(r), r.stderr
    assert "has no task attribution (written by gdbsample before version 3 or with --os none)" in r.stderr
    assert r.stdout == ""


def test_task_format_cpu_and_none_work_without_tasks(tmp_path):
    cap = make(tmp_path, version=2, task_os=0, tasks=False)
    assert ok(run("fold", cap, "-e", ELF, "--task-format", "cpu")) == ok(run("fold", cap, "-e", ELF, "--group-by-cpu"))
    assert ok(run("fold", cap, "-e", ELF, "--task-format", "none")) == ok(run("fold", cap, "-e", ELF))


# --- report ---------------------------------------------------------------------------------------

def test_report_lists_tasks_as_gdbsample_does(tmp_path):
    """The task lines of gdbsample -f report (docs/report-format.md) before the chains; a user-mode
    sample's pc in the chains as gdbsample prints it."""
    text = ok(run("report", make(tmp_path), "-e", ELF, "--chains", "2"))
    assert text.splitlines() == [
        "profiled 1000 ms", "190 samples on 3 cpus, 0 dropped, source gdbstub 100 Hz",
        "task 52.6% 100 bash pid 1234 tgid 1234, user 40.0%",
        "task 26.3% 50 worker pid 1301 tgid 1300, user 0.0%",
        "task 15.8% 30 worker pid 1302 tgid 1300, user 0.0%",
        "task 2.6%% 5 %s pid 66 tgid 66, user 0.0%%" % HOSTILE_TEXT,    # ties: by pid, ...
        "task 2.6% 5 [unknown], user 0.0%",                               # ... no task last
        "31.6% 60 leaf_a+0x4", "        <- middle+0x9", "26.3% 50 leaf_b+0x2", "(42 more chains not shown)"]
    assert "0.5% 1 0x401003" in ok(run("report", make(tmp_path), "-e", ELF, "--chains", "100")).splitlines()
    # without task records: no task lines, the rest the same
    v2 = ok(run("report", make(tmp_path, "v2.cap", version=2), "-e", ELF, "--chains", "2"))
    assert v2.splitlines() == text.splitlines()[:2] + text.splitlines()[7:]


def test_report_by_task_adds_each_top_tasks_chains(tmp_path):
    text = ok(run("report", make(tmp_path), "-e", ELF, "--by-task", "--chains", "2", "--tasks", "2"))
    plain = ok(run("report", make(tmp_path), "-e", ELF, "--chains", "2"))
    assert text.startswith(plain)                        # the report, then the tasks' own chains
    assert text[len(plain):].splitlines() == [
        "", "chains of bash pid 1234 tgid 1234: 100 samples, user 40.0%",
        "60.0% 60 leaf_a+0x4", "        <- middle+0x9", "40.0% 40 [user]",
        "", "chains of worker pid 1301 tgid 1300: 50 samples, user 0.0%", "100.0% 50 leaf_b+0x2",
        "", "(chains of 3 more tasks not shown)"]


def test_report_task_lines_follow_the_filters_and_stop_at_16(tmp_path):
    text = ok(run("report", make(tmp_path), "-e", ELF, "--pid", "1300", "--idle"))
    assert [l for l in text.splitlines() if l.startswith("task ")] == [
        "task 62.5% 50 worker pid 1301 tgid 1300, user 0.0%", "task 37.5% 30 worker pid 1302 tgid 1300, user 0.0%"]
    many = [(1000 * i, 0, 0, (A + 4,), (), (100 + i % 20, 100 + i % 20, P, b"t%02d" % (i % 20))) for i in range(400)]
    cap = tmp_path / "many.cap"
    capgen.write(cap, many, SUMMARY, version=3, task_os=1)
    tasks = [l for l in ok(run("report", cap, "-e", ELF)).splitlines() if l.startswith("task ")]
    assert len(tasks) == 17 and tasks[0] == "task 5.0% 20 t00 pid 100 tgid 100, user 0.0%"
    assert tasks[15].startswith("task 5.0% 20 t15 ") and tasks[16] == "task (4 more not shown)"


def test_compare_reads_a_report_with_task_lines(tmp_path):
    rep = tmp_path / "r.txt"
    rep.write_text(ok(run("report", make(tmp_path), "-e", ELF, "--by-task")))
    r = run("compare", rep, rep)
    assert r.returncode == 0 and "190 samples)" in r.stdout, r.stdout
    assert "  leaf_a <- middle    " in r.stdout and "31.6" in r.stdout       # the chains were read


# --- speedscope, flame graph, diff, info ----------------------------------------------------------

def test_speedscope_stacks_start_with_the_task(tmp_path):
    out = tmp_path / "s.json"
    ok(run("speedscope", make(tmp_path), "-e", ELF, "-o", out))
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert {"bash", "worker", "[unknown]", "[user]", HOSTILE_TEXT.replace(";", "\\x3b")} <= set(names)
    assert [p["name"] for p in doc["profiles"]] == ["cpu0", "cpu1", "cpu2"]     # one per vCPU
    stacks = [[names[i] for i in st] for st in doc["profiles"][0]["samples"]]
    assert stacks[:5] == [["bash", "middle", "leaf_a"]] * 3 + [["bash", "[user]"]] * 2
    cpu1 = [[names[i] for i in st] for st in doc["profiles"][1]["samples"]]
    assert cpu1[8] == [] and cpu1[5] == ["worker", "middle"]                     # idle: empty
    ok(run("speedscope", make(tmp_path), "-e", ELF, "-o", out, "--task-format", "pid", "--idle"))
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert [names[i] for i in doc["profiles"][1]["samples"][8]] == ["0", "leaf_b"]
    ok(run("speedscope", make(tmp_path), "-e", ELF, "-o", out, "--task-format", "none"))
    assert "bash" not in out.read_text()


def test_flamegraph_roots_are_tasks_and_names_are_escaped(tmp_path):
    out = tmp_path / "f.svg"
    ok(run("flamegraph", make(tmp_path), "-e", ELF, "-o", out))
    root = ET.parse(out).getroot()                                # well-formed despite the name
    ns = {"s": "http://www.w3.org/2000/svg"}
    titles = [t.text.split("\n")[0] for t in root.iterfind(".//s:g[@class='fg-f']/s:title", ns)]
    assert {"bash", "worker", "[unknown]", "[user]", HOSTILE_TEXT.replace(";", "\\x3b")} <= set(titles)
    assert "\x1b" not in out.read_text() and "&lt;a&amp;&quot;b&gt;" in out.read_text()
    r = run("flamegraph", make(tmp_path), "-e", ELF, "-o", out, "--comm", "^worker$", "--task-format", "comm-pid")
    assert r.returncode == 0
    titles = {t.text.split("\n")[0] for t in ET.parse(out).getroot().iterfind(".//s:g[@class='fg-f']/s:title", ns)}
    assert titles == {"all", "worker-1301", "worker-1302", "leaf_b", "middle"}


def test_folded_input_refuses_task_options(tmp_path):
    f = tmp_path / "x.folded"
    f.write_text("bash;leaf_a 3\n")
    for args in (["--pid", "1"], ["--comm", "x"], ["--task-format", "comm"]):
        r = run("flamegraph", f, "-o", tmp_path / "o.svg", *args)
        assert r.returncode == 2 and one_line_error(r) and "apply to captures only" in r.stderr


def test_diff_roots_match_on_both_sides(tmp_path):
    v3, v2 = make(tmp_path), make(tmp_path, "v2.cap", version=2)
    both = ok(run("diff", v3, v3, "-e", ELF, "--no-table"))
    assert "bash;middle;leaf_a 60 60\n" in both
    mixed = ok(run("diff", v2, v3, "-e", ELF, "--no-table"))                   # one without tasks: none
    assert "middle;leaf_a 60 60\n" in mixed and "bash" not in mixed
    pid = ok(run("diff", v3, v3, "-e", ELF, "--no-table", "--pid", "1300", "--task-format", "comm-pid"))
    assert pid == "worker-1301;leaf_b 50 50\nworker-1302;middle 30 30\n"


def test_info_tasks_line(tmp_path):
    text = ok(run("info", make(tmp_path)))
    assert ("tasks       linux; 205 of 210 samples name a task (5 tasks); 90 verified in the batch, "
            "20 cache hits, 4 misses (extra round trip), 1 renamed, 2 lost\n") in text
    assert "format      version 3, x86_64" in text and "task_verified" not in text
    # what gdbsample's summary says besides: the layout, the reads, what --pid/--comm left out
    summary = dict(SUMMARY, task_os="linux", task_layout="BTF, 6.1 layout (current_task)", task_reads=240,
                   task_bytes=69120, filtered=12)
    capgen.write(tmp_path / "s.cap", [(1, 0, 0, (A,), (), BASH)], summary, version=3, task_os=1)
    assert ("tasks       linux (BTF, 6.1 layout (current_task)); 1 of 1 samples name a task (1 task); "
            "90 verified in the batch, 20 cache hits, 4 misses (extra round trip), 1 renamed, 2 lost; "
            "240 reads, 69120 bytes; 12 samples left out by --pid/--comm\n") in ok(run("info", tmp_path / "s.cap"))
    assert "task_" not in ok(run("info", tmp_path / "s.cap"))
    # attribution off: why (the summary's task_off), else a general reason
    text = ok(run("info", make(tmp_path, task_os=0, tasks=False)))
    assert "tasks       none (gdbsample ran with --os none" in text
    capgen.write(tmp_path / "o.cap", [(1, 0, 0, (A,))], {"task_os": "none", "task_off": "no .BTF in the image"},
                 version=3)
    assert "tasks       none (no .BTF in the image)\n" in ok(run("info", tmp_path / "o.cap"))
    assert "tasks " not in ok(run("info", make(tmp_path, version=2)))


# --- firmware (riscv64 M-mode) -----------------------------------------------------------------

def firmware_capture(tmp_path):
    """cpu0: bash in leaf_a (3) and in firmware (2, flag bit 5, pcs below the kernel); cpu1: a
    firmware sample with no task record (1)."""
    s = [(k * 10_000_000, 0, 0, (A + 4, M + 9), (), BASH) for k in range(3)]
    s += [(30_000_000 + k * 10_000_000, 0, 32, (0x80000408 + 4 * k,), (), BASH) for k in range(2)]
    s.append((0, 1, 32, (0x80000496,), (), None))
    p = tmp_path / "fw.cap"
    capgen.write(p, sorted(s, key=lambda x: x[0]), SUMMARY, ncpus=2, version=3, task_os=capgen.TASK_OS_LINUX)
    return str(p)


@pytest.mark.parametrize("args, want", [
    ([], {"bash;middle;leaf_a": 3, "bash;[firmware]": 2, "[unknown];[firmware]": 1}),
    (["--task-format", "cpu"], {"cpu0;middle;leaf_a": 3, "cpu0;[firmware]": 2, "cpu1;[firmware]": 1}),
    (["--task-format", "none"], {"middle;leaf_a": 3, "[firmware]": 3}),
])
def test_firmware_samples_are_one_firmware_frame_under_any_root(tmp_path, args, want):
    """As gdbsample -f folded shows them: the firmware's pc is never named, nor shown."""
    assert folded(ok(run("fold", firmware_capture(tmp_path), "-e", ELF, *args))) == want


def test_firmware_samples_in_speedscope_and_perf_script(tmp_path):
    cap = firmware_capture(tmp_path)
    out = tmp_path / "s.json"
    ok(run("speedscope", cap, "-e", ELF, "-o", out))
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    stacks = [[names[i] for i in st] for st in doc["profiles"][0]["samples"]]
    assert stacks == [["bash", "middle", "leaf_a"]] * 3 + [["bash", "[firmware]"]] * 2
    ok(run("speedscope", cap, "-e", ELF, "-o", out, "--task-format", "none"))
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert [[names[i] for i in st] for st in doc["profiles"][1]["samples"]] == [["[firmware]"]]
    text = ok(run("perf-script", cap, "-e", ELF))
    records = [r for r in text.split("\n\n") if r.strip()]
    fw = [r for r in records if "[firmware]" in r]
    assert len(fw) == 3 and all(r.count("\n") == 1 and "80000" in r for r in fw), fw
    assert "0x80000" not in ok(run("fold", cap, "-e", ELF))
