"""UDP figures for tools/bench/udp_bench.sh.

  udp_bench.py server PORT              an echo server on 127.0.0.1:PORT
  udp_bench.py client HOST PORT N       N round trips of a 64-byte datagram
                                        one at a time (median and p90 in
                                        us), then N 1200-byte datagrams
                                        with 32 in flight (round trips a
                                        second, datagrams lost)
"""
import socket
import statistics
import sys
import time


def server(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    print("ready", flush=True)
    while True:
        data, peer = s.recvfrom(65535)
        s.sendto(data, peer)


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
    print("rtt median %.0f us p90 %.0f us; %d-in-flight %.0f round trips/s, %d of %d lost" % (
        statistics.median(rtt), rtt[int(len(rtt) * 0.9)], window, got / dt, n - got, n))


if sys.argv[1] == "server":
    server(int(sys.argv[2]))
else:
    client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
