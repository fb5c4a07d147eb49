"""Bulk bytes both ways through egress, checked end to end (tests/e2e/net.sh,
case bulk): the guest sends N MiB of seeded random bytes and half-closes;
the host server hashes what it got, answers the digest and then M MiB of
its own seeded bytes, and closes; the guest checks both.

  bulk.py serve PORT          the host side (one connection at a time)
  bulk.py send HOST PORT N M  the guest side: prints "ok N M" or what differs"""
import hashlib
import random
import socket
import sys

MIB = 1 << 20


def stream(seed, mib):
    r = random.Random(seed)
    for _ in range(mib):
        yield r.randbytes(MIB)


def digest(read):
    """sha256 hex digest and length of what read() gives until it ends."""
    h, n = hashlib.sha256(), 0
    while True:
        b = read(MIB)
        if not b:
            return h.hexdigest(), n
        h.update(b)
        n += len(b)


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        with c:
            head = b""
            while not head.endswith(b"\n"):
                b = c.recv(1)
                if not b:
                    break
                head += b
            m = int(head or b"0")
            got, n = digest(c.recv)
            c.sendall(b"%s %d\n" % (got.encode(), n))
            for chunk in stream(2, m):
                c.sendall(chunk)


def send(host, port, n, m):
    c = socket.create_connection((host, port), timeout=120)
    c.sendall(b"%d\n" % m)
    want = hashlib.sha256()
    for chunk in stream(1, n):
        want.update(chunk)
        c.sendall(chunk)
    c.shutdown(socket.SHUT_WR)
    f = c.makefile("rb")
    host_got, got_n = f.readline().split()
    back, k = digest(f.read1)
    ref = hashlib.sha256()
    for chunk in stream(2, m):
        ref.update(chunk)
    bad = []
    if host_got.decode() != want.hexdigest() or int(got_n) != n * MIB:
        bad.append("the host got %s bytes, not the %d sent (or other bytes)" % (got_n.decode(), n * MIB))
    if back != ref.hexdigest() or k != m * MIB:
        bad.append("the guest got %d bytes, not the %d sent (or other bytes)" % (k, m * MIB))
    print("; ".join(bad) if bad else "ok %d %d" % (n, m))


if sys.argv[1] == "serve":
    serve(int(sys.argv[2]))
else:
    send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
