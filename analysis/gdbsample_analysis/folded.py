# SPDX-License-Identifier: MIT
"""folded.py: the folded-stack text format, `root;...;leaf COUNT` a line, read and written sorted.

This is the format of `gdbsample -f folded` (with a `cpuN` root frame), FlameGraph's
stackcollapse scripts and speedscope's importer: the count follows the last space, frames are
separated by `;`, lines are sorted by the stack text in byte order. A line ends at "\\n" (and a
"\\r" before it is dropped) and nowhere else: a form feed, U+2028 or a lone "\\r" inside a frame
name stays in it, in every subcommand. COUNT is ASCII digits only (no sign, "_" or other digits).
"""
import re

from . import inputs

COUNT_MAX = (1 << 63) - 1   # largest count read: sums and shares stay exact enough, never overflow
_COUNT = re.compile(r"[0-9]+")


_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f;\x7f-\x9f\ud800-\udfff\u2028\u2029\ufffe\uffff]")


def _escape(m):
    o = ord(m.group(0))
    if 0xdc80 <= o <= 0xdcff:           # an invalid UTF-8 byte read with surrogateescape: that byte
        o -= 0xdc00
    return "\\x%02x" % o if o <= 0xff else "\\u%04x" % o


def safe_name(name):
    """One frame's name as every output writes it: `;` (it would split the frame), control
    characters but tab, DEL and C1 (line ends for some reader, terminal escapes for all), lone
    surrogates (not UTF-8; an invalid byte shows as itself), U+2028/U+2029 (JavaScript's and
    Unicode's line ends), U+FFFE/U+FFFF (XML refuses them) as \\xNN or \\uNNNN; the rest as is.
    gdbsample's symbols.c writes names the same way."""
    return _UNSAFE.sub(_escape, name) if _UNSAFE.search(name) else name


class FoldedError(Exception):
    """Malformed folded input (one-line message with the line number)."""


def parse_folded(lines, name="<folded>"):
    """Iterable of text lines -> dict stack -> count (repeated stacks add up)."""
    out = {}
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not stack.strip():
            raise FoldedError("%s:%d: expected 'STACK COUNT', got %.60r" % (name, n, line))
        if not _COUNT.fullmatch(count):   # int() takes " 5", "+5", "1_0" and "\u0663"
            if count[:1] == "-" and _COUNT.fullmatch(count[1:]):
                raise FoldedError("%s:%d: negative count %.20s" % (name, n, count))
            raise FoldedError("%s:%d: count %.20r is not an integer" % (name, n, count))
        if len(count.lstrip("0")) > 19 or int(count) > COUNT_MAX:   # int() refuses > 4300 digits
            raise FoldedError("%s:%d: count %.20s... is too large" % (name, n, count))
        out[stack] = out.get(stack, 0) + int(count)
    return out


def read_folded(path):
    """Folded file ("-": stdin) -> dict stack -> count; FoldedError with one line if unreadable or
    malformed."""
    shown = inputs.name(path)
    try:
        with inputs.open_input(path, text=True, newline="\n") as f:   # lines end at \n only
            return parse_folded(f, shown)
    except OSError as e:
        raise FoldedError("%s: %s" % (shown, e.strerror or e)) from None
    except UnicodeDecodeError:
        raise FoldedError("%s: not UTF-8 text (a capture needs -e ELF?)" % shown) from None


def sorted_items(stacks):
    """(stack, count) pairs in byte order of the stack text, as gdbsample sorts them."""
    return sorted(stacks.items(), key=lambda kv: kv[0].encode("utf-8", "surrogateescape"))


def format_folded(stacks):
    """dict stack -> count -> the folded text, sorted."""
    return "".join("%s %d\n" % (s, c) for s, c in sorted_items(stacks))
