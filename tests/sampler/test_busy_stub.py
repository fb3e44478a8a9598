# SPDX-License-Identifier: MIT
"""A gdbstub already in use (gdb, or another gdbsample, attached): gdbsample says so and exits 1
without sending the stub a byte, and leaves no connection queued on it -- QEMU would accept that
one when the other client leaves, and accepting a client pauses the VM. Every QEMU is stopped by
its pid (the boot fixture); every gdbsample run is bounded by a timeout."""
import os
import socket
import subprocess
import time

import conftest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")


def packet(payload):
    return b"$" + payload + b"#" + b"%02x" % (sum(payload) & 255)


def status(g):
    return conftest.qmp(g.qmp_path, "query-status")["status"]


def wait_status(g, want, timeout=10):
    """Poll query-status until it says want (or the timeout); the last status seen."""
    end = time.monotonic() + timeout
    s = status(g)
    while s != want and time.monotonic() < end:
        time.sleep(0.1)
        s = status(g)
    return s


def wait_attached(g, timeout=30):
    """Until QEMU lists a client on the gdbstub's chardev ("... <-> 127.0.0.1:PORT")."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(line.startswith("gdb") and "<->" in line
               for line in conftest.hmp(g.qmp_path, "info chardev").splitlines()):
            return True
        time.sleep(0.05)
    return False


def busy_message(port):
    return f"gdbsample: the gdbstub at 127.0.0.1:{port} is in use by another client (gdb or gdbsample?)"


def test_refused_while_another_client_is_attached(boot):
    """A raw RSP client (as gdb after `continue`) holds the stub with the VM running: gdbsample
    refuses, the VM never stops, and it still runs after the other client has left."""
    g = boot(smp=1, qmp=True)
    other = socket.create_connection(("127.0.0.1", g.gdbport), timeout=10)
    try:
        assert wait_status(g, "paused") == "paused"  # connecting stopped it
        other.sendall(b"+" + packet(b"c"))           # and gdb's `continue` resumes it
        assert wait_status(g, "running") == "running"
        r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-d", "1"], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 1, r.stderr
        assert busy_message(g.gdbport) in r.stderr, r.stderr
        assert r.stdout == ""
        assert status(g) == "running"
    finally:
        other.close()
    # Nothing of ours was left in the stub's backlog: had it been, QEMU would accept it now and pause.
    time.sleep(1)
    assert status(g) == "running"
    g.cmd("cpus")  # and the guest's shell still answers


def test_second_gdbsample_refused(boot):
    """Two gdbsamples on one stub: the second says the stub is busy, the first samples to the end."""
    g = boot(smp=2, qmp=True)
    first = subprocess.Popen([GDBSAMPLE, "-p", str(g.gdbport), "-d", "4", "-e", g.kernel],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_attached(g), first.communicate()
        second = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-d", "1"], capture_output=True, text=True,
                                timeout=30)
        assert second.returncode == 1, second.stderr
        assert busy_message(g.gdbport) in second.stderr, second.stderr
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
        assert "samples of 2 vCPUs" in err, err
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert wait_status(g, "running") == "running"
    time.sleep(1)
    assert status(g) == "running"
