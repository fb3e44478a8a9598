# SPDX-License-Identifier: MIT
"""gdbsample --domain against a real libvirt: a private session-mode libvirtd started by this test
(runs as `nobody` with its own runtime, config and cache dirs under a temporary directory, so no
system daemon or system domain is touched), a TCG domain from vm-configs/run --libvirt --no-gdb.
Teardown: the domain is destroyed and undefined, libvirtd and the virtlogd it spawned are stopped
by their own pids. Skips, with the reason, when libvirtd cannot run here.
"""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import conftest
import pytest

pytestmark = pytest.mark.qemu  # a libvirt domain: QEMU under libvirtd

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
LIBVIRTD = "/usr/sbin/libvirtd"
DOMAIN = "gdbsample-tcg-qemu64"


def virsh(uri, *args, check=True):
    r = subprocess.run(["virsh", "-q", "-c", uri] + list(args), capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, (args, r.stderr)
    return r


def stop_pid(pid):
    """SIGTERM then SIGKILL one process of ours, by pid."""
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)


@pytest.fixture
def libvirt_domain():
    """(uri, domain name) of a running TCG domain without -gdb on a private libvirtd."""
    if not os.path.exists(LIBVIRTD) or not shutil.which("virsh"):
        pytest.skip("libvirtd or virsh missing: apt-get install libvirt-daemon libvirt-daemon-driver-qemu "
                    "libvirt-clients")
    if not os.path.exists(conftest.KERNEL):
        pytest.fail(f"{conftest.KERNEL} is missing: run `make kernel`")
    nobody = pwd.getpwnam("nobody")
    top = tempfile.mkdtemp(prefix="gdbsample-libvirt-")
    os.chmod(top, 0o755)
    dirs = {k: os.path.join(top, k) for k in ("home", "run", "cfg", "cache")}
    for d in dirs.values():
        os.mkdir(d)
    kernel = os.path.join(top, "kernel.elf")  # readable by the daemon's user
    shutil.copy(conftest.KERNEL, kernel)
    for root, ds, fs in os.walk(top):
        for n in ds + fs + ["."]:
            os.chown(os.path.join(root, n), nobody.pw_uid, nobody.pw_gid)
    env = dict(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=dirs["home"], XDG_RUNTIME_DIR=dirs["run"],
               XDG_CONFIG_HOME=dirs["cfg"], XDG_CACHE_HOME=dirs["cache"])

    def demote():
        os.setgid(nobody.pw_gid)
        os.setgroups([])
        os.setuid(nobody.pw_uid)
    log = open(os.path.join(top, "libvirtd.log"), "w")
    daemon = subprocess.Popen([LIBVIRTD], env=env, preexec_fn=demote, stdout=log, stderr=log)
    sock = os.path.join(dirs["run"], "libvirt", "libvirt-sock")
    uri = f"qemu:///session?socket={sock}"
    defined = False
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(sock):
            if daemon.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.skip("libvirtd (session mode, as nobody) did not start here: " +
                            open(log.name).read()[-300:])
            time.sleep(0.1)
        xml = subprocess.run([os.path.join(conftest.ROOT, "vm-configs", "run"), "--libvirt", "tcg-qemu64",
                              "--no-gdb", "--kernel", kernel, "--serial", "unix:" + os.path.join(top, "serial.sock")],
                             capture_output=True, text=True, check=True).stdout
        assert "-gdb" not in xml
        path = os.path.join(top, "dom.xml")
        with open(path, "w") as f:
            f.write(xml)
        virsh(uri, "define", path)
        defined = True
        r = virsh(uri, "start", DOMAIN, check=False)
        if r.returncode:
            pytest.skip("libvirt could not start a TCG domain here: " + r.stderr.strip())
        yield uri, DOMAIN
    finally:
        if defined:
            virsh(uri, "destroy", DOMAIN, check=False)
            virsh(uri, "undefine", DOMAIN, check=False)
        logd = os.path.join(dirs["run"], "libvirt", "virtlogd.pid")
        logd_pid = int(open(logd).read()) if os.path.exists(logd) else None
        stop_pid(daemon.pid)
        daemon.wait()
        if logd_pid:
            stop_pid(logd_pid)
        log.close()
        shutil.rmtree(top, ignore_errors=True)


def test_domain_profiles_and_keeps_running(libvirt_domain):
    uri, dom = libvirt_domain
    time.sleep(1)  # let the kernel boot to its idle loop
    r = subprocess.run([GDBSAMPLE, "--domain", dom, "--connect", uri, "-e", conftest.KERNEL, "--idle",
                        "-r", "100", "-d", "3"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].startswith(f"attached via domain {dom}, accel tcg, 2 vCPUs"), lines[:3]
    n = int(lines[1].split()[0])
    assert n >= 200, r.stdout  # 3 s x 100 Hz x 2 vCPUs = 600; a loaded host reaches fewer
    assert virsh(uri, "domstate", dom).stdout.strip() == "running"
    chardevs = virsh(uri, "qemu-monitor-command", dom, "--hmp", "info chardev").stdout
    assert not any(l.startswith("gdb:") for l in chardevs.splitlines()), chardevs
    port = int(r.stderr.split("gdbstub 127.0.0.1:")[1].split()[0].rstrip(";"))
    with socket.socket() as s:
        s.settimeout(2)
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_unknown_domain(libvirt_domain):
    uri, _ = libvirt_domain
    r = subprocess.run([GDBSAMPLE, "--domain", "no-such-domain", "--connect", uri, "-d", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "no-such-domain" in r.stderr
