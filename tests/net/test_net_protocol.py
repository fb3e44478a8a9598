# SPDX-License-Identifier: MIT
"""The UDP shell and netload codecs (tools/udpshell.py) on literal datagrams."""
import pytest

import udpshell as u


def test_request_layout():
    assert u.encode_request(0x04030201, "uptime") == b"GSQ1\x01\x02\x03\x04uptime"
    assert u.parse_request(b"GSQ1\x01\x02\x03\x04uptime") == (0x04030201, b"uptime")
    assert u.encode_request(-1, b"ps") == b"GSQ1\xff\xff\xff\xffps"  # seq wraps to 32 bits


@pytest.mark.parametrize("cmd", ["", "x" * 128, "ps\n", "caf\xe9", "a\tb"])
def test_request_refuses_what_the_guest_would_drop_or_misparse(cmd):
    with pytest.raises(u.ProtocolError):
        u.encode_request(1, cmd)


def test_request_length_limits():
    assert len(u.encode_request(1, "x" * 127)) == 135
    with pytest.raises(u.ProtocolError, match="short"):
        u.parse_request(b"GSQ1\0\0\0\0")            # 8 bytes: no command
    with pytest.raises(u.ProtocolError, match="oversized"):
        u.parse_request(b"GSQ1\0\0\0\0" + b"x" * 128)
    with pytest.raises(u.ProtocolError, match="magic"):
        u.parse_request(b"GSQ2\0\0\0\0help")


def test_reply_layout_and_flags():
    d = b"GSR1\x2a\x00\x00\x00\x03\x00\x05\x00tail"
    assert u.parse_reply(d) == (42, 3, u.FLAG_LAST | u.FLAG_TRUNC, b"tail")
    assert u.encode_reply(42, 3, 5, b"tail") == d
    assert u.parse_reply(b"GSR1\x01\0\0\0\0\0\x01\0") == (1, 0, 1, b"")  # empty output: one empty last chunk


@pytest.mark.parametrize("data,why", [
    (b"GSR1\x01\0\0\0\0\0\x01", "short"),
    (b"GSQ1\x01\0\0\0\0\0\x01\0", "magic"),
    (b"GSR1\x01\0\0\0\0\0\x01\0" + b"x" * 1025, "oversized"),
])
def test_bad_replies(data, why):
    with pytest.raises(u.ProtocolError, match=why):
        u.parse_reply(data)


def test_split_output_chunks_at_1024():
    out = bytes(range(256)) * 9  # 2304 bytes -> 1024, 1024, 256
    ds = u.split_output(9, out)
    assert [len(d) for d in ds] == [1036, 1036, 268]
    assert [u.parse_reply(d)[1:3] for d in ds] == [(0, 0), (1, 0), (2, u.FLAG_LAST)]
    assert u.split_output(9, b"") == [b"GSR1\x09\0\0\0\0\0\x01\0"]
    assert len(u.split_output(9, b"x" * 1024)) == 1


def test_reassembly_in_any_order_with_duplicates():
    r = u.Reassembly()
    r.add(2, u.FLAG_LAST, b"c")
    assert not r.complete() and r.missing() == [0, 1]
    r.add(0, 0, b"a")
    r.add(0, 0, b"a")  # a resend's copy
    assert r.missing() == [1]
    r.add(1, 0, b"b")
    assert r.complete() and r.output() == b"abc" and r.duplicates == 1


def test_reassembly_without_last_knows_only_gaps_below_the_highest():
    r = u.Reassembly()
    r.add(0, 0, b"a")
    r.add(3, 0, b"d")
    assert r.missing() == [1, 2] and not r.complete()


@pytest.mark.parametrize("chunks,why", [
    ([(1, u.FLAG_LAST, b"b"), (2, 0, b"c")], "after the last"),
    ([(1, u.FLAG_LAST, b"b"), (0, u.FLAG_LAST, b"a")], "two last"),
    ([(3, 0, b"d"), (1, u.FLAG_LAST, b"b")], "below chunk 3"),
    ([(0, 0, b"a"), (0, 0, b"A")], "different contents"),
])
def test_reassembly_refuses_inconsistent_replies(chunks, why):
    r = u.Reassembly()
    with pytest.raises(u.ProtocolError, match=why):
        for c in chunks:
            r.add(*c)


def test_load_datagram_layout():
    d = u.encode_load(0x11223344, 5, 0x0102030405060708, 30)
    assert d == b"GSL1\x44\x33\x22\x11\x05" + b"\0" * 7 + b"\x08\x07\x06\x05\x04\x03\x02\x01" + b"\0" * 6
    assert u.parse_load(d) == (0x11223344, 5, 0x0102030405060708)
    for size in (23, 1473):
        with pytest.raises(u.ProtocolError):
            u.encode_load(1, 0, 0, size)
    with pytest.raises(u.ProtocolError, match="magic"):
        u.parse_load(b"GSR1" + bytes(20))


def test_load_count_loss_duplicates_and_strays():
    c = u.LoadCount()
    for seq in (0, 1, 1, 4, 2):
        assert c.add(u.encode_load(9, seq, 0, 24), now=seq)
    assert not c.add(u.encode_load(8, 3, 0, 24), now=5)   # another stream
    assert not c.add(b"GSL1", now=6)                        # short
    assert (c.packets, c.bytes, c.duplicates, c.lost, c.malformed) == (4, 96, 1, 1, 2)  # 3 never came
    assert (c.first, c.last) == (0, 2)  # the duplicate at now=1 and strays are not "last"


def test_guest_lines_parse():
    s = u.parse_sink_line("netload: sink udp/9001: 100 packets, 51200 bytes, 3 lost (2.91%), "
                          "1 duplicates, 2 malformed, 998 pkt/s over 100 ms\n")
    assert s == dict(port=9001, packets=100, bytes=51200, lost=3, loss_pct=2.91, duplicates=1, malformed=2,
                     rate=998, ms=100)
    assert u.parse_send_line("netload: sent 10 packets, 5120 bytes in 11 ms (909 pkt/s)") == \
        dict(packets=10, bytes=5120, ms=11, rate=909, not_sent=0, late=0)
    assert u.parse_send_line("netload: sent 8 packets, 4096 bytes in 11 ms (727 pkt/s), 2 not sent (ring full)\n") \
        == dict(packets=8, bytes=4096, ms=11, rate=727, not_sent=2, late=0)
    # fell behind and ran out of time: the sequence numbers it never used are counted apart
    assert u.parse_send_line("netload: sent 14979 packets, 7669248 bytes in 3000 ms (4993 pkt/s), 0 not sent "
                             "(ring full), 21 not sent (out of time)\n") == \
        dict(packets=14979, bytes=7669248, ms=3000, rate=4993, not_sent=0, late=21)
    with pytest.raises(u.ProtocolError):
        u.parse_sink_line("netload: no sink running")


def test_frame_checksums_on_known_answers():
    import frames
    # RFC 1071's example words 0001 f203 f4f5 f6f7 sum to 0xddf2 (checksum its complement)
    assert frames.checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0xFFFF - 0xDDF2
    # a header from a real capture (Wikipedia's IPv4 checksum example): checksum b861
    head = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert frames.checksum(head) == 0xB861
    p = frames.ipv4(frames.ip4("192.168.0.1"), frames.ip4("192.168.0.199"), b"\0" * 95, ttl=64)
    assert frames.checksum(p[:20]) == 0 and p[10:12] != b"\0\0"  # a valid header sums to zero
    u = frames.udp(frames.ip4("10.0.2.2"), frames.ip4("10.0.2.15"), 1234, 9000, b"GSQ1\0\0\0\0ps")
    pseudo = frames.ip4("10.0.2.2") + frames.ip4("10.0.2.15") + bytes([0, 17, 0, len(u)])
    assert frames.checksum(pseudo + u) == 0
