# SPDX-License-Identifier: MIT
"""flamegraph.py: `flamegraph` -- folded stacks or a capture as a self-contained interactive SVG.

Layout: the root ("all") sits at the bottom, each frame's children stand on it side by side in
alphabetical order, every frame as wide as its samples. The SVG carries its own small script:
hover shows the frame, its samples and share (also in each frame's <title>, so it works without
script), click zooms into a frame, "Reset Zoom" (or Escape) undoes it, "Search" highlights frames
matching a regular expression and says what share of the samples they cover. Nothing is fetched
from the network. The same input always gives a byte-identical file.

With a base profile (--diff BASE) frames are still sized by the new profile, and coloured by how
their inclusive share changed: red grew, blue shrank, the stronger the larger the change in
percentage points (comparing shares is normalising both profiles to equal totals). Frames only in
the base have no width in the new profile and are not drawn; their loss shows on their parents.
The differential folded output of `diff` (`stack BASE NEW` a line) is drawn the same way.

Inputs: a capture (folded as `fold` does, with -e ELF and the usual filters) or a folded file,
told apart by the capture magic; BASE likewise. A capture's tasks are root frames as `fold` makes
them (--task-format; by default comm when every capture drawn has task attribution, unless
--group-by-cpu).
"""
import html
import re
import zlib

from . import common, filters, inputs, output
from .common import EXIT_DAMAGED, EXIT_FAIL, EXIT_USAGE, Failure
from .fold import add_task_format_argument, fold_capture, shared_task_format
from .folded import FoldedError, parse_folded, safe_name

HELP = "draw a capture or folded stacks as an interactive SVG flame graph (--diff BASE: red/blue)"

FRAME_H = 16          # height of one frame, px
FONT_SIZE = 12        # label font size, px (monospace, so label fit can be computed here)
CHAR_W = 0.6          # advance of one monospace character, in font sizes
PAD_X = 10            # left/right margin, px
PAD_TOP = 46          # room for the title, the buttons and the diff legend
PAD_BOTTOM = 30       # room for the details line
MIN_WIDTH = 0.1       # frames narrower than this (px, unzoomed) are left out, as FlameGraph does
DIFF_SCALE_PP = 1.0   # a change of at least this many pp can saturate the colour
ROOT_NAME = "all"


class Node:
    """One frame in the merged call tree."""
    __slots__ = ("name", "count", "base", "children")

    def __init__(self, name):
        self.name = name        # frame name
        self.count = 0          # samples through this frame (new profile)
        self.base = 0           # samples through this frame in the base profile (diff only)
        self.children = {}      # name -> Node


def build_tree(stacks, base=None):
    """dict stack -> count (and an optional base dict) -> root Node of the merged tree."""
    root = Node(ROOT_NAME)
    for stacks_, attr in ((stacks, "count"), (base or {}, "base")):
        for stack, n in stacks_.items():
            if n <= 0:
                continue
            node = root
            setattr(node, attr, getattr(node, attr) + n)
            for frame in stack.split(";"):
                child = node.children.get(frame)
                if child is None:
                    child = node.children[frame] = Node(frame)
                node = child
                setattr(node, attr, getattr(node, attr) + n)
    return root


def layout(root, width):
    """Root Node -> [(x, depth, w, node)] in drawing order (parents before children, left to
    right); x and w in px within [0, width]; frames narrower than MIN_WIDTH are dropped."""
    out = []
    if root.count <= 0:
        return out
    scale = width / root.count
    pending = [(root, 0.0, 0)]
    while pending:
        node, x, depth = pending.pop()
        w = node.count * scale
        out.append((x, depth, w, node))
        kids = []
        cx = x
        for name in sorted(node.children):
            child = node.children[name]
            cw = child.count * scale
            if cw >= MIN_WIDTH:
                kids.append((child, cx, depth + 1))
            cx += cw
        pending.extend(reversed(kids))
    return out


def hot_colour(name):
    """A warm colour picked from the frame name, so a function keeps its colour across graphs."""
    h = zlib.crc32(name.encode("utf-8", "surrogateescape"))
    r = 205 + (h & 0xFF) * 50 // 255
    g = 70 + ((h >> 8) & 0xFF) * 160 // 255
    b = ((h >> 16) & 0xFF) * 60 // 255
    return "rgb(%d,%d,%d)" % (r, g, b)


def diff_colour(delta_pp, scale_pp):
    """Change in percentage points -> white (none) through red (grew) or blue (shrank)."""
    t = min(1.0, abs(delta_pp) / scale_pp) if scale_pp > 0 else 0.0
    c = round(245 - 190 * t)
    if delta_pp > 0:
        return "rgb(255,%d,%d)" % (c, c)
    if delta_pp < 0:
        return "rgb(%d,%d,255)" % (c, c)
    return "rgb(245,245,245)"


def fit_label(name, w):
    """The part of name that fits a frame w px wide ('..' marks a cut), or '' if too narrow."""
    fits = int((w - 6) / (FONT_SIZE * CHAR_W))
    if fits >= len(name):
        return name
    if fits < 3:
        return ""
    return name[:fits - 2] + ".."


def pct(n, total):
    return 100.0 * n / total if total else 0.0


def frame_title(node, total, base_total):
    """The hover text of one frame: name on the first line (the script reads it from there)."""
    s = "%s\n%d sample%s, %.2f%%" % (safe_name(node.name), node.count, "" if node.count == 1 else "s",
                                     pct(node.count, total))
    if base_total is not None:
        b, n = pct(node.base, base_total), pct(node.count, total)
        s += "\nbase %.2f%% -> new %.2f%% (%+.2f pp)" % (b, n, n - b)
    return s


def render_svg(stacks, title="Flame Graph", width=1200, base=None):
    """dict stack -> count (plus a base dict for a diff graph) -> SVG document text."""
    width = int(width)
    root = build_tree(stacks, base)
    total = root.count
    base_total = root.base if base is not None else None
    inner = width - 2 * PAD_X
    boxes = layout(root, inner)
    depth = max((d for _, d, _, _ in boxes), default=0) + 1
    height = PAD_TOP + depth * FRAME_H + PAD_BOTTOM
    scale_pp = DIFF_SCALE_PP
    if base is not None:
        for _, _, _, node in boxes:
            scale_pp = max(scale_pp, abs(pct(node.count, total) - pct(node.base, base_total)))

    esc = html.escape
    out = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
           '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" '
           'viewBox="0 0 %d %d" onload="fg_init()">\n' % (width, height, width, height),
           '<style>\n%s</style>\n' % STYLE,
           '<script type="text/ecmascript"><![CDATA[\n%s]]></script>\n'
           % SCRIPT.replace("@PAD_X@", str(PAD_X)).replace("@INNER@", str(inner))
           .replace("@FS@", repr(FONT_SIZE * CHAR_W)).replace("@TOTAL@", str(total)),
           '<rect x="0" y="0" width="%d" height="%d" fill="%s"/>\n'
           % (width, height, "#ffffff" if base is not None else "#fbf7ef"),
           '<text id="fg-title" x="%d" y="24" text-anchor="middle">%s</text>\n'
           % (width // 2, esc(safe_name(title))),
           '<text id="fg-unzoom" class="fg-btn" x="%d" y="24" visibility="hidden">Reset Zoom'
           '</text>\n' % PAD_X,
           '<text id="fg-search" class="fg-btn" x="%d" y="24" text-anchor="end">Search</text>\n'
           % (width - PAD_X),
           '<text id="fg-matched" x="%d" y="%d" text-anchor="end"> </text>\n'
           % (width - PAD_X, height - 10),
           '<text id="fg-details" x="%d" y="%d"> </text>\n' % (PAD_X, height - 10)]
    if base is not None:
        out.append('<text id="fg-legend" x="%d" y="40" text-anchor="middle">red grew, blue shrank:'
                   ' change of share, base %d / new %d samples</text>\n'
                   % (width // 2, base_total, total))
    out.append('<g id="fg-frames">\n')
    for x, d, w, node in boxes:
        y = PAD_TOP + (depth - 1 - d) * FRAME_H
        if base is not None:
            fill = diff_colour(pct(node.count, total) - pct(node.base, base_total), scale_pp)
        else:
            fill = hot_colour(node.name)
        out.append('<g class="fg-f"><title>%s</title><rect x="%.2f" y="%d" width="%.2f" '
                   'height="%d" fill="%s" rx="2"/><text x="%.2f" y="%d">%s</text></g>\n'
                   % (esc(frame_title(node, total, base_total)), PAD_X + x, y, w, FRAME_H - 1,
                      fill, PAD_X + x + 3, y + FRAME_H - 4, esc(fit_label(safe_name(node.name), w))))
    out.append('</g>\n</svg>\n')
    return "".join(out)


def add_arguments(p):
    p.add_argument("input", metavar="FOLDED|CAPTURE")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or map, for a capture")
    p.add_argument("--base-elf", metavar="ELF", help="a different ELF for a BASE capture (default -e)")
    common.add_offset_argument(p, base=True)
    p.add_argument("-o", "--output", metavar="OUT", help="write the SVG to OUT (default stdout)")
    p.add_argument("--title", default=None, help='title line (default "Flame Graph" or "Differential'
                   ' Flame Graph")')
    p.add_argument("--width", type=common.count_type(200, 100000), default=1200, metavar="PX",
                   help="image width, 200-100000 (default 1200)")
    p.add_argument("--diff", metavar="BASE", help="colour by change from BASE (capture or folded)")
    p.add_argument("--group-by-cpu", action="store_true", help="a cpuN root frame for captures")
    add_task_format_argument(p)
    filters.add_arguments(p, off_cpu=True)


_DIFF_LINE = re.compile(r"(.+) ([0-9]{1,18}) ([0-9]{1,18})")  # counts below folded.COUNT_MAX


def parse_profile_text(text, name):
    """Folded text -> (stacks, None), or differential folded text (every line `stack BASE NEW`,
    as `diff` writes) -> (new stacks, base stacks)."""
    lines = [ln.rstrip("\r") for ln in text.split("\n")]   # folded.py's lines: \n ends one, nothing else
    lines = [ln for ln in lines if ln.strip()]
    matches = [_DIFF_LINE.fullmatch(ln) for ln in lines]
    if lines and all(matches):
        base, new = {}, {}
        for m in matches:
            base[m.group(1)] = base.get(m.group(1), 0) + int(m.group(2))
            new[m.group(1)] = new.get(m.group(1), 0) + int(m.group(3))
        return new, base
    try:
        return parse_folded(lines, name), None
    except FoldedError as e:
        raise Failure(str(e)) from None


def load(path, elf, args, statuses, kaslr_offset=None, task_fmt=None):
    """A capture or folded file -> (stacks, base stacks or None); a capture's status is
    appended to statuses. kaslr_offset: --kaslr-offset for a capture (None: its own); task_fmt:
    its task roots (fold.task_format)."""
    if not common.is_capture(path):
        filters.capture_only(args, path, [("group_by_cpu", "--group-by-cpu")])
        try:
            with inputs.open_input(path, text=True, newline="") as f:   # no \r -> \n translation
                text = f.read()
        except OSError as e:
            raise Failure("%s: %s" % (inputs.name(path), e.strerror or e)) from None
        except UnicodeDecodeError:
            raise Failure("%s: neither a capture nor folded text" % inputs.name(path)) from None
        return parse_profile_text(text, inputs.name(path))
    if not elf:
        raise Failure("%s is a capture: give -e ELF to name its frames" % path, EXIT_USAGE)
    cap = common.open_capture(path)
    flt = filters.Filter(args)
    flt.check(cap)
    stacks = fold_capture(cap, common.load_symbols(elf), flt, args.group_by_cpu, kaslr_offset=kaslr_offset,
                          task_fmt=task_fmt)
    statuses.append(common.loss_status(cap))
    return stacks, None


def run(args):
    out = output.Output(args.output, (args.input, args.diff, args.elf, args.base_elf))  # not an input
    statuses = []
    fmt = shared_task_format(args.task_format, (args.input, args.diff), args.group_by_cpu)  # comm if all have tasks
    stacks, base = load(args.input, args.elf, args, statuses, args.kaslr_offset, fmt)  # folded, diff or capture
    if args.diff:
        if base is not None:
            raise Failure("%s is already differential: --diff does not apply" % args.input,
                          EXIT_USAGE)
        base, again = load(args.diff, args.base_elf or args.elf, args, statuses, common.base_offset(args), fmt)
        if again is not None:
            raise Failure("--diff %s: BASE must be a plain profile" % args.diff, EXIT_USAGE)
    empty = EXIT_DAMAGED if EXIT_DAMAGED in statuses else EXIT_FAIL   # nothing left before damage: 3
    if not sum(stacks.values()):
        raise Failure("%s: no samples to draw" % args.input, empty)
    if base is not None and not sum(base.values()):
        raise Failure("%s: the base profile has no samples" % (args.diff or args.input), empty)
    title = args.title or ("Differential Flame Graph" if base is not None else "Flame Graph")
    out.write(render_svg(stacks, title, args.width, base))                # sorted, deterministic
    out.commit()
    return max(statuses, default=common.EXIT_OK)


STYLE = """\
text { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; fill: #000; }
#fg-title { font-size: 17px; }
#fg-legend { font-size: 11px; fill: #444; }
.fg-btn { cursor: pointer; fill: #1c4f8c; }
.fg-btn:hover { text-decoration: underline; }
.fg-f { cursor: pointer; }
.fg-f text { pointer-events: none; }
.fg-f:hover rect { stroke: #000; stroke-width: 0.6; }
.fg-parent rect { opacity: 0.5; }
.fg-match rect { fill: rgb(230,0,230); }
"""

# The viewer. Frames are <g class="fg-f"> holding <title> (name on its first line), <rect> and
# <text>; the unzoomed geometry is read once from the rects, zoom rescales from it.
SCRIPT = """\
"use strict";
var PAD_X = @PAD_X@, INNER = @INNER@, CHAR = @FS@, TOTAL = @TOTAL@;
var frames = [], details, unzoomBtn, matchedText;

function fg_init() {
  details = document.getElementById("fg-details");
  unzoomBtn = document.getElementById("fg-unzoom");
  matchedText = document.getElementById("fg-matched");
  var gs = document.getElementsByClassName("fg-f");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.getElementsByTagName("rect")[0];
    var t = g.getElementsByTagName("title")[0].textContent;
    var f = {g: g, rect: r, text: g.getElementsByTagName("text")[0],
             name: t.split("\\n")[0], info: t.split("\\n").slice(1).join(", "),
             x: parseFloat(r.getAttribute("x")) - PAD_X, w: parseFloat(r.getAttribute("width")),
             y: parseFloat(r.getAttribute("y"))};
    frames.push(f);
    g.addEventListener("click", zoomer(f));
    g.addEventListener("mouseover", shower(f));
    g.addEventListener("mouseout", function () { details.textContent = " "; });
  }
  unzoomBtn.addEventListener("click", unzoom);
  document.getElementById("fg-search").addEventListener("click", search);
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { unzoom(); }
  });
}

function zoomer(f) { return function () { zoom(f); }; }
function shower(f) { return function () { details.textContent = f.name + " (" + f.info + ")"; }; }

function label(f, w) {
  var fits = Math.floor((w - 6) / CHAR);
  if (fits >= f.name.length) { return f.name; }
  if (fits < 3) { return ""; }
  return f.name.substring(0, fits - 2) + "..";
}

function place(f, x, w, show) {
  f.g.style.display = show ? "" : "none";
  if (!show) { return; }
  f.rect.setAttribute("x", (PAD_X + x).toFixed(2));
  f.rect.setAttribute("width", w.toFixed(2));
  f.text.setAttribute("x", (PAD_X + x + 3).toFixed(2));
  f.text.textContent = label(f, w);
}

function zoom(z) {
  var eps = 1e-6, scale = INNER / z.w;
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i];
    var inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;
    var below = f.y > z.y;  /* nearer the root */
    var isAncestor = below && f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;
    f.g.classList.toggle("fg-parent", isAncestor);
    if (isAncestor) {
      place(f, 0, INNER, true);
    } else if (inside && f.y <= z.y) {
      place(f, (f.x - z.x) * scale, f.w * scale, true);
    } else {
      place(f, 0, 0, false);
    }
  }
  unzoomBtn.setAttribute("visibility", "visible");
}

function unzoom() {
  for (var i = 0; i < frames.length; i++) {
    frames[i].g.classList.remove("fg-parent");
    place(frames[i], frames[i].x, frames[i].w, true);
  }
  unzoomBtn.setAttribute("visibility", "hidden");
}

function search() {
  var term = window.prompt("Search frames (regular expression); empty clears", "");
  if (term === null) { return; }
  var re = null;
  if (term !== "") {
    try { re = new RegExp(term); } catch (e) { matchedText.textContent = "bad expression"; return; }
  }
  var hits = [];
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i], m = re !== null && re.test(f.name);
    f.g.classList.toggle("fg-match", m);
    if (m) { hits.push(f); }
  }
  /* share covered: widths of matches not nested inside another match */
  hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
  var covered = 0, end = -1;
  for (var j = 0; j < hits.length; j++) {
    if (hits[j].x + hits[j].w > end + 1e-6) {
      covered += hits[j].x >= end ? hits[j].w : hits[j].x + hits[j].w - end;
      end = hits[j].x + hits[j].w;
    }
  }
  matchedText.textContent = re === null ? " " :
    "Matched: " + (100 * covered / INNER).toFixed(1) + "% of " + TOTAL + " samples";
}
"""
