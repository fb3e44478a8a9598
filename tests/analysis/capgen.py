# SPDX-License-Identifier: MIT
"""capgen.py: write gdbsample captures for tests and the benchmark, straight from
docs/capture-format.md (independent of the reader in analysis/), with ways to damage them.

Version 1 by default; version=2 writes the v2 header fields (KASLR offset, _stext, methods), the
v2 chunk CRC (of chunk header bytes 4..15, then the payload) and sample extensions (exact
frames, and any raw extension records a test wants); version=3 also the header's task_os byte
and task records (type 2: s32 pid, s32 tgid, u64 task pointer, comm[16]); version=5 with phases=
a phases chunk (type 4: `p` and `o` lines) after the samples, before the summary."""
import struct
import zlib

MAGIC = b"GDBSAMP\0"
HEADER_FLAG_KASLR = 2     # header flags bit 1 (v2): the KASLR offset field is valid
SAMPLE_EXT = 0x80         # sample flags bit 7 (v2): an extension block follows the frames
EXT_EXACT = 1             # extension record type: indexes of exact frames
EXT_TASK = 2              # extension record type (v3): the current task, 32 bytes
TASK_OS_LINUX, TASK_OS_TESTKERNEL = 1, 2      # header `task_os` (v3)
METHOD_FP, METHOD_CFI, METHOD_ORC = 1, 2, 4   # header `methods` bits
CHUNK_PHASES = 4                              # v5: the phases chunk


def header(ncpus=2, rate_hz=100, max_frames=64, klo=0xffff800000000000, khi=0xffffffffffffffff,
           start_ns=1764400000000000000, id_kind=0, kid=b"", flags=1, arch=1, version=1,
           kaslr_offset=None, stext=0, methods=0, task_os=0):
    """The 128-byte header, CRC included. kaslr_offset (v2): None = unknown (flag bit 1 clear);
    task_os (v3, byte 101): 0 none, 1 linux, 2 testkernel."""
    h = bytearray(128)
    h[0:8] = MAGIC
    if version >= 2 and kaslr_offset is not None:
        flags |= HEADER_FLAG_KASLR
    struct.pack_into("<HHHHIIQQQBBH", h, 8, version, 128, arch, ncpus, rate_hz, max_frames,
                     klo, khi, start_ns, id_kind, len(kid), flags)
    h[52:52 + len(kid)] = kid
    if version >= 2:
        struct.pack_into("<qQB", h, 84, kaslr_offset or 0, stext, methods)
    if version >= 3:
        h[101] = task_os
    struct.pack_into("<I", h, 124, zlib.crc32(bytes(h[:124])))
    return bytes(h)


def extension(exact=(), extra=b""):
    """A v2 extension block's records: exact frame indexes (type 1), then extra raw records."""
    body = bytes([EXT_EXACT, len(exact)]) + bytes(sorted(exact)) if exact else b""
    return body + extra


def task_record(pid, tgid, ptr, comm):
    """A v3 task extension record: type 2, length 32, s32 pid, s32 tgid, u64 ptr, comm NUL-padded
    (comm: bytes, at most 16)."""
    return bytes([EXT_TASK, 32]) + struct.pack("<iiQ16s", pid, tgid, ptr, comm)


def record(t_ns, cpu, flags, frames, exact=(), version=1, extra=b"", task=None):
    """One sample record: u64 t, u16 cpu, u8 flags, u8 n, u64 frames[n]; in v2, with exact
    frames or extra records, flags bit 7 and then u16 length + the extension records; task
    (pid, tgid, ptr, comm bytes) adds a task record (after the exact frames)."""
    if task is not None:
        extra = task_record(*task) + extra
    ext = extension(exact, extra) if version >= 2 else b""
    if ext:
        flags |= SAMPLE_EXT
    out = struct.pack("<QHBB%dQ" % len(frames), t_ns, cpu, flags, len(frames), *frames)
    return out + struct.pack("<H", len(ext)) + ext if ext else out


def chunk(ctype, payload, records, version=1):
    """CHNK, type, length, records, CRC (v1: of the payload; v2: of bytes 4..15 and the payload)."""
    mid = struct.pack("<III", ctype, len(payload), records)
    crc = zlib.crc32(payload, zlib.crc32(mid)) if version >= 2 else zlib.crc32(payload)
    return struct.pack("<I", 0x4B4E4843) + mid + struct.pack("<I", crc) + payload


def summary_text(d):
    return "".join("%s %s\n" % kv for kv in d.items()).encode()


def phases_text(phases):
    """[(name, begin addr, end addr, [(n, begin_ns, end_ns, begin_cpu, end_cpu or None, done,
    sampled)])] -> a v5 phases payload: `p NAME BEGIN END` (hex), then its occurrences, `o N
    BEGIN_NS END_NS BEGIN_CPU END_CPU|- done|open sampled|skipped`, each line ending in \\n."""
    out = []
    for name, begin, end, occurrences in phases:
        out.append("p %s %x %x\n" % (name, begin, end))
        for n, b, e, bcpu, ecpu, done, sampled in occurrences:
            out.append("o %d %d %d %d %s %s %s\n" % (n, b, e, bcpu, "-" if ecpu is None else ecpu,
                                                      "done" if done else "open",
                                                      "sampled" if sampled else "skipped"))
    return "".join(out)


def chunks(samples, per_chunk, version=1):
    """Sample tuples (t, cpu, flags, frames[, exact[, task]]) -> samples chunks of per_chunk
    records; task as record() takes it, or None."""
    out = []
    for i in range(0, len(samples), per_chunk):
        part = samples[i:i + per_chunk]
        out.append(chunk(1, b"".join(record(*s[:4], exact=s[4] if len(s) > 4 else (), version=version,
                                            task=s[5] if len(s) > 5 else None)
                                     for s in part), len(part), version))
    return out


def capture_bytes(samples, summary=None, per_chunk=50, phases=None, **hdr):
    """A whole capture; summary None leaves the summary chunk out (a killed gdbsample); phases (a
    list for phases_text, or the payload's text as is) adds a phases chunk before it, its records
    the number of \\n in the text."""
    version = hdr.get("version", 1)
    body = b"".join(chunks(samples, per_chunk, version))
    if phases is not None:
        text = phases if isinstance(phases, str) else phases_text(phases)
        body += chunk(CHUNK_PHASES, text.encode("utf-8", "surrogateescape"), text.count("\n"), version)
    if summary is not None:
        body += chunk(2, summary_text(summary), 1, version)
    return header(**hdr) + body


def write(path, samples, summary=None, per_chunk=50, phases=None, **hdr):
    with open(path, "wb") as f:
        f.write(capture_bytes(samples, summary, per_chunk, phases, **hdr))


def chunk_offsets(data):
    """File offsets of each chunk of a capture's bytes."""
    out, pos = [], 128
    while pos + 20 <= len(data):
        out.append(pos)
        pos += 20 + struct.unpack_from("<I", data, pos + 8)[0]
    return out


def reseal(data):
    """data with the header CRC and every whole chunk's CRC recomputed (a chunk's length as its
    header says): damage that CRCs cannot catch, hostile values behind valid checksums."""
    b = bytearray(data)
    if len(b) < 128:
        return bytes(b)
    struct.pack_into("<I", b, 124, zlib.crc32(bytes(b[:124])))
    version = struct.unpack_from("<H", b, 8)[0]
    pos = 128
    while pos + 20 <= len(b):
        length = struct.unpack_from("<I", b, pos + 8)[0]
        if pos + 20 + length > len(b):
            break
        payload = bytes(b[pos + 20:pos + 20 + length])
        crc = zlib.crc32(payload, zlib.crc32(bytes(b[pos + 4:pos + 16]))) if version >= 2 else zlib.crc32(payload)
        struct.pack_into("<I", b, pos + 16, crc)
        pos += 20 + length
    return bytes(b)
