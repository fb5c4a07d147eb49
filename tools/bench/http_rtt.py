#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Round trips of one HTTP request to kilnd over a single kept-alive
connection, as the E2B SDKs and other long-lived clients send them (curl per
request also pays for a new connection and its own start-up).

  http_rtt.py SOCKET METHOD PATH BODY COUNT GAP_MS EXPECT

Sends the request COUNT times after 5 warm-ups, waiting GAP_MS between one
answer and the next request (0: back to back), and times each from the
request's first byte sent to the answer's last byte read. Every answer must
be 200 and contain EXPECT. Prints "median M ms, p90 M ms, min M ms (n=N)".
"""
import socket
import sys
import time


def read_answer(sock):
    """The whole answer (Content-Length or chunked), as bytes."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += recv(sock)
    head, _, body = buf.partition(b"\r\n\r\n")
    headers = head.lower()
    if b"transfer-encoding: chunked" in headers:
        while not body.endswith(b"0\r\n\r\n"):
            body += recv(sock)
    else:
        length = 0
        for line in headers.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(body) < length:
            body += recv(sock)
    return head + b"\r\n\r\n" + body


def recv(sock):
    data = sock.recv(65536)
    if not data:
        sys.exit("http_rtt: kilnd closed the connection")
    return data


def timed_rounds(count, gap_ms, fn):
    """fn() 5 + count times, sleeping gap_ms before each; the last count
    durations in ms, summarised as "median M ms, p90 M ms, min M ms (n=N)"."""
    times = []
    for i in range(5 + int(count)):
        time.sleep(float(gap_ms) / 1000)
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        if i >= 5:
            times.append((t1 - t0) * 1000)
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    return (f"median {median:.2f} ms, p90 {times[int(n * 0.9 + 0.5) - 1]:.2f} ms, "
            f"min {times[0]:.2f} ms (n={n})")


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    path, method, target, body, count, gap_ms, expect = sys.argv[1:]
    body = body.encode()
    request = (f"{method} {target} HTTP/1.1\r\nHost: k\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
               ).encode() + body
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)

    def round_trip():
        sock.sendall(request)
        answer = read_answer(sock)
        if not answer.startswith(b"HTTP/1.1 200") or expect.encode() not in answer:
            sys.exit(f"http_rtt: unexpected answer: {answer[:300]!r}")

    print(timed_rounds(count, gap_ms, round_trip))


if __name__ == "__main__":
    main()
