# SPDX-License-Identifier: MIT
"""analyze.py: run gdbsample-analyze for the analysis tests (as a process, or in this one: call)."""
import contextlib
import io
import os
import subprocess
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")
TOOL = os.path.join(ROOT, "analysis", "gdbsample-analyze")


def run(*args, cwd=DATA):
    """CompletedProcess of gdbsample-analyze ARGS (text), run in tests/analysis/data."""
    return subprocess.run([TOOL] + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def call(*args, cwd=DATA):
    """gdbsample-analyze ARGS in this process (cli.main, no interpreter start: for tests that run
    it hundreds of times) -> .returncode, .stdout, .stderr like run(). An exception main lets
    through (a traceback) propagates and fails the test."""
    from gdbsample_analysis import cli
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in args])
    finally:
        os.chdir(here)
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def one_line_error(r):
    """True if stderr is exactly one `gdbsample-analyze: ...` line."""
    lines = r.stderr.splitlines()
    return len(lines) == 1 and lines[0].startswith("gdbsample-analyze: ")
