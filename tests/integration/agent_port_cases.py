# SPDX-License-Identifier: MIT
"""Port streams (KILN_STREAM_PORT) of kiln-agent: cases of agent_host_test.py,
which imports this module after its helpers are defined and runs every
case_* here with its own. The agent runs on the host in those tests, so the
guest's loopback is the host's: each case starts its own TCP servers on
127.0.0.1 or ::1 at a port the kernel picks."""
import errno
import hashlib
import os
import socket
import struct
import threading
import time

import __main__ as h  # agent_host_test.py, run as the script

K = h.K


def u32(v):
    return struct.pack("<I", v)


def connect(a, port, family=0):
    """A port stream; returns (conn, CONNECTED's family) or (conn, None) on ERROR."""
    c = a.conn(K["KILN_STREAM_PORT"])
    c.send(K["KILN_MSG_CONNECT"], u32(port) + u32(family))
    t, p = c.expect_frame()
    if t == K["KILN_MSG_ERROR"]:
        c.err = h.parse_error(p)
        return c, None
    h.check(t == K["KILN_MSG_CONNECTED"], "expected CONNECTED, got %s" % h.describe(t, p))
    return c, struct.unpack("<I", p)[0]


class Server:
    """A TCP server on loopback that runs fn(sock) for each connection in a thread."""

    def __init__(self, fn, family=socket.AF_INET, count=1):
        self.s = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET6:
            self.s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        self.s.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        self.s.listen(8)
        self.s.settimeout(20)
        self.port = self.s.getsockname()[1]
        self.errors, self.results = [], []
        self.t = threading.Thread(target=self._run, args=(fn, count), daemon=True)
        self.t.start()

    def _run(self, fn, count):
        try:
            for _ in range(count):
                conn, _ = self.s.accept()
                conn.settimeout(20)
                with conn:
                    self.results.append(fn(conn))
        except Exception as e:  # noqa: BLE001 - reported by join()
            self.errors.append(e)
        finally:
            self.s.close()

    def join(self):
        self.t.join(30)
        h.check(not self.t.is_alive(), "the test server did not finish")
        h.eq(self.errors, [], "test server errors")
        return self.results


def read_all(sock):
    out = bytearray()
    while True:
        x = sock.recv(1 << 16)
        if not x:
            return bytes(out)
        out += x


def recv_stream(c):
    """DATA until DONE, then EOF: the bytes."""
    out = bytearray()
    while True:
        t, p = c.expect_frame()
        if t == K["KILN_MSG_DONE"]:
            h.eq(p, b"", "DONE payload")
            return bytes(out)
        h.check(t == K["KILN_MSG_DATA"], "expected DATA, got %s" % h.describe(t, p))
        h.check(0 < len(p) <= K["KILN_DATA_CHUNK"], "data frame of %d bytes" % len(p))
        out += p


def send_data(c, data):
    for i in range(0, len(data), K["KILN_DATA_CHUNK"]):
        c.send(K["KILN_MSG_DATA"], data[i:i + K["KILN_DATA_CHUNK"]])


def case_port_echo(a, d):
    def echo(s):
        got = read_all(s)
        s.sendall(got[::-1])
        return got
    srv = Server(echo)
    c, fam = connect(a, srv.port)
    h.eq(fam, 4, "family")
    send_data(c, b"hello, guest")
    c.send(K["KILN_MSG_DONE"])  # half-close: the server reads EOF, then answers
    h.eq(recv_stream(c), b"tseug ,olleh", "the answer after the half-close")
    c.expect_eof()
    h.eq(srv.join(), [b"hello, guest"], "what the server read")


def case_port_guest_closes_first(a, d):
    """The server answers and closes its writing side first; the host's bytes
    still reach it after that."""
    def srv_fn(s):
        s.sendall(b"banner\n")
        s.shutdown(socket.SHUT_WR)
        return read_all(s)
    srv = Server(srv_fn)
    c, _ = connect(a, srv.port)
    h.eq(recv_stream(c), b"banner\n", "the banner")
    send_data(c, b"late bytes")
    c.send(K["KILN_MSG_DONE"])
    c.expect_eof()
    h.eq(srv.join(), [b"late bytes"], "what the server read after its half-close")


def case_port_ipv6(a, d):
    srv = Server(lambda s: s.sendall(b"six") or s.shutdown(socket.SHUT_WR) or read_all(s),
                 family=socket.AF_INET6)
    c, fam = connect(a, srv.port)  # 127.0.0.1 is refused, ::1 answers
    h.eq(fam, 6, "family after falling back to ::1")
    h.eq(recv_stream(c), b"six", "data")
    c.send(K["KILN_MSG_DONE"])
    c.expect_eof()
    srv.join()
    srv = Server(lambda s: read_all(s), family=socket.AF_INET6)
    c, fam = connect(a, srv.port, family=4)
    h.check(fam is None and c.err[0] == errno.ECONNREFUSED, "IPv4 only: %s" % (c.err,))
    c, fam = connect(a, srv.port, family=6)
    h.eq(fam, 6, "IPv6 only")
    c.send(K["KILN_MSG_DONE"])
    h.eq(recv_stream(c), b"", "nothing")
    c.expect_eof()
    srv.join()


def case_port_refused(a, d):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # bound, never listened: refused on both families
    c, fam = connect(a, port)
    h.check(fam is None, "connected to a closed port")
    h.eq(c.err[0], errno.ECONNREFUSED, "errno")
    h.check(("port %d" % port) in c.err[1], "the message names the port: %r" % c.err[1])
    c.expect_eof()


def case_port_bad_requests(a, d):
    for payload, err in ((u32(0) + u32(0), errno.EINVAL), (u32(65536) + u32(0), errno.EINVAL),
                         (u32(80) + u32(5), errno.EINVAL), (u32(80), errno.EPROTO),
                         (u32(80) + u32(0) + b"x", errno.EPROTO)):
        c = a.conn(K["KILN_STREAM_PORT"])
        c.send(K["KILN_MSG_CONNECT"], payload)
        h.expect_error(c, err)
    c = a.conn(K["KILN_STREAM_PORT"])
    c.send(K["KILN_MSG_DATA"], b"before connect")
    h.expect_error(c, errno.EPROTO, "expected CONNECT")
    srv = Server(lambda s: read_all(s), count=3)
    for frames, why in (([(K["KILN_MSG_CONNECT"], u32(srv.port) + u32(0))], "CONNECT twice"),
                        ([(K["KILN_MSG_DONE"], b""), (K["KILN_MSG_DATA"], b"x")], "DATA after"),
                        ([(K["KILN_MSG_STDIN"], b"x")], "not valid on a port stream")):
        c, _ = connect(a, srv.port)
        # in one write, so that the agent sees them together
        c.raw(b"".join(struct.pack("<IHH", len(p), t, 0) + p for t, p in frames))
        h.expect_error(c, errno.EPROTO, why)
    srv.join()


def peer_trailer(family, addr, port, version=None):
    v = K["KILN_PEER_V1"] if version is None else version
    return u32(v) + u32(family) + addr.ljust(16, b"\0") + u32(port)


def case_port_peer_trailer(a, d):
    """CONNECT's peer trailer: taken (on Linux the server still sees the
    agent's 127.0.0.1: the kernel has no KILN_SO_PEER), and refused when
    malformed, before any connect."""
    v4 = peer_trailer(4, socket.inet_pton(socket.AF_INET, "203.0.113.7"), 4242)
    v6 = peer_trailer(6, socket.inet_pton(socket.AF_INET6, "2001:db8::7"), 4243)
    h.eq(len(v4), K["KILN_PEER_LEN"], "the trailer's length")
    srv = Server(lambda s: s.getpeername()[0], count=2)
    for tr in (v4, v6):
        c = a.conn(K["KILN_STREAM_PORT"])
        c.send(K["KILN_MSG_CONNECT"], u32(srv.port) + u32(0) + tr)
        t, p = c.expect_frame()
        h.check(t == K["KILN_MSG_CONNECTED"], "with a peer trailer: %s" % h.describe(t, p))
        c.send(K["KILN_MSG_DONE"])
        h.eq(recv_stream(c), b"", "nothing")
        c.expect_eof()
    h.eq(srv.join(), ["127.0.0.1", "127.0.0.1"], "the peer a Linux server sees")
    bad = ((peer_trailer(4, b"\1\2\3\4", 80, version=2), errno.EINVAL, "version"),
           (peer_trailer(5, b"\1\2\3\4", 80), errno.EINVAL, "family"),
           (peer_trailer(4, b"\1\2\3\4", 0), errno.EINVAL, "port"),
           (peer_trailer(4, b"\1\2\3\4", 65536), errno.EINVAL, "port"),
           (peer_trailer(4, b"\1\2\3\4\5", 80), errno.EINVAL, "zeros"),
           (v4[:-1], errno.EPROTO, "peer trailer"),
           (v4[:8], errno.EPROTO, "peer trailer"),
           (v4 + b"x", errno.EPROTO, "trailing"))
    for tr, err, why in bad:
        c = a.conn(K["KILN_STREAM_PORT"])
        c.send(K["KILN_MSG_CONNECT"], u32(80) + u32(0) + tr)
        h.expect_error(c, err, why)


def case_port_host_closes(a, d):
    """The host closing the connection closes the guest's socket."""
    srv = Server(read_all)
    c, _ = connect(a, srv.port)
    send_data(c, b"partial")
    time.sleep(0.1)
    c.close()
    h.eq(srv.join(), [b"partial"], "the server read what came, then end of file")


def case_port_backpressure(a, d):
    """64 MiB each way with a reader that stalls for a while: all of it
    arrives, in order, and the agent holds a bounded amount meanwhile."""
    size = 64 << 20
    up = os.urandom(1 << 20) * 64

    def srv_fn(s):
        time.sleep(1.0)  # not reading yet: the agent must stop taking the host's DATA
        dig = hashlib.sha256()
        n = 0
        while n < size:
            x = s.recv(1 << 16)
            if not x:
                break
            dig.update(x)
            n += len(x)
        s.sendall(b"\0" * size)
        s.shutdown(socket.SHUT_WR)
        return n, dig.hexdigest()
    srv = Server(srv_fn)
    c, _ = connect(a, srv.port)
    base = a.rss_kb()
    sent = [0]

    def sender():
        for i in range(0, size, K["KILN_DATA_CHUNK"]):
            c.send(K["KILN_MSG_DATA"], up[i:i + K["KILN_DATA_CHUNK"]])
            sent[0] = i
        c.send(K["KILN_MSG_DONE"])
    t = threading.Thread(target=sender, daemon=True)
    t.start()
    time.sleep(0.8)
    h.check(sent[0] < size // 2, "the host sent %d bytes while the server did not read" % sent[0])
    grown = a.rss_kb() - base
    h.check(grown < 32 << 10, "agent RSS grew by %d KiB while the server did not read" % grown)
    t.join(60)
    time.sleep(1.0)  # the server writes 64 MiB now; the host does not read yet
    grown = a.rss_kb() - base
    h.check(grown < 32 << 10, "agent RSS grew by %d KiB while the host did not read" % grown)
    got = recv_stream(c)
    c.expect_eof()
    h.eq((len(got), got.count(0)), (size, size), "the server's 64 MiB")
    h.eq(srv.join(), [(size, hashlib.sha256(up).hexdigest())], "what the server read")
