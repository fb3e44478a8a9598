# SPDX-License-Identifier: MIT
"""gdbsample refuses a kernel module (.ko, any relocatable object) given as -e in one line, before
touching a guest: loaded modules come from guest memory (docs/unwinding.md)."""
import os
import subprocess

import conftest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")


def test_ko_is_refused_in_one_line(tmp_path):
    src = tmp_path / "hot.c"
    src.write_text("int hot_spin(int n) { while (n--) ; return 0; }\n")
    ko = tmp_path / "hot.ko"
    subprocess.run(["gcc", "-c", "-o", str(ko), str(src)], check=True)
    r = subprocess.run([GDBSAMPLE, "-p", "1", "-e", str(ko)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "hot.ko" in lines[0] and "relocatable object" in lines[0], r.stderr
