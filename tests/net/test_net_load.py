# SPDX-License-Identifier: MIT
"""netload in both directions on the real kernel, and profile (in-guest and gdbsample) while the
guest sinks a stream: both must find the virtio-net/UDP receive path."""
import os
import re
import subprocess
import time

import pytest

import conftest
import crosscheck
import netcheck
import udpshell

NETLOAD = os.path.join(conftest.ROOT, "tools", "netload")
GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
# the receive path: ring -> stack -> listener (virtio_net_wait, where the net task sleeps, is not work)
RX_FUNCS = {"virtio_net_poll", "net_input", "ip_input", "udp_input", "sink_input", "checksum", "rx_give"}
HOST_LINE_TO = re.compile(r"netload: to-guest sent (\d+) packets, (\d+) bytes in (\d+) ms \((\d+) pkt/s\), "
                          r"max lateness ([\d.]+) ms")
HOST_LINE_FROM = re.compile(r"netload: from-guest received (\d+) packets, (\d+) bytes, (\d+) lost \([\d.]+%\), "
                            r"(\d+) short, (\d+) duplicates, (\d+) malformed, ")


@pytest.fixture
def g(boot):
    return boot(smp=2, net="user")


# Loss bounds. With QEMU's threads on host cores, loss is a host stall that overflowed QEMU's
# socket buffer: at most 1 %. When its two busiest threads waited for a core for 10 % of the run
# or more (schedstat; 4 % quiet, ~40 % beside two CPU hogs), such stalls are the run itself:
# 2.3 % was seen so; allow 25 %, which still fails a stack that drops or double-counts. On a host
# loaded well past two hogs the thread may wait ~45 % of the run, and while it waits the socket
# buffer overflows: 35.6 % was lost so at 44 % waited. So contended runs allow the larger of 25 %
# and the share waited plus the quiet loss -- what a stack that drops nothing itself can lose.
# And the sender itself can stall: netload's own `max lateness` is how long it fell behind, after
# which it sends what it owes at once -- a burst of lateness x rate packets that the socket buffer
# may not hold (a quiet make test: 110 ms late, 550 packets at once, 287 lost, QEMU's threads
# waiting 8.6 %). Those packets are allowed lost on top.
LOSS_QUIET, LOSS_CONTENDED = 0.01, 0.25


def loss_bound(waited):
    assert waited is not None, "no schedstat for QEMU's threads"
    return LOSS_QUIET if waited <= 0.10 else max(LOSS_CONTENDED, min(0.9, waited + LOSS_QUIET))


def netload(g, mode, size, pps, seconds):
    """(host line, guest line, the largest share of the run one of QEMU's two busiest threads
    waited for a host core)."""
    window = crosscheck.WaitWindow(g.proc.pid)
    r = subprocess.run([NETLOAD, mode, "--port", str(g.udp_port), "--sink-port", str(g.sink_port),
                        "--size", str(size), "--pps", str(pps), "--seconds", str(seconds)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    host, guest = r.stdout.splitlines()
    waited = window.waited(2)
    return host, guest, waited


def test_to_guest_counts_agree_within_the_reported_loss(g):
    """Sent = received + missing, where missing is what the pair reports (the guest's gap count
    plus any tail only the sender can see). Tolerance: at most 1 % missing at 5000 pkt/s of 512
    bytes; the guest sank 20000 pkt/s without loss when measured, so 1 % only allows a host stall
    that overflows QEMU's socket buffer, while a stack that dropped or double-counted would fail
    (loss_bound: more when the host starved QEMU's threads during the run)."""
    host, guest, waited = netload(g, "to-guest", 512, 5000, 3)
    m = HOST_LINE_TO.match(host)
    assert m, host
    sent, sent_bytes, late_ms = int(m[1]), int(m[2]), float(m[5])
    s = udpshell.parse_sink_line(guest)
    assert sent == 15000 and sent_bytes == sent * 512
    assert s["packets"] <= sent and s["bytes"] == s["packets"] * 512
    burst = late_ms / 1000 * 5000  # what the sender owed at once after its longest stall
    assert s["lost"] <= sent - s["packets"] <= loss_bound(waited) * sent + burst, (host, guest, waited)
    assert s["duplicates"] == 0 and s["malformed"] == 0
    # the guest's own clock saw the offered rate: the sequence numbers it saw (received or counted
    # lost) over its window -- its received rate alone falls with the loss (3739 pkt/s at 23.8 %)
    assert 4000 <= (s["packets"] + s["lost"]) * 1000 / max(1, s["ms"]) <= 6000, guest


def test_from_guest_counts_agree_within_the_reported_loss(g):
    """Every sequence number the guest used is received, lost in a gap, or short at the end:
    received + lost + short = sent + not sent, exactly. Tolerance: loss at most 1 % plus what the
    guest itself could not send (ring full), for the same reason as above."""
    host, guest, waited = netload(g, "from-guest", 512, 5000, 3)
    m = HOST_LINE_FROM.match(host)
    assert m, host
    got, got_bytes, lost, short, dups, malformed = map(int, m.groups())
    sent = udpshell.parse_send_line(guest)
    assert got + lost + short == sent["packets"] + sent["not_sent"], (host, guest)
    assert got <= sent["packets"] and got_bytes == got * 512 and dups == 0 and malformed == 0
    assert sent["packets"] - got <= lost + short <= loss_bound(waited) * sent["packets"] + sent["not_sent"], \
        (host, guest, waited)
    # every slot of 3 s at 5000/s is accounted for: sent, not sent (ring full), or -- on a host
    # that starved the vCPU until the time was up -- never reached (late)
    assert sent["packets"] + sent["not_sent"] + sent["late"] == 15000, guest


def profile_under_load(g):
    """The in-guest profile and gdbsample over the same 2 s while netload streams to the guest:
    -> (in-guest report, gdbsample's report, netload's output)."""
    load = subprocess.Popen([NETLOAD, "to-guest", "--port", str(g.udp_port), "--sink-port", str(g.sink_port),
                             "--size", "1472", "--pps", "20000", "--seconds", "8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)  # the sink is up and the stream flowing
        ext = subprocess.Popen([GDBSAMPLE, "-p", str(g.gdbport), "-d", "2", "-r", "200", "-e", conftest.KERNEL],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            inguest = g.cmd("profile 2000 all 8", timeout=60)
            external, err = ext.communicate(timeout=60)
        finally:
            if ext.poll() is None:
                ext.kill()
                ext.wait()
        out, err_load = load.communicate(timeout=60)
    finally:
        if load.poll() is None:
            load.kill()
            load.wait()
    assert ext.returncode == 0, err
    assert load.returncode == 0, err_load
    return inguest, external, out


def rx_share(report):
    """-> (the top chains touching RX_FUNCS, their share of the report's samples in %)."""
    total = int(re.search(r"^(\d+) samples on", report, re.M)[1])
    rx = [(n, stack) for n, stack in netcheck.chains(report) if RX_FUNCS & set(stack)]
    return rx, 100.0 * sum(n for n, _ in rx) / max(total, 1)


def test_profile_during_netload_finds_the_receive_path_in_guest_and_in_gdbsample(g):
    """1472-byte datagrams at 20000 pkt/s: the checksum and the stack are real work. Measured:
    the RX chains among the top 8 held 18 % of the in-guest samples (the rest mostly the net
    task's wait) and about 50 % of gdbsample's (which leaves idle out). Threshold 5 % in each.
    A starved host can stall the stream for a whole window (gdbsample once saw 24 samples, none
    in the receive path, beside two hogs; and three windows in a row of 21-odd, beside two hogs and
    the rest of make test): up to six windows are tried, each with its own load."""
    for _ in range(6):
        inguest, external, out = profile_under_load(g)
        found = {name: rx_share(report) for name, report in (("in-guest", inguest), ("gdbsample", external))}
        if all(rx and share >= 5 for rx, share in found.values()):
            break
    for name, report in (("in-guest", inguest), ("gdbsample", external)):
        rx, share = found[name]
        assert rx and share >= 5, f"{name}: receive path {share:.1f}% of samples\n{report}"
        assert any("virtio_net_poll" in stack or "net_input" in stack for _, stack in rx), report
    assert udpshell.parse_sink_line(out.splitlines()[1])["packets"] > 0, out
