# SPDX-License-Identifier: MIT
"""An external frame-pointer walk (gdb reading RBP by hand) through workload and interrupt frames."""
import os
import subprocess
import time

import conftest

SCRIPT = os.path.join(os.path.dirname(__file__), "fpwalk_gdb.py")
CHAIN5 = ["chain5", "chain4", "chain3", "chain2", "chain1"]


def gdb_walks(port, mode="stops", count=1):
    env = dict(os.environ, FPWALK_PORT=str(port), FPWALK_MODE=mode, FPWALK_COUNT=str(count))
    r = subprocess.run(["gdb", "-batch", "-nx", conftest.KERNEL, "-x", SCRIPT], env=env,
                       capture_output=True, text=True, timeout=60)
    walks = [line.split()[2:] for line in r.stdout.splitlines() if line.startswith("WALK ")]
    assert walks, f"gdb printed no walk\nstdout:{r.stdout}\nstderr:{r.stderr}"
    return walks


def is_subsequence(needle, hay):
    it = iter(hay)
    return all(n in it for n in needle)


def test_walk_reaches_all_five_chain_functions(boot):
    g = boot(smp=2)
    g.work("chain 5")
    hits = 0
    for _ in range(6):
        time.sleep(0.2)
        for walk in gdb_walks(g.gdbport):
            # walk[0] is the stopped RIP's function, the rest come from return addresses
            if walk[0].startswith("chain") or "chain1" in walk[1:]:
                hits += 1
                assert is_subsequence(CHAIN5, walk), walk
                assert walk[walk.index("chain1") + 1] == "work_main", walk
    assert hits >= 5, "the chain task was seen in too few stops"
    assert g.cmd("uptime").startswith("up ")  # detach resumed the VM


def test_walk_from_timer_handler_reaches_interrupted_code(boot):
    g = boot(smp=1)  # one CPU: the tick interrupts the chain (or idle/shell) there
    g.work("chain 5")
    time.sleep(0.2)
    walks = gdb_walks(g.gdbport, mode="tick", count=8)
    assert len(walks) == 8
    in_chain = 0
    for walk in walks:
        # sched_tick <- trap <- trap_common (the call in the entry stub), then the stub's
        # pair: its "return address" is the interrupted RIP, its saved RBP the interrupted RBP
        assert walk[:3] == ["sched_tick", "trap", "trap_common"], walk
        interrupted = walk[3]
        assert interrupted not in ("trap", "trap_common", "sched_tick"), walk
        if interrupted in CHAIN5:
            in_chain += 1
            assert is_subsequence(CHAIN5[CHAIN5.index(interrupted):], walk[3:]), walk
    assert in_chain >= 5, walks  # chain5 runs nearly all the time on the only CPU
    assert g.cmd("uptime").startswith("up ")
