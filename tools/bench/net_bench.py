"""Egress figures for tools/bench/net_bench.sh, run the same way in a
sandbox (through host.kiln.internal) and on the host (straight to
127.0.0.1), so the two lines compare like with like.

  net_bench.py server PORT              the host side: sink, source, accept
  net_bench.py client HOST PORT MIB N   prints the figures as one line

Ports: PORT sinks (reads to EOF, answers the byte count), PORT+1 sources
MIB MiB then closes, PORT+2 accepts and closes at once (connect latency).
The server prints "ready" once it listens on all three."""
import socket
import statistics
import sys
import threading
import time

CHUNK = 1 << 20


def listen(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(128)
    return s


def serve(s, fn):
    while True:
        c, _ = s.accept()
        threading.Thread(target=fn, args=(c,), daemon=True).start()


def sink(c):
    buf, n = bytearray(CHUNK), 0
    with c:
        while True:
            k = c.recv_into(buf)
            if not k:
                break
            n += k
        c.sendall(b"%d\n" % n)


def source(c):
    with c:
        mib = int(c.recv(64).strip() or 0)
        data = b"x" * CHUNK
        for _ in range(mib):
            c.sendall(data)


def server(port):
    # All three bound before "ready" (a port in use: the error, exit 1).
    s = [listen(port + i) for i in range(3)]
    print("ready", flush=True)
    threading.Thread(target=serve, args=(s[0], sink), daemon=True).start()
    threading.Thread(target=serve, args=(s[1], source), daemon=True).start()
    serve(s[2], lambda c: c.close())


def client(host, port, mib, n):
    data = b"x" * CHUNK
    s = socket.create_connection((host, port))
    t0 = time.perf_counter()
    for _ in range(mib):
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    got = int(s.makefile().readline())
    up = got / (time.perf_counter() - t0) / 1e6
    s.close()
    s = socket.create_connection((host, port + 1))
    buf, k = bytearray(CHUNK), 0
    t0 = time.perf_counter()
    s.sendall(b"%d\n" % mib)
    while True:
        r = s.recv_into(buf)
        if not r:
            break
        k += r
    down = k / (time.perf_counter() - t0) / 1e6
    s.close()
    addr = socket.getaddrinfo(host, port + 2, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    times = []
    for _ in range(n):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t0 = time.perf_counter()
        c.connect(addr)
        times.append(time.perf_counter() - t0)
        c.close()
    conn = statistics.median(times) * 1e6
    dns = []
    for _ in range(n):
        t0 = time.perf_counter()
        socket.getaddrinfo(host, 80, socket.AF_INET, socket.SOCK_STREAM)
        dns.append(time.perf_counter() - t0)
    print("up %.0f MB/s  down %.0f MB/s  connect %.0f us  getaddrinfo %.0f us  (%d MiB, median of %d)"
          % (up, down, conn, statistics.median(dns) * 1e6, mib, n))
    if got != mib * CHUNK or k != mib * CHUNK:
        print("net_bench: bytes lost: sent %d, the sink got %d; asked %d, got %d"
              % (mib * CHUNK, got, mib * CHUNK, k))
        sys.exit(1)


if sys.argv[1] == "server":
    server(int(sys.argv[2]))
else:
    client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
