# SPDX-License-Identifier: MIT
"""inputs.py: opening an input file by name, where "-" is stdin -- read once, as bytes, re-readable.

Every input a subcommand takes (captures, folded stacks, reports, -e maps and ELFs) is opened
here. "-" means stdin: its bytes are copied once into an anonymous temporary file (already
unlinked: nothing is left behind, whatever way the process ends), because a capture is read more
than once (its header, the modules chunk written last, then the samples) and readers seek. A
stdin that is a regular file (`< FILE`) is read in place, from its current offset. Each open()
of "-" gets its own position over the same bytes. Only one input of a command may be "-".
A terminal as stdin is refused (a capture is binary; nothing would ever arrive).
"""
import io
import os
import shutil
import stat
import sys
import tempfile

STDIN = "-"
_spool = None          # (fd, offset of the first byte, size) once stdin has been read


class InputError(Exception):
    """stdin cannot be used as an input (one-line message); code: the exit code (2: bad arguments,
    1: stdin could not be read)."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


def name(path):
    """How messages name an input: "stdin" for "-"."""
    return "stdin" if path == STDIN else path


def _stdin():
    global _spool
    if _spool is None:
        try:
            fd = sys.stdin.fileno()
            st = os.fstat(fd)
        except (AttributeError, OSError, ValueError):
            raise InputError("stdin: not open", 1) from None
        if os.isatty(fd):
            raise InputError("stdin is a terminal: pipe the input in, or give a file name instead of -")
        if stat.S_ISREG(st.st_mode):                      # `< FILE`: read where it is
            start = os.lseek(fd, 0, os.SEEK_CUR)
            _spool = (fd, start, st.st_size - start)
        else:                                             # a pipe or socket: copy it once
            tmp = tempfile.TemporaryFile(prefix="gdbsample-analyze-stdin-")
            with os.fdopen(os.dup(fd), "rb", closefd=True) as src:
                try:
                    shutil.copyfileobj(src, tmp, 1 << 20)
                    tmp.flush()
                except OSError as e:
                    raise InputError("stdin: %s" % (e.strerror or e), 1) from None
            _spool = (os.dup(tmp.fileno()), 0, tmp.tell())
            tmp.close()
    return _spool


class _View(io.RawIOBase):
    """A read-only, seekable view of the stdin bytes with a position of its own (pread)."""

    def __init__(self, fd, start, size):
        super().__init__()
        self.fd, self.start, self.size, self.pos = fd, start, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = min(len(b), max(0, self.size - self.pos))
        data = os.pread(self.fd, n, self.start + self.pos) if n else b""
        b[:len(data)] = data
        self.pos += len(data)
        return len(data)

    def seek(self, offset, whence=os.SEEK_SET):
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(22, "Invalid argument")
        self.pos = base + offset
        return self.pos

    def tell(self):
        return self.pos


def open_input(path, text=False, encoding="utf-8", errors="strict", newline=None):
    """The input path ("-": stdin) opened for reading: bytes, or text with these options.
    OSError as open() raises it; InputError if stdin cannot be an input."""
    if path != STDIN:
        if text:
            return open(path, encoding=encoding, errors=errors, newline=newline)
        return open(path, "rb")
    f = io.BufferedReader(_View(*_stdin()))
    return io.TextIOWrapper(f, encoding=encoding, errors=errors, newline=newline) if text else f


def size(path):
    """The input's size in bytes."""
    return _stdin()[2] if path == STDIN else os.path.getsize(path)


def check_one_stdin(*paths):
    """InputError unless at most one of paths is "-" (stdin can be read only once)."""
    if sum(1 for p in paths if p == STDIN) > 1:
        raise InputError("only one input can be - (stdin)")
