# SPDX-License-Identifier: MIT
"""How `make test` spreads the suite over its two workers (tests/conftest.py, xdist_group): a
file's tests stay together (its module-scoped guests boot once), and tests/linux/ is one group
(its package-scoped Linux guests boot once, not once per worker)."""
import glob
import os
import re

import conftest


def test_every_linux_file_is_one_group_and_every_other_file_its_own():
    files = sorted(glob.glob(os.path.join(conftest.ROOT, "tests", "**", "test_*.py"), recursive=True))
    linux = [f for f in files if f.startswith(os.path.join(conftest.ROOT, "tests", "linux") + os.sep)]
    assert len(linux) >= 5, linux
    assert {conftest.xdist_group(f) for f in linux} == {"linux"}
    others = [f for f in files if f not in linux]
    groups = [conftest.xdist_group(f) for f in others]
    assert len(set(groups)) == len(others) and "linux" not in groups
    assert conftest.xdist_group(os.path.join(conftest.ROOT, "tests", "linuxish", "test_x.py")) == \
        os.path.join("tests", "linuxish", "test_x.py")  # a prefix of the name is not the directory


def test_make_test_distributes_by_those_groups():
    """Without --dist loadgroup the marks are ignored and xdist spreads single tests, booting a
    module's guests on both workers."""
    with open(os.path.join(conftest.ROOT, "Makefile")) as f:
        rule = re.search(r"^test:.*?(?=^\S)", f.read(), re.M | re.S).group(0)
    assert re.search(r"pytest .*-n 2 --dist loadgroup ", rule), rule
