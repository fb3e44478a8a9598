# SPDX-License-Identifier: MIT
"""--version: both tools print one line with the VERSION file's version, its one home; the Debian
changelog agrees with it."""
import os
import subprocess

import conftest
from gdbsample_analysis import version

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
ANALYZE = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")


def the_version():
    with open(os.path.join(conftest.ROOT, "VERSION")) as f:
        return f.read().strip()


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30)


def test_version_file_is_one_dotted_version():
    v = the_version()
    assert v and all(part.isdigit() for part in v.split(".")) and v.count(".") == 2, v


def test_gdbsample_version_is_one_line():
    r = run(GDBSAMPLE, "--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, "gdbsample %s\n" % the_version(), "")


def test_gdbsample_version_needs_no_target_and_works_after_a_command():
    r = run(GDBSAMPLE, "top", "--version")
    assert (r.returncode, r.stdout) == (0, "gdbsample %s\n" % the_version())


def test_analyze_version_is_one_line():
    r = run(ANALYZE, "--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, "gdbsample-analyze %s\n" % the_version(), "")


def test_analysis_package_reads_the_same_file():
    assert version.version() == the_version()


def test_debian_changelog_is_at_the_version():
    """make deb refuses to build otherwise; this says so before anyone builds."""
    r = run("dpkg-parsechangelog", "-l", os.path.join(conftest.ROOT, "debian", "changelog"),
            "-S", "Version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == the_version()
