# SPDX-License-Identifier: MIT
"""vm-configs: the table loads, the launcher stays on loopback, the libvirt XMLs are current and valid."""
import os
import shutil
import subprocess
import sys
import time

import conftest
import pytest

RUN = os.path.join(conftest.ROOT, "vm-configs", "run")
import vmconfig


def run(*args):
    return subprocess.run([sys.executable, RUN, *args], capture_output=True, text=True, timeout=30)


def test_table_rows_are_complete():
    t = vmconfig.load()
    assert {c["accel"] for c in t["config"].values()} == {"tcg", "kvm"}
    assert len(t["persona"]) >= 7
    for row in list(t["config"].values()) + list(t["persona"].values()):
        assert row["claimed"] and row["decision"] and row["source"] and row["why"]


@pytest.mark.parametrize("bad,message", [
    ("[[config]]\nname = 'x'\n", "config 1: missing 'accel'"),
    ("[[config]]\nname='x'\naccel='xen'\ncpu='q'\nsmp=1\nmemory=1\nclaimed=''\ndecision=''\nsource=''\nwhy=''\n",
     "config x: accel must be tcg or kvm, not 'xen'"),
    ("[[config]\n", "Expected ']]' at the end of an array declaration"),
])
def test_bad_tables_are_refused_in_one_line(tmp_path, bad, message):
    p = tmp_path / "t.toml"
    p.write_text(bad)
    r = run("--table", str(p), "--list")
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# A launcher process or two per configuration: `make check` takes the first configuration, `make
# test` every one.
CONFIGS = list(vmconfig.load()["config"])
EACH_CONFIG = CONFIGS[:1] + [pytest.param(n, marks=pytest.mark.slow) for n in CONFIGS[1:]]


@pytest.mark.parametrize("name", EACH_CONFIG)
def test_every_configuration_gets_a_loopback_gdbstub(name):
    r = run(name, "--gdb-port", "4321", "--print")
    assert r.returncode == 0, r.stderr
    assert "-gdb tcp:127.0.0.1:4321" in r.stdout and r.stdout.count("-gdb") == 1


@pytest.mark.parametrize("args", [
    ["--gdb", "tcp::1234"], ["--gdb", "tcp:0.0.0.0:1234"], ["--gdb", "tcp:192.0.2.7:1234"],
    ["--gdb", "tcp:[::]:1234"], ["--gdb", "udp:127.0.0.1:1"], ["--", "-s"], ["--", "-gdb", "tcp::1"],
    ["--", "-netdev", "user,id=n0,hostfwd=udp::9000-:9000"],
])
def test_launcher_refuses_anything_beyond_loopback(args):
    r = run("tcg-qemu64", "--print", *args)
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith("vm-configs/run: ") and len(r.stderr.strip().splitlines()) == 1


def listening_addresses(pid):
    """Local addresses of the TCP sockets process pid listens on (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                    found.append(fields[1])
    return found


def test_a_launched_qemu_listens_only_on_loopback():
    port = __import__("guest").free_port()
    p = subprocess.Popen([sys.executable, RUN, "tcg-qemu64", "--gdb-port", str(port), "--serial", "none",
                          "--kernel", conftest.KERNEL], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        addrs = []
        while not addrs and time.monotonic() < deadline:
            time.sleep(0.1)
            addrs = listening_addresses(p.pid)  # vm-configs/run execs QEMU: same pid
        assert addrs, "QEMU never listened"
        assert addrs == [f"0100007F:{port:04X}"], addrs  # 127.0.0.1:port, nothing else
    finally:
        p.terminate()
        p.wait(10)


def test_a_libvirt_xml_is_committed_for_every_configuration():
    committed = sorted(f[:-4] for f in os.listdir(os.path.join(conftest.ROOT, "vm-configs", "libvirt"))
                       if f.endswith(".xml"))
    assert committed == sorted(CONFIGS), "run `make libvirt-xml`"


@pytest.mark.parametrize("name", EACH_CONFIG)
def test_libvirt_xmls_are_generated_from_the_table_and_validate(tmp_path, name):
    if not shutil.which("virt-xml-validate"):
        pytest.fail("virt-xml-validate missing: `make deps` installs libvirt-clients")
    r = run("--libvirt", name)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(conftest.ROOT, "vm-configs", "libvirt", name + ".xml")) as f:
        assert f.read() == r.stdout, f"vm-configs/libvirt/{name}.xml is stale: run `make libvirt-xml`"
    assert "<qemu:arg value='tcp:127.0.0.1:" in r.stdout
    xml = tmp_path / f"{name}.xml"
    xml.write_text(r.stdout)
    v = subprocess.run(["virt-xml-validate", str(xml), "domain"], capture_output=True, text=True, timeout=30)
    assert v.returncode == 0, (name, v.stdout, v.stderr)


def test_rr_records_and_replays_one_vcpu():
    """--rr record|replay --rrfile F: QEMU's record/replay arguments (the ones the replay tests
    boot with: vmconfig.rr_args), one vCPU whatever the row says."""
    for mode in ("record", "replay"):
        r = run("tcg-qemu64", "--rr", mode, "--rrfile", "/tmp/run.rr", "--print")
        assert r.returncode == 0, r.stderr
        args = r.stdout.split()
        assert args[args.index("-smp") + 1] == "1", r.stdout  # the row has 2
        assert args[args.index("-icount") + 1] == f"shift=5,rr={mode},rrfile=/tmp/run.rr", r.stdout
        assert args[args.index("-rtc") + 1] == "clock=vm", r.stdout
    assert vmconfig.rr_args("replay", "/r") == ["-icount", "shift=5,rr=replay,rrfile=/r", "-rtc", "clock=vm"]


@pytest.mark.parametrize("args, message", [
    (["--rr", "record", "--rrfile", "a.rr", "--smp", "2"], "--rr needs one vCPU"),
    (["--rr", "record"], "--rr and --rrfile go together"),
    (["--rrfile", "a.rr"], "--rr and --rrfile go together"),
    (["--rr", "record", "--rrfile", "a,b.rr"], "--rrfile: give the recording's path"),
    (["--rr", "replay", "--rrfile", "a.rr", "--net", "user"], "--rr with --net"),
    (["--rr", "replay", "--rrfile", "a.rr", "--libvirt"], "--rr is for vm-configs/run's own QEMU"),
])
def test_rr_refuses_what_record_replay_cannot_do(args, message):
    r = run("tcg-qemu64", "--print", *args)
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith(f"vm-configs/run: {message}") and len(r.stderr.strip().splitlines()) == 1, r.stderr
