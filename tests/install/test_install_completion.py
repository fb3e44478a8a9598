# SPDX-License-Identifier: MIT
"""Bash completion (install/gdbsample.bash, under bash-completion): options come from each tool's
--help, commands and fixed choices complete."""
import os
import shlex
import subprocess

import pytest

import conftest

BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
SCRIPT = os.path.join(conftest.ROOT, "install", "gdbsample.bash")
GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
ANALYZE = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")


def complete(function, *words):
    """COMPREPLY of a completion function for the command line `words` (cursor at the end)."""
    if not os.path.exists(BASH_COMPLETION):
        pytest.skip("bash-completion is not installed (make deps)")
    line = " ".join(shlex.quote(w) if w else "''" for w in words)
    script = f"""
source {BASH_COMPLETION}
source {shlex.quote(SCRIPT)}
COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}
{function} "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, cwd=conftest.ROOT)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_gdbsample_options_come_from_its_help():
    got = complete("_gdbsample", GDBSAMPLE, "--")
    assert {"--qmp", "--domain", "--connect", "--version", "--help", "--max-pause"} <= got


def test_gdbsample_commands_and_choices():
    assert complete("_gdbsample", GDBSAMPLE, "d") == {"dump"}
    assert complete("_gdbsample", GDBSAMPLE, "-p", "1", "--unwind", "") == {"auto", "fp", "cfi", "orc"}
    assert complete("_gdbsample", GDBSAMPLE, "-f", "f") == {"folded"}
    assert "--interval" in complete("_gdbsample", GDBSAMPLE, "top", "--")
    assert complete("_gdbsample", GDBSAMPLE, "top", "--interval", "-") == set()  # a number to type


def test_analyze_commands_come_from_its_help():
    from gdbsample_analysis.cli import COMMANDS
    assert complete("_gdbsample_analyze", ANALYZE, "") == set(COMMANDS)
    assert complete("_gdbsample_analyze", ANALYZE, "--") == {"--help", "--version"}


def test_analyze_options_are_those_of_the_command():
    fold = complete("_gdbsample_analyze", ANALYZE, "fold", "--")
    assert {"--elf", "--split-by-cpu", "--lines", "--cpu", "--task-format"} <= fold
    assert "--tolerance" not in fold
    assert complete("_gdbsample_analyze", ANALYZE, "info", "--") == {"--help", "--output", "--json"}
    assert complete("_gdbsample_analyze", ANALYZE, "fold", "--task-format", "comm-") == {"comm-pid"}
