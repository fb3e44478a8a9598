# SPDX-License-Identifier: MIT
"""common.py: what every subcommand shares -- exit codes, opening inputs, loss notes (outputs: output.py)."""
import re
import sys

from . import inputs
from .capture import Capture, CaptureError
from .folded import FoldedError, read_folded
from .symbols import ModuleSymbols, Symbolizer, SymbolError, choose_offset

PROG = "gdbsample-analyze"
EXIT_OK = 0        # done, every input intact
EXIT_FAIL = 1      # an input or output could not be read or written; nothing useful written
EXIT_USAGE = 2     # bad arguments
EXIT_DAMAGED = 3   # a capture was truncated, corrupt or cut short: output covers its good part


class Failure(Exception):
    """Ends the command with a one-line message and an exit code (only main prints it)."""

    def __init__(self, message, code=EXIT_FAIL):
        super().__init__(message)
        self.code = code


def warn(message):
    """A diagnostic line on stderr (data goes to stdout)."""
    sys.stderr.write("%s: %s\n" % (PROG, message))


def open_capture(path):
    """Capture(path), or Failure with its one-line reason."""
    try:
        return Capture(path)
    except CaptureError as e:
        raise Failure(str(e)) from None


def load_symbols(path):
    """Symbolizer for an ELF or map, or Failure."""
    try:
        return Symbolizer.load(path)
    except SymbolError as e:
        raise Failure(str(e)) from None


# Option values as gdbsample reads them (sampler/textnum.c): ASCII digits, nothing int() or float()
# also take (spaces, "+", "_", other scripts' digits, "0x" where decimal is meant).
_OFFSET = re.compile(r"-?(?:0[xX])?[0-9A-Fa-f]{1,40}")
_INTEGER = re.compile(r"-?[0-9]{1,40}")
_REAL = re.compile(r"-?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][-+]?[0-9]{1,4})?")


def offset_arg(text):
    """--kaslr-offset's value: hex, 0x optional, a leading - allowed, 64 bits (argparse type)."""
    import argparse
    value = int(text, 16) if _OFFSET.fullmatch(text) else None
    if value is None or not -(1 << 64) < value < 1 << 64:
        raise argparse.ArgumentTypeError("bad offset %.40r (64-bit hex, e.g. 0x1e00000)" % text)
    return value


def number_arg(text, lo, hi, integer):
    """An option's number in lo..hi (an integer if asked): the value, or ArgumentTypeError --
    never NaN, infinity, or a number too large to compute with."""
    import argparse
    import math
    value = None
    if (_INTEGER if integer else _REAL).fullmatch(text):
        value = int(text) if integer else float(text)
    if value is None or not math.isfinite(value) or not lo <= value <= hi:
        raise argparse.ArgumentTypeError("bad value %.40r (expected %s %s-%s)"
                                         % (text, "an integer" if integer else "a number", lo, hi))
    return value


def count_type(lo, hi):
    """argparse type: an integer in lo..hi."""
    return lambda text: number_arg(text, lo, hi, True)


def real_type(lo, hi):
    """argparse type: a finite number in lo..hi."""
    return lambda text: number_arg(text, lo, hi, False)


def add_offset_argument(p, base=False):
    """--kaslr-offset (and --base-kaslr-offset for BASE inputs) on a subcommand that takes -e."""
    p.add_argument("--kaslr-offset", type=offset_arg, metavar="HEX",
                   help="runtime - link address of the kernel text, to name a capture's frames "
                        "(default: from the capture; see docs/capture-format.md)")
    if base:
        p.add_argument("--base-kaslr-offset", type=offset_arg, metavar="HEX",
                       help="the same for a BASE capture (default --kaslr-offset)")


def base_offset(args):
    """--base-kaslr-offset, else --kaslr-offset, else None (the BASE capture's own offset)."""
    return args.kaslr_offset if args.base_kaslr_offset is None else args.base_kaslr_offset


def symbols_for(syms, cap, forced=None):
    """syms as they name cap's frames: rebased by the KASLR offset chosen for cap (forced, from
    --kaslr-offset, wins), with the guest's modules the capture lists (v4) in front; None stays
    None unless the capture lists modules."""
    mods = cap.load_modules() if hasattr(cap, "load_modules") else []
    if syms is not None:
        syms = syms.rebased(choose_offset(syms, cap.kaslr_offset, cap.stext, forced))
    return ModuleSymbols(syms, mods) if mods else syms


def load_folded(path):
    try:
        return read_folded(path)
    except FoldedError as e:
        raise Failure(str(e)) from None


def is_capture(path):
    """True if path ("-": stdin) starts with the capture magic (Failure if it cannot be opened)."""
    try:
        with inputs.open_input(path) as f:
            return f.read(8) == b"GDBSAMP\0"
    except OSError as e:
        raise Failure("%s: %s" % (inputs.name(path), e.strerror or e)) from None


def summary_notes(cap):
    """After reading cap: warn about summary numbers left out as invalid (they count as absent)."""
    for key, value in cap.summary_bad:
        warn("%s: summary %s %.40r is not a valid number; ignored" % (cap.name, key, str(value)))


def loss_status(cap):
    """After reading cap: warn about what was lost; EXIT_DAMAGED or EXIT_OK."""
    summary_notes(cap)
    if cap.intact:
        return EXIT_OK
    warn("%s: %s; the output covers the %d samples before that"
         % (cap.name, cap.problem, cap.samples_read))
    return EXIT_DAMAGED
