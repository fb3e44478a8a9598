# SPDX-License-Identifier: MIT
"""qemuguest.py: what every test guest shares -- one QEMU started and stopped by its own pid, its shell socket, logs.

The base of tools/guest.py's Guest (our kernel) and tools/linuxguest.py's LinuxGuest (Debian's).
A guest lives in a temporary directory holding QEMU's log (qemu.log), the unix socket of its
shell (SOCKET: QEMU waits on it, server=on,wait=on, so no output is ever lost) and whatever the
subclass puts there; the gdbstub listens on 127.0.0.1 only. start() boots and waits for READY on
the shell; on any failure on the way, and in stop(), QEMU is stopped by its pid (TERM, then KILL)
and the directory removed. A subclass gives command_line() and may hook prepare() (before the
directory exists: fetching), setup() (in it, before QEMU starts) and booted() (after READY).
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


class GuestError(Exception):
    pass


def stop_qemu(proc):
    """Stops a QEMU we started, by its own pid: SIGTERM, then SIGKILL after 5 s; reaps it."""
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_udp_ports(n):
    """n distinct UDP ports on 127.0.0.1 that were free a moment ago."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class QemuGuest:
    """One QEMU process with its shell connected; subclasses say how it is started and driven."""
    Error = GuestError             # what this guest raises
    TEMP_PREFIX = "gdbsample-guest-"
    SOCKET = "serial.sock"         # the shell's unix socket, in the temp dir
    READY = "\n> "                 # start() waits for it on the shell
    CHANNEL = "serial"             # the shell's name in messages
    BOOT_TIMEOUT = 60              # s, start()'s default
    READ_TIMEOUT = 10              # s, read_until()'s default

    def __init__(self):
        self.proc = None           # the QEMU process
        self.sock = None           # the shell's connection
        self.dir = None            # temp dir: sockets, logs, the subclass's files
        self.gdb_port = None       # gdbstub on 127.0.0.1 (None: no stub)
        self.qmp_path = None       # QMP unix socket (None: no QMP)
        self.boot_seconds = None   # QEMU start to READY
        self.buf = ""              # shell text received and not consumed yet
        self.transcript = []       # everything received, for failure messages

    # -- what a subclass gives -----------------------------------------------------------------
    def command_line(self):
        """QEMU's argv (called in start(), after setup(): the temp dir exists)."""
        raise NotImplementedError

    def prepare(self):
        """Before the temp dir is made (e.g. fetching what is missing)."""

    def setup(self):
        """In the temp dir, before QEMU starts (ports, files the command line names)."""

    def booted(self):
        """After READY (e.g. a first command, checks)."""

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def gdbport(self):
        """The gdbstub's port (the older name of gdb_port)."""
        return self.gdb_port

    @gdbport.setter
    def gdbport(self, port):
        self.gdb_port = port

    def path(self, name):
        """A file in the guest's temp dir."""
        return os.path.join(self.dir, name)

    def start(self, boot_timeout=None):
        """Boots and waits for READY; returns self. Any failure on the way stops QEMU by its pid."""
        if os.environ.get("GDBSAMPLE_TESTS_WITHOUT_QEMU"):  # `make check` (tests/conftest.py)
            raise RuntimeError("this test boots a QEMU guest but is not marked `qemu`: mark it (or its "
                               "module), or use a guest fixture tests/conftest.py knows")
        self.prepare()
        try:
            self.dir = tempfile.mkdtemp(prefix=self.TEMP_PREFIX)
            self.log_path = self.path("qemu.log")
            self.setup()
            argv = self.command_line()
            t0 = time.monotonic()
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            self._connect(self.path(self.SOCKET))
            self.read_until(self.READY, boot_timeout or self.BOOT_TIMEOUT)
            self.boot_seconds = time.monotonic() - t0
            self.booted()
        except BaseException:
            self.stop()
            raise
        return self

    def _connect(self, path):
        """Connects to the shell's socket once QEMU has made it (10 s), or says why not."""
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise self.Error(f"qemu exited with {self.proc.returncode}: {self.qemu_log()}")
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                return
            except OSError:
                self.sock.close()
                self.sock = None
                if time.monotonic() > deadline:
                    raise self.Error(f"qemu did not open its {self.CHANNEL} socket within 10 s")
                time.sleep(0.02)

    def stop(self):
        """Stops QEMU by its pid (TERM, then KILL) and removes the temp dir; safe to repeat."""
        if self.sock:
            self.sock.close()
            self.sock = None
        stop_qemu(self.proc)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def pid(self):
        """QEMU's pid."""
        return self.proc.pid

    # -- logs ----------------------------------------------------------------------------------
    def read_file(self, name, last=2000):
        """The end of a file in the temp dir as text ("" when it is not there)."""
        try:
            with open(os.path.join(self.dir, name), "rb") as f:
                return f.read().decode(errors="replace").replace("\r", "")[-last:]
        except (OSError, TypeError):
            return ""

    def qemu_log(self):
        """The end of QEMU's own stdout/stderr."""
        return self.read_file("qemu.log")

    def tail(self):
        """The last of the shell, for failure messages."""
        return f"--- {self.CHANNEL} (last 1500 chars) ---\n" + "".join(self.transcript)[-1500:]

    # -- the shell -----------------------------------------------------------------------------
    def send(self, text):
        self.sock.sendall(text.encode())

    def _recv(self, timeout):
        """Adds what the shell sent within timeout s to buf; False when nothing came."""
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not data:
            raise self.Error(f"{self.CHANNEL} connection closed (qemu exited?)\n" + self.tail())
        text = data.decode(errors="replace").replace("\r", "")
        self.buf += text
        self.transcript.append(text)
        return True

    def read_until(self, marker, timeout=None):
        """The shell's text up to and including marker (a str or compiled regex); the rest stays."""
        timeout = self.READ_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if isinstance(marker, str):
                i = self.buf.find(marker)
                end = i + len(marker) if i >= 0 else -1
            else:
                m = marker.search(self.buf)
                end = m.end() if m else -1
            if end >= 0:
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            left = deadline - time.monotonic()
            if left <= 0:
                raise self.Error(f"timed out after {timeout} s waiting for {marker!r}\n" + self.tail())
            self._recv(left)
