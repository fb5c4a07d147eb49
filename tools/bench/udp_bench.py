"""UDP figures for tools/bench/udp_bench.sh.

  udp_bench.py server PORT              echo servers on 127.0.0.1:PORT, UDP
                                        and TCP
  udp_bench.py client HOST PORT N       N round trips of a 64-byte datagram
                                        one at a time (median and p90 in
                                        us), then N 1200-byte datagrams
                                        with 32 in flight (round trips a
                                        second, datagrams lost); and, as a
                                        peer on the same path, N 64-byte
                                        round trips over one TCP connection
"""
import socket
import statistics
import sys
import threading
import time


def tcp_server(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(8)
    while True:
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=lambda c=c: [c.sendall(d) for d in iter(lambda: c.recv(65536), b"")],
                         daemon=True).start()


def server(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    threading.Thread(target=tcp_server, args=(port,), daemon=True).start()
    print("ready", flush=True)
    while True:
        data, peer = s.recvfrom(65535)
        s.sendto(data, peer)


def tcp_rtt(sa, n):
    c = socket.create_connection(sa, timeout=5)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtt = []
    for i in range(n + 20):
        t = time.perf_counter()
        c.sendall(b"x" * 64)
        got = 0
        while got < 64:
            got += len(c.recv(64 - got))
        if i >= 20:
            rtt.append((time.perf_counter() - t) * 1e6)
    c.close()
    return statistics.median(rtt)


def client(host, port, n):
    sa = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0][4]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    msg = b"x" * 64
    for _ in range(20):  # the stream opens, caches warm
        s.sendto(msg, sa)
        s.recvfrom(65535)
    rtt = []
    for _ in range(n):
        t = time.perf_counter()
        s.sendto(msg, sa)
        s.recvfrom(65535)
        rtt.append((time.perf_counter() - t) * 1e6)
    rtt.sort()
    big, sent, got, window = b"y" * 1200, 0, 0, 32
    s.settimeout(0.5)
    t = time.perf_counter()
    while got < n:
        while sent < n and sent - got < window:
            s.sendto(big, sa)
            sent += 1
        try:
            s.recvfrom(65535)
            got += 1
        except socket.timeout:
            break  # lost ones: stop here
    dt = time.perf_counter() - t
    print("rtt median %.0f us p90 %.0f us; %d-in-flight %.0f round trips/s, %d of %d lost; "
          "tcp rtt median %.0f us" % (statistics.median(rtt), rtt[int(len(rtt) * 0.9)], window,
                                      got / dt, n - got, n, tcp_rtt(sa, n)))


if sys.argv[1] == "server":
    server(int(sys.argv[2]))
else:
    client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
