# SPDX-License-Identifier: MIT
"""gdbsample refuses a bad kernel module file given as -e in one line, before touching a guest
(docs/unwinding.md, "Kernel module files"): an object that is not a module, a truncated module,
a damaged ELF header -- exit status 2, the file named. The guest-side checks (another kernel,
another build) are in tests/linux/test_linux_ko.py."""
import os
import subprocess

import conftest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
MODINFO = ('__attribute__((section(".modinfo"), used)) static const char mi[] = '
           '"vermagic=6.1.0-57-amd64 SMP \\0name=hot";\n')


def refused(tmp_path, name, data):
    ko = tmp_path / name
    ko.write_bytes(data)
    r = subprocess.run([GDBSAMPLE, "-p", "1", "-e", str(ko)], capture_output=True, text=True, timeout=30)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and name in lines[0], r.stderr
    return lines[0]


def module(tmp_path, source):
    src = tmp_path / "hot.c"
    src.write_text(source + "int hot_spin(int n) { while (n--) ; return 0; }\n")
    out = tmp_path / "hot.o"
    subprocess.run(["gcc", "-c", "-g", "-o", str(out), str(src)], check=True)
    return out.read_bytes()


def test_an_object_that_is_not_a_module_is_refused(tmp_path):
    assert "not a kernel module" in refused(tmp_path, "plain.ko", module(tmp_path, ""))


def test_a_truncated_module_is_refused(tmp_path):
    data = module(tmp_path, MODINFO)
    assert "truncated" in refused(tmp_path, "cut.ko", data[: len(data) * 2 // 3])


def test_a_damaged_module_is_refused(tmp_path):
    data = bytearray(module(tmp_path, MODINFO))
    data[0x28:0x30] = b"\xff" * 8  # e_shoff far past the end
    assert "truncated" in refused(tmp_path, "bad.ko", bytes(data))
