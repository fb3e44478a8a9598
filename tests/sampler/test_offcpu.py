# SPDX-License-Identifier: MIT
"""gdbsample record --off-cpu: every task of our test kernel that is not running, its saved stack
walked from where it resumes and weighed by the wall time it waited (issue 25, part 1).

Ground truth is each task's structure: `work sleep 10` does nothing but sleep in nap_sleep ->
task_sleep_ms, so all of its wall time is off-CPU, blocked, under that chain (at least 95 %: a
stop that finds it awake for the few instructions between two sleeps gives that time to none);
`work split 5 3 2` only computes, so its time is on-CPU (its vCPU is its own once the shell
sleeps: at most 5 % runnable, while the shell answers a command); the shell waits for a key in
console_getc. The weights of a task that waited throughout add up to the run's wall time in
sample periods (duration_ns x -r), within a fifth: they are wall time, not samples, so a starved
host changes how often the table is read but not what the weights add to. Each test boots its
own guest (stopped by pid at teardown, the `boot` fixture)."""
import re
import time

import conftest
import pytest
from test_count import ARCHES

pytestmark = pytest.mark.usefixtures("need_gdbsample")


def start(g, command):
    g.send(command + "\n")
    out = g.read_until("\n> ")
    return int(re.search(r"pid (\d+) ", out).group(1))


def weights(folded):
    """{(root, class or None): {stack below the class: weight}} of folded text."""
    out = {}
    for frames, n in conftest.folded_rows(folded):
        cls = frames[1] if len(frames) > 1 and frames[1].startswith("off-cpu/") else None
        rest = ";".join(frames[2:] if cls else frames[1:])
        d = out.setdefault((frames[0], cls), {})
        d[rest] = d.get(rest, 0) + n
    return out


def kv(stderr):
    return dict(line.split(" ", 1) for line in stderr.splitlines() if re.match(r"^[a-z_0-9]+ ", line))


@pytest.mark.parametrize("arch, qemu", [("x86_64", "7.2"), ("x86_64", "10.0"), ("aarch64", "7.2"),
                                        ("riscv64", "7.2")], indirect=["qemu"])
def test_a_sleeper_is_off_cpu_and_a_spinner_on(boot, arch):
    kernel, config = ARCHES[arch]
    g = boot(smp=2, kernel=kernel, **({"config": config} if config else {}))
    sleeper = start(g, "work sleep 10")
    spinner = start(g, "work split 5 3 2")
    r = conftest.gdbsample("record", "-p", g.gdbport, "-e", g.kernel, "-d", 2, "-f", "folded", "--off-cpu",
                           "--task-format", "comm-pid", "--summary-format", "kv", timeout=120)
    assert r.returncode == 0, r.stderr
    w, keys = weights(r.stdout), kv(r.stderr)
    periods = int(keys["duration_ns"]) / 1e9 * 100  # -r 100
    sleep_all = sum(sum(d.values()) for (root, _), d in w.items() if root == f"sleep-{sleeper}")
    sleep_chain = sum(n for stack, n in w.get((f"sleep-{sleeper}", "off-cpu/blocked"), {}).items()
                      if re.search(r";work_main;nap_sleep;task_sleep_ms(;|$)", stack))
    mine = {k: d for k, d in w.items() if k[0] == f"sleep-{sleeper}"}
    assert sleep_all > 0 and sleep_chain >= 0.95 * sleep_all, (mine, r.stderr)
    assert 0.8 * periods <= sleep_chain <= 1.05 * periods + 1, (sleep_chain, periods, r.stderr)
    split_on = sum(w.get((f"split-{spinner}", None), {}).values())
    split_off = sum(sum(d.values()) for (root, cls), d in w.items() if root == f"split-{spinner}" and cls)
    assert split_on >= 20 and split_off <= 0.05 * (split_on + split_off), (w, r.stderr)
    shell = w.get(("shell-3", "off-cpu/blocked"), {})
    assert any("shell_task;console_getc" in stack for stack in shell), w
    assert not any(root.startswith("idle") for root, cls in w if cls), w  # idle tasks are left out
    assert int(keys["offcpu_samples"]) > 0 and keys["offcpu_unreadable"] == "0", r.stderr
    assert int(keys["offcpu_walk_end"]) == int(keys["offcpu_samples"]), r.stderr  # every walk reached task_entry
    # the guest's own view: the off-CPU tasks are the ones its ps lists as waiting
    ps = {t["pid"]: t for t in g.ps()}
    for root, cls in w:
        if cls:
            pid = int(root.rsplit("-", 1)[1])
            assert pid in ps, (root, ps)


def test_the_capture_keeps_them_and_analysis_folds_them_as_record_does(boot, tmp_path):
    """-f capture with --off-cpu: version 6, each off-CPU stack with its state and weight;
    gdbsample-analyze fold --state all folds them as gdbsample record -f folded does (the sleeper
    blocked in nap_sleep for the run's periods), info counts them as the summary did, and the
    default fold -- the vCPUs' samples -- leaves them out, saying how many."""
    import json
    import subprocess
    g = boot(smp=2)
    sleeper = start(g, "work sleep 10")
    start(g, "work split 5 3 2")
    cap = tmp_path / "off.cap"
    r = conftest.gdbsample("record", "-p", g.gdbport, "-e", g.kernel, "-d", 2, "-f", "capture", "-o", cap,
                           "--off-cpu", "--summary-format", "kv", timeout=120)
    assert r.returncode == 0, r.stderr
    keys = kv(r.stderr)
    raw = cap.read_bytes()
    assert raw[:8] == b"GDBSAMP\0" and int.from_bytes(raw[8:10], "little") == 6
    analyze = ["/usr/bin/python3", f"{conftest.ROOT}/analysis/gdbsample-analyze"]
    f = subprocess.run(analyze + ["fold", str(cap), "-e", g.kernel, "--state", "all", "--task-format", "comm-pid"],
                       capture_output=True, text=True, timeout=120)
    assert f.returncode == 0 and f.stderr == "", f.stderr
    w = weights(f.stdout)
    periods = int(keys["duration_ns"]) / 1e9 * 100
    chain = sum(n for stack, n in w.get((f"sleep-{sleeper}", "off-cpu/blocked"), {}).items()
                if re.search(r";work_main;nap_sleep;task_sleep_ms(;|$)", stack))
    assert 0.8 * periods <= chain <= 1.05 * periods + 1, (chain, periods, f.stdout)
    info = json.loads(subprocess.run(analyze + ["info", "--json", str(cap)], capture_output=True, text=True,
                                     timeout=120).stdout)
    o = info["offcpu"]
    assert o["blocked"]["stacks"] + o["runnable"]["stacks"] == int(keys["offcpu_samples"]), (o, r.stderr)
    assert o["blocked"]["periods"] + o["runnable"]["periods"] == int(keys["offcpu_weight"]), (o, r.stderr)
    d = subprocess.run(analyze + ["fold", str(cap), "-e", g.kernel], capture_output=True, text=True, timeout=120)
    assert d.returncode == 0 and "off-cpu/" not in d.stdout and "split" in d.stdout
    assert f"{keys['offcpu_samples']} off-CPU samples (gdbsample record --off-cpu) left out" in d.stderr, d.stderr
    # -f report: the off-CPU line, the sleeper's chain marked blocked, its task all off-CPU
    rep = conftest.gdbsample("record", "-p", g.gdbport, "-e", g.kernel, "-d", 1, "-f", "report", "--off-cpu",
                             "--chains", 40, timeout=120)
    assert rep.returncode == 0, rep.stderr
    lines = rep.stdout.splitlines()
    assert lines[2].startswith("off-cpu ") and "blocked " in lines[2], lines[:4]
    assert any(x.startswith("task ") and f" sleep pid {sleeper} " in x and x.endswith(", off-cpu 100.0%")
               for x in lines), lines
    blocks, cur = [], None  # each chain: [leaf line, callers...]
    for x in lines:
        if x.startswith("        <- ") and cur is not None:
            cur.append(x.strip()[3:])
        elif "%" in x.split(" ", 1)[0] and not x.startswith(("task ", "off-cpu ")):
            cur = [x]
            blocks.append(cur)
    assert any(b[0].endswith(" [off-cpu/blocked]") and any(c.startswith("nap_sleep+") for c in b[1:])
               for b in blocks), rep.stdout


@pytest.mark.parametrize("args, message", [
    (["-f", "speedscope"], "--off-cpu is for record -f folded, svg, report or capture"),
    (["--os", "none", "-f", "folded"], "--off-cpu is for record -f folded, svg, report or capture"),
    (["-f", "folded", "--phase", "a=split_a:split_b"], "--off-cpu is for record -f folded, svg, report or capture, "
                                                       "with the kernel image (-e) and its tasks, not with --phase"),
])
def test_what_off_cpu_cannot_do_is_refused_in_one_line(args, message):
    r = conftest.gdbsample("record", "-p", 1, "-e", conftest.KERNEL, "--off-cpu", *args, timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().startswith(f"gdbsample: {message}") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_held_up_in_the_off_cpu_reads_the_run_goes_on(boot):
    """gdbsample SIGSTOPped at a round's read of the task table (a proxy in front of QEMU's stub
    sees it): the pause watchdog resumes the guest within about --max-pause, the round is lost,
    and after SIGCONT the run goes on -- off-CPU stacks after the rescue too, exit 0."""
    import subprocess
    from rspproxy import run_stopped
    g = boot(smp=2, qmp=True)
    start(g, "work sleep 10")
    nm = subprocess.run(["nm", g.kernel], capture_output=True, text=True).stdout
    table = b"m%x," % int(next(line.split()[0] for line in nm.splitlines() if line.endswith(" tasks")), 16)
    seen, sent = {"c": 0}, []

    def when(req, n):
        seen["c"] += req[:1] == b"c"
        return req.startswith(table) and seen["c"] >= 20  # a round's, well into the run

    def while_stopped(px):
        # QEMU may not have acted on the stop byte yet (a loaded host): "running" at once would
        # be the VM before it stopped, and SIGCONT would come before the watchdog's --max-pause.
        # Held 1 s, five times that, the watchdog has acted; then the guest must run.
        time.sleep(1.0)
        assert conftest.wait_running(g.qmp_path, timeout=10) == "running"

    rc, out, err = run_stopped(g.gdbport, [conftest.GDBSAMPLE, "record", "-p", "{port}", "-e", g.kernel, "-d", "3",
                                           "-f", "folded", "--off-cpu", "--task-format", "comm", "--max-pause",
                                           "0.2", "--summary-format", "kv"], when, while_stopped, sent=sent)
    assert rc == 0, err
    keys = kv(err)
    # (a loaded run once counted no rescue though QMP said running while gdbsample was stopped:
    # the requests around the stop say what happened)
    at = next((i for i, q in enumerate(sent) if q.startswith(table) and sum(x[:1] == b"c" for x in sent[:i]) >= 20), 0)
    assert int(keys["watchdog_rescues"]) >= 1 and int(keys["offcpu_samples"]) > 0, (err, sent[max(0, at - 8):at + 30])
    assert "sleep;off-cpu/blocked;task_entry;work_main;nap_sleep" in out, out
    # no error line, a stale one from the rescue included: only warnings besides the keys
    assert all("warning: " in line for line in err.splitlines() if line.startswith("gdbsample: ")), err
    assert conftest.wait_running(g.qmp_path) == "running"
