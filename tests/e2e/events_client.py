#!/usr/bin/env python3
"""Test clients for kilnd's events (tests/e2e/events.sh), stdlib only.

  sse HOST:PORT KEY OUT [--last-event-id N] [--sandbox ID] [--until T,T..] [--timeout S]
      [--ready FILE]
      read GET /events, one event's JSON per line into OUT, until every
      type of --until was seen (exit 0) or the timeout (exit 1); a comment
      line (": keep-alive") is written to OUT as "#keepalive"; FILE is made
      once the stream is open.
  slow HOST:PORT KEY READY HOLD
      open GET /events with a tiny receive buffer, touch READY once the
      answer began, read nothing for HOLD seconds, then say "dropped" if
      kilnd had closed the stream (everything readable, then EOF) or
      "open" if it was still there.
  webhook PORT SECRET LOG [--fail-first N] [--fail-type T]
      an HTTP server on 127.0.0.1:PORT: each POST's signature is checked
      against SECRET (a file), and a line {"id","type","sig_ok","answer",
      "body"} goes to LOG; it answers 500 to the first N requests and to
      every event of type T, 200 to the rest.
"""
import hashlib
import hmac
import http.server
import json
import os
import socket
import sys
import time


def connect(addr, key, path, headers="", rcvbuf=None):
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, int(port)))
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\n"
               "Accept: text/event-stream\r\n%s\r\n" % (path, addr, key, headers)).encode())
    return s


def chunks(s, deadline, ready=None):
    """The body of a chunked answer, as it arrives."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        s.settimeout(max(0.05, deadline - time.time()))
        d = s.recv(4096)
        if not d:
            raise EOFError("closed before the headers")
        buf += d
    head, buf = buf.split(b"\r\n\r\n", 1)
    status = head.split(b" ", 2)[1]
    if status != b"200":
        raise RuntimeError("answer %s: %r" % (status, buf[:200]))
    if ready:
        open(ready, "w").close()
    while True:
        while b"\r\n" not in buf:
            s.settimeout(max(0.05, deadline - time.time()))
            d = s.recv(65536)
            if not d:
                return
            buf += d
        size, rest = buf.split(b"\r\n", 1)
        n = int(size, 16)
        if n == 0:
            return
        while len(rest) < n + 2:
            s.settimeout(max(0.05, deadline - time.time()))
            d = s.recv(65536)
            if not d:
                return
            rest += d
        yield rest[:n]
        buf = rest[n + 2:]


def sse(argv):
    addr, key, out = argv[0], argv[1], argv[2]
    opts = dict(zip(argv[3::2], argv[4::2]))
    path = "/events"
    if "--sandbox" in opts:
        path += "?sandbox=" + opts["--sandbox"]
    headers = ""
    if "--last-event-id" in opts:
        headers = "Last-Event-ID: %s\r\n" % opts["--last-event-id"]
    until = set(opts.get("--until", "").split(",")) - {""}
    deadline = time.time() + float(opts.get("--timeout", "20"))
    s = connect(addr, key, path, headers)
    seen, text = set(), b""
    with open(out, "a") as f:
        try:
            for c in chunks(s, deadline, opts.get("--ready")):
                text += c
                while b"\n\n" in text:
                    block, text = text.split(b"\n\n", 1)
                    for line in block.split(b"\n"):
                        if line.startswith(b"data: "):
                            ev = json.loads(line[6:])
                            f.write(json.dumps(ev) + "\n")
                            seen.add(ev["type"])
                        elif line.startswith(b": keep-alive"):
                            f.write("#keepalive\n")
                    f.flush()
                if until and until <= seen:
                    return 0
        except (socket.timeout, TimeoutError):
            pass
    return 0 if until <= seen else 1


def slow(argv):
    addr, key, ready, hold = argv[0], argv[1], argv[2], float(argv[3])
    s = connect(addr, key, "/events", rcvbuf=2048)
    s.settimeout(5)
    s.recv(64)  # the answer began
    open(ready, "w").close()
    time.sleep(hold)
    deadline = time.time() + 5
    try:
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            if not s.recv(1 << 20):
                print("dropped")
                return 0
    except (ConnectionResetError, BrokenPipeError):
        print("dropped")
        return 0
    except (socket.timeout, TimeoutError):
        pass
    print("open")
    return 0


def webhook(argv):
    port, secret_file, log = int(argv[0]), argv[1], argv[2]
    opts = dict(zip(argv[3::2], argv[4::2]))
    fail_first = int(opts.get("--fail-first", "0"))
    fail_type = opts.get("--fail-type")
    secret = open(secret_file, "rb").read().split(b"\n")[0]
    count = [0]

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            sig = dict(p.split("=", 1) for p in self.headers.get("Kiln-Signature", "").split(","))
            mac = hmac.new(secret, sig.get("t", "").encode() + b"." + body,
                           hashlib.sha256).hexdigest()
            ok = hmac.compare_digest(mac, sig.get("v1", "")) and \
                abs(time.time() - int(sig.get("t", "0"))) < 300
            count[0] += 1
            ev = json.loads(body)
            answer = 500 if count[0] <= fail_first or ev["type"] == fail_type else 200
            with open(log, "a") as f:
                f.write(json.dumps({"id": self.headers.get("Kiln-Event-Id"),
                                    "type": self.headers.get("Kiln-Event-Type"),
                                    "sig_ok": ok, "answer": answer, "body": ev}) + "\n")
            self.send_response(answer)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", port), H)
    srv.serve_forever()


if __name__ == "__main__":
    cmd = sys.argv[1]
    sys.exit({"sse": sse, "slow": slow, "webhook": webhook}[cmd](sys.argv[2:]) or 0)
