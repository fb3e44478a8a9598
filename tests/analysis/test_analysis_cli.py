# SPDX-License-Identifier: MIT
"""Every bad argument or unreadable input: one `gdbsample-analyze: ...` line and a non-zero exit."""
import pytest

from analyze import call, one_line_error, run


@pytest.mark.parametrize("args, code", [
    ([], 2),
    (["frobnicate"], 2),
    (["fold"], 2),
    (["fold", "sample.cap", "--bogus"], 2),
    (["fold", "sample.cap", "--cpu", "x"], 2),
    (["fold", "sample.cap", "--cpu", "3-1"], 2),
    (["fold", "sample.cap", "--cpu", "7"], 2),
    (["fold", "sample.cap", "--from", "soon"], 2),
    (["fold", "sample.cap", "--from", "2s", "--until", "1s"], 2),
    (["fold", "sample.cap", "--idle", "--no-idle"], 2),
    (["fold", "sample.cap", "--lines"], 2),
    (["fold", "sample.cap", "-e", "tiny.map", "--inline"], 2),
    (["fold", "sample.cap", "-e", "tiny.elf", "--split-by-cpu"], 2),
    (["fold", "sample.cap", "-e", "tiny.elf", "--split-by-cpu", "--group-by-cpu", "-o", "/tmp/x"], 2),
    (["report", "sample.cap", "--chains", "0"], 2),
    (["report", "sample.cap", "--chains", "many"], 2),
    (["diff", "sample.cap"], 2),
    (["diff", "sample.cap", "sample2.cap", "--top", "0"], 2),
    (["diff", "sample.cap", "sample2.cap", "--table", "--no-table"], 2),
    (["fold", "missing.cap"], 1),
    (["fold", "tiny.elf"], 1),
    (["fold", "sample.cap", "-e", "missing.elf"], 1),
    (["fold", "sample.cap", "-e", "sample.cap"], 1),
    (["fold", "sample.cap", "-e", "tiny.elf", "-o", "/nonexistent/dir/out"], 1),
    (["report", "tiny.map"], 1),
    (["info", "tiny.c"], 1),
    (["info", "/"], 1),
    (["diff", "tiny.c", "sample.cap", "-e", "tiny.elf"], 1),
    (["diff", "tiny.elf", "sample.cap"], 1),
])
def test_bad_input(args, code):
    """In this process (cli.main, as the tool runs it: no interpreter start per case); the cases
    below run the real tool."""
    r = call(*args)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert one_line_error(r), r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("args, code", [([], 2), (["fold", "sample.cap", "--cpu", "x"], 2), (["fold", "missing.cap"], 1),
                                        (["fold", "sample.cap", "-e", "missing.elf"], 1)])
def test_bad_input_from_the_real_tool(args, code):
    """The process itself: its exit status and its one line (argparse's own exit, an OSError)."""
    r = run(*args)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert one_line_error(r), r.stderr
    assert r.stdout == ""


def test_help_lists_every_subcommand():
    r = run("-h")
    assert r.returncode == 0
    for verb in ("fold", "report", "diff", "info"):
        assert verb in r.stdout
