# SPDX-License-Identifier: MIT
"""A stand-in for Chromium's DevTools endpoint, for the CDP tests
(tests/e2e/cdp.sh) while no browser image exists. Standard library only:

    python3 fake_devtools.py PORT

On 127.0.0.1:PORT it answers GET /json/version as Chromium does (and, as
Chromium, only with a Host header that is an address or localhost), and
takes a WebSocket on the browser target's path. Each text message
{"id": N, "method": M, "params": P} is answered {"id": N, "result": ...}:
Browser.getVersion gives {"product": "FakeChrome/1.0", "pid": PID}, any
other method echoes {"method": M, "params": P}, except the few that kiln
browser screenshot uses (a page T1 in session S1, a load event after
Page.navigate, a 4x3 PNG); "Test.exit" makes the process exit at once (a
browser that crashed); "Test.flood" sends 256 MiB of events."""
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import threading
import uuid
import zlib

TARGET = "/devtools/browser/" + str(uuid.uuid4())


def recv_exact(c, n):
    out = b""
    while len(out) < n:
        x = c.recv(n - len(out))
        if not x:
            raise EOFError
        out += x
    return out


def frame(op, payload):
    n = len(payload)
    head = (struct.pack("!BB", 0x80 | op, n) if n < 126 else
            struct.pack("!BBH", 0x80 | op, 126, n) if n < 65536 else
            struct.pack("!BBQ", 0x80 | op, 127, n))
    return head + payload


def send_frame(c, op, payload):
    c.sendall(frame(op, payload))


def png(w, h):
    """A w x h white PNG."""
    def chunk(kind, data):
        return (struct.pack("!I", len(data)) + kind + data
                + struct.pack("!I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\0" + b"\xff" * 3 * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack("!IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def cdp(c):
    while True:
        b0, b1 = recv_exact(c, 2)
        op, n = b0 & 0x0F, b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", recv_exact(c, 2))[0]
        elif n == 127:
            n = struct.unpack("!Q", recv_exact(c, 8))[0]
        if not b1 & 0x80:
            return  # Chromium drops a client that does not mask
        mask = recv_exact(c, 4)
        data = bytes(x ^ mask[i % 4] for i, x in enumerate(recv_exact(c, n)))
        if op == 8:
            send_frame(c, 8, data[:2])
            return
        if op != 1:
            continue
        msg = json.loads(data)
        if msg.get("method") == "Test.exit":
            os._exit(3)
        if msg.get("method") == "Test.flood":  # 256 MiB of events, as fast as they go
            event = json.dumps({"method": "Test.event", "params": {"pad": "x" * 65000}}).encode()
            for _ in range(4096):
                send_frame(c, 1, event)
            continue
        method, params, sid = msg.get("method"), msg.get("params") or {}, msg.get("sessionId")
        event = None
        if method == "Browser.getVersion":
            result = {"product": "FakeChrome/1.0", "pid": os.getpid()}
        elif method == "Target.createTarget":
            result = {"targetId": "T1"}
        elif method == "Target.attachToTarget":
            result = {"sessionId": "S1"}
        elif method == "Page.navigate" and params.get("url", "").startswith("http://fail."):
            result = {"frameId": "F1", "errorText": "net::ERR_NAME_NOT_RESOLVED"}
        elif method == "Page.navigate":
            result = {"frameId": "F1", "loaderId": "L1"}
            event = {"method": "Page.loadEventFired", "params": {"timestamp": 1}, "sessionId": sid}
        elif method == "Page.captureScreenshot":
            result = {"data": base64.b64encode(png(4, 3)).decode()}
        else:
            result = {"method": method, "params": params}
        answer = {"id": msg.get("id"), "result": result}
        if sid:
            answer["sessionId"] = sid
        # an event right behind its answer, in one write, as Chromium's often come
        c.sendall(frame(1, json.dumps(answer).encode())
                  + (frame(1, json.dumps(event).encode()) if event else b""))


def serve(c, port):
    data = b""
    while b"\r\n\r\n" not in data:
        x = c.recv(65536)
        if not x:
            return
        data += x
    head = data.split(b"\r\n\r\n")[0].decode()
    lines = head.split("\r\n")
    path = lines[0].split(" ")[1]
    hdrs = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:])}
    if hdrs.get("host") not in ("127.0.0.1:%d" % port, "localhost:%d" % port):
        body = b"Host header is specified and is not an IP address or localhost."
        c.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        return
    if path == "/json/version":
        body = json.dumps({
            "Browser": "FakeChrome/1.0", "Protocol-Version": "1.3",
            "User-Agent": "Mozilla/5.0 FakeChrome/1.0", "V8-Version": "0", "WebKit-Version": "0",
            "webSocketDebuggerUrl": "ws://127.0.0.1:%d%s" % (port, TARGET)}).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        return
    if path == TARGET and hdrs.get("upgrade", "").lower() == "websocket":
        accept = base64.b64encode(hashlib.sha1(
            hdrs["sec-websocket-key"].encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
            .digest())
        c.sendall(b"HTTP/1.1 101 WebSocket Protocol Handshake\r\nUpgrade: WebSocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept)
        try:
            cdp(c)
        except (EOFError, OSError, ValueError):
            pass
        return
    c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


def main():
    port = int(sys.argv[1])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    print("fake DevTools listening on 127.0.0.1:%d" % port, flush=True)
    while True:
        c, _ = s.accept()

        def one(c=c):
            with c:
                serve(c, port)
        threading.Thread(target=one, daemon=True).start()


if __name__ == "__main__":
    main()
