# SPDX-License-Identifier: MIT
"""`compare`: statistics on known values, parsing of every input kind, verdicts and exit codes."""
import math

import pytest
from analyze import one_line_error
from analyze import call as run  # in this process: no interpreter start per call (make check time)

import capgen

from gdbsample_analysis import stats

MAP = """\
ffffffff80100000 T task_entry
ffffffff80100100 T work_main
ffffffff80100400 T split_a
ffffffff80100500 T split_b
ffffffff80100600 T split_c
ffffffff80100700 T irqoff_spin
ffffffff80100800 T irqoff_exit
ffffffff80100900 T irqon_spin
ffffffff80100a00 T chain1
ffffffff80100b00 T chain2
"""
ADDR = {line.split()[2]: int(line.split()[0], 16) for line in MAP.splitlines()}


def report(total, chains, source="tick 100 Hz", ms=2000, extra=""):
    """An in-guest style report; chains: [(count, leaf, [callers])]."""
    lines = ["> profile %d all 64" % ms, "profiled %d ms" % ms,
             "%d samples on 2 cpus, 0 dropped, source %s" % (total, source)]
    for count, leaf, callers in chains:
        lines.append("%.1f%% %d %s+0x20" % (100.0 * count / total, count, leaf))
        lines += ["        <- %s+0x44" % c for c in callers]
    return "\n".join(lines) + "\n" + extra


def split_report(a, b, c, **kw):
    w = ["work_main", "task_entry"]
    return report(a + b + c, [(a, "split_a", w), (b, "split_b", w), (c, "split_c", w)], **kw)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_wilson_and_newcombe_intervals_match_known_values():
    lo, hi = stats.wilson(0, 10)
    assert lo == 0 and abs(hi - 0.2775) < 1e-4          # never a zero-width interval at k = 0
    lo, hi = stats.wilson(50, 100)
    assert abs(lo - 0.4038) < 1e-4 and abs(hi - 0.5962) < 1e-4
    d, lo, hi = stats.diff_interval(56, 70, 48, 80)     # Newcombe 1998, table II example (e)
    assert abs(d - 0.2) < 1e-9 and abs(lo - 0.0524) < 1e-3 and abs(hi - 0.3339) < 1e-3
    # small counts widen the interval: the same shares, ten times fewer samples
    _, lo_small, hi_small = stats.diff_interval(5, 10, 4, 10)
    _, lo_big, hi_big = stats.diff_interval(50, 100, 40, 100)
    assert hi_small - lo_small > 2.5 * (hi_big - lo_big)


def test_chi_square_tail_matches_tables():
    for x, df, p in ((3.841, 1, 0.05), (9.488, 4, 0.05), (11.345, 3, 0.01), (67.505, 50, 0.05), (0.0, 2, 1.0)):
        assert math.isclose(stats.chi2_sf(x, df), p, rel_tol=2e-3, abs_tol=1e-6), (x, df)
    stat, df, p = stats.chi2_homogeneity([50, 30, 20], [50, 30, 20])
    assert stat == 0 and df == 2 and p == 1.0
    stat, df, p = stats.chi2_homogeneity([500, 300, 200], [200, 300, 500])
    assert df == 2 and p < 1e-10
    assert stats.tvd([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]) == pytest.approx(0.3)


def multinomial_tvd95(p, n1, n2, runs=1000, seed=7):
    """The exact thing tvd_noise95 approximates: two multinomial samples from p, their TVD's 95th
    percentile, by brute force."""
    import bisect
    import random
    rng, cum = random.Random(seed), [sum(p[:i + 1]) for i in range(len(p))]

    def draw(n):
        k = [0] * len(p)
        for _ in range(n):
            k[min(bisect.bisect(cum, rng.random()), len(p) - 1)] += 1
        return [x / n for x in k]
    t = sorted(stats.tvd(draw(n1), draw(n2)) for _ in range(runs))
    return t[int(0.95 * runs)]


@pytest.mark.slow  # brute-force multinomials (5 s): make test, not make check
@pytest.mark.parametrize("p,n1,n2", [([.42, .21, .16, .13, .05, .03], 400, 854), ([.9, .1], 50, 5000),
                                     ([.25] * 4, 100, 100)])
def test_tvd_noise_matches_brute_force_multinomials(p, n1, n2):
    """Within 12 %: the brute force itself has ~5 % noise at 1000 runs, the normal approximation
    a few % more at 50 samples."""
    approx = stats.tvd_noise95([x * n1 for x in p], [x * n2 for x in p])
    assert approx == pytest.approx(multinomial_tvd95(p, n1, n2), rel=0.12)
    assert stats.tvd_noise95([x * n1 * 100 for x in p], [x * n2 * 100 for x in p]) < approx / 8  # ~1/10


def test_a_distance_that_noise_explains_is_consistent_one_that_it_cannot_is_not(tmp_path):
    w = ["work_main", "task_entry"]
    names = ["split_a", "split_b", "split_c", "irqoff_spin", "irqon_spin", "chain1", "chain2"]
    # 400 against 854 samples, every share within a few pp: TVD 0.06 is what chance gives there
    small_in = [168, 84, 64, 52, 20, 8, 4]
    small_ext = [320, 218, 128, 115, 43, 26, 4]
    a = write(tmp_path, "in.txt", report(400, [(k, n, w) for k, n in zip(small_in, names)]))
    b = write(tmp_path, "ext.txt", report(854, [(k, n, w) for k, n in zip(small_ext, names)], source="gdbstub 200 Hz"))
    r = run("compare", a, b)
    tvd = float(r.stdout.split("total variation distance ")[1].split()[0])
    assert tvd > 0.05 and r.returncode == 0 and "differs on" not in r.stdout, r.stdout
    # 100x the samples, the same shares: no row beyond its tolerance, but the distance is real now
    a = write(tmp_path, "in2.txt", report(40000, [(100 * k, n, w) for k, n in zip(small_in, names)]))
    b = write(tmp_path, "ext2.txt", report(85400, [(100 * k, n, w) for k, n in zip(small_ext, names)]))
    r = run("compare", a, b, "--tolerance", "5")
    assert r.returncode == 1 and "verdict: differs" in r.stdout and "differs on" not in r.stdout, r.stdout


def test_same_shares_are_consistent(tmp_path):
    a = write(tmp_path, "in.txt", split_report(1000, 600, 400))
    b = write(tmp_path, "ext.txt", split_report(2510, 1480, 1010, source="gdbstub 200 Hz"))
    r = run("compare", a, b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("verdict: consistent")
    assert "split_a" in r.stdout and "agree" in r.stdout


def test_a_mismatched_pair_differs_with_exit_1(tmp_path):
    a = write(tmp_path, "in.txt", split_report(1000, 600, 400))
    b = write(tmp_path, "ext.folded", "cpu0;task_entry;work_main;chain1;chain2 900\n"
                                      "cpu1;task_entry;work_main;split_a 100\n")
    r = run("compare", a, b)
    assert r.returncode == 1, r.stdout
    assert "verdict: differs" in r.stdout and "differs on: " in r.stdout
    assert "chain2" in r.stdout.split("differs on: ")[1]


def test_small_samples_widen_intervals_instead_of_failing(tmp_path):
    # 12 vs 8 samples in 20: far from 50/50 in shares, but not beyond sampling noise
    a = write(tmp_path, "in.txt", report(20, [(12, "split_a", ["work_main"]), (8, "split_b", ["work_main"])]))
    b = write(tmp_path, "ext.txt", report(20, [(8, "split_a", ["work_main"]), (12, "split_b", ["work_main"])]))
    r = run("compare", a, b, "--max-tvd", "1")
    assert r.returncode == 0, r.stdout
    row = next(l for l in r.stdout.splitlines() if l.startswith("split_a"))
    lo, hi = [float(x) for x in row.split("[")[1].split("]")[0].split(",")]
    assert lo < -2 and hi > 30  # an honest, wide interval


def test_several_reports_in_one_file_are_summed_and_serial_noise_ignored(tmp_path):
    text = split_report(500, 300, 200) + "> \n" + split_report(500, 300, 200) + "> uptime\nup 3.2 s\n"
    a = write(tmp_path, "in.txt", text)
    b = write(tmp_path, "ext.txt", split_report(1000, 600, 400))
    r = run("compare", a, b)
    assert r.returncode == 0 and "2000 samples, 2 windows" in r.stdout, r.stdout


def test_gdbsample_run_facts_between_counts_and_chains_are_skipped(tmp_path):
    facts = ("attached via qmp /tmp/q.sock, accel tcg, 2 vCPUs (host threads 1,2), gdbstub 127.0.0.1:1234\n"
             "kernel build/kernel.elf, unwound by orc,fp, kaslr offset 0x1e00000 (matched kernel text)\n"
             "task 60.0% 1200 split pid 3 tgid 3, user 0.0%\n"      # version 3: the tasks
             "task 40.0% 800 [unknown], user 0.0%\n")
    text = split_report(1000, 600, 400, source="gdbstub 200 Hz")
    first, second, rest = text.split("\n", 3)[1:]
    a = write(tmp_path, "in.txt", split_report(1000, 600, 400))
    b = write(tmp_path, "ext.txt", "%s\n%s\n%s%s" % (first, second, facts, rest))
    r = run("compare", a, b)
    assert r.returncode == 0 and "verdict: consistent" in r.stdout, r.stdout
    assert not any(line.startswith("(other)") and line.split()[2] != "0.0" for line in r.stdout.splitlines())


def test_unshown_chains_pool_into_other(tmp_path):
    a = write(tmp_path, "in.txt", report(1000, [(500, "split_a", ["work_main"])], extra="(3 more chains not shown)\n"))
    b = write(tmp_path, "ext.txt", split_report(500, 300, 200))
    r = run("compare", a, b, "--chains", "0")
    other = next(l for l in r.stdout.splitlines() if l.startswith("(other)"))
    assert other.split()[1] == "50.0", r.stdout


def capture_with_irqoff(path, irq_share, flag=2):
    """split on vCPU 1 (50/30/20) and an irqoff task on vCPU 0: irq_share of its samples in
    irqoff_spin, flagged interrupts-off (flag=0: not flagged), the rest in irqon_spin."""
    w, t = [ADDR["work_main"] + 0x44, ADDR["task_entry"] + 0x23], 0
    samples = []
    for i in range(2000):
        t += 5_000_000
        leaf = "split_a" if i % 10 < 5 else "split_b" if i % 10 < 8 else "split_c"
        samples.append((t, 1, 0, [ADDR[leaf] + 0x20] + w))
        off = (i % 100) < irq_share * 100
        samples.append((t, 0, flag if off else 0, [ADDR["irqoff_spin" if off else "irqon_spin"] + 0x30] + w))
    capgen.write(path, samples, summary={"samples": len(samples)}, ncpus=2, rate_hz=200)


def test_interrupts_off_code_the_tick_missed_is_tick_blind_not_a_disagreement(tmp_path):
    cap = str(tmp_path / "ext.cap")
    capture_with_irqoff(cap, 0.3)
    elf = write(tmp_path, "System.map", MAP)
    w = ["work_main", "task_entry"]
    # the tick profile: irqoff_spin invisible, its ticks taken in irqoff_exit after the sti
    a = write(tmp_path, "in.txt", report(2000, [(500, "split_a", w), (300, "split_b", w), (200, "split_c", w),
                                               (700, "irqon_spin", w), (300, "irqoff_exit", w)]))
    r = run("compare", a, cap, "-e", elf)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {l.split()[0]: l for l in r.stdout.splitlines() if l[:1].isalpha() and "%" not in l[:12]}
    assert "tick-blind" in rows["irqoff_spin"] and "100% of its external samples had interrupts off" in rows["irqoff_spin"]
    assert "tick-shifted" in rows["irqoff_exit"]
    assert "tick-blind: irqoff_spin" in r.stdout and r.stdout.strip().endswith("verdict: consistent")
    # the same pair with the interrupts-off flags cleared: nothing explains the gap any more
    noflags = str(tmp_path / "noflags.cap")
    capture_with_irqoff(noflags, 0.3, flag=0)
    r2 = run("compare", a, noflags, "-e", elf)
    assert r2.returncode == 1 and "verdict: differs" in r2.stdout, r2.stdout
    assert "tick-blind:" not in r2.stdout and "differs on: irqoff_exit, irqoff_spin" in r2.stdout


@pytest.mark.parametrize("files,args,message", [
    (("in.txt", "missing.txt"), (), "missing.txt: No such file or directory"),
    (("in.txt", "in.txt"), ("--tolerance", "-1"), "--tolerance: bad value '-1'"),
    (("in.txt", "in.txt"), ("--tolerance", "nan"), "--tolerance: bad value 'nan'"),
    (("in.txt", "in.txt"), ("--tolerance", "inf"), "--tolerance: bad value 'inf'"),
    (("in.txt", "in.txt"), ("--max-tvd", "1e400"), "--max-tvd: bad value '1e400'"),
    (("in.txt", "in.txt"), ("--max-tvd=-nan",), "--max-tvd: bad value '-nan'"),
    (("in.txt", "in.txt"), ("--chains", "9" * 400), "--chains: bad value"),
    (("bad.txt", "in.txt"), (), "'profiled' line not followed by"),
    (("junk.txt", "in.txt"), (), "junk.txt"),
    (("in.txt", "ext.cap"), (), "give -e ELF"),
    (("empty.txt", "in.txt"), (), "has no samples to compare"),
])
def test_malformed_input_gives_one_line_and_exit_2(tmp_path, files, args, message):
    write(tmp_path, "in.txt", split_report(5, 3, 2))
    write(tmp_path, "bad.txt", "profiled 100 ms\nnonsense\n")
    write(tmp_path, "junk.txt", "this is not a profile\n")
    write(tmp_path, "empty.txt", "profiled 100 ms\n0 samples on 2 cpus, 0 dropped, source tick 100 Hz\n")
    capture_with_irqoff(str(tmp_path / "ext.cap"), 0.1)
    r = run("compare", *[str(tmp_path / f) for f in files], *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert one_line_error(r) and message in r.stderr, r.stderr


def capture_with_tasks(path):
    """Our test kernel's tasks (tgid = pid): pid 3 runs split (50/30/20) on vCPU 1, pid 4 chain2
    on vCPU 0; samples without a task record in chain1 on vCPU 2."""
    w = (ADDR["work_main"] + 0x44, ADDR["task_entry"] + 0x23)
    split = (3, 3, 0xffffffff80200000, b"split")
    chain = (4, 4, 0xffffffff80201000, b"chain")
    samples, t = [], 0
    for i in range(2000):
        t += 5_000_000
        leaf = "split_a" if i % 10 < 5 else "split_b" if i % 10 < 8 else "split_c"
        samples.append((t, 1, 0, (ADDR[leaf] + 0x20,) + w, (), split))
        samples.append((t, 0, 0, (ADDR["chain2"] + 0x10, ADDR["chain1"] + 0x30) + w, (), chain))
        if i % 4 == 0:
            samples.append((t, 2, 0, (ADDR["chain1"] + 0x8,) + w, ()))
    capgen.write(path, samples, summary={"samples": len(samples)}, ncpus=3, rate_hz=200, version=3,
                 task_os=capgen.TASK_OS_TESTKERNEL)


def test_pid_compares_the_in_guest_profile_of_one_task(tmp_path):
    """`profile 2000 3` in the guest reports pid 3 only: compare it with pid 3's samples."""
    cap = str(tmp_path / "ext.cap")
    capture_with_tasks(cap)
    elf = write(tmp_path, "System.map", MAP)
    a = write(tmp_path, "in.txt", split_report(100, 62, 38))
    r = run("compare", "--pid", "3", a, cap, "-e", elf)
    assert r.returncode == 0 and r.stdout.strip().endswith("verdict: consistent"), r.stdout + r.stderr
    assert "external: %s (gdbstub 200 Hz, pid 3, 2000 samples)" % cap in r.stdout
    assert "chain" not in r.stdout.split("top ")[0]                    # nothing of pid 4 or no task
    # the whole capture holds the other task too: not the same story
    r = run("compare", a, cap, "-e", elf)
    assert r.returncode == 1 and "differs on: " in r.stdout and "(gdbstub 200 Hz, 4500 samples)" in r.stdout
    # --comm picks the same samples by name; another task's profile against pid 3 differs
    assert run("compare", "--comm", "^split$", a, cap, "-e", elf).returncode == 0
    assert run("compare", "--pid", "4", a, cap, "-e", elf).returncode == 1


@pytest.mark.parametrize("args, external, message, code", [
    (["--pid", "3"], "ext.folded", "--pid and --comm select a capture's samples: ", 2),
    (["--comm", "x"], "ext.txt", "--pid and --comm select a capture's samples: ", 2),
    (["--pid", "9"], "ext.cap", "has no samples to compare", 2),
    (["--pid", "3"], "old.cap", "has no task attribution (written by gdbsample before version 3", 2),
])
def test_pid_errors(tmp_path, args, external, message, code):
    capture_with_tasks(str(tmp_path / "ext.cap"))
    capture_with_irqoff(str(tmp_path / "old.cap"), 0.1)
    write(tmp_path, "ext.folded", "task_entry;work_main;split_a 5\n")
    write(tmp_path, "ext.txt", split_report(5, 3, 2))
    a = write(tmp_path, "in.txt", split_report(5, 3, 2))
    elf = write(tmp_path, "System.map", MAP)
    r = run("compare", *args, a, str(tmp_path / external), "-e", elf)
    assert r.returncode == code and one_line_error(r) and message in r.stderr, r.stderr


def test_a_task_that_did_not_run_has_no_samples(tmp_path):
    """The guest's report of a pid that slept the whole window: nothing to compare, exit 2."""
    capture_with_tasks(str(tmp_path / "ext.cap"))
    a = write(tmp_path, "in.txt", "profiled 2000 ms\n0 samples on 2 cpus, 0 dropped, source tick 100 Hz\n"
                                  "no samples: pid 3 did not run during the window (it may have slept the whole time)\n")
    r = run("compare", "--pid", "3", a, str(tmp_path / "ext.cap"), "-e", write(tmp_path, "System.map", MAP))
    assert r.returncode == 2 and one_line_error(r) and "in.txt has no samples to compare" in r.stderr
