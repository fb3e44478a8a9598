# SPDX-License-Identifier: MIT
"""Runs GDB (batch) with a script against a test guest; the process is waited for or killed by its pid."""
import json
import os
import socket
import subprocess

import conftest

GDBSCRIPTS = os.path.join(conftest.ROOT, "gdbscripts")
GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")


def gdb_batch(args, env=None, timeout=120, elf=None, gdb="gdb"):
    """gdb -batch -nx ELF ARGS (ELF: kernel.elf by default; gdb="gdb-multiarch" for another
    architecture's ELF); returns the CompletedProcess (subprocess.run kills gdb by its pid on
    timeout and raises TimeoutExpired)."""
    cmd = [gdb, "-batch", "-nx", elf or conftest.KERNEL] + list(args)
    return subprocess.run(cmd, env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                          timeout=timeout)


def qmp_run_state(path):
    """The guest's run state from QMP query-status: 'running', 'paused', ..."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        stream = s.makefile("rw")
        stream.readline()  # the QMP greeting
        reply = {}
        for command in ("qmp_capabilities", "query-status"):
            stream.write(json.dumps({"execute": command}) + "\n")
            stream.flush()
            reply = {}
            while "return" not in reply and "error" not in reply:  # skip asynchronous events
                reply = json.loads(stream.readline())
        return reply["return"]["status"]
