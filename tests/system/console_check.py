# SPDX-License-Identifier: MIT
"""A serial reader that falls behind, for the 16550 consoles (x86_64, riscv64): output waits for
a late reader and loses nothing; one that does not read at all costs counted bytes (txwait.h)."""
import re
import socket
import time

SYNC = "zzsync"  # an unknown command: its reply is a fixed text that marks the end of the output


def _raw_cycle(g, line):
    """The raw bytes (with the guest's \\r) of one command's echo, output and prompt."""
    g.sock.settimeout(10)
    g.sock.sendall((line + "\n").encode())
    raw = b""
    while not raw.endswith(b"\r\n> "):
        data = g.sock.recv(65536)
        assert data, "the serial connection closed"
        raw += data
    return raw


def _raw_until(g, end, timeout):
    """Raw bytes until they end with end (True), or until nothing more came for timeout s (False)."""
    raw = b""
    g.sock.settimeout(timeout)
    while not raw.endswith(end):
        try:
            data = g.sock.recv(65536)
        except socket.timeout:
            return raw, False
        assert data, "the serial connection closed"
        raw += data
    return raw, True


def dropped(g):
    """The console's count of output bytes given up, from `uptime` (0 when it names none)."""
    m = re.search(r"(\d+) output bytes dropped", g.cmd("uptime"))
    return int(m[1]) if m else 0


def late_reader_loses_nothing(g, late=0.6, n=6):
    """n `help`s sent at once (~5 KB, more than QEMU's socket holds unread), read late s after;
    each output whole. The console waits up to 2 s of guest time per byte (txwait.h), so late is
    well inside it even when the host runs this reader late too; the old 100000-poll wait lost
    bytes of a reader 0.5 s late."""
    assert g.buf == "", g.buf
    ref = _raw_cycle(g, "help")
    before = dropped(g)
    g.send("help\n" * n)
    time.sleep(late)
    raw, ok = _raw_until(g, ref * n, 30)
    assert ok and raw == ref * n, (len(raw), len(ref) * n, raw[-300:])
    assert dropped(g) == before


def unread_console_counts_every_loss(g, n=6, unread=4.0):
    """n `help`s sent at once and nothing read for unread s (> the 2 s a byte may wait): bytes are
    dropped, every one is counted (what arrived + the count = what the guest wrote), and the
    shell goes on. The end is found by sending SYNC until its whole reply arrives (a reply cut
    by the drops does not end the output; each one sent is in the sum)."""
    assert g.buf == "", g.buf
    help_raw = _raw_cycle(g, "help")
    sync_raw = _raw_cycle(g, SYNC)
    before = dropped(g)
    g.send("help\n" * n)
    time.sleep(unread)
    raw, k = b"", 0
    for k in range(1, 6):
        g.send(SYNC + "\n")
        more, ok = _raw_until(g, sync_raw, 3)
        raw += more
        if ok:
            break
    assert raw.endswith(sync_raw), raw[-300:]
    lost = dropped(g) - before
    assert lost > 0, "a console unread for 4 s dropped nothing: then nothing bounds its wait"
    assert len(raw) + lost == n * len(help_raw) + k * len(sync_raw), (len(raw), lost, k)
    assert g.cmd("help").rstrip() == help_raw.decode().replace("\r", "").partition("\n")[2][:-3].rstrip()
