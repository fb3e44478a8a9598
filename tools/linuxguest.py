# SPDX-License-Identifier: MIT
"""linuxguest.py: fetch Debian's stock kernel, build a busybox initramfs and boot them under QEMU TCG.

The stock kernel is what distros ship (no frame pointers, ORC, KASLR), so gdbsample is tested
on it. Everything is cached under a build directory (default build/linux/):

    6.1/vmlinuz-*, 6.1/config-*     linux-image-amd64 from the system's apt sources (bookworm)
    6.1/modules/VER/                its lib/modules/VER (the .ko files, modules.order), as shipped
    6.12/vmlinuz-*, 6.12/config-*   the same from bookworm-backports, through a private apt
    apt-bpo/                        configuration (the system's apt sources are never touched)
    initramfs-<hash>.cpio.gz        busybox-static + INIT below, named by a hash of its content
    SERIES/ko, headers, oot         modules for the guests (tools/linuxmods.py says what)

A guest may carry kernel modules (LinuxGuest(modules=..., lazy_modules=...)): in-tree ones from
the image's tree and the out-of-tree test module hotmod (tests/linux/hotmod/), built against the
matching linux-headers package; /init loads `modules` before READY, `g.insmod()` the rest later.

CLI: `linuxguest.py fetch [--build DIR]` fills the cache; `linuxguest.py boot [--series S]`
boots a guest with the console on this terminal (the gdbstub and QMP addresses are printed).
"""
import argparse
import glob
import gzip
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest import GuestError, free_port, stop_qemu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BUILD = os.path.join(ROOT, "build", "linux")
QEMU = "qemu-system-x86_64"
BUSYBOX = "/bin/busybox"          # Debian's busybox-static: one static binary, every applet
META = "linux-image-amd64"        # the metapackage; its dependency names the real image
SERIES = {                        # series -> private sources.list line (None: the system's sources)
    "6.1": None,
    "6.12": "deb http://deb.debian.org/debian bookworm-backports main",
}
STEXT_NOKASLR = 0xffffffff81000000  # _stext when the kernel runs at its link address
USER_HZ = 100                       # unit of utime/stime in /proc/PID/stat
READY = "@@LINUXGUEST-READY@@"      # printed by /init right before the shell starts
KALLSYMS_END = "@@KALLSYMS-END"     # ends the map on ttyS1: "@@KALLSYMS-END <lines> <bytes>@@"
OVERLAY = "lib/modules/linuxguest"  # where the guest finds the modules it carries (linuxmods.py)

# apt's words for "the network is not there" (anything else is a real error).
UNREACHABLE = re.compile(r"Could not resolve|Temporary failure resolving|Unable to connect|"
                         r"Could not connect|Connection timed out|Network is unreachable|"
                         r"No route to host|Connection refused|Cannot initiate the connection", re.I)


class LinuxGuestError(GuestError):
    pass


class ArchiveUnreachable(LinuxGuestError):
    """Debian's archive could not be reached and nothing usable is cached (tests skip on it)."""


def _install(data, path):
    """Writes path atomically (a reader, or a second writer of the same bytes, never sees half)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


# -- fetching the kernel ---------------------------------------------------------------------
def kernel_release(vmlinuz):
    """vmlinuz-6.1.0-57-amd64 -> 6.1.0-57-amd64 (the modules' directory name, uname -r)."""
    return os.path.basename(vmlinuz)[len("vmlinuz-"):]


def cached_modules(build, series):
    """build/series/modules/VER (lib/modules/VER of the cached image) if it matches the cached
    vmlinuz, else None."""
    have = cached_kernel(build, series)
    if not have:
        return None
    tree = os.path.join(build, series, "modules", kernel_release(have[0]))
    return tree if os.path.exists(os.path.join(tree, "modules.order")) else None


def fetch_modules(build, series):
    """The series' lib/modules/VER tree, matching its vmlinuz: from the cache, else the image is
    downloaded again (a cache filled before modules were kept has the kernel only)."""
    tree = cached_modules(build, series)
    if tree:
        return tree
    fetch_kernel(build, series, refresh=True)
    tree = cached_modules(build, series)
    if not tree:
        raise LinuxGuestError(f"the {series} linux-image package has no lib/modules/*/modules.order")
    return tree


def cached_kernel(build, series):
    """(vmlinuz, config) already under build/series, or None."""
    d = os.path.join(build, series)
    vmlinuz = sorted(glob.glob(os.path.join(d, "vmlinuz-*")))
    config = sorted(glob.glob(os.path.join(d, "config-*")))
    return (vmlinuz[-1], config[-1]) if vmlinuz and config else None


def _apt(argv, cwd=None):
    """Runs an apt tool; returns (status, combined output). No apt at all counts as unreachable."""
    try:
        r = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=900)
    except FileNotFoundError:
        raise ArchiveUnreachable(f"cannot reach Debian's archive: {argv[0]} is not installed")
    except subprocess.TimeoutExpired:
        raise ArchiveUnreachable(f"cannot reach Debian's archive: {' '.join(argv[:2])} timed out")
    return r.returncode, r.stdout + r.stderr


def _apt_errors(out):
    """apt's E: lines (else its W: lines, else the end of its output), for a short message."""
    for tag in ("E:", "W:"):
        lines = [ln for ln in out.splitlines() if ln.startswith(tag)]
        if lines:
            return " ".join(lines)[-600:]
    return out.strip()[-400:]


def _apt_failed(what, out):
    if UNREACHABLE.search(out):
        return ArchiveUnreachable(f"cannot reach Debian's archive ({what}): {_apt_errors(out)}")
    return LinuxGuestError(f"{what} failed: {_apt_errors(out)}")


def _apt_options(build, series):
    """apt -o options for a series: none for the system's sources, else a private configuration
    under build/apt-bpo whose only source is SERIES[series] (its own lists and cache)."""
    line = SERIES[series]
    if line is None:
        return []
    d = os.path.abspath(os.path.join(build, "apt-bpo"))  # apt takes a relative Dir::Etc path from /etc/apt
    for sub in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    with open(os.path.join(d, "sources.list"), "w") as f:
        f.write(line + "\n")
    return ["-o", f"Dir::Etc::sourcelist={d}/sources.list", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={d}/lists", "-o", f"Dir::Cache={d}/cache"]


def _apt_update(opts):
    status, out = _apt(["apt-get", "-q", "update"] + opts)
    if status != 0 or re.search(r"^(W|E): Failed to fetch", out, re.M):
        raise _apt_failed("apt-get update", out)


def _download_image(opts, cwd):
    """Resolves the metapackage's dependency (e.g. linux-image-6.1.0-57-amd64) and downloads it
    into cwd: (path of the .deb, None) or (None, why). Network errors raise ArchiveUnreachable."""
    status, out = _apt(["apt-cache"] + opts + ["depends", META])
    m = re.search(r"^\s*Depends: (linux-image-\S+)", out, re.M)
    if status != 0 or not m:
        return None, f"apt-cache depends {META} names no linux-image package: {_apt_errors(out)}"
    status, out = _apt(["apt-get", "-q"] + opts + ["download", m.group(1)], cwd=cwd)
    if UNREACHABLE.search(out):
        raise _apt_failed(f"apt-get download {m.group(1)}", out)
    debs = glob.glob(os.path.join(cwd, f"{m.group(1)}_*.deb"))
    if status != 0 or not debs:
        return None, f"apt-get download {m.group(1)} failed: {_apt_errors(out)}"
    return debs[0], None


def fetch_kernel(build, series, refresh=False):
    """(vmlinuz, config) of the series, from the cache (no network) or else downloaded and
    extracted there. Raises ArchiveUnreachable when the archive is needed and cannot be reached."""
    if series not in SERIES:
        raise LinuxGuestError(f"series must be one of {', '.join(SERIES)}, not {series!r}")
    have = cached_kernel(build, series)
    if have and not refresh:
        return have
    os.makedirs(build, exist_ok=True)
    opts = _apt_options(build, series)
    if opts and not glob.glob(os.path.join(build, "apt-bpo", "lists", "*Packages*")):
        _apt_update(opts)
    tmp = tempfile.mkdtemp(prefix=f"linuxguest-{series}-", dir=build)
    try:
        deb, why = _download_image(opts, tmp)
        if deb is None and (opts or os.geteuid() == 0):
            # Stale lists name a version the mirror dropped: refresh them once (the private lists
            # always; the system's only as root, as `make deps` does) and try again.
            _apt_update(opts)
            deb, why = _download_image(opts, tmp)
        if deb is None:
            raise LinuxGuestError(why)
        x = os.path.join(tmp, "x")
        subprocess.run(["dpkg", "-x", deb, x], check=True)
        vmlinuz = glob.glob(os.path.join(x, "boot", "vmlinuz-*"))
        config = glob.glob(os.path.join(x, "boot", "config-*"))
        if not vmlinuz or not config:
            raise LinuxGuestError(f"{os.path.basename(deb)} has no boot/vmlinuz-* and boot/config-*")
        if not os.path.basename(vmlinuz[0]).startswith(f"vmlinuz-{series}."):
            raise LinuxGuestError(f"{os.path.basename(deb)} holds {os.path.basename(vmlinuz[0])}, "
                                  f"not series {series}")
        d = os.path.join(build, series)
        os.makedirs(os.path.join(d, "modules"), exist_ok=True)
        release = kernel_release(vmlinuz[0])
        tree = os.path.join(x, "lib", "modules", release)
        if os.path.exists(os.path.join(tree, "modules.order")):
            # The modules first (before vmlinuz: cached_kernel() sees a kernel only when all is
            # there); a tree another process put there already is the same package's.
            try:
                os.rename(tree, os.path.join(d, "modules", release))
            except OSError:
                if not os.path.exists(os.path.join(d, "modules", release, "modules.order")):
                    raise
            for old in glob.glob(os.path.join(d, "modules", "*")):
                if os.path.basename(old) != release:
                    shutil.rmtree(old, ignore_errors=True)
        new = [os.path.join(d, os.path.basename(f)) for f in (config[0], vmlinuz[0])]
        for f, dest in zip((config[0], vmlinuz[0]), new):  # vmlinuz last: cached_kernel() needs both
            with open(f, "rb") as src:
                _install(src.read(), dest)
        for old in glob.glob(os.path.join(d, "vmlinuz-*")) + glob.glob(os.path.join(d, "config-*")):
            if old not in new:
                os.unlink(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cached_kernel(build, series)


# -- the initramfs ---------------------------------------------------------------------------
# /init. It first insmods the modules an overlay archive lists (tools/linuxmods.py), so the map
# holds them. Three serial ports: ttyS0 the shell (a unix socket on the host), ttyS1 this boot's
# /proc/kallsyms (a file), ttyS2 the kernel console (a file), so no kernel message (not even
# sysrq's, printed whatever the console loglevel) lands in the shell's output.
# ttyS1 carries the map gzipped (0.8 MB instead of 3.9 MB on 6.1: 4 s instead of 22 s of emulated
# UART under TCG), then the text line "@@KALLSYMS-END <lines> <gzip bytes>@@", so the host can tell
# a complete map from a cut one. The port is set raw (8-bit clean, no \n -> \r\n) in the same
# open that writes it. ttyS0 is opened once, by a session leader (so it is the shell's
# controlling tty), before READY: input sent after READY is never dropped.
#
# linuxguest_shell= on the kernel command line (the kernel hands it to /init as a variable) picks
#   driver       what LinuxGuest drives: no tty echo, and a shell reading a pipe (non-interactive:
#                no prompts, no job notices). Not an interactive shell with echo off: busybox's line
#                reader then falls back to fgets(), so a background child dying while the shell
#                waits for input (SIGCHLD -> EINTR) reads as end of input and PID 1 exits (panic).
#                The loop restarts a shell that exits (e.g. on a syntax error; a line is lost).
#                The feeder is `read`, not cat: busybox cat from the tty into a pipe (sendfile)
#                never returns a line on these kernels.
#   interactive  a shell with prompts, line editing and job control, for a person.
INIT = r"""#!/bin/sh
# /init of gdbsample's Linux test guest (generated by tools/linuxguest.py)
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
sysctl -q -w kernel.kptr_restrict=0   # real addresses in /proc/kallsyms
if [ -f /lib/modules/linuxguest/boot.list ]; then   # LinuxGuest(modules=...): load before the map
    while read -r m args; do
        insmod /lib/modules/linuxguest/$m.ko $args >>/tmp/insmod.log 2>&1 || echo "insmod $m: failed" >>/tmp/insmod.log
    done </lib/modules/linuxguest/boot.list
fi
cat /proc/kallsyms > /tmp/kallsyms
lines=$(wc -l < /tmp/kallsyms)
gzip /tmp/kallsyms
{ stty raw -echo; cat /tmp/kallsyms.gz; echo "@@KALLSYMS-END $lines $(wc -c < /tmp/kallsyms.gz)@@"; } \
    <>/dev/ttyS1 >&0
rm /tmp/kallsyms.gz
if [ "$linuxguest_shell" = interactive ]; then
    exec setsid sh -c 'exec <>/dev/ttyS0 >&0 2>&1; echo @@LINUXGUEST-READY@@; exec sh -i'
fi
exec setsid sh -c 'exec <>/dev/ttyS0 >&0 2>&1; stty -echo; echo @@LINUXGUEST-READY@@
    while :; do while IFS= read -r l; do printf "%s\n" "$l"; done | sh; done'
"""

# Busy background processes, each spending its time in a different kernel path (seen with sysrq-l
# on both series). A name is the process's comm: dd runs through a symlink of that name (exec -a
# keeps argv[0] = "dd", so busybox still finds the applet), a script's comm is its file name.
# rngdd first waits in the foreground until the kernel's CRNG is ready: the TCG guest has no
# RDRAND and no seed, and until then every urandom read sleeps in try_to_generate_entropy()
# (a blocking read of /dev/random gets it ready in 2-3 s of guest time).
WORKLOADS = {
    # name: (foreground preparation or None, what runs in the background, where the time goes)
    "zerodd": (None, "exec -a dd /bin/zerodd if=/dev/zero of=/dev/null bs=1M",
               "read_zero -> clear_user_rep_good (6.1) / rep_stos_alternative (6.12)"),
    "rngdd": ("dd if=/dev/random of=/dev/null bs=16 count=1 2>/dev/null",
              "exec -a dd /bin/rngdd if=/dev/urandom of=/dev/null bs=64k",
              "urandom_read_iter -> get_random_bytes_user -> chacha_block_generic"),
    "forker": (None, "exec /bin/forker",
               "fork, execve (load_elf_binary), page faults, exit; mostly in its children, comm `true`"),
    "spinner": (None, "exec /bin/spinner", "a shell loop with no system calls: user mode only"),
    # These two need their module loaded (WORKLOAD_MODULES): boot with modules=(...) or
    # lazy_modules=(...) -- start_workloads() insmods a shipped one that is not loaded yet.
    "brddd": (None, "exec -a dd /bin/brddd if=/dev/ram0 of=/dev/null bs=1M iflag=direct",
              "read -> blkdev_read_iter -> ... submit_bio -> brd_submit_bio [brd] -> (memset/memcpy)"),
    "hotmod": (None, "exec -a dd /bin/hotmod if=/proc/hotmod of=/dev/null bs=64",
               "read -> proc_reg_read -> hotmod_read -> hotmod_work -> hotmod_spin [hotmod]"),
}
WORKLOAD_MODULES = {"brddd": ("brd",), "hotmod": ("hotmod",)}  # workload -> modules it needs
BASIC_WORKLOADS = tuple(n for n in WORKLOADS if n not in WORKLOAD_MODULES)  # run on any guest
# Parameters a module is loaded with unless the caller gives others. brd: one sparse 64 GiB RAM
# disk (pages are allocated only when written, so reading it costs no guest memory and one dd
# reads it for minutes); its reads go through brd's own bio handling into memset/memcpy.
MODULE_PARAMS = {"brd": "rd_nr=1 rd_size=67108864"}
SCRIPTS = {  # /bin/NAME -> content (the scripts WORKLOADS runs)
    "forker": "#!/bin/sh\n# fork+exec loop\nwhile :; do /bin/true; done\n",
    "spinner": "#!/bin/sh\n# user-mode-only spinner\nwhile :; do :; done\n",
}
LINKS = ("zerodd", "rngdd", "brddd", "hotmod")  # /bin/NAME -> busybox


def _ensure_tool(path, package):
    """Installs a missing Debian package with apt-get (as `make deps` would)."""
    if os.path.exists(path):
        return
    status, out = _apt(["apt-get", "-q", "install", "-y", package])
    if status != 0 or not os.path.exists(path):
        raise LinuxGuestError(f"{path} is missing and `apt-get install {package}` failed "
                              f"(run `make deps`): {out.strip()[-300:]}")


def pack_tree(stage):
    """The gzipped newc cpio of everything under stage, owned by root, in sorted order and with no
    timestamp in the gzip header: the same tree always packs to the same bytes."""
    names = subprocess.run(["find", ".", "-mindepth", "1"], cwd=stage, capture_output=True,
                           check=True).stdout.split(b"\n")
    listing = b"\n".join(sorted(n for n in names if n)) + b"\n"
    archive = subprocess.run(["cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet"], cwd=stage,
                             input=listing, capture_output=True, check=True).stdout
    return gzip.compress(archive, mtime=0)


def build_initramfs(build):
    """build/initramfs-<hash>.cpio.gz (busybox-static + INIT + workloads), built once per content."""
    _ensure_tool(BUSYBOX, "busybox-static")
    _ensure_tool("/usr/bin/cpio", "cpio")
    applets = subprocess.run([BUSYBOX, "--list-full"], capture_output=True, text=True,
                             check=True).stdout.split()
    with open(BUSYBOX, "rb") as f:
        h = hashlib.sha256(f.read())
    h.update(repr((INIT, SCRIPTS, LINKS, applets)).encode())
    out = os.path.join(build, f"initramfs-{h.hexdigest()[:16]}.cpio.gz")
    if os.path.exists(out):
        return out
    os.makedirs(build, exist_ok=True)
    stage = tempfile.mkdtemp(prefix="linuxguest-initramfs-", dir=build)
    try:
        for d in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "root"):
            os.makedirs(os.path.join(stage, d), exist_ok=True)
        shutil.copy2(BUSYBOX, os.path.join(stage, "bin", "busybox"))
        for a in applets + [f"bin/{n}" for n in LINKS]:
            p = os.path.join(stage, a)
            if not os.path.lexists(p) and a != "bin/busybox":
                os.symlink("/bin/busybox", p)
        for name, text in list(SCRIPTS.items()) + [("../init", INIT)]:
            p = os.path.join(stage, "bin", name)
            with open(p, "w") as f:
                f.write(text)
            os.chmod(p, 0o755)
        _install(pack_tree(stage), out)
        for old in glob.glob(os.path.join(build, "initramfs-*.cpio.gz")):
            if old != out:
                os.unlink(old)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


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


# -- /proc/kallsyms --------------------------------------------------------------------------
def parse_kallsyms(text):
    """`addr type name [module]` lines -> {name: (addr, type)} (the first of duplicate names)."""
    syms = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] not in syms:
            syms[f[2]] = (int(f[0], 16), f[1])
    return syms


def parse_kallsyms_modules(text):
    """The module symbols of kallsyms text ("addr type name\t[module]") -> {module: {name: (addr,
    type)}} (the first of duplicate names within a module)."""
    mods = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[3].startswith("[") and f[3].endswith("]"):
            mods.setdefault(f[3][1:-1], {}).setdefault(f[2], (int(f[0], 16), f[1]))
    return mods


def parse_proc_modules(text):
    """/proc/modules ("name size refs deps state addr [taints]") -> {name: {size, refs, deps,
    state, addr}}; addr is 0 when the kernel hides it (kptr_restrict)."""
    mods = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1].isdigit():
            mods[f[0]] = {"size": int(f[1]), "refs": int(f[2]) if f[2].isdigit() else -1,
                          "deps": [d for d in f[3].split(",") if d and d != "-"], "state": f[4],
                          "addr": int(f[5], 16)}
    return mods


def split_kallsyms_dumps(data):
    """The maps in the bytes of ttyS1, in order: each is gzip bytes followed by the line
    "@@KALLSYMS-END <lines> <gzip bytes>@@". Returns [text bytes (no CR)]; a dump that does not
    gunzip or whose line count differs raises (the port was not raw, or bytes were lost)."""
    texts = []
    for m in re.finditer(re.escape(KALLSYMS_END.encode()) + rb" (\d+) (\d+)@@", data):
        lines, size = int(m.group(1)), int(m.group(2))
        try:
            text = gzip.decompress(data[m.start() - size:m.start()])
        except (OSError, EOFError) as e:  # e.g. the port was not raw: \n became \r\n
            raise LinuxGuestError(f"kallsyms dump {len(texts) + 1} from ttyS1 does not gunzip ({e}): "
                                  f"{size} bytes announced, {m.start()} received")
        got = text.count(b"\n")
        if got != lines:
            raise LinuxGuestError(f"kallsyms dump {len(texts) + 1} from ttyS1 has {got} lines, "
                                  f"the guest sent {lines}")
        texts.append(text.replace(b"\r", b""))
    return texts


def parse_stat(text):
    """/proc/PID/stat lines -> {pid: (utime, stime)} in clock ticks (fields 14 and 15). The comm
    field may hold spaces and parentheses: split after the last ')'."""
    times = {}
    for line in text.splitlines():
        head, _, rest = line.rpartition(")")
        f = rest.split()
        if head and len(f) > 12:
            times[int(head.split("(")[0])] = (int(f[11]), int(f[12]))
    return times


# -- the guest -------------------------------------------------------------------------------
class LinuxGuest:
    """One QEMU (TCG) running Debian's stock kernel and the busybox initramfs, shell connected.
    A subclass for another architecture (tools/linuxguest_arm64.py) sets SERIES_NAMES and
    STEXT_LINK and overrides fetch(), make_initramfs() and command_line()."""
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
        self.proc = None          # the QEMU process
        self.sock = None          # console (ttyS0) connection
        self.dir = None           # temp dir: sockets, ttyS1/ttyS2 files, QEMU log
        self.gdb_port = None      # gdbstub on 127.0.0.1
        self.qmp_path = None      # QMP unix socket
        self.boot_seconds = None  # QEMU start to the shell being ready
        self.buf = ""             # console text received, not consumed yet
        self.transcript = []      # everything received, for failure messages
        self.seq = 0              # command counter for unique markers
        self._kallsyms = None     # cleaned map path, once complete
        self._symbols = None      # parsed map, once asked for

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

    def start(self, boot_timeout=300):
        """Fetches what is missing, boots and waits for the shell; returns self."""
        os.makedirs(self.build, exist_ok=True)
        self.vmlinuz, self.config = self.fetch()
        self.initramfs = self.make_initramfs()
        try:
            self.dir = tempfile.mkdtemp(prefix="gdbsample-linux-")
            self.gdb_port = free_port()
            self.initramfs = self.with_modules(self.initramfs)
            self.qmp_path = os.path.join(self.dir, "qmp.sock")
            t0 = time.monotonic()
            with open(os.path.join(self.dir, "qemu.log"), "wb") as log:
                self.proc = subprocess.Popen(self.command_line(), stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            self._connect(os.path.join(self.dir, "console.sock"))
            self.read_until(READY, boot_timeout)
            self.boot_seconds = time.monotonic() - t0
            if not self.interactive:
                self.run("true")
                self._check_boot_modules()
        except BaseException:
            self.stop()
            raise
        return self

    def fetch(self):
        """(vmlinuz, config) of self.series, cached or downloaded."""
        return fetch_kernel(self.build, self.series)

    def make_initramfs(self):
        """Path of the initramfs this guest boots."""
        return build_initramfs(self.build)

    def _connect(self, path):
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise LinuxGuestError(f"qemu exited with {self.proc.returncode}: {self.qemu_log()}")
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                return
            except OSError:
                self.sock.close()
                self.sock = None
                if time.monotonic() > deadline:
                    raise LinuxGuestError("qemu did not open its console socket within 10 s")
                time.sleep(0.02)

    def stop(self):
        """Stops QEMU by its own pid (TERM, then KILL) and removes the temp dir."""
        if self.sock:
            self.sock.close()
            self.sock = None
        stop_qemu(self.proc)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def pid(self):
        """QEMU's pid."""
        return self.proc.pid

    def _read_file(self, name, last=2000):
        try:
            with open(os.path.join(self.dir, name), "rb") as f:
                return f.read().decode(errors="replace").replace("\r", "")[-last:]
        except (OSError, TypeError):
            return ""

    def qemu_log(self):
        """The end of QEMU's own stdout/stderr."""
        return self._read_file("qemu.log")

    def kernel_log(self, last=100000):
        """The end of the kernel console (ttyS2): boot messages, oopses, sysrq output."""
        return self._read_file("console.log", last)

    def tail(self):
        """The last of the shell, the kernel console and QEMU, for failure messages."""
        return ("--- shell (last 1000 chars) ---\n" + "".join(self.transcript)[-1000:] +
                "\n--- kernel console (last 2000 chars) ---\n" + self.kernel_log(2000) +
                "\n--- qemu ---\n" + self.qemu_log())

    # -- console ---------------------------------------------------------------------------
    def send(self, text):
        self.sock.sendall(text.encode())

    def read_until(self, marker, timeout=30):
        """Console text up to and including marker (a str or compiled regex); the rest stays."""
        deadline = time.monotonic() + timeout
        while True:
            m = (re.compile(re.escape(marker)) if isinstance(marker, str) else marker).search(self.buf)
            if m:
                out, self.buf = self.buf[:m.end()], self.buf[m.end():]
                return out
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinuxGuestError(f"timed out after {timeout} s waiting for {marker!r}\n" + self.tail())
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise LinuxGuestError("console closed (qemu exited?)\n" + self.tail())
            text = data.decode(errors="replace").replace("\r", "")
            self.buf += text
            self.transcript.append(text)

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
