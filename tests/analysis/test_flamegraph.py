# SPDX-License-Identifier: MIT
"""flamegraph subcommand: SVG structure, golden output, diff colours, and headless Chromium."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

import regen_golden_visual as regen

DATA = regen.DATA
BASE = os.path.join(DATA, "fg_base.folded")
NEW = os.path.join(DATA, "fg_new.folded")
SVG_NS = "{http://www.w3.org/2000/svg}"
INNER = 1200 - 2 * 10   # drawing width at the default --width (margins of 10 px)


def analyze(*args):
    return subprocess.run([sys.executable, regen.TOOL] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def flamegraph(*args):
    r = analyze("flamegraph", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def frames(svg_text):
    """SVG text -> {name: [(title, x, y, w, fill), ...]} from the frame groups."""
    root = ET.fromstring(svg_text)
    out = {}
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "fg-f":
            continue
        title = g.find(SVG_NS + "title").text
        r = g.find(SVG_NS + "rect")
        out.setdefault(title.split("\n")[0], []).append(
            (title, float(r.get("x")), float(r.get("y")), float(r.get("width")), r.get("fill")))
    return out


def rgb(fill):
    return tuple(int(v) for v in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())


def read_folded(path):
    out = {}
    with open(path) as f:
        for line in f:
            stack, n = line.rsplit(" ", 1)
            out[stack] = out.get(stack, 0) + int(n)
    return out


# -- structure

def test_golden_outputs_are_byte_identical():
    for name in ("fg_base.svg", "fg_diff.svg"):
        r = analyze(*regen.golden_args(name))
        assert r.returncode == 0, r.stderr
        with open(os.path.join(DATA, name)) as f:
            assert r.stdout == f.read(), \
                "%s changed: run tests/analysis/regen_golden_visual.py after an intended change" % name


def test_svg_is_well_formed_with_a_title_per_frame_sized_by_samples():
    svg = flamegraph(BASE)
    fr = frames(svg)
    stacks = read_folded(BASE)
    total = sum(stacks.values())
    inclusive = {}
    for stack, n in stacks.items():
        seen = set()
        for f in stack.split(";"):
            if f not in seen:
                inclusive[f] = inclusive.get(f, 0) + n
                seen.add(f)
    assert set(fr) == set(inclusive) | {"all"}
    assert fr["all"][0][0] == "all\n%d samples, 100.00%%" % total
    spin = fr["spin"][0]
    assert spin[0] == "spin\n120 samples, %.2f%%" % (100.0 * 120 / total)
    assert abs(spin[3] - INNER * 120 / total) < 0.01
    assert abs(fr["_start"][0][3] + fr["_start"][1][3] - INNER) < 0.02   # under cpu0 and cpu1
    # an escaped name survives the round trip
    assert fr['<odd & "name">'][0][0].startswith('<odd & "name">\n5 samples')
    # the root is at the bottom, each child stands right on its parent
    assert fr["work"][0][2] == fr["spin"][0][2] + 16 == fr["_start"][0][2] - 16
    assert ET.fromstring(svg).find(SVG_NS + "script") is not None


def test_children_sorted_alphabetically_inside_their_parent():
    fr = frames(flamegraph(BASE))
    kids = ["copy_words", "hash_block_with_a_rather_long_function_name", "spin"]
    xs = [fr[k][0][1] for k in kids]
    assert xs == sorted(xs)
    work = fr["work"][0]
    assert xs[0] == work[1]                                         # first child at parent's x
    right = fr["spin"][0][1] + fr["spin"][0][3]
    assert abs(right - (work[1] + work[3])) < 0.02                   # last child ends with it
    assert fr["cpu0"][0][1] < fr["cpu1"][0][1]


def test_labels_fit_or_are_cut():
    root = ET.fromstring(flamegraph(BASE, "--width", "600"))
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "fg-f":
            continue
        name = g.find(SVG_NS + "title").text.split("\n")[0]
        label = g.find(SVG_NS + "text").text or ""
        w = float(g.find(SVG_NS + "rect").get("width"))
        assert len(label) * 12 * 0.6 <= w - 6 + 0.01
        assert label in ("", name) or (label.endswith("..") and name.startswith(label[:-2]))
    assert any((g.find(SVG_NS + "text").text or "").endswith("..")
               for g in root.iter(SVG_NS + "g") if g.get("class") == "fg-f")


def test_self_contained_and_deterministic(tmp_path):
    svg = flamegraph(BASE)
    assert re.findall(r"https?://[^\"' ]+", svg) == ["http://www.w3.org/2000/svg"]
    assert "href" not in svg and "@import" not in svg and "url(" not in svg
    with open(BASE) as f:
        lines = f.readlines()
    shuffled = tmp_path / "shuffled.folded"
    shuffled.write_text("".join(reversed(lines)))
    assert flamegraph(shuffled) == svg == flamegraph(BASE)


def test_capture_input_draws_what_fold_gives(tmp_path):
    folded = tmp_path / "small.folded"
    r = analyze("fold", regen.CAPTURE, "-e", regen.ELF, "--group-by-cpu", "-o", folded)
    assert r.returncode == 0, r.stderr
    direct = flamegraph(regen.CAPTURE, "-e", regen.ELF, "--group-by-cpu")
    assert direct == flamegraph(folded)
    assert "spin" in frames(direct)
    idle = frames(flamegraph(regen.CAPTURE, "-e", regen.ELF, "--idle"))
    assert "idle_loop" in idle and "idle_loop" not in frames(direct)


@pytest.mark.parametrize("args, code", [
    ([regen.CAPTURE], 2),                                        # a capture needs -e
    ([BASE, "--cpu", "0"], 2),                                   # filters need a capture
    ([BASE, "--width", "10"], 2),
    (["/nonexistent.folded"], 1),
    ([regen.ELF], 1),                                            # binary, not folded text
    ([os.path.join(DATA, "sf_tiny.c")], 1),                      # text, but not folded
    ([BASE, "-o", "/nonexistent/dir/x.svg"], 1),
])
def test_bad_input_is_one_line_and_nonzero(args, code):
    r = analyze("flamegraph", *args)
    assert r.returncode == code, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("gdbsample-analyze: ")


# -- diff colouring

def diff_checks(fr):
    spin, copy, all_ = fr["spin"][0], fr["copy_words"][0], fr["all"][0]
    r, g, b = rgb(spin[4])
    assert r == 255 and g == b and g < 120                        # grew most: strong red
    r, g, b = rgb(copy[4])
    assert b == 255 and r == g and r < 200                        # shrank: blue
    r, g, b = rgb(fr["cpu1"][0][4])
    assert b == 255 and r == g and r > rgb(copy[4])[0]            # shrank less: paler blue
    assert rgb(all_[4]) == (245, 245, 245)                        # equal totals: unchanged
    assert "\nbase 32.88% -> new 51.85% (+18.98 pp)" in spin[0]


def test_diff_colours_grown_red_and_shrunk_blue():
    diff_checks(frames(flamegraph(NEW, "--diff", BASE)))


def test_differential_folded_from_diff_subcommand(tmp_path):
    d = tmp_path / "d.folded"
    r = analyze("diff", BASE, NEW, "-o", d, "--no-table")
    assert r.returncode == 0, r.stderr
    fr = frames(flamegraph(d))
    assert rgb(fr["spin"][0][4])[1] < 120 and rgb(fr["copy_words"][0][4])[2] == 255
    r = analyze("flamegraph", d, "--diff", BASE)
    assert r.returncode == 2


# -- headless Chromium

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("Debian's chromium is not installed (make deps installs it)")
    return exe


def run_chromium(exe, url, *extra):
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([exe] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + list(extra) +
                           [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
    if r.returncode != 0:
        pytest.skip("chromium cannot run here: %s" % r.stderr.strip().splitlines()[-1:])
    return r.stdout


def screenshot(exe, svg_path, png_path, size="1200,400"):
    run_chromium(exe, "file://" + svg_path, "--screenshot=" + png_path, "--window-size=" + size)
    assert os.path.getsize(png_path) > 0
    return decode_png(png_path)


def decode_png(path):
    """8-bit RGB/RGBA non-interlaced PNG -> (width, height, rows of (r, g, b) tuples)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    width, height, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def centre_pixel(rows, frame):
    """The pixel in the middle of a frame's rectangle, one row below its top: above any label."""
    _, x, y, w, _ = frame
    return rows[int(y) + 1][int(x + w / 2)]


def near(a, b, tol=6):
    return all(abs(p - q) <= tol for p, q in zip(a, b))


@pytest.mark.slow  # drives a real browser: make test, not make check
def test_chromium_renders_a_flame_graph_with_titles(chromium, tmp_path):
    svg = flamegraph(BASE)
    path = tmp_path / "base.svg"
    path.write_text(svg)
    width, height, rows = screenshot(chromium, str(path), str(tmp_path / "base.png"))
    assert (width, height) == (1200, 400)
    colours = {px for row in rows for px in row}
    assert len(colours) > 20, "the page looks blank"
    fr = frames(svg)
    for name in ("spin", "copy_words", "crunch", "all"):
        assert near(centre_pixel(rows, fr[name][0]), rgb(fr[name][0][4])), name
    dom = run_chromium(chromium, "file://" + str(path), "--dump-dom")
    assert "<title>spin\n120 samples, 32.88%</title>" in dom
    assert 'id="fg-title"' in dom and ">Flame Graph</text>" in dom


@pytest.mark.slow  # drives a real browser: make test, not make check
def test_chromium_click_zooms_into_a_frame(chromium, tmp_path):
    svg = flamegraph(BASE)
    click = ('<script type="text/ecmascript"><![CDATA[\n'
             'window.addEventListener("load", function () { setTimeout(function () {\n'
             '  var gs = document.getElementsByClassName("fg-f");\n'
             '  for (var i = 0; i < gs.length; i++)\n'
             '    if (gs[i].getElementsByTagName("title")[0].textContent.split("\\n")[0] === "work")\n'
             '      gs[i].dispatchEvent(new MouseEvent("click"));\n'
             '}, 0); });\n]]></script>\n</svg>\n')
    path = tmp_path / "zoom.svg"
    path.write_text(svg.replace("</svg>\n", click))
    dom = run_chromium(chromium, "file://" + str(path), "--virtual-time-budget=2000", "--dump-dom")
    groups = re.findall(r'<g class="fg-f[^"]*"[^>]*>.*?</g>', dom, re.S)
    by_name = {}
    for g in groups:
        name = re.search(r"<title>([^\n<]*)", g).group(1)
        by_name.setdefault(name, []).append(g)

    def width(g):
        return float(re.search(r'<rect[^>]* width="([0-9.]+)"', g).group(1))

    work = by_name["work"][0]
    assert abs(width(work) - INNER) < 0.02 and "display: none" not in work
    spin = by_name["spin"][0]
    assert abs(width(spin) - INNER * 120 / 210) < 0.05                 # rescaled to the zoom
    assert all("display: none" in g for g in by_name["cpu1"] + by_name["idle_loop"])
    assert "fg-parent" in by_name["all"][0] and abs(width(by_name["all"][0]) - INNER) < 0.02
    assert re.search(r'id="fg-unzoom"[^>]*visibility="visible"', dom)
    # labels are refitted to the zoomed widths: 30 of 210 samples is 168.6 px, 22 characters
    assert re.search(r'<text [^>]*>hash_block_with_a_ra\.\.</text>', by_name[
        "hash_block_with_a_rather_long_function_name"][0])
    assert "hash_block..</text>" in svg


@pytest.mark.slow  # drives a real browser: make test, not make check
def test_chromium_diff_shows_red_and_blue(chromium, tmp_path):
    svg = flamegraph(NEW, "--diff", BASE)
    path = tmp_path / "diff.svg"
    path.write_text(svg)
    _, _, rows = screenshot(chromium, str(path), str(tmp_path / "diff.png"))
    fr = frames(svg)
    diff_checks(fr)
    r, g, b = centre_pixel(rows, fr["spin"][0])
    assert r > 240 and g < 130 and b < 130                              # grown: red on screen
    r, g, b = centre_pixel(rows, fr["copy_words"][0])
    assert b > 240 and r < 210 and g < 210                              # shrunk: blue on screen
