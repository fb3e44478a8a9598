# SPDX-License-Identifier: MIT
"""gdbsample-analyze in pipes: "-" reads stdin for every input that is a file (captures as bytes,
folded and report text, -e maps and ELFs), through a real pipe, giving the same bytes as the file
argument; a reader that goes away early (`| head`) ends every subcommand quietly with exit 0."""
import gzip
import importlib.util
import os
import subprocess
import types

import pytest

import analyze
from gdbsample_analysis import cli
import conftest

DATA = analyze.DATA
GOLDEN = os.path.join(DATA, "golden")

# Every subcommand, with its stdin-capable input first: (name, args with the input as {in}, the
# file that input is, extra files the subcommand writes with -o {out}, or None for stdout).
COMMANDS = [
    ("fold", ["fold", "{in}", "-e", "tiny.elf"], "sample.cap"),
    ("report", ["report", "{in}", "-e", "tiny.elf"], "sample.cap"),
    ("diff", ["diff", "sample.cap", "{in}", "-e", "tiny.elf"], "sample2.cap"),
    ("info", ["info", "{in}"], "sample_v3.cap"),
    ("speedscope", ["speedscope", "{in}", "-e", "tiny.elf"], "sample.cap"),
    ("flamegraph", ["flamegraph", "{in}"], "fg_base.folded"),
    ("flamegraph-capture", ["flamegraph", "{in}", "-e", "tiny.elf"], "sample.cap"),
    ("pprof", ["pprof", "{in}", "-e", "tiny.elf"], "sample.cap"),
    ("perf-script", ["perf-script", "{in}", "-e", "tiny.elf"], "sample.cap"),
    ("compare", ["compare", "{in}", "sample.cap", "-e", "tiny.elf"], os.path.join("golden", "report.txt")),
    ("elf-on-stdin", ["fold", "sample.cap", "-e", "{in}", "--lines"], "tiny.elf"),
    ("map-on-stdin", ["report", "sample.cap", "-e", "{in}"], "tiny.map"),
]
IDS = [c[0] for c in COMMANDS]
COMMANDS_BY_NAME = set(cli.COMMANDS)      # one case per subcommand for the pipe closed early
assert COMMANDS_BY_NAME <= set(IDS), "every subcommand needs a pipe case"


def tool(args, stdin=None, stdout=subprocess.PIPE):
    return subprocess.Popen([analyze.TOOL] + args, cwd=DATA, stdin=stdin, stdout=stdout,
                            stderr=subprocess.PIPE)


def pprof_text(data, path):
    """A gzipped profile.proto as text, with its input named "stdin" (its comment names it)."""
    spec = importlib.util.spec_from_file_location("pipes_profile_pb2",
                                                  os.path.join(conftest.BUILD, "pprof", "profile_pb2.py"))
    pb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pb)
    prof = pb.Profile.FromString(gzip.decompress(data))
    table = [t.replace(path, "stdin") for t in prof.string_table]
    del prof.string_table[:]
    prof.string_table.extend(table)
    return str(prof).encode()


def by_name(args):
    """The output for the file given by name: in this process (quicker), but pprof's binary
    output needs a real stdout."""
    if args[0] == "pprof":
        return subprocess.run([analyze.TOOL] + args, cwd=DATA, capture_output=True, timeout=60)
    r = analyze.call(*args)
    return types.SimpleNamespace(returncode=r.returncode, stdout=r.stdout.encode("utf-8", "surrogateescape"),
                                 stderr=r.stderr.encode("utf-8", "surrogateescape"))


def fill(args, value):
    return [value if a == "{in}" else a for a in args]


@pytest.mark.parametrize("name, args, path", COMMANDS, ids=IDS)
def test_dash_reads_stdin_through_a_pipe_as_the_file_would_be_read(name, args, path):
    """The input written into a pipe (not a file redirected: stdin cannot seek) gives the output
    the file's name gives, byte for byte (where the output names its input: "stdin"), and the
    same exit code."""
    want = by_name(fill(args, path))
    assert want.returncode in (0, 1), want.stderr   # compare: 1 is "differs", still an answer
    with open(os.path.join(DATA, path), "rb") as f:
        data = f.read()
    p = tool(fill(args, "-"), stdin=subprocess.PIPE)
    out, err = p.communicate(data, timeout=60)
    if out[:2] == b"\x1f\x8b":                                 # pprof: compare the decoded profiles
        out, want.stdout = (pprof_text(x, path) for x in (out, want.stdout))
    named = want.stdout.replace(path.encode(), b"stdin")        # info names its input: "stdin"
    assert p.returncode == want.returncode and out in (want.stdout, named), err.decode()
    assert err in (want.stderr, want.stderr.replace(path.encode(), b"stdin"))


def test_a_redirected_file_is_read_in_place_from_its_offset(tmp_path):
    """`< FILE` (stdin a regular file) after something already read part of it: from there on."""
    with open(os.path.join(DATA, "sample.cap"), "rb") as f:
        cap = f.read()
    path = tmp_path / "x"
    path.write_bytes(b"JUNK" + cap)
    with open(path, "rb") as f:
        f.seek(4)
        r = subprocess.run([analyze.TOOL, "fold", "-", "-e", "tiny.elf"], cwd=DATA, stdin=f,
                           capture_output=True, text=True, timeout=60)
    with open(os.path.join(GOLDEN, "fold.folded")) as g:
        assert (r.returncode, r.stdout) == (0, g.read()), r.stderr


def test_gdbsample_folded_piped_into_flamegraph_dash():
    """`gdbsample -f folded | gdbsample-analyze flamegraph -`: folded text from a pipe makes the
    same SVG as the file."""
    want = analyze.run("flamegraph", "fg_base.folded").stdout
    with open(os.path.join(DATA, "fg_base.folded"), "rb") as f:
        p = tool(["flamegraph", "-"], stdin=f)       # a regular file first, then a pipe:
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out.decode() == want, err
    cat = subprocess.Popen(["cat", os.path.join(DATA, "fg_base.folded")], stdout=subprocess.PIPE)
    p = tool(["flamegraph", "-"], stdin=cat.stdout)
    cat.stdout.close()
    out, err = p.communicate(timeout=60)
    assert cat.wait(timeout=60) == 0
    assert p.returncode == 0 and out.decode() == want, err


def test_two_inputs_on_stdin_are_refused():
    r = analyze.run("diff", "-", "-")
    assert r.returncode == 2 and analyze.one_line_error(r) and "only one input can be -" in r.stderr
    r = analyze.run("fold", "-", "-e", "-")
    assert r.returncode == 2 and analyze.one_line_error(r)


def test_a_terminal_on_stdin_is_refused_not_waited_on():
    """A capture from a terminal would never arrive: one line, exit 2, at once."""
    master, slave = os.openpty()
    try:
        r = subprocess.run([analyze.TOOL, "info", "-"], cwd=DATA, stdin=slave, capture_output=True,
                           text=True, timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert r.returncode == 2 and analyze.one_line_error(r) and "stdin is a terminal" in r.stderr


def test_damage_on_stdin_is_named_stdin():
    with open(os.path.join(DATA, "sample.cap"), "rb") as f:
        cap = f.read()
    p = tool(["info", "-"], stdin=subprocess.PIPE)
    out, err = p.communicate(cap[:-30], timeout=60)
    assert p.returncode == 3 and out.startswith(b"capture     stdin (") and b"DAMAGED" in out, err
    p = tool(["info", "-"], stdin=subprocess.PIPE)
    out, err = p.communicate(b"not a capture", timeout=60)
    assert p.returncode == 1 and err.startswith(b"gdbsample-analyze: stdin: "), err


@pytest.mark.parametrize("name, args, path", [c for c in COMMANDS if c[0] in COMMANDS_BY_NAME],
                         ids=sorted(COMMANDS_BY_NAME, key=IDS.index))
@pytest.mark.slow  # a process per subcommand: make test, not make check
def test_a_reader_that_goes_away_ends_the_command_quietly_with_exit_0(name, args, path):
    """stdout a pipe whose reading end is already closed (`| head` that has read enough): the
    first write fails with EPIPE; no message, no traceback, exit 0."""
    r, w = os.pipe()
    os.close(r)                                  # nobody will ever read: every write is EPIPE
    try:
        p = tool(fill(args, path), stdout=w)
    finally:
        os.close(w)
    _, err = p.communicate(timeout=60)
    assert (p.returncode, err) == (0, b"")


@pytest.mark.slow
def test_head_reading_one_line_of_a_long_output(tmp_path):
    """A real `| head -n 1` on an output longer than the pipe's buffer (about 1 MB of perf script):
    head gets the first line, gdbsample-analyze ends quietly, exit 0."""
    big = tmp_path / "big.folded"
    with open(big, "w") as f:
        for i in range(20000):
            f.write("root;mid_%05d;leaf_%05d %d\n" % (i, i, 1 + i % 3))
    err, first = tmp_path / "err", tmp_path / "first"
    r = subprocess.run(["bash", "-c", '"$0" perf-script "$1" 2>"$2" | head -n 1 >"$3"; exit ${PIPESTATUS[0]}',
                        analyze.TOOL, str(big), str(err), str(first)], timeout=60)
    assert r.returncode == 0 and err.read_bytes() == b""
    assert first.read_bytes().count(b"\n") == 1
