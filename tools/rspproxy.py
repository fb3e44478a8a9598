# SPDX-License-Identifier: MIT
"""A loopback TCP proxy in front of a real gdbstub, for tests that must act at one exact request
of gdbsample's (a real QEMU answers everything else). Bytes pass through unchanged both ways;
`hook(req, n)`, if given, is called in the proxy's thread with each request gdbsample sends (the
packet's payload, or b"\\x03" for a stop byte) and how many of that kind (its first byte) came
before, before the request is passed on (with the rest of the chunk it came in: a stub acts on
no half packet). One client, as a gdbstub takes. Every request is kept in
`requests`."""
import socket
import threading


class RspProxy:
    def __init__(self, port, hook=None, host="127.0.0.1"):
        self.target = (host, port)
        self.hook = hook
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1)
        self.port = self.lsock.getsockname()[1]
        self.requests, self.lock, self.kinds = [], threading.Lock(), {}
        threading.Thread(target=self.serve, daemon=True).start()

    def sent(self):
        with self.lock:
            return list(self.requests)

    def note(self, req):
        with self.lock:
            self.requests.append(req)
            n = self.kinds.get(req[:1], 0)
            self.kinds[req[:1]] = n + 1
        if self.hook:
            self.hook(req, n)

    def upstream(self, c, s):
        """gdbsample -> stub: each chunk as it came, in one write (Nagle's delays would otherwise
        add ~40 ms a request), after the hook has seen every request the chunk completes."""
        buf = b""
        while True:
            try:
                data = c.recv(65536)
            except OSError:
                break
            if not data:
                break
            buf += data
            while buf:
                if buf[:1] == b"\x03":
                    self.note(b"\x03")
                    buf = buf[1:]
                elif buf[:1] == b"$":
                    end = buf.find(b"#")
                    if end < 0 or len(buf) < end + 3:
                        break
                    self.note(buf[1:end])
                    buf = buf[end + 3:]
                else:
                    buf = buf[1:]
            try:
                s.sendall(data)
            except OSError:
                break
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def downstream(self, c, s):
        while True:
            try:
                data = s.recv(65536)
            except OSError:
                break
            if not data:
                break
            try:
                c.sendall(data)
            except OSError:
                break
        try:
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def serve(self):
        try:
            c, _ = self.lsock.accept()
        except OSError:
            return
        s = socket.create_connection(self.target, timeout=30)
        s.settimeout(None)
        for k in (c, s):
            k.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t = threading.Thread(target=self.downstream, args=(c, s), daemon=True)
        t.start()
        self.upstream(c, s)
        t.join(30)
        c.close()
        s.close()

    def close(self):
        self.lsock.close()
