# SPDX-License-Identifier: MIT
"""linuxmods.py: kernel modules for the Linux test guests -- in-tree .ko files from the cached
linux-image tree, an out-of-tree module built against Debian's linux-headers, the initramfs overlay.

Cache (under the build directory, beside what tools/linuxguest.py keeps there):

    SERIES/modules/VER/                 lib/modules/VER of the linux-image .deb, as shipped
    SERIES/ko/VER/NAME.ko               a module from it, decompressed (.ko.xz/.ko.zst/.ko.gz)
    SERIES/headers/VER/                 linux-headers-VER + -common + linux-kbuild-*, dpkg -x'ed
    SERIES/oot/NAME-HASH/NAME.ko        an out-of-tree module built with -g (DWARF), its sources,
    SERIES/oot/NAME-HASH/NAME.strip.ko  build.log, and the .ko with its debug sections stripped
                                        (what the guest loads)

An out-of-tree build is named by a hash of its sources, the headers packages and the compiler's
--version, so a change of any of them builds again. Nothing is installed into the system: the
headers are unpacked, and make runs the unpacked -common Makefile in the flavour directory.

The overlay is a second (gzipped newc) cpio appended to the busybox initramfs -- the kernel
unpacks concatenated archives in order -- holding lib/modules/linuxguest/NAME.ko and boot.list,
the `NAME PARAMS` lines /init insmods, in dependency order, before READY.
"""
import fcntl
import gzip
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tempfile

import aptget
from linuxinitramfs import OVERLAY, pack_tree
from linuxkernel import APT, ROOT, LinuxGuestError, apt_options, install

OUT_OF_TREE = {                                # module name -> its source directory (Kbuild + .c)
    "hotmod": os.path.join(ROOT, "tests", "linux", "hotmod"),
}


# -- module names and dependencies -----------------------------------------------------------
# Debian's linux-image .deb ships no modules.dep (depmod writes it at install time), so a module's
# dependencies come from its own .modinfo ("depends=a,b"), read from the .ko when it is needed.
def module_name(path):
    """kernel/drivers/block/zram/zram.ko.xz -> zram (the kernel's name: '-' becomes '_')."""
    base = os.path.basename(path)
    base = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base)
    return base.replace("-", "_")


def parse_modules_dep(text):
    """modules.dep ("path: dep-path dep-path ...") -> {name: (path, (dep names...))}."""
    deps = {}
    for line in text.splitlines():
        path, sep, rest = line.partition(":")
        if not sep or not path.strip():
            continue
        deps[module_name(path.strip())] = (path.strip(), tuple(module_name(d) for d in rest.split()))
    return deps


def parse_modinfo(data):
    """The .modinfo section's bytes ("key=value" strings, NUL-separated) -> {key: [values]}."""
    info = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            info.setdefault(key.decode(errors="replace"), []).append(value.decode(errors="replace"))
    return info


def ko_modinfo(ko):
    """{key: [values]} of a .ko's .modinfo (pyelftools); raises for a file that is no module."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    try:
        with open(ko, "rb") as f:
            sec = ELFFile(f).get_section_by_name(".modinfo")
            if sec is None:
                raise LinuxGuestError(f"{ko} has no .modinfo section: not a kernel module")
            return parse_modinfo(sec.data())
    except ELFError as e:
        raise LinuxGuestError(f"{ko} is not an ELF module: {e}")


def ko_depends(ko):
    """The module names a .ko needs loaded first (its modinfo depends=)."""
    return tuple(d for v in ko_modinfo(ko).get("depends", []) for d in v.split(",") if d)


def load_order(deps, names):
    """The modules to insmod for names, each after every module it depends on (depth first,
    dependencies in name order, so the order is deterministic). deps: {name: (path, (needed
    names...))} or any mapping that looks so up lazily; a name not in deps raises."""
    order, done, active = [], set(), set()

    def visit(name, chain):
        if name in done:
            return
        if name not in deps:
            raise LinuxGuestError(f"no module {name!r} in the kernel's modules" +
                                  (f" (needed by {chain[-1]})" if chain else ""))
        if name in active:
            raise LinuxGuestError(f"module dependencies have a cycle: {' -> '.join(chain + [name])}")
        active.add(name)
        for d in sorted(deps[name][1]):
            visit(d, chain + [name])
        active.discard(name)
        done.add(name)
        order.append(name)

    for n in names:
        visit(n.replace("-", "_"), [])
    return order


# -- in-tree modules -------------------------------------------------------------------------
class TreeDeps(dict):
    """{name: (path in tree, (needed names...))} of a lib/modules/VER tree: from modules.dep when
    there is one, else each entry read on first use from the module's .modinfo (decompressed into
    cache), the paths from a walk of the tree."""

    def __init__(self, tree, cache):
        super().__init__()
        self.tree, self.cache = tree, cache
        self.paths = {}
        dep = os.path.join(tree, "modules.dep")
        if os.path.exists(dep):
            with open(dep) as f:
                self.update(parse_modules_dep(f.read()))
            return
        for d, _, files in os.walk(tree):
            for f in files:
                if re.search(r"\.ko(\.(xz|zst|gz))?$", f):
                    self.paths[module_name(f)] = os.path.relpath(os.path.join(d, f), tree)

    def __contains__(self, name):
        return dict.__contains__(self, name) or name in self.paths

    def __missing__(self, name):
        if name not in self.paths:
            raise KeyError(name)
        entry = (self.paths[name], ko_depends(in_tree_ko(self.tree, self.cache, name, self)))
        self[name] = entry
        return entry


def modules_dep(tree, cache):
    """TreeDeps of a cached lib/modules/VER tree (cache: where decompressed .ko files go)."""
    return TreeDeps(tree, cache)


def decompress_ko(data, path):
    """A .ko's bytes from the file's bytes as shipped (xz, zstd, gzip or plain, by its name)."""
    try:
        if path.endswith(".xz"):
            return lzma.decompress(data)
        if path.endswith(".gz"):
            return gzip.decompress(data)
        if path.endswith(".zst"):
            r = subprocess.run(["zstd", "-dc"], input=data, capture_output=True)
            if r.returncode != 0:
                raise LinuxGuestError(f"zstd -dc {path}: {r.stderr.decode(errors='replace').strip()}")
            return r.stdout
    except (lzma.LZMAError, OSError, EOFError) as e:
        raise LinuxGuestError(f"cannot decompress {path}: {e}")
    except FileNotFoundError:
        raise LinuxGuestError(f"{path} is zstd-compressed and zstd is not installed (apt-get install zstd)")
    return data


def in_tree_ko(tree, cache, name, deps=None):
    """Path of module name from tree (lib/modules/VER), decompressed into cache once."""
    deps = deps if deps is not None else modules_dep(tree, cache)
    if name not in deps:
        raise LinuxGuestError(f"no module {name!r} in {tree}")
    out = os.path.join(cache, f"{name}.ko")
    if not os.path.exists(out):
        src = os.path.join(tree, deps.paths[name] if isinstance(deps, TreeDeps) and name in deps.paths
                           else deps[name][0])
        with open(src, "rb") as f:
            data = decompress_ko(f.read(), src)
        if data[:4] != b"\x7fELF":
            raise LinuxGuestError(f"{src} is not an ELF module after decompression")
        os.makedirs(cache, exist_ok=True)
        install(data, out)
    return out


# -- linux-headers and an out-of-tree build --------------------------------------------------
def _headers_packages(opts, ver):
    """linux-headers-VER and its -common and linux-kbuild-* dependencies (the compiler's
    metapackage is left out: the machine's gcc is used)."""
    wanted = [d for d in APT.depends(opts, f"linux-headers-{ver}")
              if re.fullmatch(r"linux-headers-\S+-common\S*|linux-kbuild-\S+", d)]
    return [f"linux-headers-{ver}"] + sorted(set(wanted))


def fetch_headers(build, series, ver, cross=None):
    """usr/src/linux-headers-VER in the unpacked headers root build/SERIES/headers/VER (the three
    packages dpkg -x'ed together, so their relative links resolve), downloaded once. cross (a
    foreign architecture's, see build_out_of_tree): its archive's headers, with the linux-kbuild
    package of the same version from the host's archive over them (the foreign package's fixdep
    and modpost are its own architecture's executables)."""
    root = os.path.join(build, series, "headers", ver)
    kdir = os.path.join(root, "usr", "src", f"linux-headers-{ver}")
    if os.path.exists(os.path.join(kdir, ".linuxguest-ready")):
        return kdir
    opts = apt_options(build, series) if cross is None else cross["opts"]
    os.makedirs(os.path.dirname(root), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"headers-{ver}-", dir=os.path.dirname(root))
    try:
        pkgs = _headers_packages(opts, ver)
        debs = APT.download(opts, pkgs, tmp)
        if len(debs) != len(pkgs):
            raise LinuxGuestError(f"apt-get download {' '.join(pkgs)} gave {len(debs)} packages, not {len(pkgs)}")
        if cross is not None:
            debs += _host_kbuild(cross, [p for p in pkgs if p.startswith("linux-kbuild-")], debs, tmp)
        x = os.path.join(tmp, "root")
        aptget.extract(debs, x)  # the host's kbuild last: its tools replace the foreign ones
        with open(os.path.join(tmp, "packages"), "w") as f:
            f.write("".join(os.path.basename(d) + "\n" for d in debs))
        tdir = os.path.join(x, "usr", "src", f"linux-headers-{ver}")
        shutil.move(os.path.join(tmp, "packages"), os.path.join(x, "packages"))
        open(os.path.join(tdir, ".linuxguest-ready"), "w").close()
        try:
            os.rename(x, root)
        except OSError:               # another process installed it meanwhile
            if not os.path.exists(os.path.join(kdir, ".linuxguest-ready")):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return kdir


def _host_kbuild(cross, names, debs, tmp):
    """The host architecture's .debs of the kbuild packages names, at the versions of debs."""
    d = os.path.join(tmp, "host")
    os.makedirs(d)
    host = APT.download(cross["host_opts"], names, d)
    version = {os.path.basename(p).split("_")[0]: os.path.basename(p).split("_")[1] for p in debs}
    for p in host:
        n, v = os.path.basename(p).split("_")[:2]
        if version.get(n) != v:
            raise LinuxGuestError(f"the host's {n} is {v}, the guest's {version.get(n)}: a module built "
                                  f"with them may not load")
    return host


def headers_makefile(kdir):
    """The -common tree's Makefile that Debian's flavour Makefile includes by its absolute
    /usr/src path, mapped into the unpacked root (make -f it, -C kdir: nothing is edited)."""
    with open(os.path.join(kdir, "Makefile")) as f:
        m = re.search(r"^include\s+/usr/src/(\S+)$", f.read(), re.M)
    if not m:
        raise LinuxGuestError(f"{kdir}/Makefile includes no /usr/src/... Makefile")
    return os.path.join(os.path.dirname(kdir), m.group(1))


def headers_compiler(kdir):
    """The compiler the headers' .kernelvariables name (e.g. gcc-12) and the kernel config's
    CONFIG_CC_VERSION_TEXT."""
    with open(os.path.join(kdir, ".kernelvariables")) as f:
        kv = f.read()
    m = re.search(r"^CC\s*=.*?\$\(CROSS_COMPILE\)(\S+)\s*$", kv, re.M)
    cc = m.group(1) if m else "gcc"
    m = re.search(r"^override CROSS_COMPILE\s*=\s*([^$\s]+)\s*$", kv, re.M)  # 6.12: a literal prefix
    cc = (m.group(1) if m else "") + cc
    with open(os.path.join(kdir, ".config")) as f:
        m = re.search(r'^CONFIG_CC_VERSION_TEXT="(.*)"$', f.read(), re.M)
    return cc, (m.group(1) if m else "")


def build_out_of_tree(build, series, ver, name, src=None, cross=None):
    """(path with -g DWARF, stripped path) of out-of-tree module name built for VER, cached by a
    hash of its sources, the headers packages and the compiler; raises with the build's own words
    when it does not build. cross: for another architecture's kernel, {"opts": apt options of its
    archive, "host_opts": the host's, "arch": kbuild's ARCH, "prefix": the cross toolchain's
    (e.g. aarch64-linux-gnu-)}."""
    src = src or OUT_OF_TREE[name]
    kdir = os.path.realpath(fetch_headers(build, series, ver, cross))  # make -C changes directory
    cc, cc_text = headers_compiler(kdir)
    prefix = cross["prefix"] if cross else ""
    cc = prefix + cc
    if not shutil.which(cc):
        raise LinuxGuestError(f"{name}.ko for {ver} needs {cc} (the kernel was built with "
                              f"{cc_text!r}): apt-get install {cc}")
    ccv = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    h = hashlib.sha256()
    for f in sorted(os.listdir(src)):
        with open(os.path.join(src, f), "rb") as fh:
            h.update(f.encode() + b"\0" + fh.read() + b"\0")
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(kdir))), "packages"), "rb") as fh:
        h.update(fh.read())
    h.update(ccv.encode())
    # Built where it stays (under the real path of the cache), so the DWARF's directories name
    # the sources beside the .ko; a lock keeps two processes from building the same one at once.
    out = os.path.join(os.path.realpath(build), series, "oot", f"{name}-{h.hexdigest()[:16]}")
    ko, strip = os.path.join(out, f"{name}.ko"), os.path.join(out, f"{name}.strip.ko")
    if os.path.exists(strip):
        return ko, strip
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(strip):
            return ko, strip
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for f in os.listdir(src):
            shutil.copy2(os.path.join(src, f), out)
        # No BTF for the module: 6.12's headers ship a vmlinux as BTF base, and kbuild would then
        # need pahole (dwarves); gdbsample takes struct layouts from the kernel's own BTF.
        argv = ["make", "-C", kdir, "-f", headers_makefile(kdir), f"M={out}",
                "CONFIG_DEBUG_INFO_BTF_MODULES=", "modules"]
        if cross:
            argv[-1:-1] = [f"ARCH={cross['arch']}", f"CROSS_COMPILE={prefix}"]
        r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        with open(os.path.join(out, "build.log"), "w") as f:
            f.write(f"$ {' '.join(argv)}   # {ccv}; kernel: {cc_text}\n" + r.stdout + r.stderr)
        if r.returncode != 0 or not os.path.exists(ko):
            raise LinuxGuestError(f"building {name}.ko against linux-headers-{ver} failed (log: "
                                  f"{out}/build.log):\n" + (r.stdout + r.stderr)[-1500:])
        subprocess.run([prefix + "strip", "--strip-debug", "-o", strip + ".tmp", ko], check=True)
        os.replace(strip + ".tmp", strip)  # last: its presence says the build is complete
    return ko, strip


# -- the overlay -----------------------------------------------------------------------------
def overlay_cpio(files, boot):
    """A gzipped newc cpio: files {name: .ko path} as OVERLAY/NAME.ko and OVERLAY/boot.list
    with one `NAME PARAMS` line per (name, params) of boot, in that order."""
    stage = tempfile.mkdtemp(prefix="linuxguest-overlay-")
    try:
        d = os.path.join(stage, OVERLAY)
        os.makedirs(d)
        for name, path in sorted(files.items()):
            shutil.copyfile(path, os.path.join(d, f"{name}.ko"))
        with open(os.path.join(d, "boot.list"), "w") as f:
            f.write("".join(f"{n} {p}".rstrip() + "\n" for n, p in boot))
        return pack_tree(stage)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
