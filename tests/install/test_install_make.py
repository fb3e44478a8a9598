# SPDX-License-Identifier: MIT
"""make install into a scratch DESTDIR with PREFIX=/usr, the installed tools run from / (no
source tree, no PYTHONPATH), then make uninstall leaves no file behind."""
import os
import subprocess

import pytest

import conftest
import every_command

# make install and uninstall, then a process per installed tool and case: make test, not make check
pytestmark = pytest.mark.slow

DATA = os.path.join(conftest.ROOT, "tests", "analysis", "data")
PREFIX = "/usr"


def make(*targets, destdir):
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", conftest.ROOT, "BUILD=" + conftest.BUILD,
                        "DESTDIR=" + str(destdir), "PREFIX=" + PREFIX] + list(targets),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def files_under(root):
    """Every file and symlink under root, relative to it, sorted."""
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, dirs, files in os.walk(root) for n in files + [x for x in dirs
                                                                        if os.path.islink(os.path.join(d, x))])


def run(root, tool, *args):
    """An installed tool, from /, with an environment that names no path of the source tree."""
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    return subprocess.run([str(root) + PREFIX + "/bin/" + tool] + list(args), cwd="/", env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("destdir")
    make("install", destdir=root)
    yield root
    make("uninstall", destdir=root)
    assert files_under(root) == [], "make uninstall left these behind"


def test_install_puts_each_part_where_it_belongs(installed):
    have = set(files_under(installed))
    for path in ("usr/bin/gdbsample", "usr/bin/gdbsample-analyze",
                 "usr/share/gdbsample/VERSION", "usr/share/gdbsample/gdbsample_analysis/cli.py",
                 "usr/share/gdbsample/gdbsample_analysis/profile_pb2.py",
                 "usr/share/gdbsample/gdbscripts/sample.py", "usr/share/gdbsample/gdbscripts/kernel.py",
                 "usr/share/gdbsample/vm-configs/configs.toml", "usr/share/gdbsample/vm-configs/run",
                 "usr/share/gdbsample/vm-configs/libvirt/tcg-qemu64.xml",
                 "usr/share/man/man1/gdbsample.1", "usr/share/man/man1/gdbsample-analyze.1",
                 "usr/share/bash-completion/completions/gdbsample",
                 "usr/share/bash-completion/completions/gdbsample-analyze"):
        assert path in have, path
    assert not any("kernel.elf" in p or p.endswith(".o") for p in have), "tools only, no kernel"
    for tool in ("gdbsample", "gdbsample-analyze"):
        assert os.access(os.path.join(installed, "usr/bin", tool), os.X_OK)


def test_installed_man_pages_name_the_version_and_the_installed_data_directory(installed):
    with open(os.path.join(conftest.ROOT, "VERSION")) as f:
        version = f.read().strip()
    for page in ("gdbsample.1", "gdbsample-analyze.1"):
        with open(os.path.join(installed, "usr/share/man/man1", page)) as f:
            text = f.read()
        assert "@" not in text.replace("\\(at", "")
        assert '"gdbsample %s"' % version in text.splitlines()[1]
        assert "/usr/share/gdbsample/" in text


def test_installed_gdbsample_runs_from_anywhere(installed):
    r = run(installed, "gdbsample", "--version")
    assert r.returncode == 0 and r.stdout.startswith("gdbsample ") and r.stdout.count("\n") == 1
    r = run(installed, "gdbsample", "--help")
    assert r.returncode == 0 and "--qmp" in r.stdout
    r = run(installed, "gdbsample", "-p", "0")
    assert r.returncode == 2 and r.stderr.startswith("gdbsample: -p: bad value")


def test_installed_analyze_runs_from_anywhere(installed):
    r = run(installed, "gdbsample-analyze", "--version")
    assert r.returncode == 0 and r.stdout.startswith("gdbsample-analyze ") and r.stdout.count("\n") == 1
    r = run(installed, "gdbsample-analyze", "--help")
    assert r.returncode == 0 and "flamegraph" in r.stdout


@pytest.mark.parametrize("args, golden", [
    (["fold", "sample.cap", "-e", "tiny.elf"], "fold.folded"),
    (["fold", "sample.cap", "-e", "tiny.elf", "--lines"], "fold_lines.folded"),  # pyelftools' DWARF
    (["info", "sample_v3.cap"], "info_v3.txt"),
])
def test_installed_analyze_gives_the_golden_output(installed, args, golden):
    """From /, with the inputs by absolute path: the same bytes as the source tree's golden file."""
    args = [os.path.join(DATA, a) if os.path.exists(os.path.join(DATA, a)) else a for a in args]
    r = run(installed, "gdbsample-analyze", *args)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(DATA, "golden", golden)) as f:
        want = f.read()
    if golden.startswith("info"):  # info names the capture as given
        want = want.replace("sample_v3.cap", os.path.join(DATA, "sample_v3.cap"))
    assert r.stdout == want


@pytest.mark.parametrize("name", sorted(every_command.CASES))
def test_every_installed_subcommand_gives_the_source_trees_bytes(installed, name):
    """Each subcommand (pprof too: protoc's module is installed beside the package), from /, with
    no source tree in reach: the same exit code and output as analysis/gdbsample-analyze."""
    want = every_command.from_source(name)
    r = subprocess.run([str(installed) + PREFIX + "/bin/gdbsample-analyze"]
                       + every_command.absolute(every_command.CASES[name]), cwd="/",
                       env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}, capture_output=True, timeout=120)
    assert (r.returncode, r.stdout) == want, r.stderr.decode()


def test_installed_vm_configs_launcher_runs_from_anywhere(installed):
    run_ = os.path.join(str(installed) + PREFIX, "share/gdbsample/vm-configs/run")
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run([run_, "--list"], cwd="/", env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "tcg-qemu64" in r.stdout, r.stderr
    r = subprocess.run([run_, "tcg-qemu64", "--kernel", "/boot/k.elf", "--print"], cwd="/", env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("qemu-system-x86_64 ") and "-kernel /boot/k.elf" in r.stdout
    r = subprocess.run([run_, "tcg-qemu64"], cwd="/", env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--kernel" in r.stderr


def test_running_the_installed_tools_writes_nothing_into_the_install(installed):
    """No __pycache__ beside the installed modules: uninstall (and dpkg) would not know them."""
    run(installed, "gdbsample-analyze", "info", os.path.join(DATA, "sample.cap"))
    subprocess.run([os.path.join(str(installed) + PREFIX, "share/gdbsample/vm-configs/run"), "--list"],
                   cwd="/", capture_output=True, timeout=30)
    assert [p for p in files_under(installed) if "__pycache__" in p or p.endswith(".pyc")] == []
