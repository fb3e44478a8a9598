#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""regen_golden.py: rebuild the analysis golden inputs and outputs after an intended change.

  /usr/bin/python3 tests/analysis/regen_golden.py          # captures + golden outputs
  /usr/bin/python3 tests/analysis/regen_golden.py --elf    # also rebuild data/tiny.elf (gcc)

Inputs (committed, small): data/tiny.elf (from data/tiny.c), data/tiny.map (`nm` of it),
data/sample.cap and data/sample2.cap (synthetic, format version 1, written by capgen from a fixed
seed, with the real call sites of tiny.elf as return addresses), data/sample_v2.cap (version 2:
also samples taken in an interrupt, whose interrupted pc is an exact frame -- one at a function's
first byte -- a known KASLR offset of 0, _stext, methods and the newer summary keys),
data/sample_v3.cap (version 3: the same kind of samples, each with the Linux task current on its
vCPU -- idle ones swapper/N, one in twenty without a task record --, user-mode samples among them,
and the sampler's task counters).
Outputs: data/golden/<case>, one per CASES row, each the stdout of `gdbsample-analyze ARGS` (tests/analysis/test_analysis_golden.py compares).
Review `git diff tests/analysis/data` before committing.
"""
import os
import random
import re
import subprocess
import sys

import capgen

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")
GOLDEN = os.path.join(DATA, "golden")
TOOL = os.path.join(ROOT, "analysis", "gdbsample-analyze")
ELF = os.path.join(DATA, "tiny.elf")
MAP = os.path.join(DATA, "tiny.map")
CAP = os.path.join(DATA, "sample.cap")
CAP2 = os.path.join(DATA, "sample2.cap")
CAP_V2 = os.path.join(DATA, "sample_v2.cap")
CAP_V3 = os.path.join(DATA, "sample_v3.cap")

# golden file -> arguments (paths relative to tests/analysis/data, the tests' working directory)
CASES = {
    "fold.folded": ["fold", "sample.cap", "-e", "tiny.elf"],
    "fold_group.folded": ["fold", "sample.cap", "-e", "tiny.elf", "--group-by-cpu"],
    "fold_idle_cpu1.folded": ["fold", "sample.cap", "-e", "tiny.elf", "--idle", "--cpu", "1"],
    "fold_window.folded": ["fold", "sample.cap", "-e", "tiny.elf", "--from", "500ms", "--until", "1000000000"],
    "fold_nosyms.folded": ["fold", "sample.cap", "--group-by-cpu"],
    "fold_lines.folded": ["fold", "sample.cap", "-e", "tiny.elf", "--lines"],
    "fold_inline.folded": ["fold", "sample.cap", "-e", "tiny.elf", "--inline"],
    "fold_inline_lines.folded": ["fold", "sample.cap", "-e", "tiny.elf", "--inline", "--lines"],
    "report.txt": ["report", "sample.cap", "-e", "tiny.elf"],
    "report_idle_chains2.txt": ["report", "sample.cap", "-e", "tiny.elf", "--idle", "--chains", "2"],
    "report_map.txt": ["report", "sample.cap", "-e", "tiny.map"],
    "diff.folded": ["diff", "sample.cap", "sample2.cap", "-e", "tiny.elf", "--no-table"],
    "diff_raw.folded": ["diff", "sample.cap", "sample2.cap", "-e", "tiny.elf", "--no-table", "--no-normalize"],
    "diff_movers.txt": ["diff", "sample.cap", "sample2.cap", "-e", "tiny.elf", "--table", "--top", "5"],
    "info.txt": ["info", "sample.cap"],
    "fold_v2.folded": ["fold", "sample_v2.cap", "-e", "tiny.elf"],
    "fold_v2_lines.folded": ["fold", "sample_v2.cap", "-e", "tiny.elf", "--lines", "--inline"],
    "report_v2.txt": ["report", "sample_v2.cap", "-e", "tiny.elf", "--chains", "20"],
    "info_v2.txt": ["info", "sample_v2.cap"],
    "fold_v3.folded": ["fold", "sample_v3.cap", "-e", "tiny.elf"],
    "fold_v3_comm_pid.folded": ["fold", "sample_v3.cap", "-e", "tiny.elf", "--task-format", "comm-pid",
                                "--group-by-cpu", "--idle"],
    "report_v3_by_task.txt": ["report", "sample_v3.cap", "-e", "tiny.elf", "--by-task", "--chains", "4"],
    "info_v3.txt": ["info", "sample_v3.cap"],
    "info.json": ["info", "--json", "sample.cap"],          # docs/json.md, "info"
    "info_v3.json": ["info", "--json", "sample_v3.cap"],
}


def build_elf():
    subprocess.run(["gcc", "-g", "-O1", "-ffreestanding", "-fno-pie", "-no-pie", "-nostdlib", "-static",
                    "-mcmodel=kernel", "-fno-asynchronous-unwind-tables", "-Wl,--build-id=none",
                    "-Wl,-Ttext=0xffffffff80100000", "-Wl,-e,start_kernel", "-fdebug-prefix-map=%s=." % DATA,
                    "-o", "tiny.elf", "tiny.c"], check=True, cwd=DATA)
    nm = subprocess.run(["nm", "-n", "tiny.elf"], cwd=DATA, check=True,
                        capture_output=True, text=True).stdout
    with open(MAP, "w") as f:
        f.write(nm)


def elf_facts():
    """Symbol starts, the return address after each call (caller -> {callee: ret}), hlt's end."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", ELF], check=True, capture_output=True,
                         text=True).stdout
    starts, calls, fn, prev_call, after_hlt = {}, {}, None, None, None
    for line in dis.splitlines():
        m = re.match(r"([0-9a-f]+) <(\w+)>:", line)
        if m:
            fn = m.group(2)
            starts[fn] = int(m.group(1), 16)
            continue
        m = re.match(r"\s*([0-9a-f]+):\s*(\w+)\s*(.*)", line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        if prev_call:
            calls.setdefault(prev_call[0], {})[prev_call[1]] = addr
            prev_call = None
        if prev_call is None and after_hlt == "next":
            after_hlt = addr
        if m.group(2) == "call":
            callee = re.search(r"<(\w+)>", m.group(3)).group(1)
            prev_call = (fn, callee)
        if m.group(2) == "hlt":
            after_hlt = "next"
    return starts, calls, after_hlt


def make_samples(seed, weights):
    """~200 samples over 2 s on 2 vCPUs at 100 Hz, stacks drawn with the given weights."""
    st, calls, after_hlt = elf_facts()
    rk = calls["start_kernel"]
    stacks = {  # name -> (flags, frames leaf first[, exact frame indexes])
        "a_in_middle": (0, [st["leaf_a"] + 0x10, calls["middle"]["leaf_a"], rk["middle"]]),
        "a_direct": (0, [st["leaf_a"] + 0x14, rk["leaf_a"]]),
        "b_mix": (2, [st["leaf_b"] + 0x12, calls["middle"]["leaf_b"], rk["middle"]]),
        "middle_mix": (0, [st["middle"] + 0x20, rk["middle"]]),
        "unknown": (8, [0xffffffff8dead000, calls["middle"]["leaf_a"], rk["middle"]]),
        "user": (4, [0x401000]),
        # v2: leaf_b runs in an interrupt taken at middle's first byte (frame 1 is exact: named
        # middle, where address - 1 would say leaf_b), ...
        "irq_at_entry": (2, [st["leaf_b"] + 0x12, st["middle"], rk["middle"]], {1}),
        # ... in middle's body (both rules agree on the name, the offset is the pc's), ...
        "irq_in_body": (2, [st["leaf_b"] + 0x8, st["middle"] + 0x20, rk["middle"]], {1}),
        # ... and at leaf_a's first byte, the text's first: address - 1 is in no function at all
        "irq_at_text": (2, [st["leaf_b"] + 0x4, st["leaf_a"], calls["middle"]["leaf_a"], rk["middle"]],
                        {1}),
    }
    rnd = random.Random(seed)
    names = sorted(weights)
    out, idle = [], 0
    for k in range(100):
        t = 5_000_000 + k * 20_000_000 + rnd.randrange(1000)
        for cpu in (0, 1):
            if cpu == 1 and rnd.random() < 0.4:
                out.append((t, cpu, 1, (after_hlt,)))
                idle += 1
                continue
            name = rnd.choices(names, [weights[n] for n in names])[0]
            flags, frames, *exact = stacks[name]
            out.append((t, cpu, flags, tuple(frames)) + tuple(exact))
    summary = {"duration_ns": 2_010_000_000, "vcpus": 2, "rate_requested_hz": 100,
               "rate_achieved_hz": 99.5, "stops": 100, "samples": len(out) - idle, "idle": idle,
               "dropped": 2, "pause_p50_us": 180, "pause_p99_us": 420, "pause_max_us": 900,
               "stopped_fraction": 0.019, "unwind_stop_end": len(out) - 1}
    return out, summary


W1 = {"a_in_middle": 40, "a_direct": 10, "b_mix": 25, "middle_mix": 15, "unknown": 5, "user": 5}
W2 = {"a_in_middle": 20, "a_direct": 10, "b_mix": 45, "middle_mix": 15, "unknown": 5, "user": 5}
W3 = dict(W1, irq_at_entry=10, irq_in_body=5, irq_at_text=5)
# the summary keys gdbsample writes since format version 2 (sampler/stats.c, locate.c)
SUMMARY_V2 = {"image": "tiny.elf (ELF, 4 functions)", "unwind": "orc,fp", "orc": "orc v6, 42 entries",
              "kaslr_offset": "0x0", "kaslr_how": "matched kernel text", "frames_fp": 40, "frames_cfi": 0,
              "frames_orc": 301, "unwind_stop_user": 7, "unwind_stop_no-info": 0, "unwind_stop_bad-rule": 0,
              "unwind_stop_orc_end": 150, "unwind_stop_fp_end": 30, "unwind_stop_fp_max-frames": 2,
              "unwind_stop_none_user": 7, "text_reads": 3}


def write_v2(path, seed, weights):
    """sample_v2.cap: the version 2 capture of gdbsample with tiny.elf (a KASLR offset of 0,
    found; _stext at the text's start; unwound by ORC then frame pointers)."""
    st = elf_facts()[0]
    s, summary = make_samples(seed, weights)
    summary.update(SUMMARY_V2)
    capgen.write(path, s, summary, per_chunk=40, ncpus=2, rate_hz=100, version=2, kaslr_offset=0,
                 stext=st["leaf_a"], methods=capgen.METHOD_FP | capgen.METHOD_ORC)


# Linux tasks of sample_v3.cap: (pid, tgid, comm); two threads of one process share a name
TASKS_V3 = [(1234, 1234, b"bash"), (1301, 1300, b"worker"), (1302, 1300, b"worker"), (42, 42, b"kworker/0:1")]
# the summary keys gdbsample writes since format version 3 (sampler/stats.c, locate.c)
SUMMARY_V3 = {"task_os": "linux", "task_layout": "BTF, 6.1 layout (current_task)", "task_verified": 150,
              "task_hits": 30, "task_misses": 6, "task_renamed": 1, "task_lost": 0, "task_reads": 372,
              "task_bytes": 107136}


def write_v3(path, seed, weights):
    """sample_v3.cap: sample_v2.cap's kind of capture in version 3, with task_os linux and a task
    record on every sample but one in twenty (an idle one names swapper/N, pid 0)."""
    st = elf_facts()[0]
    s, summary = make_samples(seed, weights)
    summary.update(SUMMARY_V2)
    summary.update(SUMMARY_V3)
    rnd = random.Random(seed)
    out = []
    for t, cpu, flags, frames, *exact in s:
        if flags & 1:
            task = (0, 0, 0xffffffff82a12940 + 0x1000 * cpu, b"swapper/%d" % cpu)
        elif rnd.random() < 0.05:
            task = None
        else:
            pid, tgid, comm = rnd.choice(TASKS_V3)
            task = (pid, tgid, 0xffff888003000000 + 0x2000 * pid, comm)
        out.append((t, cpu, flags, frames, exact[0] if exact else (), task))
    capgen.write(path, out, summary, per_chunk=40, ncpus=2, rate_hz=100, version=3, kaslr_offset=0,
                 stext=st["leaf_a"], methods=capgen.METHOD_FP | capgen.METHOD_ORC,
                 task_os=capgen.TASK_OS_LINUX)


def main():
    if "--elf" in sys.argv[1:]:
        build_elf()                                           # tiny.elf and tiny.map
    for path, seed, w in ((CAP, 6, W1), (CAP2, 7, W2)):       # the synthetic captures
        s, summary = make_samples(seed, w)
        capgen.write(path, s, summary, per_chunk=40, ncpus=2, rate_hz=100)
    write_v2(CAP_V2, 8, W3)                                   # the version 2 capture
    write_v3(CAP_V3, 9, W3)                                   # the version 3 capture (tasks)
    os.makedirs(GOLDEN, exist_ok=True)
    for name, args in CASES.items():                          # one golden output per case
        r = subprocess.run([TOOL] + args, cwd=DATA, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("regen_golden: %s failed (%d): %s" % (name, r.returncode, r.stderr.strip()))
        with open(os.path.join(GOLDEN, name), "w") as f:
            f.write(r.stdout)
        print("wrote", os.path.relpath(os.path.join(GOLDEN, name), ROOT))
    import regen_golden_visual                                # speedscope and flame graph goldens
    regen_golden_visual.main()


if __name__ == "__main__":
    main()
