# SPDX-License-Identifier: MIT
"""The in-guest `profile` command under QEMU TCG (tick source): forms, errors, folding, shares."""
import os
import re
import struct
import signal
import subprocess
import time

import conftest
import crosscheck
import pytest
from elftools.elf.elffile import ELFFile

HEADER = re.compile(r"^profiled (\d+) ms\n(\d+) samples on (\d+) cpus, (\d+) dropped, source (.+)$", re.M)
LEAF = re.compile(r"^(\d+\.\d)% (\d+) (\S+)$", re.M)
CPU = re.compile(r"^cpu (\d+): (\d+) samples$", re.M)


def parse(report):
    """-> (header dict, [ (pct, count, leaf, [callers]) ])"""
    m = HEADER.search(report)
    assert m, report
    head = dict(ms=int(m[1]), samples=int(m[2]), cpus=int(m[3]), dropped=int(m[4]), source=m[5])
    head["by_cpu"] = {int(c): int(n) for c, n in CPU.findall(report)}  # the samples each CPU took
    chains = []
    for line in report.splitlines():
        lm = LEAF.match(line)
        if lm:
            chains.append((float(lm[1]), int(lm[2]), lm[3], []))
        elif line.startswith("        <- "):
            chains[-1][3].append(line[len("        <- "):])
    return head, chains


def shares(chains, names):
    count = {n: 0 for n in names}
    for _, c, leaf, _ in chains:
        fn = leaf.split("+")[0]
        if fn in count:
            count[fn] += c
    total = sum(count.values())
    return total, {n: 100.0 * v / total for n, v in count.items()} if total else {}


@pytest.fixture(scope="module")
def elf_syms():
    with open(conftest.KERNEL, "rb") as f:
        elf = ELFFile(f)
        syms = {s.name: (s["st_value"], s["st_size"]) for s in elf.get_section_by_name(".symtab").iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC"}
        text = elf.get_section_by_name(".text")
        return syms, text["sh_addr"], text.data()


def profile_stats(g):
    """`profile stats` -> {cpu: (taken, recorded, dropped)} of the last window."""
    return {int(c): (int(t), int(r), int(d))
            for c, t, r, d in re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", g.cmd("profile stats"), re.M)}


def test_every_form_of_the_command(boot):
    """Each form's window, CPUs, chain limit and samples. The profiler is judged against the ticks
    each CPU took in the window (`profile stats`): every one recorded, none dropped, and on the
    chain task's CPU -- busy the whole window -- every tick is one of the report's samples (5 %
    and one left for a tick that found the shell or idle task there). That the ticks come at
    100 Hz is the timer's test (test_boot.py), not this one: beside two CPU hogs the chain's vCPU
    once took 3 ticks in 500 ms while the other took 51 and no QEMU thread waited more than
    0.3 % (a TCG timer delivery question, open). Still, a window must have taken at least one
    CPU's worth of ticks between the two (80 % of ms/10, less the share the most-waiting QEMU
    thread waited), or it is run again, up to three times."""
    g = boot(smp=2)
    pid = g.work("chain 3")
    chain_cpu = next(t["cpu"] for t in g.ps() if t["pid"] == pid)
    for line, ms, chains_max in (("profile", 1000, 8), ("profile 2000 all 3", 2000, 3),
                                 (f"profile 500 {pid}", 500, 8), (f"profile 300 {pid} 2", 300, 2),
                                 ("profile 200 all", 200, 8), ("profile 100", 100, 8)):
        tries = []
        for _ in range(3):
            window = crosscheck.WaitWindow(g.proc.pid)
            text = g.cmd(line, timeout=15)
            head, chains = parse(text)
            waited = window.waited(None) or 0.0  # every QEMU thread: the vCPUs' and the main loop's
            stats = profile_stats(g)
            assert head["ms"] == ms and head["cpus"] == 2 and head["source"] == "tick 100 Hz", line
            # one line per sampling CPU, adding up to the report's samples (compare weighs by them)
            assert sorted(head["by_cpu"]) == [0, 1] and sum(head["by_cpu"].values()) == head["samples"], (line, head)
            assert len(chains) <= chains_max
            if str(pid) in line:
                assert all(leaf.startswith("chain3") for _, _, leaf, _ in chains), chains
            assert sorted(stats) == [0, 1] and all(t == r and d == 0 for t, r, d in stats.values()), (line, stats)
            taken = stats[chain_cpu][0]
            assert head["by_cpu"][chain_cpu] >= 0.95 * taken - 1, (line, head, stats, text)
            tries.append((sum(t for t, _, _ in stats.values()), round(waited, 3), stats, text))
            if tries[-1][0] >= ms // 10 * 0.8 * (1 - min(waited, 0.9)):
                break
        else:
            pytest.fail(f"{line}: too few ticks in three windows (ticks taken, QEMU's longest wait share, "
                        f"profile stats, report): {tries}\nps:\n{g.cmd('ps')}")


@pytest.mark.parametrize("line,error", [
    ("profile 0", "profile: window must be 1-2000 ms, not '0'"),
    ("profile 2001", "profile: window must be 1-2000 ms, not '2001'"),
    ("profile abc", "profile: window must be 1-2000 ms, not 'abc'"),
    ("profile -5", "profile: window must be 1-2000 ms, not '-5'"),
    ("profile 100 all 3 x", "profile: too many arguments (usage: profile [MS [PID|all [CHAINS]]] | profile stats)"),
    ("profile 100 999", "profile: no task with pid 999"),
    ("profile 100 xyz", "profile: expected a pid or all, not 'xyz'"),
    ("profile 100 all 0", "profile: chains must be 1-128, not '0'"),
    ("profile 100 all 129", "profile: chains must be 1-128, not '129'"),
])
def test_bad_arguments_give_one_line_and_no_profile(shared_guest, line, error):
    assert shared_guest.cmd(line) == error + "\n"  # that line alone: no profile window ran



def test_percentages_sum_to_100_and_chains_fold(boot, elf_syms):
    syms, text_addr, text = elf_syms
    g = boot(smp=2)
    g.work("chain 5")
    g.work("split 5 3 2")
    head, chains = parse(g.cmd("profile 1000 all 128", timeout=15))
    assert head["samples"] == sum(c for _, c, _, _ in chains)
    assert abs(sum(p for p, _, _, _ in chains) - 100.0) < 0.1 * len(chains) + 0.05  # rounding to 0.1
    top = [c for c in chains if c[2].startswith("chain5+")]
    # chain5 runs nearly all the time on its CPU, one of two busy ones: >= 80 % of half the
    # samples (a share: a starved host delivers fewer ticks, not different ones)
    assert top and top[0][1] >= 0.8 * 0.5 * head["samples"], (top, head)
    _, _, leaf, callers = top[0]
    assert [c.split("+")[0] for c in callers] == ["chain4", "chain3", "chain2", "chain1", "work_main", "task_entry"]
    # each caller's offset is a return address: just past a call to the frame below it
    below = "chain5"
    for c in callers[:4]:
        name, off = c.split("+")
        ret = syms[name][0] + int(off, 16)
        i = ret - text_addr
        assert text[i - 5] == 0xE8, c  # call rel32
        target = ret + struct.unpack("<i", text[i - 4:i])[0]
        assert target == syms[below][0], (c, below)
        below = name
    # leaf offsets: a single +0x.. or a span lo..hi inside the function
    for _, _, leaf, _ in chains:
        m = re.fullmatch(r"(\w+)\+0x([0-9a-f]+)(?:\.\.0x([0-9a-f]+))?", leaf)
        assert m, leaf
        lo, hi = int(m[2], 16), int(m[3] or m[2], 16)
        assert lo <= hi < syms[m[1]][1], leaf


def test_split_shares_within_5pp(boot):
    """Tolerance ±5 pp: two 2 s windows on -smp 4 with a split task per CPU give ~1600 tick
    samples in the split functions; the binomial σ of a 50 % share is then 1.25 pp, so 5 pp is
    4σ (false failure ≈ 1e-4), while a real bias (e.g. a lost caller or aliasing) shows up."""
    g = boot(smp=4)
    for _ in range(4):
        g.work("split 5 3 2")
    chains = []
    for _ in range(6):  # a starved host delivers fewer ticks per window (1339 in two seen): add windows
        chains += parse(g.cmd("profile 2000 all 16", timeout=20))[1]
        total, s = shares(chains, ["split_a", "split_b", "split_c"])
        if total >= 1400:
            break
    assert total >= 1400, total
    for name, truth in (("split_a", 50), ("split_b", 30), ("split_c", 20)):
        assert abs(s[name] - truth) <= 5, s


def test_pid_filter_and_empty_reports(boot):
    g = boot(smp=2)
    out = g.cmd("profile 300")  # nothing running: every sample is an idle task's
    head, chains = parse(out)
    assert head["samples"] == 0 and not chains
    m = re.search(r"no samples: all (\d+) were idle", out)
    assert m and int(m[1]) > 0, out  # (how many ticks a starved host delivers is not judged)
    shell = next(r["pid"] for r in g.ps() if r["name"] == "shell")
    out = g.cmd(f"profile 300 {shell}")  # the shell sleeps while it profiles
    assert f"no samples: pid {shell} did not run during the window (it may have slept the whole time)" in out
    chain = g.work("chain 2")
    g.work("split 1 1 1")
    head, chains = parse(g.cmd(f"profile 500 {chain}"))
    assert head["samples"] >= 10 and all(leaf.startswith("chain2") for _, _, leaf, _ in chains), chains


def test_more_than_128_chains_shows_the_overflow_line(boot):
    g = boot(smp=2)
    g.work("fanout")  # 512 equally likely chains; 2 s at 100 Hz sees ~170 of them
    # a starved host delivers fewer ticks (99 fanout samples and 108 chains seen; 146 samples
    # filling the 128 chains with none left over, seen beside CPU hogs): retry (2000 ms is the
    # longest window) until a sample found the table full
    for _ in range(8):
        out = g.cmd("profile 2000 all 3", timeout=15)
        if "(125 more chains not shown)" in out and "more than 128 distinct chains" in out:
            break
    head, chains = parse(out)
    assert len(chains) == 3
    assert "(125 more chains not shown)" in out, out
    m = re.search(r"\((\d+) samples left out: more than 128 distinct chains\)", out)
    assert m and int(m[1]) > 0, out


def test_samples_plus_dropped_equal_samples_taken_on_every_cpu(boot):
    g = boot(smp=4)
    g.work("split 5 3 2")
    head, _ = parse(g.cmd("profile 1000"))
    stats = g.cmd("profile stats")
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", stats, re.M)
    assert len(rows) == 4, stats
    for cpu, taken, recorded, dropped in rows:
        assert int(taken) == int(recorded) + int(dropped), stats
        assert 0 < int(taken) <= 120, stats  # 100 Hz for 1 s: never more (a starved host delivers fewer)
    assert head["dropped"] == sum(int(r[3]) for r in rows)
    assert head["samples"] <= sum(int(r[2]) for r in rows)  # the rest were idle samples


def test_lscpu_reports_the_pmu_decision(boot):
    out = boot(smp=1).cmd("lscpu")
    # QEMU TCG's default CPU (qemu64) claims no PMU: profile uses the tick, and says why
    assert "profile:     tick only: no PMU claimed" in out, out
    assert re.search(r"^pmu probe:   \d+ ns \(bound 10000 ns\)$", out, re.M)


def test_stress_100_back_to_back_profiles(boot):
    g = boot(smp=4)
    for w in ("split 5 3 2", "chain 6", "copy", "irqoff 3"):
        g.work(w)
    for i in range(100):  # 200 took 80 s of make test on a loaded host: 100 keep the stress, at half the cost
        head, chains = parse(g.cmd("profile 50 all 3", timeout=10))
        assert head["ms"] == 50 and len(chains) <= 3
    assert g.cmd("uptime").startswith("up ")
    assert "PANIC" not in "".join(g.transcript)


PROFILER_FUNCS = {"prof_tick", "prof_sample", "stacktrace_trapframe", "stacktrace_interrupted",
                  "stacktrace_from", "stack_bounds", "prof_nmi", "pmu_armed", "kernel_text_contains"}


def test_profiler_costs_a_small_share_in_a_gdbsample_capture(boot):
    """A regression guard, not the target: the target (<= 1 % of gdbsample's samples in the
    profiler's own code) is measured by `make bench` (bench/a64_bench.py, docs/benchmarks.md).
    Measured: 0.2-0.4 % in an earlier session; 0.4-1.0 % on 2026-12-01, on the kernels and
    gdbsamples of both then and now alike, so the spread is the host's (QEMU's stops land just
    after the vCPU releases QEMU's lock: docs/aarch64.md), well beyond Poisson noise (0.1 pp at
    5000 samples). A bar at 1 % was therefore flaky (1.17 % once, on a busy host). At 2.5 % the
    bar is > 1.5 pp above anything measured, and a real regression -- a walk that scans every
    task or re-reads the stack, a record that takes a lock -- costs several times the share. A
    busy host reaches fewer samples per round: rounds are added (up to six) until 2000 were seen."""
    g = boot(smp=2)
    g.work("split 5 3 2")
    g.work("chain 4")
    total = inside = 0
    for _ in range(6):
        gs = subprocess.Popen([os.path.join(conftest.BUILD, "gdbsample"), "-p", str(g.gdbport), "-r", "1000",
                               "-e", conftest.KERNEL, "-f", "folded", "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.2)
            g.cmd("profile 2000 all 3", timeout=20)
            g.cmd("profile 2000 all 3", timeout=20)
        finally:
            gs.send_signal(signal.SIGINT)  # finish the sample, resume, detach, write
            out, err = gs.communicate(timeout=30)
        assert gs.returncode == 0, err
        for line in out.splitlines():
            stack, _, n = line.rpartition(" ")
            total += int(n)
            if PROFILER_FUNCS & set(f.split("+")[0] for f in stack.split(";")):
                inside += int(n)
        if total >= 2000:
            break
    assert total >= 2000, total
    share = 100.0 * inside / total
    print(f"profiler's own functions: {inside} of {total} gdbsample samples = {share:.2f} %")
    assert share < 2.5
