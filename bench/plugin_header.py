#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""plugin_header.py: QEMU 10.0's qemu-plugin.h, for the bench's TCG-plugin peer (bench/qperf_peer.c).

Debian packages no qemu-plugin.h, so it comes from Debian's `qemu` *source* package of the very
version tools/qemu_versions.py unpacked (BUILD/qemu10/root/VERSION names it): `apt-get source
--print-uris` through a private apt configuration (deb-src bookworm-backports only; the system's
sources are never touched) names the upstream tarball with its size and SHA-256 from the signed
Sources index; the tarball is downloaded, checked against both, and the one header taken out.
(Not `apt-get source --download-only`: this host's mirror answers 404 for the .dsc and the Debian
tarball, not for the upstream one; so the header is upstream's, without Debian's patches.) Cached:

    BUILD/qemu10/plugin/qemu-plugin.h    the header; VERSION beside it names the source version

Bench only -- never `make test` -- and nothing fetched is committed.

    plugin_header.py [--build DIR]       print the header's directory (fetching it if missing)
"""
import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import aptget  # noqa: E402
import qemu_versions  # noqa: E402

SOURCE = "deb-src http://deb.debian.org/debian bookworm-backports main"
MEMBER = "*/include/qemu/qemu-plugin.h"


class HeaderError(Exception):
    """The header cannot be had: one line for the user."""


APT = aptget.Apt(HeaderError, HeaderError, prefix="qemu-plugin.h: ", timeout=1800)


def source_version(build):
    """The source version of the unpacked QEMU 10.0 (qemu-system-x86's, e.g. 1:10.0.2+ds-2+deb13u1~bpo12+1)."""
    path = os.path.join(qemu_versions.tree(build), "VERSION")
    try:
        text = open(path).read()
    except OSError:
        raise HeaderError(f"qemu-plugin.h: no QEMU 10.0 unpacked ({path}): run tools/qemu_versions.py fetch")
    m = re.search(r"^qemu-system-x86 (\S+)$", text, re.M)
    if not m:
        raise HeaderError(f"qemu-plugin.h: {path} names no qemu-system-x86 version")
    return m.group(1)


def fetch(build):
    """The directory holding qemu-plugin.h for the unpacked 10.0, fetched if missing."""
    build = os.path.abspath(build)
    version = source_version(build)
    out = os.path.join(build, "qemu10", "plugin")
    stamp = os.path.join(out, "VERSION")
    if os.path.exists(stamp) and open(stamp).read().strip() == version:
        return out
    opts = aptget.private_options(os.path.join(build, "qemu10", "apt-src"), SOURCE)
    APT.update(opts)
    status, text = APT.run(["apt-get", "-q"] + opts + ["source", "--print-uris", f"qemu={version}"])
    orig = re.search(r"^'(\S+)' (qemu_\S+\.orig\.tar\.\w+) (\d+) SHA256:([0-9a-f]{64})$", text, re.M)
    if status != 0 or not orig:
        raise APT.failed(f"apt-get source --print-uris qemu={version}", text)
    url, name, size, sha = orig.group(1), orig.group(2), int(orig.group(3)), orig.group(4)
    tmp = tempfile.mkdtemp(prefix=".src-", dir=os.path.join(build, "qemu10"))
    try:
        tar = os.path.join(tmp, name)
        h = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=600) as r, open(tar, "wb") as f:
                while chunk := r.read(1 << 20):
                    h.update(chunk)
                    f.write(chunk)
        except OSError as e:
            raise HeaderError(f"qemu-plugin.h: cannot download {url}: {e}")
        if os.path.getsize(tar) != size or h.hexdigest() != sha:
            raise HeaderError(f"qemu-plugin.h: {name} is not what the Sources index says (size or SHA-256)")
        r = subprocess.run(["tar", "-xf", tar, "-C", tmp, "--wildcards", MEMBER], capture_output=True, text=True)
        found = glob.glob(os.path.join(tmp, "*", "include", "qemu", "qemu-plugin.h"))
        if r.returncode != 0 or len(found) != 1:
            raise HeaderError(f"qemu-plugin.h: not in {name}: {r.stderr.strip()[-300:]}")
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(found[0], os.path.join(out, "qemu-plugin.h"))
        with open(stamp, "w") as f:  # last: marks the header complete
            f.write(version + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=qemu_versions.default_build())
    a = ap.parse_args()
    try:
        print(fetch(a.build))
    except HeaderError as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
