# SPDX-License-Identifier: MIT
"""demangle.py: C++ and Rust (legacy and v0) symbol names made readable through binutils' c++filt
(libiberty, the library gdbsample's demangle.c links), as `c++filt -i` writes them: parameters
kept, Rust's legacy hash dropped -- the same names gdbsample prints."""
import re
import shutil
import subprocess


class DemangleError(Exception):
    """c++filt missing or failing (one-line message)."""

_MANGLED = re.compile(r"_[ZR][A-Z0-9]")   # sampler/demangle.c's demangle_looks_mangled
enabled = True                             # --no-demangle clears it (cli.main sets it every run)


def looks_mangled(name):
    """Whether a name looks like a C++ (_Z) or Rust v0 (_R) mangled one."""
    return _MANGLED.match(name) is not None


def demangle_all(names):
    """{raw: readable} for the names that look mangled and demangle; {} when demangling is off.
    The second value is how many looked mangled but c++filt left them as they were (rejected).
    One c++filt process for all of them; DemangleError if it is missing or fails."""
    wanted = sorted({n for n in names if looks_mangled(n) and "\n" not in n and " " not in n})
    if not enabled or not wanted:
        return {}, 0
    tool = shutil.which("c++filt")
    if tool is None:
        raise DemangleError("%d symbol names are mangled (C++/Rust) and c++filt is missing: install "
                            "binutils, or pass --no-demangle" % len(wanted))
    try:
        r = subprocess.run([tool, "-i"], input="\n".join(wanted) + "\n", capture_output=True, text=True,
                           errors="surrogateescape", check=False)
    except OSError as e:
        raise DemangleError("c++filt: %s (or pass --no-demangle)" % (e.strerror or e)) from None
    out = r.stdout.split("\n")
    if r.returncode != 0 or len(out) != len(wanted) + 1 or out[-1] != "":
        raise DemangleError("c++filt failed (exit %d) on %d names (or pass --no-demangle)"
                            % (r.returncode, len(wanted)))
    table, rejected = {}, 0
    for raw, readable in zip(wanted, out):
        if readable == raw:
            rejected += 1
        else:
            table[raw] = readable
    return table, rejected
