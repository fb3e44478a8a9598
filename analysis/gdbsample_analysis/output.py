# SPDX-License-Identifier: MIT
"""output.py: every file gdbsample-analyze writes -- complete or not at all, and never over an input.

The rule (the same as gdbsample's sampler/output.c): an output that is the same file as an input
(same device and inode: by any name, through a symlink or a hard link) is refused before any
work; otherwise the result goes to a temporary file beside the output (NAME.partial-XXXXXX, in the
directory of the file a symlink points to) and replaces the output with os.replace() only once it
is complete. A failure, an interrupt or an unexpected error removes the temporary file (cli.main
calls abort_all() on every way out), so an existing output is never truncated or half written.
An output that exists and is not a regular file (/dev/null, a FIFO, a terminal) is written
directly: there is nothing to replace. stdout is written directly too, but refused when it is a
regular file that is also an input (`fold X >> X`). A binary output (pprof's gzip) takes bytes, and
refuses a terminal as stdout. A reader of stdout (or of a FIFO) that goes away early (`| head`)
raises BrokenPipeError through write() and commit(): cli.main ends quietly, exit 0.
"""
import os
import stat
import sys
import tempfile

from .common import EXIT_USAGE, Failure

_pending = []   # Outputs with a temporary file not yet renamed into place (abort_all removes them)


def _why(e):
    return e.strerror or str(e)


def same_file(st, path):
    """True if path names the file whose os.stat() result is st (symlinks followed)."""
    try:
        other = os.stat(path)
    except (OSError, ValueError):
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def refuse_inputs(name, st, inputs):
    """Failure (bad arguments) if the output whose stat is st is one of inputs."""
    for path in inputs:
        if path and path != "-" and same_file(st, path):
            raise Failure("%s is the input %s: refusing to overwrite it" % (name, path), EXIT_USAGE)


def stdout_stat():
    """os.fstat of stdout if it is a regular file, else None (a pipe, a terminal, a test's buffer)."""
    try:
        st = os.fstat(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


class Output:
    """-o FILE (or stdout for None / "-"): write() as the result is made, commit() at the end.

    Opened up front, so a bad path or an output that is an input fails before any work."""

    def __init__(self, path, inputs=(), binary=False):
        self.path = None if path in (None, "-") else path
        self.name = self.path or "stdout"   # for messages
        self.tmp = None                     # the temporary file, until commit() renames it
        self.final = None                   # the file the temporary one replaces
        self.f = None                       # where write() goes
        if self.path is None:
            st = stdout_stat()
            if st is not None:
                refuse_inputs("stdout", st, inputs)
            self.f = sys.stdout
            if binary:                      # bytes: the buffer under sys.stdout, never a terminal
                self.f = getattr(sys.stdout, "buffer", None)
                if self.f is None or sys.stdout.isatty():
                    raise Failure("the output is binary: give -o FILE", EXIT_USAGE)
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None                       # a new file (or a dangling symlink: its target)
        except OSError as e:
            raise Failure("%s: %s" % (self.path, _why(e))) from None
        if st is not None:
            refuse_inputs("-o " + self.path, st, inputs)
            if not os.access(self.path, os.W_OK):        # read-only stays protected, as with open()
                raise Failure("%s: Permission denied" % self.path)
        fd = None
        try:
            if st is not None and not stat.S_ISREG(st.st_mode):
                self.f = open(self.path, "wb") if binary else open(self.path, "w", encoding="utf-8")  # a device or FIFO
                return
            self.final = os.path.realpath(self.path)   # a symlink: replace the file, keep the link
            fd, self.tmp = tempfile.mkstemp(prefix=os.path.basename(self.final) + ".partial-",
                                            dir=os.path.dirname(self.final))
            _pending.append(self)
            os.fchmod(fd, st.st_mode & 0o7777 if st is not None else 0o666 & ~_umask())
            self.f = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        except OSError as e:
            if fd is not None and self.f is None:
                os.close(fd)
            self.abort()
            raise Failure("%s: %s" % (self.path, _why(e))) from None

    def write(self, text):
        try:
            self.f.write(text)
        except BrokenPipeError:
            raise                           # the reader went away (`| head`): cli.main ends quietly
        except OSError as e:
            self.abort()
            raise Failure("%s: %s" % (self.name, _why(e))) from None

    def commit(self):
        """Flushes the result and, for a file, renames it into place; Failure (and the
        temporary file removed, the output untouched) if that cannot be done."""
        try:
            self.f.flush()
            if self.path is None:
                return
            if self.tmp is not None:
                os.fsync(self.f.fileno())
            self.f.close()
            if self.tmp is not None:
                os.replace(self.tmp, self.final)
                self.tmp = None
                _pending.remove(self)
        except BrokenPipeError:
            raise
        except OSError as e:
            self.abort()
            raise Failure("%s: %s" % (self.name, _why(e))) from None

    def abort(self):
        """Drops an unfinished result: closes and removes the temporary file (idempotent)."""
        if self.f is not None and self.path is None:
            self.f = None                   # stdout (or its buffer) stays open
        if self.f is not None:
            try:
                self.f.close()
            except (OSError, ValueError):
                pass
        self.f = None
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None
        if self in _pending:
            _pending.remove(self)


def abort_all():
    """Removes the temporary file of every output not committed (cli.main's way out)."""
    for out in list(_pending):
        out.abort()


def reader_gone():
    """stdout's reader went away (`| head` read enough): the rest is dropped. stdout is pointed at
    /dev/null, so that the interpreter's flush at exit has nowhere to fail (no "Broken pipe")."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (AttributeError, OSError, ValueError):
        pass


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def split_path(path, cpu):
    """-o OUT with --split-by-cpu: OUT's name with .cpuN before the extension (out.cpu0.folded)."""
    base, ext = os.path.splitext(path)
    return "%s.cpu%d%s" % (base, cpu, ext)
