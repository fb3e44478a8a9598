# SPDX-License-Identifier: MIT
"""Malformed input at both levels: ≥ 10,000 datagrams with bad payloads through user networking,
≥ 10,000 bad Ethernet/IPv4/UDP frames through a socket netdev. The kernel keeps answering on the
serial and the UDP shell, and its drop counters account for what was sent.

"Account" means: (1) every frame that reached the guest during the run is counted exactly once —
the growth of `rx frames` equals the growth of every receive-side drop counter, the UDP shell's
drops and the requests it served (the barrier requests below); no valid ARP frame is sent during
the run (`net` does not show the ARP counter, so none may hide in the sum);
(2) each malformed datagram lands in the counter its kind names (short, magic, oversized,
ip-checksum, fragment, ...), exactly, when none was lost before the guest; (3) at most 0.5 % were
lost before reaching the guest. Losses can only happen in QEMU's host socket buffer, and are
made unlikely by sending batches of 100 (well under that buffer) with a round trip through the
UDP shell after each, which the guest answers only after handling everything queued before it.
"""
import random
import socket
import threading
import time

import pytest

import frames as F
import netcheck
import udpshell

BATCH = 100
LOSS_MAX = 0.005
HOST_MAC, GUEST_MAC, OTHER_MAC = F.mac("52:54:00:12:35:02"), F.mac("52:54:00:12:34:56"), F.mac("52:54:00:99:88:77")
HOST_IP, GUEST_IP, OTHER_IP = F.ip4("10.0.2.2"), F.ip4("10.0.2.15"), F.ip4("10.0.2.99")
RX_COUNTERS = ("drop_short", "drop_not-for-us", "drop_ethertype", "drop_arp", "drop_ip-header", "drop_ip-checksum",
               "drop_fragment", "drop_protocol", "drop_udp-header", "drop_udp-checksum", "drop_no-port",
               "udpsh_drop_short", "udpsh_drop_magic", "udpsh_drop_oversized",
               "udpsh_commands", "udpsh_resent", "udpsh_duplicates", "udpsh_busy")


def not_magic(rng, n):
    data = bytes(rng.getrandbits(8) for _ in range(n))
    return data if data[:4] != udpshell.REQ_MAGIC else b"X" + data[1:]


def bad_payload(rng, i):
    """-> (datagram, the udpsh counter it must raise), cycling through the kinds."""
    kind = i % 4
    if kind == 0:   # short: 0-8 bytes, half of them a true prefix of a request
        n = rng.randrange(0, 9)
        data = (udpshell.REQ_MAGIC + b"\1\0\0\0")[:n] if rng.random() < 0.5 else not_magic(rng, n)
    elif kind == 1:  # wrong magic, a plausible request otherwise
        data = rng.choice([b"GSQ2", b"gsq1", b"GSR1", b"\0\0\0\0"]) + b"\1\0\0\0" + b"uptime"
    elif kind == 2:  # oversized: the right magic and 128..1464 command bytes
        data = udpshell.REQ_MAGIC + b"\2\0\0\0" + b"u" * rng.randrange(128, 1465)
    else:            # random bytes of any length up to a full datagram
        data = not_magic(rng, rng.randrange(0, 1473))
    if len(data) <= 8:
        return data, "udpsh_drop_short"
    return data, ("udpsh_drop_magic" if data[:4] != udpshell.REQ_MAGIC else "udpsh_drop_oversized")


def udp_frame(payload, dport=9000, dst_mac=GUEST_MAC, dst_ip=GUEST_IP, ucsum=None, ulen=None, **ip):
    seg = F.udp(HOST_IP, dst_ip, 40000, dport, payload, length=ulen, csum=ucsum)
    return F.eth(dst_mac, HOST_MAC, F.ETH_IP, F.ipv4(HOST_IP, dst_ip, seg, **ip))


def bad_frame(rng, i):
    """-> (frame, the counter it must raise): one of 18 kinds of malformed or unwanted frame,
    each otherwise valid (checksums computed) so only the named defect is tested."""
    shell = udpshell.encode_request(3, "uptime")
    kinds = [
        lambda: (bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 14))), "drop_short"),
        lambda: (udp_frame(shell, dst_mac=OTHER_MAC), "drop_not-for-us"),
        lambda: (F.eth(GUEST_MAC, HOST_MAC, F.ETH_IPV6, bytes(40)), "drop_ethertype"),
        lambda: (F.eth(GUEST_MAC, HOST_MAC, F.ETH_ARP, F.arp(1, HOST_MAC, HOST_IP, bytes(6), GUEST_IP)[:20]), "drop_arp"),
        lambda: (F.eth(GUEST_MAC, HOST_MAC, F.ETH_IP, F.ipv4(HOST_IP, GUEST_IP, b"")[:rng.randrange(0, 20)]),
                 "drop_ip-header"),
        lambda: (udp_frame(shell, version=6), "drop_ip-header"),
        lambda: (udp_frame(shell, ihl=4), "drop_ip-header"),
        lambda: (udp_frame(shell, total=20 + 8 + len(shell) + rng.randrange(1, 100)), "drop_ip-header"),
        lambda: (udp_frame(shell, csum=rng.choice([0, 0x1234, 0xFFFF])), "drop_ip-checksum"),
        lambda: (udp_frame(shell, flags_frag=0x2000), "drop_fragment"),                     # more fragments
        lambda: (udp_frame(shell, flags_frag=rng.randrange(1, 0x2000)), "drop_fragment"),   # a later fragment
        lambda: (udp_frame(shell, dst_ip=OTHER_IP), "drop_not-for-us"),
        lambda: (F.eth(GUEST_MAC, HOST_MAC, F.ETH_IP, F.ipv4(HOST_IP, GUEST_IP, bytes(20), proto=6)), "drop_protocol"),
        lambda: (F.eth(GUEST_MAC, HOST_MAC, F.ETH_IP, F.ipv4(HOST_IP, GUEST_IP, bytes(rng.randrange(0, 8)))),
                 "drop_udp-header"),
        lambda: (udp_frame(shell, ulen=8 + len(shell) + rng.randrange(1, 50)), "drop_udp-header"),
        lambda: (udp_frame(shell, ulen=rng.randrange(0, 8)), "drop_udp-header"),
        lambda: (udp_frame(shell, ucsum=rng.choice([0x0001, 0xBEEF])), "drop_udp-checksum"),
        lambda: (udp_frame(shell, dport=7777), "drop_no-port"),
    ]
    kind = i % (len(kinds) + 1)
    if kind == len(kinds):  # a valid frame to the UDP shell carrying a malformed payload
        data, counter = bad_payload(rng, i // (len(kinds) + 1))
        return udp_frame(data), counter
    return kinds[kind]()


class RawWire:
    """The host end of a socket netdev: raw frames out, the guest's frames in."""

    def __init__(self, g):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", g.peer_port))
        self.dest = ("127.0.0.1", g.frame_port)
        self.seq = 1000
        self.requests = 0  # request frames sent, retries included

    def send(self, frame):
        self.sock.sendto(frame, self.dest)

    def shell(self, command, timeout=30):
        """One UDP shell command carried in raw frames; -> its output (one chunk)."""
        self.seq += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.send(udp_frame(udpshell.encode_request(self.seq, command)))
            self.requests += 1
            self.sock.settimeout(1.0)
            try:
                while True:
                    p = F.parse_udp_frame(self.sock.recv(2048))
                    if p and p[1] == 9000 and p[3][:4] == udpshell.REPLY_MAGIC:
                        seq, index, flags, out = udpshell.parse_reply(p[3])
                        if seq == self.seq and flags & udpshell.FLAG_LAST:
                            assert index == 0
                            return out
            except socket.timeout:
                continue
        pytest.fail(f"no raw-frame reply to {command!r} in {timeout} s")

    def close(self):
        self.sock.close()


def account(before, after, sent, expected, barrier_frames):
    """The three rules of the module docstring; -> the number lost before the guest."""
    d = netcheck.delta(before, after)
    rx_counted = sum(d[k] for k in RX_COUNTERS)
    assert d["rx_frames"] == rx_counted, ("a frame reached the guest but no counter took it", d)
    malformed = sum(d[k] for k in expected)
    lost = sent - malformed
    assert 0 <= lost <= LOSS_MAX * sent, (sent, d)
    served = d["udpsh_commands"] + d["udpsh_resent"] + d["udpsh_duplicates"] + d["udpsh_busy"]
    assert served == barrier_frames and d["rx_frames"] == malformed + served, d
    if lost == 0:
        assert {k: d[k] for k in expected} == expected, d
    return lost


def test_10000_bad_payloads_over_user_networking(boot):
    g = boot(smp=2, net="user")
    rng = random.Random(8)
    client = netcheck.udp(g)
    client.run("uptime")  # slirp learns the guest's MAC before the counters are read
    expected = {"udpsh_drop_short": 0, "udpsh_drop_magic": 0, "udpsh_drop_oversized": 0}
    before = netcheck.counters(g.cmd("net"))
    barrier_frames = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for i in range(10000):
            data, counter = bad_payload(rng, i)
            expected[counter] += 1
            s.sendto(data, ("127.0.0.1", g.udp_port))
            if i % BATCH == BATCH - 1:  # 10000 is a whole number of batches: the last one ends it
                barrier_frames += client.run("uptime").sends
    after = netcheck.counters(g.cmd("net"))
    assert min(expected.values()) > 2000
    account(before, after, 10000, expected, barrier_frames)
    assert g.cmd("uptime").startswith("up ")
    assert client.run("uptime").output.startswith(b"up ")


def test_10000_bad_frames_over_a_socket_netdev(boot):
    g = boot(smp=2, net="socket")
    wire = RawWire(g)
    try:
        rng = random.Random(9)
        assert wire.shell("uptime").startswith(b"up ")  # the valid path works before and after
        expected = {}
        before = netcheck.counters(g.cmd("net"))
        requests0 = wire.requests
        for i in range(10260):  # 540 rounds of the 19 kinds
            frame, counter = bad_frame(rng, i)
            expected[counter] = expected.get(counter, 0) + 1
            wire.send(frame)
            if i % BATCH == BATCH - 1 or i == 10259:  # and after the last, before reading counters
                wire.shell("uptime")
        after = netcheck.counters(g.cmd("net"))
        assert len(expected) == 14 and min(expected.values()) >= 100, expected
        account(before, after, 10260, expected, wire.requests - requests0)
        assert g.cmd("uptime").startswith("up ")
        assert wire.shell("uptime").startswith(b"up ")
    finally:
        wire.close()


def test_a_flood_does_not_starve_the_serial_shell(boot):
    """3 s of bad datagrams as fast as one host thread sends them: the serial shell answers each
    `uptime` within 2 s (measured: well under 100 ms when idle) and the UDP shell after the flood."""
    g = boot(smp=2, net="user")
    stop = threading.Event()
    sent = [0]

    def flood():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            junk = b"JUNK" + bytes(60)
            while not stop.is_set():
                s.sendto(junk, ("127.0.0.1", g.udp_port))
                sent[0] += 1

    t = threading.Thread(target=flood)
    t.start()
    try:
        end = time.monotonic() + 3
        worst = 0.0
        while time.monotonic() < end:
            t0 = time.monotonic()
            assert g.cmd("uptime", timeout=5).startswith("up ")
            worst = max(worst, time.monotonic() - t0)
    finally:
        stop.set()
        t.join()
    assert sent[0] > 10000 and worst < 2.0, (sent[0], worst)
    n = netcheck.counters(g.cmd("net"))
    assert 0 < n["udpsh_drop_magic"] <= sent[0]
    assert netcheck.udp(g).run("uptime").output.startswith(b"up ")
