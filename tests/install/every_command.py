# SPDX-License-Identifier: MIT
"""every_command.py: one invocation of every gdbsample-analyze subcommand, for the install tests --
an installed tree must give the bytes the source tree gives, for each of them."""
import contextlib
import io
import os
import subprocess

import conftest
from gdbsample_analysis import cli
from gdbsample_analysis.cli import COMMANDS

DATA = os.path.join(conftest.ROOT, "tests", "analysis", "data")
SOURCE_TOOL = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")

# subcommand -> its arguments (file names in tests/analysis/data); every entry of COMMANDS has one
CASES = {
    "fold": ["fold", "sample.cap", "-e", "tiny.elf", "--lines"],     # --lines: pyelftools' DWARF
    "report": ["report", "sample_v3.cap", "-e", "tiny.map"],
    "diff": ["diff", "sample.cap", "sample2.cap", "-e", "tiny.elf"],
    "info": ["info", "sample_v3.cap"],
    "speedscope": ["speedscope", "sf_small.cap", "-e", "sf_tiny.elf"],
    "flamegraph": ["flamegraph", "sample.cap", "-e", "tiny.elf", "--diff", "sample2.cap"],
    "pprof": ["pprof", "sf_small.cap", "-e", "sf_tiny.elf"],            # python3-protobuf, protoc's module
    "perf-script": ["perf-script", "sample.cap", "-e", "tiny.elf"],
    "compare": ["compare", os.path.join("golden", "report.txt"), "sample.cap", "-e", "tiny.elf"],
}
assert set(CASES) == set(COMMANDS), "every subcommand needs an install case"


def absolute(args, data=DATA):
    """args with the names of files in data made absolute."""
    return [os.path.join(data, a) if os.path.exists(os.path.join(DATA, a)) else a for a in args]


def from_source(name):
    """(exit code, stdout bytes) of the source tree's gdbsample-analyze for CASES[name]: run in
    this process (cli.main; no interpreter to start), but pprof's binary output needs a real
    stdout, so that one as a process."""
    args = absolute(CASES[name])
    if name == "pprof":
        r = subprocess.run([SOURCE_TOOL] + args, cwd="/", capture_output=True, timeout=120,
                           env=dict(os.environ, GDBSAMPLE_BUILD=conftest.BUILD))
        code, out, err = r.returncode, r.stdout, r.stderr
    else:
        o, e = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            code = cli.main(args)
        out, err = o.getvalue().encode("utf-8", "surrogateescape"), e.getvalue()
    assert code in (0, 1) and out, err   # compare's 1: "differs", an answer
    return code, out
