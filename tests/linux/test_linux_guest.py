# SPDX-License-Identifier: MIT
"""Debian's stock 6.1 kernel boots under QEMU TCG (tools/linuxguest.py): map, shell, workloads, KASLR."""
import os

import pytest

import conftest
import linuxguest
from linuxguest import BASIC_WORKLOADS, STEXT_NOKASLR, ArchiveUnreachable, LinuxGuestError

BUILD = os.path.join(conftest.BUILD, "linux")
KASLR_ALIGN = 0x200000  # CONFIG_PHYSICAL_ALIGN on Debian's amd64 kernels: the slide's granule


@pytest.fixture
def guest(linux61):
    """The package's 6.1 guest (tests/linux/conftest.py): KASLR on, -smp 2."""
    return linux61


# -- pure parsers, on literals ---------------------------------------------------------------
def test_parse_kallsyms():
    text = ("ffffffff9a000000 T _stext\n"
            "000000000001fb80 A current_task\n"
            "ffffffff9b161900 D linux_banner\n"
            "ffffffffc0000000 t helper\t[somemod]\n"
            "ffffffff9a000010 t helper\n")
    syms = linuxguest.parse_kallsyms(text)
    assert syms["_stext"] == (0xffffffff9a000000, "T")
    assert syms["current_task"] == (0x1fb80, "A")
    assert syms["helper"] == (0xffffffffc0000000, "t")  # the first of duplicate names


def test_parse_stat():
    text = ("100 (zerodd) R 97 97 1 0 -1 4194304 314 0 0 0 3 238 0 0 20 0 1 0 5493 3371008 548\n"
            "101 (a) b) (c) S 97 97 1 0 -1 4194304 1 0 0 0 17 4 0 0 20 0 1 0 5493 3371008 548\n")
    assert linuxguest.parse_stat(text) == {100: (3, 238), 101: (17, 4)}


def test_unreachable_archive_is_its_own_error():
    out = ("Err:1 http://deb.debian.org/debian bookworm InRelease\n"
           "  Temporary failure resolving 'deb.debian.org'\n")
    assert isinstance(linuxguest.APT.failed("apt-get update", out), ArchiveUnreachable)
    out = "E: Unable to locate package linux-image-amd64\n"
    err = linuxguest.APT.failed("apt-get download", out)
    assert not isinstance(err, ArchiveUnreachable) and "Unable to locate" in str(err)


def test_only_a_panic_before_the_shell_spoke_boots_again():
    """LinuxGuest.start boots once more only when the kernel died before anything of ours ran."""
    seen = ("console connection closed (qemu exited?)\n--- shell (last 1000 chars) ---\n\n"
            "--- kernel console (last 2000 chars) ---\n[    1.816886] RIP: 0010:sched_clock_idle_wakeup_event+0x5/0x40\n"
            "[    1.817076] Kernel panic - not syncing: Fatal exception in interrupt\n--- qemu ---\n")
    assert linuxguest.early_panic(seen)
    assert not linuxguest.early_panic(seen.replace("chars) ---\n\n", "chars) ---\n/ # insmod hotmod.ko\n", 1))
    assert not linuxguest.early_panic(seen.replace("Kernel panic - not syncing", "BUG: soft lockup"))
    assert not linuxguest.early_panic("qemu exited with 1: qemu-system-x86_64: -kernel: No such file")


def test_a_fetch_waits_for_the_one_in_progress_and_uses_its_kernel(tmp_path, monkeypatch):
    """Two xdist workers once ran apt-get update on one private lists directory at once and the
    second failed on apt's lock ("Could not get lock .../apt-bpo/lists/lock"). A fetch now waits
    for the one in progress (held here by the test) and then uses the kernel it cached: no apt."""
    import fcntl
    import threading
    import linuxkernel
    build = str(tmp_path)
    apt_ran = threading.Event()

    def no_apt(*a, **kw):
        apt_ran.set()
        raise AssertionError("apt was run while another fetch held the lock")
    monkeypatch.setattr(linuxguest.APT, "run", no_apt)
    result = {}

    def fetch():
        try:
            result["got"] = linuxkernel.fetch_kernel(build, "6.12")
        except BaseException as e:  # noqa: B902 -- reported by the assertion below
            result["error"] = e
    with open(os.path.join(build, ".fetch.lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # "another process" fetching
        t = threading.Thread(target=fetch)
        t.start()
        # Without the lock the fetch runs apt at once (this wait then returns True at once);
        # with it, apt is never reached while the lock is held, however slow the host.
        assert not apt_ran.wait(timeout=1.0), result
        d = tmp_path / "6.12"  # what the other fetch leaves: config, then vmlinuz
        d.mkdir()
        (d / "config-6.12.9-amd64").write_text("CONFIG_X=y\n")
        (d / "vmlinuz-6.12.9-amd64").write_bytes(b"image")
    t.join(timeout=60)
    assert not t.is_alive() and not apt_ran.is_set(), result
    assert result == {"got": (str(d / "vmlinuz-6.12.9-amd64"), str(d / "config-6.12.9-amd64"))}, result


# -- one 6.1 guest, KASLR on -----------------------------------------------------------------
def test_cached_kernel_needs_no_apt(guest, monkeypatch):
    def no_apt(*a, **kw):
        raise AssertionError("apt was run although the kernel is cached")
    monkeypatch.setattr(linuxguest.APT, "run", no_apt)  # every apt step goes through it
    assert linuxguest.fetch_kernel(BUILD, "6.1") == (guest.vmlinuz, guest.config)
    assert os.path.basename(guest.vmlinuz).startswith("vmlinuz-6.1.")


def test_map_is_complete_and_from_this_boot(guest):
    with open(guest.kallsyms_path(), "rb") as f:
        text = f.read()
    assert b"\r" not in text and text.endswith(b"\n")
    syms = guest.symbols()
    assert len(syms) > 50000, len(syms)
    assert syms["_stext"][1] in "Tt" and syms["linux_banner"][1] in "Dd"
    # The guest's own view of the same symbol: the map carries this boot's slide.
    own = guest.cmd("grep -w _stext /proc/kallsyms").split()
    assert int(own[0], 16) == syms["_stext"][0], own
    assert guest.cmd("cat /proc/version").startswith("Linux version 6.1.")


def test_command_round_trip(guest):
    assert guest.cmd("echo hello") == "hello\n"
    assert guest.run("sh -c 'exit 3'") == (3, "")
    assert guest.cmd("seq 1 500").split() == [str(i) for i in range(1, 501)]
    with pytest.raises(LinuxGuestError):
        guest.cmd("false")
    assert guest.cmd("echo still here") == "still here\n"


def test_workloads_run_under_their_names(guest):
    pids = guest.start_workloads()
    try:
        assert set(pids) == set(BASIC_WORKLOADS)  # the default: every workload that needs no module
        ps = {}
        for line in guest.cmd("ps -o pid,comm").splitlines()[1:]:
            pid, comm = line.split(None, 1)
            ps[int(pid)] = comm.strip()
        for name, pid in pids.items():
            assert ps.get(pid) == name, (name, pid, ps.get(pid))
        before = guest.cpu_times(pids)
        guest.cmd("sleep 1")
        after = guest.cpu_times(pids)
        assert set(after) == set(pids.values())  # all still alive
        z, s = pids["zerodd"], pids["spinner"]
        assert after[z][1] > before[z][1], (before[z], after[z])  # dd from /dev/zero: kernel time
        assert after[s][0] > before[s][0], (before[s], after[s])  # the spinner: user time
    finally:
        guest.stop_workloads(pids)
    assert guest.cpu_times(pids) == {}


def test_kaslr_moves_stext(guest):
    assert "nokaslr" not in guest.cmd("cat /proc/cmdline")
    slide = guest.kaslr_slide()
    assert slide != 0 and slide % KASLR_ALIGN == 0, hex(slide)


# -- the package's 6.12 guest, booted nokaslr ---------------------------------------------------
def test_nokaslr_keeps_stext(linux612_nokaslr):
    assert "nokaslr" in linux612_nokaslr.cmd("cat /proc/cmdline")
    assert linux612_nokaslr.symbols()["_stext"][0] == STEXT_NOKASLR
