#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pmu_matrix.py: `make pmu-matrix`: boot every configuration and persona of
vm-configs/configs.toml, ask the kernel what it decides about its PMU, compare with the table.

For each row: boot (vm-configs), apply the CPUID persona through GDB if the row is a persona
(gdbscripts/pmu_persona.py), run `lscpu` and `profile 200`, and check the kernel's own words
against the row's expected `claimed`, `decision` and `source` patterns. The counting probe's
time is shown, never judged: it spins ~10 us of guest TSC, which under TCG is host time, so a
vCPU thread the host preempts mid-probe reads as a long probe (70 us seen on a loaded host).
Prints one table; exits 1 if any row FAILs, 2 on bad input.
KVM rows run only where /dev/kvm works (and the host has a PMU, for rows that need one);
otherwise they are listed as SKIP with the reason.
"""
import argparse
import fnmatch
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "vm-configs"))
import vmconfig  # noqa: E402
from guest import Guest, GuestError  # noqa: E402

PERSONA_SCRIPT = os.path.join(ROOT, "gdbscripts", "pmu_persona.py")


class Row:
    def __init__(self, cfg, persona=None):
        self.cfg, self.persona = cfg, persona
        spec = persona or cfg
        self.claimed_pat, self.decision_pat, self.source_pat = spec["claimed"], spec["decision"], spec["source"]
        self.hypervisor_pat = spec.get("hypervisor")
        self.claimed = self.decision = self.source = self.hypervisor = ""
        self.probe_ns = None
        self.result, self.problems = "", []

    @property
    def label(self):
        return (self.cfg["name"], self.persona["name"] if self.persona else "-")


def parse_lscpu(out, row):
    def line(key):
        m = re.search(rf"^{key}:\s+(.*)$", out, re.M)
        return m.group(1).strip() if m else ""
    row.claimed, row.decision, row.hypervisor = line("pmu claims"), line("profile"), line("hypervisor")
    m = re.search(r"^pmu probe:\s+(\d+) ns", out, re.M)
    row.probe_ns = int(m.group(1)) if m else None


def start_persona(g, name, kernel):
    gdb = subprocess.Popen(["gdb", "-batch", "-nx", kernel, "-ex", f"target remote 127.0.0.1:{g.gdbport}",
                            "-x", PERSONA_SCRIPT, "-ex", f"persona {name}", "-ex", "continue",
                            "-ex", "persona off", "-ex", "detach"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    seen = []
    for line in gdb.stdout:  # GDB prints "persona NAME armed on N cpuid sites" once it is set
        seen.append(line)
        if f"persona {name} armed" in line:
            return gdb
        if time.monotonic() > deadline:
            break
    stop_gdb(gdb)
    raise GuestError(f"persona {name} was not armed: {''.join(seen)[-500:]}")


def stop_gdb(gdb):
    """Interrupt GDB's `continue`; the script then removes the persona and detaches (VM runs)."""
    if gdb.poll() is None:
        gdb.send_signal(signal.SIGINT)
        try:
            gdb.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            gdb.kill()
            gdb.communicate()


def run_row(row, kernel, table_path):
    cfg = row.cfg
    boot_timeout = 120 if cfg["accel"] == "kvm" else 60  # nested KVM boots SeaBIOS slowly
    g = Guest(kernel, config=cfg["name"], table=table_path)
    gdb = None
    try:
        g.start(boot_timeout=boot_timeout)
        if row.persona:
            gdb = start_persona(g, row.persona["name"], kernel)
        parse_lscpu(g.cmd("lscpu", timeout=30), row)
        m = re.search(r"source (.+)$", g.cmd("profile 200", timeout=30), re.M)
        row.source = m.group(1).strip() if m else "(no profile header)"
    except GuestError as e:
        row.problems.append(str(e).splitlines()[0])
    finally:
        if gdb:
            stop_gdb(gdb)
        g.stop()
    for what, got, pat in (("claimed", row.claimed, row.claimed_pat), ("decision", row.decision, row.decision_pat),
                           ("source", row.source, row.source_pat)):
        if not fnmatch.fnmatchcase(got, pat):
            row.problems.append(f"{what} {got!r} does not match expected {pat!r}")
    if row.hypervisor_pat and not fnmatch.fnmatchcase(row.hypervisor, row.hypervisor_pat):
        row.problems.append(f"hypervisor {row.hypervisor!r} does not match expected {row.hypervisor_pat!r}")
    row.result = "FAIL" if row.problems else "PASS"


def skip_reason(cfg, tcg_only):
    if cfg["accel"] != "kvm":
        return ""
    if tcg_only:
        return "TCG rows only (--tcg-only; `make pmu-matrix` runs KVM rows where /dev/kvm works)"
    ok, why = vmconfig.kvm_usable()
    if not ok:
        return f"no usable KVM here ({why})"
    if cfg.get("requires") == "host-pmu":
        ok, why = vmconfig.host_has_pmu()
        if not ok:
            return why
    return ""


def verdict(row):
    if row.result == "SKIP":
        return "-"
    probe = f" (probe {row.probe_ns / 1000:.1f} us)" if row.probe_ns else ""
    return (row.decision.split(": MSR")[0] if row.decision else "?") + probe


def print_table(rows):
    cols = ["CONFIGURATION", "PERSONA", "CLAIMED", "PROBE VERDICT", "PROFILE SOURCE", "EXPECTED", "RESULT"]
    data = [[r.label[0], r.label[1], r.claimed or "-", verdict(r), r.source or "-",
             r.decision_pat if r.result != "SKIP" else "-", r.result] for r in rows]
    widths = [max(len(c), *(len(d[i]) for d in data)) for i, c in enumerate(cols)]
    for line in [cols] + data:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip())
    for r in rows:
        if r.result in ("FAIL", "SKIP"):
            for p in r.problems:
                print(f"{r.result} {r.label[0]} / {r.label[1]}: {p}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default=os.path.join(ROOT, "build", "kernel.elf"), help="the x86_64 kernel")
    ap.add_argument("--kernel-a64", default=os.path.join(ROOT, "build", "aarch64", "kernel.elf"),
                    help="the aarch64 kernel, for rows with arch = \"aarch64\"")
    ap.add_argument("--kernel-rv64", default=os.path.join(ROOT, "build", "riscv64", "kernel.elf"),
                    help="the riscv64 kernel, for rows with arch = \"riscv64\"")
    ap.add_argument("--table", default=vmconfig.TABLE)
    ap.add_argument("--tcg-only", action="store_true", help="list KVM rows as skipped (what `make test` runs)")
    ap.add_argument("--only", action="append", default=[], help="run only these rows (config or persona names)")
    a = ap.parse_args()
    for k in (a.kernel, a.kernel_a64, a.kernel_rv64):
        if not os.path.exists(k):
            sys.exit(f"pmu-matrix: {k} is missing (run `make kernel`)")
    try:
        table = vmconfig.load(a.table)
    except vmconfig.ConfigError as e:
        print(f"pmu-matrix: {e}", file=sys.stderr)
        return 2
    rows = [Row(c) for c in table["config"].values()]
    rows += [Row(table["config"][p["base"]], p) for p in table["persona"].values()]
    if a.only:
        unknown = set(a.only) - {n for r in rows for n in r.label}
        if unknown:
            print(f"pmu-matrix: no row named {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        rows = [r for r in rows if set(r.label) & set(a.only)]
    t0 = time.monotonic()
    for row in rows:
        why = skip_reason(row.cfg, a.tcg_only)
        if why:
            row.result, row.problems = "SKIP", [why]
            continue
        run_row(row, {"aarch64": a.kernel_a64, "riscv64": a.kernel_rv64}.get(row.cfg["arch"], a.kernel), a.table)
    print_table(rows)
    n = {k: sum(r.result == k for r in rows) for k in ("PASS", "FAIL", "SKIP")}
    print(f"pmu-matrix: {n['PASS']} PASS, {n['FAIL']} FAIL, {n['SKIP']} SKIP in {time.monotonic() - t0:.0f} s")
    return 1 if n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
