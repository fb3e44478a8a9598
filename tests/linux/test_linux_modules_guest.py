# SPDX-License-Identifier: MIT
"""Linux test guests with kernel modules (tools/linuxguest.py, tools/linuxmods.py): the parsers on
literals, then on Debian 6.1 and 6.12 (KASLR on) the modules load at boot and mid-run, the ground
truth (/proc/modules, /sys/module sections, kallsyms) agrees with itself, and the module
workloads spend their time in module code as the guest itself sees it (sysrq-l backtraces)."""
import gzip
import lzma
import re
import subprocess

import pytest

import linuxguest
import linuxmods
from linuxguest import (BASIC_WORKLOADS, KALLSYMS_END, WORKLOAD_MODULES, WORKLOADS, LinuxGuestError,
                        parse_kallsyms_modules, parse_proc_modules, split_kallsyms_dumps)


# -- pure parsers, on literals ---------------------------------------------------------------
def test_module_names_from_paths():
    assert linuxmods.module_name("kernel/drivers/block/zram/zram.ko.xz") == "zram"
    assert linuxmods.module_name("kernel/sound/pci/hda/snd-hda-intel.ko") == "snd_hda_intel"
    assert linuxmods.module_name("extra/x.ko.zst") == "x"
    deps = linuxmods.parse_modules_dep("kernel/a/zram.ko.xz: kernel/b/zsmalloc.ko.xz\n"
                                       "kernel/b/zsmalloc.ko.xz:\n\nnot a line\n")
    assert deps == {"zram": ("kernel/a/zram.ko.xz", ("zsmalloc",)),
                    "zsmalloc": ("kernel/b/zsmalloc.ko.xz", ())}


def test_load_order_puts_dependencies_first():
    deps = {"a": ("a.ko", ("c", "b")), "b": ("b.ko", ("c",)), "c": ("c.ko", ()), "d": ("d.ko", ())}
    assert linuxmods.load_order(deps, ["a"]) == ["c", "b", "a"]
    assert linuxmods.load_order(deps, ["d", "a", "b"]) == ["d", "c", "b", "a"]  # each once
    with pytest.raises(LinuxGuestError, match="no module 'e'.*needed by a"):
        linuxmods.load_order(dict(deps, a=("a.ko", ("e",))), ["a"])
    with pytest.raises(LinuxGuestError, match="cycle: a -> b -> a"):
        linuxmods.load_order({"a": ("", ("b",)), "b": ("", ("a",))}, ["a"])


def test_parse_modinfo():
    data = b"license=GPL\0depends=libcrc32c,zsmalloc\0alias=x\0alias=y\0vermagic=6.1.0 SMP\0\0"
    info = linuxmods.parse_modinfo(data)
    assert info["depends"] == ["libcrc32c,zsmalloc"] and info["alias"] == ["x", "y"]
    assert info["vermagic"] == ["6.1.0 SMP"]


def test_parse_proc_modules():
    text = ("hotmod 16384 0 - Live 0xffffffffc0364000 (OE)\n"
            "zram 36864 2 zsmalloc,lz4, Loading 0xffffffffc0200000\n"
            "hidden 4096 0 - Live 0x0000000000000000\n")
    mods = parse_proc_modules(text)
    assert mods["hotmod"] == {"size": 16384, "refs": 0, "deps": [], "state": "Live",
                              "addr": 0xffffffffc0364000}
    assert mods["zram"]["deps"] == ["zsmalloc", "lz4"] and mods["zram"]["state"] == "Loading"
    assert mods["hidden"]["addr"] == 0


def test_parse_kallsyms_modules():
    text = ("ffffffff9a000000 T _stext\n"
            "ffffffffc0364000 t hotmod_spin\t[hotmod]\n"
            "ffffffffc0364040 t hotmod_work\t[hotmod]\n"
            "ffffffffc0200000 t init_module\t[zram]\n"
            "ffffffffc0364999 t hotmod_spin\t[hotmod]\n")
    mods = parse_kallsyms_modules(text)
    assert mods == {"hotmod": {"hotmod_spin": (0xffffffffc0364000, "t"),
                               "hotmod_work": (0xffffffffc0364040, "t")},
                    "zram": {"init_module": (0xffffffffc0200000, "t")}}


def _dump(text):
    z = gzip.compress(text)
    return z + f"{KALLSYMS_END} {len(text.splitlines())} {len(z)}@@\n".encode()


def test_split_kallsyms_dumps():
    one, two = b"ffffffff81000000 T _stext\n", b"ffffffff81000000 T _stext\nffffffffc0000000 t f\t[m]\n"
    assert split_kallsyms_dumps(b"") == []
    assert split_kallsyms_dumps(_dump(one) + b"noise" + _dump(two)) == [one, two]
    assert split_kallsyms_dumps(_dump(one) + _dump(two)[:-30]) == [one]  # the second not complete yet
    mangled = _dump(two)
    z = mangled[:mangled.index(KALLSYMS_END.encode())]
    with pytest.raises(LinuxGuestError, match="does not gunzip"):  # a cooked tty added a \r
        split_kallsyms_dumps(z[:20] + b"\r" + z[20:] + mangled[len(z):])
    with pytest.raises(LinuxGuestError, match="has 1 lines, the guest sent 2"):
        split_kallsyms_dumps(gzip.compress(one) + f"{KALLSYMS_END} 2 {len(gzip.compress(one))}@@\n".encode())


def test_in_tree_ko_is_decompressed_once(tmp_path):
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    (tree / "kernel").mkdir(parents=True)
    elf = b"\x7fELF" + bytes(60)
    (tree / "kernel" / "good.ko.xz").write_bytes(lzma.compress(elf))
    (tree / "kernel" / "bad.ko.xz").write_bytes(b"not xz at all")
    (tree / "kernel" / "plain.ko").write_bytes(b"MZ not an ELF")
    (tree / "modules.dep").write_text("kernel/good.ko.xz:\nkernel/bad.ko.xz:\nkernel/plain.ko:\n")
    path = linuxmods.in_tree_ko(str(tree), str(cache), "good")
    assert open(path, "rb").read() == elf and path == str(cache / "good.ko")
    with pytest.raises(LinuxGuestError, match="cannot decompress"):
        linuxmods.in_tree_ko(str(tree), str(cache), "bad")
    with pytest.raises(LinuxGuestError, match="not an ELF"):
        linuxmods.in_tree_ko(str(tree), str(cache), "plain")
    with pytest.raises(LinuxGuestError, match="no module 'none'"):
        linuxmods.in_tree_ko(str(tree), str(cache), "none")


def test_tree_without_modules_dep_reads_modinfo(tmp_path):
    """Debian's .deb ships no modules.dep: a dependency comes from the .ko's own .modinfo."""
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    (tree / "kernel").mkdir(parents=True)
    for name, depends in (("top", "mid"), ("mid", "leaf"), ("leaf", "")):
        src = tmp_path / f"{name}.o"
        subprocess.run(["as", "-o", str(src), "/dev/null"], check=True)
        info = tmp_path / f"{name}.modinfo"
        info.write_bytes(f"license=MIT\0depends={depends}\0".encode())
        subprocess.run(["objcopy", "--add-section", f".modinfo={info}", str(src)], check=True)
        (tree / "kernel" / f"{name}.ko.xz").write_bytes(lzma.compress(src.read_bytes()))
    deps = linuxmods.modules_dep(str(tree), str(cache))
    assert "top" in deps and "nothere" not in deps
    assert linuxmods.load_order(deps, ["top"]) == ["leaf", "mid", "top"]


def test_overlay_lists_modules_and_boot_order(tmp_path):
    a, b = tmp_path / "a.ko", tmp_path / "b.ko"
    a.write_bytes(b"A" * 10)
    b.write_bytes(b"B" * 20)
    z = linuxmods.overlay_cpio({"b": str(b), "a": str(a)}, [("a", ""), ("b", "x=1 y=2")])
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-i", "-d", "--quiet"], cwd=out, input=gzip.decompress(z), check=True)
    d = out / linuxguest.OVERLAY
    assert (d / "a.ko").read_bytes() == b"A" * 10 and (d / "b.ko").read_bytes() == b"B" * 20
    assert (d / "boot.list").read_text() == "a\nb x=1 y=2\n"


def test_headers_compiler_and_makefile(tmp_path):
    k = tmp_path / "usr" / "src" / "linux-headers-6.12.9-amd64"
    k.mkdir(parents=True)
    (k / ".config").write_text('CONFIG_CC_VERSION_TEXT="x86_64-linux-gnu-gcc-12 (Debian 12.2.0-14) 12.2.0"\n')
    (k / ".kernelvariables").write_text(
        "CC = $(if $(DEBIAN_KERNEL_USE_CCACHE),$(CCACHE)) $(CROSS_COMPILE)gcc-12\n"
        "override CROSS_COMPILE = x86_64-linux-gnu-\n")
    (k / "Makefile").write_text("include /usr/src/linux-headers-6.12.9-common/Makefile\n")
    assert linuxmods.headers_compiler(str(k)) == ("x86_64-linux-gnu-gcc-12",
                                                  "x86_64-linux-gnu-gcc-12 (Debian 12.2.0-14) 12.2.0")
    assert linuxmods.headers_makefile(str(k)) == str(tmp_path / "usr/src/linux-headers-6.12.9-common/Makefile")
    (k / ".kernelvariables").write_text(  # 6.1: the prefix only when cross-building
        "CC = $(CROSS_COMPILE)gcc-12\nifneq ($(DEB_BUILD_ARCH),$(DEB_HOST_ARCH))\n"
        "override CROSS_COMPILE = $(DEB_HOST_GNU_TYPE)-\nendif\n")
    assert linuxmods.headers_compiler(str(k))[0] == "gcc-12"
    (k / "Makefile").write_text("all:\n")
    with pytest.raises(LinuxGuestError, match="includes no"):
        linuxmods.headers_makefile(str(k))


def test_module_workloads_are_declared():
    assert set(WORKLOAD_MODULES) <= set(WORKLOADS)
    assert not set(BASIC_WORKLOADS) & set(WORKLOAD_MODULES)
    assert set(BASIC_WORKLOADS) | set(WORKLOAD_MODULES) == set(WORKLOADS)


def test_a_module_not_carried_is_refused_before_boot():
    g = linuxguest.LinuxGuest("6.1")
    with pytest.raises(LinuxGuestError, match="not in this guest's initramfs"):
        g.insmod("brd")


# -- the guests (tests/linux/conftest.py: linux61_modules, linux612_modules) -----------------
BOOT = {"6.1": ("brd", "hotmod"), "6.12": ("hotmod", "brd")}  # series -> (loaded by /init, carried)


@pytest.fixture(params=sorted(BOOT))
def modguest(request):
    """Each series' module guest, shared by the package."""
    return request.getfixturevalue({"6.1": "linux61_modules", "6.12": "linux612_modules"}[request.param])


def _in_text(syms, text, size):
    """The text symbols of a module inside [text, text + size)."""
    return {n: a for n, (a, t) in syms.items() if t in "tT" and text <= a < text + size}


@pytest.mark.qemu
def test_boot_module_is_loaded_and_in_the_boot_map(modguest):
    boot, carried = BOOT[modguest.series]
    loaded = modguest.modules_now()
    assert loaded[boot]["state"] == "Live" and carried not in loaded, loaded
    text = modguest.module_sections(boot)[".text"]
    assert loaded[boot]["addr"] == text, (hex(loaded[boot]["addr"]), hex(text))  # text comes first
    assert text >= 0xffffffffc0000000, hex(text)  # the module area, outside the kernel's text
    now = modguest.module_symbols(boot)[boot]
    with open(modguest.kallsyms_path()) as f:
        mapped = parse_kallsyms_modules(f.read())
    assert mapped[boot] == now  # the map /init dumped after insmod: same boot, same addresses
    fn = {"brd": "brd_submit_bio", "hotmod": "hotmod_spin"}[boot]
    assert fn in _in_text(now, text, loaded[boot]["size"]), sorted(now)


@pytest.mark.qemu
def test_insmod_and_rmmod_mid_run(modguest):
    _, carried = BOOT[modguest.series]
    assert carried not in modguest.modules_now()
    entry = modguest.insmod(carried)
    try:
        assert entry["state"] == "Live"
        syms = modguest.module_symbols(carried)[carried]
        text = modguest.module_sections(carried)[".text"]
        inside = _in_text(syms, text, entry["size"])
        want = {"brd": {"brd_submit_bio"},  # 6.12 inlines brd_do_bvec into it
                "hotmod": {"hotmod_read", "hotmod_work", "hotmod_spin"}}[carried]
        assert want <= set(inside), sorted(syms)
    finally:
        modguest.rmmod(carried)
    assert carried not in modguest.modules_now()
    assert carried not in modguest.module_symbols()


@pytest.mark.qemu
def test_kallsyms_now_has_a_module_loaded_after_boot(linux61_modules):
    g = linux61_modules
    with open(g.kallsyms_path()) as f:
        assert "hotmod" not in parse_kallsyms_modules(f.read())
    g.insmod("hotmod", "kthread=1")  # and a kernel thread spinning in the module
    try:
        with open(g.kallsyms_now()) as f:
            fresh = parse_kallsyms_modules(f.read())
        now = g.module_symbols()
        assert set(fresh) == set(now) == {"brd", "hotmod"} and fresh == now
        pid = int(g.cmd("for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = hotmod_kthread ] && "
                        "echo ${p#/proc/}; done; true").split()[0])
        chains = sysrq_chains(g, "hotmod_kthread")
        assert len(chains) >= 3, chains  # busy on a vCPU in most of the 10 snapshots
        assert sum("hotmod_thread+" in c for c in chains) >= len(chains) // 2, chains
        assert g.cpu_times([pid])[pid][1] > 0
    finally:
        g.rmmod("hotmod")


SNAPSHOTS = 10  # sysrq-l rounds per look


def sysrq_chains(g, comm, rounds=SNAPSHOTS):
    """The backtraces (RIP line and call trace, as text) the guest printed for task comm in
    `rounds` sysrq-l rounds (each shows what every busy vCPU runs at that moment), read in
    batches of 10 so the kernel's 128 KiB log never wraps."""
    chains = []
    g.cmd("dmesg -c > /dev/null")
    for batch in range(0, rounds, 10):
        g.cmd("i=0; while [ $i -lt %d ]; do echo l > /proc/sysrq-trigger; sleep 0.1; i=$((i+1)); done"
              % min(10, rounds - batch), timeout=120)
        # The backtraces are info-level (not on the quiet console); only their headers, pcs and
        # frames cross the slow emulated UART.
        log = g.cmd("dmesg -c | grep -E 'NMI backtrace for cpu|Comm: |RIP: 0010:|</TASK>|"
                    "[A-Za-z_][A-Za-z0-9_.]*\\+0x[0-9a-f]+/0x'; true", timeout=120)
        log = re.sub(r"^\[[ 0-9.]+\] ", "", log, flags=re.M)
        for block in re.split(r"NMI backtrace for cpu \d+", log)[1:]:
            if re.search(rf"Comm: {re.escape(comm[:15])} ", block):
                chains.append(block.split("</TASK>")[0])
    return chains


@pytest.mark.qemu
def test_module_workloads_spend_their_time_in_module_code(modguest):
    """Each module workload, alone: most of its CPU time is system time, and the guest's own
    backtraces (sysrq-l, 30 snapshots, each a random moment of the workload's life) find its pc
    in the module's code -- with the whole hot chain above it for hotmod. gdbsample measured the
    leaf shares (docs/linux-guest.md): brd's code 65 % (6.1) and 55 % (6.12) of brddd's samples
    (the rest is direct I/O pinning user pages), hotmod_spin 96 % of hotmod's; sysrq-l saw brd's
    code in 41-77 % of its snapshots. The bars sit far below: brd in >= 1/10 of the snapshots
    that caught it (of 30: >= 3, which a true 41 % misses once in 3*10^4 runs; a workload that
    never ran module code would show 0), hotmod in >= half (at a true 90 %: once in 10^8)."""
    boot, carried = BOOT[modguest.series]
    hot = {"brddd": r"RIP: 0010:brd_\w+\+\S+ \[brd\]",  # the leaf in brd's own code
           "hotmod": r"RIP: 0010:hotmod_spin\+\S+ \[hotmod\]\n(.*\n)*?\s*hotmod_work\+\S+ \[hotmod\]\n"
                     r"\s*hotmod_read\+\S+ \[hotmod\]\n"}  # the leaf and the chain above it
    share = {"brddd": 1 / 10, "hotmod": 1 / 2}  # of the snapshots that caught the workload
    for name in ("brddd", "hotmod"):
        pids = modguest.start_workloads([name])  # insmods the carried module when needed
        try:
            before = modguest.cpu_times(pids)
            chains = sysrq_chains(modguest, name, rounds=30)
            after = modguest.cpu_times(pids)
        finally:
            modguest.stop_workloads(pids)
            if WORKLOAD_MODULES[name][0] == carried:
                modguest.rmmod(carried)
        pid = pids[name]
        user, system = (after[pid][0] - before[pid][0]), (after[pid][1] - before[pid][1])
        assert system >= 0.8 * (user + system) and system > 0, (name, user, system)
        assert len(chains) >= 10, (name, len(chains))  # on the other vCPU (caught 10 of 10 in trials)
        inside = [c for c in chains if re.search(hot[name], c)]
        print(f"{modguest.series} {name}: {len(inside)} of {len(chains)} snapshots in module code; "
              f"utime {user} stime {system} ticks")  # shown with pytest -rP
        assert len(inside) >= share[name] * len(chains), (name, len(inside), len(chains), chains[:2])


@pytest.mark.qemu
def test_hotmod_ko_for_the_host_has_dwarf_and_the_loaded_code(modguest):
    """g.hotmod_ko (for gdbsample -e) is the module the guest runs, with DWARF: the same .text
    bytes and ORC as the stripped copy the guest loaded, built for this kernel (vermagic), and
    the chain's functions are in its symbol table."""
    from elftools.elf.elffile import ELFFile
    with open(modguest.hotmod_ko, "rb") as f, open(modguest.ko["hotmod"], "rb") as g:
        full, strip = ELFFile(f), ELFFile(g)
        names = {s.name for s in full.iter_sections()}
        assert {".debug_info", ".debug_line", ".orc_unwind", ".orc_unwind_ip", ".text"} <= names
        assert not any(s.name.startswith(".debug_") for s in strip.iter_sections())
        for sec in (".text", ".orc_unwind", ".orc_unwind_ip"):
            assert full.get_section_by_name(sec).data() == strip.get_section_by_name(sec).data(), sec
        funcs = {s.name: s["st_size"] for s in full.get_section_by_name(".symtab").iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC"}
        assert all(funcs.get(n, 0) > 0 for n in ("hotmod_read", "hotmod_work", "hotmod_spin")), funcs
        info = linuxmods.parse_modinfo(full.get_section_by_name(".modinfo").data())
    assert info["vermagic"][0].split()[0] == modguest.release() == modguest.cmd("uname -r").strip()
