# SPDX-License-Identifier: MIT
"""frames.py: raw Ethernet / ARP / IPv4 / UDP frames for the socket-netdev tests, checksums included.

Every builder takes keyword overrides for the fields a malformed frame gets wrong, and computes
the checksums over what it finally packs unless told a value, so a "bad checksum" frame differs
from a valid one in exactly that field.
"""
import ipaddress
import struct

ETH_IP, ETH_ARP, ETH_IPV6 = 0x0800, 0x0806, 0x86DD
PROTO_UDP = 17


def mac(text):
    return bytes(int(x, 16) for x in text.split(":"))


def ip4(text):
    return ipaddress.IPv4Address(text).packed


def checksum(data, start=0):
    """RFC 1071 one's complement checksum of data (big-endian 16-bit words)."""
    if len(data) % 2:
        data += b"\0"
    s = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(dst, src, ethertype, payload):
    return dst + src + struct.pack("!H", ethertype) + payload


def ipv4(src, dst, payload, proto=PROTO_UDP, version=4, ihl=5, total=None, flags_frag=0x4000, ttl=64,
         csum=None, options=b""):
    """An IPv4 packet; total defaults to the real length, csum to the correct header checksum."""
    total = 4 * ihl + len(payload) if total is None else total
    head = struct.pack("!BBHHHBBH4s4s", version << 4 | ihl, 0, total, 0x1234, flags_frag, ttl, proto, 0, src, dst)
    head += options
    if csum is None:
        csum = checksum(head)
    return head[:10] + struct.pack("!H", csum) + head[12:] + payload


def udp(src_ip, dst_ip, sport, dport, payload, length=None, csum=None):
    """A UDP datagram; csum None computes the correct one over the pseudo-header."""
    length = 8 + len(payload) if length is None else length
    seg = struct.pack("!HHHH", sport, dport, length, 0) + payload
    if csum is None:
        pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, PROTO_UDP, 8 + len(payload))
        csum = checksum(pseudo + seg) or 0xFFFF
    return seg[:6] + struct.pack("!H", csum) + seg[8:]


def arp(op, sender_mac, sender_ip, target_mac, target_ip, hlen=6, plen=4):
    return struct.pack("!HHBBH", 1, ETH_IP, hlen, plen, op) + sender_mac + sender_ip + target_mac + target_ip


def parse_udp_frame(frame):
    """-> (src ip, sport, dport, payload) of an IPv4/UDP frame, or None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != PROTO_UDP:
        return None
    ihl = (frame[14] & 0xF) * 4
    u = 14 + ihl
    sport, dport, length = struct.unpack("!HHH", frame[u:u + 6])
    return frame[26:30], sport, dport, frame[u + 8:u + length]
