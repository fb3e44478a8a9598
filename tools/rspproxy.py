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


def run_stopped(gdb_port, argv, when, while_stopped, fired_timeout=60, timeout=60, sent=None):
    """gdbsample's argv (its -p given as "{port}") run against gdb_port through a proxy and
    SIGSTOPped in the proxy's thread at the first request for which when(req, n) is true -- the
    way to leave it stopped mid-stop, for its guard to act. while_stopped(proxy) then runs (the
    test's checks on the guest), gdbsample is continued on every path and waited for.
    (returncode, stdout, stderr); AssertionError if the request never came. sent (a list): the
    requests the proxy saw, appended, for a failure's message."""
    import os
    import signal
    import subprocess
    fired, proc = threading.Event(), {}

    def hook(req, n):
        if not fired.is_set() and when(req, n):
            fired.set()
            os.kill(proc["p"].pid, signal.SIGSTOP)

    px = RspProxy(gdb_port, hook=hook)
    try:
        p = proc["p"] = subprocess.Popen([a.format(port=px.port) for a in argv], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert fired.wait(fired_timeout), px.sent()[-400:]
            while_stopped(px)
            assert p.poll() is None
        finally:
            os.kill(p.pid, signal.SIGCONT)
            out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    finally:
        if sent is not None:
            sent.extend(px.sent())
        px.close()
