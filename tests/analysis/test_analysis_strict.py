"""Numbers read from text are read whole or refused: maps, folded counts, option values (issue 22)."""
import pytest

import conftest  # noqa: F401  (puts analysis/ on sys.path)
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


def test_cli_names_file_and_line(tmp_path):
    m = tmp_path / "System.map"
    m.write_text("ffffffff81000000 T good\nffffffff8O100000 T wrong\n")
    r = call("fold", "sample.cap", "-e", str(m))
    assert r.returncode == 1 and one_line_error(r), r.stderr
    assert "%s: line 2: address 'ffffffff8O100000' is not a 64-bit hex number" % m in r.stderr
