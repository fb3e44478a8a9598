# SPDX-License-Identifier: MIT
"""gdbsample never resumes a VM behind its operator's back, nor loses its guard to a kill by name,
and notices a hot-plugged vCPU. On QEMU 7.2 and 10.0: one guest per version for the whole module
(started without -gdb, with a QMP socket; the -p tests open a stub on it with HMP `gdbserver`, the
--qmp tests let gdbsample open its own), stopped by its pid at the end. Every gdbsample is waited
for or signalled by its own pid; kills by name are emulated on gdbsample's own process tree only
(a real `killall` would hit other users' runs on a shared host)."""
import os
import re
import signal
import subprocess
import time

import conftest
import pytest
from fakestub import FakeStub
from guest import Guest, free_port

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
_guests = {}


@pytest.fixture(scope="module")
def pool():
    yield _guests
    for g in _guests.values():
        g.stop()
    _guests.clear()


@pytest.fixture
def vm(qemu, pool):
    """This version's shared guest: 2 vCPUs running `work chain 6`, room for a third (hot-plug)."""
    if qemu not in pool:
        g = Guest(conftest.KERNEL, smp=2, gdb=False, qmp=True, qemu=qemu, extra=["-smp", "2,maxcpus=3"])
        pool[qemu] = g
        g.start()
        g.work("chain 6")
    g = pool[qemu]
    assert g.proc.poll() is None, f"QEMU {qemu} exited ({g.proc.returncode}) before this test: {g.qemu_log()[-3000:]}"
    assert conftest.qmp_status(g.qmp_path) == "running"
    yield g
    if g.proc.poll() is not None:  # QEMU itself ended mid-test (seen once, in a migration): say how
        print(f"QEMU {qemu} exited with {g.proc.returncode} during the test; its log:\n{g.qemu_log()[-3000:]}")
        pool.pop(qemu).stop()


def status(g):
    return conftest.qmp_status(g.qmp_path)


class Stub:
    """A gdbstub opened on the guest for a -p run (HMP gdbserver), closed afterwards."""

    def __init__(self, g):
        self.g = g
        self.port = free_port()
        assert "Waiting for gdb connection" in conftest.hmp(g.qmp_path, f"gdbserver tcp:127.0.0.1:{self.port}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        conftest.hmp(self.g.qmp_path, "gdbserver none")


def start(args, wire_log=None):
    env = dict(os.environ, GDBSAMPLE_WIRE_LOG=str(wire_log)) if wire_log else None
    return subprocess.Popen([GDBSAMPLE] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


sampling = conftest.wire_stops


def wire_tail(path, n=40):
    """The last n lines of a wire log, cut to 300 characters each: what a failure message shows of
    the stub's last words (a CI run once lost the last of 8 replies in a migration; never seen here)."""
    try:
        lines = open(path, errors="replace").read().splitlines()[-n:]
    except OSError as e:
        return f"(no wire log: {e})"
    return "\n".join(line[:300] for line in lines)


def wait_status(g, want, timeout=10):
    end = time.monotonic() + timeout
    s = status(g)
    while s != want and time.monotonic() < end:
        time.sleep(0.05)
        s = status(g)
    return s


def stop_that_holds(g, p, tries=8):
    """QMP `stop` (what `virsh suspend` sends) until one holds: the VM still paused 0.5-2.3 s later.
    A stop that lands while gdbsample itself holds the VM for a sample (or in the tens of
    microseconds between its look and its stop byte) is a no-op in QEMU and cannot be seen; its
    resume then undoes it (docs/attach.md) -- at the latest the pause watchdog's, --max-pause
    (1 s) after the sample's stop. So a stop counts as held only when the VM is still paused
    past that, with a second to spare for a starved guard: beside two CPU hogs and the suite,
    gdbsample's rounds were seen taking over a second each, and a stop swallowed by one looked
    held at 0.8 s, then was undone by the rescue. At -r 10 with ~5 ms rounds the window is a few
    percent of the time, so eight tries all lost is vanishingly unlikely -- while an unfixed
    gdbsample resumes every stop within one period (0.1 s): this never returns there."""
    for i in range(tries):
        assert p.poll() is None, p.communicate()
        conftest.qmp(g.qmp_path, "stop")
        time.sleep(0.5)
        # paused at seven looks 0.3 s apart (to 2.3 s after the stop: past --max-pause and a second)
        if all(status(g) == "paused" and not time.sleep(0.3) for _ in range(7)):
            return i
        time.sleep(0.2)
    pytest.fail(f"no QMP stop held in {tries} tries: gdbsample resumed the VM every time")


@conftest.ON_EACH_QEMU
@pytest.mark.parametrize("how", ["p", "qmp"])
def test_operator_stop_is_never_undone(vm, how, tmp_path):
    """A QMP stop mid-run: gdbsample says so, samples nothing and keeps the VM paused; after `cont`
    it samples again. A second stop, then SIGINT: gdbsample ends (exit 0, report written) and
    leaves the VM paused -- it was the operator's pause."""
    stub = Stub(vm) if how == "p" else None
    conn = ["-p", str(stub.port)] if stub else ["--qmp", vm.qmp_path]
    try:
        wire = tmp_path / "wire.log"
        p = start(conn + ["-e", vm.kernel, "-r", "10", "-f", "folded"], wire_log=wire)
        err_lines = conftest.Stderr(p)
        try:
            assert sampling(p, wire), (err_lines.text(), wire_tail(wire))
            stop_that_holds(vm, p)
            assert err_lines.wait_for("not sampling it, and leaving it stopped"), err_lines.text()
            conftest.qmp(vm.qmp_path, "cont")
            # it notices the VM runs (its probe each round) and samples again: wait for it to say so
            assert err_lines.wait_for("the VM runs again: sampling goes on"), err_lines.text()
            stop_that_holds(vm, p)
            p.send_signal(signal.SIGINT)
            out = p.stdout.read()
            p.wait(timeout=60)
            err = err_lines.text()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, err
        assert "not sampling it, and leaving it stopped" in err, err
        assert "the VM runs again: sampling goes on" in err, err
        assert "left the VM stopped as we found it" in err, err
        assert "chain6" in out, out
        assert status(vm) == "paused"  # the operator's pause survived gdbsample's exit
    finally:
        if stub:
            stub.__exit__()
        if status(vm) != "running":
            conftest.qmp(vm.qmp_path, "cont")
    assert wait_status(vm, "running") == "running"


def migrate_that_holds(g, p, tries=5):
    """Migrate the VM away (to a pipe that discards it) until the source VM stays in `postmigrate`.
    As with a `stop`, a migration whose final stop lands while gdbsample holds the VM for a sample
    is invisible, and gdbsample's resume runs the VM again (docs/attach.md): then migrate again.
    An unfixed gdbsample resumes after every migration: this fails there."""
    for i in range(tries):
        assert p.poll() is None, p.communicate()
        conftest.qmp(g.qmp_path, "migrate", {"uri": "exec:cat>/dev/null"})
        end = time.monotonic() + 30
        while conftest.qmp(g.qmp_path, "query-migrate").get("status") not in ("completed", "failed"):
            assert time.monotonic() < end, "the migration did not end"
            time.sleep(0.05)
        if all(status(g) == "postmigrate" and not time.sleep(0.15) for _ in range(3)):
            return i
    pytest.fail(f"no migration in {tries} left the VM in postmigrate: gdbsample ran it again every time")


@conftest.ON_EACH_QEMU
def test_migration_mid_run_is_not_undone(vm, tmp_path):
    """A migration mid-run (T18 from the stub) ends the source VM in `postmigrate`; an unfixed
    gdbsample's next `c` ran the migrated-away guest again. Then `dump` on the postmigrate VM
    (QEMU's run state read through the stub, on 10.0 too): stacks printed, the VM left so."""
    with Stub(vm) as stub:
        try:
            wire = tmp_path / "wire.log"
            p = start(["-p", str(stub.port), "-e", vm.kernel, "-r", "10", "-q"], wire_log=wire)
            try:
                time.sleep(1.0)
                migrate_that_holds(vm, p)
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            assert p.returncode == 0, f"{err}\nthe wire log's end:\n{wire_tail(wire)}"
            assert status(vm) == "postmigrate"
            r = subprocess.run([GDBSAMPLE, "dump", "-p", str(stub.port), "-e", vm.kernel], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            assert "in state postmigrate before gdbsample came" in r.stderr, r.stderr
            assert r.stdout.startswith("cpu0"), r.stdout
            assert status(vm) == "postmigrate"
        finally:
            if status(vm) != "running":
                conftest.qmp(vm.qmp_path, "cont")
    assert wait_status(vm, "running") == "running"


@conftest.ON_EACH_QEMU
def test_a_migration_under_way_is_left_alone_until_it_ends(vm, tmp_path):
    """A migration slowed to ~1 s (max-bandwidth 1 MiB/s; ~1 MB of this guest's RAM is not zero):
    gdbsample sees it in a pause (`info migrate`, at most 20 ms apart), then stops the VM only once
    a second, so QEMU's last step finds the VM running (the destination would run it) and no `c`
    of ours races that step -- the race that aborted QEMU 7.2 beside CPU hogs. The skipped rounds
    are counted; the migrated-away VM is held in `postmigrate`. The end comes one of two ways, both
    held: QEMU's own stop (T18) while the VM runs, or -- on a starved host, where one of the
    once-a-second pauses can last a tenth of a second -- the last step landing inside our pause,
    which gdbsample finds in the run state before its resume and names (the destination starts
    paused). Which one is timing, not behaviour; exactly one is said. An unfixed gdbsample says
    nothing and skips nothing.
    A gdbsample held up for the whole second of a migration (seen beside two CPU hogs: no round
    for 1.07 s, its wire log silent, the migration begun and ended meanwhile) cannot see it under
    way; it only finds it ended (held, said once). Then the VM is let run again and migrated once
    more, up to TRIES times: every migration ends with exactly one of the endings, whether seen or
    not, and an unfixed gdbsample never says one is under way."""
    tries = 4
    endings = ("the VM was stopped for migration: not sampling it",
               "while we held it (the migration ended inside our pause, so its destination starts paused")
    old = conftest.qmp(vm.qmp_path, "query-migrate-parameters")["max-bandwidth"]
    conftest.qmp(vm.qmp_path, "migrate-set-parameters", {"max-bandwidth": 1 << 20})
    try:
        with Stub(vm) as stub:
            wire = tmp_path / "wire.log"  # beside hogs this run once lost the 8th of 8 replies: what QEMU said
            p = start(["-p", str(stub.port), "-e", vm.kernel, "-r", "100", "-f", "folded", "--summary-format", "kv"],
                      wire_log=wire)
            err_lines = conftest.Stderr(p)
            try:
                assert sampling(p, wire), (err_lines.text(), wire_tail(wire))
                for attempt in range(1, tries + 1):
                    conftest.qmp(vm.qmp_path, "migrate", {"uri": "exec:cat>/dev/null"})
                    status_now = None
                    for _ in range(1200):  # a hang bound (~60 s of polls); what is judged is QEMU's status
                        status_now = conftest.qmp(vm.qmp_path, "query-migrate").get("status")
                        if status_now in ("completed", "failed"):
                            break
                        time.sleep(0.05)
                    assert status_now == "completed", status_now
                    # (beside hogs on 7.2 the stub once answered 7 of 8 requests here: its last words)
                    assert err_lines.wait_for(endings, times=attempt), (err_lines.so_far(), wire_tail(wire))
                    if "a migration is under way" in err_lines.so_far():
                        break
                    # not seen under way: ended while gdbsample was held up. Run the VM and again.
                    conftest.qmp(vm.qmp_path, "cont")
                    assert err_lines.wait_for("the VM runs again: sampling goes on", times=attempt), \
                        err_lines.so_far()
                    time.sleep(0.5)
                else:
                    pytest.fail(f"gdbsample saw none of {tries} migrations under way: {err_lines.so_far()}")
                p.send_signal(signal.SIGINT)
                out = p.stdout.read()
                p.wait(timeout=60)
                err = err_lines.text()
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            assert p.returncode == 0, f"{err}\nthe wire log's end:\n{wire_tail(wire)}"
            kv = dict(line.split(" ", 1) for line in err.splitlines() if re.match(r"^[a-z_0-9]+ ", line))
            assert int(kv["migration_rounds"]) > 0, err
            assert int(kv["held_by_other"]) == attempt, err
            assert sum(1 for line in err.splitlines() if any(e in line for e in endings)) == attempt, err
            assert sum(1 for line in err.splitlines() if "a migration is under way" in line) == 1, err
            assert "chain6" in out, out
            assert status(vm) == "postmigrate"
    finally:
        conftest.qmp(vm.qmp_path, "migrate-set-parameters", {"max-bandwidth": old})
        if status(vm) != "running":
            conftest.qmp(vm.qmp_path, "cont")
    assert wait_status(vm, "running") == "running"


CONT = b"qRcmd," + b"cont".hex().encode()  # HMP `cont` through the stub


class MigratingQemu:
    """QEMU's monitor as the fake stub relays it: a migration `active` for the first LOOKS looks,
    then `completed` -- its last step having landed inside the pause we hold, so `info status`
    from then on says postmigrate (what QEMU 7.2 and 10.0 print for a VM migrated away). HMP
    `cont` resumes the VM, or -- from the REFUSE-th on -- refuses it as QEMU does a VM a migration
    is finishing (finish-migrate)."""

    def __init__(self, looks=2, refuse=None):
        self.looks, self.landed_at, self.LOOKS = 0, None, looks
        self.conts, self.refuse, self.refused_at, self.first_active = 0, refuse, None, None
        self.stub = FakeStub(self.monitor)

    def monitor(self, cmd):
        if cmd == "info version":
            return "10.0.2\r\n"
        if cmd == "info migrate":
            self.looks += 1
            if self.looks > self.LOOKS and self.landed_at is None:
                self.landed_at = len(self.stub.sent())  # requests before this answer
            done = self.landed_at is not None
            if not done and self.first_active is None:
                self.first_active = len(self.stub.sent())
            return "globals:\r\nstore-global-state: on\r\nMigration status: %s\r\n" % (
                "completed" if done else "active")
        if cmd == "info status":
            return "VM status: paused (postmigrate)\r\n" if self.landed_at is not None else "VM status: paused\r\n"
        if cmd == "cont":
            self.conts += 1
            if self.refuse and self.conts >= self.refuse:
                if self.refused_at is None:
                    self.refused_at = len(self.stub.sent())
                return "Error: Migration is not finalized yet\r\n"
            self.stub.running = True
            return ""
        return None

    def run(self):
        """gdbsample -p on the fake stub for 5 s at 100 Hz, to completion (exit 0 checked), the stub
        closed: (CompletedProcess, the requests it got, the kv summary as a dict)."""
        try:
            r = subprocess.run([GDBSAMPLE, "-p", str(self.stub.port), "-r", "100", "-d", "5", "-f", "folded",
                                "--summary-format", "kv"], capture_output=True, text=True, timeout=120)
            sent = self.stub.sent()
        finally:
            self.stub.close()
        assert r.returncode == 0, r.stderr
        kv = dict(line.split(" ", 1) for line in r.stderr.splitlines() if re.match(r"^[a-z_0-9]+ ", line))
        return r, sent, kv


def test_a_migration_ending_inside_our_pause_is_held_and_named():
    """The end a starved host makes likely (one of the once-a-second pauses lasting long enough for
    QEMU's last step to land in it), made certain with a fake stub: from the pause in which
    `info migrate` first says completed and `info status` says postmigrate, gdbsample sends no `c`, no `cont`
    and no D;1 (either would run the migrated-away VM: QEMU 7.2 aborts), says once why it holds the
    VM and that the destination starts paused, and ends 0 with the hold counted. An unfixed
    gdbsample resumes it, or says nothing of the destination."""
    q = MigratingQemu()
    r, sent, kv = q.run()
    assert q.landed_at is not None, (q.looks, r.stderr)  # the looks went on until the end came
    cont = CONT  # a resume while the migration is under way
    assert cont in sent[:q.landed_at], sent[:40]  # it was sampling, and resuming, before
    after = sent[q.landed_at:]
    assert b"c" not in after and cont not in after and not any(x.startswith(b"D") for x in after), after[:40]
    said = [ln for ln in r.stderr.splitlines() if "the VM was put in state postmigrate while we held it" in ln]
    assert len(said) == 1, r.stderr
    assert "the migration ended inside our pause, so its destination starts paused" in said[0], said
    assert "left the VM stopped as we found it" in r.stderr, r.stderr
    assert int(kv["held_by_other"]) == 1 and int(kv["migration_rounds"]) > 0, r.stderr


def test_a_resume_during_a_migration_is_the_monitors_cont_and_its_refusal_is_held():
    """While a migration is under way every resume of ours is HMP `cont` (through qRcmd), never
    `c`: QEMU checks and resumes under one lock and refuses a VM the migration is finishing, where
    `c` started it and QEMU 10.0 then aborted ('running' -> 'postmigrate', beside CPU hogs). With a
    fake stub whose migration never ends and whose third `cont` is refused: no `c` from the first
    look that saw the migration on, nothing but the probe after the refusal (no `c`, `cont` or
    D;1), one line naming finish-migrate and the paused destination, exit 0 with the hold counted.
    An unfixed gdbsample resumes with `c` there."""
    q = MigratingQemu(looks=10 ** 6, refuse=3)
    r, sent, kv = q.run()
    assert q.first_active is not None and q.refused_at is not None, (q.looks, q.conts, r.stderr)
    during = sent[q.first_active:]
    assert b"c" not in during, during[:40]
    conts = [x for x in during if x == CONT]
    assert len(conts) == 3, during[:60]
    after = sent[q.refused_at:]
    assert not any(x == b"c" or x.startswith(b"D") or x == CONT for x in after), after[:40]
    said = [ln for ln in r.stderr.splitlines() if "the VM was put in state finish-migrate while we held it" in ln]
    assert len(said) == 1 and "its destination starts paused" in said[0], r.stderr
    assert int(kv["held_by_other"]) == 1 and int(kv["migration_rounds"]) > 0, r.stderr


def test_dump_on_a_paused_vm_leaves_it_paused(vm):
    """`dump` on a VM paused before gdbsample came (QEMU 7.2, which greets a client whose connection
    stopped a running VM, and greets none here): the stacks, and the VM still paused. (QEMU >= 8.1
    greets nobody: there -p cannot tell; docs/attach.md.)"""
    conftest.qmp(vm.qmp_path, "stop")
    try:
        with Stub(vm) as stub:
            r = subprocess.run([GDBSAMPLE, "dump", "-p", str(stub.port), "-e", vm.kernel], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            assert "paused before gdbsample came" in r.stderr, r.stderr
            assert "cpu0" in r.stdout and "cpu1" in r.stdout, r.stdout
            time.sleep(0.3)
            assert status(vm) == "paused"
    finally:
        conftest.qmp(vm.qmp_path, "cont")
    assert wait_status(vm, "running") == "running"


def tree(pid):
    """pid and its descendants (from /proc), with their process names."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        try:
            with open(f"/proc/{q}/comm") as f:
                out.append((q, f.read().strip()))
        except OSError:
            continue
        todo += kids.get(q, [])
    return out


def test_kill_by_name_spares_the_guard(vm):
    """`killall -9 gdbsample`, emulated on this run's process tree: every process *named*
    gdbsample gets SIGKILL at once. The guard has a name of its own, so it survives, resumes the
    VM and closes the gdbstub gdbsample opened through QMP; the next --qmp run is not refused.
    (Unfixed, the guard was named gdbsample too: the stub stayed open -- every time.)"""
    cmd = ["--qmp", vm.qmp_path, "-e", vm.kernel, "-r", "200", "-q"]
    for i in range(2):
        p = start(cmd)
        try:
            end = time.monotonic() + 30
            while len(tree(p.pid)) < 2:  # the guard is forked once the stub is open
                assert p.poll() is None and time.monotonic() < end, p.communicate()
                time.sleep(0.02)
            time.sleep(0.3 + 0.2 * i)  # sampling by now, mostly
            procs = tree(p.pid)
            assert [c for q, c in procs if q != p.pid] == ["gdbsguard"], procs
            for q, c in procs:
                if c == "gdbsample":
                    os.kill(q, signal.SIGKILL)
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert wait_status(vm, "running") == "running", f"round {i}"
        end = time.monotonic() + 10
        while any(line.startswith("gdb:") for line in conftest.hmp(vm.qmp_path, "info chardev").splitlines()):
            assert time.monotonic() < end, f"round {i}: the gdbstub gdbsample opened is still open"
            time.sleep(0.05)
    r = subprocess.run([GDBSAMPLE] + cmd + ["-d", "0.5"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


@conftest.ON_EACH_QEMU
def test_hotplugged_vcpu_is_named(vm, tmp_path):
    """A vCPU hot-plugged mid-run (QMP device_add): gdbsample warns while running, and again at the
    end, that it was not sampled. (Unfixed: not a word.) Last in the module: the guest keeps it."""
    with Stub(vm) as stub:
        wire = tmp_path / "wire.log"
        p = start(["-p", str(stub.port), "-e", vm.kernel, "-r", "20", "-d", "3"], wire_log=wire)
        assert sampling(p, wire), wire_tail(wire)
        conftest.qmp(vm.qmp_path, "device_add", {"driver": "qemu64-x86_64-cpu", "id": "hot2", "socket-id": 0,
                                                   "core-id": 2, "thread-id": 0})
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "a vCPU was hot-plugged during the run (gdbstub thread 3): it is not sampled" in err, err
    assert "1 vCPU hot-plugged during the run was not sampled" in err, err
    assert "samples of 2 vCPUs" in err, err
    assert status(vm) == "running"
