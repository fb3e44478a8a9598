# SPDX-License-Identifier: MIT
"""aptget.py: Debian packages through a private apt configuration -- update, depends, download, dpkg -x.

The one apt helper of tools/: the Linux guests' kernels, headers and busybox (linuxkernel.py,
linuxguest_arm64.py, linuxmods.py) and QEMU 10.0 (qemu_versions.py) are all fetched through it.
A private configuration is a directory holding a sources.list and its own lists and cache, given
to apt-get with -o options: the system's apt sources, lists and architectures are never touched.

Failures are split in two, because tests skip on one and fail on the other: the archive could not
be reached (apt's words for a missing network, UNREACHABLE; or no apt at all) and anything else.
Each caller names its own two exception classes and a message prefix (an Apt instance).
"""
import glob
import os
import re
import subprocess

# apt's words for "the network is not there" (anything else is a real error).
UNREACHABLE = re.compile(r"Could not resolve|Temporary failure resolving|Unable to connect|"
                         r"Could not connect|Connection timed out|Network is unreachable|"
                         r"No route to host|Connection refused|Cannot initiate the connection", re.I)
FAILED_FETCH = re.compile(r"^(W|E): Failed to fetch", re.M)  # update printed it: a list is stale


def errors(out):
    """apt's E: lines (else its W: lines, else the end of its output), for a short message."""
    for tag in ("E:", "W:"):
        lines = [ln for ln in out.splitlines() if ln.startswith(tag)]
        if lines:
            return " ".join(lines)[-600:]
    return out.strip()[-400:]


def private_options(d, sources, extra=()):
    """apt -o options for a private configuration under directory d whose only sources are the
    text `sources` (sources.list lines); extra: more -o options (e.g. another architecture).
    d is made absolute: apt takes a relative Dir:: path from /, whatever the working directory."""
    d = os.path.abspath(d)
    for sub in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    with open(os.path.join(d, "sources.list"), "w") as f:
        f.write(sources if sources.endswith("\n") else sources + "\n")
    return ["-o", f"Dir::Etc::sourcelist={d}/sources.list", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={d}/lists", "-o", f"Dir::Cache={d}/cache"] + list(extra)


def has_lists(d):
    """True when the private configuration under d has been updated at least once."""
    return bool(glob.glob(os.path.join(os.path.abspath(d), "lists", "*Packages*")))


def extract(debs, dest):
    """dpkg -x every .deb into dest (in order: later ones may overwrite earlier files)."""
    for deb in debs:
        subprocess.run(["dpkg", "-x", deb, dest], check=True)


class Apt:
    """apt-get and apt-cache for one caller: its exception classes and its message prefix."""

    def __init__(self, error, unreachable, prefix="", timeout=900):
        """error: raised for a failure; unreachable (a subclass of error, usually): raised when
        the archive cannot be reached; prefix: put before every message ("QEMU 10.0: ")."""
        self.error, self.unreachable, self.prefix, self.timeout = error, unreachable, prefix, timeout

    def run(self, argv, cwd=None):
        """Runs an apt tool; returns (status, combined output). No apt at all counts as unreachable."""
        try:
            r = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=self.timeout)
        except FileNotFoundError:
            raise self.unreachable(f"{self.prefix}cannot reach Debian's archive: {argv[0]} is not installed")
        except subprocess.TimeoutExpired:
            raise self.unreachable(f"{self.prefix}cannot reach Debian's archive: {' '.join(argv[:2])} timed out")
        return r.returncode, r.stdout + r.stderr

    def failed(self, what, out):
        """The exception for a failed apt step: `unreachable` if the network is the reason."""
        if UNREACHABLE.search(out):
            return self.unreachable(f"{self.prefix}cannot reach Debian's archive ({what}): {errors(out)}")
        return self.error(f"{self.prefix}{what} failed: {errors(out)}")

    def update(self, opts):
        """apt-get update with opts; a list that failed to fetch is a failure too."""
        status, out = self.run(["apt-get", "-q", "update"] + list(opts))
        if status != 0 or FAILED_FETCH.search(out):
            raise self.failed("apt-get update", out)

    def depends(self, opts, package):
        """The packages `apt-cache depends package` names on its Depends: lines, in its order."""
        status, out = self.run(["apt-cache"] + list(opts) + ["depends", package])
        if status != 0:
            raise self.failed(f"apt-cache depends {package}", out)
        return re.findall(r"^\s*Depends: (\S+)", out, re.M)

    def download(self, opts, names, cwd):
        """apt-get download names into cwd; returns the .debs there, sorted. A failure raises."""
        status, out = self.run(["apt-get", "-q"] + list(opts) + ["download"] + list(names), cwd=cwd)
        debs = sorted(glob.glob(os.path.join(cwd, "*.deb")))
        if status != 0 or UNREACHABLE.search(out) or not debs:
            raise self.failed(f"apt-get download {' '.join(names)}", out)
        return debs
