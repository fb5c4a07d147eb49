#!/usr/bin/env python3
"""Host side of the vsock test (vsock_test.sh starts the VM).

    vsock_test.py UDS_PATH [--bench MIB]

The guest runs `vsocktest serve 1024` (tests/integration/progs/vsocktest.c)
behind kiln-vmm --vsock 3,UDS_PATH. Each case connects the Firecracker way
("CONNECT <port>\\n" -> "OK <n>\\n") and prints ok/FAIL; the last one ends
the server. Exit status 1 if any case failed.
"""
import hashlib
import os
import socket
import sys
import threading
import time

PORT = 1024
MIB = 1 << 20
failures = []


class Conn:
    """A stream with a read buffer: lines and exact byte counts."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        chunk = self.s.recv(1 << 20)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def line(self):
        while b"\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed before a full line: %r" % self.buf)
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()

    def exact(self, n, sink=None):
        """n bytes; with a sink (a hash), fed to it instead of returned."""
        out = []
        while n:
            if not self.buf and not self._fill():
                raise EOFError("connection closed with %d bytes missing" % n)
            take, self.buf = self.buf[:n], self.buf[n:]
            n -= len(take)
            if sink:
                sink.update(take)
            else:
                out.append(take)
        return b"".join(out)

    def eof(self):
        """True if the peer closed (or shut down writing) with nothing more."""
        return not self.buf and not self._fill()

    def close(self):
        self.s.close()


def hconnect(path, port=PORT, timeout=30):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(b"CONNECT %d\n" % port)
    c = Conn(s)
    ok = c.line()
    if not ok.startswith("OK "):
        raise RuntimeError("handshake answered %r" % ok)
    return c


def command(path, cmd):
    c = hconnect(path)
    c.send(cmd.encode() + b"\n")
    return c


def case(name):
    def wrap(fn):
        def run(*args):
            try:
                fn(*args)
                print("ok   vsock-%s" % name, flush=True)
            except Exception as e:  # a failed case must not stop the others
                failures.append(name)
                print("FAIL vsock-%s: %s: %s" % (name, type(e).__name__, e), flush=True)

        return run

    return wrap


def check(cond, what):
    if not cond:
        raise AssertionError(what)


@case("small")
def t_small(path):
    c = command(path, "ECHO")
    for msg in [b"hello\n", b"x", b"Mixed Case 123\n" * 7, bytes(range(256)), b"z" * 70000]:
        c.send(msg)
        got = c.exact(len(msg))
        check(got == msg.upper(), "echo of %d bytes differs" % len(msg))
    c.s.shutdown(socket.SHUT_WR)
    check(c.eof(), "no end of file after ours")
    c.close()


@case("bulk-host-to-guest")
def t_bulk_h2g(path, size=64 * MIB):
    data = os.urandom(size)
    c = command(path, "RECV %d" % size)
    t = threading.Thread(target=c.send, args=(data,))
    t.start()
    line = c.line()
    t.join()
    want = "%s %d" % (hashlib.sha256(data).hexdigest(), size)
    check(line == want, "guest read %r, expected %r" % (line, want))
    c.close()


@case("bulk-guest-to-host")
def t_bulk_g2h(path, size=64 * MIB):
    c = command(path, "SEND %d" % size)
    h = hashlib.sha256()
    c.exact(size, h)
    line = c.line()
    check(line == h.hexdigest(), "host got sha256 %s, guest sent %s" % (h.hexdigest(), line))
    check(c.eof(), "no end of file after the data")
    c.close()


def host_listener(path, port):
    """Listen on PATH_PORT for one guest connection: read to end of file,
    answer with the sha256 of what came. Returns (thread, result dict)."""
    lpath = "%s_%d" % (path, port)
    if os.path.exists(lpath):
        os.unlink(lpath)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(lpath)
    # A jailed kiln-vmm connects as its own uid (README.md, "The jail").
    os.chmod(lpath, 0o666)
    ls.listen(8)
    ls.settimeout(30)
    res = {}

    def serve():
        try:
            s, _ = ls.accept()
            s.settimeout(30)
            h = hashlib.sha256()
            n = 0
            while True:
                b = s.recv(1 << 20)
                if not b:
                    break
                h.update(b)
                n += len(b)
            s.sendall(h.hexdigest().encode() + b"\n")
            s.close()
            res["sha"], res["n"] = h.hexdigest(), n
        except Exception as e:
            res["err"] = repr(e)
        finally:
            ls.close()
            os.unlink(lpath)

    t = threading.Thread(target=serve)
    t.start()
    return t, res


def dial(path, port, size, mode=""):
    t, res = host_listener(path, port)
    c = command(path, ("DIAL %d %d %s" % (port, size, mode)).strip())
    line = c.line()
    c.close()
    t.join()
    check("err" not in res, "host listener: %s" % res.get("err"))
    check(res.get("n") == size, "host got %s bytes, not %d" % (res.get("n"), size))
    check(line == "DIAL ok " + res["sha"], "guest said %r (host sha256 %s)" % (line, res["sha"]))


@case("guest-to-host")
def t_dial(path):
    dial(path, 5000, 8 * MIB)


@case("guest-to-host-nonblocking-connect")
def t_dial_nb(path):
    dial(path, 5001, 1 * MIB, "nb")


@case("guest-connect-refused")
def t_dial_refused(path):
    c = command(path, "DIAL 5999 10")
    line = c.line()
    c.close()
    check(line == "DIAL err ECONNRESET", "guest said %r" % line)


@case("rst-no-listener")
def t_rst(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    s.sendall(b"CONNECT 4444\n")
    got = s.recv(100)
    s.close()
    check(got == b"", "got %r instead of a closed connection" % got)


@case("concurrent-50")
def t_concurrent(path, n=50):
    conns = [hconnect(path) for _ in range(n)]
    for i, c in enumerate(conns):
        c.send(b"ECHO\nmessage number %d from the host\n" % i)
    for i, c in enumerate(conns):
        line = c.line()
        check(line == "MESSAGE NUMBER %d FROM THE HOST" % i, "connection %d: %r" % (i, line))
    # A second round, in reverse order, with more data each.
    for i, c in reversed(list(enumerate(conns))):
        c.send(b"abc" * 10000 + b"%d\n" % i)
    for i, c in reversed(list(enumerate(conns))):
        line = c.line()
        check(line == "ABC" * 10000 + str(i), "connection %d: second round differs" % i)
    for c in conns:
        c.s.shutdown(socket.SHUT_WR)
    for i, c in enumerate(conns):
        check(c.eof(), "connection %d: no end of file" % i)
        c.close()


@case("half-close")
def t_half(path):
    c = command(path, "HALF")
    c.send(b"q" * 100000)
    c.s.shutdown(socket.SHUT_WR)
    line = c.line()
    check(line == "got 100000", "guest said %r" % line)
    check(c.eof(), "no end of file after the reply")
    c.close()


@case("host-abort")
def t_abort(path):
    # The host vanishes mid-stream while the guest still writes: the guest
    # child must see an error (EPIPE/reset), not hang, and the server go on.
    c = command(path, "SEND %d" % (32 * MIB))
    c.exact(1 * MIB)
    c.close()
    time.sleep(0.2)
    c = command(path, "ECHO")
    c.send(b"still there?\n")
    check(c.line() == "STILL THERE?", "no echo after an aborted stream")
    c.close()


@case("signals-and-timeouts")
def t_intr(path):
    c = command(path, "INTR")
    line = c.line()
    check(line == "eintr", "guest said %r" % line)
    time.sleep(0.5)
    c.send(b"x")
    line = c.line()
    check(line == "INTR ok", "guest said %r" % line)
    c.close()


@case("poll")
def t_poll(path):
    c = command(path, "POLL")
    line = c.line()
    check(line == "ready", "guest said %r" % line)
    c.send(b"abc")
    line = c.line()
    check(line == "drained", "guest said %r" % line)
    c.s.shutdown(socket.SHUT_WR)
    line = c.line()
    check(line == "POLL ok", "guest said %r" % line)
    c.close()


@case("sigpipe-trigger")
def t_sigpipe(path):
    # The guest's verdict goes to its console (vsock_test.sh checks it).
    c = command(path, "SIGPIPE")
    check(c.line() == "ready", "no ready")
    c.close()
    time.sleep(0.3)


@case("alive")
def t_alive(path):
    c = command(path, "PING")
    check(c.line() == "pong", "no pong")
    c.close()


@case("quit")
def t_quit(path):
    c = command(path, "QUIT")
    check(c.line() == "bye", "no bye")
    c.close()


def bench(path, mib):
    """Throughput both ways; the guest neither hashes nor generates data."""
    size = mib * MIB
    c = command(path, "SOURCE %d" % size)
    t0 = time.monotonic()
    n = 0
    while n < size:
        b = c.s.recv(4 * MIB)
        if not b:
            break
        n += len(b)
    dt = time.monotonic() - t0
    c.close()
    check(n == size, "guest sent %d bytes, not %d" % (n, size))
    print("bench guest->host: %d MiB in %.2f s = %.0f MB/s" % (mib, dt, size / dt / 1e6), flush=True)

    data = b"\x5a" * (4 * MIB)
    c = command(path, "SINK %d" % size)
    t0 = time.monotonic()
    for _ in range(mib // 4):
        c.s.sendall(data)
    line = c.line()
    dt = time.monotonic() - t0
    c.close()
    check(line == "done %d" % size, "guest said %r" % line)
    print("bench host->guest: %d MiB in %.2f s = %.0f MB/s" % (mib, dt, size / dt / 1e6), flush=True)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    if "--bench" in sys.argv:
        mib = int(sys.argv[sys.argv.index("--bench") + 1])
        case("bench")(bench)(path, mib)
        t_quit(path)
        return 1 if failures else 0
    for t in (t_small, t_rst, t_half, t_concurrent, t_dial, t_dial_nb, t_dial_refused,
              t_bulk_h2g, t_bulk_g2h, t_abort, t_intr, t_poll, t_sigpipe, t_alive, t_quit):
        t(path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
