# SPDX-License-Identifier: MIT
"""netcheck.py: parsers shared by the network system tests (the `net` counters, report shapes)."""
import re

import udpshell


def counters(text):
    """`net` output -> {name: value} for every `name N` pair, prefixed by its line's topic:
    rx_frames, tx_bytes, drop_short ... drop_no_arp, udpsh_commands ... udpsh_drop_send-failed."""
    out = {}
    lines = text.splitlines()
    m = re.search(r"rx (\d+) frames (\d+) bytes\s+tx (\d+) frames (\d+) bytes", text)
    assert m, text
    out.update(rx_frames=int(m[1]), rx_bytes=int(m[2]), tx_frames=int(m[3]), tx_bytes=int(m[4]))
    drops = next(l for l in lines if l.startswith("drops:"))
    for name, v in re.findall(r"([a-z-]+) (\d+)", drops):
        out["drop_" + name] = int(v)
    shell = next(l for l in lines if l.startswith("udp shell port"))
    head, _, tail = shell.partition("drops:")
    for v, name in re.findall(r"(\d+) ([a-z]+)", head.split(":", 1)[1]):
        out["udpsh_" + name] = int(v)
    for name, v in re.findall(r"([a-z-]+) (\d+)", tail):
        out["udpsh_drop_" + name] = int(v)
    return out


def delta(before, after):
    return {k: after[k] - before[k] for k in after}


def shape(report):
    """A profile report reduced to its line kinds: header, leaf and caller lines become tokens,
    so two reports of different samples compare equal when they have the same form."""
    kinds = []
    for line in report.splitlines():
        if re.fullmatch(r"profiled \d+ ms", line):
            kinds.append("profiled")
        elif re.fullmatch(r"\d+ samples on \d+ cpus, \d+ dropped, source .+", line):
            kinds.append("samples")
        elif re.fullmatch(r"cpu \d+: \d+ samples", line):
            kinds.append("cpu")
        elif re.fullmatch(r"\d+\.\d% \d+ \S+", line):
            kinds.append("leaf")
        elif re.fullmatch(r" {8}<- \S+", line):
            kinds.append("caller")
        elif re.fullmatch(r"\(\d+ more chains not shown\)", line):
            kinds.append("more")
        else:
            kinds.append("other: " + line)
    return kinds


def form(report):
    """The grammar a report follows, as one string: header lines, then per chain `L` and one
    `c` per caller, then `+` if chains were left out; e.g. "PSCC Lccc Lcc +" (C: a CPU's count)."""
    text = "".join({"profiled": "P", "samples": "S", "cpu": "C", "leaf": " L", "caller": "c", "more": " +"}.get(k, " ?")
                   for k in shape(report))
    return text


def header(report):
    m = re.match(r"profiled (\d+) ms\n\d+ samples on (\d+) cpus, \d+ dropped, source (.+)\n", report)
    return m.groups() if m else None


def chains(report):
    """-> [(count, [leaf function, caller functions...])] in report order."""
    out = []
    for line in report.splitlines():
        m = re.fullmatch(r"\d+\.\d% (\d+) (\S+)", line)
        if m:
            out.append((int(m[1]), [m[2].split("+")[0]]))
        elif line.startswith("        <- ") and out:
            out[-1][1].append(line[11:].split("+")[0])
    return out


def udp(g, timeout=60):
    """A UDP shell client for guest g (net="user")."""
    return udpshell.Client(port=g.udp_port, timeout=timeout)
