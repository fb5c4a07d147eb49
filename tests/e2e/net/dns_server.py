#!/usr/bin/env python3
"""A tiny authoritative DNS server for tests/e2e/net.sh (UDP and TCP on one
port of 127.0.0.1, or of $DNS_BIND): A records from the command line (NAME=ADDR ...), NXDOMAIN
for every other name, an empty answer for other types. It logs each question
to stdout, so the test can tell which lookups reached it."""
import os
import socket
import struct
import sys
import threading

RECORDS = {}


def answer(q):
    if len(q) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    off, labels = 12, []
    while off < len(q) and q[off]:
        n = q[off]
        labels.append(q[off + 1:off + 1 + n].decode("latin-1"))
        off += 1 + n
    off += 1
    qtype, = struct.unpack("!H", q[off:off + 2])
    question = q[12:off + 4]
    name = ".".join(labels).lower()
    print("query %s %d" % (name, qtype), flush=True)
    rr = b""
    rcode, count = 0, 0
    if name not in RECORDS:
        rcode = 3
    elif qtype == 1:
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 30, 4) + socket.inet_aton(RECORDS[name])
        count = 1
    hdr = struct.pack("!HHHHHH", qid, 0x8480 | (flags & 0x0100) | rcode, 1, count, 0, 0)
    return hdr + question + rr


def udp(sock):
    while True:
        q, peer = sock.recvfrom(4096)
        a = answer(q)
        if a:
            sock.sendto(a, peer)


def tcp_conn(c):
    with c:
        while True:
            h = c.recv(2)
            if len(h) < 2:
                return
            n, = struct.unpack("!H", h)
            q = b""
            while len(q) < n:
                part = c.recv(n - len(q))
                if not part:
                    return
                q += part
            a = answer(q)
            if a:
                c.sendall(struct.pack("!H", len(a)) + a)


def main():
    port = int(sys.argv[1])
    for kv in sys.argv[2:]:
        k, v = kv.split("=")
        RECORDS[k] = v
    addr = os.environ.get("DNS_BIND", "127.0.0.1")
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((addr, port))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, port))
    t.listen(16)
    threading.Thread(target=udp, args=(u,), daemon=True).start()
    print("ready", flush=True)
    while True:
        c, _ = t.accept()
        threading.Thread(target=tcp_conn, args=(c,), daemon=True).start()


main()
