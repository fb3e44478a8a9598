# SPDX-License-Identifier: MIT
"""version.py: gdbsample-analyze's version, read from the VERSION file gdbsample is built with."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# VERSION is the version's one home: at the top of the source tree (two levels up from here), and
# beside this package once installed (make install copies it to PREFIX/share/gdbsample/VERSION).
PLACES = (os.path.join(HERE, os.pardir, "VERSION"), os.path.join(HERE, os.pardir, os.pardir, "VERSION"))


def version():
    """The version string ("0.15.0"), or "unknown" when no VERSION file is where it should be."""
    for path in PLACES:
        try:
            with open(path, encoding="ascii") as f:
                return f.read().strip()
        except (OSError, ValueError):
            continue
    return "unknown"
