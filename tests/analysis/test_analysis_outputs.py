# SPDX-License-Identifier: MIT
"""-o never destroys a file: an output that is an input (by any name) is refused before any work,
a failed or interrupted run leaves an existing output as it was and no temporary file behind, a
finished one replaces it whole (through a symlink: the file the link points to)."""
import os
import shutil
import stat
import subprocess

import pytest

from analyze import DATA, TOOL, call, one_line_error

from gdbsample_analysis import fold


@pytest.fixture
def d(tmp_path):
    """A directory with a capture, an ELF and two folded files, all copies."""
    shutil.copy(os.path.join(DATA, "sample_v2.cap"), tmp_path / "x.cap")
    shutil.copy(os.path.join(DATA, "sample.cap"), tmp_path / "y.cap")
    shutil.copy(os.path.join(DATA, "tiny.elf"), tmp_path / "e.elf")
    shutil.copy(os.path.join(DATA, "tiny.elf"), tmp_path / "e2.elf")
    shutil.copy(os.path.join(DATA, "fg_base.folded"), tmp_path / "b.folded")
    shutil.copy(os.path.join(DATA, "fg_new.folded"), tmp_path / "n.folded")
    return tmp_path


def snapshot(d):
    """Every file's bytes, by name (symlinks by their target)."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        out[name] = os.readlink(p) if os.path.islink(p) else open(p, "rb").read()
    return out


def partials(d):
    return [n for n in os.listdir(d) if ".partial-" in n]


# (argument list, the input named again as -o): {X} is the directory
REFUSED = [
    ("fold {X}/x.cap -e {X}/e.elf -o {X}/x.cap", "x.cap"),
    ("info {X}/x.cap -o {X}/x.cap", "x.cap"),
    ("report {X}/x.cap -e {X}/e.elf -o {X}/x.cap", "x.cap"),
    ("speedscope {X}/x.cap -e {X}/e.elf -o {X}/x.cap", "x.cap"),
    ("flamegraph {X}/x.cap -e {X}/e.elf -o {X}/x.cap", "x.cap"),
    ("fold {X}/x.cap -e {X}/e.elf -o {X}/e.elf", "e.elf"),
    ("speedscope {X}/x.cap -e {X}/e.elf -o {X}/e.elf", "e.elf"),
    ("diff {X}/b.folded {X}/n.folded -o {X}/b.folded", "b.folded"),
    ("diff {X}/x.cap {X}/y.cap -e {X}/e.elf --base-elf {X}/e2.elf -o {X}/e2.elf", "e2.elf"),
    ("flamegraph {X}/n.folded --diff {X}/b.folded -o {X}/b.folded", "b.folded"),
    ("flamegraph {X}/x.cap -e {X}/e.elf --diff {X}/y.cap --base-elf {X}/e2.elf -o {X}/e2.elf", "e2.elf"),
]


@pytest.mark.parametrize("how", ["same name", "other spelling", "symlink", "hard link"])
@pytest.mark.parametrize("argv, victim", REFUSED)
def test_output_that_is_an_input_is_refused(d, argv, victim, how):
    args = argv.format(X=d).split()
    i = args.index("-o") + 1
    if how == "other spelling":
        args[i] = os.path.join(d, ".", victim)
    elif how == "symlink":
        os.symlink(victim, d / "link")
        args[i] = str(d / "link")
    elif how == "hard link":
        os.link(d / victim, d / "hard")
        args[i] = str(d / "hard")
    before = snapshot(d)
    r = call(*args)
    assert r.returncode == 2 and one_line_error(r), r.stderr
    assert "refusing to overwrite" in r.stderr and r.stdout == ""
    assert snapshot(d) == before and not partials(d)


def test_split_output_that_is_an_input_is_refused(d):
    os.rename(d / "x.cap", d / "p.cpu1.cap")          # -o p.cap writes p.cpu0.cap, p.cpu1.cap
    before = snapshot(d)
    r = call("fold", d / "p.cpu1.cap", "-e", d / "e.elf", "--split-by-cpu", "-o", d / "p.cap")
    assert r.returncode == 2 and one_line_error(r) and "refusing to overwrite" in r.stderr
    assert snapshot(d) == before and not partials(d)


def test_stdout_appending_to_an_input_is_refused(d):
    before = snapshot(d)
    with open(d / "x.cap", "ab") as f:
        r = subprocess.run([TOOL, "fold", str(d / "x.cap")], stdout=f, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert r.returncode == 2 and one_line_error(r) and "stdout is the input" in r.stderr
    assert snapshot(d) == before


def test_failed_run_leaves_the_output_untouched(d):
    (d / "out.svg").write_text("old")
    (d / "empty.folded").write_text("")
    r = call("flamegraph", d / "empty.folded", "-o", d / "out.svg")     # fails after -o is open
    assert r.returncode == 1 and one_line_error(r) and "no samples" in r.stderr
    assert (d / "out.svg").read_text() == "old" and not partials(d)


def test_error_in_the_middle_leaves_the_output_untouched(d):
    """DWARF read only when the first frame is named: the error comes after -o was opened."""
    from elftools.elf.elffile import ELFFile
    with open(d / "e.elf", "rb") as f:
        sec = ELFFile(f).get_section_by_name(".debug_abbrev")
    data = bytearray((d / "e.elf").read_bytes())
    data[sec["sh_offset"]:sec["sh_offset"] + sec["sh_size"]] = b"\0" * sec["sh_size"]
    (d / "bad.elf").write_bytes(bytes(data))
    (d / "out.folded").write_text("old")
    r = call("fold", d / "x.cap", "-e", d / "bad.elf", "--lines", "-o", d / "out.folded")
    assert r.returncode == 1 and one_line_error(r) and "bad DWARF" in r.stderr
    assert (d / "out.folded").read_text() == "old" and not partials(d)


def test_interrupt_leaves_the_output_untouched(d, monkeypatch):
    def interrupted(stacks):
        raise KeyboardInterrupt
    monkeypatch.setattr(fold, "format_folded", interrupted)
    (d / "out.folded").write_text("old")
    r = call("fold", d / "x.cap", "-o", d / "out.folded")
    assert r.returncode == 130 and r.stderr == "gdbsample-analyze: interrupted\n"
    assert (d / "out.folded").read_text() == "old" and not partials(d)


def test_split_outputs_all_or_nothing(d):
    (d / "o.cpu0.folded").write_text("old")
    os.mkdir(d / "o.cpu1.folded")                       # the second output cannot be written
    r = call("fold", d / "x.cap", "--split-by-cpu", "-o", d / "o.folded")
    assert r.returncode == 1 and one_line_error(r)
    assert (d / "o.cpu0.folded").read_text() == "old" and not partials(d)
    os.rmdir(d / "o.cpu1.folded")
    r = call("fold", d / "x.cap", "--split-by-cpu", "-o", d / "o.folded")
    assert r.returncode == 0
    assert (d / "o.cpu0.folded").read_text() != "old" and (d / "o.cpu1.folded").is_file()
    assert not partials(d)


def test_success_replaces_whole_through_a_symlink_keeping_the_mode(d):
    want = call("fold", d / "x.cap", "-e", d / "e.elf").stdout
    (d / "real.folded").write_text("old " * 10000)
    os.chmod(d / "real.folded", 0o640)
    os.symlink("real.folded", d / "link.folded")
    r = call("fold", d / "x.cap", "-e", d / "e.elf", "-o", d / "link.folded")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert os.readlink(d / "link.folded") == "real.folded"        # still a link
    assert (d / "real.folded").read_text() == want
    assert stat.S_IMODE(os.stat(d / "real.folded").st_mode) == 0o640
    assert not partials(d)


def test_new_output_has_the_usual_mode(d):
    mask = os.umask(0o022)
    try:
        r = call("info", d / "x.cap", "-o", d / "new.txt")
    finally:
        os.umask(mask)
    assert r.returncode == 0 and stat.S_IMODE(os.stat(d / "new.txt").st_mode) == 0o644


def test_device_output_is_written_directly(d):
    r = call("report", d / "x.cap", "-e", d / "e.elf", "-o", os.devnull)
    assert r.returncode == 0 and r.stderr == "" and stat.S_ISCHR(os.stat(os.devnull).st_mode)
