# SPDX-License-Identifier: MIT
"""gdbscripts/sample.py: folded stacks and a summary from GDB's unwinder, and the one-stop mode."""
import os
import re
import subprocess

import gdbrun
import stubresume
import conftest
import pytest
from guest import free_port

SAMPLE_PY = os.path.join(gdbrun.GDBSCRIPTS, "sample.py")
CHAIN6 = ["chain1", "chain2", "chain3", "chain4", "chain5", "chain6"]
SUMMARY = re.compile(r"^sample\.py: (\d+) stops in [\d.]+ s, ([\d.]+)/s achieved \(asked (\d+)\), "
                     r"pause mean (\d+) us p50 (\d+) us, (\d+) idle vCPU samples, \d+ late deadlines$")


def sample_py(g, timeout=120, **env):
    env = {"GS_PORT": str(g.gdbport), **{k: str(v) for k, v in env.items()}}
    return gdbrun.gdb_batch(["-x", SAMPLE_PY], env=env, timeout=timeout)




def test_folded_stacks_of_chain6_and_summary(boot):
    g = boot(smp=2)
    pid = g.work("chain 6")
    cpu = next(t["cpu"] for t in g.ps() if t["pid"] == pid)
    r = sample_py(g, GS_COUNT=60, GS_RATE=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines == sorted(lines) and lines, r.stdout  # sorted by stack text, deterministic
    rows = conftest.folded_rows(r.stdout)
    on_chain_cpu = sum(n for stack, n in rows if stack[0] == f"cpu{cpu}")
    in_chain = sum(n for stack, n in rows if stack[0] == f"cpu{cpu}" and stack[-6:] == CHAIN6)
    for stack, n in rows:
        assert re.fullmatch(r"cpu\d+", stack[0]) and n > 0, (stack, n)
        if "chain6" in stack:
            # root first: ... work_main;chain1;...;chain6 with nothing else from chain1 down
            i = stack.index("chain1")
            assert stack[i - 1] == "work_main" and stack[i:i + 6] == CHAIN6, stack
    assert on_chain_cpu == 60  # one stack per stop on the busy vCPU; the halted one is left out
    assert in_chain >= 57, rows  # the chain spins all the time; a stop may land in its interrupt
    m = SUMMARY.match(r.stderr.strip().splitlines()[-1])
    assert m, r.stderr
    stops, rate, asked, mean, p50, idle = m.groups()
    assert int(stops) == 60 and int(asked) == 30
    assert 0 < float(rate) <= 31  # paced at 30/s: never faster (how much slower a busy host makes it is not judged)
    assert int(mean) > 0 and int(p50) > 0
    assert int(idle) >= 50  # the other vCPU sits in hlt
    assert g.cmd("uptime").startswith("up ")  # detach resumed the VM


def test_idle_samples_kept_on_request(boot):
    g = boot(smp=2)
    r = sample_py(g, GS_COUNT=10, GS_RATE=50, GS_IDLE=1)
    assert r.returncode == 0, r.stderr
    rows = conftest.folded_rows(r.stdout)
    assert sum(n for _, n in rows) == 20  # 2 vCPUs x 10 stops
    # cpu1 runs nothing but its idle loop -- and the timer interrupts it takes there: a stop may land
    # inside one (beside two hogs and more: cpu1 ap_main;idle_loop;trap_common;trap, 1 of 10).
    assert all("idle_loop" in stack for stack, _ in rows if stack[0] == "cpu1"), rows


def test_stop_mode_records_one_stop_and_leaves_the_vm_paused(boot):
    g = boot(smp=2, qmp=True)
    pid = g.work("chain 4")
    cpu = next(t["cpu"] for t in g.ps() if t["pid"] == pid)
    r = sample_py(g, timeout=60, GS_MODE="stop")
    assert r.returncode == 0, r.stderr
    stacks, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("cpu"):
            cur = stacks.setdefault(line.split()[0], [])
        else:
            m = re.fullmatch(r"  #(\d+)\s+0x([0-9a-f]{16}) (\S+)", line)
            assert m and int(m.group(1)) == len(cur), line
            cur.append(m.group(3))
    assert sorted(stacks) == ["cpu0", "cpu1"]
    assert stacks[f"cpu{cpu}"][-6:] == ["chain4", "chain3", "chain2", "chain1", "work_main", "task_entry"] \
        or stacks[f"cpu{cpu}"][:3] == ["sched_tick", "trap", "trap_common"], stacks
    assert gdbrun.qmp_run_state(g.qmp_path) == "paused"  # disconnect does not resume
    if not os.path.exists(gdbrun.GDBSAMPLE):
        pytest.fail(f"{gdbrun.GDBSAMPLE} is missing: run `make gdbsample`")
    d = subprocess.run([gdbrun.GDBSAMPLE, "dump", "-p", str(g.gdbport)], capture_output=True, text=True,
                       timeout=30)
    assert d.returncode == 0, d.stderr  # reads the same paused state...
    assert gdbrun.qmp_run_state(g.qmp_path) == "paused"  # ...and leaves it so: GDB paused it (issue 22)
    stubresume.resume(g.gdbport)
    assert g.cmd("uptime").startswith("up ")


def test_bad_parameters_are_refused(boot):
    g = boot(smp=1)
    r = sample_py(g, timeout=60, GS_MODE="sample", GS_RATE="fast")
    assert r.returncode != 0 and "GS_RATE='fast'" in r.stderr, r.stderr
    r = sample_py(g, timeout=60, GS_MODE="bogus")
    assert r.returncode != 0 and "GS_MODE='bogus'" in r.stderr, r.stderr
    r = gdbrun.gdb_batch(["-ex", "set tcp auto-retry off", "-x", SAMPLE_PY],  # else GDB retries 15 s
                         env={"GS_TARGET": f"127.0.0.1:{free_port()}"}, timeout=60)
    assert r.returncode != 0 and "sample.py: " in r.stderr, r.stderr  # no stub listening there
    assert g.cmd("uptime").startswith("up ")  # nothing connected: the VM never stopped
