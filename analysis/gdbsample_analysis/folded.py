"""folded.py: the folded-stack text format, `root;...;leaf COUNT` a line, read and written sorted.

This is the format of `gdbsample -f folded` (with a `cpuN` root frame), FlameGraph's
stackcollapse scripts and speedscope's importer: the count follows the last space, frames are
separated by `;`, lines are sorted by the stack text in byte order.
"""

COUNT_MAX = (1 << 63) - 1   # largest count read: sums and shares stay exact enough, never overflow


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
        try:
            c = int(count)
        except ValueError:
            raise FoldedError("%s:%d: count %.20r is not an integer" % (name, n, count)) from None
        if c < 0:
            raise FoldedError("%s:%d: negative count %d" % (name, n, c))
        if c > COUNT_MAX:
            raise FoldedError("%s:%d: count %.20s... is too large" % (name, n, count))
        out[stack] = out.get(stack, 0) + c
    return out


def read_folded(path):
    """Folded file -> dict stack -> count; FoldedError with one line if unreadable or malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            return parse_folded(f, path)
    except OSError as e:
        raise FoldedError("%s: %s" % (path, e.strerror or e)) from None
    except UnicodeDecodeError:
        raise FoldedError("%s: not UTF-8 text (a capture needs -e ELF?)" % path) from None


def sorted_items(stacks):
    """(stack, count) pairs in byte order of the stack text, as gdbsample sorts them."""
    return sorted(stacks.items(), key=lambda kv: kv[0].encode("utf-8", "surrogateescape"))


def format_folded(stacks):
    """dict stack -> count -> the folded text, sorted."""
    return "".join("%s %d\n" % (s, c) for s, c in sorted_items(stacks))
