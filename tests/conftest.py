# SPDX-License-Identifier: MIT
"""Shared pytest setup: paths, and a fixture that boots the test kernel and always stops it."""
import os
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# GDBSAMPLE_BUILD points the tests at another build directory (make BUILD=...); default build/.
BUILD = os.environ.get("GDBSAMPLE_BUILD") or os.path.join(ROOT, "build")
KERNEL = os.path.join(BUILD, "kernel.elf")
KERNEL_NOFP = os.path.join(BUILD, "kernel-nofp.elf")  # the same kernel without frame pointers
KERNEL_A64 = os.path.join(BUILD, "aarch64", "kernel.elf")  # the aarch64 port (QEMU virt, GICv3)
KERNEL_A64_NOFP = os.path.join(BUILD, "aarch64", "kernel-nofp.elf")
KERNEL_RV64 = os.path.join(BUILD, "riscv64", "kernel.elf")  # the riscv64 port (QEMU virt, S-mode under OpenSBI)
GDBSAMPLE = os.path.join(BUILD, "gdbsample")
# The one place the tests' imports are set up: the project's Python lives in tools/ (guest,
# linuxguest, qemu_versions, udpshell), analysis/ (gdbsample_analysis) and vm-configs/ (vmconfig).
for _d in ("tools", "analysis", "vm-configs"):
    if os.path.join(ROOT, _d) not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, _d))

from guest import Guest  # noqa: E402
import qemu_versions  # noqa: E402
import qmpclient  # noqa: E402

# QEMU versions (tools/qemu_versions.py): guests run on the system's QEMU (7.2) unless a test is
# parametrized over the `qemu` fixture -- @conftest.ON_EACH_QEMU, or a "qemu" column with
# indirect=["qemu"] -- or pytest runs with --qemu VERSION. The suites say which tests run on each.
QEMU_VERSIONS = qemu_versions.VERSIONS
ON_EACH_QEMU = pytest.mark.parametrize("qemu", QEMU_VERSIONS, indirect=True)
_qemu_skip = {}  # version -> why it cannot run here (None: it can); decided once per session


def pytest_addoption(parser):
    parser.addoption("--qemu", choices=QEMU_VERSIONS, default=qemu_versions.SYSTEM,
                     help="QEMU version for guests of tests not parametrized over versions "
                          f"(default {qemu_versions.SYSTEM}, the system's)")


def folded_rows(text):
    """Folded stacks (`a;b;c COUNT` lines) -> [(frames root first, count)]."""
    rows = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        rows.append((stack.split(";"), int(count)))
    return rows


def split_shares(g, run_once, want=3000, runs=6):
    """gdbsample's shares of split_a/b/c on guest g running `work split 5 3 2`: run_once() (a
    gdbsample run to completion, folded output) is repeated, up to `runs` times, until `want`
    leaf samples of the three were seen -- a loaded host reaches fewer per run. Returns (shares in
    percent, the share of the time QEMU's busiest vCPU thread waited for a host core
    (crosscheck.busiest_waited), the last run's stderr)."""
    import crosscheck
    counts = {"split_a": 0, "split_b": 0, "split_c": 0}
    window = crosscheck.WaitWindow(g.proc.pid)
    for _ in range(runs):
        r = run_once()
        for frames, n in folded_rows(r.stdout):
            if frames[-1] in counts:
                counts[frames[-1]] += n
        if sum(counts.values()) >= want:
            break
    total = sum(counts.values())
    assert total >= want, (counts, r.stderr)
    waited = window.waited()
    assert waited is not None, "no schedstat for QEMU's vCPU threads"
    return {k: 100.0 * v / total for k, v in counts.items()}, waited, r.stderr


@pytest.fixture
def qemu(request):
    """The QEMU version this test's guests run on: its parameter, else --qemu. 10.0 is fetched on
    first use (cached under BUILD/qemu10); the test skips, with the reason, only when Debian's
    archive is unreachable and nothing is cached."""
    version = getattr(request, "param", None) or request.config.getoption("--qemu")
    if version not in _qemu_skip:
        _qemu_skip[version] = qemu_versions.skip_reason(version, BUILD)
    if _qemu_skip[version]:
        pytest.skip(_qemu_skip[version])
    return version


def gdbsample(*args, timeout=180, **kw):
    """Runs build/gdbsample with args (each made a str) to completion; the CompletedProcess (text
    stdout and stderr). The helper every test file that runs gdbsample shares."""
    return subprocess.run([GDBSAMPLE] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, **kw)


def need_built(*paths):
    """Fails the test (not skips: make test builds them) for the first path that is missing."""
    for p in paths:
        if not os.path.exists(p):
            pytest.fail(f"{p} is missing: run `make {os.path.relpath(p, ROOT)}`")


@pytest.fixture
def need_gdbsample():
    """Use it autouse in a module that runs gdbsample: a missing binary fails with the make line."""
    need_built(GDBSAMPLE)


@pytest.fixture
def boot(qemu):
    """boot(smp=2, kernel=KERNEL, ...) -> a started Guest on the `qemu` fixture's QEMU (unless
    qemu= is given); every guest is stopped by pid at teardown."""
    if not os.path.exists(KERNEL):
        pytest.fail(f"{KERNEL} is missing: run `make kernel` (make test builds it)")
    guests = []

    def start(smp=2, kernel=None, **kw):
        path = kernel or KERNEL
        if not os.path.exists(path):
            pytest.fail(f"{path} is missing: run `make kernel` (make test builds it)")
        kw.setdefault("qemu", qemu)
        g = Guest(path, smp=smp, **kw)
        guests.append(g)
        return g.start()

    yield start
    for g in guests:
        g.stop()


@pytest.fixture(scope="module")
def shared_guest(request):
    """One -smp 2 guest (on --qemu's QEMU) for a module's tests that change nothing (bad-input tables)."""
    if not os.path.exists(KERNEL):
        pytest.fail(f"{KERNEL} is missing: run `make kernel` (make test builds it)")
    g = Guest(KERNEL, smp=2, qemu=request.config.getoption("--qemu"))
    try:
        yield g.start()
    finally:
        g.stop()


# The two builds of the test kernel the sampler is checked on: frame pointers in every function,
# and none (DWARF CFI only, as most kernels are built).
KERNELS = {"fp": KERNEL, "nofp": KERNEL_NOFP}


qmp = qmpclient.qmp  # one QMP command (tools/qmpclient.py), shared with the benchmarks


def qmp_status(path):
    """QMP query-status of a guest: 'running', 'paused', ..."""
    return qmp(path, "query-status")["status"]


hmp = qmpclient.hmp


def wait_running(path, timeout=3.0):
    """The guest's status once it is 'running', or the last status seen after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        st = qmp_status(path)
        if st == "running" or time.monotonic() > deadline:
            return st
        time.sleep(0.05)


# -- `make check`: the tests that start no QEMU, build nothing big, drive no viewer app -------
# Tests that boot a guest are marked `qemu`: every test using a guest fixture automatically, and
# modules that start QEMU themselves with `pytestmark = pytest.mark.qemu`. Tests that build
# something big (the Debian package), drive a real browser (the speedscope app, the flame graph
# in headless Chromium), run gdb over every instruction of the kernel's entry code, or start a
# process per subcommand (the closed-pipe cases, every installed subcommand, record's
# gdbsample-analyze writers) are marked `slow`, with `pytestmark = pytest.mark.slow` or on the test.
# `make check` runs `-m "not qemu and not slow"`: the edit-compile loop's tests, in seconds.
GUEST_FIXTURES = {"boot", "shared_guest", "shape_guest", "boot_elf", "qemu", "linux61", "linux612_nokaslr"}


def pytest_configure(config):
    if "not qemu" in (config.option.markexpr or ""):  # then a guest booted is a test marked wrong
        os.environ["GDBSAMPLE_TESTS_WITHOUT_QEMU"] = "1"
    config.addinivalue_line("markers", "qemu: the test starts a QEMU guest (left out by `make check`)")
    config.addinivalue_line("markers", "slow: the test builds something big (the Debian package), drives "
                                       "a real viewer app in a browser, or starts a process per subcommand "
                                       "(left out by `make check`)")


# `make test` runs two workers with --dist loadgroup, every test in a group: its file's -- so a
# file's module-scoped guests stay on one worker, as --dist loadfile kept them -- except tests/linux/,
# one group, so each of its package-scoped Linux guests (20-50 s a boot under TCG) boots once, not
# once on each worker that runs one of its files. (tryfirst: before xdist's own hook reads the mark.)
SHARED_GROUPS = {"linux": os.path.join(ROOT, "tests", "linux")}


def xdist_group(path):
    """The group of the test file at path: a SHARED_GROUPS directory's name, or the file itself."""
    for name, d in SHARED_GROUPS.items():
        if str(path).startswith(d + os.sep):
            return name
    return os.path.relpath(str(path), ROOT)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if GUEST_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.qemu)
        item.add_marker(pytest.mark.xdist_group(xdist_group(item.path)))


class Stderr:
    """A process's stderr (text), read as it comes by a thread, so a test can wait for a line it
    printed (gdbsample's `attached`, a warning) before it acts."""

    def __init__(self, p):
        self.p, self.lines, self.cv = p, [], threading.Condition()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stderr:
            with self.cv:
                self.lines.append(line)
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)  # EOF
            self.cv.notify_all()

    def wait_for(self, text, timeout=60, times=1):
        """True once a line holding text (or, given a tuple, any of its texts) was printed -- `times`
        such lines; False at EOF or after timeout (a hang bound)."""
        texts = text if isinstance(text, tuple) else (text,)
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                if sum(1 for line in self.lines if line is not None and any(t in line for t in texts)) >= times:
                    return True
                if (self.lines and self.lines[-1] is None) or time.monotonic() >= end:
                    return False
                self.cv.wait(0.5)

    def so_far(self):
        """What it printed until now (text() waits for the end)."""
        with self.cv:
            return "".join(line for line in self.lines if line is not None)

    def text(self):
        self.t.join(timeout=60)
        with self.cv:
            return "".join(line for line in self.lines if line is not None)


def wire_stops(p, wire, stops=2, timeout=120):
    """True once gdbsample p, run with GDBSAMPLE_WIRE_LOG=wire, has sent its stop byte `stops`
    times: it attached and samples (or was killed, or the bound -- a hang, not a bar -- passed).
    A fixed sleep stood for this and was too short once two guests ran beside the suite: attaching
    took over a second, and a signal then is `interrupted`, a kill leaves no samples."""
    end, n, at, rest = time.monotonic() + timeout, 0, 0, ""
    while time.monotonic() < end and p.poll() is None:
        try:  # read on from where the last look ended (the log grows by a line per packet)
            with open(wire, errors="replace") as f:
                f.seek(at)
                text = rest + f.read()
                at = f.tell()
        except OSError:
            text = rest
        *lines, rest = text.split("\n")  # a line not yet ended waits for the next look
        n += sum(" > \\x03" in line for line in lines)
        if n >= stops:
            return True
        time.sleep(0.05)
    return False


def wire_env(wire):
    """The environment for a gdbsample run whose requests and replies are logged at wire."""
    return dict(os.environ, GDBSAMPLE_WIRE_LOG=str(wire))


def capture_has_samples(path):
    """Whether the capture gdbsample is writing at path (path.partial-*, flushed every second)
    holds a sample yet: a test that signals a run waits for this, not a fixed time (a loaded host
    can take seconds to connect, and a signal then is `interrupted while connecting`)."""
    import glob
    from gdbsample_analysis import capture as capmod
    for f in glob.glob(glob.escape(str(path)) + ".partial-*"):
        try:
            return any(True for _ in capmod.Capture(f).samples())
        except (capmod.CaptureError, ValueError, OSError):
            return False
    return False


def wait_capture_samples(p, path, timeout=60):
    """Until capture_has_samples(path), gdbsample p exits, or the bound (a hang, not a bar)."""
    end = time.monotonic() + timeout
    while not capture_has_samples(path) and p.poll() is None and time.monotonic() < end:
        time.sleep(0.1)
    return capture_has_samples(path)
