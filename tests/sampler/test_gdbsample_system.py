# SPDX-License-Identifier: MIT
"""gdbsample against the test kernel under QEMU TCG: accuracy, unwinding, idle, signals, errors.

Every guest is started by the `boot` fixture (tests/conftest.py), which stops QEMU by its pid at
teardown; every gdbsample started here is waited for or killed by its own pid.
"""
import os
import random
import re
import signal
import socket
import struct
import subprocess
import time
import zlib

import conftest
import crosscheck
import pytest
from guest import Guest

from gdbsample_analysis import capture as capmod

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
CHAIN6 = ["chain1", "chain2", "chain3", "chain4", "chain5", "chain6"]


@pytest.fixture(autouse=True)
def need_binary():
    if not os.path.exists(GDBSAMPLE):
        pytest.fail(f"{GDBSAMPLE} is missing: run `make {os.path.relpath(GDBSAMPLE, conftest.ROOT)}`")


def run(g, *args, timeout=60, elf=True):
    """Runs gdbsample against guest g (with -e its kernel) to completion; returns the CompletedProcess."""
    cmd = [GDBSAMPLE, "-p", str(g.gdbport)] + (["-e", g.kernel] if elf else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def start(g, *args):
    """Starts gdbsample in the background (own process group untouched: we signal its pid)."""
    cmd = [GDBSAMPLE, "-p", str(g.gdbport), "-e", conftest.KERNEL] + list(args)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_connected(p, port, timeout=60):
    """Wait until gdbsample (pid p) holds an established TCP connection to the gdbstub's port
    (its sockets' inodes in /proc/net/tcp), so a test acts on a run that is really sampling;
    False if it exited or the bound (a hang, not a bar) passed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and p.poll() is None:
        inodes = set()
        for fd in os.listdir(f"/proc/{p.pid}/fd"):
            try:
                link = os.readlink(f"/proc/{p.pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                c = line.split()
                if c[3] == "01" and int(c[2].split(":")[1], 16) == port and c[9] in inodes:
                    return True
        time.sleep(0.05)
    return False




qmp_status = conftest.qmp_status
wait_running = conftest.wait_running


# --- accuracy --------------------------------------------------------------------------------

# QEMU versions (conftest.ON_EACH_QEMU): what touches the gdbstub protocol runs on the system's
# 7.2 and on 10.0 -- split accuracy at -smp 2, the timer interrupt, capture, signals and the
# guard, attach/detach on every path (refusal, QEMU killed, dump, a guest paused before it came, the
# guard's raw bytes); the rest (unwinding, report format, symbols, idle, top, flags) on 7.2 only.
@pytest.mark.parametrize("build,smp,qemu", [("fp", 1, "7.2"), ("fp", 2, "7.2"), ("fp", 2, "10.0"), ("fp", 4, "7.2"),
                                            ("nofp", 2, "7.2")], indirect=["qemu"])
def test_split_shares_within_4pp(boot, build, smp):
    """work split 5 3 2: each function's share of the split samples is within 4 percentage
    points of 50/30/20. Tolerance: with n >= 3000 samples the binomial standard deviation of
    a share is at most 0.92 pp, so 4 pp is > 4.3 sigma (at 2000 it was 3.5 sigma, and one
    make test saw split_b at 25.7 %); sampling is paced by the host clock
    with jitter, so it cannot lock onto the workload's period. Both builds of the kernel: with
    frame pointers (every vCPU count) and without (DWARF CFI)."""
    g = boot(smp=smp, kernel=conftest.KERNELS[build])
    g.work("split 5 3 2")

    def run_once():
        r = run(g, "-r", "500", "-d", "8", "-f", "folded", "-q", timeout=120)
        assert r.returncode == 0, r.stderr
        return r
    shares, waited, _ = conftest.split_shares(g, run_once)
    # While the split's vCPU thread has a host core, stops are uniform in guest time and 4 pp is
    # > 4.3 sigma; when it waits for one (the host kernel's schedstat says how long), the error
    # is a bias, not noise (README, "Accuracy under TCG"; 34.1 % split_b seen on -smp 4 beside two
    # hogs and another QEMU): then the bound is the contended one tests/system/test_crosscheck.py
    # measured.
    bound = 4 if waited <= crosscheck.CONTENDED else 12
    for name, want in (("split_a", 50), ("split_b", 30), ("split_c", 20)):
        assert abs(shares[name] - want) <= bound, (shares, waited)


@pytest.mark.parametrize("build", ["fp", "nofp"])
def test_chain6_carries_all_six_functions(boot, build):
    """work chain 6: >= 95 % of the chain task's samples hold chain1..chain6 in order, on both
    builds of the kernel."""
    g = boot(smp=2, kernel=conftest.KERNELS[build])
    g.work("chain 6")
    mine = full = 0
    log = ""
    for _ in range(3):  # a loaded host reaches fewer samples per run: add runs until 300
        r = run(g, "-r", "300", "-d", "3", "-f", "folded")
        assert r.returncode == 0, r.stderr
        log += r.stdout + r.stderr
        for frames, n in conftest.folded_rows(r.stdout):
            if not any(f in CHAIN6 for f in frames):
                continue
            mine += n
            chain = [f for f in frames if f in CHAIN6]
            if chain == CHAIN6 and frames[frames.index("chain1") - 1] == "work_main":
                full += n
        if mine >= 300:
            break
    assert mine >= 300, log
    assert full >= 0.95 * mine, (full, mine, log)


def test_report_folds_chain_like_profile(boot):
    """The report: header lines, percentages summing to ~100, leaf with offset span, callers."""
    g = boot(smp=1)
    g.work("chain 6")
    r = run(g, "-r", "200", "-d", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"profiled \d+ ms", lines[0]), lines[0]
    m = re.fullmatch(r"(\d+) samples on 1 cpus, (\d+) dropped, source gdbstub 200 Hz", lines[1])
    assert m, lines[1]
    # -e given: which image, which unwinders, and where the kernel was found
    assert re.fullmatch(r"kernel kernel\.elf, unwound by cfi,fp, kaslr offset 0x0 \(matched kernel text\), "
                        r"tasks testkernel: DWARF, \(\(struct cpu \*\)\$percpu\)->current; struct task pid \+\d+ name \+\d+",
                        lines[2]), lines[2]
    tasks = [l for l in lines[3:] if l.startswith("task ")]   # then one line per task
    assert tasks and re.fullmatch(r"task \d+\.\d% \d+ chain pid \d+ tgid \d+, user 0\.0%", tasks[0]), tasks
    lines = lines[:3] + lines[3 + len(tasks):]
    leafs = [l for l in lines[3:] if re.match(r"\d+\.\d% \d+ ", l)]
    pct = sum(float(l.split("%")[0]) for l in leafs)
    assert leafs and pct <= 100 + 0.05 * len(leafs), leafs  # each share rounded to 0.1
    top = lines[3]
    assert re.fullmatch(r"\d+\.\d% \d+ chain6\+0x[0-9a-f]+(\.\.0x[0-9a-f]+)?", top), top
    callers = [l.strip() for l in lines[4:10]]
    assert [c.split("+")[0] for c in callers] == ["<- chain5", "<- chain4", "<- chain3", "<- chain2",
                                                  "<- chain1", "<- work_main"], lines


# On one QEMU: what is checked is the kernel's entry CFI and the unwinder over it, which no stub
# version changes (QEMU 10.0's stub is covered by the shares and the per-vCPU tests); the
# suite's time goes to both builds instead.
@pytest.mark.parametrize("build,qemu", [("fp", "7.2"), ("nofp", "7.2")], indirect=["qemu"])
def test_timer_interrupt_samples_reach_interrupted_code(boot, build):
    """Every sample taken inside the timer interrupt -- at any instruction of the entry stub,
    trap_common, the handler -- continues into the function it interrupted (the entry path's
    CFI describes the interrupted context at every instruction), on both builds. Two chain tasks
    share one vCPU so every tick also switches tasks, which lengthens the handler: about 20 of
    8000 samples land in it (measured); runs are added until 20 were seen -- up to 24 of 3 s: a
    host starved beside CPU hogs reached only 6700 samples in eight runs of 5 s, 19 of them in
    the handler."""
    g = boot(smp=1, kernel=conftest.KERNELS[build])
    g.work("chain 6")
    g.work("chain 6")
    irq_frames = {"trap_common", "trap", "sched_tick", "sched_preempt"}
    in_irq = reached = 0
    out = ""
    missed = []
    for _ in range(24):  # a loaded host reaches fewer samples per run: add runs until 20 hits
        r = run(g, "-r", "2000", "-d", "3", "-f", "folded", "-q", timeout=120)
        assert r.returncode == 0, r.stderr
        out += r.stdout
        for frames, n in conftest.folded_rows(r.stdout):
            first = next((i for i, f in enumerate(frames) if f in irq_frames or f.startswith("vector")), None)
            if first is None:
                continue
            in_irq += n
            below = frames[:first]  # root first: what ran before the interrupt
            if below and below[-1] == "chain6" and [f for f in below if f in CHAIN6] == CHAIN6:
                reached += n
            else:
                missed.append((frames, n))
        if in_irq >= 20:
            break
    assert in_irq >= 20, "too few samples landed in the timer interrupt:\n" + out
    assert reached == in_irq, missed


# --- idle, duration, outputs -------------------------------------------------------------------

def test_idle_vcpus_are_tagged_and_dropped(boot):
    """An idle guest: samples halted in hlt are tagged idle, counted and left out of the report
    (a few land in interrupt handlers on the way in or out of hlt: those are not idle).
    The checks are exact relations, not shares: beside two CPU hogs a starved QEMU lands up to a
    fifth of its stops on the timer interrupt's entry (34 of 182 seen), which an idle guest
    barely spends time in -- so "90 % in hlt" failed there while the tagging was right."""
    g = boot(smp=2)
    for secs in ("1", "4", "16"):  # sized by what was reached: a loaded host gave 54 in 1 s
        r = run(g, "-r", "100", "-d", secs, "--summary-format", "kv")
        assert r.returncode == 0, r.stderr
        keys = dict(line.split(" ", 1) for line in r.stderr.splitlines() if " " in line)
        kept = int(re.search(r"^(\d+) samples on 2 cpus", r.stdout, re.M).group(1))
        samples, idle = int(keys["samples"]), int(keys["idle"])
        if idle >= 100:
            break
    assert idle >= 100 and idle > samples, (r.stdout, r.stderr)  # an idle guest: mostly in hlt
    # the report holds the samples counted apart from the idle ones
    assert kept == samples, (r.stdout, r.stderr)
    if kept == 0:
        assert f"no samples: all {idle} were idle" in r.stdout, r.stdout
    for secs in ("1", "4", "16"):
        r = run(g, "-r", "100", "-d", secs, "--idle", "-f", "folded")
        rows = conftest.folded_rows(r.stdout)
        total = sum(n for _, n in rows)
        if total >= 100:
            break
    in_hlt = sum(n for frames, n in rows if frames[-1] == "idle_loop")
    m = re.search(r"idle samples (\d+) \(kept\)", r.stderr)
    assert m, r.stderr
    assert total >= 100 and int(m.group(1)) == in_hlt, (r.stdout, r.stderr)  # tagged idle: exactly those in hlt
    assert in_hlt > total / 2, r.stdout


@conftest.ON_EACH_QEMU
def test_duration_ends_run_with_header_and_summary(boot):
    g = boot(smp=2)
    g.work("split 1 1 1")
    r = run(g, "-r", "100", "-d", "2")
    assert r.returncode == 0, r.stderr
    assert re.match(r"profiled (19\d\d|20\d\d) ms\n\d+ samples on 2 cpus, 0 dropped, source gdbstub 100 Hz\n",
                    r.stdout), r.stdout
    for key in ("samples of 2 vCPUs", "Hz achieved, 100 Hz requested", "pause per sample p50",
                "guest stopped", "idle samples", "unwind stops:", "errors:"):
        assert key in r.stderr, (key, r.stderr)
    assert g.cmd("uptime").startswith("up ")


def capture_samples(path):
    """Minimal reader of docs/capture-format.md: (header fields, [(t, cpu, flags, frames)], summary)."""
    data = open(path, "rb").read()
    assert data[:8] == b"GDBSAMP\0"
    assert struct.unpack_from("<I", data, 124)[0] == zlib.crc32(data[:124])
    version, hsize, arch, ncpu, rate = struct.unpack_from("<HHHHI", data, 8)
    off, samples, summary = hsize, [], ""
    while off < len(data):
        magic, ctype, length, count, crc = struct.unpack_from("<IIIII", data, off)
        assert magic == 0x4B4E4843
        payload = data[off + 20: off + 20 + length]
        assert zlib.crc32(data[off + 4: off + 16] + payload) == crc  # v2: type, length, count too
        if ctype == 1:
            p = 0
            for _ in range(count):
                t, cpu, flags, n = struct.unpack_from("<QHBB", payload, p)
                frames = struct.unpack_from("<%dQ" % n, payload, p + 12)
                p += 12 + 8 * n
                if flags & 0x80:  # an extension block (exact frames) follows
                    p += 2 + struct.unpack_from("<H", payload, p)[0]
                samples.append((t, cpu, flags & 0x7F, frames))
            assert p == length
        elif ctype == 2:
            summary = payload.decode()
        off += 20 + length
    return {"version": version, "arch": arch, "ncpu": ncpu, "rate": rate}, samples, summary


@conftest.ON_EACH_QEMU
def test_capture_file_is_readable(boot, tmp_path):
    g = boot(smp=2)
    g.work("chain 6")
    out = tmp_path / "run.cap"
    for secs in ("1.5", "4", "10"):  # longer on a host too busy for 200 samples in 1.5 s
        r = run(g, "-r", "200", "-d", secs, "-f", "capture", "-o", str(out))
        assert r.returncode == 0, r.stderr
        hdr, samples, summary = capture_samples(out)
        if len(samples) >= 200:  # the idle share below: sd 3.5 pp at 200, its bounds are +-20 pp
            break
    assert hdr == {"version": 4, "arch": 1, "ncpu": 2, "rate": 200}
    assert len(samples) >= 200, summary
    fields = dict(line.split(" ", 1) for line in summary.splitlines() if " " in line)
    assert len(samples) == int(fields["samples"]) + int(fields["idle"]), summary  # every sample is in it
    assert {cpu for _, cpu, _, _ in samples} == {0, 1}
    # one vCPU runs the chain, the other idles: the idle ones carry flag 1, the others not
    idle = [s for s in samples if s[2] & 1]
    assert 0.3 * len(samples) <= len(idle) <= 0.7 * len(samples)
    assert all(a[0] <= b[0] for a, b in zip(samples, samples[1:]))
    assert "pause_p50_us" in summary and "samples" in summary


# --- never leave the guest frozen ------------------------------------------------------------

@conftest.ON_EACH_QEMU
def test_sigint_exits_zero_and_guest_runs(boot, tmp_path):
    """SIGINT while sampling -- once the capture in progress holds samples (a loaded host took more
    than 1.5 s to connect, and a SIGINT then is `interrupted by a signal while connecting`, exit
    1): exit 0, the capture written whole, the guest running."""
    g = boot(smp=2, qmp=True)
    g.work("chain 6")
    cap = tmp_path / "run.cap"
    p = start(g, "-r", "500", "-f", "capture", "-o", str(cap))
    try:
        assert conftest.wait_capture_samples(p, cap), \
            p.communicate(timeout=20) if p.poll() is not None else "no samples in 60 s"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert "samples of 2 vCPUs" in err, err
    assert any(True for _ in capmod.Capture(str(cap)).samples())
    assert qmp_status(g.qmp_path) == "running"
    assert g.cmd("uptime").startswith("up ")


@conftest.ON_EACH_QEMU
def test_sigkill_never_leaves_guest_frozen(boot):
    """SIGKILL at a random moment, 20 times: the guard resumes the guest every time."""
    g = boot(smp=2, qmp=True)
    g.work("chain 6")
    rng = random.Random(1234)
    for i in range(20):
        p = start(g, "-r", "1000", "-q")
        time.sleep(rng.uniform(0.0, 0.4))
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=20)
        status = wait_running(g.qmp_path, timeout=3)
        assert status == "running", f"iteration {i}: guest {status} after SIGKILL"
    # the guards have all left: the stub takes a new client, which samples normally
    r = run(g, "-r", "100", "-d", "0.5", timeout=30)
    assert r.returncode == 0, r.stderr
    assert g.cmd("uptime").startswith("up ")


@conftest.ON_EACH_QEMU
def test_qemu_killed_exits_one_with_output(boot, tmp_path):
    g = boot(smp=2)
    g.work("chain 6")
    wire = tmp_path / "wire.log"
    p = subprocess.Popen([GDBSAMPLE, "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "200"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=conftest.wire_env(wire))
    assert wait_connected(p, g.gdbport), p.communicate()
    assert conftest.wire_stops(p, wire, stops=40), p.communicate()  # samples taken (the output must hold chain6)
    os.kill(g.pid, signal.SIGKILL)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 1, err
    assert "QEMU exited?" in err and "written" in err, err
    assert out.startswith("profiled ") and "chain6" in out, out
    assert "samples of 2 vCPUs" in err


# --- refusals and errors ----------------------------------------------------------------------

@conftest.ON_EACH_QEMU
def test_wrong_elf_refused(boot, tmp_path):
    g = boot(smp=1)
    data = bytearray(open(conftest.KERNEL, "rb").read())
    # flip bytes in the middle of .text: find it through the section headers
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    stroff = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        base = shoff + i * shentsize
        name_off, = struct.unpack_from("<I", data, base)
        name = data[stroff + name_off:].split(b"\0")[0]
        if name == b".text":
            off, size = struct.unpack_from("<QQ", data, base + 0x18)
            for k in range(off + size // 2 - 256, off + size // 2 + 256):
                data[k] ^= 0xFF
    bad = tmp_path / "kernel.elf"
    bad.write_bytes(bytes(data))
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", str(bad), "-d", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "kernel.elf does not match the running guest" in r.stderr
    assert g.cmd("uptime").startswith("up ")  # refused, and the guest was let go
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", str(bad), "--no-verify", "-d", "0.5"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_symbol_map_accepted(boot, tmp_path):
    g = boot(smp=1)
    g.work("chain 6")
    nm = subprocess.run(["nm", conftest.KERNEL], capture_output=True, text=True, check=True).stdout
    m = tmp_path / "System.map"
    m.write_text(nm)
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", str(m), "-d", "1", "-f", "folded"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "chain1;chain2;chain3;chain4;chain5;chain6" in r.stdout
    junk = tmp_path / "junk"
    junk.write_text("this is not a symbol map\n")
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", str(junk), "-d", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "not an ELF or nm-style symbol map" in r.stderr


BAD_FLAGS = [
    [], ["-p", "1", "-u", "/x"], ["-p", "0"], ["-p", "70000"], ["-p"], ["-H", "nohost"],
    ["-p", "1", "-r", "0"], ["-p", "1", "-r", "10001"], ["-p", "1", "-r", "abc"],
    ["-p", "1", "-d", "-1"], ["-p", "1", "-d", "x"], ["-p", "1", "-f", "xml"],
    ["-p", "1", "--max-frames", "0"], ["-p", "1", "--max-frames", "256"],
    ["-p", "1", "--kernel-range", "zz"], ["-p", "1", "--kernel-range", "ff:1"],
    ["-p", "1", "--cpus", "a"], ["-p", "1", "--cpus", "3-1"], ["-p", "1", "--chains", "0"],
    ["-p", "1", "--bogus"], ["-p", "1", "-x"], ["-p", "1", "extra"], ["frobnicate", "-p", "1"],
]


@pytest.mark.parametrize("args", BAD_FLAGS, ids=lambda a: " ".join(a) or "none")
def test_bad_flags_one_line_exit_2(args):
    r = subprocess.run([GDBSAMPLE] + args, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gdbsample: "), r.stderr


def test_cpus_beyond_guest_refused_and_guest_runs(boot):
    g = boot(smp=2)
    r = run(g, "--cpus", "2", "-d", "1")
    assert r.returncode == 2 and "--cpus" in r.stderr, r.stderr
    assert g.cmd("uptime").startswith("up ")
    r = run(g, "--cpus", "1", "-d", "1", "--idle", "-f", "folded", "--task-format", "cpu")
    assert r.returncode == 0 and r.stdout and all(l.startswith("cpu1;") for l in r.stdout.splitlines())


# --- dump, top, unix socket -------------------------------------------------------------------

@conftest.ON_EACH_QEMU
def test_dump_prints_every_vcpu_stack(boot):
    g = boot(smp=2)
    g.work("chain 6")
    time.sleep(0.2)
    for _ in range(10):  # the idle vCPU is in hlt unless the stop caught it in an interrupt (a loaded
        # host's vCPU thread can lag its timer so that three stops in a row land in one)
        r = subprocess.run([GDBSAMPLE, "dump", "-p", str(g.gdbport), "-e", conftest.KERNEL],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert re.search(r"^cpu0", r.stdout, re.M) and re.search(r"^cpu1", r.stdout, re.M), r.stdout
        # (the retry looks for the idle *tag* at the line's end: " idle" alone matched the task
        # name "idle/0" of a vCPU caught in its timer interrupt, so it never retried)
        halted = re.search(r"^cpu\d idle/\d pid \d+ tgid \d+ idle$", r.stdout, re.M)
        if halted and "chain6+0x" in r.stdout:
            break
    assert "chain6+0x" in r.stdout and "work_main+0x" in r.stdout, r.stdout
    assert halted, r.stdout  # the other vCPU: halted in hlt, its idle task
    assert g.cmd("uptime").startswith("up ")


def test_top_draws_and_exits_on_sigint(boot):
    g = boot(smp=1)
    g.work("chain 6")
    p = subprocess.Popen([GDBSAMPLE, "top", "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "200"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # SIGINT once two frames were drawn (a loaded host draws them late: wait for them, at most
    # 60 s -- a bound on a hang, not a bar), so the frames counted below are top's, not the clock's
    import select
    seen, deadline = b"", time.monotonic() + 60
    while seen.count(b"gdbsample top:") < 2 and time.monotonic() < deadline and p.poll() is None:
        if select.select([p.stdout], [], [], 1.0)[0]:
            seen += os.read(p.stdout.fileno(), 65536)
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=20)
    out, err = (seen + rest).decode(errors="replace"), err.decode(errors="replace")
    assert p.returncode == 0, err
    assert out.count("gdbsample top:") >= 2, out
    assert "chain6" in out and "Hz achieved" in out and "pause p50" in out
    assert "\033" not in out      # a pipe is no terminal: frames appended, no escape sequences (issue 22)
    assert g.cmd("uptime").startswith("up ")


def top_on_pty(g, term, cols, rows):
    """gdbsample top on a pseudo-terminal of cols x rows with TERM=term until it drew 3 frames
    (at most 60 s: no wall-clock bar, only a bound on a hang): its output."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM=term)
    env.pop("COLUMNS", None)
    p = subprocess.Popen([GDBSAMPLE, "top", "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "200"],
                         stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    import select
    chunks, deadline = [], time.monotonic() + 60
    try:
        while time.monotonic() < deadline and b"".join(chunks).count(b"gdbsample top:") < 3:
            if select.select([master], [], [], 0.1)[0]:
                chunks.append(os.read(master, 65536))
    finally:
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
        while select.select([master], [], [], 0.2)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
    assert p.returncode == 0, err
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_top_honours_dumb_terminals_and_width(boot):
    """issue 22: top drew ANSI escapes on TERM=dumb and ignored the terminal's width. (A terminal
    that is not dumb gets the full-screen view: tests/sampler/test_top_view.py, under tmux.)"""
    g = boot(smp=1)
    g.work("chain 6")
    out = top_on_pty(g, "dumb", 40, 10)
    assert out.count("gdbsample top:") >= 2 and "\033" not in out, out
    assert max(len(line) for line in out.split("\n")) <= 40, out
    assert g.cmd("uptime").startswith("up ")


class UnixGuest(Guest):
    """A guest whose gdbstub listens on a unix socket instead of a TCP port."""

    def __init__(self, path, **kw):
        super().__init__(conftest.KERNEL, gdb=False, **kw)
        self.gdb_path = path

    def command_line(self):
        return super().command_line() + ["-gdb", f"unix:{self.gdb_path},server=on,wait=off"]


@pytest.mark.qemu
def test_unix_socket_transport(tmp_path):
    path = str(tmp_path / "gdb.sock")
    g = UnixGuest(path, smp=1)
    try:
        g.start()
        g.work("chain 6")
        r = subprocess.run([GDBSAMPLE, "-u", path, "-e", conftest.KERNEL, "-d", "1", "-f", "folded"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert "chain6" in r.stdout and "loopback" not in r.stderr
        assert g.cmd("uptime").startswith("up ")
    finally:
        g.stop()  # by its pid


@conftest.ON_EACH_QEMU
def test_guest_paused_before_gdbsample_came(boot, qemu):
    """A guest left paused by an earlier client is paused by someone else, as one an operator
    paused (issue 22: never resume a VM gdbsample did not stop). QEMU 7.2 tells: it greets a client
    whose connection stopped a running VM, and greets none here -- gdbsample says so, samples
    nothing, exits 0 and leaves it paused. QEMU 10.0 greets nobody, so with -p gdbsample cannot
    tell (docs/attach.md) and, as before, samples and resumes it."""
    g = boot(smp=1, qmp=True)
    with socket.create_connection(("127.0.0.1", g.gdbport), timeout=5):
        for _ in range(100):  # connecting stops the guest (7.2 also greets with a stop reply, 10.0 not)...
            if qmp_status(g.qmp_path) == "paused":
                break
            time.sleep(0.05)
    time.sleep(0.3)
    assert qmp_status(g.qmp_path) == "paused"  # ...and closing the connection did not resume it
    r = run(g, "-d", "1")
    assert r.returncode == 0, r.stderr
    if qemu == "7.2":
        assert "the VM was paused before gdbsample came: it is left so" in r.stderr, r.stderr
        assert "left the VM stopped as we found it" in r.stderr, r.stderr
        time.sleep(0.3)
        assert qmp_status(g.qmp_path) == "paused"
        conftest.qmp(g.qmp_path, "cont")
    else:
        assert "before gdbsample came" not in r.stderr, r.stderr
    assert conftest.wait_running(g.qmp_path) == "running"
    assert g.cmd("uptime").startswith("up ")


def frame(payload):
    """One RSP packet: $payload#checksum."""
    return b"$" + payload + b"#%02x" % (sum(payload) % 256)


@conftest.ON_EACH_QEMU
def test_guard_bytes_resume_in_every_state(boot):
    """The guard's last words, "+ 0x03 $c#63", resume the guest whatever state a dying
    gdbsample left the connection in -- including just after its own D;1, where QEMU 7.2
    would crash on D;1 or `?` (see sampler/guard.c)."""
    g = boot(smp=1, qmp=True)
    guard = b"+\x03$c#63"

    def settle(s):
        s.settimeout(0.3)
        try:
            while s.recv(4096):
                pass
        except socket.timeout:
            pass

    with socket.create_connection(("127.0.0.1", g.gdbport), timeout=5) as s:
        settle(s)
        s.sendall(b"$g#67")  # stopped, reply pending
        settle(s)
        s.sendall(guard)
        assert wait_running(g.qmp_path) == "running"
        s.sendall(guard)  # running, nothing pending (as just after `c`)
        assert wait_running(g.qmp_path) == "running"
        # a write that raced the watchdog's rescue lands on the running VM; gdbsample then sends
        # the same bytes (gdb_resync): a 0x03 that stopped it, a `c` or a batch whose '$' stopped
        # a 7.2 VM and left the rest as noise
        batch = b"".join(frame(p) for p in (b"Hg1", b"g", b"m0,40"))
        for late in (b"\x03", b"$c#63", batch):
            s.sendall(late)
            time.sleep(0.05)
            s.sendall(guard)
            assert wait_running(g.qmp_path) == "running", late
            settle(s)
        s.sendall(b"\x03$D;1#b0")  # detached, running, reply pending
        settle(s)
        s.sendall(guard)
        assert wait_running(g.qmp_path) == "running"
    assert g.proc.poll() is None, "QEMU died"
    assert wait_running(g.qmp_path) == "running"
    assert g.cmd("uptime").startswith("up ")


def test_host_port_form(boot):
    """-H HOST:PORT reaches the same stub as -p; a loopback name draws no warning."""
    g = boot(smp=1)
    g.work("chain 6")
    for host in ("127.0.0.1", "localhost"):
        r = subprocess.run([GDBSAMPLE, "-H", f"{host}:{g.gdbport}", "-e", conftest.KERNEL, "-d", "0.5",
                            "-f", "folded"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert "chain6" in r.stdout and "loopback" not in r.stderr, r.stderr
