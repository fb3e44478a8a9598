# SPDX-License-Identifier: MIT
"""entry.S's CFI leads GDB's DWARF unwinder to the interrupted code from every instruction."""
import json
import os
import re
import subprocess

import conftest
import pytest
from elftools.dwarf.callframe import FDE, RegisterRule
from elftools.elf.elffile import ELFFile
from guest import Guest

DRIVER = os.path.join(os.path.dirname(__file__), "entry_cfi_gdb.py")
BUILDS = {"nofp": conftest.KERNEL_NOFP, "fp": conftest.KERNEL}
# The interrupted function, its callers, and the task's outermost frame (a zero return address).
CHAIN = ["chain6", "chain5", "chain4", "chain3", "chain2", "chain1", "work_main", "task_entry"]
ROUNDS = 3  # timer interrupts stepped through per build
ERROR_CODE_VECTORS = {8, 10, 11, 12, 13, 14, 17, 21, 29, 30}  # CPU pushes an error code (SDM 6.13)
# DWARF register numbers of the x86-64 psABI (figure 3.36)
DW = {"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7, "r8": 8, "r9": 9,
      "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15, "rip": 16}
GPRS = [r for r in DW if r not in ("rsp", "rip")]


@pytest.fixture
def boot_elf():
    """boot_elf(kernel, smp=2) -> a started Guest of that ELF (conftest's boot fixture always
    boots kernel.elf); every guest is stopped by its pid at teardown."""
    guests = []

    def start(kernel, smp=2, **kw):
        if not os.path.exists(kernel):
            pytest.fail(f"{kernel} is missing: run `make kernel` (it builds both kernels)")
        g = Guest(kernel, smp=smp, **kw)
        guests.append(g)
        return g.start()

    yield start
    for g in guests:
        g.stop()


def run_driver(kernel, port, out, **env):
    """gdb -batch on kernel with entry_cfi_gdb.py; subprocess.run kills gdb by its pid on timeout."""
    env = dict(os.environ, CFI_PORT=str(port), CFI_OUT=str(out), **{k: str(v) for k, v in env.items()})
    r = subprocess.run(["gdb", "-batch", "-nx", kernel, "-x", DRIVER], env=env, capture_output=True,
                       text=True, timeout=60)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert r.returncode == 0 and rows, f"driver failed\nstdout:{r.stdout[-2000:]}\nstderr:{r.stderr[-3000:]}"
    return rows


def symbols(elf):
    return {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name}


def fdes(elf):
    """{start address: FDE} of .eh_frame."""
    entries = elf.get_dwarf_info().EH_CFI_entries()
    return {e.header["initial_location"]: e for e in entries if isinstance(e, FDE)}


def fde_of(by_start, syms, name):
    fde = by_start.get(syms[name])
    assert fde is not None, f"{name} has no FDE in .eh_frame"
    return fde


def disassemble(path, start, end):
    """[(address, mnemonic, operands)] of [start, end) by objdump."""
    cmd = ["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
           f"--stop-address={end:#x}", path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*([^#]*)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3).strip()))
    return insns


def rule_at(fde, pc):
    """The decoded CFI row in force at pc."""
    return [row for row in fde.get_decoded().table if row["pc"] <= pc][-1]


def check_against_pushes(path, fde, depth, ra, rsp):
    """Walks the function's instructions, tracking how far RSP is below the CFA and where each
    general register was first pushed, and checks the CFI row at every instruction against it.
    ra, rsp: the expected (RegisterRule type, offset) of RIP and RSP. Returns the instructions."""
    start = fde.header["initial_location"]
    insns = disassemble(path, start, start + fde.header["address_range"])
    saved = {}
    for pc, op, args in insns:
        row = rule_at(fde, pc)
        where = f"{pc:#x} {op} {args}"
        assert (row["cfa"].reg, row["cfa"].offset) == (DW["rsp"], depth), where
        assert (row[DW["rip"]].type, row[DW["rip"]].arg) == ra, where
        got_rsp = row.get(DW["rsp"])
        assert ((got_rsp.type, got_rsp.arg) if got_rsp else None) == rsp, where
        for reg in GPRS:
            got = row.get(DW[reg])
            if reg in saved:
                assert got and (got.type, got.arg) == (RegisterRule.OFFSET, saved[reg]), f"{where}: {reg}"
            else:  # untouched: same value, said or left to the default
                assert got is None or got.type == RegisterRule.SAME_VALUE, f"{where}: {reg}"
        reg = args[1:] if args.startswith("%") else None
        if op.startswith("push"):
            depth += 8
            if reg in GPRS and reg not in saved:  # a second push (the pair's RBP) is a copy
                saved[reg] = -depth
        elif op.startswith("pop"):
            depth -= 8
            saved.pop(reg, None)
        elif op == "add" and args.endswith(",%rsp"):
            depth -= int(args.split(",")[0].lstrip("$"), 16)
    return insns


@pytest.mark.slow  # ~9 s a build of gdb over every instruction: make test, not make check
@pytest.mark.parametrize("build", sorted(BUILDS))
def test_cfi_of_every_entry_stub_and_trap_common_matches_their_pushes(build):
    """Static: the exact state at every instruction of all 256 stubs (error-code vectors too,
    which no test can raise at will), trap_common and swtch."""
    path = BUILDS[build]
    with open(path, "rb") as f:
        elf = ELFFile(f)
        syms, by_start = symbols(elf), fdes(elf)
        iret_rules = dict(ra=(RegisterRule.OFFSET, -40), rsp=(RegisterRule.OFFSET, -16))
        for n in range(256):
            fde = fde_of(by_start, syms, f"vector{n}")
            assert b"S" in fde.cie.header["augmentation"], f"vector{n} is not a signal frame"
            insns = check_against_pushes(path, fde, 48 if n in ERROR_CODE_VECTORS else 40, **iret_rules)
            assert insns[-1][1] == "jmp" and len(insns) == (2 if n in ERROR_CODE_VECTORS else 3), insns
        fde = fde_of(by_start, syms, "trap_common")
        assert b"S" in fde.cie.header["augmentation"]
        insns = check_against_pushes(path, fde, 56, **iret_rules)
        assert insns[-1][1] == "iretq" and any(op == "call" for _, op, _ in insns)
        check_against_pushes(path, fde_of(by_start, syms, "swtch"), 8, ra=(RegisterRule.OFFSET, -8), rsp=None)


def frame_names(row):
    return [name for _, name, _ in row["frames"]]


def strip_inlined_top(row):
    """The row without the inlined frames GDB puts on top when a breakpoint address is also the
    start of an inlined call (sched_tick's first instruction is mycpu's, in kernel-nofp.elf)."""
    fr = row["frames"]
    while fr and fr[0][2] == "INLINE_FRAME":
        fr = fr[1:]
    return dict(row, frames=fr)


def ends_cleanly(row, named):
    """After the `named` frames comes nothing, or one frame at PC 0 (a zero return address:
    GDB shows it as `0x0 in ?? ()` and goes no further); no unwinder error on the way."""
    rest = row["frames"][named:]
    return "Backtrace stopped" not in row["bt"] and (rest == [] or (len(rest) == 1 and rest[0][0] == 0))


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_gdb_unwinds_to_the_chain_from_every_instruction_of_the_timer_entry(boot_elf, build, tmp_path):
    """ROUNDS timer interrupts of `work chain 6`, each stopped at every instruction of the
    vector stub and trap_common (and once inside trap): GDB's bt must read stub or
    trap_common (a signal frame), chain6..chain1, work_main, task_entry, then end; and the
    registers it unwinds for chain6 must be the ones the CPU interrupted."""
    g = boot_elf(BUILDS[build], smp=2)
    pid = g.work("chain 6")
    cpu = next(t["cpu"] for t in g.ps() if t["pid"] == pid)  # QEMU vCPU index == kernel cpu id
    rows = run_driver(BUILDS[build], g.gdbport, tmp_path / "steps.jsonl", CFI_CPU=cpu, CFI_ROUNDS=ROUNDS)

    with open(BUILDS[build], "rb") as f:
        elf = ELFFile(f)
        syms, by_start = symbols(elf), fdes(elf)
        tc, stub = fde_of(by_start, syms, "trap_common"), fde_of(by_start, syms, "vector240")
    stub_insns = disassemble(BUILDS[build], stub.header["initial_location"],
                             stub.header["initial_location"] + stub.header["address_range"])
    tc_insns = disassemble(BUILDS[build], tc.header["initial_location"],
                           tc.header["initial_location"] + tc.header["address_range"])
    call = next(i for i, (_, op, _) in enumerate(tc_insns) if op == "call")
    # every instruction from the stub's first to the call, and from the return address to iretq
    want = {"entry": [a for a, _, _ in stub_insns] + [a for a, _, _ in tc_insns[:call + 1]],
            "exit": [a for a, _, _ in tc_insns[call + 1:]]}

    for rnd in range(ROUNDS):
        mine = [r for r in rows if r["round"] == rnd]
        for phase in ("entry", "exit"):
            assert [r["pc"] for r in mine if r["phase"] == phase] == want[phase], f"round {rnd} {phase}"
        assert [r["phase"] for r in mine].count("callee") == 1
    for row in map(strip_inlined_top, rows):
        names, where = frame_names(row), f"round {row['round']} at {row['where']}:\n{row['bt']}"
        lead = ["sched_tick", "trap", "trap_common"] if row["phase"] == "callee" else [names[0]]
        assert names[:len(lead)] == lead and lead[-1] in ("vector240", "trap_common"), where
        assert row["frames"][len(lead) - 1][2] == "SIGTRAMP_FRAME", where  # the CIE's "S"
        assert names[len(lead):len(lead) + len(CHAIN)] == CHAIN, where
        assert ends_cleanly(row, len(lead) + len(CHAIN)), where
        # the interrupted context, unwound, is exactly what the CPU interrupted
        wrong = {k: (hex(v), hex(row["unwound"].get(k, -1))) for k, v in row["truth"].items()
                 if row["unwound"].get(k) != v}
        assert not wrong, f"{where}\n(truth, unwound) of {wrong}"
    print(f"\n{build}: {len(rows)} stops in {ROUNDS} timer interrupts, every one unwound to "
          f"{CHAIN[0]}..{CHAIN[-1]} with the interrupted registers exact")
    assert g.cmd("uptime").startswith("up ")  # detach resumed the VM


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_idle_stacks_end_cleanly_on_every_cpu(boot_elf, build, tmp_path):
    """The boot CPU's idle stack ends at boot_high (CFI: undefined return address), an AP's at
    ap_main (the trampoline's zero return address, inside the stack), bare or under a timer
    interrupt; a task's at task_entry (task_create's zero return address)."""
    g = boot_elf(BUILDS[build], smp=2)
    rows = run_driver(BUILDS[build], g.gdbport, tmp_path / "idle.jsonl", CFI_MODE="idle", CFI_STOPS=4)
    bottoms = {0: ["idle_loop", "kmain", "boot_high"], 1: ["idle_loop", "ap_main"]}
    seen = set()
    for row in rows:
        names = [n for n in frame_names(row) if n is not None]
        where = f"stop {row['stop']} cpu{row['cpu']}:\n{row['bt']}"
        assert names[-1] in ("boot_high", "ap_main", "task_entry"), where  # idle, or a task
        assert ends_cleanly(row, len(names)) and None not in frame_names(row)[:len(names)], where
        if row["end_slot"] is not None:  # a zero return address put there on purpose, in the stack
            lo, hi = row["stack"]
            assert lo <= row["end_slot"] < hi, f"{where}the walk's last return address was read at " \
                f"{row['end_slot']:#x}, outside the task's stack [{lo:#x}, {hi:#x})"
        if names[-len(bottoms[row["cpu"]]):] == bottoms[row["cpu"]]:
            seen.add(row["cpu"])
    assert seen == {0, 1}, "no idle stack seen on some vCPU"
    assert g.cmd("uptime").startswith("up ")
