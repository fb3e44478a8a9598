# SPDX-License-Identifier: MIT
"""Numbers read from text are read whole or refused: maps, folded counts, option values (issue 22)."""
import pytest

from analyze import call, one_line_error

from gdbsample_analysis.symbols import SymbolError, Symbolizer, parse_map

# Map lines sampler/symbols.c refuses too (tests/sampler/test_strict.c has the same list).
BAD_MAPS = [
    ("ffffffff81000000 T good\nffffffff8O100000 T wrong\n", "line 2: address 'ffffffff8O100000'"),
    ("0xffffffff81000000 T f\n", "line 1: address"),
    ("-1 T f\n", "line 1: address"),
    ("+ff T f\n", "line 1: address"),
    ("ff_ff T f\n", "line 1: address"),                     # int(x, 16) takes underscores
    ("10000000000000000 T f\n", "line 1: address"),         # 65 bits
    ("\u0663 T f\n", "line 1: address"),                     # int() takes any Unicode digit
    ("ffffffff81000000 00000zz0 T f\n", "line 1: not an ELF or nm-style"),
    ("ffffffff81000000 T\n", "line 1: not an ELF or nm-style"),
    ("ffffffff81000000 T f\0g\n", "line 1: a NUL byte"),
]


@pytest.mark.parametrize("text, why", BAD_MAPS)
def test_map_refuses_partial_numbers(tmp_path, text, why):
    with pytest.raises(SymbolError, match=why):
        parse_map(text)
    p = tmp_path / "System.map"
    p.write_text(text)
    with pytest.raises(SymbolError) as e:
        Symbolizer.load(str(p))
    assert str(e.value).startswith(str(p) + ": line ") and "\n" not in str(e.value)


def test_map_fields_and_lines_as_sampler():
    """Lines end at \\n only and fields split on ASCII white space, as in sampler/symbols.c: a
    U+2028, U+0085, form feed or no-break space inside a name stays in it (form feed is ASCII
    white space: a separator, as C's isspace)."""
    text = ("ffffffff81000000 T a\u2028b\nffffffff81000010 T c\x85d\nffffffff81000020 T e\xa0f\n"
            "ffffffffc0000000 t modfn\t[mymod]\r\nffffffff81000030 0000000000000010 T sized\n"
            "FFFFFFFF81000040 W upper\nffffffff81000050 T " + "n" * 300 + "\n")
    assert parse_map(text) == [(0xffffffff81000000, 0, "a\u2028b"), (0xffffffff81000010, 0, "c\x85d"),
                               (0xffffffff81000020, 0, "e\xa0f"), (0xffffffffc0000000, 0, "modfn"),
                               (0xffffffff81000030, 0x10, "sized"), (0xffffffff81000040, 0, "upper"),
                               (0xffffffff81000050, 0, "n" * 300)]
    assert parse_map("ffffffff81000000 T g\fh\n") == [(0xffffffff81000000, 0, "g")]
    assert parse_map("                 U undefined\n                 w weak_undef\n0000000000401000 T main\n") \
        == [(0x401000, 0, "main")]                     # `nm` of a program: undefined symbols skipped


def test_cli_names_file_and_line(tmp_path):
    m = tmp_path / "System.map"
    m.write_text("ffffffff81000000 T good\nffffffff8O100000 T wrong\n")
    r = call("fold", "sample.cap", "-e", str(m))
    assert r.returncode == 1 and one_line_error(r), r.stderr
    assert "%s: line 2: address 'ffffffff8O100000' is not a 64-bit hex number" % m in r.stderr


# Values int()/float() take that no option of gdbsample's means (and gdbsample itself refuses).
LOOSE_NUMBERS = [" 5", "5 ", "+5", "1_0", "\u0663", "\uff15", "0x10", "5\n", "", "1" * 41]


@pytest.mark.parametrize("value", LOOSE_NUMBERS)
def test_option_numbers_strict(value):
    r = call("report", "sample.cap", "-e", "tiny.elf", "--chains", value)
    assert r.returncode == 2 and "--chains" in r.stderr, (value, r.stderr)
    r = call("compare", "sample.cap", "sample.cap", "-e", "tiny.elf", "--tolerance", value)
    assert r.returncode == 2 and "--tolerance" in r.stderr, (value, r.stderr)


@pytest.mark.parametrize("value", [" 1000", "+1000", "1_000", "0x", "\u0661000", "1000 "])
def test_offset_strict(value):
    r = call("fold", "sample.cap", "-e", "tiny.elf", "--kaslr-offset", value)
    assert r.returncode == 2 and "--kaslr-offset" in r.stderr, (value, r.stderr)


def test_option_numbers_that_are_numbers():
    assert call("report", "sample.cap", "-e", "tiny.elf", "--chains", "3").returncode == 0
    for tol in ("2", "2.5", ".5", "1e1", "3."):
        r = call("compare", "sample.cap", "sample.cap", "-e", "tiny.elf", "--tolerance", tol)
        assert r.returncode in (0, 1) and "--tolerance" not in r.stderr, (tol, r.stderr)
    for off in ("0", "-1000", "0x1000", "1e00000"):
        assert call("fold", "sample.cap", "-e", "tiny.elf", "--kaslr-offset", off).returncode == 0, off


@pytest.mark.parametrize("count, why", [("+5", "not an integer"), ("1_0", "not an integer"),
                                        ("\u0663", "not an integer"), ("5\x0b", "not an integer"),
                                        ("-3", "negative"), ("9" * 5000, "too large"),
                                        ("9223372036854775808", "too large")], ids=range(7))
def test_folded_counts_strict(count, why):
    from gdbsample_analysis.folded import FoldedError, parse_folded
    with pytest.raises(FoldedError, match=why):
        parse_folded(["a;b " + count])
    assert parse_folded(["a;b 00000000000000000000000007", "c 9223372036854775807"]) == {"a;b": 7, "c": (1 << 63) - 1}


def test_capture_summary_numbers_strict():
    """A capture's summary numbers are digits as gdbsample writes them; int()/float() took more,
    and splitlines() cut a line at a form feed or U+2028 (control characters print as \\xNN)."""
    from gdbsample_analysis.capture import check_summary, parse_summary
    s = parse_summary("duration_ns 1_000\nsamples \u0663\nidle +5\ndropped 7\nrate_achieved_hz 99.5\n"
                      "pause_p50_us 1e2\nimage a\x0cb\u2028c\nstops 9\n".encode("utf-8"))
    assert s["dropped"] == 7 and s["rate_achieved_hz"] == 99.5 and s["pause_p50_us"] == 100.0 and s["stops"] == 9
    assert s["duration_ns"] == "1_000" and s["samples"] == "\u0663" and s["idle"] == "+5"
    assert s["image"] == "a\\x0cb\u2028c"
    assert [k for k, _ in check_summary(s)] == ["duration_ns", "idle", "samples"]
