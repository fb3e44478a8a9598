"""capture.py: streaming reader for gdbsample's binary capture format (docs/capture-format.md).

Layout (all integers little-endian):
  header, 128 bytes:
     0 magic "GDBSAMP\\0"  8 u16 version (1)  10 u16 header size (128)  12 u16 arch  14 u16 vCPUs
    16 u32 rate_hz  20 u32 max_frames  24 u64 kernel lo  32 u64 kernel hi  40 u64 start (unix ns)
    48 u8 id kind  49 u8 id len  50 u16 flags  52 id[32]  84..123 reserved  124 u32 CRC-32 of 0..123
  chunks, back to back until the end of the file:
     0 u32 "CHNK"  4 u32 type (1 samples, 2 summary)  8 u32 payload bytes (<= 1 MiB)
    12 u32 records  16 u32 CRC-32 of the payload  20 payload
  sample record: u64 t_ns, u16 cpu, u8 flags, u8 n (>= 1), u64 frames[n] (pc, then return addresses)
  summary payload: UTF-8 "key value" lines, written once, last.

Parsing (parse_header, parse_samples, parse_summary) works on bytes; Capture feeds it from the file
one chunk at a time, so memory stays flat in the number of samples.
"""
import collections
import os
import struct
import zlib

FLAG_IDLE = 1      # halted in hlt
FLAG_IRQOFF = 2    # interrupts off
FLAG_USER = 4      # user mode: only the pc was recorded
FLAG_PARTIAL = 8   # the walk stopped early

HEADER_FLAG_IDLE_KEPT = 1                 # header flags bit 0: idle samples are in the file
MAGIC = b"GDBSAMP\0"
VERSION = 1
HEADER_SIZE = 128
CHUNK_MAGIC = 0x4B4E4843                  # "CHNK" little-endian
CHUNK_HEADER = struct.Struct("<IIIII")    # magic, type, payload length, records, CRC
CHUNK_SAMPLES = 1
CHUNK_SUMMARY = 2
CHUNK_MAX = 1 << 20                       # largest payload a reader accepts
ARCHES = {1: "x86_64", 2: "aarch64", 3: "riscv64"}
ID_KINDS = {0: "none", 1: "build-id", 2: "fnv1a64"}

HEADER = struct.Struct("<8sHHHHIIQQQBBH32s40sI")
RECORD = struct.Struct("<QHBB")           # t_ns, cpu, flags, frame count

Sample = collections.namedtuple("Sample", "time_ns cpu flags frames")


class CaptureError(Exception):
    """An unreadable capture or one whose header cannot be trusted (one-line message)."""


def parse_header(data):
    """Header bytes -> dict of fields; raises CaptureError naming what is wrong."""
    if len(data) < HEADER_SIZE:
        raise CaptureError("truncated header (%d of %d bytes)" % (len(data), HEADER_SIZE))
    (magic, version, hsize, arch, ncpus, rate, maxf, klo, khi, start, idkind, idlen, flags,
     kid, _reserved, crc) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CaptureError("not a gdbsample capture (bad magic)")
    if zlib.crc32(data[:124]) != crc:
        raise CaptureError("header checksum mismatch")
    if version != VERSION or hsize != HEADER_SIZE:
        raise CaptureError("unsupported capture version %d (header size %d); this reader knows "
                           "version %d" % (version, hsize, VERSION))
    return dict(version=version, arch=arch, ncpus=ncpus, rate_hz=rate, max_frames=maxf,
                kernel_lo=klo, kernel_hi=khi, start_ns=start, kernel_id_kind=idkind,
                kernel_id=kid[:min(idlen, 32)], flags=flags)


_frame_structs = {}


def parse_samples(payload, records):
    """A samples payload -> list of Sample; raises ValueError if it is inconsistent."""
    out = []
    pos, end = 0, len(payload)
    unpack = RECORD.unpack_from
    while pos < end:
        if end - pos < 12:
            raise ValueError("sample record cut off at payload byte %d" % pos)
        t, cpu, flags, n = unpack(payload, pos)
        if n == 0:
            raise ValueError("sample with no frames at payload byte %d" % pos)
        if end - pos < 12 + 8 * n:
            raise ValueError("sample overruns its chunk at payload byte %d" % pos)
        fs = _frame_structs.get(n)
        if fs is None:
            fs = _frame_structs[n] = struct.Struct("<%dQ" % n)
        out.append(Sample(t, cpu, flags, fs.unpack_from(payload, pos + 12)))
        pos += 12 + 8 * n
    if len(out) != records:
        raise ValueError("chunk holds %d samples but its header says %d" % (len(out), records))
    return out


def parse_summary(payload):
    """Summary text -> dict; numbers become int or float, other values stay str."""
    out = {}
    for line in payload.decode("utf-8", "replace").splitlines():
        key, _, value = line.strip().partition(" ")
        if not key:
            continue
        value = value.strip()
        for conv in (int, float):
            try:
                value = conv(value)
                break
            except ValueError:
                pass
        out[key] = value
    return out


class Capture:
    """One capture file: header fields on open, then samples() streams the chunks once."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                head = f.read(HEADER_SIZE)
            self.size = os.path.getsize(path)
        except OSError as e:
            raise CaptureError("%s: %s" % (path, e.strerror or e)) from None
        try:
            fields = parse_header(head)
        except CaptureError as e:
            raise CaptureError("%s: %s" % (path, e)) from None
        self.version = fields["version"]            # format version (1)
        self.arch = fields["arch"]                  # 1 x86_64, 2 aarch64, 3 riscv64
        self.ncpus = fields["ncpus"]                # vCPUs sampled
        self.rate_hz = fields["rate_hz"]            # requested rate
        self.max_frames = fields["max_frames"]      # --max-frames of the run
        self.kernel_lo = fields["kernel_lo"]        # kernel range, inclusive
        self.kernel_hi = fields["kernel_hi"]
        self.start_ns = fields["start_ns"]          # run start, ns since the Unix epoch
        self.kernel_id_kind = fields["kernel_id_kind"]  # 0 none, 1 build-id, 2 FNV-1a 64
        self.kernel_id = fields["kernel_id"]        # id bytes (kernel_id_kind says what)
        self.flags = fields["flags"]                # bit 0: idle samples included
        self.intact = None          # after samples(): True if every byte was read cleanly
        self.problem = None         # after samples(): one line, what was lost and where
        self.summary = {}           # the summary chunk, {} if absent
        self.chunks_ok = 0          # good chunks read
        self.bytes_lost = 0         # bytes from the first bad chunk to the end of the file
        self.samples_read = 0       # samples delivered
        self.last_time_ns = None    # time of the last sample delivered

    def samples(self):
        """Yields every Sample of every good chunk, in file order; stops at the first bad one."""
        self.intact, self.problem, self.summary = None, None, {}
        self.chunks_ok = self.bytes_lost = self.samples_read = 0
        self.last_time_ns = None
        try:
            f = open(self.path, "rb")
        except OSError as e:
            raise CaptureError("%s: %s" % (self.path, e.strerror or e)) from None
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
                        elif zlib.crc32(payload) != crc:
                            bad = "chunk checksum mismatch"
                        elif ctype == CHUNK_SAMPLES:
                            try:
                                batch = parse_samples(payload, records)
                            except ValueError as e:
                                bad = "bad samples chunk: %s" % e
                if bad:
                    self._lost(bad, offset, promised)
                    return
                self.chunks_ok += 1
                offset += CHUNK_HEADER.size + length
                if ctype == CHUNK_SUMMARY:
                    self.summary = parse_summary(payload)
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

    def _lost(self, why, offset, promised):
        self.intact = False
        self.bytes_lost = self.size - offset
        more = "" if promised is None else ", a chunk of %d samples" % promised
        self.problem = ("%s at byte %d, after %d good chunks (%d samples): lost the last %d bytes%s"
                        % (why, offset, self.chunks_ok, self.samples_read, self.bytes_lost, more))

    def arch_name(self):
        return ARCHES.get(self.arch, "unknown(%d)" % self.arch)
