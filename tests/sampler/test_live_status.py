# SPDX-License-Identifier: MIT
"""gdbsample record's live status line, on a real terminal: tmux's, on a private server.

gdbsample runs against the test kernel (the `boot` fixture stops QEMU by pid) inside a detached
tmux session on a server of its own (`tmux -L <unique>`), killed on every way out (which also
ends gdbsample through SIGHUP, its clean way out). The pane is read with capture-pane: while the
run lasts, one status line whose sample count grows; after it, no status line, and the summary
from the first column.
"""
import os
import re
import secrets
import shutil
import subprocess
import time

import conftest
import pytest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
STATUS = re.compile(r"^gdbsample: recording ([0-9.]+) s: ([0-9]+) samples, ([0-9.]+) Hz, "
                    r"pause p50 [0-9]+ us, [0-9]+ dropped$")
DONE = "gdbsample-exit="


@pytest.fixture
def tmux():
    """tmux(shell command) -> read(): the pane's lines; the server is killed at teardown."""
    exe = shutil.which("tmux")
    if not exe:
        pytest.skip("tmux is not installed (make deps installs it)")
    sock = "gdbsample-test-%d-%s" % (os.getpid(), secrets.token_hex(4))
    env = dict(os.environ, TERM="xterm")
    started = []

    def start(command):
        started.append(None)
        subprocess.run([exe, "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "150",
                        "-y", "40", "sh", "-c", command], check=True, env=env, timeout=30)
        r = subprocess.run([exe, "-L", sock, "display-message", "-p", "#{socket_path}"], capture_output=True,
                           text=True, env=env, timeout=30)
        started[-1] = r.stdout.strip() or None      # the socket file, removed with the server

        def read():
            r = subprocess.run([exe, "-L", sock, "capture-pane", "-p", "-t", "t"], capture_output=True,
                               text=True, env=env, timeout=30)
            assert r.returncode == 0, r.stderr
            return [line.rstrip() for line in r.stdout.splitlines()]
        return read

    try:
        yield start
    finally:
        if started:                                  # the server, its panes and its socket file
            subprocess.run([exe, "-L", sock, "kill-server"], capture_output=True, env=env, timeout=30)
            if started[-1] and os.path.basename(started[-1]) == sock and os.path.exists(started[-1]):
                os.unlink(started[-1])


def wait_for(read, cond, timeout, what):
    """Reads the pane until cond(lines) is true; -> those lines (fails after timeout seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = read()
        if cond(lines):
            return lines
        if time.monotonic() > deadline:
            pytest.fail("%s: not seen in %d s; the pane:\n%s" % (what, timeout, "\n".join(lines)))
        time.sleep(0.1)


def statuses(lines):
    return [m for m in map(STATUS.match, lines) if m]


def record(g, out, *extra):
    return ("%s -p %d -e %s -r 100 -d 8 -f folded -o %s %s; echo %s$?; sleep 600"
            % (GDBSAMPLE, g.gdbport, conftest.KERNEL, out, " ".join(extra), DONE))


def test_status_line_updates_in_place_and_is_erased(boot, tmux, tmp_path):
    g = boot(smp=2)
    g.work("split 5 3 2")                            # busy vCPUs: samples are kept, the count grows
    read = tmux(record(g, tmp_path / "out.folded"))
    first = wait_for(read, lambda ls: any(int(m.group(2)) > 0 for m in statuses(ls)), 60, "a status line")
    assert len(statuses(first)) == 1, first          # one line, redrawn in place
    n1 = int(statuses(first)[0].group(2))
    later = wait_for(read, lambda ls: statuses(ls) and int(statuses(ls)[0].group(2)) > n1, 30,
                     "the sample count growing past %d" % n1)
    assert len(statuses(later)) == 1, later
    assert float(statuses(later)[0].group(1)) >= float(statuses(first)[0].group(1))
    end = wait_for(read, lambda ls: any(DONE in line for line in ls), 60, "gdbsample's exit")
    assert DONE + "0" in end, end
    assert not statuses(end) and not any("recording" in line for line in end), end   # erased
    summary = [line for line in end if re.match(r"^gdbsample: [0-9]+ samples of 2 vCPUs in ", line)]
    assert len(summary) == 1, end                    # from the first column, nothing left before it
    assert os.path.getsize(tmp_path / "out.folded") > 0


def test_quiet_draws_no_status_line(boot, tmux, tmp_path):
    g = boot(smp=2)
    g.work("split 5 3 2")
    read = tmux(record(g, tmp_path / "out.folded", "--quiet"))
    seen = []
    end = wait_for(read, lambda ls: seen.append(ls) or any(DONE in line for line in ls), 60, "gdbsample's exit")
    assert DONE + "0" in end, end
    assert len(seen) > 5 and not any("recording" in line for ls in seen for line in ls), seen[-1]
    assert not any("samples of 2 vCPUs" in line for line in end), end  # -q: no summary either (--summary)


def test_no_status_line_when_stderr_is_not_a_terminal(boot):
    g = boot(smp=2)
    r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "100", "-d", "1.5",
                        "-f", "folded"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "recording" not in r.stderr and "\r" not in r.stderr and "\033" not in r.stderr
