# SPDX-License-Identifier: MIT
"""floor.py: QEMU's bare stop/continue at a cadence (build/rtt's floor), the baseline the benches
set gdbsample's pause against."""
import re
import subprocess


def rtt_floor(exe, port, count, rate):
    """p50 in us of `count` bare 0x03 -> stop reply -> c cycles, one every 1/rate s."""
    out = subprocess.run([exe, str(port), "floor", str(count), "512", str(1000000 // rate)], capture_output=True,
                         text=True, timeout=300)
    m = re.search(r"p50 (\d+) p99 (\d+)", out.stdout)
    if not m:
        raise RuntimeError(f"rtt: {out.stderr}")
    return int(m.group(1))
