# SPDX-License-Identifier: MIT
"""fakeguest.py: a UDP server in Python speaking the kernel's UDP shell protocol, for client tests.

It follows docs/udp-shell.md: malformed requests are counted and get no answer; the last output
per client (address, port, sequence) is cached and resent for a repeated sequence number without
running the command again; a request with the running command's sequence number is ignored; a
second client gets a busy reply while a command runs. Commands are Python callables, so a test
can count how often each ran. Faults: `drop` names outgoing chunk indices to lose once; `deaf` requests are lost on the way in.
"""
import socket
import threading
import time

import udpshell


class FakeGuest:
    def __init__(self, commands):
        self.commands = commands     # name -> fn(args, fake, client) -> output bytes
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.05)   # close() does not wake a blocked recvfrom: poll for stopping
        self.runs = {}               # command name -> times run
        self.malformed = 0           # requests dropped as the guest would
        self.requests = 0            # well-formed requests received
        self.cache = {}              # client address -> (seq, reply datagrams)
        self.running = None          # (client, seq, line) of the command in progress
        self.drop = set()            # chunk indices to drop once (first transmission only)
        self.deaf = 0                # well-formed requests to ignore, as if lost on the way
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def close(self):
        self.stopping = True
        self.thread.join(2)
        self.sock.close()

    def serve(self):
        while not self.stopping:
            try:
                data, client = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                seq, line = udpshell.parse_request(data)
            except udpshell.ProtocolError:
                self.malformed += 1
                continue
            self.requests += 1
            if self.deaf:
                self.deaf -= 1
                continue
            with self.lock:
                cached = self.cache.get(client)
                if cached and cached[0] == seq:
                    self.transmit(client, cached[1])
                    continue
                if self.running:
                    if self.running[:2] != (client, seq):
                        busy = udpshell.encode_reply(seq, 0, udpshell.FLAG_BUSY | udpshell.FLAG_LAST,
                                                     self.running[2])
                        self.sock.sendto(busy, client)
                    continue
                self.running = (client, seq, line)
            threading.Thread(target=self.execute, args=(client, seq, line), daemon=True).start()

    def execute(self, client, seq, line):
        name, *args = line.decode().split()
        self.runs[name] = self.runs.get(name, 0) + 1
        fn = self.commands.get(name)
        out = fn(args, self, client) if fn else f"shell: unknown command '{name}' (try help)\n".encode()
        replies = udpshell.split_output(seq, out)
        with self.lock:
            self.cache[client] = (seq, replies)
            self.running = None
            first = [r for i, r in enumerate(replies) if i not in self.drop]
            self.drop.clear()
        self.transmit(client, first)

    def transmit(self, client, replies):
        for r in replies:
            try:
                self.sock.sendto(r, client)
            except OSError:
                return


def send_load(fake, client, size, pps, seconds, drop_every=0):
    """The guest's `netload send`: a GSL1 stream from the shell's socket to client."""
    n = pps * seconds
    start = time.monotonic()
    sent = 0
    for i in range(n):
        wait = start + i / pps - time.monotonic()  # read the clock once: between a check and a
        if wait > 0:                               # second reading a busy host can pass `due`
            time.sleep(wait)
        if drop_every and i % drop_every == drop_every - 1:
            continue  # counted as sent: lost on the wire
        fake.sock.sendto(udpshell.encode_load(7, i, time.time_ns(), size), client)
        sent += 1
    ms = int((time.monotonic() - start) * 1000)
    return f"netload: sent {n} packets, {n * size} bytes in {ms} ms ({n * 1000 // max(ms, 1)} pkt/s)\n".encode()
