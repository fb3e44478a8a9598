#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""net_bench.py: what the test kernel's network path sustains under QEMU TCG, measured from the host.

Boots build/kernel.elf (-smp 2, virtio-net on user networking, loopback forwards only) and
measures (a) host -> guest: tools/netload to-guest at a few offered rates, recording what the
guest's `netload sink` counted (packets per second on the guest's clock, loss from sequence
gaps); (b) guest -> host: `netload send` at the same rates, counted by tools/netload; (c) the UDP
shell's round trip for `uptime` (first request sent -> last chunk received, tools/udpshell.Client)
over RUNS runs, beside the serial shell's for the same command. With --out FILE, replaces the
text between the net-bench markers of FILE (appending the section if absent), nothing else.

  /usr/bin/python3 bench/net_bench.py [--out docs/benchmarks.md] [--seconds 3] [--runs 200]
"""
import datetime
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import ROOT  # noqa: E402
import udpshell  # noqa: E402
import benchdoc  # noqa: E402
from guest import Guest  # noqa: E402

KERNEL = os.path.join(ROOT, "build", "kernel.elf")
NETLOAD = os.path.join(ROOT, "tools", "netload")
BEGIN, END = benchdoc.markers("net-bench")
RATES = (5000, 20000, 50000, 100000)  # offered datagrams per second
SIZE = 512                            # bytes of UDP payload


def netload(g, mode, pps, seconds):
    """-> (host line, guest line) of one tools/netload run."""
    r = subprocess.run([NETLOAD, mode, "--port", str(g.udp_port), "--sink-port", str(g.sink_port),
                        "--size", str(SIZE), "--pps", str(pps), "--seconds", str(seconds)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"net_bench: netload {mode} at {pps}: {r.stderr.strip()}")
    host, guest = r.stdout.splitlines()
    return host, guest


percentile = common.percentile


def sink_rows(g, seconds):
    rows = []
    for pps in RATES:
        host, guest = netload(g, "to-guest", pps, seconds)
        sent = int(host.split(" sent ")[1].split()[0])
        host_rate = float(host.split("(")[1].split()[0])
        s = udpshell.parse_sink_line(guest)
        loss = 100.0 * (sent - s["packets"]) / sent if sent else 0.0
        rows.append((pps, host_rate, s["rate"], s["packets"], sent, loss))
        print(f"to-guest {pps}: {host} | {guest}", file=sys.stderr)
    return rows


def send_rows(g, seconds):
    rows = []
    for pps in RATES:
        host, guest = netload(g, "from-guest", pps, int(seconds))
        got = int(host.split(" received ")[1].split()[0])
        host_rate = float(host.split("pkt/s")[0].rsplit(", ", 1)[1])
        s = udpshell.parse_send_line(guest)
        used = s["packets"] + s["not_sent"]
        rows.append((pps, s["rate"], s["not_sent"], got, used, host_rate))
        print(f"from-guest {pps}: {host} | {guest}", file=sys.stderr)
    return rows


def rtt(g, runs):
    """-> (UDP round trips, serial round trips) of `uptime`, in ms."""
    client = udpshell.Client(port=g.udp_port, timeout=30)
    udp, serial, resends = [], [], 0
    for _ in range(runs):
        res = client.run("uptime")
        udp.append(res.seconds * 1000)
        resends += res.sends - 1
        t0 = time.monotonic()
        g.cmd("uptime")
        serial.append((time.monotonic() - t0) * 1000)
    client.close()
    return udp, serial, resends


def section(sink, send, udp, serial, resends, seconds, load):
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    out = [BEGIN, "## network: UDP shell and netload (issue 8)", "",
           f"Measured by `bench/net_bench.py` on {datetime.date.today()}: {qemu}, TCG, `-smp 2`, "
           f"{os.cpu_count()} host cores ({platform.machine()}), virtio-net on QEMU user networking with "
           f"127.0.0.1 forwards; host load average {load[0]:.2f} before and {load[1]:.2f} after. "
           f"{SIZE}-byte datagrams, {seconds:g} s per rate; the host side is tools/netload (Python, one thread).", "",
           "### Host → guest: what `netload sink` counts", "",
           "| offered | host sent | guest counted | guest rate (its clock) | missing |",
           "|---:|---:|---:|---:|---:|"]
    for pps, host_rate, guest_rate, got, sent, loss in sink:
        out.append(f"| {pps} pkt/s | {host_rate:.0f} pkt/s | {got} of {sent} | {guest_rate} pkt/s | {loss:.2f} % |")
    out += ["", "Missing = sent − counted: QEMU's socket buffer overflowing while the guest (one net task, one "
            "vCPU of TCG) falls behind, plus the guest's ring; the guest's own sequence-gap count agrees with it "
            "(tests/net/test_net_load.py checks that).", "",
            "### Guest → host: `netload send`", "",
            "| asked | guest sent (its clock) | not sent (ring full) | host received | of | host rate |",
            "|---:|---:|---:|---:|---:|---:|"]
    for pps, grate, not_sent, got, used, hrate in send:
        out.append(f"| {pps} pkt/s | {grate} pkt/s | {not_sent} | {got} | {used} | {hrate:.0f} pkt/s |")
    out += ["", f"### UDP shell round trip, `uptime` ({len(udp)} runs)", "",
            "| shell | p50 | p99 | max |", "|---|---:|---:|---:|",
            f"| UDP (tools/udpshell.Client: request sent → last chunk in) | {percentile(udp, 50):.2f} ms | "
            f"{percentile(udp, 99):.2f} ms | {max(udp):.2f} ms |",
            f"| serial (guest.py over QEMU's unix socket: line sent → prompt back) | {percentile(serial, 50):.2f} ms | "
            f"{percentile(serial, 99):.2f} ms | {max(serial):.2f} ms |", "",
            f"UDP requests resent during the runs: {resends}. The guest runs the command in its udpsh task "
            "and replies from the net task's stack; the serial path echoes every character.", END]
    return "\n".join(out) + "\n"


def main():
    ap = common.parser(__doc__.splitlines()[0], "out", out_default=False)
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per offered rate (default 3)")
    ap.add_argument("--runs", type=int, default=200, help="round trips to time (default 200)")
    a = ap.parse_args()
    if not os.path.exists(KERNEL):
        sys.exit(f"net_bench: {KERNEL} is missing: run make kernel")
    load0 = os.getloadavg()[0]
    with Guest(KERNEL, smp=2, net="user") as g:
        udp, serial, resends = rtt(g, a.runs)
        sink = sink_rows(g, a.seconds)
        send = send_rows(g, a.seconds)
    text = section(sink, send, udp, serial, resends, a.seconds, (load0, os.getloadavg()[0]))
    sys.stdout.write(text)
    if a.out:
        benchdoc.replace_section(a.out, "net-bench", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
