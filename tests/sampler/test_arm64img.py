# SPDX-License-Identifier: MIT
"""gdbsample -e on arm64 kernel images, built here as literal bytes: a PE-headed Image is accepted
beside a map, a zboot image's gzip/zstd payload is unpacked, and a truncated or malformed one is
refused with one line and exit 2 -- all before any connection is tried."""
import gzip
import os
import struct
import subprocess

import conftest
import pytest
from guest import free_port

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
TEXT_VA = 0x10000   # _stext's offset in the Image (the PE .text section), as on Debian's 6.1


def image(text=b"\x1f\x20\x03\xd5" * 1024, pe=True, flags=0xa, btf=True):
    """An arm64 Image: the 64-byte header, a PE header with .text (at TEXT_VA) and .data."""
    data = bytearray(TEXT_VA) + bytearray(text)
    if btf:  # a BTF header (magic 0xeB9F, version 1) with 4 bytes of types and 2 of strings
        data += struct.pack("<HBBIIIII", 0xeb9f, 1, 0, 24, 0, 4, 4, 2) + b"\0\0\0\0" + b"\0\0"
        data += b"\0" * (-len(data) % 16)
    struct.pack_into("<IIQQQQQQII", data, 0, 0x5a4d if pe else 0x14000000, 0, 0, len(data) + 0x1000, flags,
                     0, 0, 0, 0x644d5241, 0x40 if pe else 0)
    if pe:
        struct.pack_into("<4sHHIIIHH", data, 0x40, b"PE\0\0", 0xaa64, 2, 0, 0, 0, 0, 0)
        st = 0x40 + 24
        struct.pack_into("<8sIIII", data, st, b".text\0\0\0", len(text), TEXT_VA, len(text), TEXT_VA)
        rest = len(data) - TEXT_VA - len(text)
        struct.pack_into("<8sIIII", data, st + 40, b".data\0\0\0", rest, TEXT_VA + len(text), rest,
                         TEXT_VA + len(text))
    return bytes(data)


def zboot(payload, comp=b"gzip"):
    head = bytearray(0x40)
    head[0:2] = b"MZ"
    head[4:8] = b"zimg"
    struct.pack_into("<II", head, 8, 0x40, len(payload))
    head[24:24 + len(comp)] = comp
    return bytes(head) + payload


MAP = "ffff800008010000 T _stext\nffff800008010000 T hot\nffff800008011000 T _etext\n"


def run(tmp_path, blob, with_map=True):
    img = tmp_path / "vmlinuz"
    img.write_bytes(blob)
    args = [GDBSAMPLE, "-p", str(free_port()), "-e", str(img)]  # nothing listens there
    if with_map:
        (tmp_path / "kallsyms").write_text(MAP)
        args += ["-e", str(tmp_path / "kallsyms")]
    return subprocess.run(args + ["-d", "1"], capture_output=True, text=True, timeout=30)


def accepted(r):
    """The image was taken: what failed was the connection (nothing listens on the port)."""
    return r.returncode != 0 and "vmlinuz" not in r.stderr and "arm64 Image" not in r.stderr


def one_line(r, text):
    lines = r.stderr.strip().splitlines()
    return r.returncode == 2 and len(lines) == 1 and text in lines[0]


def test_a_pe_headed_image_beside_a_map_is_accepted(tmp_path):
    r = run(tmp_path, image())
    assert accepted(r), r.stderr


def test_a_raw_image_without_pe_is_accepted(tmp_path):
    r = run(tmp_path, image(pe=False))
    assert accepted(r), r.stderr


def test_an_image_alone_without_kallsyms_tables_says_it_needs_a_map(tmp_path):
    """Alone, an Image is named by its own kallsyms tables; one that has none (this one) says so
    and what to give instead."""
    r = run(tmp_path, image(), with_map=False)
    assert one_line(r, "no function names in vmlinuz: no kallsyms tables"), r.stderr
    assert r.stderr.rstrip().endswith("give this boot's kallsyms dump (-e MAP)"), r.stderr


def test_a_truncated_image_is_one_line(tmp_path):
    blob = image()
    r = run(tmp_path, blob[:len(blob) - 100])
    assert one_line(r, "truncated arm64 Image"), r.stderr
    r = run(tmp_path, blob[:0x48])  # cut inside the PE header
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_big_endian_image_is_refused(tmp_path):
    r = run(tmp_path, image(flags=0xb))
    assert one_line(r, "big-endian"), r.stderr


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_zboot_payloads_are_unpacked(tmp_path, codec):
    inner = image()
    if codec == "gzip":
        payload = gzip.compress(inner)
    else:
        payload = subprocess.run(["zstd", "-q", "-c"], input=inner, capture_output=True, check=True).stdout
    r = run(tmp_path, zboot(payload, codec.encode()))
    assert accepted(r), r.stderr


def test_a_truncated_zboot_is_one_line(tmp_path):
    z = zboot(gzip.compress(image()))
    r = run(tmp_path, z[:len(z) // 2])
    assert one_line(r, "truncated zboot image"), r.stderr
    stream = gzip.compress(image())
    r = run(tmp_path, zboot(stream[:len(stream) // 2]))  # the header's size agrees: the stream is cut
    assert one_line(r, "gzip stream ends early"), r.stderr


def test_a_zboot_of_something_else_is_one_line(tmp_path):
    r = run(tmp_path, zboot(gzip.compress(b"not a kernel" * 100)))
    assert one_line(r, "is not an arm64 Image"), r.stderr
