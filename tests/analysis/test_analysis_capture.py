# SPDX-License-Identifier: MIT
"""The capture reader on literal bytes: header checks, chunks, truncation, bit flips, summaries."""

import pytest

import capgen

from gdbsample_analysis.capture import Capture, CaptureError, Sample

SAMPLES = [(1000 * i, i % 2, 1 if i % 5 == 0 else 0, tuple(0xffffffff80100000 + 16 * k + i for k in range(1 + i % 4)))
           for i in range(30)]
SUMMARY = {"duration_ns": 31000, "samples": 24, "idle": 6, "dropped": 1, "pause_p50_us": 12,
           "stopped_fraction": 0.5, "note": "text"}


def write(tmp_path, data, name="c.cap"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def read_all(path):
    c = Capture(path)
    return c, list(c.samples())


def test_header_samples_and_summary(tmp_path):
    data = capgen.capture_bytes(SAMPLES, SUMMARY, per_chunk=7, ncpus=2, rate_hz=250, max_frames=9,
                                id_kind=1, kid=b"\x01\x02\x03", start_ns=123456789)
    c, got = read_all(write(tmp_path, data))
    assert (c.version, c.arch, c.ncpus, c.rate_hz, c.max_frames, c.start_ns) == (1, 1, 2, 250, 9, 123456789)
    assert (c.kernel_lo, c.kernel_hi, c.kernel_id_kind, c.kernel_id, c.flags) == (
        0xffff800000000000, 0xffffffffffffffff, 1, b"\x01\x02\x03", 1)
    assert got == [Sample(*s) for s in SAMPLES]
    assert c.intact and c.problem is None and c.bytes_lost == 0
    assert c.chunks_ok == 5 + 1  # ceil(30 / 7) sample chunks and the summary
    assert c.summary == SUMMARY


@pytest.mark.parametrize("damage, message", [
    (lambda h: b"GDBSAMQ\0" + h[8:], "not a gdbsample capture"),
    (lambda h: h[:60] + bytes([h[60] ^ 1]) + h[61:], "header checksum mismatch"),
    (lambda h: capgen.header(version=7), "unsupported capture version 7"),
    (lambda h: capgen.header(version=0), "unsupported capture version 0"),
])
def test_bad_header_is_refused(tmp_path, damage, message):
    data = capgen.capture_bytes(SAMPLES, SUMMARY)
    path = write(tmp_path, damage(data[:128]) + data[128:])
    with pytest.raises(CaptureError, match=message) as e:
        Capture(path)
    assert "\n" not in str(e.value) and path in str(e.value)


def test_truncated_header(tmp_path):
    with pytest.raises(CaptureError, match="truncated header"):
        Capture(write(tmp_path, capgen.capture_bytes(SAMPLES, SUMMARY)[:100]))


def test_missing_file():
    with pytest.raises(CaptureError, match="No such file"):
        Capture("/nonexistent/x.cap")


def test_truncation_at_every_byte_keeps_the_good_chunks(tmp_path):
    data = capgen.capture_bytes(SAMPLES, SUMMARY, per_chunk=10)
    offs = capgen.chunk_offsets(data)  # three sample chunks, then the summary
    for cut in range(129, len(data)):
        c, got = read_all(write(tmp_path, data[:cut]))
        whole = sum(1 for o in offs[1:] if o <= cut) + (cut == len(data))
        good = min(whole, 3)
        assert got == [Sample(*s) for s in SAMPLES[:10 * good]], cut
        assert not c.intact and c.problem
        if cut not in offs:
            assert c.bytes_lost == cut - max(o for o in offs if o < cut)
            assert ("at byte %d" % max(o for o in offs if o < cut)) in c.problem
        else:
            assert "no summary" in c.problem


@pytest.mark.parametrize("where", ["magic", "length", "crc", "payload"])
def test_bit_flip_stops_at_the_bad_chunk(tmp_path, where):
    data = bytearray(capgen.capture_bytes(SAMPLES, SUMMARY, per_chunk=10))
    second = capgen.chunk_offsets(bytes(data))[1]
    pos = {"magic": second, "length": second + 10, "crc": second + 16, "payload": second + 40}[where]
    data[pos] ^= 0x10
    c, got = read_all(write(tmp_path, bytes(data)))
    assert got == [Sample(*s) for s in SAMPLES[:10]]
    assert not c.intact and c.chunks_ok == 1
    assert "at byte %d" % second in c.problem
    assert c.bytes_lost == len(data) - second


def test_no_summary_is_not_intact_but_complete(tmp_path):
    c, got = read_all(write(tmp_path, capgen.capture_bytes(SAMPLES, None)))
    assert len(got) == 30 and not c.intact and "no summary" in c.problem and c.bytes_lost == 0


def test_unknown_chunk_type_is_skipped_in_version_1(tmp_path):
    data = capgen.capture_bytes(SAMPLES[:5], None) + capgen.chunk(9, b"future stuff", 1) + \
        b"".join(capgen.chunks(SAMPLES[5:], 50)) + capgen.chunk(2, capgen.summary_text(SUMMARY), 1)
    c, got = read_all(write(tmp_path, data))
    assert len(got) == 30 and c.intact and c.chunks_ok == 4


@pytest.mark.parametrize("payload, records, why", [
    (capgen.record(1, 0, 0, [5])[:-3], 1, "overruns"),
    (capgen.record(1, 0, 0, [5]) + b"\0" * 5, 2, "cut off"),
    (capgen.record(1, 0, 0, [5]), 2, "header says 2"),
    (capgen.record(1, 0, 0, [5])[:11] + b"\0", 1, "no frames"),
])
def test_inconsistent_payload_with_good_crc(tmp_path, payload, records, why):
    data = capgen.capture_bytes(SAMPLES[:3], None) + capgen.chunk(1, payload, records)
    c, got = read_all(write(tmp_path, data))
    assert len(got) == 3 and not c.intact and why in c.problem


def test_samples_stream_chunk_by_chunk(tmp_path):
    """The first sample arrives before the file's later chunks are read (no whole-file load)."""
    many = [(i, 0, 0, (0x1000 + i,)) for i in range(20000)]
    data = capgen.capture_bytes(many, SUMMARY, per_chunk=1000)  # 400 KB, 20 chunks
    path = write(tmp_path, data)
    c = Capture(path)
    it = c.samples()
    next(it)
    assert c.chunks_ok == 1 and c.samples_read == 1000  # the first chunk only
    with open(path, "r+b") as f:                        # damage the last chunk after iteration began
        f.seek(capgen.chunk_offsets(data)[19] + 30)
        f.write(b"\xff")
    assert len(list(it)) == 18999 and not c.intact and "checksum" in c.problem
