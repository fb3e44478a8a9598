#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""regen_golden_visual.py: rebuild the speedscope and flame graph golden files after an intended
change (and, with --elf, the test ELF and the capture synthesized against it); also the
perf-script text of the same capture.

    /usr/bin/python3 tests/analysis/regen_golden_visual.py [--elf]

Inputs (committed): data/sf_tiny.c -> data/sf_tiny.elf (only rebuilt with --elf: a new compiler
changes its addresses), data/sf_small.cap (synthesized here from sf_tiny.elf), data/fg_base.folded
and data/fg_new.folded (hand-written). Goldens: data/sf_small.json, data/fg_base.svg,
data/fg_diff.svg, data/sf_small.perf-script. regen_golden.py runs this too; the tests import it for the sample pattern.
"""
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "analysis", "gdbsample-analyze")
ELF = os.path.join(DATA, "sf_tiny.elf")
CAPTURE = os.path.join(DATA, "sf_small.cap")

sys.path.insert(0, HERE)
import capgen  # noqa: E402

FLAG_IDLE, FLAG_IRQOFF, FLAG_USER, FLAG_PARTIAL = 1, 2, 4, 8  # sample flags (capture-format.md)


def write_capture(path, samples, ncpus, summary=True):
    """samples: [(t_ns, cpu, flags, [pc, ret...])] in time order -> a capture (capgen's writer),
    4 samples a chunk, then a summary chunk unless summary=False."""
    idle = sum(1 for sm in samples if sm[2] & FLAG_IDLE)
    capgen.write(path, samples, {"samples": len(samples) - idle, "idle": idle, "dropped": 0}
                 if summary else None, per_chunk=4, ncpus=ncpus, rate_hz=100,
                 klo=0x400000, khi=0x4fffff)


def elf_addresses(elf_path):
    """-> ({function: start}, {(caller, callee): return address}) from the ELF's symbols and the
    x86 `call rel32` (0xe8) instructions in each function."""
    from elftools.elf.elffile import ELFFile
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        code, base = text.data(), text["sh_addr"]
        funcs = {s.name: (s["st_value"], s["st_size"])
                 for s in elf.get_section_by_name(".symtab").iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC"}
    by_start = {a: n for n, (a, _) in funcs.items()}
    rets = {}
    for name, (start, size) in funcs.items():
        for off in range(start - base, start - base + size - 4):
            if code[off] == 0xE8:
                ret = base + off + 5
                target = ret + struct.unpack_from("<i", code, off + 1)[0]
                if target in by_start:
                    rets.setdefault((name, by_start[target]), ret)
    return {n: a for n, (a, _) in funcs.items()}, rets


def small_samples(elf_path):
    """The fixed sample pattern of sf_small.cap: 2 vCPUs at 100 Hz with jitter; vCPU 1 is first
    seen at the third stop; idle, irq-off, partial, user-mode and unknown-address samples."""
    start, ret = elf_addresses(elf_path)
    r_work = ret[("_start", "work")]
    r_idle = ret[("_start", "idle_loop")]
    r_spin = ret[("work", "spin")]
    r_copy = ret[("work", "copy_words")]
    stacks = {
        "spin": [start["spin"] + 0x10, r_spin, r_work],
        "copy": [start["copy_words"] + 0x12, r_copy, r_work],
        "work": [start["work"] + 0x4, r_work],
        "idle": [start["idle_loop"] + 0x5, r_idle],
        "user": [0x7F0000001234],
        "unknown": [0x12345678, r_work],
        "partial": [start["spin"] + 0x20, r_spin],
    }
    cpu0 = "spin spin copy spin work spin copy copy spin idle idle spin user spin unknown spin".split()
    cpu1 = "idle idle spin spin partial copy spin idle spin copy spin spin spin idle".split()
    samples = []
    t = 1000000
    for i in range(len(cpu0)):
        t += 10000000 + (i * 7919) % 300000     # 10 ms, jittered
        for cpu, pattern in ((0, cpu0), (1, cpu1)):
            j = i - 2 if cpu == 1 else i
            if not 0 <= j < len(pattern):
                continue
            kind = pattern[j]
            flags = {"idle": FLAG_IDLE, "user": FLAG_USER, "partial": FLAG_PARTIAL,
                     "copy": FLAG_IRQOFF}.get(kind, 0)
            samples.append((t, cpu, flags, stacks[kind]))
    return samples


def build_elf():
    subprocess.run(["gcc", "-g", "-O0", "-fno-pie", "-no-pie", "-nostdlib", "-static",
                    "-fno-asynchronous-unwind-tables", "-fdebug-prefix-map=%s=." % DATA,
                    "-Wl,--build-id=none", "-o", ELF, "sf_tiny.c"], cwd=DATA, check=True)


def tool(*args):
    """Runs gdbsample-analyze; -> stdout bytes (exit status 0 required)."""
    return subprocess.run([sys.executable, TOOL] + list(args), check=True,
                          stdout=subprocess.PIPE).stdout


GOLDEN = {
    # golden file: gdbsample-analyze arguments (paths relative to data/)
    "sf_small.json": ["speedscope", "sf_small.cap", "-e", "sf_tiny.elf"],
    "fg_base.svg": ["flamegraph", "fg_base.folded", "--title", "fg base"],
    "fg_diff.svg": ["flamegraph", "fg_new.folded", "--diff", "fg_base.folded", "--width", "900"],
    "sf_small.perf-script": ["perf-script", "sf_small.cap", "-e", "sf_tiny.elf"],
}


def golden_args(name):
    """The command line of a golden file with absolute paths (runs from any directory)."""
    return [os.path.join(DATA, a) if os.path.exists(os.path.join(DATA, a)) else a
            for a in GOLDEN[name]]


def main():
    if "--elf" in sys.argv[1:]:
        build_elf()
    write_capture(CAPTURE, small_samples(ELF), ncpus=2)
    for name in GOLDEN:
        data = tool(*golden_args(name))
        with open(os.path.join(DATA, name), "wb") as f:
            f.write(data)
        print("wrote", os.path.join("tests/analysis/data", name))


if __name__ == "__main__":
    main()
