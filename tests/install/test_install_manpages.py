# SPDX-License-Identifier: MIT
"""The man pages against the tools: every option --help lists is documented, and no other; the
roff is clean for groff (and mandoc when installed)."""
import contextlib
import io
import os
import re
import shutil
import subprocess

import pytest

import conftest
from gdbsample_analysis import cli
from gdbsample_analysis.cli import COMMANDS

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
ANALYZE = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")
MAN_GDBSAMPLE = os.path.join(conftest.ROOT, "install", "gdbsample.1")
MAN_ANALYZE = os.path.join(conftest.ROOT, "install", "gdbsample-analyze.1")
CLI_C = os.path.join(conftest.ROOT, "sampler", "cli.c")

# An option: a dash, a letter, then word characters and dashes; not inside a word (comm-pid).
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def help_groups(text):
    """The options of a --help text, one set per option with its aliases ({"-e", "--elf"}): the
    tokens before the description on lines indented by two spaces that start with a dash
    (getopt's usage and argparse's `options:` alike)."""
    return [set(OPTION.findall(re.split(r"\s{2,}", line.strip())[0]))
            for line in text.splitlines() if re.match(r"  -", line)]


def help_options(text):
    """Every option of a --help text, aliases included."""
    return set().union(*help_groups(text))


def run_help(*argv):
    if argv[0] == ANALYZE:           # its main in this process: a dozen commands, no interpreter each
        return analyze_help(*argv[1:])
    r = subprocess.run(list(argv) + ["--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def analyze_help(*argv):
    """gdbsample-analyze [COMMAND] --help through cli.main (argparse prints, then exits 0), at the
    80 columns a pipe gets."""
    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
            cli.main(list(argv) + ["--help"])
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    assert e.value.code in (0, None) and err.getvalue() == "", err.getvalue()
    return out.getvalue()


def test_analyze_help_in_process_is_the_tools():
    """The in-process help the checks below read is what the tool prints."""
    r = subprocess.run([ANALYZE, "fold", "--help"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, COLUMNS="80"))
    assert r.returncode == 0 and r.stdout == analyze_help("fold"), r.stderr


def roff_text(line):
    """A roff line as plain text: the macro name, font escapes and quotes dropped, \\- as -."""
    line = re.sub(r"^\.[A-Za-z]+\s*", "", line)
    line = re.sub(r"\\f[BIRP]|\\%|\\c|\\&", "", line)
    return line.replace("\\-", "-").replace("\\ ", " ").replace('"', "")


def sections(path):
    """{section: {subsection: [lines]}} of a man page (subsection "" before the first .SS)."""
    out, sec, sub = {}, None, ""
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith(".SH "):
                sec, sub = line[4:].strip('"'), ""
                out[sec] = {sub: []}
            elif line.startswith(".SS ") and sec:
                sub = line[4:].strip('"')
                out[sec][sub] = []
            elif sec:
                out[sec][sub].append(line)
    return out


def tagged_options(lines):
    """The options named in the tags of .TP paragraphs (the line after each .TP)."""
    opts = set()
    for prev, line in zip(lines, lines[1:]):
        if prev.startswith(".TP"):
            opts |= set(OPTION.findall(roff_text(line)))
    return opts


def man_options(path):
    """Every option tagged in the OPTIONS section, over all its subsections."""
    return set().union(*(tagged_options(lines) for lines in sections(path)["OPTIONS"].values()))


def synopses(path):
    """[(command or None, options of its .SY block, whether it takes `filter`s)] from SYNOPSIS."""
    blocks, cur = [], None
    for line in sections(path)["SYNOPSIS"][""]:
        if line.startswith(".SY"):
            cur = []
        elif line.startswith(".YS"):
            words = roff_text(cur[0]).split() if cur else []
            command = words[0] if words and not words[0].startswith("-") else None
            text = " ".join(roff_text(x) for x in cur)
            blocks.append((command, set(OPTION.findall(text)), "filter" in text))
            cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def test_gdbsample_help_and_man_page_name_the_same_options():
    helped = help_options(run_help(GDBSAMPLE))
    documented = man_options(MAN_GDBSAMPLE)
    assert {"-p", "--qmp", "--version", "--help", "-h"} <= helped  # the parser reads --help
    assert helped - documented == set(), "in --help, missing from the man page's OPTIONS"
    assert documented - helped == set(), "in the man page's OPTIONS, not in --help"


def test_every_long_option_gdbsample_parses_is_in_its_help():
    with open(CLI_C) as f:
        parsed = {"--" + n for n in re.findall(r'\{ "([a-z-]+)", (?:no|required)_argument', f.read())}
    assert len(parsed) > 10
    assert parsed - help_options(run_help(GDBSAMPLE)) == set()


def test_analyze_help_and_man_page_name_the_same_options():
    helped = help_options(run_help(ANALYZE))
    for command in COMMANDS:
        helped |= help_options(run_help(ANALYZE, command))
    documented = man_options(MAN_ANALYZE)
    assert {"--version", "--help", "-e", "--elf", "--tolerance"} <= helped
    assert helped - documented == set(), "in some --help, missing from the man page's OPTIONS"
    assert documented - helped == set(), "in the man page's OPTIONS, not in any --help"


def test_analyze_synopsis_of_each_command_matches_its_help():
    """Per command: its SYNOPSIS line (with `filter` standing for the Filters subsection) names
    each option its --help lists, by one of its names (but -h, documented once), and no other."""
    filters = tagged_options(sections(MAN_ANALYZE)["OPTIONS"]["Filters"])
    assert {"--cpu", "--from", "--pid", "--comm", "--no-idle"} <= filters
    blocks = synopses(MAN_ANALYZE)
    assert [c for c, _, _ in blocks if c] == list(COMMANDS), "a SYNOPSIS per command, in order"
    for command, opts, takes_filters in blocks:
        argv = (ANALYZE, command) if command else (ANALYZE,)
        groups = help_groups(run_help(*argv))
        if command:
            groups = [g for g in groups if g != {"-h", "--help"}]
        if takes_filters:
            opts |= filters
        assert [g for g in groups if not g & opts] == [], command
        assert opts - set().union(*groups) == set(), command


def test_analyze_man_page_describes_every_command():
    text = "\n".join(sections(MAN_ANALYZE)["DESCRIPTION"][""])
    described = [roff_text(d) for d in re.findall(r"^\.TP\n\.B (\S+)$", text, re.M)]
    assert described == list(COMMANDS)


@pytest.mark.parametrize("page", [MAN_GDBSAMPLE, MAN_ANALYZE], ids=os.path.basename)
def test_man_page_has_the_sections_a_man_page_needs(page):
    assert list(sections(page))[:3] == ["NAME", "SYNOPSIS", "DESCRIPTION"]
    for s in ("OPTIONS", "EXIT STATUS", "EXAMPLES", "FILES", "SEE ALSO"):
        assert s in sections(page), s


@pytest.mark.parametrize("page", [MAN_GDBSAMPLE, MAN_ANALYZE], ids=os.path.basename)
def test_groff_finds_nothing_to_warn_about(page):
    r = subprocess.run(["groff", "-ww", "-man", "-Tutf8", "-z", page], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize("page", [MAN_GDBSAMPLE, MAN_ANALYZE], ids=os.path.basename)
def test_mandoc_lint_is_clean(page):
    if not shutil.which("mandoc"):
        pytest.skip("mandoc is not installed (make deps)")
    r = subprocess.run(["mandoc", "-T", "lint", page], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stdout + r.stderr


def test_documented_exit_codes_are_the_ones_main_uses():
    """gdbsample(1)'s EXIT STATUS lists 0, 1 and 2: the codes of main.c's exit_code()."""
    codes = [roff_text(line) for lines in [sections(MAN_GDBSAMPLE)["EXIT STATUS"][""]]
             for prev, line in zip(lines, lines[1:]) if prev.startswith(".TP")]
    assert codes == ["0", "1", "2"]
    r = subprocess.run([GDBSAMPLE, "--bogus"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.startswith("gdbsample: ") and r.stderr.count("\n") == 1
