# SPDX-License-Identifier: MIT
"""linuxguest.py: boot Debian's stock kernel with a busybox initramfs under QEMU TCG and drive its shell.

The stock kernel is what distros ship (no frame pointers, ORC, KASLR), so gdbsample is tested
on it. The pieces, one file each: tools/linuxkernel.py fetches and caches the kernels (under a
build directory, default build/linux/), tools/linuxinitramfs.py builds the initramfs (/init and
the workloads), tools/linuxparse.py parses what the guest prints, tools/linuxmods.py the modules
a guest carries, tools/qemuguest.py what every guest shares (QEMU by its pid, the shell's socket,
logs). Their names are importable from here too, as before the split.

A guest may carry kernel modules (LinuxGuest(modules=..., lazy_modules=...)): in-tree ones from
the image's tree and the out-of-tree test module hotmod (tests/linux/hotmod/), built against the
matching linux-headers package; /init loads `modules` before READY, `g.insmod()` the rest later.

CLI: `linuxguest.py fetch [--build DIR]` fills the cache; `linuxguest.py boot [--series S]`
boots a guest with the console on this terminal (the gdbstub and QMP addresses are printed).
"""
import argparse
import os
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qemuguest import QemuGuest, free_port  # noqa: E402
from linuxkernel import (APT, DEFAULT_BUILD, META, ROOT, SERIES, UNREACHABLE, ArchiveUnreachable,  # noqa: E402,F401
                         LinuxGuestError, apt_options, cached_kernel, cached_modules, fetch_kernel,
                         fetch_modules, install, kernel_release)
from linuxinitramfs import (BASIC_WORKLOADS, BUSYBOX, INIT, KALLSYMS_END, LINKS, MODULE_PARAMS,  # noqa: E402,F401
                            OVERLAY, READY, SCRIPTS, WORKLOAD_MODULES, WORKLOADS, build_initramfs,
                            ensure_tool, pack_tree)
from linuxparse import (parse_kallsyms, parse_kallsyms_modules, parse_proc_modules, parse_stat,  # noqa: E402,F401
                        split_kallsyms_dumps)

# What callers import from here (the split's modules' names included, as before the split).
__all__ = ["APT", "ArchiveUnreachable", "BASIC_WORKLOADS", "early_panic", "BUSYBOX", "DEFAULT_BUILD", "INIT", "KALLSYMS_END",
           "LINKS", "LinuxGuest", "LinuxGuestError", "META", "MODULE_PARAMS", "OVERLAY", "QEMU", "READY", "ROOT",
           "SCRIPTS", "SERIES", "STEXT_NOKASLR", "UNREACHABLE", "USER_HZ", "WORKLOADS", "WORKLOAD_MODULES",
           "apt_options", "build_initramfs", "cached_kernel", "cached_modules", "ensure_tool", "fetch_all",
           "fetch_kernel", "fetch_modules", "install", "kernel_release", "pack_tree", "parse_kallsyms",
           "parse_kallsyms_modules", "parse_proc_modules", "parse_stat", "split_kallsyms_dumps"]
QEMU = "qemu-system-x86_64"
STEXT_NOKASLR = 0xffffffff81000000  # _stext when the kernel runs at its link address
USER_HZ = 100                       # unit of utime/stime in /proc/PID/stat


def fetch_all(build=DEFAULT_BUILD):
    """Fills the cache: every series with its modules tree, its headers and the out-of-tree test
    modules built for it, and the initramfs. Returns {series: (vmlinuz, config)}."""
    import linuxmods
    os.makedirs(build, exist_ok=True)
    kernels = {}
    for s in SERIES:
        fetch_modules(build, s)
        kernels[s] = fetch_kernel(build, s)
        for name in sorted(linuxmods.OUT_OF_TREE):
            linuxmods.build_out_of_tree(build, s, kernel_release(kernels[s][0]), name)
    build_initramfs(build)
    return kernels


# -- the guest -------------------------------------------------------------------------------
def early_panic(message):
    """Whether a failed boot's message (LinuxGuest.tail's form) is a kernel panic that came before
    the shell said anything: nothing of the test's had run in the guest."""
    shell = message.split("--- shell (last 1000 chars) ---\n", 1)
    if len(shell) < 2:
        return False
    said, _, console = shell[1].partition("\n--- kernel console (last 2000 chars) ---\n")
    return not said.strip() and "Kernel panic - not syncing" in console


class LinuxGuest(QemuGuest):
    """One QEMU (TCG) running Debian's stock kernel and the busybox initramfs, shell connected
    (tools/qemuguest.py: start, stop, the socket, logs). A subclass for another architecture
    (tools/linuxguest_arm64.py) sets SERIES_NAMES and STEXT_LINK and overrides fetch(),
    make_initramfs() and command_line()."""
    Error = LinuxGuestError
    TEMP_PREFIX = "gdbsample-linux-"
    SOCKET = "console.sock"           # ttyS0 (hvc0 on arm64): the shell
    READY = READY
    CHANNEL = "console"
    BOOT_TIMEOUT = 300
    READ_TIMEOUT = 30
    SERIES_NAMES = tuple(SERIES)      # the series this class boots
    STEXT_LINK = STEXT_NOKASLR        # _stext at the link address (kaslr_slide's base)

    def __init__(self, series="6.1", smp=2, kaslr=True, build=DEFAULT_BUILD, memory=512, cpu=None,
                 append=(), extra=(), interactive=False, modules=(), lazy_modules=(), module_params=None):
        """modules: kernel modules /init loads before READY (in-tree names, with the modules their
        says they need, or out-of-tree ones of linuxmods.OUT_OF_TREE such as hotmod);
        lazy_modules: carried in the initramfs for insmod() later; module_params: {name: "a=1 b=2"}
        over MODULE_PARAMS.
        series: "6.1" or "6.12"; kaslr=False appends nokaslr; cpu: a -cpu model (None: QEMU's
        default, qemu64, which both series boot on); append/extra: more kernel/QEMU arguments;
        interactive: a shell for a person (prompts, echo) instead of the one cmd() drives."""
        if series not in self.SERIES_NAMES:
            raise LinuxGuestError(f"series must be one of {', '.join(self.SERIES_NAMES)}, not {series!r}")
        super().__init__()
        self.series, self.smp, self.kaslr, self.build = series, smp, kaslr, build
        self.memory, self.cpu, self.append, self.extra = memory, cpu, list(append), list(extra)
        self.interactive = interactive
        self.modules, self.lazy_modules = tuple(modules), tuple(lazy_modules)
        self.module_params = dict(MODULE_PARAMS, **(module_params or {}))
        self.ko = {}              # module name -> the .ko the guest carries (loaded or insmod-able)
        self.debug_ko = {}        # module name -> its .ko with the most symbols/DWARF (for -e)
        self.module_deps = {}     # module name -> modules it needs loaded first, in load order
        self.build_seconds = {}   # out-of-tree module -> seconds its build took here (0: cached)
        self._dumps = 1           # kallsyms dumps on ttyS1 so far (/init's first)
        self.vmlinuz = self.config = self.initramfs = None
        self.seq = 0              # command counter for unique markers
        self._kallsyms = None     # cleaned map path, once complete
        self._symbols = None      # parsed map, once asked for

    def start(self, boot_timeout=None):
        """Boots (QemuGuest.start), once more if the kernel panicked before the shell said a word:
        under TCG the stock 6.12 was seen to die 1.8 s into its boot, in its idle loop at a pc
        inside an instruction the kernel had just patched ("Fatal exception in interrupt", no
        module loaded, nothing of ours run) -- the emulator's, not the test's. Warned, counted
        in self.boot_panics; a second panic, or any other failure, is raised as it is."""
        self.boot_panics = 0
        while True:
            try:
                return super().start(boot_timeout)
            except LinuxGuestError as e:
                if self.boot_panics or not early_panic(str(e)):
                    raise
                self.boot_panics += 1
                warnings.warn(f"the {self.series} guest panicked before its shell started; booting it again:\n"
                              + str(e)[-1500:], RuntimeWarning)
                self.buf, self.transcript = "", []

    def command_line(self):
        """QEMU's argv. ttyS0: the shell on a unix socket QEMU waits for; ttyS1: kallsyms; ttyS2:
        the kernel console; the gdbstub on 127.0.0.1 only; QMP on a unix socket; no NIC."""
        args = (["console=ttyS2", "quiet", "panic=-1",  # quiet: console errors only; panic ends QEMU
                 "linuxguest_shell=" + ("interactive" if self.interactive else "driver")]
                + ([] if self.kaslr else ["nokaslr"]) + self.append)
        cmd = [QEMU, "-machine", "pc", "-accel", "tcg", "-m", str(self.memory), "-smp", str(self.smp),
               "-kernel", self.vmlinuz, "-initrd", self.initramfs, "-append", " ".join(args),
               "-display", "none", "-nodefaults", "-no-reboot",
               "-chardev", f"socket,id=s0,path={self.dir}/console.sock,server=on,wait=on",
               "-serial", "chardev:s0", "-serial", f"file:{self.dir}/ttyS1.raw",
               "-serial", f"file:{self.dir}/console.log",
               "-gdb", f"tcp:127.0.0.1:{self.gdb_port}", "-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        return cmd + (["-cpu", self.cpu] if self.cpu else []) + self.extra

    def prepare(self):
        """Fetches what is missing: the kernel and the initramfs (before the temp dir)."""
        os.makedirs(self.build, exist_ok=True)
        self.vmlinuz, self.config = self.fetch()
        self.initramfs = self.make_initramfs()

    def setup(self):
        """The gdbstub's port, QMP's socket and the initramfs with this guest's modules."""
        self.gdb_port = free_port()
        self.initramfs = self.with_modules(self.initramfs)
        self.qmp_path = self.path("qmp.sock")

    def booted(self):
        """The driver shell answers, and the boot modules are loaded."""
        if not self.interactive:
            self.run("true")
            self._check_boot_modules()

    def fetch(self):
        """(vmlinuz, config) of self.series, cached or downloaded."""
        return fetch_kernel(self.build, self.series)

    def make_initramfs(self):
        """Path of the initramfs this guest boots."""
        return build_initramfs(self.build)

    def kernel_log(self, last=100000):
        """The end of the kernel console (ttyS2): boot messages, oopses, sysrq output."""
        return self.read_file("console.log", last)

    def tail(self):
        """The last of the shell, the kernel console and QEMU, for failure messages."""
        return ("--- shell (last 1000 chars) ---\n" + "".join(self.transcript)[-1000:] +
                "\n--- kernel console (last 2000 chars) ---\n" + self.kernel_log(2000) +
                "\n--- qemu ---\n" + self.qemu_log())

    # -- console ---------------------------------------------------------------------------
    def run(self, line, timeout=30):
        """Runs a shell command line; returns (exit status, output). The markers are quoted on
        the way in, so an echo of the input never matches them."""
        self.seq += 1
        n = self.seq
        self.send(f'echo "@@B""EGIN {n}@@"\n{line}\necho "@@E""ND {n} $?@@"\n')
        out = self.read_until(re.compile(rf"@@END {n} (\d+)@@\n"), timeout)
        m = re.search(rf"@@BEGIN {n}@@\n(.*)@@END {n} (\d+)@@\n$", out, re.S)
        if not m:
            raise LinuxGuestError(f"no output markers for {line!r}: {out[-500:]!r}")
        return int(m.group(2)), m.group(1)

    def cmd(self, line, timeout=30, check=True):
        """Runs a shell command line and returns its output; check: raise on a non-zero status."""
        status, out = self.run(line, timeout)
        if check and status != 0:
            raise LinuxGuestError(f"`{line}` exited with {status}: {out[-800:]}")
        return out

    # -- modules ---------------------------------------------------------------------------
    def modules_tree(self):
        """lib/modules/VER of this guest's kernel (cached beside it)."""
        return fetch_modules(self.build, self.series)

    def release(self):
        """The kernel release (uname -r), from the vmlinuz's name."""
        return kernel_release(self.vmlinuz)

    def out_of_tree(self, name):
        """(.ko with DWARF, stripped .ko) of out-of-tree module name, built for this kernel."""
        import linuxmods
        return linuxmods.build_out_of_tree(self.build, self.series, self.release(), name)

    def with_modules(self, base):
        """base, or base + an overlay archive with the modules this guest carries (written into
        the temp dir); fills ko, debug_ko and module_deps."""
        import linuxmods
        wanted = list(dict.fromkeys(self.modules + self.lazy_modules))
        if not wanted:
            return base
        oot = [n for n in wanted if n in linuxmods.OUT_OF_TREE]
        intree = [n for n in wanted if n not in linuxmods.OUT_OF_TREE]
        if intree:
            tree = self.modules_tree()
            cache = os.path.join(self.build, self.series, "ko", self.release())
            deps = linuxmods.modules_dep(tree, cache)
            for n in linuxmods.load_order(deps, intree):
                self.ko[n] = self.debug_ko[n] = linuxmods.in_tree_ko(tree, cache, n, deps)
            for n in intree:
                self.module_deps[n.replace("-", "_")] = linuxmods.load_order(deps, [n])[:-1]
        for n in oot:
            t0 = time.monotonic()
            self.debug_ko[n], self.ko[n] = self.out_of_tree(n)
            self.build_seconds[n] = round(time.monotonic() - t0, 1)
            self.module_deps[n] = []
        boot = []
        for n in self.modules:
            for m in self.module_deps[n.replace("-", "_")] + [n.replace("-", "_")]:
                if m not in [b for b, _ in boot]:
                    boot.append((m, self.module_params.get(m, "")))
        out = os.path.join(self.dir, "initramfs.cpio.gz")
        with open(base, "rb") as f:
            data = f.read()
        with open(out, "wb") as f:
            f.write(data + linuxmods.overlay_cpio(self.ko, boot))
        return out

    @property
    def hotmod_ko(self):
        """The out-of-tree test module with -g (DWARF), for `gdbsample -e hotmod.ko` (the guest
        loads the same module with its debug sections stripped); None unless carried."""
        return self.debug_ko.get("hotmod")

    def _check_boot_modules(self):
        want = [n.replace("-", "_") for n in self.modules]
        if not want:
            return
        loaded = self.modules_now()
        missing = [n for n in want if n not in loaded]
        if missing:
            log = self.cmd("cat /tmp/insmod.log 2>/dev/null; true")
            raise LinuxGuestError(f"modules not loaded at boot: {', '.join(missing)}; insmod said: "
                                  f"{log.strip()[-800:] or '(nothing)'}")

    def insmod(self, name, params=None, timeout=60):
        """Loads a carried module (and first what it needs, if not loaded) mid-run; params: its
        parameters (default MODULE_PARAMS). Returns its /proc/modules entry."""
        name = name.replace("-", "_")
        if name not in self.ko:
            raise LinuxGuestError(f"module {name} is not in this guest's initramfs "
                                  f"(give it in modules= or lazy_modules=)")
        loaded = self.modules_now()
        for m in self.module_deps.get(name, []) + [name]:
            if m in loaded:
                continue
            p = self.module_params.get(m, "") if params is None or m != name else params
            self.cmd(f"insmod /{OVERLAY}/{m}.ko {p}".rstrip(), timeout=timeout)
        return self.modules_now()[name]

    def rmmod(self, name, timeout=60):
        """Unloads a module (not what it needed)."""
        self.cmd(f"rmmod {name.replace('-', '_')}", timeout=timeout)

    def modules_now(self):
        """{name: {size, refs, deps, state, addr}} from /proc/modules now."""
        return parse_proc_modules(self.cmd("cat /proc/modules"))

    def module_sections(self, name):
        """{section: address} of a loaded module, from /sys/module/NAME/sections (.text, .data, ...)."""
        d = f"/sys/module/{name.replace('-', '_')}/sections"
        out = self.cmd(f"for f in {d}/.[!.]* {d}/*; do [ -f \"$f\" ] && echo \"${{f##*/}} $(cat \"$f\")\"; done; true")
        secs = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) == 2 and f[1].startswith("0x"):
                secs[f[0]] = int(f[1], 16)
        if ".text" not in secs:
            raise LinuxGuestError(f"{d} lists no .text: {out[-300:]!r}")
        return secs

    def module_symbols(self, name=None):
        """{module: {symbol: (addr, type)}} of the modules loaded now (or of one), read from
        /proc/kallsyms through the shell (only module lines: small)."""
        pattern = f"\\[{name.replace('-', '_')}\\]$" if name else "\\]$"
        return parse_kallsyms_modules(self.cmd(f"grep '{pattern}' /proc/kallsyms; true", timeout=120))

    def kallsyms_now(self, timeout=120):
        """Path of a fresh full /proc/kallsyms dump (e.g. after insmod), through ttyS1 as at boot:
        gzipped, line-counted; each call makes a new file in the temp dir."""
        self.cmd("cat /proc/kallsyms > /tmp/kallsyms; lines=$(wc -l < /tmp/kallsyms); gzip /tmp/kallsyms; "
                 "{ stty raw -echo; cat /tmp/kallsyms.gz; "
                 "echo \"@@KALLSYMS-END $lines $(wc -c < /tmp/kallsyms.gz)@@\"; } <>/dev/ttyS1 >&0; "
                 "rm /tmp/kallsyms.gz", timeout=timeout)
        self._dumps += 1
        text = self._kallsyms_dumps(self._dumps, timeout)[-1]
        path = os.path.join(self.dir, f"kallsyms-{self._dumps}")
        with open(path, "wb") as f:
            f.write(text)
        return path

    # -- symbols ---------------------------------------------------------------------------
    def _kallsyms_dumps(self, count, timeout):
        """The first count maps on ttyS1 (waiting up to timeout s for them), as text bytes."""
        deadline = time.monotonic() + timeout
        while True:
            with open(os.path.join(self.dir, "ttyS1.raw"), "rb") as f:
                dumps = split_kallsyms_dumps(f.read())
            if len(dumps) >= count:
                return dumps[:count]
            if time.monotonic() > deadline:
                raise LinuxGuestError(f"ttyS1 has {len(dumps)} complete kallsyms dumps after {timeout} s, "
                                      f"not {count}")
            time.sleep(0.2)

    def kallsyms_path(self, timeout=60):
        """Path of this boot's /proc/kallsyms as text (complete: its line count matched; no CR),
        as /init dumped it (after the boot modules loaded); it lives in the temp dir, so until
        stop()."""
        if self._kallsyms:
            return self._kallsyms
        text = self._kallsyms_dumps(1, timeout)[0]
        self._kallsyms = os.path.join(self.dir, "kallsyms")
        with open(self._kallsyms, "wb") as f:
            f.write(text)
        return self._kallsyms

    def symbols(self):
        """{name: (address, type)} from this boot's kallsyms."""
        if self._symbols is None:
            with open(self.kallsyms_path()) as f:
                self._symbols = parse_kallsyms(f.read())
        return self._symbols

    def kaslr_slide(self):
        """_stext of this boot minus its link address (0 with nokaslr)."""
        return self.symbols()["_stext"][0] - self.STEXT_LINK

    # -- workloads -------------------------------------------------------------------------
    def start_workloads(self, names=None):
        """Starts WORKLOADS by name (default: every one that needs no module) in the background;
        returns {name: pid} (pid's comm = name)."""
        names = BASIC_WORKLOADS if names is None else names
        pids = {}
        for name in names:
            if name not in WORKLOADS:
                raise LinuxGuestError(f"no workload {name!r} (have {', '.join(WORKLOADS)})")
            prepare, command, _ = WORKLOADS[name]
            self._need_modules(name)
            if prepare:
                self.cmd(prepare, timeout=300)
            out = self.cmd(f"({command}) </dev/null >/dev/null 2>&1 & echo $!")
            pids[name] = int(out.split()[-1])
        self._await_names(pids)
        return pids

    def _need_modules(self, workload):
        """Loads the modules a workload needs if the guest carries them, else raises."""
        need = WORKLOAD_MODULES.get(workload, ())
        if not need:
            return
        loaded = self.modules_now()
        for m in need:
            if m in loaded:
                continue
            if m not in self.ko:
                raise LinuxGuestError(f"workload {workload} needs module {m}: start the guest with "
                                      f"modules=({m!r},) or lazy_modules=({m!r},)")
            self.insmod(m)

    # A workload is a subshell that execs its program: until the exec its comm is `sh`, and on a
    # busy host the subshell may not have run yet when $! comes back. Wait, in guest time, until
    # each pid's comm is its name, so a caller never sees a workload under the wrong name.
    NAME_TRIES = 600  # x 50 ms of guest sleep: 30 s of guest time

    def _await_names(self, pids):
        checks = " ".join(f"{pid}:{name[:15]}" for name, pid in sorted(pids.items()))
        out = self.cmd(
            f"for pc in {checks}; do p=${{pc%%:*}}; c=${{pc#*:}}; i=0; "
            f"while [ \"$(cat /proc/$p/comm 2>/dev/null)\" != \"$c\" ] && [ $i -lt {self.NAME_TRIES} ]; "
            f"do sleep 0.05; i=$((i+1)); done; "
            f"[ $i -lt {self.NAME_TRIES} ] || echo \"late $p $c $(cat /proc/$p/comm 2>/dev/null)\"; done; true", timeout=120)
        late = [line for line in out.splitlines() if line.startswith("late ")]
        if late:
            raise LinuxGuestError("workloads not running under their names after "
                                  f"{self.NAME_TRIES} tries: " + "; ".join(late))

    def stop_workloads(self, pids):
        """Kills the given pids ({name: pid} or a list) and reaps them."""
        pids = list(pids.values()) if isinstance(pids, dict) else list(pids)
        if pids:
            ids = " ".join(map(str, pids))
            self.cmd(f"kill -9 {ids} 2>/dev/null; wait {ids} 2>/dev/null; true")  # reaped: no zombies

    def cpu_times(self, pids):
        """{pid: (utime, stime)} in clock ticks (USER_HZ) from /proc/PID/stat, read in one command;
        a pid that is gone is left out."""
        pids = list(pids.values()) if isinstance(pids, dict) else list(pids)
        return parse_stat(self.cmd("cat " + " ".join(f"/proc/{p}/stat" for p in pids) + " 2>/dev/null; true"))


# -- CLI -------------------------------------------------------------------------------------
def cmd_fetch(args):
    for series, (vmlinuz, config) in fetch_all(args.build).items():
        print(f"{series}: {vmlinuz}")
    print(f"initramfs: {build_initramfs(args.build)}")


def cmd_boot(args, g=None):
    """Boots a guest (g, or one of args.series) with an interactive shell and bridges its console
    to this terminal until Ctrl-] (or, when stdin is not a terminal, until stdin ends and the
    guest is quiet for 2 s); QEMU is stopped on the way out."""
    import select
    import termios
    import tty
    if g is None:
        g = LinuxGuest(args.series, smp=args.smp, kaslr=not args.nokaslr, build=args.build, cpu=args.cpu,
                       interactive=True)
    with g:
        print(f"linuxguest: {os.path.basename(g.vmlinuz)} up in {g.boot_seconds:.1f} s; qemu pid {g.pid}; "
              f"gdbstub tcp:127.0.0.1:{g.gdb_port}; qmp {g.qmp_path}; kallsyms {g.kallsyms_path()}; "
              f"kernel console {g.dir}/console.log; Ctrl-] quits", file=sys.stderr)
        g.send("\n")  # a first prompt
        inputs = [0, g.sock]
        saved = termios.tcgetattr(0) if sys.stdin.isatty() else None
        try:
            if saved:
                tty.setraw(0)  # keys (Ctrl-C included) go to the guest
            while True:
                ready, _, _ = select.select(inputs, [], [], None if 0 in inputs else 2.0)
                if not ready:
                    break
                if g.sock in ready:
                    data = g.sock.recv(65536)
                    if not data:
                        break  # QEMU ended (e.g. the shell exited: PID 1 gone, panic, -no-reboot)
                    os.write(1, data)
                if 0 in ready:
                    data = os.read(0, 1024)
                    if b"\x1d" in data:
                        break
                    if data:
                        g.sock.sendall(data)
                    else:
                        inputs = [g.sock]
        finally:
            if saved:
                termios.tcsetattr(0, termios.TCSADRAIN, saved)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    f = sub.add_parser("fetch", help="download and cache both kernel series and build the initramfs")
    b = sub.add_parser("boot", help="boot a guest with its console on this terminal")
    for q in (f, b):
        q.add_argument("--build", default=DEFAULT_BUILD, help="cache directory (default build/linux)")
    b.add_argument("--series", default="6.1", choices=sorted(SERIES))
    b.add_argument("--smp", type=int, default=2)
    b.add_argument("--nokaslr", action="store_true")
    b.add_argument("--cpu", default=None, help="QEMU -cpu model (default: QEMU's)")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)  # apt takes relative Dir:: paths from /, not from here
    try:
        {"fetch": cmd_fetch, "boot": cmd_boot}[args.verb](args)  # one verb each
    except LinuxGuestError as e:
        sys.exit(f"linuxguest: {e}")


if __name__ == "__main__":
    main()

