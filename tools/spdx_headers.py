#!/usr/bin/python3
"""spdx_headers.py: puts `SPDX-License-Identifier: MIT` at the top of every source file we wrote.

The line goes first -- after a `#!` line (and a Python coding line right after it), which must
stay first -- so each file's one-line purpose comment follows it directly, as
tests/linux/hotmod/hotmod.c already has it. C, headers and assembly take `/* ... */`, Python,
make and shell `#`. Which files: those git tracks ending in .c .h .S .py .mk .sh, the Makefile,
Kbuild files, and tracked scripts whose `#!` names python, sh, bash or make; never test data
(tests/*/data/: line numbers are baked into committed ELFs and goldens), fuzz corpora and
crashes, or hidden directories. A file that already carries an SPDX line is left alone.

  tools/spdx_headers.py            add the line where it is missing, list the files changed
  tools/spdx_headers.py --check    list the files missing it; exit 1 if any
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "SPDX-License-Identifier: MIT"
C_LIKE = (".c", ".h", ".S")
HASH = (".py", ".mk", ".sh")
SKIP = re.compile(r"^(?:\.|tests/[^/]+/data/|fuzz/corpus/|fuzz/crashes/)|/\.")
SHEBANG = re.compile(rb"^#!.*\b(?:python3?|sh|bash|make)\b")
CODING = re.compile(r"^#.*coding[:=]")


def comment_style(path, head):
    """"c" (/* */), "hash" (#) or None (not a source file of ours)."""
    if SKIP.search(path):
        return None
    name = os.path.basename(path)
    if name.endswith(C_LIKE):
        return "c"
    if name.endswith(HASH) or name in ("Makefile", "Kbuild") or SHEBANG.match(head):
        return "hash"
    return None


def with_tag(text, style):
    """text with the SPDX line inserted at the top (after #! and a coding line), or None if it
    has one already."""
    lines = text.splitlines(keepends=True)
    if any("SPDX-License-Identifier:" in ln for ln in lines[:5]):
        return None
    at = 0
    if lines and lines[0].startswith("#!"):
        at = 1
        if len(lines) > 1 and CODING.match(lines[1]):
            at = 2
    tag = "/* %s */\n" % TAG if style == "c" else "# %s\n" % TAG
    return "".join(lines[:at] + [tag] + lines[at:])


def sources():
    """[(path, style)] of the tracked files that need the line."""
    names = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True).stdout
    out = []
    for path in sorted(n.decode() for n in names.split(b"\0") if n):
        full = os.path.join(ROOT, path)
        if os.path.islink(full) or not os.path.isfile(full):
            continue
        with open(full, "rb") as f:
            head = f.read(128)
        style = comment_style(path, head)
        if style:
            out.append((path, style))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only list the files missing the line (exit 1 if any)")
    args = ap.parse_args()
    missing = []
    for path, style in sources():
        full = os.path.join(ROOT, path)
        with open(full, encoding="utf-8", newline="") as f:
            text = f.read()
        new = with_tag(text, style)
        if new is None:
            continue
        missing.append(path)
        if not args.check:
            with open(full, "w", encoding="utf-8", newline="") as f:
                f.write(new)
    for path in missing:
        print(path)
    return 1 if args.check and missing else 0


if __name__ == "__main__":
    sys.exit(main())
