"""analyze.py: run gdbsample-analyze for the analysis tests."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")
TOOL = os.path.join(ROOT, "analysis", "gdbsample-analyze")


def run(*args, cwd=DATA):
    """CompletedProcess of gdbsample-analyze ARGS (text), run in tests/analysis/data."""
    return subprocess.run([TOOL] + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def one_line_error(r):
    """True if stderr is exactly one `gdbsample-analyze: ...` line."""
    lines = r.stderr.splitlines()
    return len(lines) == 1 and lines[0].startswith("gdbsample-analyze: ")
