# SPDX-License-Identifier: MIT
"""The UDP shell on the real kernel: same output as the serial shell, retries answered from the
cache without running a command twice, the udpsh tool end to end."""
import os
import re
import socket
import subprocess

import pytest

import conftest
import netcheck
import udpshell

UDPSH = os.path.join(conftest.ROOT, "tools", "udpsh")


@pytest.fixture
def g(boot):
    return boot(smp=2, net="user")


def test_help_over_udp_is_the_serial_help(g):
    serial = g.cmd("help")
    r = subprocess.run([UDPSH, "--port", str(g.udp_port), "help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout == serial and re.search(r"^  net  ", serial, re.M) and re.search(r"^  netload ", serial, re.M)


def test_profile_over_udp_has_the_serial_shape(g):
    """Same form (header, then at most 3 chains of a leaf and its callers), same window, CPUs and
    source, and the busy chain task's chain in both; the counts differ as any two windows do."""
    g.work("chain 3")
    serial = g.cmd("profile 500 all 3", timeout=30)
    r = subprocess.run([UDPSH, "--port", str(g.udp_port), "profile", "500", "all", "3"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    grammar = re.compile(r"PSCC( Lc*){1,3}( \+)?")
    assert grammar.fullmatch(netcheck.form(r.stdout)) and grammar.fullmatch(netcheck.form(serial)), (r.stdout, serial)
    assert netcheck.header(r.stdout) == netcheck.header(serial) == ("500", "2", "tick 100 Hz")
    for report in (r.stdout, serial):
        assert any(stack[:3] == ["chain3", "chain2", "chain1"] for _, stack in netcheck.chains(report)), report


def test_a_retry_gets_the_cached_output_and_does_not_run_the_command_again(g):
    c = netcheck.udp(g)
    seq = c.next_seq()
    first = c.run("work chain 1", seq=seq).output
    again = c.run("work chain 1", seq=seq).output  # the same request, as a retry sends it
    assert first == again and re.match(rb"work: pid \d+ ", first), first
    chains = [t for t in g.ps() if t["name"] == "chain"]
    assert len(chains) == 1, g.ps()
    n = netcheck.counters(g.cmd("net"))
    assert n["udpsh_commands"] == 1 and n["udpsh_resent"] == 1, n  # run once, answered twice
    # the control: a new sequence number does run it again
    third = c.run("work chain 1").output
    assert third != first and len([t for t in g.ps() if t["name"] == "chain"]) == 2


def test_each_client_keeps_its_own_cached_reply(g):
    """A's retry must not rerun A's command just because B ran one in between."""
    a, b = netcheck.udp(g), netcheck.udp(g)
    seq = a.next_seq()
    first = a.run("work chain 1", seq=seq).output
    b.run("uptime")
    again = a.run("work chain 1", seq=seq).output
    assert first == again, (first, again)
    assert len([t for t in g.ps() if t["name"] == "chain"]) == 1, g.ps()


def test_long_output_arrives_in_numbered_chunks(g):
    for _ in range(40):  # ~35 bytes a `stacks` line: more than one 1024-byte chunk
        g.work("chain 2")
    serial = g.cmd("stacks")
    assert len(serial) > 1024
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.settimeout(30)
        s.sendto(udpshell.encode_request(77, "stacks"), ("127.0.0.1", g.udp_port))
        replies = []
        while not replies or not replies[-1][2] & udpshell.FLAG_LAST:
            replies.append(udpshell.parse_reply(s.recv(2048)))
    assert [r[:3] for r in replies] == [(77, i, udpshell.FLAG_LAST if i == len(replies) - 1 else 0)
                                        for i in range(len(replies))]
    assert all(len(r[3]) == udpshell.CHUNK_MAX for r in replies[:-1]) and len(replies) >= 2
    out = b"".join(r[3] for r in replies).decode()
    assert len(out) == len(serial) and out.splitlines()[0] == serial.splitlines()[0]


def test_udpsh_failure_is_one_line_when_the_guest_is_gone(boot):
    g = boot(smp=1, net="user")
    port = g.udp_port
    g.stop()
    r = subprocess.run([UDPSH, "--port", str(port), "--timeout", "1", "uptime"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1 and r.stdout == "" and r.stderr.startswith("udpsh: no reply from 127.0.0.1:")
    assert r.stderr.count("\n") == 1
