#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""qemu_versions.py: the QEMU versions gdbsample is tested on -- the system's 7.2 and 10.0 beside it.

"7.2" is Debian 12's qemu-system-x86, run as `qemu-system-x86_64` from PATH. "10.0" is
bookworm-backports' qemu-system-x86 1:10.0.x, downloaded through a private apt configuration (the
system's apt sources and its installed QEMU are never touched) and unpacked with dpkg -x:

    BUILD/qemu10/apt/    sources.list naming bookworm-backports only, its lists and cache
    BUILD/qemu10/root/   qemu-system-x86, qemu-system-common, qemu-system-data and seabios unpacked;
                         root/VERSION (written last) marks a complete tree

Every shared library 10.0 needs is already in Debian 12 at a version it accepts (checked with
ldd when fetching). What must not come from the system is QEMU's own files: its modules
(/usr/lib/x86_64-linux-gnu/qemu: 7.2's make 10.0 abort, "Only modules from the same build can be
loaded", e.g. on `-device help`) and its firmware (/usr/share/qemu: pvh.bin boots our kernel;
/usr/share/seabios: 10.0 wants seabios >= 1.16.3). QEMU's own relocation handles both: when the
binary's directory holds an entry named `qemu-bundle`, every configured path -- module directory,
firmware path, data directory, /etc/qemu -- is looked up under it instead (util/cutils.c,
get_relocated_path; QEMU >= 7.1, made for running from a build tree). So root/usr/bin/qemu-bundle
is a symlink to root, the command is the binary alone -- no wrapper, no environment, and the pid
a caller starts is QEMU's. The one file from outside the tree is the NIC option ROMs: root's
/usr/lib/ipxe/qemu links to the system's ipxe-qemu, the package 10.0 depends on (unversioned).
TCG is built into both binaries (7.2 loads it as a module, accel-tcg-x86_64.so; 10.0 has none).

    qemu_versions.py fetch [--build DIR] [--refresh]   download and unpack 10.0 (no network if cached)
    qemu_versions.py command VERSION [--build DIR]     print the command-line prefix for VERSION
    qemu_versions.py list [--build DIR]                each version, its command and what it reports
    (each takes --arch aarch64 for qemu-system-aarch64: 10.0's in BUILD/qemu10/root-aarch64)
"""
import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aptget  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = "7.2"                      # the version Debian 12 installs (make deps)
VERSIONS = (SYSTEM, "10.0")         # what the tests run on
SYSTEM_QEMU = "qemu-system-x86_64"  # found on PATH
SOURCE = "deb http://deb.debian.org/debian bookworm-backports main"
WANT = re.compile(r"1:10\.0\.")     # qemu-system-* versions that count as "10.0"
# Per architecture: the packages unpacked, the package whose version is checked, the binary, and
# the tree's directory under BUILD/qemu10. x86_64's is what the tests run on; aarch64's is fetched
# only when something asks for it (the throughput bench: bench/throughput_bench.py).
FLAVOURS = {
    "x86_64": (("qemu-system-x86", "qemu-system-common", "qemu-system-data", "seabios"),
               "qemu-system-x86", "usr/bin/qemu-system-x86_64", "root"),
    "aarch64": (("qemu-system-arm", "qemu-system-common", "qemu-system-data"),
                "qemu-system-arm", "usr/bin/qemu-system-aarch64", "root-aarch64"),
}
PACKAGES, _, BINARY, _ = FLAVOURS["x86_64"]
SYSTEM_IPXE = "/usr/lib/ipxe/qemu"  # ipxe-qemu's ROMs (virtio-net's efi-virtio.rom)

class QemuError(Exception):
    """A version that cannot be run: the message is one line for the user."""


class QemuUnavailable(QemuError):
    """Debian's archive cannot be reached and nothing is cached (tests skip on it)."""


APT = aptget.Apt(QemuError, QemuUnavailable, prefix="QEMU 10.0: ", timeout=600)


def default_build():
    """The build directory the tests use: $GDBSAMPLE_BUILD, else build/."""
    return os.environ.get("GDBSAMPLE_BUILD") or os.path.join(ROOT, "build")


def tree(build=None, arch="x86_64"):
    """BUILD/qemu10/root (x86_64) or root-aarch64: where 10.0 is unpacked (absolute: apt takes a
    relative Dir:: from /)."""
    return os.path.join(os.path.abspath(build or default_build()), "qemu10", FLAVOURS[arch][3])


def cached(build=None, arch="x86_64"):
    """The unpacked 10.0's binary for arch if a complete tree is there, else None."""
    t, binary = tree(build, arch), FLAVOURS[arch][2]
    ok = os.path.exists(os.path.join(t, "VERSION")) and os.access(os.path.join(t, binary), os.X_OK)
    return os.path.join(t, binary) if ok else None


# -- fetching --------------------------------------------------------------------------------
def _apt_options(build):
    """-o options for a private apt configuration under BUILD/qemu10/apt: SOURCE only."""
    return aptget.private_options(os.path.join(build, "qemu10", "apt"), SOURCE)


def _deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()


def _unpack(debs, dest, binary_path=BINARY):
    """dpkg -x every .deb into dest, then the qemu-bundle and ipxe links; checks the libraries."""
    aptget.extract(debs, dest)
    os.symlink("../..", os.path.join(dest, "usr", "bin", "qemu-bundle"))  # usr/bin/../.. = dest
    if os.path.isdir(SYSTEM_IPXE):
        os.makedirs(os.path.join(dest, "usr", "lib", "ipxe"), exist_ok=True)
        os.symlink(SYSTEM_IPXE, os.path.join(dest, "usr", "lib", "ipxe", "qemu"))
    binary = os.path.join(dest, binary_path)
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    missing = sorted({ln.split()[0] for ln in ldd.splitlines() if "not found" in ln})
    if missing:
        raise QemuError(f"QEMU 10.0 needs libraries this system lacks: {', '.join(missing)} "
                        "(download them from bookworm-backports too)")
    r = subprocess.run([binary, "--version"], capture_output=True, text=True)
    first = (r.stdout or r.stderr).splitlines()[:1]
    if r.returncode != 0 or not first or not re.search(r"version 10\.0\.", first[0]):
        raise QemuError(f"the unpacked QEMU 10.0 does not run: {(r.stdout + r.stderr).strip()[-300:]}")
    return first[0]


def fetch(build=None, refresh=False, arch="x86_64"):
    """The unpacked 10.0's binary for arch, from the cache (no network) or else downloaded and
    unpacked. Raises QemuUnavailable when the archive is needed and cannot be reached, QemuError
    otherwise."""
    build = os.path.abspath(build or default_build())
    have = cached(build, arch)
    if have and not refresh:
        return have
    top = os.path.join(build, "qemu10")
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, ".lock"), "w") as lock:  # one fetch at a time (apt locks its lists too)
        fcntl.flock(lock, fcntl.LOCK_EX)
        have = cached(build, arch)
        if have and not refresh:
            return have  # another process fetched it while we waited
        return _fetch_locked(build, top, arch)


def _fetch_locked(build, top, arch="x86_64"):
    """fetch() under its lock: apt-get update and download, unpack into a temporary tree, check
    it runs, then move it into place (a tree is never seen half made)."""
    packages, main, binary, _ = FLAVOURS[arch]
    opts = _apt_options(build)
    APT.update(opts)
    tmp = tempfile.mkdtemp(prefix=".fetch-", dir=top)
    try:
        debs = APT.download(opts, packages, tmp)
        if len(debs) != len(packages):
            raise QemuError(f"QEMU 10.0: apt-get download {' '.join(packages)} gave {len(debs)} packages, "
                            f"not {len(packages)}")
        versions = {_deb_field(d, "Package"): _deb_field(d, "Version") for d in debs}
        if not WANT.match(versions.get(main, "")):
            raise QemuError(f"bookworm-backports now serves {main} {versions.get(main)}, "
                            "not 1:10.0.x: update VERSIONS and WANT in tools/qemu_versions.py")
        dest = os.path.join(tmp, "root")
        banner = _unpack(debs, dest, binary)
        with open(os.path.join(dest, "VERSION"), "w") as f:  # last: marks the tree complete
            f.write(banner + "\n" + "".join(f"{p} {v}\n" for p, v in sorted(versions.items())))
        final = tree(build, arch)
        if os.path.exists(final):  # --refresh, or a tree without VERSION (an interrupted fetch)
            os.rename(final, os.path.join(tmp, "old"))
        os.rename(dest, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cached(build, arch)


# -- what callers use ------------------------------------------------------------------------
SYSTEM_QEMU_A64 = "qemu-system-aarch64"  # Debian 12's qemu-system-arm; 10.0's is fetched on request
SYSTEM_QEMU_OTHER = {"aarch64": SYSTEM_QEMU_A64, "riscv64": "qemu-system-riscv64"}  # riscv64: qemu-system-misc


def command(version, build=None, fetch_missing=True, arch="x86_64"):
    """The argv prefix that runs this version's QEMU for arch (QEMU's own pid: no wrapper).
    "10.0" is fetched first when missing (fetch_missing) -- see fetch() for what it raises.
    aarch64 runs on 7.2 or 10.0 (its own tree, fetched only when asked for); riscv64 on the
    system's 7.2 only (10.0's qemu-system-misc is not fetched: QemuUnavailable)."""
    if arch in SYSTEM_QEMU_OTHER and version == SYSTEM:
        return [SYSTEM_QEMU_OTHER[arch]]
    if arch == "riscv64":
        if version != SYSTEM:
            raise QemuUnavailable(f"{arch} guests run on the system's QEMU {SYSTEM} only (10.0 is fetched for x86_64)")
        return [SYSTEM_QEMU_OTHER[arch]]
    if version == SYSTEM:
        return [SYSTEM_QEMU]
    if version == "10.0":
        binary = cached(build, arch) or (fetch(build, arch=arch) if fetch_missing else None)
        if not binary:
            raise QemuError(f"QEMU 10.0 is not unpacked under {tree(build, arch)}: run "
                            f"tools/qemu_versions.py fetch --arch {arch}")
        return [binary]
    raise QemuError(f"QEMU version must be one of {', '.join(VERSIONS)}, not {version!r}")


def skip_reason(version, build=None, arch="x86_64"):
    """None if version can run here (fetching 10.0 if needed), else why not: the system QEMU is
    missing, or Debian's archive is unreachable and nothing is cached. Other failures raise."""
    if version == SYSTEM:
        binary = SYSTEM_QEMU_OTHER.get(arch, SYSTEM_QEMU)
        return None if shutil.which(binary) else f"{binary} is not installed (make deps)"
    try:
        command(version, build, arch=arch)
    except QemuUnavailable as e:
        return str(e)
    return None


def reported_version(prefix):
    """The first line of `QEMU --version` for a command prefix, or why it could not be run."""
    try:
        r = subprocess.run(prefix + ["--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        return f"cannot run: {e.strerror}"
    return ((r.stdout or r.stderr).splitlines() or ["(no output)"])[0]


def main():
    ap = argparse.ArgumentParser(prog="qemu_versions.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    f = sub.add_parser("fetch", help="download and unpack QEMU 10.0 (nothing to do when cached)")
    f.add_argument("--refresh", action="store_true", help="download again even when cached")
    c = sub.add_parser("command", help="print the command-line prefix for a version")
    c.add_argument("version", choices=VERSIONS)
    ls = sub.add_parser("list", help="each version, its command and the version it reports")
    for p in (f, c, ls):
        p.add_argument("--build", help="build directory (default $GDBSAMPLE_BUILD or build/)")
        p.add_argument("--arch", choices=sorted(FLAVOURS), default="x86_64", help="the guest's architecture")
    a = ap.parse_args()
    try:
        if a.verb == "fetch":
            print(fetch(a.build, refresh=a.refresh, arch=a.arch))
        elif a.verb == "command":
            print(" ".join(command(a.version, a.build, arch=a.arch)))
        else:
            for v in VERSIONS:
                try:
                    prefix = command(v, a.build, fetch_missing=False, arch=a.arch)
                    print(f"{v:5} {' '.join(prefix)}  ({reported_version(prefix)})")
                except QemuError as e:
                    print(f"{v:5} -  ({e})")
    except QemuError as e:
        sys.exit(f"qemu_versions.py: {e}")


if __name__ == "__main__":
    main()
