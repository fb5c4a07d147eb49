# SPDX-License-Identifier: MIT
"""Servers for the inbound-port tests (tests/e2e/ports.sh), run inside a
sandbox with only the standard library:

    python3 port_server.py HTTP_PORT TCP_PORT

HTTP_PORT (127.0.0.1): GET /bytes?n=N answers N bytes ('x'), POST /sum
answers "LENGTH SHA256" of the request body (Content-Length or chunked),
GET /headers answers the request's headers as JSON, GET /peer the client's
address as accept() and getpeername() say it ("ADDR PORT ADDR PORT"), and
GET /ws upgrades to a WebSocket that echoes every message. TCP_PORT
([::1]): reads until the client's half-close, then answers the bytes
reversed (or, to "peer?", getpeername's "ADDR PORT") and closes."""
import base64
import hashlib
import http.server
import json
import socket
import socketserver
import struct
import sys
import threading

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        x = sock.recv(n - len(out))
        if not x:
            raise EOFError
        out += x
    return out


def ws_frame(op, payload):
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | op, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | op, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | op, 127, n)
    return head + payload


def ws_echo(sock):
    while True:
        b0, b1 = recv_exact(sock, 2)
        op, n = b0 & 0x0F, b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", recv_exact(sock, 2))[0]
        elif n == 127:
            n = struct.unpack("!Q", recv_exact(sock, 8))[0]
        mask = recv_exact(sock, 4) if b1 & 0x80 else b"\0\0\0\0"
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(recv_exact(sock, n)))
        if op == 8:
            sock.sendall(ws_frame(8, data[:2]))
            return
        if op == 9:
            sock.sendall(ws_frame(10, data))
        elif op in (1, 2):
            sock.sendall(ws_frame(op, data))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/bytes?n="):
            n = int(self.path.split("=", 1)[1])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                self.wfile.write(chunk[:min(n, len(chunk))])
                n -= min(n, len(chunk))
        elif self.path == "/peer":
            acc, peer = self.client_address, self.connection.getpeername()
            self.answer(("%s %d %s %d" % (acc[0], acc[1], peer[0], peer[1])).encode())
        elif self.path == "/headers":
            self.answer(json.dumps(dict(self.headers.items())).encode(), "application/json")
        elif self.path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            key = self.headers["Sec-WebSocket-Key"].encode()
            accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept)
            self.end_headers()
            self.wfile.flush()
            try:
                ws_echo(self.connection)
            except (EOFError, OSError):
                pass
            self.close_connection = True
        else:
            self.send_error(404)

    def do_POST(self):
        dig, total = hashlib.sha256(), 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    self.rfile.readline()
                    break
                data = self.rfile.read(size)
                self.rfile.readline()
                dig.update(data)
                total += len(data)
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                data = self.rfile.read(min(left, 65536))
                dig.update(data)
                total += len(data)
                left -= len(data)
        self.answer(("%d %s" % (total, dig.hexdigest())).encode())


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def reverse_server(port):
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::1", port))
    s.listen(8)
    while True:
        c, _ = s.accept()
        data = b""
        while True:
            x = c.recv(65536)
            if not x:
                break
            data += x
        if data == b"peer?":
            c.sendall(("%s %d" % c.getpeername()[:2]).encode())
        else:
            c.sendall(data[::-1])
        c.close()


def main():
    http_port, tcp_port = int(sys.argv[1]), int(sys.argv[2])
    threading.Thread(target=reverse_server, args=(tcp_port,), daemon=True).start()
    Server(("127.0.0.1", http_port), Handler).serve_forever()


if __name__ == "__main__":
    main()
