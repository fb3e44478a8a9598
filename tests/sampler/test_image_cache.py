# SPDX-License-Identifier: MIT
"""The image cache (sampler/imgcache.c, issue 26): a compressed vmlinuz's decompressed kernel kept
under $XDG_CACHE_HOME/gdbsample/ by the file's SHA-256, read on the next start only when its header
and its payload's SHA-256 check out and the file and its directory are this user's alone. No QEMU:
the image is loaded before gdbsample connects, so each run here ends at a refused connection -- or
earlier, at an image error, which is how a test sees that an entry was used."""
import hashlib
import lzma
import os
import socket
import stat
import struct
import subprocess

import conftest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
HDR = 128


def unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bzimage(elf):
    """A minimal bzImage (boot protocol 2.15) whose payload is elf, xz-compressed as kernels are."""
    payload = lzma.compress(elf, check=lzma.CHECK_CRC32) + struct.pack("<I", len(elf))
    img = bytearray(1024)
    img[0x1f1] = 1  # one setup sector
    img[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", img, 0x206, 0x020f)
    img[0x211] = 1  # LOADED_HIGH
    struct.pack_into("<II", img, 0x248, 0, len(payload))
    return bytes(img) + payload


def entry(elf_bytes, payload, key_of=None, codec=b"xz"):
    """An entry as sampler/imgcache.h lays it out, for the image whose bytes are key_of."""
    key = hashlib.sha256(key_of).digest()
    hdr = (b"gdbsimg\0" + struct.pack("<II", 1, HDR) + key + struct.pack("<Q", len(payload))
           + hashlib.sha256(payload).digest() + codec.ljust(8, b"\0") + bytes(32))
    assert len(hdr) == HDR
    return hdr + payload


def run(image, cache, *args):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    return subprocess.run([GDBSAMPLE, "-p", str(unused_port()), "-e", str(image), "-d", "1", *args],
                          capture_output=True, text=True, timeout=120, env=env)


def make_image(tmp_path, kernel=conftest.KERNEL):
    elf = open(kernel, "rb").read()
    image = tmp_path / "vmlinuz-test"
    image.write_bytes(bzimage(elf))
    cache = tmp_path / "cache"
    path = cache / "gdbsample" / ("image-%s.img" % hashlib.sha256(image.read_bytes()).hexdigest()[:32])
    return elf, image, cache, path


def refused_connection(r):
    return "cannot connect to 127.0.0.1:" in r.stderr


def test_first_start_keeps_the_payload_and_the_next_one_reads_it(tmp_path):
    elf, image, cache, path = make_image(tmp_path)
    r = run(image, cache)
    assert refused_connection(r), r.stderr
    assert "the decompressed kernel" in r.stderr and "kept in %s" % (cache / "gdbsample") in r.stderr, r.stderr
    data = path.read_bytes()
    assert data == entry(elf, elf, key_of=image.read_bytes()), "the entry is not header + the ELF itself"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # The next start reads the entry: an entry holding another (valid) ELF, one with no names,
    # makes that start fail on the image -- which the vmlinuz itself would not.
    bare = bytearray(64)
    bare[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HHIQQQIHHHHHH", bare, 16, 2, 62, 1, 0, 0, 0, 0, 64, 0, 0, 64, 0, 0)
    path.write_bytes(entry(elf, bytes(bare), key_of=image.read_bytes()))
    r = run(image, cache)
    assert not refused_connection(r) and "no function names" in r.stderr, r.stderr
    assert r.returncode != 0
    r = run(image, cache, "--no-cache")  # neither read nor kept
    assert refused_connection(r) and "kept in" not in r.stderr, r.stderr
    assert path.read_bytes() == entry(elf, bytes(bare), key_of=image.read_bytes())
    r = run(image, cache, "-q")  # a first store is a note, not said under -q
    assert r.stderr.count("\n") == 1 and "no function names" in r.stderr, r.stderr


def damage(path, how):
    data = bytearray(path.read_bytes())
    if how == "payload":
        data[HDR + 1000] ^= 0x40
    elif how == "truncated":
        del data[-100:]
    elif how == "header":
        data[8] = 9  # another version
    path.write_bytes(bytes(data))


def test_a_damaged_entry_is_refused_said_and_replaced(tmp_path):
    elf, image, cache, path = make_image(tmp_path)
    assert refused_connection(run(image, cache))
    good = path.read_bytes()
    for how, said in (("payload", "SHA-256 differs"), ("truncated", "truncated"), ("header", "another version")):
        damage(path, how)
        r = run(image, cache)
        assert refused_connection(r), (how, r.stderr)
        assert "warning: the image cache refused %s: " % path in r.stderr and said in r.stderr, (how, r.stderr)
        assert "decompressed again and kept anew" in r.stderr, r.stderr
        assert path.read_bytes() == good, how


def test_another_images_entry_is_refused(tmp_path):
    """An entry copied under another image's name (or a stale one) names its own image's SHA-256."""
    elf, image, cache, path = make_image(tmp_path)
    other = tmp_path / "vmlinuz-other"
    other.write_bytes(bzimage(elf + b"\0"))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(entry(elf, elf + b"\0", key_of=other.read_bytes()))
    r = run(image, cache)
    assert refused_connection(r) and "another image's" in r.stderr, r.stderr
    assert path.read_bytes() == entry(elf, elf, key_of=image.read_bytes())


def test_an_entry_or_directory_others_may_write_is_not_used(tmp_path):
    elf, image, cache, path = make_image(tmp_path)
    assert refused_connection(run(image, cache))
    good = path.read_bytes()
    # a symbolic link in the entry's place is not followed (its target stays as it was)
    target = tmp_path / "elsewhere"
    target.write_bytes(good)
    path.unlink()
    path.symlink_to(target)
    r = run(image, cache)
    assert "a symbolic link" in r.stderr and refused_connection(r), r.stderr
    assert target.read_bytes() == good and not path.is_symlink()  # replaced by a file of its own
    # an entry others may write
    os.chmod(path, 0o666)
    r = run(image, cache)
    assert "only it may write to" in r.stderr and refused_connection(r), r.stderr
    # a directory others may write: neither read nor written
    os.chmod(path.parent, 0o777)
    path.unlink()
    r = run(image, cache)
    assert "gdbsample: not a directory of this user's that only it may write to" in r.stderr and refused_connection(r), r.stderr
    assert not path.exists()


def test_at_most_four_entries_are_kept(tmp_path):
    elf, image, cache, path = make_image(tmp_path)
    names = []
    for i in range(6):
        img = tmp_path / ("vmlinuz-%d" % i)
        img.write_bytes(bzimage(elf + bytes(i + 1)))
        assert refused_connection(run(img, cache))
        names.append("image-%s.img" % hashlib.sha256(img.read_bytes()).hexdigest()[:32])
        os.utime(path.parent / names[-1], ns=(i * 10**9, i * 10**9))  # stored in this order
    assert sorted(os.listdir(path.parent)) == sorted(names[2:])
