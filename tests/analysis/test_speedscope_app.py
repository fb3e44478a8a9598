# SPDX-License-Identifier: MIT
"""Our speedscope files in the real speedscope app (npm package, `make speedscope-app`), in headless
Chromium: the app imports them without an error and shows our frames with our weights.

The app is opened from a loopback HTTP server (a file:// page may not fetch its profile) as
index.html#profileURL=...&view=sandwich: the sandwich view lists every frame of the active profile
(the first vCPU) in the DOM with its total and self time, which is what is checked; a screenshot
of the default time-ordered view is kept under BUILD/speedscope-app-shots/. Chromium resolves no
host name but 127.0.0.1. Slow (a browser per check): `make test` runs it, `make check` does not.
"""
import functools
import html
import http.server
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import urllib.parse

import conftest
import pytest
from analyze import run

pytestmark = pytest.mark.slow

APP = os.path.join(conftest.BUILD, "speedscope-app", "node_modules", "speedscope", "dist", "release")
SHOTS = os.path.join(conftest.BUILD, "speedscope-app-shots")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                  "--virtual-time-budget=8000"]
CASES = [("sf_small.cap", "sf_tiny.elf"),   # file and line per frame, idle as empty stacks
         ("sample_v3.cap", "tiny.elf")]     # task roots, [user], frames without a symbol


@pytest.fixture(scope="module")
def app():
    if not os.path.exists(os.path.join(APP, "index.html")):
        pytest.skip("the speedscope app is not installed under %s: run `make speedscope-app` (npm; "
                    "make test does it, and says so when the npm registry cannot be reached)" % APP)
    return APP


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("Debian's chromium is not installed (make deps installs it)")
    return exe


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def serve(app, tmp_path):
    """serve(profile path) -> the app's URL with #profileURL on a loopback server of a directory
    holding the app (a symlink) and the profile; the server stops at teardown."""
    root = tmp_path / "www"
    root.mkdir()
    os.symlink(app, root / "app")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = "http://127.0.0.1:%d/" % httpd.server_address[1]

    def url(profile, view=None):
        shutil.copy(profile, root / os.path.basename(profile))
        frag = "profileURL=" + urllib.parse.quote(base + os.path.basename(profile), safe="")
        return base + "app/index.html#" + frag + ("&view=" + view if view else "")

    yield url
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


def chromium_run(exe, url, *extra):
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([exe] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + list(extra) + [url],
                           capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip("chromium cannot run here: %s" % r.stderr.strip().splitlines()[-1:])
    return r.stdout


def cell_text(td):
    """A table cell's own text (the bar under a time is markup without text)."""
    return html.unescape(re.sub(r"<[^>]+>", "", td)).strip()


def sandwich_rows(dom):
    """{frame name: (total ns, self ns)} from the sandwich view's table rows."""
    rows = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", dom, re.S):
        tds = [cell_text(td) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        if len(tds) == 3 and tds[0].endswith(")") and tds[1].endswith(")"):
            rows[tds[2]] = (duration_ns(tds[0]), duration_ns(tds[1]))
    return rows


UNITS = {"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9}


def duration_ns(text):
    """speedscope's `80.44ms (57%)` -> 80440000.0."""
    m = re.match(r"([0-9.]+)\s*(ns|µs|us|ms|s|min) \(", text)
    assert m, text
    return float(m.group(1)) * UNITS[m.group(2)]


def expected(doc):
    """{frame name: (total ns, self ns)} of the active profile, computed from the file."""
    prof = doc["profiles"][doc.get("activeProfileIndex", 0)]
    names = [f["name"] for f in doc["shared"]["frames"]]
    out = {}
    for stack, w in zip(prof["samples"], prof["weights"]):
        for i, f in enumerate(stack):
            t, s = out.get(names[f], (0, 0))
            first = names[f] not in [names[g] for g in stack[:i]]   # recursion counts once
            out[names[f]] = (t + (w if first else 0), s + (w if i == len(stack) - 1 else 0))
    return out


def close(shown, want):
    """speedscope prints two decimals of a unit chosen so at least one digit leads (80.44ms,
    1.00ms): off by at most half of the last digit, 0.5 % of the value."""
    return abs(shown - want) <= 0.005 * max(shown, want) + 1


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("cap,elf", CASES)
def test_app_imports_our_file_and_shows_our_frames(chromium, serve, tmp_path, cap, elf):
    out = tmp_path / (os.path.splitext(cap)[0] + ".speedscope.json")
    r = run("speedscope", cap, "-e", elf, "-o", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    dom = chromium_run(chromium, serve(str(out), "sandwich"), "--dump-dom")
    assert "Something went wrong" not in dom, "the app failed to import %s" % cap
    assert "<title>%s - speedscope</title>" % html.escape(doc["name"]) in dom, "no profile loaded"
    shown, want = sandwich_rows(dom), expected(doc)
    assert set(shown) == set(want), (sorted(shown), sorted(want))
    for name, (total, self_) in want.items():
        assert close(shown[name][0], total) and close(shown[name][1], self_), (name, shown[name], want[name])
    for p in doc["profiles"]:                            # every vCPU in the profile selector
        assert 'title="%s"' % p["name"] in dom

    os.makedirs(SHOTS, exist_ok=True)                    # the time-ordered view, kept for people
    shot = os.path.join(SHOTS, os.path.splitext(cap)[0] + ".png")
    if os.path.exists(shot):
        os.unlink(shot)
    chromium_run(chromium, serve(str(out)), "--screenshot=" + shot, "--window-size=1280,800")
    assert png_size(shot) == (1280, 800)
    from test_flamegraph import decode_png
    _, _, rows = decode_png(shot)
    assert len({px for row in rows for px in row}) > 20, "the app drew nothing"
