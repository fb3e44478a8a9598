# SPDX-License-Identifier: MIT
"""guest.py: boot the test kernel under QEMU (TCG) and drive its serial shell.

Used by the system tests, the demo and the benchmarks. QEMU's serial port is a unix
socket that QEMU waits on (server=on,wait=on), so no boot output is ever lost; the
gdbstub listens on 127.0.0.1 only; QEMU is always stopped by its own pid. qemu="10.0" runs
bookworm-backports' QEMU unpacked beside the system's 7.2 (tools/qemu_versions.py): the command is
that binary itself, so the pid is still QEMU's.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vm-configs"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_versions  # noqa: E402
import vmconfig  # noqa: E402
from qemuguest import GuestError, QemuGuest, free_port, free_udp_ports, stop_qemu  # noqa: E402,F401

__all__ = ["DEFAULT_CONFIG", "Guest", "GuestError", "POWEROFF_STATUS", "POWEROFF_STATUS_A64", "PROMPT",
           "free_port", "free_udp_ports", "stop_qemu"]
PROMPT = "\n> "
DEFAULT_CONFIG = "tcg-qemu64"
POWEROFF_STATUS = 33  # isa-debug-exit: (0x10 << 1) | 1, written by the shell's `poweroff`
POWEROFF_STATUS_A64 = 0  # aarch64: `poweroff` is PSCI SYSTEM_OFF, after which QEMU exits 0
POWEROFF_STATUS_RV64 = 0  # riscv64: `poweroff` is SBI system_reset, OpenSBI's virt test finisher exits 0


class Guest(QemuGuest):
    """One QEMU process running build/kernel.elf, with its serial shell connected (tools/qemuguest.py:
    start, stop, the socket, logs)."""
    READY = PROMPT

    def __init__(self, kernel, smp=None, config=DEFAULT_CONFIG, gdb=True, qmp=False, extra=(), table=None,
                 net=None, qemu=None):
        """config: a row of vm-configs/configs.toml (its name); smp overrides its vCPU count.
        qemu: None or "7.2" (the system's), "10.0" (fetched on first use: start() raises GuestError
        when that fails, e.g. Debian's archive cannot be reached and nothing is cached).
        net: None (no NIC); "user": virtio-net on user networking, the UDP shell on
        127.0.0.1:udp_port and the netload sink (guest udp/9001) on 127.0.0.1:sink_port;
        "socket": virtio-net whose wire is UDP, QEMU on 127.0.0.1:frame_port sending each frame
        the guest transmits to 127.0.0.1:peer_port (bind that to receive them)."""
        if net not in (None, "user", "socket"):
            raise GuestError(f"net must be None, 'user' or 'socket', not {net!r}")
        if qemu not in (None,) + qemu_versions.VERSIONS:
            raise GuestError(f"qemu must be one of {', '.join(qemu_versions.VERSIONS)}, not {qemu!r}")
        super().__init__()
        self.qemu = qemu or qemu_versions.SYSTEM
        self.kernel = kernel
        rows = vmconfig.load(table or vmconfig.TABLE)["config"]
        if config not in rows:
            raise GuestError(f"no configuration named {config!r} in vm-configs/configs.toml")
        self.config = rows[config]
        self.smp = smp or self.config["smp"]
        self.arch = self.config.get("arch", "x86_64")
        self.want_gdb = gdb
        self.want_qmp = qmp
        self.extra = list(extra)
        self.net = net
        self.udp_port = self.sink_port = None    # net="user": host ends of the forwards
        self.frame_port = self.peer_port = None  # net="socket": QEMU's socket and where it sends

    # -- lifecycle ---------------------------------------------------------------------------
    def command_line(self):
        serial = os.path.join(self.dir, "serial.sock")
        gdb = None
        if self.want_gdb:
            self.gdbport = free_port()
            gdb = f"tcp:127.0.0.1:{self.gdbport}"
        if self.want_qmp:
            self.qmp_path = os.path.join(self.dir, "qmp.sock")
        net = []
        if self.net == "user":
            self.udp_port, self.sink_port = free_udp_ports(2)
            net = vmconfig.net_user(self.udp_port, self.sink_port)
        elif self.net == "socket":
            self.frame_port, self.peer_port = free_udp_ports(2)
            net = vmconfig.net_socket(self.peer_port, self.frame_port)
        return vmconfig.qemu_command(self.config, self.kernel, serial="unix:" + serial, gdb=gdb,
                                     qmp=self.qmp_path, smp=self.smp, extra=net + self.extra,
                                     qemu=self.qemu_prefix())

    def qemu_prefix(self):
        """The argv prefix of the chosen QEMU (fetching 10.0 when missing)."""
        try:
            return qemu_versions.command(self.qemu, arch=self.arch)
        except qemu_versions.QemuError as e:
            raise GuestError(str(e)) from e

    # -- serial shell ------------------------------------------------------------------------
    def cmd(self, line, timeout=10):
        """Runs one shell command and returns its output (without the echo and prompt)."""
        self.send(line + "\n")
        out = self.read_until(PROMPT, timeout)
        out = out[: -len(PROMPT)]
        echo, _, rest = out.partition("\n")
        if echo.strip() != line.strip()[: len(echo.strip())]:
            raise GuestError(f"unexpected echo {echo!r} for {line!r}")
        return rest if rest.endswith("\n") or not rest else rest + "\n"

    # -- helpers for common commands ---------------------------------------------------------
    def work(self, args):
        """Starts `work ARGS` and returns the new task's pid."""
        out = self.cmd("work " + args)
        m = re.search(r"work: pid (\d+) ", out)
        if not m:
            raise GuestError(f"work {args} did not start: {out!r}")
        return int(m.group(1))

    def cpus(self):
        """Parses `cpus`: (uptime_ms, {cpu: ticks}, online, total)."""
        out = self.cmd("cpus")
        m = re.search(r"uptime (\d+) ms, (\d+) of (\d+) cpus online", out)
        ticks = {int(a): int(b) for a, b in re.findall(r"^\s*(\d+)\s+\d+\s+(\d+)\s+-?\d+ ", out, re.M)}
        return int(m.group(1)), ticks, int(m.group(2)), int(m.group(3))

    def vcpu(self, cpu):
        """The QEMU vCPU index of kernel cpu CPU: its hardware id from `cpus` (APIC id, MPIDR
        affinity, hart id -- each equal to the vCPU index on QEMU's default topologies). The two
        differ on riscv64, where the hart that wins OpenSBI's boot lottery becomes cpu0."""
        out = self.cmd("cpus")
        ids = {int(a): int(b) for a, b in re.findall(r"^\s*(\d+)\s+(\d+)\s+\d+\s+-?\d+ ", out, re.M)}
        if cpu not in ids:
            raise GuestError(f"cpus lists no cpu {cpu}: {out!r}")
        return ids[cpu]

    def ps(self):
        """Parses `ps`: list of dicts with pid, cpu, state, ticks, name, what."""
        rows = []
        for line in self.cmd("ps").splitlines()[1:]:
            f = line.split(None, 6)
            if len(f) >= 6:
                rows.append({"pid": int(f[0]), "cpu": int(f[1]), "state": f[2], "ticks": int(f[3]),
                             "name": f[5], "what": f[6] if len(f) > 6 else ""})
        return rows
