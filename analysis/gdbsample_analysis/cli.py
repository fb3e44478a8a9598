# SPDX-License-Identifier: MIT
"""cli.py: gdbsample-analyze's command line -- one subcommand per module, errors on one line."""
import argparse
import functools
import importlib
import signal
import sys

from . import demangle, filters, inputs, output
from .capture import CaptureError
from .common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, PROG, Failure
from .folded import FoldedError
from .symbols import SymbolError
from .version import version

# Subcommands in help order: name -> module in this package. Each module defines HELP (one line),
# add_arguments(parser) and run(args) -> exit code. Adding a subcommand is one line here.
COMMANDS = {
    "fold": "fold",
    "report": "report",
    "diff": "diff",
    "info": "info",
    "speedscope": "speedscope",
    "flamegraph": "flamegraph",
    "pprof": "pprof",
    "perf-script": "perf_script",
    "compare": "compare",
}


# Every argument that names an input file (any subcommand's dest): at most one may be "-".
INPUT_ARGS = ("capture", "input", "base", "new", "inguest", "external", "elf", "base_elf", "diff")


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument raises UsageError instead of printing usage and exiting."""

    def error(self, message):
        raise UsageError(message)


@functools.lru_cache(maxsize=None)
def build_parser():
    """The parser, built once (parse_args leaves it unchanged: main may run many times in-process)."""
    p = Parser(prog=PROG, description="Decode, symbolize, fold, report and diff gdbsample captures.")
    p.add_argument("--version", action="version", version="%s %s" % (PROG, version()),
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = importlib.import_module("." + module, __package__)
        sp = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(sp)
        if any(a.dest == "elf" for a in sp._actions):            # every verb that names frames
            sp.add_argument("--no-demangle", action="store_true",
                            help="keep C++ and Rust symbol names as the file holds them (_ZN..., _R...)")
        sp.set_defaults(run=mod.run)
    return p


class Terminated(Exception):
    pass


def on_sigterm(signum, frame):
    raise Terminated()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        old_term = signal.signal(signal.SIGTERM, on_sigterm)      # killed: still clean up
    except ValueError:
        old_term = None                                            # not the main thread
    try:
        args = build_parser().parse_args(argv)                     # bad flag: one line, exit 2
        if not getattr(args, "command", None):
            raise UsageError("give a command: " + ", ".join(COMMANDS) + " (-h for help)")
        inputs.check_one_stdin(*(getattr(args, a, None) for a in INPUT_ARGS))  # stdin is read once
        demangle.enabled = not getattr(args, "no_demangle", False)
        code = args.run(args)                                      # the subcommand's exit code
        note = filters.left_out_note()                             # what the selection left unsaid
        if note:
            sys.stderr.write("%s: %s\n" % (PROG, note))
        return code
    except UsageError as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return EXIT_USAGE
    except Failure as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return e.code
    except inputs.InputError as e:                                 # stdin a terminal, or two inputs -
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return e.code
    except (CaptureError, SymbolError, FoldedError) as e:         # a reader's error not caught nearer
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return EXIT_FAIL
    except BrokenPipeError:                                        # `| head` has read enough: quiet, 0
        output.reader_gone()
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("%s: interrupted\n" % PROG)
        return 130
    except Terminated:
        sys.stderr.write("%s: terminated\n" % PROG)
        return 128 + signal.SIGTERM
    finally:
        filters.left_out.clear()
        output.abort_all()                                         # unfinished outputs: removed
        demangle.enabled = True                                    # --no-demangle is this run's only
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
