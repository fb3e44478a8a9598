# SPDX-License-Identifier: MIT
"""Capture format version 2 on literal bytes: header fields, exact frames in sample extensions,
the chunk CRC over the chunk header, and what counts as damage (bad chunk header, unknown chunk
type, an extension past its chunk); version 1 still reads as before."""
import os
import struct

import pytest

import capgen
from analyze import DATA, one_line_error
from analyze import call as run  # in this process: no interpreter start per call (make check time)

from gdbsample_analysis.capture import Capture, Sample, parse_samples

ELF = os.path.join(DATA, "tiny.elf")
K = 0xffffffff80100000
# (t, cpu, flags, frames, exact): every third sample went through an interrupt (frame 1 exact)
SAMPLES = [(1000 * i, i % 2, 2 if i % 3 == 0 else 0, tuple(K + 16 * k + i for k in range(1 + i % 4)),
            frozenset({1}) if i % 3 == 0 and i % 4 else frozenset())
           for i in range(30)]
SUMMARY = {"duration_ns": 31000, "samples": 30, "idle": 0, "dropped": 0, "unwind": "orc,fp",
           "image": "vmlinux (ELF, build-id 1234)", "kaslr_offset": "0x1e00000"}


def write(tmp_path, data, name="c.cap"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def read_all(path):
    c = Capture(path)
    return c, list(c.samples())


def v2(samples=SAMPLES, summary=SUMMARY, per_chunk=10, **hdr):
    return capgen.capture_bytes(samples, summary, per_chunk=per_chunk, version=2, **hdr)


def test_header_fields(tmp_path):
    c = Capture(write(tmp_path, v2(kaslr_offset=0x1e00000, stext=0xffffffff82e00000,
                                   methods=capgen.METHOD_FP | capgen.METHOD_ORC)))
    assert (c.version, c.kaslr_offset, c.stext, c.methods) == (2, 0x1e00000, 0xffffffff82e00000, 5)
    assert c.method_names() == ["fp", "orc"] and c.flags == 1 | 2
    c = Capture(write(tmp_path, v2(kaslr_offset=-0x200000)))
    assert c.kaslr_offset == -0x200000                  # signed
    c = Capture(write(tmp_path, v2(stext=0x1234)))      # flag bit 1 clear: the offset is unknown
    assert (c.kaslr_offset, c.stext, c.methods) == (None, 0x1234, 0)
    c = Capture(write(tmp_path, capgen.capture_bytes(SAMPLES[:1], SUMMARY)))   # version 1
    assert (c.version, c.kaslr_offset, c.stext, c.methods) == (1, None, 0, 0)


def test_samples_carry_exact_frames_and_lose_bit_7(tmp_path):
    c, got = read_all(write(tmp_path, v2()))
    assert got == [Sample(*s) for s in SAMPLES]
    assert any(s.exact for s in got) and all(s.flags < 0x80 for s in got)
    assert c.intact and c.chunks_ok == 4 and c.summary == SUMMARY
    assert c.summary["image"] == "vmlinux (ELF, build-id 1234)"   # values keep their spaces


def test_version_1_reads_as_before(tmp_path):
    """A v1 record's flags are its own (bit 7 included) and it has no extension: no exact frames."""
    rec = capgen.record(5, 0, 0x80 | 2, [K, K + 9])
    data = capgen.header() + capgen.chunk(1, rec, 1) + capgen.chunk(2, capgen.summary_text(SUMMARY), 1)
    c, got = read_all(write(tmp_path, data))
    assert got == [Sample(5, 0, 0x82, (K, K + 9))] and got[0].exact == frozenset() and c.intact
    plain = [s[:4] for s in SAMPLES]
    c, got = read_all(write(tmp_path, capgen.capture_bytes(plain, SUMMARY)))
    assert got == [Sample(*s) for s in plain] and c.intact


def test_extension_records():
    def one(exact=(), extra=b"", n=3):
        rec = capgen.record(1, 0, 0, [K + i for i in range(n)], exact, version=2, extra=extra)
        return parse_samples(rec, 1, version=2)[0]
    assert one({1, 2}).exact == {1, 2}
    assert one(extra=b"\x07\x03abc").exact == frozenset()        # an unknown record is skipped
    assert one({2}, extra=b"\x07\x00").exact == {2}
    assert one(extra=b"\x07\x01z\x01\x01\x01").exact == {1}      # exact after an unknown record
    assert one(extra=b"\x01\x02\x00\x05").exact == frozenset()   # 0 and n..: not exact frames
    s = one({1}, extra=b"\x09\x02xy")
    assert s.flags == 0 and s.frames == (K, K + 1, K + 2)
    # a record running past its extension block ends the block (the C reader does the same)
    assert one({1}, extra=b"\x01\x05\x02").exact == {1}
    # records back to back: the extension's length says where the next one starts
    two = capgen.record(1, 0, 0, [K, K + 1], {1}, version=2) + capgen.record(2, 1, 1, [K + 5], version=2)
    assert parse_samples(two, 2, version=2) == [Sample(1, 0, 0, (K, K + 1), frozenset({1})),
                                                 Sample(2, 1, 1, (K + 5,))]


@pytest.mark.parametrize("cut", range(1, 9))
def test_extension_past_its_chunk_is_damage(tmp_path, cut):
    rec = capgen.record(7, 0, 0, [K, K + 1, K + 2], {1, 2}, version=2, extra=b"\x05\x02ab")
    bad = rec[:-cut]                     # the extension (2 + 4 + 4 bytes) runs past the payload
    data = v2(SAMPLES[:10]) + capgen.chunk(1, bad, 1, version=2)
    c, got = read_all(write(tmp_path, data))
    assert got == [Sample(*s) for s in SAMPLES[:10]] and not c.intact
    assert "extension overruns its chunk" in c.problem
    r = run("fold", write(tmp_path, data, "x.cap"), "-e", ELF, "--idle")
    assert r.returncode == 3 and one_line_error(r) and "overruns" in r.stderr


def flip(data, chunk_no, at, bit=0x01):
    """data with one bit flipped at byte `at` of chunk number chunk_no."""
    out = bytearray(data)
    out[capgen.chunk_offsets(data)[chunk_no] + at] ^= bit
    return bytes(out)


@pytest.mark.parametrize("at, bit, what", [
    (4, 0x01, "type 1 -> 0"), (4, 0x02, "type 1 -> 3 (unknown)"), (5, 0x01, "type's high bytes"),
    (8, 0x08, "length"), (12, 0x01, "records"), (18, 0x40, "crc"), (40, 0x10, "payload"),
])
def test_a_flipped_bit_in_a_chunk_is_damage(tmp_path, at, bit, what):
    """v2's chunk CRC covers type, length and count: nothing of the chunk is trusted."""
    data = v2()
    second = capgen.chunk_offsets(data)[1]
    path = write(tmp_path, flip(data, 1, at, bit))
    c, got = read_all(path)
    assert got == [Sample(*s) for s in SAMPLES[:10]], what
    assert not c.intact and c.chunks_ok == 1 and "at byte %d" % second in c.problem
    assert c.bytes_lost == len(data) - second
    if at == 4:
        assert "checksum mismatch" in c.problem and "chunk of" not in c.problem   # no count claimed
    r = run("fold", path, "-e", ELF, "--idle", "--group-by-cpu")
    assert r.returncode == 3 and one_line_error(r) and "at byte %d" % second in r.stderr
    assert sum(int(line.rsplit(" ", 1)[1]) for line in r.stdout.splitlines()) == 10
    assert run("info", path).returncode == 3


def test_a_flipped_type_bit_in_version_1_went_unnoticed(tmp_path):
    """Why v2 changed the CRC: in v1 a samples chunk whose type reads 3 was skipped as unknown."""
    plain = [s[:4] for s in SAMPLES]
    data = capgen.capture_bytes(plain, SUMMARY, per_chunk=10)
    c, got = read_all(write(tmp_path, flip(data, 1, 4, 0x02)))
    assert len(got) == 20 and c.intact


def test_unknown_chunk_type_is_damage(tmp_path):
    data = v2(SAMPLES[:5], None) + capgen.chunk(9, b"future stuff", 1, version=2) + \
        b"".join(capgen.chunks(SAMPLES[5:], 50, version=2)) + \
        capgen.chunk(2, capgen.summary_text(SUMMARY), 1, version=2)
    path = write(tmp_path, data)
    c, got = read_all(path)
    assert got == [Sample(*s) for s in SAMPLES[:5]] and not c.intact and c.chunks_ok == 1
    assert "unknown chunk type 9 at byte %d" % capgen.chunk_offsets(data)[1] in c.problem
    for args in (["fold", path, "-e", ELF], ["report", path], ["info", path]):
        r = run(*args)
        assert r.returncode == 3, args
    assert "unknown chunk type 9" in run("report", path).stderr


def test_a_version_1_chunk_crc_in_a_version_2_file_is_damage(tmp_path):
    data = capgen.header(version=2) + capgen.chunk(1, capgen.record(1, 0, 0, [K]), 1, version=1)
    c, got = read_all(write(tmp_path, data))
    assert got == [] and "checksum mismatch" in c.problem


def test_truncation_at_every_byte_keeps_the_good_chunks(tmp_path):
    data = v2()
    offs = capgen.chunk_offsets(data)  # three sample chunks, then the summary
    for cut in range(129, len(data), 7):
        c, got = read_all(write(tmp_path, data[:cut]))
        good = min(sum(1 for o in offs[1:] if o <= cut), 3)
        assert got == [Sample(*s) for s in SAMPLES[:10 * good]], cut
        assert not c.intact and c.problem


def test_the_c_writer_layout(tmp_path):
    """Byte for byte what sampler/capture.c's capw_add writes for a sample with exact frames 1
    and 3 of 4: flags | 0x80, the frames, u16 4, then record type 1 of length 2."""
    rec = capgen.record(0x11, 2, 0x02, [K, K + 1, K + 2, K + 3], {3, 1}, version=2)
    want = struct.pack("<QHBB4Q", 0x11, 2, 0x82, 4, K, K + 1, K + 2, K + 3) + b"\x04\x00\x01\x02\x01\x03"
    assert rec == want
    assert parse_samples(rec, 1, version=2) == [Sample(0x11, 2, 2, (K, K + 1, K + 2, K + 3), frozenset({1, 3}))]
