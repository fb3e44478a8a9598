# SPDX-License-Identifier: MIT
"""Resume a VM that gdbsample left paused on purpose: one `c` packet to its gdbstub, no other library.

Since issue 22, `gdbsample dump` on a VM another client paused reads it and leaves it paused (the
operator's intent); tests that pause a VM with GDB and then read it with gdbsample resume it here.
Only `c` is sent: after a `D;1`, a `?` or another `D;1` once crashed QEMU 7.2 (shared notes).
"""
import socket


def resume(port, host="127.0.0.1", timeout=5.0):
    """Sends `$c#63` (acknowledging first) and waits for QEMU's `+`; raises OSError on failure."""
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(b"+$c#63")
        got = b""
        while b"+" not in got:
            chunk = s.recv(64)
            if not chunk:
                raise OSError(f"gdbstub {host}:{port} closed before acknowledging `c`")
            got += chunk
