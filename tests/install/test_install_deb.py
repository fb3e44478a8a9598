# SPDX-License-Identifier: MIT
"""make deb: the Debian package builds under BUILD/deb (nothing in the repository's parent
directory), lintian finds no error, and its contents -- unpacked with dpkg -x into a scratch
root, nothing installed on the host -- run from /. Then the real thing: `apt-get install
./gdbsample_....deb` in a minimal Debian root (make debroot: debootstrap --variant=minbase
bookworm, cached under BUILD/debroot) through chroot, so apt resolves and fetches the declared
Depends and nothing else; every gdbsample-analyze subcommand then gives the source tree's bytes
there, and `apt-get remove` (with autoremove --purge) leaves the root's package set as it was.
The system's own dpkg state is never touched. Skipped, saying why, only when Debian's archive
cannot be reached (or we are not root: chroot needs it)."""
import fcntl
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

import conftest
import every_command

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
    for name in ("python3", "python3-protobuf", "python3-pyelftools", "libdw1", "libelf1", "libbpf1", "zlib1g", "liblzma5",
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
                 "usr/share/gdbsample/gdbsample_analysis/profile_pb2.py",
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


# -- a real apt-get install in a scratch Debian root ------------------------------------------
DEBROOT = os.path.join(conftest.BUILD, "debroot")
CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
# dpkg without fsync in the scratch root (a lost root is rebuilt by make debroot): the install
# and removal are most of this test's time.
UNSAFE_IO = ("-o", "DPkg::Options::=--force-unsafe-io")


def in_root(*argv, timeout=600):
    """argv run inside the scratch root (chroot), with a clean environment."""
    return subprocess.run(["chroot", DEBROOT] + list(argv), env=CHROOT_ENV, capture_output=True, text=True,
                          timeout=timeout)


def archive_reachable():
    """None if Debian's archive answers, else why not (the mirror make debroot uses)."""
    url = "http://deb.debian.org/debian/dists/bookworm/Release"
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            r.read(64)
        return None
    except OSError as e:
        return "%s: %s" % (url, e)


def packages():
    """The root's installed packages: {name: version}."""
    r = in_root("dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package} ${Version}\\n")
    assert r.returncode == 0, r.stderr
    return dict(line.split()[1:3] for line in r.stdout.splitlines() if line.startswith("ii "))


@pytest.fixture(scope="module")
def debroot():
    """The scratch root, made once (make debroot) and its package lists refreshed; locked while in
    use (one test run at a time installs into it). Yields the time spent, by step."""
    if os.geteuid() != 0:
        pytest.skip("chroot needs root: the apt-get install test runs as root (make test under sudo)")
    times = {}
    t = time.monotonic()
    os.makedirs(conftest.BUILD, exist_ok=True)
    with open(os.path.join(conftest.BUILD, "debroot.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(DEBROOT, ".ready")):
            r = subprocess.run(["make", "--no-print-directory", "-C", conftest.ROOT, "BUILD=" + conftest.BUILD,
                                "debroot"], capture_output=True, text=True, timeout=3600)
            if r.returncode != 0:
                why = archive_reachable()
                if why:
                    pytest.skip("Debian's archive cannot be reached (%s): no scratch root" % why)
                pytest.fail("make debroot failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
        times["root"] = time.monotonic() - t
        if lists_age() > LISTS_FRESH_S:  # younger lists are kept: apt-get update took ~60 s a run
            update_lists(times)
        yield times


LISTS_FRESH_S = 6 * 3600  # package lists this young are used as they are (see the install's retry)


def lists_age():
    """Seconds since the scratch root's package lists were last refreshed (inf: none)."""
    lists = os.path.join(DEBROOT, "var", "lib", "apt", "lists")
    ages = [os.path.getmtime(os.path.join(lists, n)) for n in os.listdir(lists)
            if n.endswith("_Packages") or n.endswith("_InRelease")] if os.path.isdir(lists) else []
    return time.time() - max(ages) if ages else float("inf")


def update_lists(times):
    """apt-get update in the scratch root (its time in times["update"]); skips when the archive
    cannot be reached, fails otherwise."""
    t = time.monotonic()
    r = in_root("apt-get", "update", "-qq")
    if r.returncode != 0:
        why = archive_reachable()
        if why:
            pytest.skip("Debian's archive cannot be reached (%s): apt-get update failed" % why)
        pytest.fail("apt-get update in the scratch root failed: " + r.stdout + r.stderr)
    times["update"] = time.monotonic() - t


def test_apt_get_install_runs_every_subcommand_and_remove_leaves_nothing(deb, debroot):
    """In the scratch root: apt-get install ./gdbsample_....deb pulls in the declared Depends
    (python3-protobuf, python3-pyelftools, the libraries) and no Recommends; gdbsample runs; each
    gdbsample-analyze subcommand gives the source tree's exit code and bytes, on the root's own
    Python and packages; apt-get remove --autoremove --purge then leaves the root's package set
    as it was, and none of the package's files. One test: the steps depend on each other."""
    before = packages()
    assert "gdbsample" not in before, "a previous run left gdbsample installed in " + DEBROOT
    name = os.path.basename(deb[0])
    shutil.copy(deb[0], os.path.join(DEBROOT, "tmp", name))
    top = os.path.join(DEBROOT, every_command.DATA.strip(os.sep).split(os.sep)[0])
    assert not os.path.exists(top), top
    shutil.copytree(every_command.DATA, DEBROOT + every_command.DATA)   # the same path inside
    times = debroot
    removed = None
    try:
        t = time.monotonic()
        r = in_root("apt-get", "install", "-y", "-q", *UNSAFE_IO, "--no-install-recommends", "/tmp/" + name)
        if r.returncode != 0 and "update" not in times and re.search(r"404|Failed to fetch", r.stdout + r.stderr):
            update_lists(times)  # lists kept as fresh enough named a version the archive has dropped
            r = in_root("apt-get", "install", "-y", "-q", *UNSAFE_IO, "--no-install-recommends", "/tmp/" + name)
        times["install"] = time.monotonic() - t
        if r.returncode != 0 and archive_reachable():
            pytest.skip("Debian's archive cannot be reached (%s): apt-get install failed" % archive_reachable())
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        have = packages()
        for dep in ("gdbsample", "python3-protobuf", "python3-pyelftools", "python3", "libdw1", "libbpf1"):
            assert dep in have, dep
        assert "qemu-system-x86" not in have and "graphviz" not in have   # Recommends, Suggests

        with open(os.path.join(conftest.ROOT, "VERSION")) as f:
            version = f.read().strip()
        r = in_root("gdbsample", "--version")
        assert (r.returncode, r.stdout) == (0, "gdbsample %s\n" % version), r.stderr
        r = in_root("gdbsample", "-p", "0")
        assert r.returncode == 2 and r.stderr.startswith("gdbsample: -p: bad value"), r.stderr

        t = time.monotonic()
        wrong = []
        for sub in sorted(every_command.CASES):
            want = every_command.from_source(sub)
            r = subprocess.run(["chroot", DEBROOT, "/usr/bin/gdbsample-analyze"]
                               + every_command.absolute(every_command.CASES[sub]),
                               cwd="/", env=CHROOT_ENV, capture_output=True, timeout=120)
            if (r.returncode, r.stdout) != want:
                wrong.append("%s: exit %d, %s" % (sub, r.returncode, r.stderr.decode()[-300:]))
        times["subcommands"] = time.monotonic() - t
        assert wrong == [], "\n".join(wrong)

        t = time.monotonic()
        removed = in_root("apt-get", "remove", "-y", "-q", *UNSAFE_IO, "--autoremove", "--purge", "gdbsample")
        times["remove"] = time.monotonic() - t
        assert removed.returncode == 0, removed.stdout + removed.stderr
        after = packages()
        assert after == before, "apt-get remove --autoremove --purge left %s, took %s" % (
            sorted(set(after) - set(before)), sorted(set(before) - set(after)))
        for path in ("usr/bin/gdbsample", "usr/bin/gdbsample-analyze", "usr/share/gdbsample",
                     "usr/share/man/man1/gdbsample.1.gz", "usr/share/doc/gdbsample",
                     "usr/share/bash-completion/completions/gdbsample"):
            assert not os.path.lexists(os.path.join(DEBROOT, path)), path + " is left after apt-get remove"
    finally:
        if removed is None:                     # failed half way: the root as it was, for the next run
            in_root("apt-get", "remove", "-y", "-q", *UNSAFE_IO, "--autoremove", "--purge", "gdbsample")
        os.unlink(os.path.join(DEBROOT, "tmp", name))
        shutil.rmtree(top)
        print("apt-get test, seconds: " + ", ".join("%s %.1f" % kv for kv in times.items()))
