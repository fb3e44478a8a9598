# SPDX-License-Identifier: MIT
"""gdbsample's option values, refused before it connects (no QEMU): --comm patterns that would
take gigabytes to compile (issue 22: 'a{1,32767}' took ~8 GB and 35 s), and numbers strtoul/strtod
would read in part. Run under a 512 MB address-space limit, so an unbounded regcomp fails fast
(ENOMEM, a different message) instead of swapping the host."""
import os
import resource
import socket
import subprocess

import pytest

import conftest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
LIMIT = 512 << 20


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gdbsample(*args):
    return subprocess.run([GDBSAMPLE, "-p", str(unused_port()), "-e", conftest.KERNEL] + list(args),
                          capture_output=True, text=True, timeout=60, preexec_fn=limited)


@pytest.mark.parametrize("pattern", ["a{1,32767}", "(a{1,60}){1,60}(b{1,60}){1,60}", "x{0,255}"])
def test_comm_too_costly_is_refused(pattern):
    r = gdbsample("--comm", pattern, "-d", "1")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("gdbsample: --comm: bad regular expression (") and r.stderr.count("\n") == 1
    assert "repeat count" in r.stderr or "copies" in r.stderr, r.stderr


@pytest.mark.parametrize("flag, value", [("--kernel-range", "-1:ffff"), ("--kernel-range", " ff:100"),
                                         ("--cpus", "+1"), ("--cpus", "1, 2"), ("-d", " 1"), ("-d", "0x10"),
                                         ("--max-pause", "+0.5"), ("--kaslr-offset", "+1000")])
def test_numbers_read_whole(flag, value):
    r = gdbsample(flag, value)
    assert r.returncode == 2 and r.stderr.startswith("gdbsample: %s: " % flag), r.stderr


def test_good_comm_goes_on_to_connect():
    """A pattern within the bounds passes the parser: the run fails later, on the port."""
    r = gdbsample("--comm", "^(kworker|bash)[0-9/:]{0,12}$", "-d", "1")
    assert r.returncode == 1 and "--comm" not in r.stderr, r.stderr
