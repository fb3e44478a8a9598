# SPDX-License-Identifier: MIT
"""benchdoc.py: each benchmark owns one section of docs/benchmarks.md, between its own markers."""
import os


def markers(name):
    """The begin/end comment lines of benchmark `name`'s section."""
    return "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name


def replace_section(path, name, text, first=False):
    """Puts text (which starts and ends with name's markers) in place of name's section of the
    file at path, or appends it (first: puts it right after the title line instead); every other
    section stays as it was."""
    begin, end = markers(name)
    doc = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + text.rstrip("\n") + doc[doc.index(end) + len(end):]
    elif first:
        title, _, rest = doc.partition("\n")
        doc = title + "\n\n" + text.rstrip("\n") + "\n\n" + rest.lstrip("\n")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    with open(path, "w") as f:
        f.write(doc)
