# SPDX-License-Identifier: MIT
"""A fake gdbstub in a thread, for tests that need a peer whose every answer they choose: one vCPU
at pc 0 (not an upper-half kernel, so no kernel is read from guest memory), every memory read
unmapped; 0x03 stops it only while it runs and is discarded otherwise, as QEMU does. `monitor`, if
given, answers qRcmd as QEMU relays its monitor: called with the command's text, it returns the
output (sent as 'O' packets, then OK) or None for a stub without the command. `hook`, if given, is
called with each request (bytes; b"\\x03" for a stop byte) before it is answered, in the stub's
thread; bytes it returns are sent after the answer (an unasked stop reply, say). Every request is kept
in `requests` (bytes, with b"\\x03" for a stop byte), for tests that check what was sent when."""
import socket
import threading


def packet(payload):
    return b"$" + payload + b"#" + b"%02x" % (sum(payload) & 255)


class FakeStub:
    REGS = b"00" * 1024  # more than the default x86_64 layout needs; all zero

    def __init__(self, monitor=None, hook=None):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1)
        self.port = self.lsock.getsockname()[1]
        self.running = False
        self.monitor = monitor
        self.hook = hook
        self.requests, self.lock = [], threading.Lock()
        self.closed = threading.Event()  # set once the peer (the last holder of the socket) closed it
        threading.Thread(target=self.serve, daemon=True).start()

    def answer(self, req):
        if req.startswith(b"qSupported"):
            return b"PacketSize=1000;multiprocess+"
        if req == b"?":
            return b"T05thread:p01.01;"
        if req == b"qfThreadInfo":
            return b"mp01.01"
        if req == b"qsThreadInfo":
            return b"l"
        if req == b"qC":
            return b"QCp01.01"
        if req.startswith(b"Hg"):
            return b"OK"
        if req == b"g":
            return self.REGS
        if req[:1] in (b"m", b"p"):
            return b"E14"
        if req[:1] == b"T":
            return b"E01"  # no hot-plugged vCPU
        if req.startswith(b"D"):
            return b"OK"
        if req.startswith(b"qRcmd,") and self.monitor:
            text = self.monitor(bytes.fromhex(req[6:].decode()).decode())
            if text is not None:  # QEMU sends no 'O' packet for a command that printed nothing
                return ([b"O" + text.encode().hex().encode()] if text else []) + [b"OK"]
        return b""  # the rest: not supported

    def sent(self):
        with self.lock:
            return list(self.requests)

    def serve(self):
        try:
            self.serve_one()
        finally:
            self.closed.set()

    def serve_one(self):
        try:
            c, _ = self.lsock.accept()
        except OSError:
            return
        buf = b""
        with c:
            c.settimeout(30)
            while True:
                try:
                    data = c.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                out = b""
                while buf:
                    if buf[:1] == b"+":
                        buf = buf[1:]
                    elif buf[:1] == b"\x03":
                        buf = buf[1:]
                        with self.lock:
                            self.requests.append(b"\x03")
                        extra = self.hook(b"\x03") if self.hook else None
                        if self.running:
                            out += packet(b"T02thread:p01.01;")
                            self.running = False
                        out += extra or b""
                    elif buf[:1] == b"$":
                        end = buf.find(b"#")
                        if end < 0 or len(buf) < end + 3:
                            break
                        req, buf = buf[1:end], buf[end + 3:]
                        with self.lock:
                            self.requests.append(req)
                        extra = self.hook(req) if self.hook else None
                        out += b"+"
                        if req == b"c":
                            self.running = not (extra or b"").startswith((b"$T", b"$S"))  # a stop sent after it
                            out += extra or b""
                            continue
                        reply = self.answer(req)
                        for one in reply if isinstance(reply, list) else [reply]:
                            out += packet(one)
                        out += extra or b""
                    else:
                        buf = buf[1:]
                if out:
                    c.sendall(out)

    def close(self):
        self.lsock.close()
