# SPDX-License-Identifier: MIT
"""pmu_persona.py: make the guest's CPUID lie the way a hypervisor can, with no guest change.

By hand (GDB on QEMU's gdbstub, the kernel ELF loaded for its symbols):

    gdb -nx build/kernel.elf -ex 'target remote 127.0.0.1:1234' \\
        -x gdbscripts/pmu_persona.py -ex 'persona intel-v2' -ex continue

then, in the guest's shell, `lscpu` and `profile 200` show what the kernel decides. Interrupt
GDB (Ctrl-C), `persona off`, `detach` to leave the VM running with an honest CPUID again.
`persona list` prints the personas. Apply a persona before the guest's first `lscpu` or
`profile`: the kernel probes its PMU once and keeps the verdict.

How: every CPUID instruction in the kernel's .text is found from the ELF (byte pattern 0F A2,
confirmed by disassembling its function from the start, so it is a real instruction
boundary). A breakpoint on each records the requested leaf/subleaf per vCPU; a breakpoint on
the next instruction rewrites EAX..EDX for the leaves the persona changes. Both continue by
themselves, so the guest only sees slower CPUIDs. Personas rewrite leaves 0 (vendor, max
leaf), 0xA (Intel perfmon), 0x40000000 (hypervisor vendor), 0x80000000 (max extended leaf),
0x80000001 (AMD PerfCtrExtCore) and 0x80000022 (AMD PerfMonV2).
"""
import gdb

try:
    from elftools.elf.elffile import ELFFile
except ImportError:  # GDB's Python is Debian's python3: apt-get install python3-pyelftools
    ELFFile = None

MASK32 = 0xFFFFFFFF
REGS = ("rax", "rbx", "rcx", "rdx")


def vendor_words(s):
    """A 12-byte vendor string as three little-endian words, in string order."""
    b = s.encode().ljust(12, b"\0")
    return tuple(int.from_bytes(b[i:i + 4], "little") for i in (0, 4, 8))


def intel_vendor(regs):
    w0, w1, w2 = vendor_words("GenuineIntel")  # leaf 0 spells it in EBX, EDX, ECX
    return (max(regs[0], 0xA), w0, w2, w1)


def intel_pmu(version, gp, gp_width, fixed, fixed_width, fixed_mask=0):
    # CPUID.0AH (SDM vol. 2A): EAX version | GP counters | GP width | EBX vector length (7)
    eax = version | gp << 8 | gp_width << 16 | 7 << 24
    edx = (fixed | fixed_width << 5) if version >= 2 else 0
    return lambda regs: (eax, 0, fixed_mask, edx)


def set_ecx_bit(bit):
    return lambda regs: (regs[0], regs[1], regs[2] | 1 << bit, regs[3])


def hypervisor_vendor(s, max_leaf=0x40000001):
    w0, w1, w2 = vendor_words(s)  # leaf 0x40000000 spells it in EBX, ECX, EDX
    return lambda regs: (max_leaf, w0, w1, w2)


def raise_max(minimum):
    return lambda regs: (max(regs[0], minimum), regs[1], regs[2], regs[3])


# persona -> {leaf: rewrite(regs_after_cpuid) -> new regs}
PERSONAS = {
    "intel-v1": {0: intel_vendor, 0xA: intel_pmu(1, 2, 40, 0, 0)},
    "intel-v2": {0: intel_vendor, 0xA: intel_pmu(2, 4, 48, 3, 48)},
    "intel-v4": {0: intel_vendor, 0xA: intel_pmu(4, 4, 48, 3, 48)},
    "intel-v5": {0: intel_vendor, 0xA: intel_pmu(5, 8, 48, 4, 48, fixed_mask=0xF)},
    "amd-perfctr-core": {0x80000001: set_ecx_bit(23)},
    "amd-perfmon-v2": {
        0x80000000: raise_max(0x80000022),
        0x80000001: set_ecx_bit(23),
        0x80000022: lambda regs: (1, 6, 0, 0),  # EAX[0] PerfMonV2, EBX[3:0] six core counters
    },
    "hv-no-pmu": {0: intel_vendor, 0xA: lambda regs: (0, 0, 0, 0),
                  0x40000000: hypervisor_vendor("KVMKVMKVM")},
}


def cpuid_sites():
    """Addresses of every CPUID instruction in the kernel's .text."""
    if ELFFile is None:
        raise gdb.GdbError("pmu_persona: needs python3-pyelftools in GDB's Python")
    path = gdb.current_progspace().filename
    if not path:
        raise gdb.GdbError("pmu_persona: load the kernel ELF first (gdb build/kernel.elf)")
    with open(path, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        base, data = text["sh_addr"], text.data()
    arch = gdb.selected_inferior().architecture()
    sites, i = [], data.find(b"\x0f\xa2")
    while i >= 0:
        addr = base + i
        if is_instruction(arch, addr):
            sites.append(addr)
        i = data.find(b"\x0f\xa2", i + 1)
    return sites


def is_instruction(arch, addr):
    """True if addr starts a `cpuid` when its function is disassembled from its entry."""
    block = gdb.block_for_pc(addr)
    while block is not None and block.function is None:
        block = block.superblock
    if block is None:
        return False
    pc = block.start
    while pc < addr:
        pc += arch.disassemble(pc)[0]["length"]
    return pc == addr and arch.disassemble(addr)[0]["asm"].startswith("cpuid")


class State:
    persona = None
    breakpoints = []
    pending = {}  # vCPU thread -> (leaf, subleaf) seen at the CPUID
    rewrites = 0


def reg(name):
    return int(gdb.parse_and_eval(f"${name}")) & MASK32


class CpuidEntry(gdb.Breakpoint):
    def stop(self):
        State.pending[gdb.selected_thread().num] = (reg("rax"), reg("rcx"))
        return False


class CpuidExit(gdb.Breakpoint):
    def stop(self):
        leaf, _ = State.pending.pop(gdb.selected_thread().num, (None, None))
        rewrite = PERSONAS.get(State.persona, {}).get(leaf)
        if rewrite:
            new = rewrite(tuple(reg(r) for r in REGS))
            for r, v in zip(REGS, new):
                gdb.execute(f"set ${r} = {v & MASK32:#x}", to_string=True)
            State.rewrites += 1
        return False


def persona_off():
    for b in State.breakpoints:
        if b.is_valid():
            b.delete()
    State.breakpoints, State.pending, State.persona = [], {}, None


class PersonaCommand(gdb.Command):
    """persona NAME | persona list | persona off: make the guest's CPUID claim a PMU persona."""

    def __init__(self):
        super().__init__("persona", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        arg = arg.strip()
        if arg in ("", "list"):
            for name, leaves in PERSONAS.items():
                print(f"{name:18} rewrites leaves " + ", ".join(f"{l:#x}" for l in sorted(leaves)))
            return
        if arg == "off":
            persona_off()
            print("persona off")
            return
        if arg not in PERSONAS:
            raise gdb.GdbError(f"persona: no persona {arg!r} (persona list)")
        persona_off()
        sites = cpuid_sites()
        if not sites:
            raise gdb.GdbError("persona: no cpuid instruction found in .text")
        for addr in sites:
            State.breakpoints.append(CpuidEntry(f"*{addr:#x}", internal=True))
            State.breakpoints.append(CpuidExit(f"*{addr + 2:#x}", internal=True))
        State.persona = arg
        print(f"persona {arg} armed on {len(sites)} cpuid sites", flush=True)


PersonaCommand()
