# SPDX-License-Identifier: MIT
"""Capture format version 3 on literal bytes: the header's task_os byte, task extension records
(type 2, 32 bytes) into Sample.task, records of another length skipped, hostile names sanitized;
versions 1 and 2 read exactly as before (byte 101 and type 2 records mean nothing there)."""
import struct

import pytest

import capgen
from analyze import one_line_error
from analyze import call as run  # in this process: no interpreter start per call (make check time)

from gdbsample_analysis.capture import (Capture, CaptureError, Sample, Task, comm_text, parse_samples)

K = 0xffffffff80100000
P = 0xffff888003a00000                       # a task struct's address
BASH = (1234, 1230, P, b"bash")
SUMMARY = {"duration_ns": 5000, "samples": 3, "task_verified": 3, "task_hits": 2, "task_misses": 1,
           "task_renamed": 0, "task_lost": 0}


def write(tmp_path, data, name="c.cap"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def one(version=3, exact=(), extra=b"", task=None, n=3, flags=0):
    """The one Sample parsed from one record."""
    rec = capgen.record(1, 0, flags, [K + i for i in range(n)], exact, version=version, extra=extra, task=task)
    return parse_samples(rec, 1, version=version)[0]


@pytest.mark.parametrize("task_os, name", [(0, None), (1, "linux"), (2, "testkernel"), (9, "unknown(9)")])
def test_header_task_os(tmp_path, task_os, name):
    c = Capture(write(tmp_path, capgen.capture_bytes([], SUMMARY, version=3, task_os=task_os)))
    assert (c.version, c.task_os, c.task_os_id) == (3, name, task_os)


@pytest.mark.parametrize("version", [1, 2])
def test_byte_101_means_nothing_before_version_3(tmp_path, version):
    h = bytearray(capgen.header(version=version))
    h[101] = 1
    data = capgen.reseal(bytes(h) + capgen.chunk(2, capgen.summary_text(SUMMARY), 1, version))
    c = Capture(write(tmp_path, data))
    assert (c.version, c.task_os, c.task_os_id) == (version, None, 0)


def test_version_7_is_refused(tmp_path):
    path = write(tmp_path, capgen.header(version=7))
    with pytest.raises(CaptureError, match="unsupported capture version 7 .*versions 1, 2, 3, 4, 5 and 6$"):
        Capture(path)
    r = run("info", path)
    assert r.returncode == 1 and one_line_error(r)


def test_task_record_becomes_sample_task():
    s = one(task=BASH)
    assert s.task == Task(1234, 1230, "bash", P) and s.exact == frozenset() and s.flags == 0
    assert (s.task.pid, s.task.tgid, s.task.comm, s.task.ptr) == (1234, 1230, "bash", P)
    assert s.frames == (K, K + 1, K + 2)
    s = one(exact={2}, task=(-5, 7, 0, b"a" * 16))       # with exact frames; a full 16-byte name
    assert s.exact == {2} and s.task == Task(-5, 7, "a" * 16, 0)
    # the task record first, then the exact frames: order does not matter
    s = one(extra=capgen.task_record(*BASH) + b"\x01\x01\x01")
    assert s.exact == {1} and s.task.comm == "bash"
    # no record: no task known
    assert one().task is None and one(exact={1}).task is None


def test_samples_of_one_task_share_one_object():
    recs = b"".join(capgen.record(t, 0, 0, [K], version=3, task=BASH) for t in range(3))
    got = parse_samples(recs, 3, version=3)
    assert got[0].task is got[1].task is got[2].task


@pytest.mark.parametrize("length", [0, 1, 31, 33, 40])
def test_a_task_record_of_another_length_is_skipped(length):
    body = struct.pack("<iiQ16s", 1, 1, P, b"bash") + b"\x00" * 8
    rec = bytes([capgen.EXT_TASK, length]) + body[:length]
    s = one(exact={1}, extra=rec + b"\x09\x01z")
    assert s.task is None and s.exact == {1}               # skipped, counting nothing
    s = one(extra=rec + capgen.task_record(*BASH))         # a good one after it still counts
    assert s.task.comm == "bash"


@pytest.mark.parametrize("version", [1, 2])
def test_type_2_records_mean_nothing_before_version_3(version):
    s = one(version=version, exact={1}, task=BASH)
    assert s.task is None and s.exact == ({1} if version == 2 else frozenset())


def test_a_task_record_past_its_block_ends_the_block():
    s = one(exact={1}, extra=capgen.task_record(*BASH)[:20])
    assert s.task is None and s.exact == {1}


@pytest.mark.parametrize("raw, text", [
    (b"bash", "bash"),
    (b"kworker/0:1H", "kworker/0:1H"),
    (b"", ""),
    (b"a\x00b", "a"),                                     # stops at the first NUL
    (b"\x1b[2J\x07x", "\\x1b[2J\\x07x"),                  # terminal escapes
    (b"\xff\xfe\x80\x7f", "\\xff\\xfe\\x80\\x7f"),         # not ASCII, DEL
    (b"tab\there\n", "tab\\x09here\\x0a"),
    (b"<a&\"b'>;x y\\", "<a&\"b'>;x y\\"),               # printable ASCII stays as it is
    (b"0123456789abcdef", "0123456789abcdef"),            # 16 bytes, no NUL
])
def test_comm_is_sanitized(raw, text):
    assert comm_text(raw) == text
    assert one(task=(1, 1, P, raw)).task.comm == text


def test_fast_and_general_paths_agree():
    """A lone task record takes a shortcut; the same record among others takes the general path."""
    for comm in (b"bash", b"\xff\x00\x01", b"x" * 16):
        lone = one(task=(9, 8, P + 1, comm))
        other = one(task=(9, 8, P + 1, comm), extra=b"\x09\x00")
        assert lone == other and lone.task.comm == comm_text(comm)


def test_sample_keeps_its_positional_form():
    s = Sample(1, 0, 0, (K,))
    assert s.exact == frozenset() and s.task is None and s == (1, 0, 0, (K,), frozenset(), None, None, 1)
    assert s.offcpu is None and s.weight == 1  # v6's fields: a vCPU's sample, standing for one
    assert Sample(1, 0, 0, (K,), frozenset({1})).task is None


def test_whole_v3_file(tmp_path):
    samples = [(10, 0, 0, (K, K + 1), (), BASH), (20, 1, 4, (0x401000,), (), BASH),
               (30, 1, 1, (K + 5,), (), (0, 0, P + 8, b"swapper/1")), (40, 0, 0, (K,), {1})]
    c = Capture(write(tmp_path, capgen.capture_bytes(samples, SUMMARY, per_chunk=3, version=3,
                                                     task_os=capgen.TASK_OS_LINUX)))
    got = list(c.samples())
    assert c.intact and c.task_os == "linux" and [s.task and s.task.comm for s in got] == \
        ["bash", "bash", "swapper/1", None]
    assert got[1].frames == (0x401000,) and got[1].flags == 4       # the user pc stays in the data
    assert got[3].exact == frozenset()                              # 1 is not below n = 1
    assert c.summary["task_misses"] == 1


def test_extension_past_its_chunk_is_still_damage(tmp_path):
    rec = capgen.record(7, 0, 0, [K, K + 1], version=3, task=BASH)
    data = capgen.capture_bytes([(1, 0, 0, (K,), (), BASH)], None, version=3, task_os=1) + \
        capgen.chunk(1, rec[:-5], 1, version=3)
    c = Capture(write(tmp_path, data))
    got = list(c.samples())
    assert len(got) == 1 and got[0].task.comm == "bash" and not c.intact
    assert "extension overruns its chunk" in c.problem
