# SPDX-License-Identifier: MIT
"""linuxkernel.py: Debian's stock amd64 kernels (6.1, 6.12 from bookworm-backports) fetched once and cached.

Cached under a build directory (default build/linux/):

    6.1/vmlinuz-*, 6.1/config-*     linux-image-amd64 from the system's apt sources (bookworm)
    6.1/modules/VER/                its lib/modules/VER (the .ko files, modules.order), as shipped
    6.12/vmlinuz-*, 6.12/config-*   the same from bookworm-backports, through a private apt
    apt-bpo/                        configuration (tools/aptget.py; the system's sources untouched)

A cached kernel needs no network. Also the errors every Linux-guest module raises, and the atomic
file write the caches use.
"""
import contextlib
import fcntl
import glob
import os
import shutil
import tempfile

import aptget
from qemuguest import GuestError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BUILD = os.path.join(ROOT, "build", "linux")
META = "linux-image-amd64"        # the metapackage; its dependency names the real image
SERIES = {                        # series -> private sources.list line (None: the system's sources)
    "6.1": None,
    "6.12": "deb http://deb.debian.org/debian bookworm-backports main",
}
UNREACHABLE = aptget.UNREACHABLE


class LinuxGuestError(GuestError):
    pass


class ArchiveUnreachable(LinuxGuestError):
    """Debian's archive could not be reached and nothing usable is cached (tests skip on it)."""


APT = aptget.Apt(LinuxGuestError, ArchiveUnreachable)  # apt-get for every Linux-guest module


def install(data, path):
    """Writes path atomically (a reader, or a second writer of the same bytes, never sees half)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def apt_options(build, series):
    """apt -o options for a series: none for the system's sources, else a private configuration
    under build/apt-bpo whose only source is SERIES[series] (its own lists and cache)."""
    line = SERIES[series]
    if line is None:
        return []
    return aptget.private_options(os.path.join(build, "apt-bpo"), line)


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
    fetch_kernel(build, series, refresh=True, done=lambda: cached_modules(build, series))
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


def _download_image(opts, cwd):
    """Resolves the metapackage's dependency (e.g. linux-image-6.1.0-57-amd64) and downloads it
    into cwd: (path of the .deb, None) or (None, why). Network errors raise ArchiveUnreachable."""
    try:
        image = [d for d in APT.depends(opts, META) if d.startswith("linux-image-")]
        if not image:
            return None, f"apt-cache depends {META} names no linux-image package"
        return APT.download(opts, image[:1], cwd)[0], None
    except ArchiveUnreachable:
        raise
    except LinuxGuestError as e:
        return None, str(e)


@contextlib.contextmanager
def fetch_lock(build):
    """One fetch into build at a time, across processes (pytest-xdist workers): two apt-get
    updates on one private lists directory fail on apt's own lock ("Could not get lock
    .../apt-bpo/lists/lock"), and a second download of what the first is caching is waste."""
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, ".fetch.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def fetch_kernel(build, series, refresh=False, done=None):
    """(vmlinuz, config) of the series, from the cache (no network) or else downloaded and
    extracted there. Raises ArchiveUnreachable when the archive is needed and cannot be reached.
    Under fetch_lock: a kernel another process cached while this one waited is used as it is
    (done(), when given, says whether a refresh is still needed after the wait)."""
    if series not in SERIES:
        raise LinuxGuestError(f"series must be one of {', '.join(SERIES)}, not {series!r}")
    have = cached_kernel(build, series)
    if have and not refresh:
        return have
    with fetch_lock(build):
        have = cached_kernel(build, series)
        if have and (done() if done else not refresh):
            return have
        return _fetch_kernel_locked(build, series)


def _fetch_kernel_locked(build, series):
    """fetch_kernel() under its lock: apt-get, extract into a temporary tree, move into place."""
    opts = apt_options(build, series)
    if opts and not aptget.has_lists(os.path.join(build, "apt-bpo")):
        APT.update(opts)
    tmp = tempfile.mkdtemp(prefix=f"linuxguest-{series}-", dir=build)
    try:
        deb, why = _download_image(opts, tmp)
        if deb is None and (opts or os.geteuid() == 0):
            # Stale lists name a version the mirror dropped: refresh them once (the private lists
            # always; the system's only as root, as `make deps` does) and try again.
            APT.update(opts)
            deb, why = _download_image(opts, tmp)
        if deb is None:
            raise LinuxGuestError(why)
        x = os.path.join(tmp, "x")
        aptget.extract([deb], x)
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
                install(src.read(), dest)
        for old in glob.glob(os.path.join(d, "vmlinuz-*")) + glob.glob(os.path.join(d, "config-*")):
            if old not in new:
                os.unlink(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cached_kernel(build, series)
