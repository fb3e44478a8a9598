"""capgen.py: write gdbsample captures for tests and the benchmark, straight from
docs/capture-format.md (independent of the reader in analysis/), with ways to damage them."""
import struct
import zlib

MAGIC = b"GDBSAMP\0"


def header(ncpus=2, rate_hz=100, max_frames=64, klo=0xffff800000000000, khi=0xffffffffffffffff,
           start_ns=1764400000000000000, id_kind=0, kid=b"", flags=1, arch=1, version=1):
    """The 128-byte header, CRC included."""
    h = bytearray(128)
    h[0:8] = MAGIC
    struct.pack_into("<HHHHIIQQQBBH", h, 8, version, 128, arch, ncpus, rate_hz, max_frames,
                     klo, khi, start_ns, id_kind, len(kid), flags)
    h[52:52 + len(kid)] = kid
    struct.pack_into("<I", h, 124, zlib.crc32(bytes(h[:124])))
    return bytes(h)


def record(t_ns, cpu, flags, frames):
    """One sample record: u64 t, u16 cpu, u8 flags, u8 n, u64 frames[n]."""
    return struct.pack("<QHBB%dQ" % len(frames), t_ns, cpu, flags, len(frames), *frames)


def chunk(ctype, payload, records):
    """CHNK, type, length, records, CRC-32 of the payload, payload."""
    return struct.pack("<IIIII", 0x4B4E4843, ctype, len(payload), records, zlib.crc32(payload)) + payload


def summary_text(d):
    return "".join("%s %s\n" % kv for kv in d.items()).encode()


def chunks(samples, per_chunk):
    """Sample tuples (t, cpu, flags, frames) -> samples chunks of per_chunk records."""
    out = []
    for i in range(0, len(samples), per_chunk):
        part = samples[i:i + per_chunk]
        out.append(chunk(1, b"".join(record(*s) for s in part), len(part)))
    return out


def capture_bytes(samples, summary=None, per_chunk=50, **hdr):
    """A whole capture; summary None leaves the summary chunk out (a killed gdbsample)."""
    body = b"".join(chunks(samples, per_chunk))
    if summary is not None:
        body += chunk(2, summary_text(summary), 1)
    return header(**hdr) + body


def write(path, samples, summary=None, per_chunk=50, **hdr):
    with open(path, "wb") as f:
        f.write(capture_bytes(samples, summary, per_chunk, **hdr))


def chunk_offsets(data):
    """File offsets of each chunk of a capture's bytes."""
    out, pos = [], 128
    while pos + 20 <= len(data):
        out.append(pos)
        pos += 20 + struct.unpack_from("<I", data, pos + 8)[0]
    return out
