# SPDX-License-Identifier: MIT
"""gdbsample never destroys a file: -o is written beside the target and renamed into place only
when the result is complete; an output that is one of the inputs is refused. Every QEMU is stopped
by its pid (the boot fixture); every gdbsample started here is waited for."""
import glob
import os
import signal
import subprocess
import time

import conftest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")


def gdbsample(*args, timeout=60):
    return subprocess.run([GDBSAMPLE] + list(args), capture_output=True, text=True, timeout=timeout)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_failed_run_leaves_existing_output_alone(tmp_path):
    """Nothing listens on the port: exit 1, and the existing -o file keeps its contents (it was
    emptied before the run even tried to connect); no temporary file is left beside it."""
    out = tmp_path / "out.folded"
    out.write_text("precious\n")
    for fmt in ("report", "folded", "capture"):
        r = gdbsample("-p", str(free_port()), "-f", fmt, "-o", str(out), "-d", "1")
        assert r.returncode == 1 and "cannot connect" in r.stderr, r.stderr
        assert out.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["out.folded"]


def test_output_that_is_an_input_is_refused(tmp_path):
    """-o naming the kernel ELF given with -e -- by the same name, a symlink or a hard link -- is
    refused with exit 2 before anything is touched."""
    elf = tmp_path / "kernel.elf"
    data = open(conftest.KERNEL, "rb").read()
    elf.write_bytes(data)
    (tmp_path / "link").symlink_to(elf)
    os.link(elf, tmp_path / "hard")
    for o in (elf, tmp_path / "link", tmp_path / "hard"):
        r = gdbsample("-p", str(free_port()), "-e", str(elf), "-o", str(o))
        assert r.returncode == 2 and "refusing to overwrite" in r.stderr, r.stderr
    assert elf.read_bytes() == data
    assert sorted(os.listdir(tmp_path)) == ["hard", "kernel.elf", "link"]


def test_capture_appears_complete_and_a_second_run_cannot_spoil_it(boot, tmp_path):
    """While a capture is being recorded it grows in a temporary file beside -o, which appears
    whole at the end. A second gdbsample on the same port and -o meanwhile fails (the stub is in
    use) without touching either file; the first one's capture is complete and readable."""
    g = boot(smp=2)
    g.work("chain 6")
    out = tmp_path / "run.cap"
    out.write_bytes(b"old capture")
    os.chmod(out, 0o600)                       # a private capture stays private once replaced
    first = subprocess.Popen([GDBSAMPLE, "-p", str(g.gdbport), "-e", g.kernel, "-r", "200", "-f", "capture",
                              "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        # sampling is under way once the capture's header is written (after the stub is ours):
        # the temporary file alone only says the first run has started, not that it attached
        while not attached(out) and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert attached(out), "no temporary file with a capture header beside -o while recording"
        assert out.read_bytes() == b"old capture"  # untouched until the result is ready
        second = gdbsample("-p", str(g.gdbport), "-e", g.kernel, "-f", "capture", "-o", str(out), "-d", "1")
        assert second.returncode == 1, second.stderr
        assert out.read_bytes() == b"old capture"
    finally:
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=30)
    assert first.returncode == 0, err
    assert glob.glob(str(out) + ".partial-*") == []
    r = subprocess.run([os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze"), "info", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # whole: header, chunks and summary
    assert oct(os.stat(out).st_mode & 0o777) == oct(0o600)


def attached(out):
    """The first run's temporary capture beside out holds its 128-byte header."""
    found = glob.glob(str(out) + ".partial-*")
    return bool(found) and os.path.getsize(found[0]) >= 128


def test_output_to_a_device_is_written_directly(boot):
    """-o /dev/null (not a regular file): written to directly, nothing created beside it."""
    g = boot(smp=1)
    r = gdbsample("-p", str(g.gdbport), "-e", g.kernel, "-d", "0.3", "-o", "/dev/null")
    assert r.returncode == 0, r.stderr
    assert glob.glob("/dev/null.partial-*") == []
