"""make deb: the Debian package builds under BUILD/deb (nothing in the repository's parent
directory), lintian finds no error, and its contents -- unpacked with dpkg -x into a scratch
root, nothing installed on the host -- run from /.

What this proves: the package holds everything the tools need besides its declared Depends (the
binary runs on this host's libraries, gdbsample-analyze finds its modules from where the package
puts it, no path into the source tree), and every Depends is satisfied by what make deps installs.
What it does not: dpkg's own installation (the package has no maintainer scripts to run)."""
import os
import re
import subprocess

import pytest

import conftest

pytestmark = pytest.mark.slow  # builds the package: left out by `make check`, run by `make test`

DATA = os.path.join(conftest.ROOT, "tests", "analysis", "data")
PARENT = os.path.dirname(conftest.ROOT)


def package_outputs(directory):
    return {n for n in os.listdir(directory) if re.match(r"gdbsample[-_].*\.(deb|changes|buildinfo)$", n)}


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    """(path of the .deb, make deb's output), built in a scratch BUILD."""
    build = tmp_path_factory.mktemp("debbuild") / "build"
    before = package_outputs(PARENT)
    # nocheck: the package's build runs the sampler's C unit tests (debian/rules), which make test
    # has just run on the same sources; the package is what this test is about.
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck")
    r = subprocess.run(["make", "--no-print-directory", "-C", conftest.ROOT, "BUILD=%s" % build, "deb"],
                       capture_output=True, text=True, timeout=1800, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert package_outputs(PARENT) == before, "make deb left files beside the repository"
    debs = [n for n in os.listdir(build / "deb") if re.match(r"gdbsample_.*\.deb$", n)]
    assert len(debs) == 1, os.listdir(build / "deb")
    return str(build / "deb" / debs[0]), r.stdout + r.stderr


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("debroot")
    subprocess.run(["dpkg", "-x", deb[0], str(root)], check=True, timeout=60)
    return root


def field(deb_path, name):
    return subprocess.run(["dpkg-deb", "-f", deb_path, name], capture_output=True, text=True,
                          check=True).stdout.strip()


def run(root, tool, *args):
    return subprocess.run([os.path.join(root, "usr/bin", tool)] + list(args), cwd="/",
                          env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}, capture_output=True, text=True,
                          timeout=60)


def test_lintian_reports_no_error(deb):
    """make deb runs lintian --fail-on error; its output holds no E: line either."""
    assert not re.search(r"^E: ", deb[1], re.M), deb[1]


def test_package_is_named_and_versioned_from_version_file(deb):
    with open(os.path.join(conftest.ROOT, "VERSION")) as f:
        version = f.read().strip()
    assert field(deb[0], "Package") == "gdbsample"
    assert field(deb[0], "Version") == version


def test_depends_name_the_libraries_and_python(deb):
    depends = field(deb[0], "Depends")
    for name in ("python3", "python3-pyelftools", "libdw1", "libelf1", "libbpf1", "zlib1g", "liblzma5",
                 "libzstd1", "liblz4-1", "libc6"):
        assert re.search(r"(^|, )%s( |,|$)" % re.escape(name), depends), (name, depends)
    assert "qemu-system-x86" in field(deb[0], "Recommends")


def test_every_dependency_is_satisfied_here(deb):
    """Each Depends (first alternative) is installed here in a version that satisfies it."""
    for dep in field(deb[0], "Depends").split(", "):
        m = re.match(r"([\w.+-]+)(?: \((\S+) (\S+)\))?", dep.split(" | ")[0])
        name, op, want = m.groups()
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Status} ${Version}", name], capture_output=True,
                           text=True)
        assert r.returncode == 0 and r.stdout.startswith("install ok installed"), dep
        if op:
            have = r.stdout.split()[-1]
            assert subprocess.run(["dpkg", "--compare-versions", have, op, want]).returncode == 0, (dep, have)


def test_package_holds_the_tools_and_no_kernel(root):
    files = {os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns}
    for path in ("usr/bin/gdbsample", "usr/bin/gdbsample-analyze", "usr/share/gdbsample/VERSION",
                 "usr/share/gdbsample/gdbsample_analysis/cli.py", "usr/share/gdbsample/gdbscripts/sample.py",
                 "usr/share/gdbsample/vm-configs/configs.toml", "usr/share/man/man1/gdbsample.1.gz",
                 "usr/share/man/man1/gdbsample-analyze.1.gz", "usr/share/doc/gdbsample/copyright",
                 "usr/share/bash-completion/completions/gdbsample"):
        assert path in files, path
    assert not [p for p in files if "kernel.elf" in p or "__pycache__" in p or p.endswith((".o", ".pyc"))]


def test_unpacked_tools_run_from_anywhere(root):
    with open(os.path.join(conftest.ROOT, "VERSION")) as f:
        version = f.read().strip()
    r = run(root, "gdbsample", "--version")
    assert (r.returncode, r.stdout) == (0, "gdbsample %s\n" % version), r.stderr
    r = run(root, "gdbsample-analyze", "--help")
    assert r.returncode == 0 and "compare" in r.stdout, r.stderr
    r = run(root, "gdbsample-analyze", "fold", os.path.join(DATA, "sample.cap"), "-e", os.path.join(DATA, "tiny.elf"))
    assert r.returncode == 0, r.stderr
    with open(os.path.join(DATA, "golden", "fold.folded")) as f:
        assert r.stdout == f.read()
