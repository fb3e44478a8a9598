# SPDX-License-Identifier: MIT
"""qmpclient.py: one QMP command on a guest's QMP socket -- for the tests and the benchmarks."""
import json
import socket


class QmpError(AssertionError):
    """QEMU sent a line that is not JSON (an AssertionError, so a test reports it as a failure)."""


def qmp(path, command, arguments=None):
    """One QMP command on a guest's QMP socket (capabilities negotiated first); its "return"."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        f = s.makefile("rw")
        seen = []

        def message():
            while True:
                seen.append(f.readline())
                # QEMU 7.2 may hand a new client the tail of an event it was writing to the last one
                # (seen beside CPU hogs: ': "STOP"}' after the greeting): not a message of ours.
                if seen[-1].strip() and not seen[-1].lstrip().startswith("{"):
                    continue
                try:
                    return json.loads(seen[-1])
                except ValueError as e:  # say what QEMU sent
                    raise QmpError(f"QMP {command} on {path}: {e}; the lines read: {seen!r}") from None

        message()  # greeting
        for cmd in ({"execute": "qmp_capabilities"}, dict({"execute": command}, **(
                {"arguments": arguments} if arguments else {}))):
            f.write(json.dumps(cmd) + "\n")
            f.flush()
            while True:  # skip asynchronous events
                msg = message()
                if "return" in msg or "error" in msg:
                    break
        return msg.get("return")


def hmp(path, line):
    """A human monitor command through QMP; its text output."""
    return qmp(path, "human-monitor-command", {"command-line": line})
