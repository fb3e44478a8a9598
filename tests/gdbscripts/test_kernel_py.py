# SPDX-License-Identifier: MIT
"""gdbscripts/kernel.py: gs-tasks, gs-cpus and gs-prof read the same state the kernel's shell reports."""
import os
import re

import gdbrun

KERNEL_PY = os.path.join(gdbrun.GDBSCRIPTS, "kernel.py")


def gs(g, *commands):
    """Runs gs-* commands in one GDB session against guest g; detach resumes the VM. {cmd: [lines]}."""
    args = ["-ex", f"target remote 127.0.0.1:{g.gdbport}", "-x", KERNEL_PY]
    for c in commands:
        args += ["-ex", f"echo @@{c}\\n", "-ex", c]
    r = gdbrun.gdb_batch(args + ["-ex", "detach"], timeout=60)
    assert r.returncode == 0 and "Python Exception" not in r.stderr, r.stderr
    out, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("@@"):
            cur = out.setdefault(line[2:], [])
        elif cur is not None and not line.startswith("[Inferior"):
            cur.append(line)
    return out


def table(lines, header):
    """Rows (lists of fields) of the table that starts with a line beginning with header."""
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [header])
    rows = []
    for line in lines[start + 1:]:
        f = line.split()
        if not f or not f[0].isdigit():
            break
        rows.append(f)
    return rows


def test_gs_tasks_and_gs_cpus_match_ps_and_cpus(boot):
    g = boot(smp=2)
    pid = g.work("chain 3")
    ps = {t["pid"]: t for t in g.ps()}
    _, ticks, online, total = g.cpus()
    out = gs(g, "gs-tasks", "gs-cpus")
    tasks = {int(f[0]): f for f in table(out["gs-tasks"], "PID")}
    assert set(tasks) == set(ps)
    for p, f in tasks.items():
        assert int(f[1]) == ps[p]["cpu"] and f[6] == ps[p]["name"], (f, ps[p])
        used, size = map(int, f[5].split("/"))
        assert 0 < used <= size
    kinds = {f[6]: f[3] for f in tasks.values()}
    assert kinds["shell"] == "shell" and kinds["idle/0"] == "idle" and kinds["idle/1"] == "idle"
    assert tasks[pid][3] == "work" and tasks[pid][6] == "chain"
    cpus = table(out["gs-cpus"], "CPU")
    assert [int(f[0]) for f in cpus] == list(range(total)) and total == 2
    by_cpu = {int(f[0]): f for f in cpus}
    for c, t in ticks.items():
        assert int(by_cpu[c][3]) >= t  # ticks only grow (the VM ran on between `cpus` and gdb)
    assert int(by_cpu[ps[pid]["cpu"]][4]) == pid  # the spinning chain is what its CPU runs
    assert g.cmd("uptime").startswith("up ")  # detach resumed the VM


def test_gs_prof_shows_the_last_profile_run(boot):
    g = boot(smp=2)
    g.work("split 5 3 2")
    before = gs(g, "gs-prof")["gs-prof"]
    assert "profiler: active 0" in before[0]
    assert all(f[1] == "no" for f in table(before, "CPU"))  # no buffers before the first run
    assert "pmu decision: not made yet" in before
    g.cmd("profile 200", timeout=20)
    stats = g.cmd("profile stats")
    out = gs(g, "gs-prof")["gs-prof"]
    assert re.match(r"profiler: active 0 running 0 source of the last run tick$", out[0]), out
    rows = table(out, "CPU")
    assert len(rows) == 2
    shell = {int(f[0]): f for f in table(stats.splitlines(), "CPU")}  # CPU TAKEN RECORDED DROPPED
    for f in rows:
        cpu, buf, records, taken, dropped, armed, running = f[0], f[1], *map(int, f[2:])
        assert buf == "yes" and records > 0, f
        assert [taken, records, dropped] == [int(x) for x in shell[int(cpu)][1:4]], (f, stats)
        assert armed == 0 and running == 0  # tick source under TCG: no counter armed
    decision = {k: v.strip() for k, _, v in (line.strip().partition(" ") for line in out if line.startswith("  "))}
    assert "pmu decision: made" in out
    assert decision["kind"] == "none" and decision["reason"] in ("no PMU claimed", "counter did not count")
