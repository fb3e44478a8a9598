# SPDX-License-Identifier: MIT
"""udpshell.py: the kernel's UDP shell and netload wire formats, and a small client for them.

The codec functions take and return bytes and never touch a socket, so tests feed them literal
datagrams; `Reassembly` turns reply chunks into one output, also without I/O. `Client` is the
transport: one UDP socket on 127.0.0.1, used by tools/udpsh, tools/netload, the tests and the
benchmark. The formats are docs/udp-shell.md; all integers are little-endian.

Shell request, client -> guest udp/9000:
    0  4  magic b"GSQ1"
    4  4  sequence number (a retry of the same command reuses it)
    8  1-127  the command line, ASCII, no newline
Shell reply, guest -> the request's source:
    0  4  magic b"GSR1"
    4  4  the request's sequence number
    8  2  chunk index, from 0
   10  2  flags: FLAG_LAST, FLAG_BUSY (not run: the payload names the running command),
          FLAG_TRUNC (output past 64 KiB was cut)
   12  0-1024  the next piece of the output
netload datagram, either direction:
    0  4  magic b"GSL1"
    4  4  stream id
    8  8  sequence number, from 0
   16  8  sender's timestamp, ns
   24  ... padding to the datagram size (24-1472 bytes)
"""
import os
import re
import select
import socket
import struct
import time

REQ_MAGIC = b"GSQ1"
REPLY_MAGIC = b"GSR1"
LOAD_MAGIC = b"GSL1"
REQ_HEADER = struct.Struct("<4sI")        # magic, sequence
REPLY_HEADER = struct.Struct("<4sIHH")    # magic, sequence, chunk index, flags
LOAD_HEADER = struct.Struct("<4sIQQ")     # magic, stream id, sequence, timestamp ns
CMD_MAX = 127                             # longest command line a request carries
CHUNK_MAX = 1024                          # longest output piece in one reply
LOAD_MIN, LOAD_MAX = LOAD_HEADER.size, 1472  # netload datagram sizes (1472: UDP payload in 1500 MTU)
FLAG_LAST, FLAG_BUSY, FLAG_TRUNC = 1, 2, 4


class ProtocolError(Exception):
    """A datagram that is not what the format says; the message is one line."""


class ShellError(Exception):
    """The client gave up (timeout, guest busy, inconsistent reply); the message is one line."""


# -- shell requests and replies -------------------------------------------------------------
def encode_request(seq, command):
    """-> the request datagram for command (str or bytes, 1-127 ASCII characters)."""
    cmd = command.encode("latin-1", "replace") if isinstance(command, str) else bytes(command)
    if not 1 <= len(cmd) <= CMD_MAX:
        raise ProtocolError(f"a command must be 1-{CMD_MAX} characters, not {len(cmd)}")
    if any(b < 0x20 or b > 0x7e for b in cmd):
        raise ProtocolError("a command must be printable ASCII on one line")
    return REQ_HEADER.pack(REQ_MAGIC, seq & 0xffffffff) + cmd


def parse_request(data):
    """-> (seq, command bytes); the checks the guest makes before running a request."""
    if len(data) < REQ_HEADER.size + 1:
        raise ProtocolError(f"short request: {len(data)} bytes")
    if len(data) > REQ_HEADER.size + CMD_MAX:
        raise ProtocolError(f"oversized request: {len(data)} bytes")
    magic, seq = REQ_HEADER.unpack_from(data)
    if magic != REQ_MAGIC:
        raise ProtocolError(f"bad request magic {magic!r}")
    return seq, bytes(data[REQ_HEADER.size:])


def encode_reply(seq, index, flags, payload):
    if len(payload) > CHUNK_MAX:
        raise ProtocolError(f"a reply chunk carries at most {CHUNK_MAX} bytes, not {len(payload)}")
    return REPLY_HEADER.pack(REPLY_MAGIC, seq & 0xffffffff, index, flags) + bytes(payload)


def parse_reply(data):
    """-> (seq, index, flags, payload)."""
    if len(data) < REPLY_HEADER.size:
        raise ProtocolError(f"short reply: {len(data)} bytes")
    if len(data) > REPLY_HEADER.size + CHUNK_MAX:
        raise ProtocolError(f"oversized reply: {len(data)} bytes")
    magic, seq, index, flags = REPLY_HEADER.unpack_from(data)
    if magic != REPLY_MAGIC:
        raise ProtocolError(f"bad reply magic {magic!r}")
    return seq, index, flags, bytes(data[REPLY_HEADER.size:])


def split_output(seq, output, flags=0):
    """The reply datagrams for output, as the guest sends them (used by the fake guest)."""
    pieces = [output[i:i + CHUNK_MAX] for i in range(0, len(output), CHUNK_MAX)] or [b""]
    return [encode_reply(seq, i, flags | (FLAG_LAST if i == len(pieces) - 1 else 0), p)
            for i, p in enumerate(pieces)]


class Reassembly:
    """The chunks of one reply, by index. add() each chunk of this sequence number; the reply
    is complete when the last chunk and every index below it are here."""

    def __init__(self):
        self.chunks = {}     # index -> payload
        self.last = None     # index of the chunk flagged last, once seen
        self.flags = 0       # union of every chunk's flags
        self.duplicates = 0  # chunks seen twice (a resend's copies)

    def add(self, index, flags, payload):
        if self.last is not None and index > self.last:
            raise ProtocolError(f"chunk {index} after the last chunk {self.last}")
        if flags & FLAG_LAST:
            if self.last is not None and index != self.last:
                raise ProtocolError(f"two last chunks: {self.last} and {index}")
            if any(i > index for i in self.chunks):
                raise ProtocolError(f"last chunk {index} below chunk {max(self.chunks)}")
            self.last = index
        if index in self.chunks:
            self.duplicates += 1
            if self.chunks[index] != payload:
                raise ProtocolError(f"chunk {index} arrived twice with different contents")
        self.chunks[index] = payload
        self.flags |= flags

    def missing(self):
        """Indices known to be lost: those below the highest index seen that are not here."""
        top = self.last if self.last is not None else max(self.chunks, default=-1)
        return [i for i in range(top + 1) if i not in self.chunks]

    def complete(self):
        return self.last is not None and not self.missing()

    def output(self):
        return b"".join(self.chunks[i] for i in range(self.last + 1))


# -- netload datagrams ------------------------------------------------------------------------
def encode_load(stream, seq, ts_ns, size):
    if not LOAD_MIN <= size <= LOAD_MAX:
        raise ProtocolError(f"a netload datagram is {LOAD_MIN}-{LOAD_MAX} bytes, not {size}")
    return LOAD_HEADER.pack(LOAD_MAGIC, stream & 0xffffffff, seq, ts_ns) + bytes(size - LOAD_MIN)


def parse_load(data):
    """-> (stream, seq, ts_ns)."""
    if len(data) < LOAD_MIN:
        raise ProtocolError(f"short netload datagram: {len(data)} bytes")
    magic, stream, seq, ts = LOAD_HEADER.unpack_from(data)
    if magic != LOAD_MAGIC:
        raise ProtocolError(f"bad netload magic {magic!r}")
    return stream, seq, ts


class LoadCount:
    """What a netload receiver counts, as the guest's sink does: packets and bytes of distinct
    sequence numbers; a sequence seen again is a duplicate; loss is the highest sequence + 1
    minus the distinct sequences seen."""

    def __init__(self, stream=None):
        self.stream = stream   # only this stream counts (None: the first one seen)
        self.packets = 0       # distinct datagrams of the stream
        self.bytes = 0         # their UDP payload bytes
        self.seen = set()      # their sequence numbers
        self.duplicates = 0    # datagrams of a sequence already seen
        self.malformed = 0     # not netload datagrams, or of another stream
        self.first = None      # monotonic time of the first and last datagram counted
        self.last = None

    def add(self, data, now):
        try:
            stream, seq, _ = parse_load(data)
        except ProtocolError:
            self.malformed += 1
            return False
        if self.stream is None:
            self.stream = stream
        if stream != self.stream:
            self.malformed += 1
            return False
        if seq in self.seen:
            self.duplicates += 1
            return True
        self.seen.add(seq)
        self.packets += 1
        self.bytes += len(data)
        self.first = now if self.first is None else self.first
        self.last = now
        return True

    @property
    def lost(self):
        return max(self.seen) + 1 - len(self.seen) if self.seen else 0


SINK_LINE = re.compile(r"netload: sink udp/(\d+): (\d+) packets, (\d+) bytes, (\d+) lost \(([\d.]+)%\), "
                       r"(\d+) duplicates, (\d+) malformed, (\d+) pkt/s over (\d+) ms")
SEND_LINE = re.compile(r"netload: sent (\d+) packets, (\d+) bytes in (\d+) ms \((\d+) pkt/s\)"
                       r"(?:, (\d+) not sent(?: \(ring full\))?)?(?:, (\d+) not sent \(out of time\))?")


def parse_sink_line(text):
    """The guest's `netload stats|stop` line -> dict, or ProtocolError."""
    m = SINK_LINE.search(text)
    if not m:
        raise ProtocolError(f"not a netload sink line: {text.strip()!r}")
    keys = ("port", "packets", "bytes", "lost", "loss_pct", "duplicates", "malformed", "rate", "ms")
    return {k: (float(v) if k == "loss_pct" else int(v)) for k, v in zip(keys, m.groups())}


def parse_send_line(text):
    """The guest's `netload send` line -> dict, or ProtocolError. The kernel adds `, K not sent
    (ring full)`: datagrams whose sequence number was used but that never left (not_sent); and,
    when the sender fell behind its schedule and the time ran out, `, L not sent (out of time)`:
    sequence numbers never used (late)."""
    m = SEND_LINE.search(text)
    if not m:
        raise ProtocolError(f"not a netload send line: {text.strip()!r}")
    return dict(zip(("packets", "bytes", "ms", "rate", "not_sent", "late"), (int(g or 0) for g in m.groups())))


# -- the client ---------------------------------------------------------------------------------
class Result:
    def __init__(self, output, flags, sends, seconds):
        self.output = output    # the command's output, bytes, exactly as the guest printed it
        self.flags = flags      # union of the reply's flags (FLAG_TRUNC says output was cut)
        self.sends = sends      # requests sent (1 + retries used)
        self.seconds = seconds  # wall time from first send to the complete reply


class Client:
    """Runs shell commands over one UDP socket on 127.0.0.1.

    Retry policy: a request is resent with the same sequence number when no datagram of its reply
    arrived for `wait` seconds, or at once when the last chunk shows a missing index. `wait`
    starts at FIRST_WAIT and doubles after each send up to MAX_WAIT, so a lost request of a short
    command is retried within a second while a long command (`profile 2000` under TCG) is not
    flooded with resends; resending is harmless either way, since the guest ignores a request
    whose command is still running and answers a finished one from its cache. The whole command
    fails after `timeout` seconds or `retries` resends, whichever comes first."""

    FIRST_WAIT = 0.5   # seconds of silence before the first resend
    MAX_WAIT = 8.0     # the doubling stops here, so a lost last chunk costs at most this
    BUSY_WAIT = 0.2    # seconds before resending a request the guest refused as busy

    def __init__(self, host="127.0.0.1", port=9000, timeout=120.0, retries=8, sock=None):
        self.addr = (host, port)
        self.timeout = timeout
        self.retries = retries
        self.sock = sock or socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if sock is None:
            self.sock.bind(("127.0.0.1", 0))
        self.seq = int.from_bytes(os.urandom(4), "little")  # random start: a new client never hits an old cache
        self.stale = 0  # reply datagrams of other sequence numbers, ignored

    def close(self):
        self.sock.close()

    def next_seq(self):
        self.seq = (self.seq + 1) & 0xffffffff
        return self.seq

    def send(self, seq, command):
        self.sock.sendto(encode_request(seq, command), self.addr)

    def run(self, command, seq=None, on_other=None):
        """-> Result for command. on_other(data, now) receives every datagram that is not a shell
        reply (netload from-guest); then the timeout only counts after it stops arriving."""
        seq = self.next_seq() if seq is None else seq
        request = encode_request(seq, command)
        start = time.monotonic()
        deadline = start + self.timeout
        wait = self.FIRST_WAIT
        sends = retries = 0  # requests sent; resends for loss (busy resends are not loss)
        asm = Reassembly()
        busy = None          # the running command the guest named in its last busy reply
        resend_at = start
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if now >= resend_at:
                if sends and busy is None:
                    if retries == self.retries:
                        break
                    retries += 1
                self.sock.sendto(request, self.addr)
                sends += 1
                busy = None
                resend_at = now + wait
                wait = min(wait * 2, self.MAX_WAIT)
            ready, _, _ = select.select([self.sock], [], [], max(min(resend_at, deadline) - now, 0))
            if not ready:
                continue
            data, _ = self.sock.recvfrom(65535)
            now = time.monotonic()
            if data[:4] != REPLY_MAGIC:
                if on_other:
                    on_other(data, now)
                    resend_at = max(resend_at, now + self.FIRST_WAIT)  # the command is running
                continue
            try:
                rseq, index, flags, payload = parse_reply(data)
            except ProtocolError as e:
                raise ShellError(f"bad reply from {self.addr[0]}:{self.addr[1]}: {e}")
            if rseq != seq:
                self.stale += 1
                continue
            if flags & FLAG_BUSY:
                busy = payload.decode(errors="replace").strip()
                resend_at = now + self.BUSY_WAIT
                continue
            try:
                asm.add(index, flags, payload)
            except ProtocolError as e:
                raise ShellError(f"bad reply from {self.addr[0]}:{self.addr[1]}: {e}")
            if asm.complete():
                return Result(asm.output(), asm.flags, sends, now - start)
            if flags & FLAG_LAST:
                resend_at = now                            # a chunk below it was lost
            else:
                resend_at = max(resend_at, now + self.FIRST_WAIT)
        where = f"{self.addr[0]}:{self.addr[1]}"
        if busy is not None:
            raise ShellError(f"guest at {where} stayed busy with another UDP command ({busy})")
        if asm.chunks:
            raise ShellError(f"incomplete reply from {where} after {sends} sends: "
                             f"have chunks {sorted(asm.chunks)}, missing {asm.missing() or 'the last'}")
        raise ShellError(f"no reply from {where} after {sends} sends in {time.monotonic() - start:.1f} s")
