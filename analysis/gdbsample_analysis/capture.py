# SPDX-License-Identifier: MIT
"""capture.py: streaming reader for gdbsample's binary capture format (docs/capture-format.md).

Layout (all integers little-endian; version 4 is written, 5 when the file lists phases, versions 1
to 3 still read):
  header, 128 bytes:
     0 magic "GDBSAMP\\0"  8 u16 version (1 to 5)  10 u16 header size (128)  12 u16 arch  14 u16 vCPUs
    16 u32 rate_hz  20 u32 max_frames  24 u64 kernel lo  32 u64 kernel hi  40 u64 start (unix ns)
    48 u8 id kind  49 u8 id len  50 u16 flags  52 id[32]
    v2: 84 s64 KASLR offset (valid if flags bit 1)  92 u64 runtime _stext (0 unknown)  100 u8 methods
    v3: 101 u8 task_os (0 no task attribution, 1 linux, 2 testkernel, 3 described: --tasks)
    (v1: 84..123 reserved; v2: 101..123)  124 u32 CRC-32 of 0..123
  chunks, back to back until the end of the file:
     0 u32 "CHNK"  4 u32 type (1 samples, 2 summary)  8 u32 payload bytes (<= 1 MiB)
    12 u32 records  16 u32 CRC-32 (v1: of the payload; v2: of bytes 4..15, then the payload)
    20 payload
    v2: an unknown chunk type is damage (v1: skipped)
  sample record: u64 t_ns, u16 cpu, u8 flags, u8 n (>= 1), u64 frames[n] (pc, then return addresses)
    t_ns < 2^63 and cpu < 4096, else the sample makes no sense: damage
    v2, flags bit 7 set: u16 L, then L bytes of extension records (u8 type, u8 len, data); type 1
    = the indexes (u8 each) of exact frames (interrupted pcs). Bit 7 is not a sample flag.
    v3: type 2, length 32 = the task current on the vCPU: s32 pid, s32 tgid, u64 task pointer,
    u8 comm[16] (NUL-padded guest bytes; another length: skipped). No record: no task known.
    In v1 and v2 type 2 means nothing (skipped as unknown).
  v4: type 3 chunks (before the summary): the guest's kernel modules, UTF-8 lines, hex numbers:
    "m NAME LO HI [LO HI]" (a module, its text ranges), then its symbols "s ADDR SIZE NAME"
    (Capture.modules: [Module]; a line that does not parse is damage).
  v5: one type 4 chunk (after the samples and modules, before the summary): `gdbsample record
    --phase`'s phase and its occurrences, UTF-8 lines, each ending in \n, records = lines:
    "p NAME BEGIN END" (hex guest addresses), then its occurrences
    "o N BEGIN_NS END_NS BEGIN_CPU END_CPU|- done|open sampled|skipped" (N = 1, 2, 3...)
    (Capture.phases: [Phase]; a line of another shape, a bad name, N out of sequence, an end
    before the begin, another line count: damage; see parse_phases).
  summary payload: UTF-8 "key value" lines, written once, last. Values a reader computes with
    (SUMMARY_NUMBERS) that are not valid numbers are dropped, as if absent (Capture.summary_bad).

Parsing (parse_header, parse_samples, parse_summary) works on bytes; Capture feeds it from the file
one chunk at a time, so memory stays flat in the number of samples.
"""
import collections
import os
import re
import struct
import zlib

from . import inputs

FLAG_IDLE = 1      # halted in hlt
FLAG_IRQOFF = 2    # interrupts off
FLAG_USER = 4      # user mode: only the pc was recorded
FLAG_PARTIAL = 8   # the walk stopped early
FLAG_UNRELIABLE = 16  # the walk did not reach a stack's natural bottom, or a fallback method guessed
FLAG_FIRMWARE = 32  # firmware below the kernel (riscv64 M-mode): only the pc was recorded
FLAG_EXT = 0x80    # v2: an extension block follows the frames (stripped from Sample.flags)

HEADER_FLAG_IDLE_KEPT = 1                 # header flags bit 0: idle samples are in the file
HEADER_FLAG_KASLR = 2                     # header flags bit 1 (v2): the KASLR offset is known
HEADER_FLAG_ICOUNT = 4                    # header flags bit 2: sample times are instruction counts (replay)
MAGIC = b"GDBSAMP\0"
VERSIONS = (1, 2, 3, 4, 5, 6)             # versions this reader knows
HEADER_SIZE = 128
CHUNK_MAGIC = 0x4B4E4843                  # "CHNK" little-endian
CHUNK_HEADER = struct.Struct("<IIIII")    # magic, type, payload length, records, CRC
CHUNK_SAMPLES = 1
CHUNK_SUMMARY = 2
CHUNK_MODULES = 3                         # v4
CHUNK_PHASES = 4                          # v5
CHUNK_MAX = 1 << 20                       # largest payload a reader accepts
EXT_EXACT = 1                             # extension record: indexes of exact frames
EXT_TASK = 2                              # v3 extension record: the current task (TASK, 32 bytes)
EXT_OFFCPU = 3                            # v6 extension record: off-CPU state (u8) and weight (u32)
OFFCPU_STATES = {1: "runnable", 2: "blocked", 3: "uninterruptible"}  # the record's state byte
MAX_CPUS = 4096                           # vCPUs (header) and vCPU indexes (samples) are below this
TIME_MAX = (1 << 63) - 1                  # largest sample time: a CLOCK_MONOTONIC difference, s64
ARCHES = {1: "x86_64", 2: "aarch64", 3: "riscv64"}
ID_KINDS = {0: "none", 1: "build-id", 2: "fnv1a64"}
METHODS = {0: "fp", 1: "cfi", 2: "orc"}   # header `methods` bits: unwinding methods used
TASK_OSES = {1: "linux", 2: "testkernel", 3: "described"}  # header `task_os` (v3): whose tasks the samples name

HEADER = struct.Struct("<8sHHHHIIQQQBBH32sqQBB22xI")
TASK = struct.Struct("<iiQ16s")           # v3 task record: pid, tgid, task pointer, comm
LONE_TASK = struct.pack("<HBB", 2 + TASK.size, EXT_TASK, TASK.size)  # a block of one task record
RECORD = struct.Struct("<QHBB")           # t_ns, cpu, flags, frame count
NO_EXACT = frozenset()                    # shared by every sample without exact frames
# Summary keys a reader computes with -> the number each must be: "count", an integer in
# 0..TIME_MAX; "real", any number in 0..TIME_MAX. Anything else is dropped (Capture.summary_bad).
SUMMARY_NUMBERS = {"duration_ns": "count", "samples": "count", "idle": "count", "dropped": "count",
                   "vcpus": "count", "stops": "count", "rate_requested_hz": "real",
                   "rate_achieved_hz": "real", "pause_p50_us": "real", "pause_p99_us": "real",
                   "pause_max_us": "real", "stopped_fraction": "real",
                   "paused_fraction": "real", "task_verified": "count", "task_hits": "count",
                   "task_misses": "count", "task_renamed": "count", "task_lost": "count",
                   "phase_occurrences": "count", "phase_complete": "count", "phase_sampled_ns": "count",
                   "phase_incomplete": "count", "phase_on_bound": "count", "phase_rescues": "count",
                   "phase_hits": "count"}
_SUMMARY_INT = re.compile(r"-?[0-9]{1,40}")
_SUMMARY_REAL = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# Control characters in summary text (terminal escapes from a hostile file) print as \xNN.
_CONTROLS = {c: "\\x%02x" % c for c in [*range(32), *range(127, 160)] if c != 9}

# exact: indexes of the frames that are interrupted pcs (named by their own address), not return
# addresses; empty for version 1 and most samples. task: the Task current on the vCPU (v3), None
# when the sample has no task record. offcpu (v6): None for a vCPU's sample, else "blocked" or
# "runnable" -- a task that was not running, frames[0] where it resumes, cpu meaningless (0);
# weight: the sample periods it stands for (1 for a vCPU's sample).
Sample = collections.namedtuple("Sample", "time_ns cpu flags frames exact task offcpu weight",
                                defaults=(NO_EXACT, None, None, 1))
# A guest task: pid and tgid (s32), comm (str, sanitized: printable ASCII, other bytes as \xNN, up
# to the first NUL), ptr (the guest address of its task struct).
Task = collections.namedtuple("Task", "pid tgid comm ptr")


class CaptureError(Exception):
    """An unreadable capture or one whose header cannot be trusted (one-line message)."""


def parse_header(data):
    """Header bytes -> dict of fields; raises CaptureError naming what is wrong."""
    if len(data) < HEADER_SIZE:
        raise CaptureError("truncated header (%d of %d bytes)" % (len(data), HEADER_SIZE))
    (magic, version, hsize, arch, ncpus, rate, maxf, klo, khi, start, idkind, idlen, flags,
     kid, kaslr, stext, methods, task_os, crc) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CaptureError("not a gdbsample capture (bad magic)")
    if zlib.crc32(data[:124]) != crc:
        raise CaptureError("header checksum mismatch")
    if version not in VERSIONS or hsize != HEADER_SIZE:
        raise CaptureError("unsupported capture version %d (header size %d); this reader knows "
                           "versions %s and %d" % (version, hsize, ", ".join(map(str, VERSIONS[:-1])),
                                                   VERSIONS[-1]))
    if ncpus > MAX_CPUS:
        raise CaptureError("header says %d vCPUs (at most %d)" % (ncpus, MAX_CPUS))
    if version < 2:   # bytes 84..123 were reserved
        kaslr, stext, methods = 0, 0, 0
    if version < 3:   # byte 101 was reserved
        task_os = 0
    return dict(version=version, arch=arch, ncpus=ncpus, rate_hz=rate, max_frames=maxf,
                kernel_lo=klo, kernel_hi=khi, start_ns=start, kernel_id_kind=idkind,
                kernel_id=kid[:min(idlen, 32)], flags=flags,
                kaslr_offset=kaslr if version >= 2 and flags & HEADER_FLAG_KASLR else None,
                stext=stext, methods=methods, task_os=task_os)


def chunk_types(version):
    """The chunk types a file of this version may hold (another: damage from v2 on, skipped in v1)."""
    return ((CHUNK_SAMPLES, CHUNK_SUMMARY) + ((CHUNK_MODULES,) if version >= 4 else ())
            + ((CHUNK_PHASES,) if version >= 5 else ()))


def chunk_crc(head, payload, version):
    """The CRC a chunk header should carry: v1 of the payload, v2 of header bytes 4..15 too."""
    if version >= 2:
        return zlib.crc32(payload, zlib.crc32(head[4:16]))
    return zlib.crc32(payload)


# Display text of each comm byte: printable ASCII as itself, anything else as \xNN.
_COMM_CHARS = [chr(b) if 32 <= b < 127 else "\\x%02x" % b for b in range(256)]
_tasks = {}          # raw 32-byte task record -> Task: samples of one task share one object
TASKS_CACHED = 1 << 16


def comm_text(raw):
    """A comm field's bytes -> display text: up to the first NUL, printable ASCII kept, any
    other byte as \\xNN (guest memory: a hostile name cannot reach a terminal or a parser)."""
    return "".join([_COMM_CHARS[b] for b in raw.split(b"\0", 1)[0]])


def parse_task(raw):
    """A 32-byte task record -> Task (shared with every other record of the same bytes)."""
    task = _tasks.get(raw)
    if task is None:
        pid, tgid, ptr, comm = TASK.unpack(raw)
        if len(_tasks) >= TASKS_CACHED:
            _tasks.clear()
        task = _tasks[raw] = Task(pid, tgid, comm_text(comm), ptr)
    return task


def parse_extension(data, n, version=2):
    """An extension block -> (frozenset of exact frame indexes (1..n-1; others are ignored), Task
    or None, off-CPU state or None, weight). Unknown record types, v3 task records whose length
    is not 32 and v6 off-CPU records whose length is not 5 or state unknown, are skipped; a record
    running past the block ends it (as the C reader). Before v3 type 2 is unknown, before v6 type 3."""
    exact = task = offcpu = None
    weight = 1
    tasks, offcpus = version >= 3, version >= 6
    pos, end = 0, len(data)
    while pos + 2 <= end:
        rtype, rlen = data[pos], data[pos + 1]
        if pos + 2 + rlen > end:
            break
        if rtype == EXT_EXACT:
            idx = {i for i in data[pos + 2:pos + 2 + rlen] if 0 < i < n}
            exact = idx if exact is None else exact | idx
        elif rtype == EXT_TASK and tasks and rlen == TASK.size:
            task = parse_task(data[pos + 2:pos + 2 + rlen])   # a second one would replace it
        elif rtype == EXT_OFFCPU and offcpus and rlen == 5 and data[pos + 2] in OFFCPU_STATES:
            offcpu = OFFCPU_STATES[data[pos + 2]]
            weight = int.from_bytes(data[pos + 3:pos + 7], "little")
        pos += 2 + rlen
    return (frozenset(exact) if exact else NO_EXACT), task, offcpu, weight


_frame_structs = {}


def parse_samples(payload, records, version=1):
    """A samples payload -> list of Sample; raises ValueError if it is inconsistent."""
    out = []
    append, new, none = out.append, tuple.__new__, NO_EXACT   # new(Sample, ...): no Python frame
    pos, end = 0, len(payload)
    unpack = RECORD.unpack_from
    structs = _frame_structs
    ext = FLAG_EXT if version >= 2 else 0   # v1: bit 7 is nothing special
    strip = ~FLAG_EXT
    lone_task = LONE_TASK if version >= 3 else None
    cache = _tasks
    tmax, cmax = TIME_MAX, MAX_CPUS
    while pos < end:
        if end - pos < 12:
            raise ValueError("sample record cut off at payload byte %d" % pos)
        t, cpu, flags, n = unpack(payload, pos)
        nxt = pos + 12 + 8 * n
        if n == 0:
            raise ValueError("sample with no frames at payload byte %d" % pos)
        if t > tmax or cpu >= cmax:
            raise ValueError("sample at payload byte %d makes no sense (time %d ns, vCPU %d)"
                             % (pos, t, cpu))
        if end < nxt:
            raise ValueError("sample overruns its chunk at payload byte %d" % pos)
        fs = structs.get(n)
        if fs is None:
            fs = structs[n] = struct.Struct("<%dQ" % n)
        if not flags & ext:
            append(new(Sample, (t, cpu, flags, fs.unpack_from(payload, pos + 12), none, None, None, 1)))
            pos = nxt
            continue
        if end - nxt < 2 or end - nxt - 2 < payload[nxt] | payload[nxt + 1] << 8:
            raise ValueError("sample extension overruns its chunk at payload byte %d" % pos)
        if payload[nxt:nxt + 4] == lone_task:       # most v3 samples: one task record, no more
            xend = nxt + 36
            raw = payload[nxt + 4:xend]
            task = cache.get(raw) or parse_task(raw)
            append(new(Sample, (t, cpu, flags & strip, fs.unpack_from(payload, pos + 12), none, task, None, 1)))
        else:
            xend = nxt + 2 + (payload[nxt] | payload[nxt + 1] << 8)
            exact, task, offcpu, weight = parse_extension(payload[nxt + 2:xend], n, version)
            append(new(Sample, (t, cpu, flags & strip, fs.unpack_from(payload, pos + 12), exact, task, offcpu,
                                weight)))
        pos = xend
    if len(out) != records:
        raise ValueError("chunk holds %d samples but its header says %d" % (len(out), records))
    return out


# A kernel module of the guest (v4): name, text ranges [(lo, hi)], symbols [(addr, size, name)]
# at runtime addresses.
Module = collections.namedtuple("Module", "name ranges syms")


def parse_modules(payload, into):
    """A modules chunk's lines appended to into ([Module]); ValueError on a line that does not parse
    (symbols before any module, a bad number, an unknown line kind)."""
    text = payload.decode("utf-8", "replace")
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "m" and len(f) in (4, 6):
            nums = [int(x, 16) for x in f[2:]]
            ranges = [(nums[i], nums[i + 1]) for i in range(0, len(nums), 2) if nums[i + 1] > nums[i]]
            into.append(Module(f[1], ranges, []))
        elif f[0] == "s" and len(f) == 4 and into:
            into[-1].syms.append((int(f[1], 16), int(f[2], 16), f[3]))
        else:
            raise ValueError("modules line %.40r" % line)
    return into


# A phase (v5): its name, the guest addresses of its BEGIN and END breakpoints, its occurrences
# [Occurrence] in order.
Phase = collections.namedtuple("Phase", "name begin_addr end_addr occurrences")
# One occurrence of a phase: n (1, 2, 3...), begin_ns and end_ns (on the samples' clock; end_ns is
# the run's end while open), begin_cpu (the vCPU that entered BEGIN), end_cpu (the one that entered
# END, None while open), done (closed by END, else still open at the end), sampled (False:
# --phase-occurrence chose another, nothing was sampled during it). phases.py: which samples are in it.
Occurrence = collections.namedtuple("Occurrence", "n begin_ns end_ns begin_cpu end_cpu done sampled")
PHASE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")   # a phase's name (the sampler's --phase NAME=...)
_PHASE_LINE = re.compile(r"p (%s) ([0-9a-f]{1,16}) ([0-9a-f]{1,16})" % PHASE_NAME.pattern)
_OCCURRENCE_LINE = re.compile(r"o ([0-9]{1,19}) ([0-9]{1,19}) ([0-9]{1,19}) ([0-9]{1,4}) ([0-9]{1,4}|-) "
                              r"(done|open) (sampled|skipped)")


def parse_occurrence(m, n_expected):
    """An `o` line's match -> Occurrence; ValueError if its numbers make no sense."""
    n, begin, end, bcpu = (int(x) for x in m.group(1, 2, 3, 4))
    done, ecpu = m.group(6) == "done", m.group(5)
    if n != n_expected:
        raise ValueError("occurrence %d where %d comes next" % (n, n_expected))
    if end > TIME_MAX or end < begin:
        raise ValueError("occurrence %d ends at %d ns, before it began (%d ns) or past 2^63"
                         % (n, end, begin))
    if done == (ecpu == "-"):    # closed by a vCPU's END, or still open: never both, never neither
        raise ValueError("occurrence %d is %s with end vCPU %s" % (n, m.group(6), ecpu))
    ecpu = None if ecpu == "-" else int(ecpu)
    if bcpu >= MAX_CPUS or (ecpu or 0) >= MAX_CPUS:
        raise ValueError("occurrence %d names a vCPU of 4096 or more" % n)
    return Occurrence(n, begin, end, bcpu, ecpu, done, m.group(7) == "sampled")


def parse_phases(payload, records, before=()):
    """A phases chunk (v5) -> [Phase]: those of before, then this chunk's (whose first lines may
    continue before's last phase). A new list: before is left as it was, so a damaged chunk adds
    nothing. ValueError saying what makes it damage: not UTF-8, a last line without its \\n, a line
    count other than records, a line of another shape, an `o` line before any `p` line, a name
    given twice, occurrences out of sequence, an end before its begin."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    if text and not text.endswith("\n"):
        raise ValueError("its last line is cut off (no \\n)")
    lines = text.split("\n")[:-1]
    if len(lines) != records:
        raise ValueError("%d lines where its header says %d" % (len(lines), records))
    out = list(before)
    if out:
        out[-1] = out[-1]._replace(occurrences=list(out[-1].occurrences))
    names = {p.name for p in out}
    for i, line in enumerate(lines, 1):
        try:
            m = _OCCURRENCE_LINE.fullmatch(line)
            if m and not out:
                raise ValueError("an occurrence before any phase")
            if m:
                occ = out[-1].occurrences
                occ.append(parse_occurrence(m, len(occ) + 1))
                continue
            m = _PHASE_LINE.fullmatch(line)
            if m and m.group(1) in names:
                raise ValueError("phase %s listed twice" % m.group(1))
            if not m:
                raise ValueError("%.60r" % line)
        except ValueError as e:
            raise ValueError("line %d: %s" % (i, e)) from None
        names.add(m.group(1))
        out.append(Phase(m.group(1), int(m.group(2), 16), int(m.group(3), 16), []))
    return out


def parse_summary(payload):
    """Summary text -> dict; numbers become int or float, other values stay str (the rest of the
    line: values may contain spaces; control characters as \\xNN)."""
    out = {}
    for line in payload.decode("utf-8", "replace").split("\n"):   # gdbsample ends lines with \n only
        key, _, value = line.translate(_CONTROLS).strip().partition(" ")
        if not key:
            continue
        value = value.strip()
        if _SUMMARY_INT.fullmatch(value):      # what gdbsample writes (%llu, %.6g): int()/float()
            value = int(value)                 # also took "1_0", " 5" and other scripts' digits
        elif _SUMMARY_REAL.fullmatch(value):
            value = float(value)               # 400 digits or 1e400: inf, dropped as invalid
        out[key] = value
    return out


def valid_number(value, kind):
    """True if a summary value is the number kind ("count" or "real") of SUMMARY_NUMBERS says."""
    if kind == "count":
        return type(value) is int and 0 <= value <= TIME_MAX
    return type(value) in (int, float) and 0 <= value <= TIME_MAX   # not NaN, not infinite


def check_summary(summary):
    """Drops the values of SUMMARY_NUMBERS keys that are not valid numbers (text, negative,
    NaN, infinite, too large) from summary: -> [(key, value)] dropped, in key order."""
    bad = sorted((k, v) for k, v in summary.items()
                 if k in SUMMARY_NUMBERS and not valid_number(v, SUMMARY_NUMBERS[k]))
    for k, _ in bad:
        del summary[k]
    return bad


class Capture:
    """One capture file: header fields on open, then samples() streams the chunks once."""

    def __init__(self, path):
        self.path = path                            # as given: "-" is stdin (inputs.py)
        self.name = inputs.name(path)               # for messages
        try:
            with inputs.open_input(path) as f:
                head = f.read(HEADER_SIZE)
            self.size = inputs.size(path)
        except OSError as e:
            raise CaptureError("%s: %s" % (self.name, e.strerror or e)) from None
        try:
            fields = parse_header(head)
        except CaptureError as e:
            raise CaptureError("%s: %s" % (self.name, e)) from None
        self.version = fields["version"]            # format version (1 to 5)
        self.arch = fields["arch"]                  # 1 x86_64, 2 aarch64, 3 riscv64
        self.ncpus = fields["ncpus"]                # vCPUs sampled
        self.rate_hz = fields["rate_hz"]            # requested rate
        self.max_frames = fields["max_frames"]      # --max-frames of the run
        self.kernel_lo = fields["kernel_lo"]        # kernel range, inclusive
        self.kernel_hi = fields["kernel_hi"]
        self.start_ns = fields["start_ns"]          # run start, ns since the Unix epoch
        self.kernel_id_kind = fields["kernel_id_kind"]  # 0 none, 1 build-id, 2 FNV-1a 64
        self.kernel_id = fields["kernel_id"]        # id bytes (kernel_id_kind says what)
        self.flags = fields["flags"]                # bit 0: idle samples included, bit 1: KASLR known
        self.icount = bool(self.flags & HEADER_FLAG_ICOUNT)  # `gdbsample replay`: times are instruction counts
        self.kaslr_offset = fields["kaslr_offset"]  # runtime - link address of the text; None unknown
        self.stext = fields["stext"]                # runtime address of _stext, 0 unknown (v1: 0)
        self.methods = fields["methods"]            # unwinding methods used, bit 1 << k (METHODS)
        self.task_os_id = fields["task_os"]         # v3 header byte 101: 0 none, 1 linux, 2 testkernel, 3 described
        # whose tasks the samples name: "linux", "testkernel", "described", None without task attribution
        self.task_os = (None if not self.task_os_id else
                        TASK_OSES.get(self.task_os_id, "unknown(%d)" % self.task_os_id))
        self.intact = None          # after samples(): True if every byte was read cleanly
        self.problem = None         # after samples(): one line, what was lost and where
        self.summary = {}           # the summary chunk, {} if absent (invalid numbers left out)
        self.summary_bad = []       # [(key, value)] of summary numbers left out as invalid
        self.modules = []           # after samples(), v4: the guest's kernel modules [Module]
        self.phases = []            # after samples(), v5: gdbsample record --phase's phases [Phase]
        self.chunks_ok = 0          # good chunks read
        self.bytes_lost = 0         # bytes from the first bad chunk to the end of the file
        self.samples_read = 0       # samples delivered
        self.last_time_ns = None    # time of the last sample delivered

    def samples(self):
        """Yields every Sample of every good chunk, in file order; stops at the first bad one."""
        self.intact, self.problem, self.summary, self.summary_bad = None, None, {}, []
        self.modules, self.phases = [], []
        self.chunks_ok = self.bytes_lost = self.samples_read = 0
        self.last_time_ns = None
        try:
            f = inputs.open_input(self.path)
        except OSError as e:
            raise CaptureError("%s: %s" % (self.name, e.strerror or e)) from None
        known = chunk_types(self.version)
        with f:
            f.seek(HEADER_SIZE)
            offset = HEADER_SIZE
            while True:
                head = f.read(CHUNK_HEADER.size)
                if not head:
                    break
                bad = None
                promised = None
                if len(head) < CHUNK_HEADER.size:
                    bad = "truncated chunk header"
                else:
                    magic, ctype, length, records, crc = CHUNK_HEADER.unpack(head)
                    if magic != CHUNK_MAGIC or length > CHUNK_MAX:
                        bad = "bad chunk header"
                    else:
                        promised = records if ctype == CHUNK_SAMPLES else None
                        payload = f.read(length)
                        if len(payload) < length:
                            bad = "truncated chunk (%d of %d payload bytes)" % (len(payload), length)
                        elif chunk_crc(head, payload, self.version) != crc:
                            bad = "chunk checksum mismatch"
                            if self.version >= 2:
                                promised = None   # the CRC covers type and count: trust neither
                        elif self.version >= 2 and ctype not in known:
                            bad = "unknown chunk type %d" % ctype
                        elif ctype == CHUNK_MODULES and ctype in known:
                            try:
                                parse_modules(payload, self.modules)
                            except ValueError as e:
                                bad = "bad modules chunk: %s" % e
                        elif ctype == CHUNK_PHASES and ctype in known:
                            try:
                                self.phases = parse_phases(payload, records, self.phases)
                            except ValueError as e:
                                bad = "bad phases chunk: %s" % e
                        elif ctype == CHUNK_SAMPLES:
                            try:
                                batch = parse_samples(payload, records, self.version)
                            except ValueError as e:
                                bad = "bad samples chunk: %s" % e
                if bad:
                    self._lost(bad, offset, promised)
                    return
                self.chunks_ok += 1
                offset += CHUNK_HEADER.size + length
                if ctype == CHUNK_SUMMARY:
                    self.summary = parse_summary(payload)
                    self.summary_bad = check_summary(self.summary)
                elif ctype == CHUNK_SAMPLES and batch:
                    self.samples_read += len(batch)
                    self.last_time_ns = batch[-1].time_ns
                    yield from batch
                    batch = None
        if not self.summary:
            self.intact = False
            self.problem = ("no summary chunk: the run was cut short (gdbsample killed?), up to its "
                            "last second of samples is missing")
        else:
            self.intact = True

    def load_modules(self):
        """v4: the modules chunks' list [Module], read ahead of samples() (the list is written
        last, and namers need it first). A damaged file gives what was read before the damage
        (samples() reports the damage)."""
        if self.version < 4:
            return []
        return self._read_ahead(CHUNK_MODULES, lambda payload, records, mods: parse_modules(payload, mods),
                                [])[0]

    def load_phases(self):
        """v5: (the phases chunk's [Phase], None), read ahead of samples() (the phases are written
        last, and filters need them first); at damage met on the way (a bad chunk header, a
        truncated or bad phases chunk), (what was read before it, one line saying what)."""
        if self.version < 5:
            return [], None
        return self._read_ahead(CHUNK_PHASES, parse_phases, [])

    def _read_ahead(self, ctype, parse, got):
        """Skips from chunk header to chunk header; got = parse(payload, records, got) for each
        chunk of type ctype whose CRC is good -> (got, None), or (got, why) at the first damage."""
        try:
            with inputs.open_input(self.path) as f:
                f.seek(HEADER_SIZE)
                while True:
                    head = f.read(CHUNK_HEADER.size)
                    if not head:
                        return got, None
                    if len(head) < CHUNK_HEADER.size:
                        return got, "truncated chunk header"
                    magic, t, length, records, crc = CHUNK_HEADER.unpack(head)
                    if magic != CHUNK_MAGIC or length > CHUNK_MAX:
                        return got, "bad chunk header"
                    if t != ctype:
                        if f.seek(length, os.SEEK_CUR) > self.size:
                            return got, "truncated chunk"
                        continue
                    payload = f.read(length)
                    if len(payload) < length:
                        return got, "truncated chunk"
                    if chunk_crc(head, payload, self.version) != crc:
                        return got, "chunk checksum mismatch"
                    got = parse(payload, records, got)
        except OSError as e:
            return got, e.strerror or str(e)
        except ValueError as e:
            return got, "bad %s chunk: %s" % ("phases" if ctype == CHUNK_PHASES else "modules", e)

    def _lost(self, why, offset, promised):
        self.intact = False
        self.bytes_lost = self.size - offset
        more = "" if promised is None else ", a chunk of %d samples" % promised
        self.problem = ("%s at byte %d, after %d good chunks (%d samples): lost the last %d bytes%s"
                        % (why, offset, self.chunks_ok, self.samples_read, self.bytes_lost, more))

    def arch_name(self):
        return ARCHES.get(self.arch, "unknown(%d)" % self.arch)

    def method_names(self):
        """The header's unwinding methods, e.g. ["fp", "orc"] (bit order; unknown bits as bitN)."""
        return [METHODS.get(k, "bit%d" % k) for k in range(8) if self.methods >> k & 1]
