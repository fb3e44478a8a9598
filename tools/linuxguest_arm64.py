# SPDX-License-Identifier: MIT
"""linuxguest_arm64.py: Debian's stock arm64 kernel (6.1) and an arm64 busybox initramfs under qemu-system-aarch64.

The same guest as tools/linuxguest.py (shell driven by markers, this boot's kallsyms, the same
workloads), on QEMU's `virt` machine with `-cpu max` (pointer authentication on), KASLR on
(virt passes a kaslr-seed in the device tree). Cached under build/linux/:

    arm64-6.1/vmlinuz-*, config-*, virtio_mmio.ko, virtio_console.ko, busybox
                                    linux-image-arm64 + busybox-static:arm64, downloaded through a
    apt-arm64/                      private apt configuration (architecture arm64, its own lists
                                    and cache; the system's sources and architectures untouched)
    arm64-6.1/initramfs-<hash>.cpio.gz  the arm64 busybox + INIT below (not beside the amd64
                                    one: tools/linuxinitramfs.py replaces build/linux/initramfs-*)

The channels. virt has one PL011, and a shell, a kallsyms dump and the kernel console on one
line would interleave (sysrq and oops output ignore the console loglevel). The kernel has
virtio-console as a module (CONFIG_VIRTIO_CONSOLE=m, CONFIG_VIRTIO_MMIO=m, neither needs
another module), so /init loads both and the host gets three channels, as on x86:
    PL011 (ttyAMA0)               the kernel console, from the first boot message (a file)
    virtconsole (hvc0)            the shell (a unix socket QEMU waits for)
    virtserialport "kallsyms"     this boot's /proc/kallsyms, gzipped, then the end line (a file)
A virtio port is not a UART: no baud emulation and 8-bit clean without stty, so the 1 MB map
arrives in well under a second. Both modules stay loaded: the guest always has two modules.

CLI: `linuxguest_arm64.py fetch` fills the cache (and cross-builds the out-of-tree test modules,
Arm64Guest.out_of_tree); `linuxguest_arm64.py boot` boots a guest with
its console on this terminal.
"""
import argparse
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aptget  # noqa: E402
import linuxguest as lg  # noqa: E402
from linuxinitramfs import BOOT_MODULES  # noqa: E402
from linuxkernel import APT, ArchiveUnreachable, LinuxGuestError, fetch_lock, install  # noqa: E402

__all__ = ["Arm64Guest", "ArchiveUnreachable", "LinuxGuestError", "fetch", "build_initramfs"]

QEMU = "qemu-system-aarch64"
SERIES = "arm64-6.1"
META = "linux-image-arm64"
SOURCES = ("deb [arch=arm64] http://deb.debian.org/debian bookworm main\n"
           "deb [arch=arm64] http://deb.debian.org/debian bookworm-updates main\n"
           "deb [arch=arm64] http://deb.debian.org/debian-security bookworm-security main\n")
MODULES = ("kernel/drivers/virtio/virtio_mmio.ko", "kernel/drivers/char/virtio_console.ko")
# _stext at the link address: KIMAGE_VADDR (0xffff800008000000 with 48-bit VAs on 6.1) plus the
# 64 KiB head the PE/COFF header and the EFI stub's entry live in (seen: nokaslr boots put
# _stext there, and the Image header's text_offset is 0).
STEXT_LINK = 0xffff800008010000


# -- fetching ----------------------------------------------------------------------------------
def _apt_options(build):
    """apt -o options for the private arm64 configuration under build/apt-arm64."""
    return aptget.private_options(os.path.join(build, "apt-arm64"), SOURCES,
                                  ["-o", "APT::Architecture=arm64", "-o", "APT::Architectures::=arm64"])


def cached(build):
    """{vmlinuz, config, busybox, modules...} paths under build/arm64-6.1 when all are there."""
    d = os.path.join(build, SERIES)
    vmlinuz = sorted(glob.glob(os.path.join(d, "vmlinuz-*")))
    config = sorted(glob.glob(os.path.join(d, "config-*")))
    rest = [os.path.join(d, n) for n in ["busybox"] + [os.path.basename(m) for m in MODULES]]
    if vmlinuz and config and all(os.path.exists(p) for p in rest):
        return {"vmlinuz": vmlinuz[-1], "config": config[-1], "busybox": rest[0], "modules": rest[1:]}
    return None


def fetch(build, refresh=False):
    """The cached() dict, downloading linux-image-arm64's image and busybox-static:arm64 once."""
    build = os.path.abspath(build)  # apt reads a relative Dir:: from /, not from here
    have = cached(build)
    if have and not refresh:
        return have
    with fetch_lock(build):  # one apt-get at a time on build/apt-arm64 (xdist workers)
        have = cached(build)
        if have and not refresh:
            return have  # another process fetched it while this one waited
        return _fetch_locked(build, refresh)


def _fetch_locked(build, refresh):
    """fetch() under its lock."""
    opts = _apt_options(build)
    if refresh or not aptget.has_lists(os.path.join(build, "apt-arm64")):
        APT.update(opts)
    image = [d for d in APT.depends(opts, META) if d.startswith("linux-image-")]
    if not image:
        raise LinuxGuestError(f"apt-cache depends {META} names no linux-image package")
    tmp = tempfile.mkdtemp(prefix="linuxguest-arm64-", dir=build)
    try:
        x = os.path.join(tmp, "x")
        aptget.extract(APT.download(opts, [image[0], "busybox-static"], tmp), x)
        vmlinuz = glob.glob(os.path.join(x, "boot", "vmlinuz-*"))
        config = glob.glob(os.path.join(x, "boot", "config-*"))
        if not vmlinuz or not config or not os.path.exists(os.path.join(x, "bin", "busybox")):
            raise LinuxGuestError(f"{image[0]} + busybox-static have no boot/vmlinuz-*, config-*, bin/busybox")
        ver = os.path.basename(vmlinuz[0])[len("vmlinuz-"):]
        d = os.path.join(build, SERIES)
        os.makedirs(d, exist_ok=True)
        files = [(os.path.join(x, "lib", "modules", ver, mod), os.path.basename(mod)) for mod in MODULES]
        files += [(os.path.join(x, "bin", "busybox"), "busybox"), (config[0], os.path.basename(config[0])),
                  (vmlinuz[0], os.path.basename(vmlinuz[0]))]  # vmlinuz last: cached() needs all
        for src, name in files:
            with open(src, "rb") as f:
                install(f.read(), os.path.join(d, name))
        keep = {os.path.join(d, n) for _, n in files}
        for old in glob.glob(os.path.join(d, "vmlinuz-*")) + glob.glob(os.path.join(d, "config-*")):
            if old not in keep:
                os.unlink(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cached(build)


# -- the initramfs -----------------------------------------------------------------------------
# /init: as tools/linuxinitramfs.py's (see its comment for the driver shell), with the virtio
# channels. The ports appear asynchronously after insmod: wait for hvc0 and for the port whose
# name is "kallsyms" (/sys/class/virtio-ports/vportNpM/name) before using them.
INIT = r"""#!/bin/sh
# /init of gdbsample's arm64 Linux test guest (generated by tools/linuxguest_arm64.py)
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
insmod /lib/virtio_mmio.ko
insmod /lib/virtio_console.ko
i=0; port=
while [ $i -lt 400 ]; do
    for n in /sys/class/virtio-ports/*/name; do
        [ "$(cat $n 2>/dev/null)" = kallsyms ] && port=/dev/$(basename $(dirname $n))
    done
    [ -n "$port" ] && [ -e "$port" ] && [ -e /dev/hvc0 ] && break
    sleep 0.05; i=$((i+1))
done
[ -n "$port" ] || { echo "linuxguest: no virtio port named kallsyms" >/dev/ttyAMA0; poweroff -f; }
sysctl -q -w kernel.kptr_restrict=0   # real addresses in /proc/kallsyms
@BOOT_MODULES@
cat /proc/kallsyms > /tmp/kallsyms
lines=$(wc -l < /tmp/kallsyms)
gzip /tmp/kallsyms
{ cat /tmp/kallsyms.gz; echo "@@KALLSYMS-END $lines $(wc -c < /tmp/kallsyms.gz)@@"; } >$port
rm /tmp/kallsyms.gz
if [ "$linuxguest_shell" = interactive ]; then
    exec setsid sh -c 'exec <>/dev/hvc0 >&0 2>&1; echo @@LINUXGUEST-READY@@; exec sh -i'
fi
exec setsid sh -c 'exec <>/dev/hvc0 >&0 2>&1; stty -echo; echo @@LINUXGUEST-READY@@
    while :; do while IFS= read -r l; do printf "%s\n" "$l"; done | sh; done'
""".replace("@BOOT_MODULES@\n", BOOT_MODULES)  # the boot.list loop, as in tools/linuxinitramfs.py's


def build_initramfs(build, files):
    """build/arm64-6.1/initramfs-<hash>.cpio.gz: the arm64 busybox, INIT, the workloads' scripts and
    the two modules; built once per content. The applet list is the host busybox-static's (the
    arm64 binary cannot run here; both come from the same Debian source version)."""
    lg.ensure_tool(lg.BUSYBOX, "busybox-static")
    lg.ensure_tool("/usr/bin/cpio", "cpio")
    applets = subprocess.run([lg.BUSYBOX, "--list-full"], capture_output=True, text=True,
                             check=True).stdout.split()
    h = hashlib.sha256()
    for p in [files["busybox"]] + files["modules"]:
        with open(p, "rb") as f:
            h.update(f.read())
    h.update(repr((INIT, lg.SCRIPTS, lg.LINKS, applets)).encode())
    out = os.path.join(build, SERIES, f"initramfs-{h.hexdigest()[:16]}.cpio.gz")
    if os.path.exists(out):
        return out
    stage = tempfile.mkdtemp(prefix="linuxguest-initramfs-arm64-", dir=build)
    try:
        for d in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "root", "lib"):
            os.makedirs(os.path.join(stage, d), exist_ok=True)
        shutil.copy2(files["busybox"], os.path.join(stage, "bin", "busybox"))
        os.chmod(os.path.join(stage, "bin", "busybox"), 0o755)
        for m in files["modules"]:
            shutil.copy2(m, os.path.join(stage, "lib", os.path.basename(m)))
        for a in applets + [f"bin/{n}" for n in lg.LINKS]:
            p = os.path.join(stage, a)
            if not os.path.lexists(p) and a != "bin/busybox":
                os.symlink("/bin/busybox", p)
        for name, text in list(lg.SCRIPTS.items()) + [("../init", INIT)]:
            p = os.path.join(stage, "bin", name)
            with open(p, "w") as f:
                f.write(text)
            os.chmod(p, 0o755)
        install(lg.pack_tree(stage), out)
        for old in glob.glob(os.path.join(build, SERIES, "initramfs-*.cpio.gz")):
            if old != out:
                os.unlink(old)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


# -- the guest ---------------------------------------------------------------------------------
class Arm64Guest(lg.LinuxGuest):
    """LinuxGuest on qemu-system-aarch64 -M virt -cpu max (pauth on), KASLR on by default."""
    SERIES_NAMES = (SERIES,)
    STEXT_LINK = STEXT_LINK

    def __init__(self, series=SERIES, smp=2, kaslr=True, build=lg.DEFAULT_BUILD, memory=768, cpu="max",
                 append=(), extra=(), interactive=False, modules=(), lazy_modules=(), module_params=None):
        """modules/lazy_modules: out-of-tree ones only (linuxmods.OUT_OF_TREE, e.g. hotmod),
        cross-built against linux-headers-*-arm64 (out_of_tree)."""
        super().__init__(series, smp=smp, kaslr=kaslr, build=build, memory=memory, cpu=cpu,
                         append=append, extra=extra, interactive=interactive, modules=modules,
                         lazy_modules=lazy_modules, module_params=module_params)
        self._files = None

    def out_of_tree(self, name):
        """(.ko with DWARF, stripped .ko) of out-of-tree module name, cross-built for this kernel:
        the arm64 headers from the private arm64 configuration, linux-kbuild's fixdep/modpost
        from the host's archive at the same version (the arm64 package's are arm64 ELF), the
        machine's aarch64-linux-gnu-gcc-12 (gcc-aarch64-linux-gnu; nothing foreign installed)."""
        import linuxmods
        cross = {"opts": _apt_options(self.build), "host_opts": lg.apt_options(self.build, "6.1"),
                 "arch": "arm64", "prefix": "aarch64-linux-gnu-"}
        return linuxmods.build_out_of_tree(self.build, self.series, self.release(), name, cross=cross)

    def fetch(self):
        self._files = fetch(self.build)
        return self._files["vmlinuz"], self._files["config"]

    def make_initramfs(self):
        return build_initramfs(self.build, self._files)

    def command_line(self):
        """QEMU's argv: PL011 -> console.log, hvc0 -> the shell's socket (QEMU waits for it), the
        "kallsyms" port -> ttyS1.raw (the name LinuxGuest.kallsyms_path reads), the gdbstub on
        127.0.0.1, QMP on a unix socket, no NIC."""
        args = (["console=ttyAMA0", "quiet", "panic=-1",
                 "linuxguest_shell=" + ("interactive" if self.interactive else "driver")]
                + ([] if self.kaslr else ["nokaslr"]) + self.append)
        return [QEMU, "-machine", "virt", "-accel", "tcg", "-cpu", self.cpu, "-m", str(self.memory),
                "-smp", str(self.smp), "-kernel", self.vmlinuz, "-initrd", self.initramfs,
                "-append", " ".join(args), "-display", "none", "-nodefaults", "-no-reboot",
                "-serial", f"file:{self.dir}/console.log",
                "-device", "virtio-serial-device",
                "-chardev", f"socket,id=s0,path={self.dir}/console.sock,server=on,wait=on",
                "-device", "virtconsole,chardev=s0",
                "-chardev", f"file,id=k0,path={self.dir}/ttyS1.raw",
                "-device", "virtserialport,chardev=k0,name=kallsyms",
                "-gdb", f"tcp:127.0.0.1:{self.gdb_port}",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off"] + self.extra


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    f = sub.add_parser("fetch", help="download and cache the arm64 kernel and busybox, build the initramfs")
    b = sub.add_parser("boot", help="boot a guest with its console on this terminal")
    for q in (f, b):
        q.add_argument("--build", default=lg.DEFAULT_BUILD, help="cache directory (default build/linux)")
    b.add_argument("--smp", type=int, default=2)
    b.add_argument("--nokaslr", action="store_true")
    b.add_argument("--cpu", default="max", help="QEMU -cpu model (default max: pointer authentication on)")
    args = p.parse_args()
    try:
        if args.verb == "fetch":
            files = fetch(args.build)
            print(f"{SERIES}: {files['vmlinuz']}")
            print(f"initramfs: {build_initramfs(args.build, files)}")
            import linuxmods
            g = Arm64Guest(build=args.build)
            g.vmlinuz = files["vmlinuz"]
            for name in sorted(linuxmods.OUT_OF_TREE):  # the test modules, cross-built once
                print(f"{name}: {g.out_of_tree(name)[1]}")
        else:
            lg.cmd_boot(args, Arm64Guest(smp=args.smp, kaslr=not args.nokaslr, build=args.build,
                                         cpu=args.cpu, interactive=True))
    except LinuxGuestError as e:
        sys.exit(f"linuxguest_arm64: {e}")


if __name__ == "__main__":
    main()
