# SPDX-License-Identifier: MIT
"""vmconfig.py: the VMs of configs.toml as QEMU command lines and libvirt domain XML.

Library for vm-configs/run, tools/guest.py, the PMU matrix and the tests. Every gdbstub,
QMP and serial endpoint it emits is a unix socket or bound to loopback: a spec that would
listen on other interfaces is refused.
"""
import os
import re
import shlex
import tomllib
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "configs.toml")
QEMU = "qemu-system-x86_64"
ARCHES = ("x86_64", "aarch64", "riscv64")  # a row's `arch` (default x86_64): which kernel and QEMU it runs
QEMU_BINARY = {"x86_64": QEMU, "aarch64": "qemu-system-aarch64", "riscv64": "qemu-system-riscv64"}
# Each arch's machine: x86_64 the pc, aarch64 virt with GICv3, riscv64 virt under the OpenSBI QEMU ships.
MACHINE = {"x86_64": ["-machine", "pc"], "aarch64": ["-machine", "virt,gic-version=3"],
           "riscv64": ["-machine", "virt", "-bios", "default"]}
# The kernel a row boots, under the build directory.
KERNEL_PATH = {"x86_64": "kernel.elf", "aarch64": "aarch64/kernel.elf", "riscv64": "riscv64/kernel.elf"}
DEBUG_EXIT = "isa-debug-exit,iobase=0xf4,iosize=0x04"
CONFIG_FIELDS = {"name": str, "accel": str, "cpu": str, "smp": int, "memory": int,
                 "claimed": str, "decision": str, "source": str, "why": str}
PERSONA_FIELDS = {"name": str, "base": str, "claimed": str, "decision": str, "source": str, "why": str}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class ConfigError(Exception):
    """A bad table, configuration name or endpoint: the message is one line for the user."""


def _check_fields(kind, i, row, fields):
    for key, typ in fields.items():
        if key not in row:
            raise ConfigError(f"{kind} {i + 1}: missing '{key}'")
        if not isinstance(row[key], typ) or isinstance(row[key], bool):
            raise ConfigError(f"{kind} {i + 1} ({row.get('name')}): '{key}' must be a {typ.__name__}")
    unknown = set(row) - set(fields) - {"requires", "hypervisor", "arch"}
    if unknown:
        raise ConfigError(f"{kind} {i + 1} ({row['name']}): unknown field(s) {', '.join(sorted(unknown))}")


def load(path=TABLE):
    """-> {"config": {name: row}, "persona": {name: row}}, in table order."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}")
    out = {"config": {}, "persona": {}}
    for i, row in enumerate(data.get("config", [])):
        _check_fields("config", i, row, CONFIG_FIELDS)
        if row["accel"] not in ("tcg", "kvm"):
            raise ConfigError(f"config {row['name']}: accel must be tcg or kvm, not {row['accel']!r}")
        row.setdefault("arch", "x86_64")
        if row["arch"] not in ARCHES:
            raise ConfigError(f"config {row['name']}: arch must be one of {', '.join(ARCHES)}, not {row['arch']!r}")
        if row.get("requires", "host-pmu") != "host-pmu":
            raise ConfigError(f"config {row['name']}: requires can only be \"host-pmu\"")
        if not 1 <= row["smp"] <= 8:
            raise ConfigError(f"config {row['name']}: smp must be 1-8")
        if row["name"] in out["config"]:
            raise ConfigError(f"config {row['name']} is defined twice")
        out["config"][row["name"]] = row
    for i, row in enumerate(data.get("persona", [])):
        _check_fields("persona", i, row, PERSONA_FIELDS)
        if row["base"] not in out["config"]:
            raise ConfigError(f"persona {row['name']}: no config named {row['base']!r}")
        if row["name"] in out["persona"] or row["name"] in out["config"]:
            raise ConfigError(f"persona {row['name']} is defined twice")
        out["persona"][row["name"]] = row
    if not out["config"]:
        raise ConfigError(f"{path}: no [[config]] rows")
    return out


def check_gdb(spec):
    """A QEMU -gdb value that listens only on loopback or a unix socket; else ConfigError."""
    m = re.fullmatch(r"tcp:(\[::1\]|[^:\[\]]*):(\d+)(,.*)?", spec)
    if m:
        host, port = m.group(1), int(m.group(2))
        if host not in LOOPBACK_HOSTS:
            where = "every interface" if host in ("", "0.0.0.0", "[::]") else host
            raise ConfigError(f"gdbstub must listen on 127.0.0.1 or a unix socket, not {spec!r} ({where})")
        if not 1 <= port <= 65535:
            raise ConfigError(f"gdbstub port must be 1-65535, not {port}")
        return spec
    if spec.startswith("unix:") and len(spec) > 5:
        # QEMU adds server=on itself only for tcp: a unix stub must be told to listen
        return spec if "server" in spec else spec + ",server=on,wait=off"
    raise ConfigError(f"gdbstub must be tcp:127.0.0.1:PORT or unix:PATH, not {spec!r}")


def check_extra(args):
    for a in args:
        if a in ("-s", "-gdb") or a.startswith("-gdb="):
            raise ConfigError("give the gdbstub with --gdb (checked to stay on loopback), not as a QEMU argument")
        if "hostfwd=" in a and not re.search(r"hostfwd=(tcp|udp):127\.0\.0\.1:", a):
            raise ConfigError(f"host forwarding must bind 127.0.0.1: {a!r}")
    return list(args)


GUEST_MAC = "52:54:00:12:34:56"  # QEMU's default NIC address, stated so raw frames can name it
GUEST_SHELL_PORT, GUEST_SINK_PORT = 9000, 9001  # the kernel's UDP shell and its usual netload sink


def net_user(shell_port, sink_port, restrict=False):
    """QEMU arguments for a virtio-net NIC on user networking whose only host ends are
    127.0.0.1:shell_port -> the UDP shell and 127.0.0.1:sink_port -> the netload sink.
    restrict=on is off by default because libslirp 4.7 (Debian 12) then drops the guest's UDP
    replies to a forwarded peer: the request reaches the guest, the answer never leaves QEMU.
    The kernel only ever answers the peer that wrote to it, so nothing leaves loopback anyway."""
    fwd = (f"hostfwd=udp:127.0.0.1:{int(shell_port)}-:{GUEST_SHELL_PORT},"
           f"hostfwd=udp:127.0.0.1:{int(sink_port)}-:{GUEST_SINK_PORT}")
    return ["-netdev", f"user,id=n0,restrict={'on' if restrict else 'off'},{fwd}",
            "-device", f"virtio-net-pci,netdev=n0,mac={GUEST_MAC}"]


def net_socket(peer_port, local_port):
    """QEMU arguments for a virtio-net NIC whose wire is a UDP socket: QEMU listens on
    127.0.0.1:local_port and sends to 127.0.0.1:peer_port, one Ethernet frame per datagram."""
    return ["-netdev", f"socket,id=n0,udp=127.0.0.1:{int(peer_port)},localaddr=127.0.0.1:{int(local_port)}",
            "-device", f"virtio-net-pci,netdev=n0,mac={GUEST_MAC}"]


RR_SHIFT = 5  # -icount shift: 2^5 ns of virtual time an instruction (what the replay tests record at)


def rr_args(mode, path, shift=RR_SHIFT):
    """QEMU arguments that record (mode "record") or replay ("replay") the whole run into/from the
    file path: deterministic instruction counts (-icount, so no MTTCG: QEMU then refuses more than
    one vCPU) and a real-time clock that follows the virtual one, so the replay reads the same
    times. `gdbsample replay` profiles such a replay by instruction count (docs/vm-configs.md)."""
    if mode not in ("record", "replay"):
        raise ConfigError(f"--rr must be record or replay, not {mode!r}")
    if not path or "," in path:
        raise ConfigError("--rrfile: give the recording's path (no comma: QEMU would read it as another option)")
    return ["-icount", f"shift={int(shift)},rr={mode},rrfile={path}", "-rtc", "clock=vm"]


def qemu_command(cfg, kernel, serial="stdio", gdb=None, qmp=None, smp=None, extra=(), qemu=(QEMU,)):
    """The QEMU argv for config row cfg. serial: stdio, mon:stdio, none or unix:PATH (QEMU
    waits for a client so no output is lost); gdb: see check_gdb; qmp: a unix socket path;
    qemu: the argv prefix that runs the row's QEMU (tools/qemu_versions.py command()).
    x86_64 rows run the pc machine with isa-debug-exit (poweroff: status 33); aarch64 rows the
    virt machine with GICv3, where poweroff is PSCI SYSTEM_OFF (status 0); riscv64 rows the virt machine
    under OpenSBI, where poweroff is SBI system_reset (status 0)."""
    machine = MACHINE[cfg.get("arch", "x86_64")]
    cmd = list(qemu) + machine + ["-accel", cfg["accel"], "-cpu", cfg["cpu"],
           "-smp", str(smp or cfg["smp"]), "-m", f"{cfg['memory']}M", "-kernel", kernel,
           "-display", "none", "-nodefaults", "-no-reboot"]
    if cfg.get("arch", "x86_64") == "x86_64":
        cmd += ["-device", DEBUG_EXIT]
    if serial in ("stdio", "mon:stdio"):
        cmd += ["-serial", serial]
    elif serial.startswith("unix:") and len(serial) > 5:
        cmd += ["-chardev", f"socket,id=s0,path={serial[5:]},server=on,wait=on", "-serial", "chardev:s0"]
    elif serial != "none":
        raise ConfigError(f"serial must be stdio, mon:stdio, none or unix:PATH, not {serial!r}")
    if gdb:
        cmd += ["-gdb", check_gdb(gdb)]
    if qmp:
        cmd += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    return cmd + check_extra(extra)


def kvm_usable():
    """(True, "") or (False, why): /dev/kvm exists and this user can open it."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return False, f"/dev/kvm: {e.strerror}"
    os.close(fd)
    return True, ""


def host_has_pmu():
    """(True, "") or (False, why): the host exposes a PMU that KVM can pass through."""
    if os.path.isdir("/sys/bus/event_source/devices/cpu"):
        return True, ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
    except OSError:
        flags = set()
    if flags & {"arch_perfmon", "perfctr_core"}:
        return True, ""
    return False, "the host has no PMU to pass through (no arch_perfmon/perfctr_core, no perf 'cpu' PMU)"


def libvirt_xml(cfg, kernel, gdb_port, serial_path, name=None):
    """A libvirt domain for config row cfg: direct kernel boot, the gdbstub on 127.0.0.1:gdb_port
    through <qemu:commandline> (none if gdb_port is None: for attaching later through the
    monitor, e.g. gdbsample --domain), serial on a unix socket, isa-debug-exit."""
    name = name or f"gdbsample-{cfg['name']}"
    cpu_model, _, cpu_flags = cfg["cpu"].partition(",")
    if cpu_model == "host":
        cpu = "  <cpu mode='host-passthrough' check='none' migratable='off'/>\n"
    else:
        cpu = f"  <cpu mode='custom' match='exact' check='none'>\n    <model fallback='forbid'>{escape(cpu_model)}</model>\n  </cpu>\n"
    arch = cfg.get("arch", "x86_64")
    a64 = arch == "aarch64"
    args = (["-gdb", f"tcp:127.0.0.1:{int(gdb_port)}"] if gdb_port is not None else []) + \
        ([] if arch != "x86_64" else ["-device", DEBUG_EXIT])
    if cpu_flags:  # flags libvirt has no element for (pmu=, x-force-features=): the last -cpu wins
        args = ["-cpu", cfg["cpu"]] + args
    qargs = "".join(f"    <qemu:arg value='{escape(a)}'/>\n" for a in args)
    return (
        f"<!-- generated from vm-configs/configs.toml (vm-configs/run, libvirt option) for {cfg['name']}: "
        f"{escape(cfg['why']).replace('--', '-')} -->\n"
        f"<domain type='{'kvm' if cfg['accel'] == 'kvm' else 'qemu'}' "
        "xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>\n"
        f"  <name>{escape(name)}</name>\n"
        f"  <memory unit='MiB'>{cfg['memory']}</memory>\n"
        f"  <vcpu>{cfg['smp']}</vcpu>\n"
        "  <os>\n"
        + (f"    <type arch='{arch}' machine='virt'>hvm</type>\n" if arch != "x86_64" else
           "    <type arch='x86_64' machine='pc'>hvm</type>\n") +
        f"    <kernel>{escape(kernel)}</kernel>\n"
        "  </os>\n"
        + ("  <features>\n    <gic version='3'/>\n  </features>\n" if a64 else "" if arch == "riscv64" else
           "  <features>\n    <acpi/>\n    <apic/>\n  </features>\n") +
        f"{cpu}"
        "  <on_poweroff>destroy</on_poweroff>\n"
        "  <on_reboot>destroy</on_reboot>\n"
        "  <on_crash>destroy</on_crash>\n"
        "  <devices>\n"
        f"    <emulator>/usr/bin/{QEMU_BINARY[cfg.get('arch', 'x86_64')]}</emulator>\n"
        f"    <serial type='unix'>\n      <source mode='bind' path='{escape(serial_path)}'/>\n"
        "      <target port='0'/>\n    </serial>\n"
        "    <memballoon model='none'/>\n"
        "  </devices>\n"
        f"  <qemu:commandline>\n{qargs}  </qemu:commandline>\n"
        "</domain>\n")


def shell_line(cmd):
    return " ".join(shlex.quote(c) for c in cmd)
