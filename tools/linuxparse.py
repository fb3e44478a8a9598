# SPDX-License-Identifier: MIT
"""linuxparse.py: parsers of what the Linux guests print -- /proc/kallsyms, /proc/modules, /proc/PID/stat, ttyS1's dumps.

Text or bytes in, results out: no guest, no file, so tests feed them literals.
"""
import gzip
import re

from linuxkernel import LinuxGuestError
from linuxinitramfs import KALLSYMS_END


def parse_kallsyms(text):
    """`addr type name [module]` lines -> {name: (addr, type)} (the first of duplicate names)."""
    syms = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] not in syms:
            syms[f[2]] = (int(f[0], 16), f[1])
    return syms


def parse_kallsyms_modules(text):
    """The module symbols of kallsyms text ("addr type name\t[module]") -> {module: {name: (addr,
    type)}} (the first of duplicate names within a module)."""
    mods = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[3].startswith("[") and f[3].endswith("]"):
            mods.setdefault(f[3][1:-1], {}).setdefault(f[2], (int(f[0], 16), f[1]))
    return mods


def parse_proc_modules(text):
    """/proc/modules ("name size refs deps state addr [taints]") -> {name: {size, refs, deps,
    state, addr}}; addr is 0 when the kernel hides it (kptr_restrict)."""
    mods = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1].isdigit():
            mods[f[0]] = {"size": int(f[1]), "refs": int(f[2]) if f[2].isdigit() else -1,
                          "deps": [d for d in f[3].split(",") if d and d != "-"], "state": f[4],
                          "addr": int(f[5], 16)}
    return mods


def split_kallsyms_dumps(data):
    """The maps in the bytes of ttyS1, in order: each is gzip bytes followed by the line
    "@@KALLSYMS-END <lines> <gzip bytes>@@". Returns [text bytes (no CR)]; a dump that does not
    gunzip or whose line count differs raises (the port was not raw, or bytes were lost)."""
    texts = []
    for m in re.finditer(re.escape(KALLSYMS_END.encode()) + rb" (\d+) (\d+)@@", data):
        lines, size = int(m.group(1)), int(m.group(2))
        try:
            text = gzip.decompress(data[m.start() - size:m.start()])
        except (OSError, EOFError) as e:  # e.g. the port was not raw: \n became \r\n
            raise LinuxGuestError(f"kallsyms dump {len(texts) + 1} from ttyS1 does not gunzip ({e}): "
                                  f"{size} bytes announced, {m.start()} received")
        got = text.count(b"\n")
        if got != lines:
            raise LinuxGuestError(f"kallsyms dump {len(texts) + 1} from ttyS1 has {got} lines, "
                                  f"the guest sent {lines}")
        texts.append(text.replace(b"\r", b""))
    return texts


def parse_stat(text):
    """/proc/PID/stat lines -> {pid: (utime, stime)} in clock ticks (fields 14 and 15). The comm
    field may hold spaces and parentheses: split after the last ')'."""
    times = {}
    for line in text.splitlines():
        head, _, rest = line.rpartition(")")
        f = rest.split()
        if head and len(f) > 12:
            times[int(head.split("(")[0])] = (int(f[11]), int(f[12]))
    return times
