# SPDX-License-Identifier: MIT
"""gdbsample top's full-screen view on a real terminal: tmux's, on a private server (issue 23).

Each test boots the test kernel (the `boot` fixture stops QEMU by pid) and runs `gdbsample top`
in a detached tmux session on a server of its own (`tmux -L <unique>`, killed on every way out,
which also ends gdbsample through SIGHUP). The pane is read with capture-pane; keys are sent with
send-keys. Every wait is for a state of the screen, with a bound that fails instead of hanging;
a frozen (paused) view is read where the numbers must agree with each other, so a capture never
mixes two frames.
"""
import math
import os
import re
import secrets
import shutil
import subprocess
import time

import conftest
import crosscheck
import pytest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
ROW = re.compile(r"^\s+(\d+\.\d)\s+(\d+\.\d)\s+(\d+)\s+(\d+)  (\S.*)$")
SAMPLES = re.compile(r"^(\d+) samples, \d+ idle")
DONE = "gdbsample-exit="
BOUND = 90  # seconds any one state may take to appear on a loaded host: a bound on a hang, not a bar


@pytest.fixture
def tmux():
    """tmux(shell command, cols, rows) -> a Pane; every server is killed at teardown."""
    exe = shutil.which("tmux")
    if not exe:
        pytest.skip("tmux is not installed (make deps installs it)")
    env = dict(os.environ, TERM="xterm")
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    socks = []

    def start(command, cols, rows):
        sock = "gdbsample-top-%d-%s" % (os.getpid(), secrets.token_hex(4))
        socks.append([sock, None])
        subprocess.run([exe, "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(cols),
                        "-y", str(rows), "sh", "-c", command], check=True, env=env, timeout=30)
        pane = Pane(exe, sock, env)
        socks[-1][1] = pane.format("#{socket_path}") or None  # the socket file, removed with the server
        return pane

    try:
        yield start
    finally:
        for sock, path in socks:
            subprocess.run([exe, "-L", sock, "kill-server"], capture_output=True, env=env, timeout=30)
            if path and os.path.basename(path) == sock and os.path.exists(path):
                os.unlink(path)


class Pane:
    def __init__(self, exe, sock, env):
        self.tmux = [exe, "-L", sock]
        self.env = env

    def _run(self, *args):
        r = subprocess.run(self.tmux + list(args), capture_output=True, text=True, env=self.env, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def lines(self):
        return [line.rstrip() for line in self._run("capture-pane", "-p", "-t", "t").splitlines()]

    def format(self, fmt):
        return self._run("display-message", "-p", "-t", "t", fmt).strip()

    def alternate(self):
        """1 while the pane shows the alternate screen."""
        return self.format("#{alternate_on}") == "1"

    def keys(self, *keys):
        self._run("send-keys", "-t", "t", *keys)

    def resize(self, cols, rows):
        self._run("resize-window", "-t", "t", "-x", str(cols), "-y", str(rows))

    def wait(self, cond, what, timeout=BOUND):
        """Reads the pane until cond(lines) is true; -> those lines (fails after timeout seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.lines()
            if cond(lines):
                return lines
            if time.monotonic() > deadline:
                pytest.fail("%s: not seen in %d s; the pane:\n%s" % (what, timeout, "\n".join(lines)))
            time.sleep(0.1)


def top(g, *extra):
    """The shell line: top, then its exit status and the terminal's modes, then a long sleep (the
    pane stays to be read). The shell traps SIGINT: Ctrl-C reaches the whole foreground group,
    and the shell must outlive it to say how top ended."""
    return ("trap : INT; %s top -p %d -e %s %s; echo %s$?; echo modes $(stty -a | tr ' ;' '\\n\\n' | "
            "grep -x -- '-\\{0,1\\}icanon\\|-\\{0,1\\}echo'); sleep 600"
            % (GDBSAMPLE, g.gdbport, conftest.KERNEL, " ".join(extra), DONE))


def header_at_top(lines):
    return bool(lines) and lines[0].startswith("gdbsample top: ") and any(map(SAMPLES.match, lines[1:3]))


def samples(lines):
    """The sample count in the header, or -1 (no header on the screen)."""
    return next((int(m.group(1)) for m in map(SAMPLES.match, lines[:4]) if m), -1)


def rows(lines):
    """[(pct_self, pct_total, self, total, name)] of the function rows on the screen."""
    out = []
    for line in lines:
        m = ROW.match(line)
        if m:
            out.append((float(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5)))
    return out


def paused(lines):
    return len(lines) > 1 and "[PAUSED" in lines[1]


def check_numbers(lines):
    """The frame's numbers agree: distinct functions, each share its count over the samples, the
    %self column summing to at most 100 (each entry rounded to 0.1), counts within the total."""
    n, rs = samples(lines), rows(lines)
    assert rs, lines
    names = [r[4] for r in rs]
    assert len(set(names)) == len(names), lines                   # the bug: one function, 15 times
    assert sum(r[2] for r in rs) <= n, lines
    assert sum(r[0] for r in rs) <= 100 + 0.05 * len(rs), lines
    for pct_self, pct_total, self_, total, name in rs:
        assert self_ <= total <= n, (name, lines)
        assert abs(pct_self - 100.0 * self_ / n) <= 0.051 and abs(pct_total - 100.0 * total / n) <= 0.051, (name, lines)
    return n, rs


def ended(lines):
    """top has exited and the shell said how: the exit status, then the modes line."""
    return any(DONE in line for line in lines) and any(line.startswith("modes ") for line in lines)


def modes_restored(lines):
    """The terminal's modes printed after top exited: canonical input and echo are back."""
    flags = next((line.split()[1:] for line in lines if line.startswith("modes ")), None)
    return flags is not None and sorted(flags) == ["echo", "icanon"]


def test_top_keys_sort_pause_chains_and_q(boot, tmux):
    """work chain 6: chain6 holds every self sample, chain1..5, work_main and task_entry every
    total one. By self chain6 comes first; by total chain1 does (its total is chain6's or more,
    and ties go by name). Pause freezes the view (a redraw shows the same numbers); c hides the
    chains; q leaves with 0, the normal screen back and the terminal's modes restored."""
    g = boot(smp=1)
    g.work("chain 6")
    pane = tmux(top(g, "-r", "200"), 120, 40)
    lines = pane.wait(lambda ls: header_at_top(ls) and any(r[4] == "chain6" for r in rows(ls)), "the first rows")
    assert pane.alternate(), lines
    assert "keys: q quit" in "\n".join(lines[:4]) and "hottest chains:" in lines, lines
    lines = pane.wait(lambda ls: samples(ls) >= 200, "200 samples")

    pane.keys("p")
    frozen = pane.wait(paused, "the view paused")
    n, rs = check_numbers(frozen)
    assert rs[0][4] == "chain6" and rs[0][2] >= 0.9 * n, frozen
    assert [r[2] for r in rs] == sorted((r[2] for r in rs), reverse=True), frozen
    assert "sorted by self" in frozen[1], frozen

    pane.keys("t")                                   # re-sorted from the frozen counts
    by_total = pane.wait(lambda ls: paused(ls) and "sorted by total" in ls[1], "sorted by total")
    assert samples(by_total) == n, by_total          # still the frozen frame
    n, rt = check_numbers(by_total)
    assert sorted(rt) == sorted(rs), (frozen, by_total)   # the same rows, in another order
    assert [(-r[3], r[4]) for r in rt] == sorted((-r[3], r[4]) for r in rt), by_total  # ties by name
    names = [r[4] for r in rt]
    assert names.index("chain1") < names.index("chain6") and rt[0][4] != "chain6", by_total

    pane.keys("c")
    hidden = pane.wait(lambda ls: "hottest chains:" not in ls, "the chains hidden")
    assert samples(hidden) == n and paused(hidden), hidden

    pane.keys("p")                                   # resumed: the counts move on
    pane.wait(lambda ls: not paused(ls) and samples(ls) > n, "the counts moving again")
    pane.keys("s")
    pane.wait(lambda ls: "sorted by self" in ls[1] and rows(ls) and rows(ls)[0][4] == "chain6", "sorted by self")
    pane.keys("c")
    pane.wait(lambda ls: "hottest chains:" in ls, "the chains shown again")

    pane.keys("q")
    end = pane.wait(ended, "gdbsample's exit")
    assert DONE + "0" in "\n".join(end), end
    assert not pane.alternate(), end                 # the alternate screen left
    assert not any(line.startswith("gdbsample top:") for line in end), end
    assert modes_restored(end), end
    assert g.cmd("uptime").startswith("up ")


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "guest-gone"])
def test_top_restores_the_terminal_on_every_way_out(boot, tmux, how):
    """Ctrl-C and SIGTERM end the view as q does (exit 0); a guest that goes away ends it with the
    error on the normal screen (exit 1). Each time the alternate screen is left and the modes are
    restored."""
    g = boot(smp=1)
    g.work("chain 6")
    pane = tmux(top(g, "-r", "100"), 100, 30)
    pane.wait(lambda ls: header_at_top(ls) and rows(ls), "the first rows")
    assert pane.alternate()
    if how == "ctrl-c":
        pane.keys("C-c")
    elif how == "sigterm":
        shell = int(pane.format("#{pane_pid}"))  # the pane's sh, whose one child is gdbsample
        with open("/proc/%d/task/%d/children" % (shell, shell)) as f:
            kids = [int(x) for x in f.read().split()]
        assert len(kids) == 1, kids
        pid = kids[0]
        with open("/proc/%d/comm" % pid) as f:
            assert f.read().strip() == "gdbsample"
        os.kill(pid, 15)
    else:
        g.stop()                                      # QEMU killed by its pid: the stub's socket closes
    end = pane.wait(ended, "gdbsample's exit")
    text = "\n".join(end)
    assert not pane.alternate(), end
    assert modes_restored(end), end
    if how == "guest-gone":
        assert DONE + "1" in text, end
        assert re.search(r"^gdbsample: connection to \S+ closed.* \(QEMU exited\?\)", text, re.M), end
    else:
        assert DONE + "0" in text, end
        assert g.cmd("uptime").startswith("up ")


def test_top_fits_the_terminal_and_follows_a_resize(boot, tmux):
    """At 120x40 the header stays on the first line (issue 23: it scrolled off), no line is wider
    than the terminal, and rows are cut to its height; after a resize to 60x12 the same holds at
    the new size."""
    g = boot(smp=1)
    g.work("chain 6")
    pane = tmux(top(g, "-r", "200"), 120, 40)
    lines = pane.wait(lambda ls: header_at_top(ls) and "hottest chains:" in ls, "a whole frame")
    assert len(lines) == 40 and max(map(len, lines)) <= 120, lines
    assert lines[0].startswith("gdbsample top: 1 vCPUs, "), lines
    pane.resize(60, 12)
    # tmux alone would cut the old frame: the chains' title within 12 lines shows a new layout
    small = pane.wait(lambda ls: len(ls) == 12 and header_at_top(ls) and "hottest chains:" in ls,
                      "the frame redrawn at 60x12")
    assert max(map(len, small)) <= 60 and len(small[0]) == 60, small  # the header cut to the width
    assert any(line.startswith("  %self  %total") for line in small), small
    assert rows(small), small
    pane.keys("q")
    end = pane.wait(ended, "gdbsample's exit")
    assert DONE + "0" in "\n".join(end) and not pane.alternate(), end


def test_top_shares_match_record(boot, tmux):
    """work split 5 3 2 on one vCPU: the shares of split_a/b/c among the three, from top's paused
    view, equal record's on the same workload. Each side has >= 3000 samples of the three; the
    difference of two binomial shares p has standard deviation sqrt(p(1-p)(1/n1 + 1/n2)) (at most
    1.3 pp at 3000 each); the bound is 4.5 of those. While the split's vCPU thread waits for a host
    core (schedstat says how long) the stops are no longer uniform in guest time and either run
    may be biased: then the contended bound of test_split_shares_within_4pp (12 pp) applies."""
    g = boot(smp=1)
    g.work("split 5 3 2")
    window = crosscheck.WaitWindow(g.proc.pid)
    pane = tmux(top(g, "-r", "500"), 120, 40)
    pane.wait(lambda ls: header_at_top(ls) and samples(ls) >= 3000 and
              sum(r[2] for r in rows(ls) if r[4].startswith("split_")) >= 3000, "3000 samples in top", timeout=240)
    pane.keys("p")
    frozen = pane.wait(paused, "the view paused")
    n, rs = check_numbers(frozen)
    top_counts = {r[4]: r[2] for r in rs if r[4] in ("split_a", "split_b", "split_c")}
    pane.keys("q")
    end = pane.wait(ended, "gdbsample's exit")
    assert DONE + "0" in "\n".join(end), end

    def run_once():
        r = subprocess.run([GDBSAMPLE, "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "500", "-d", "8",
                            "-f", "folded", "-q"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r
    rec, _, _ = conftest.split_shares(g, run_once)
    waited = window.waited()
    assert waited is not None
    n_top = sum(top_counts.values())
    assert n_top >= 3000 and len(top_counts) == 3, frozen
    n_rec = 3000  # split_shares saw at least this many; the smallest n gives the widest bound
    for name in ("split_a", "split_b", "split_c"):
        share = 100.0 * top_counts[name] / n_top
        p = (share + rec[name]) / 200.0
        sigma = 100.0 * math.sqrt(p * (1 - p) * (1.0 / n_top + 1.0 / n_rec))
        bound = 4.5 * sigma if waited <= crosscheck.CONTENDED else 12
        assert abs(share - rec[name]) <= bound, (name, share, rec, bound, waited, frozen)


def test_top_interval_paces_the_plain_frames(boot):
    """--interval 0.25 on a pipe for -d 3: about 12 frames (deadlines every 0.25 s, absolute: a late
    frame makes the next no later); at least 6 even if the loop stalled for half the run, at most
    3 when --interval is ignored (one a second). No escape codes in a pipe."""
    g = boot(smp=1)
    g.work("chain 6")
    r = subprocess.run([GDBSAMPLE, "top", "-p", str(g.gdbport), "-e", conftest.KERNEL, "-r", "200", "-d", "3",
                        "--interval", "0.25"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "\033" not in r.stdout
    assert 6 <= r.stdout.count("gdbsample top:") <= 13, r.stdout
