# SPDX-License-Identifier: MIT
"""`panic` prints a symbolized backtrace through the shell; `poweroff` ends QEMU with 33."""
import re

import pytest
from guest import POWEROFF_STATUS, GuestError


def test_panic_backtrace_names_the_panic_command_and_its_callers(boot):
    g = boot(smp=2)
    g.send("panic\n")
    out = g.read_until("system halted", timeout=10)
    assert "PANIC: invalid opcode (vector 6, error code 0x0)" in out, out
    assert re.search(r"cpu \d+, task pid \d+ \(shell\)", out), out
    assert re.search(r"^rip [0-9a-f]{16} rsp", out, re.M)
    frames = re.findall(r"^  #(\d+) 0x([0-9a-f]+) (\S+)$", out, re.M)
    names = [f[2].split("+")[0] for f in frames]
    assert names[:3] == ["cmd_panic", "shell_exec", "shell_task"], names
    assert all(int(addr, 16) >> 63 for _, addr, _ in frames)  # upper-half kernel addresses
    # every CPU stopped: the VM no longer answers
    g.send("uptime\n")
    with pytest.raises(GuestError, match="timed out"):
        g.read_until("\nup ", timeout=1.5)


def test_poweroff_ends_qemu_with_documented_status(boot):
    g = boot(smp=2)
    g.send("poweroff\n")
    assert g.proc.wait(10) == POWEROFF_STATUS


def test_an_nmi_no_source_claims_panics_with_a_backtrace(boot):
    """QEMU's monitor `nmi` (sent through the gdbstub) raises an NMI on every CPU; no counter
    is armed, so the kernel must refuse to swallow it."""
    import subprocess
    g = boot(smp=2)
    r = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"target remote 127.0.0.1:{g.gdbport}",
                        "-ex", "monitor nmi", "-ex", "detach"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    out = g.read_until("system halted", timeout=10)
    assert "PANIC: NMI that no source claims (vector 2, error code 0x0)" in out, out
    assert re.search(r"^  #0 0x[0-9a-f]+ \S+", out, re.M), out
