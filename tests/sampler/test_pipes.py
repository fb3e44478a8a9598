# SPDX-License-Identifier: MIT
"""gdbsample into a pipe whose reader has gone (`| head` read what it wanted): every subcommand
and output format ends quietly -- exit 0, nothing on stderr, the guest running -- and a run
without -d stops sampling as soon as it learns of it (EPIPE on a write, or the pipe polled), not
at Ctrl-C. Real processes through real pipes; every process started here is waited for, and one
that does not end is stopped by its pid and the test fails saying so."""
import os
import signal
import subprocess

import pytest

import conftest
from guest import Guest

pytestmark = pytest.mark.qemu

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
WAIT = 60   # seconds a gdbsample gets to notice and end: generous, beside two CPU hogs


@pytest.fixture(scope="module")
def guest(request):
    """One -smp 2 guest with QMP (to ask whether it runs) for the module: every case detaches."""
    if not os.path.exists(conftest.KERNEL):
        pytest.fail(f"{conftest.KERNEL} is missing: run `make kernel` (make test builds it)")
    g = Guest(conftest.KERNEL, smp=2, qmp=True, qemu=request.config.getoption("--qemu"))
    try:
        g.start()
        g.work("chain 6")       # something on the stacks
        yield g
    finally:
        g.stop()


def ended(p, what):
    """p's stderr once it has exited by itself within WAIT s; else it is stopped and the test fails."""
    try:
        _, err = p.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)     # the clean way out: resume, detach
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        pytest.fail(f"{what}: still running {WAIT} s after its reader went away (it kept sampling)")
    return err


def into_head(args, head_args, cwd=None):
    """gdbsample ARGS | head HEAD_ARGS: (gdbsample, head's output, gdbsample's stderr). Both are
    waited for; one still running when the test fails is stopped by its pid."""
    p = subprocess.Popen([GDBSAMPLE] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.Popen(["head"] + head_args, stdin=p.stdout, stdout=subprocess.PIPE)
    p.stdout.close()                             # head holds the only reading end
    try:
        first, _ = head.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        head.kill()
        head.communicate()
        ended(p, "gdbsample " + " ".join(args))
        pytest.fail(f"head {' '.join(head_args)} got no output from gdbsample {' '.join(args)} in {WAIT} s")
    return p, first, ended(p, f"gdbsample {' '.join(args)} | head {' '.join(head_args)}")


def assert_quiet_and_resumed(g, p, err):
    assert (p.returncode, err.decode(errors="replace")) == (0, "")
    assert conftest.wait_running(g.qmp_path, timeout=10) == "running", "gdbsample left the guest stopped"


# (id, arguments after -p PORT -e KERNEL): nothing bounds the run but its reader -- no -d.
CASES = [
    ("dump", ["dump"]),
    ("report", ["-f", "report"]),
    ("folded", ["-f", "folded"]),
    ("capture", ["-f", "capture"]),
    ("capture-o-dash", ["-f", "capture", "-o", "-"]),
    ("svg", ["-f", "svg"]),
    ("speedscope", ["-f", "speedscope"]),
    ("top-plain", ["top", "--interval", "0.2"]),
]


@pytest.mark.parametrize("name, args", CASES, ids=[c[0] for c in CASES])
def test_a_reader_already_gone_ends_the_run_quietly(guest, tmp_path, name, args):
    """stdout a pipe whose reading end is closed before gdbsample starts: the first write is
    EPIPE, and the runs that write only at the end (report, folded, svg, speedscope) learn of it
    from the pipe itself in their first round. No message, exit 0, the guest resumed; -o - is
    stdout, not a file named "-"."""
    sub = args[:1] if args[0] in ("dump", "top") else []
    rest = args[len(sub):]
    r, w = os.pipe()
    os.close(r)                                  # nobody will ever read
    try:
        p = subprocess.Popen([GDBSAMPLE] + sub + ["-p", str(guest.gdbport), "-e", guest.kernel, "-q"] + rest,
                             cwd=tmp_path, stdout=w, stderr=subprocess.PIPE)
    finally:
        os.close(w)
    err = ended(p, f"gdbsample {' '.join(args)}")
    assert_quiet_and_resumed(guest, p, err)
    assert os.listdir(tmp_path) == []            # nothing written beside (no "-", no .partial)


def test_capture_on_stdout_into_head_c_100(guest, tmp_path):
    """`gdbsample -f capture -o - | head -c 100`: head takes the header's first 100 bytes and
    exits while the samples stream out; the next chunk (a second at most) meets EPIPE and the run
    ends at once, quietly."""
    p, first, err = into_head(["-p", str(guest.gdbport), "-e", guest.kernel, "-q", "-f", "capture", "-o", "-"],
                              ["-c", "100"], cwd=tmp_path)
    assert len(first) == 100 and first[:8] == b"GDBSAMP\0", first[:8]
    assert_quiet_and_resumed(guest, p, err)
    assert os.listdir(tmp_path) == []


def test_top_plain_frames_into_head_n_2(guest):
    """`gdbsample top | head -n 2`: head reads the first frame's header (after the blank line
    before every frame) and exits; top's next round finds the pipe without a reader and ends as
    on q."""
    p, first, err = into_head(["top", "-p", str(guest.gdbport), "-e", guest.kernel, "-q", "--interval", "0.2"],
                              ["-n", "2"])
    assert first.startswith(b"\ngdbsample top: "), first
    assert_quiet_and_resumed(guest, p, err)
