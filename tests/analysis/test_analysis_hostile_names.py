# SPDX-License-Identifier: MIT
"""Every writer's output parses for hostile frame names and titles (issue 22): the SVG as XML,
speedscope as JSON, pprof as profile.proto, folded and perf-script text line by line. Names come
in through a folded file and through a symbol map naming a capture's frames; a fixed list of the
classic cases plus names drawn by a seeded generator (a property test: 200 names, any failure
prints the seed and the name)."""
import gzip
import json
import random
import xml.etree.ElementTree as ET

import pytest

import capgen
from analyze import call

from gdbsample_analysis import pprof
from gdbsample_analysis.folded import parse_folded

A, B, M, S = 0xffffffff80100000, 0xffffffff80100025, 0xffffffff80100065, 0xffffffff801000a9  # tiny.elf
# Pieces a name is built from: XML's forbidden characters, its markup, JSON's and JavaScript's line
# ends, folded's separators' neighbours, terminal escapes, non-characters, astral characters.
PIECES = ["\x01", "\x08", "\x0b", "\x0c", "\x1b[31m", "\x1f", "\x7f", "\x85", "\u2028", "\u2029",
          "\ufffe", "\uffff", "\U0001f600", "\ud7ff", "\ue000", "<", ">", "&", "&amp;", '"', "'",
          "]]>", "</script>", "<!--", "\\", "\\x3b", "%s", "{", "}", "[", "]", ",", ":", "a", "fn_1"]
FIXED = ["a\x01b", "\x1b[2Jclear", "x\x0cy", "x\x0by", "x\ry", "tab\tin", "<svg onload=alert(1)>",
         "a&b", "q\"uote'", "ls\u2028ps\u2029", "nel\x85", "\ufffe\uffff", "]]>", "\x7f", "x" * 100000]
SPACE = " \t\x0b\x0c\r"   # map fields split on these (and lines on \n): map names avoid them


def generated(seed, n):
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def folded_file(tmp_path, names):
    """A folded file whose frames are names (one stack per name, under a shared root)."""
    lines = ["cpu0;root;%s %d" % (n.replace(";", "_").replace("\n", "_"), i + 1) for i, n in enumerate(names)]
    p = tmp_path / "h.folded"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p, parse_folded(lines)


def map_file(tmp_path, names):
    """tiny.elf's four functions renamed after names (white space dropped: it splits a map line)."""
    clean = ["".join("_" if c in SPACE + "\n" else c for c in n) or "_" for n in names]
    p = tmp_path / "h.map"
    p.write_text("".join("%x T %s\n" % (a, n) for a, n in zip((A, B, M, S), clean)), encoding="utf-8")
    return p


def capture(tmp_path):
    p = tmp_path / "h.cap"
    samples = [(1_000_000 * k, k % 2, 0, ((A + 4, M + 9, S + 3), (B + 1, M + 9, S + 3))[k % 2])
               for k in range(20)]
    capgen.write(p, samples, {"duration_ns": 20_000_000, "dropped": 0}, per_chunk=8, version=2)
    return p


def check_svg(path, names=()):
    root = ET.parse(str(path)).getroot()            # well-formed XML, or ParseError
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    firsts = {t.split("\n")[0] for t in titles if t}
    for n in names:                                   # every frame's name is its title's first line
        assert any(n in f or shown(n) == f for f in firsts), (n[:60], sorted(firsts)[:8])
    return root


def shown(name):
    """A name as every output shows it (folded.safe_name)."""
    from gdbsample_analysis.folded import safe_name   # here: the test runs (and fails) before it existed
    return safe_name(name)


def check_json(path):
    text = path.read_text(encoding="utf-8")
    json.loads(text)
    assert "\u2028" not in text and "\u2029" not in text   # JavaScript before ES2019 ends a line there


def check_pprof(path):
    prof = pprof.schema().Profile()
    prof.ParseFromString(gzip.decompress(path.read_bytes()))
    return prof


def check_lines(path, fields_min=1):
    """Text output: UTF-8, lines end only at \\n, no control character but \\t."""
    text = path.read_bytes().decode("utf-8")
    for line in text.split("\n"):
        assert not any(ord(c) < 0x20 and c != "\t" or c in "\x7f\x85\u2028\u2029" for c in line), repr(line[:80])
    return text


def run_all(tmp_path, names, title):
    """Every writer over names, from folded text and from a capture named by a map."""
    fp, stacks = folded_file(tmp_path, names)
    out = tmp_path / "o"
    r = call("flamegraph", fp, "--title", title, "-o", out)
    assert r.returncode == 0, r.stderr
    check_svg(out, [n for n in names if "\n" not in n and ";" not in n and len(n) < 200])
    r = call("flamegraph", fp, "--diff", fp, "--title", title, "-o", out)
    assert r.returncode == 0, r.stderr
    check_svg(out)
    for verb, check in (("pprof", check_pprof), ("perf-script", check_lines)):
        r = call(verb, fp, "-o", out)
        assert r.returncode == 0, (verb, r.stderr)
        check(out)
    m, cap = map_file(tmp_path, names[:4] + ["pad"] * (4 - len(names[:4]))), capture(tmp_path)
    for verb, check in (("flamegraph", check_svg), ("speedscope", check_json), ("pprof", check_pprof),
                        ("perf-script", check_lines), ("fold", check_lines), ("report", check_lines)):
        args = [verb, cap, "-e", m, "-o", out] + (["--title", title] if verb == "flamegraph" else [])
        r = call(*args)
        assert r.returncode == 0, (verb, r.stderr)
        check(out)
    r = call("fold", cap, "-e", m, "-o", out)
    text = out.read_text(encoding="utf-8")
    assert sum(parse_folded(text.split("\n")).values()) == 20   # every sample one line: no name split it


@pytest.mark.parametrize("name", FIXED, ids=range(len(FIXED)))
def test_fixed_hostile_names(tmp_path, name):
    run_all(tmp_path, [name, "plain"], name)


def test_generated_hostile_names(tmp_path):
    seed = 22
    names = generated(seed, 200)
    for i in range(0, len(names), 8):                 # 25 rounds of 8 names
        batch = names[i:i + 8]
        try:
            run_all(tmp_path, batch, "".join(batch))
        except Exception as e:
            raise AssertionError("seed %d names %r: %s" % (seed, batch, e)) from e


def test_flamegraph_lines_end_at_newline_only(tmp_path):
    """issue 22: flamegraph split lines at form feed and U+2028 (str.splitlines), where fold, diff
    and the other subcommands read one frame: a graph of 5 samples, two stacks, as diff sees."""
    p = tmp_path / "ff.folded"
    p.write_bytes("cpu0;a\u2028b;c 2\ncpu0;d\x0ce 3\r\n".encode("utf-8"))
    out = tmp_path / "o.svg"
    r = call("flamegraph", p, "-o", out)
    assert r.returncode == 0, r.stderr
    firsts = [t.text.split("\n")[0] for t in check_svg(out).iter("{http://www.w3.org/2000/svg}title")]
    assert firsts == ["all", "cpu0", "a\\u2028b", "c", "d\\x0ce"]
    assert "5 samples" in ET.parse(str(out)).getroot().find(".//{http://www.w3.org/2000/svg}title").text
    r = call("diff", p, p, "--no-table")
    assert r.returncode == 0 and len(r.stdout.split("\n")) == 3, r.stdout
