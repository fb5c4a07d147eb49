# SPDX-License-Identifier: MIT
"""Clients for the inbound-port tests (tests/e2e/ports.sh), against kilnd on
127.0.0.1 (or the local end of kiln port-forward):

    python3 port_client.py ws HOST:PORT PATH KEY        WebSocket echo
    python3 port_client.py stall HOST:PORT PATH KEY PID  a client that stops
                                                        reading a big answer
    python3 port_client.py reverse HOST:PORT            half-close round trip
    python3 port_client.py cdp HOST:PORT ID KEY [MODE]   a CDP session (MODE:
                                  garbage, huge or crash: how it must end)

Prints what it checked and exits non-zero on a mismatch."""
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=20)
    return s


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        x = s.recv(65536)
        if not x:
            raise SystemExit("connection closed before the answer's head: %r" % data)
        data += x
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode(errors="replace"), rest


def ws_send(s, op, payload):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | op, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | op, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | op, 0x80 | 127, n)
    s.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))


class Reader:
    def __init__(self, s, rest):
        self.s, self.buf = s, rest

    def exact(self, n):
        while len(self.buf) < n:
            x = self.s.recv(65536)
            if not x:
                raise EOFError
            self.buf += x
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def frame(self):
        b0, b1 = self.exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.exact(8))[0]
        return b0 & 0x0F, self.exact(n)


def ws_open(addr, path, key):
    s = connect(addr)
    k = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nX-API-Key: %s\r\n\r\n"
               % (path, addr, k, key)).encode())
    head, rest = read_head(s)
    if not head.startswith("HTTP/1.1 101"):
        raise SystemExit("no upgrade: %s %s" % (head, rest[:300]))
    want = base64.b64encode(hashlib.sha1(k.encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                            .digest()).decode()
    if "sec-websocket-accept: %s" % want.lower() not in head.lower():
        raise SystemExit("wrong Sec-WebSocket-Accept: %s" % head)
    return s, Reader(s, rest)


def ws(addr, path, key):
    s, r = ws_open(addr, path, key)
    for msg in (b"hello", os.urandom(200000), b"x" * 70000):
        ws_send(s, 2, msg)
        op, got = r.frame()
        if (op, got) != (2, msg):
            raise SystemExit("echo of %d bytes: got op %d, %d bytes" % (len(msg), op, len(got)))
    ws_send(s, 1, "text ✓".encode())
    if r.frame() != (1, "text ✓".encode()):
        raise SystemExit("text echo")
    ws_send(s, 8, struct.pack("!H", 1000))
    op, _ = r.frame()
    if op != 8:
        raise SystemExit("no close frame back")
    print("ws: echoed 3 binary messages (up to 200000 bytes) and a text one, closed")


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def stall(addr, path, key, pid):
    """Ask for 64 MiB, read 1 MiB, stop reading: kilnd must not buffer the rest."""
    n = 64 << 20
    s = connect(addr)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    s.sendall(("GET %s?n=%d HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n\r\n" % (path, n, key))
              .encode())
    head, rest = read_head(s)
    got = len(rest)
    while got < 1 << 20:
        got += len(s.recv(65536))
    before = rss_kb(pid)
    time.sleep(2)
    grown = rss_kb(pid) - before
    if grown > 16 << 10:
        raise SystemExit("kilnd grew by %d KiB while the client did not read" % grown)
    while got < n:
        x = s.recv(1 << 20)
        if not x:
            break
        got += len(x)
    if got != n:
        raise SystemExit("read %d of %d bytes" % (got, n))
    print("stall: kilnd grew by %d KiB while the client stalled; all %d bytes came after"
          % (grown, n))


def reverse(addr):
    s = connect(addr)
    s.sendall(b"half-close works")
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        x = s.recv(65536)
        if not x:
            break
        got += x
    if got != b"skrow esolc-flah":
        raise SystemExit("reverse: got %r" % got)
    print("reverse: the answer came after the client's half-close")


def cdp_call(s, r, n, method):
    ws_send(s, 1, json.dumps({"id": n, "method": method, "params": {"n": n}}).encode())
    op, data = r.frame()
    if op != 1:
        raise SystemExit("%s: answer of op %d" % (method, op))
    msg = json.loads(data)
    if msg.get("id") != n:
        raise SystemExit("%s: answer %r" % (method, msg))
    return msg["result"]


def expect_close(r, code, what):
    try:
        while True:
            op, data = r.frame()
            if op == 8:
                got = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
                if got != code:
                    raise SystemExit("%s: close %s (%r), want %d" % (what, got, data[2:], code))
                return data[2:].decode(errors="replace")
    except (EOFError, ConnectionResetError):
        raise SystemExit("%s: the connection ended without a close frame" % what)


def cdp(addr, sid, key, mode):
    """A CDP session through /sandboxes/ID/cdp: prints the browser's pid."""
    s, r = ws_open(addr, "/sandboxes/%s/cdp" % sid, key)
    if mode == "garbage":  # unmasked junk: not a client's frame
        s.sendall(b"\x81\x05hello")
        print("garbage: close 1002 (%s)" % expect_close(r, 1002, "garbage"))
        return
    if mode == "huge":  # a masked frame header announcing 1 GiB
        s.sendall(struct.pack("!BBQ", 0x82, 0x80 | 127, 1 << 30) + os.urandom(4) + b"x" * 1000)
        print("huge: close 1009 (%s)" % expect_close(r, 1009, "huge"))
        return
    if mode.startswith("stall:"):  # ask for a flood, read none of it
        ws_send(s, 1, json.dumps({"id": 1, "method": "Test.flood"}).encode())
        pid, base = int(mode[6:]), rss_kb(int(mode[6:]))
        t0 = time.monotonic()
        h = socket.create_connection(addr.rsplit(":", 1), timeout=5)
        h.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        ok = h.recv(100).startswith(b"HTTP/1.1 200")
        health_ms = (time.monotonic() - t0) * 1e3
        time.sleep(5)  # past kilnd's --write-timeout (3 s in the tests)
        grown = rss_kb(pid) - base
        got = 0
        try:
            while True:
                x = s.recv(1 << 20)
                if not x:
                    break
                got += len(x)
        except (ConnectionResetError, socket.timeout):
            pass
        if not ok or grown > 16 << 10 or got >= 256 << 20:
            raise SystemExit("stall: health %s in %.0f ms, kilnd grew by %d KiB, the client "
                             "still got %d bytes" % (ok, health_ms, grown, got))
        print("stall: kilnd answered /health in %.0f ms meanwhile, grew by %d KiB, and cut "
              "the client off after %d bytes" % (health_ms, grown, got))
        return
    v = cdp_call(s, r, 1, "Browser.getVersion")
    e = cdp_call(s, r, 2, "Target.getTargets")
    if e.get("method") != "Target.getTargets" or e.get("params") != {"n": 2}:
        raise SystemExit("echo: %r" % e)
    if mode == "crash":
        ws_send(s, 1, json.dumps({"id": 3, "method": "Test.exit"}).encode())
        print("crash: close 1011 (%s)" % expect_close(r, 1011, "crash"))
        return
    ws_send(s, 8, struct.pack("!H", 1000))
    expect_close(r, 1000, "normal close")
    print("%s pid %d" % (v["product"], v["pid"]))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "cdp":
        cdp(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else "")
    elif cmd == "ws":
        ws(*sys.argv[2:5])
    elif cmd == "stall":
        stall(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        reverse(sys.argv[2])
