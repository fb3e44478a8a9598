#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_seeds.py: writes the small seed corpora under fuzz/corpus/ (a few literal inputs per harness).

Run from the repository root after changing a harness's input layout: python3 fuzz/make_seeds.py
Optional inputs: --x86-xml FILE (QEMU's i386-64bit.xml, to seed `arch` with the real thing) and
--cfi-elf FILE (an ELF with .eh_frame, e.g. build/tests/sampler/cfi_frames.elf)."""
import argparse
import gzip
import lzma
import os
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def pkt(p):
    return b"$" + p + b"#" + b"%02x" % (sum(p) & 255)


def rsp():
    stream = b"+" + pkt(b"T02thread:p01.02;") + b"+" + pkt(b"OK") + b"-" + pkt(b"E14") + pkt(b"O48690a")
    put("rsp", "replies", bytes([3, 1, 7, 2]) + stream)
    put("rsp", "escapes_rle", bytes([0]) + b"$a}\x03}]#bb$0* #7a$a*!b#0e")
    put("rsp", "bad_checksums", bytes([1, 0]) + b"$OK#00$OK#zz$OK#9A++x$#00")
    put("rsp", "g_reply", bytes([2, 200, 13]) + b"+" + pkt(b"00" * 304))


def stop():
    for i, s in enumerate(["T02thread:p01.02;", "T05thread:01;", "S05", "W00;process:1",
                           "T05swbreak:;thread:0a;core:1;", "X09"]):
        put("stop", "s%d" % i, s)
    # QEMU's "info status" text, read through qRcmd at the handshake (gdb_parse_status)
    for i, s in enumerate(["VM status: paused (postmigrate)\r\n", "VM status: running\r\n",
                           "VM status: paused (single step mode)\r\n"]):
        put("stop", "status%d" % i, s)
    # "info migrate" (gdb_parse_migration), read in a pause to see a migration under way
    for i, s in enumerate(["globals:\r\nstore-global-state: on\r\n",
                           "globals:\r\nMigration status: active\r\ntotal time: 3 ms\r\n",
                           "globals:\r\nMigration status: completed\r\n"]):
        put("stop", "migrate%d" % i, s)


def threads():
    put("threads", "qemu", "mp01.01\nmp01.02\nl")
    put("threads", "short", "m1,2,3\nm4\nl")
    put("threads", "bad", "m\nl")


def reply():
    # the handshake's replies (QEMU 7.2's qSupported, "info version" through qRcmd, a qXfer
    # chunk with includes) and the readers' (`g`, `p`, `m`, an error)
    put("reply", "qsupported", "PacketSize=1000;qXfer:features:read+;multiprocess+;QStartNoAckMode+")
    put("reply", "version", "7.2.15 (Debian 1:7.2+dfsg-7+deb12u18)\r\n")
    put("reply", "xfer", 'l<?xml version="1.0"?><target><xi:include href="i386-64bit.xml"/>'
        '<xi:include href="bad/><xi:include href="x.xml"/></target>')
    put("reply", "g", "00" * 8 + "efbeadde" + "0123456789abcdef")
    put("reply", "p", "78563412")
    put("reply", "error", "E14")


def arch(x86_xml):
    head = ('<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd"><target>'
            '<architecture>i386:x86-64</architecture>')
    if x86_xml:
        with open(x86_xml) as f:
            put("arch", "qemu72_x86_64", head + f.read() + "</target>")
    r64 = lambda n, extra="": '<reg name="%s" bitsize="64"%s/>' % (n, extra)
    put("arch", "aarch64", "<target><architecture>aarch64</architecture>" +
        "".join(r64("x%d" % i) for i in range(31)) + r64("sp") + r64("pc") +
        '<reg name="cpsr" bitsize="32"/></target>')
    put("arch", "regnum", "<architecture>riscv:rv64</architecture>" + r64("pc", ' regnum="32"') +
        r64("sp", ' regnum="2"') + r64("fp", " regnum='8'"))


def symmap():
    put("symmap", "system_map", "ffffffff81000000 T _stext\nffffffff81000000 T startup_64\n"
        "ffffffff81000100 t secondary_startup_64\nffffffff81001000 W weak_fn\n"
        "ffffffff82000000 D linux_banner\nffffffff81ffffff T _etext\n")
    put("symmap", "nm_sizes", "0000000000401000 0000000000000020 T main\n0000000000401020 0000000000000008 t leaf\r\n")
    put("symmap", "kallsyms_modules", "ffffffffc0000000 t modfn\t[mymod]\r\nffffffff81000000 T a;b\x01\n")
    put("symmap", "bad_digit", "ffffffff81000000 T good\nffffffff8O100000 T wrong\n")


def textnum():
    """The first byte picks the bound (odd: a small one), the rest is the text."""
    put("textnum", "u64_max", b"\x00ffffffffffffffff")
    put("textnum", "overflow", b"\x0018446744073709551616")
    put("textnum", "small", b"\x0165535")
    put("textnum", "prefix", b"\x000x10")


def capture():
    """A v2 capture: header, one samples chunk (one with an exact-frame extension), a summary.
    The first byte 1 tells the harness to recompute the CRCs."""
    h = bytearray(128)
    h[0:8] = b"GDBSAMP\0"
    struct.pack_into("<HHHHIIQQQBBH", h, 8, 2, 128, 1, 2, 100, 64, 0xffffffff80000000, 0xffffffffffffffff,
                     1700000000000000000, 2, 8, 1)
    struct.pack_into("<I", h, 124, zlib.crc32(bytes(h[:124])))
    recs = struct.pack("<QHBB", 1000, 0, 0, 2) + struct.pack("<QQ", 0xffffffff81000010, 0xffffffff81000200)
    recs += struct.pack("<QHBB", 2000, 1, 0x80 | 2, 3) + struct.pack("<QQQ", 1, 2, 3) + struct.pack("<H", 3) + bytes([1, 1, 2])

    def chunk(typ, payload, count):
        hdr = struct.pack("<IIII", 0x4b4e4843, typ, len(payload), count)
        return hdr + struct.pack("<I", zlib.crc32(hdr[4:] + payload)) + payload
    body = bytes(h) + chunk(1, recs, 2) + chunk(2, b"samples 2\n", 1)
    put("capture", "v2", b"\x01" + body)
    put("capture", "v2_raw", b"\x00" + body)


def qmp():
    put("qmp", "greeting", '{"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, "major": 7}, "package": ""}, '
        '"capabilities": ["oob"]}}\r\n{"return": {}}\r\n')
    put("qmp", "cpus", '{"return": [{"thread-id": 1234, "props": {"core-id": 0}, "qom-path": "/machine/unattached/'
        'device[0]", "cpu-index": 0, "target": "x86_64"}]}\r\n')
    put("qmp", "event_error", '{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "STOP"}\r\n'
        '{"error": {"class": "GenericError", "desc": "caf\\u00e9 \\ud83d\\ude00 \\n"}}\r\n')
    put("qmp", "numbers", '[0, -1, 1.5e3, true, false, null, "a\\"b", {}, []]')


def summary():
    put("summary", "ascii", "gdbsample: %v samples of 2 vCPUs, a \"quote\" and a \\ backslash")
    put("summary", "utf8", "caf\u00e9 \U0001f600 \t tab".encode() + b" \xff\xfe stray bytes \xe2\x82")


def bzimage(payload):
    """A minimal bzImage: boot sector + one setup sector, then the payload (+ size_append)."""
    img = bytearray(1024)
    img[0x1f1] = 1
    img[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", img, 0x206, 0x020f)
    img[0x211] = 1
    struct.pack_into("<II", img, 0x248, 0, len(payload))
    return bytes(img) + payload


def vmlinuz():
    elf = b"\x7fELF\x02\x01\x01" + bytes(57) + b"kernel text " * 20
    put("vmlinuz", "gzip", bzimage(gzip.compress(elf) + struct.pack("<I", len(elf))))
    put("vmlinuz", "xz", bzimage(lzma.compress(elf, check=lzma.CHECK_CRC32) + struct.pack("<I", len(elf))))
    put("vmlinuz", "lz4_magic", bzimage(b"\x02\x21\x4c\x18" + struct.pack("<I", 8) + bytes(8) + struct.pack("<I", len(elf))))
    put("vmlinuz", "zstd_magic", bzimage(b"\x28\xb5\x2f\xfd" + bytes(16) + struct.pack("<I", len(elf))))


def orc():
    """Three entries (call at sp+8, bp frame, end), ips as deltas (flag 2), a stack with a chain."""
    def ent(sp_reg, sp_off, bp_reg, bp_off, b5):
        return struct.pack("<hhBB", sp_off, bp_off, sp_reg | bp_reg << 4, b5)
    ents = ent(5, 8, 0, 0, 0) + ent(4, 16, 1, -16, 0) + ent(0, 0, 0, 0, 4)
    ips = struct.pack("<III", 0x100, 0x100, 0x100)
    stack = bytearray(256)
    struct.pack_into("<Q", stack, 0, 0xffffffff81000150)
    struct.pack_into("<QQ", stack, 0x40, 0xffffc90000010080, 0xffffffff81000250)
    regs = struct.pack("<HHHH", 0x120, 0, 0x40, 32)
    put("orc", "v1_chain", bytes([3, 2]) + ips + ents + regs + bytes(stack))
    put("orc", "v3_header", bytes([3, 2 | 1 | 4]) + ips + ents + bytes(20) + regs + bytes(stack))


def cfi(elf):
    if elf:
        with open(elf, "rb") as f:
            put("cfi", "cfi_frames_elf", f.read())


def conn():
    put("conn", "tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:5BA0 00000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 104804 1 0 100 0 0 10 0\n"
        "   1: 0100007F:5BA0 0100007F:D5DE 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0 20 4 30 10 -1\n")
    put("conn", "unix", "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "00000000618f20c5: 00000002 00000000 00010000 0001 01 105247 /tmp/g.sock\n"
        "00000000f4e37255: 00000003 00000000 00000000 0001 02     0 /tmp/g.sock\n"
        "000000001a2b3c4d: 00000003 00000000 00000000 0001 03 105300 @abstract\n")


def knet():
    """Records [u16 len][flags][frame]: an ARP request for the guest, then UDP shell requests (flag 4|8
    fixes the headers and aims at the shell's port; 1 runs the shell task)."""
    guest = bytes([0x52, 0x54, 0, 0x12, 0x34, 0x56])
    host = bytes([0x52, 0x55, 10, 0, 2, 2])
    arp = b"\xff" * 6 + host + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + host + \
        bytes([10, 0, 2, 2]) + bytes(6) + bytes([10, 0, 2, 15])

    def udp(payload):
        ip = struct.pack(">BBHHHBBH", 0x45, 0, 20 + 8 + len(payload), 0, 0, 64, 17, 0) + bytes([10, 0, 2, 2, 10, 0, 2, 15])
        return guest + host + b"\x08\x00" + ip + struct.pack(">HHHH", 40000, 9000, 8 + len(payload), 0) + payload

    def rec(frame, flags):
        return struct.pack("<HB", len(frame), flags) + frame
    help_ = udp(b"GSQ1" + struct.pack("<I", 1) + b"help")
    put("knet", "arp_and_shell", rec(arp, 0) + rec(help_, 4 | 8 | 1) + rec(help_, 4 | 8 | 1))
    put("knet", "busy_and_retry", rec(help_, 12) + rec(udp(b"GSQ1" + struct.pack("<I", 2) + b"net"), 12) +
        rec(help_, 12 | 1) + rec(help_, 12 | 2 | 1))
    put("knet", "truncated", rec(udp(b"GSQ1" + struct.pack("<I", 7) + b"~" * 100), 12 | 1))


def kallsyms():
    """Synthetic kallsyms tables as scripts/kallsyms.c lays them out (8-aligned labels): 6.1's order
    with offsets first and 3-byte seqs_of_names, and the later order with offsets last."""
    names = [("T" if i % 2 else "t") + ("func_%d" % i if i % 3 else "do_x%d" % i) for i in range(40)]
    addrs = [0xffffffff81000000 + 0x40 * i for i in range(40)]
    tokens = [b"func_" if i == 1 else bytes([i]) if 0x21 <= i <= 0x7e else b"" for i in range(256)]

    def pad(b):
        return b + bytes(-len(b) % 8)

    def enc(n):
        e = n.encode().replace(b"func_", b"\x01")
        return bytes([len(e)]) + e
    entries = [enc(n) for n in names]
    body = b"".join(entries)
    markers = struct.pack("<I", 0)
    order = sorted(range(40), key=lambda i: (names[i][1:], i))
    seqs = b"".join(bytes([i >> 16, (i >> 8) & 255, i & 255]) for i in order)
    table = b"".join(t + b"\0" for t in tokens)
    idx, off = [], 0
    for t in tokens:
        idx.append(off)
        off += len(t) + 1
    offsets = pad(b"".join(struct.pack("<I", a - 0xffffffff81000000) for a in addrs)) + struct.pack("<Q", 0xffffffff81000000)
    mid = pad(struct.pack("<I", 40)) + pad(body) + pad(markers) + pad(seqs) + pad(table) + struct.pack("<256H", *idx)
    put("kallsyms", "layout_6_1", pad(offsets) + mid)
    put("kallsyms", "layout_later", mid + offsets)


def taskdesc():
    """Task descriptions (sampler/taskdesc.h): each EXPR shape, comments and CRLF; and broken ones."""
    put("taskdesc", "testkernel", "current = ((struct cpu *)$percpu)->current\npid = pid\nname = name\n")
    put("taskdesc", "xv6", "# xv6-riscv\ncurrent = cpus[$tp].proc\npid = pid\nname = name\n")
    put("taskdesc", "by_cpu", "current = cpus[cpu].proc\r\npid = p.pid  # nested\r\ntgid = p.tgid\r\nname = comm\r\n")
    put("taskdesc", "riscv_tp", "current = (struct task_struct *)$tp\npid = pid\ntgid = tgid\nname = comm\n")
    put("taskdesc", "arm64", "current = *(struct task_struct **)($TPIDR_EL1 + &__entry_task)\n"
        "pid = pid\ntgid = tgid\nname = comm\n")
    put("taskdesc", "steps", "name=n\npid=a.b\ncurrent=((union u*)$gs_base)->a[0x10].b->c[cpu][$x0]")
    put("taskdesc", "bad_index", "current = cpus[1).proc\npid = pid\nname = name\n")
    put("taskdesc", "bad_cast", "current = (struct t *)$tp->x\npid = pid\nname = name\n")
    put("taskdesc", "bad_keys", "current = c\npid = p\npid = q\nfoo = 1\nname\n")
    put("taskdesc", "bad_bytes", b"current = a[99999999999999999999]\x00\xff\n\tpid = p->q\n")
    # Near TD_LINE_MAX (512): longest names, hex indices printed longer in decimal; a path that fits
    # as written but not canonically (`tgid=` becomes `tgid = `: refused).
    n = "n" * 63
    near = "current=*(%s**)($R%s+&%s%s[0xffffffffffffffff][0x1000000001])" % (n, n[1:], n, "[$%s]" % n * 4)
    assert len(near) <= 512
    put("taskdesc", "near_limit", near + "\npid=a\nname=b\n")
    path = ".".join([n] * 7 + [n[:59]])
    put("taskdesc", "over_canonical", "current=c\npid=a\nname=b\ntgid=%s\n" % path)


def imgcache():
    import hashlib
    elf = b"\x7fELF\x02\x01\x01" + bytes(57) + b"kernel text " * 20
    key = hashlib.sha256(b"vmlinuz").digest()

    def entry(payload, codec=b"xz", version=1):
        return (b"gdbsimg\0" + struct.pack("<II", version, 128) + key + struct.pack("<Q", len(payload)) +
                hashlib.sha256(payload).digest() + codec.ljust(8, b"\0") + bytes(32) + payload)
    put("imgcache", "good", entry(elf))
    put("imgcache", "damaged", entry(elf)[:200] + b"X" + entry(elf)[201:])
    put("imgcache", "not_elf", entry(b"kernel text " * 20, codec=b"zstd"))
    put("imgcache", "version2", entry(elf, version=2))
    put("imgcache", "codec_unpadded", entry(elf, codec=b"xzxzxzxz"))
    put("imgcache", "header_only", entry(elf)[:128])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--x86-xml")
    ap.add_argument("--cfi-elf")
    a = ap.parse_args()
    rsp(); stop(); threads(); reply(); arch(a.x86_xml); symmap(); capture(); qmp(); vmlinuz(); orc(); cfi(a.cfi_elf); summary()
    conn(); knet(); textnum(); kallsyms(); taskdesc(); imgcache()
