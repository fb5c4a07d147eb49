#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A burst of creates through kilnd (issue 21: clones started per second).

  kilnd_burst.py SOCKET COUNT CREATE_BODY ROUNDS

Each round opens COUNT connections, sends COUNT POST /sandboxes at once
(one thread each, released together) and times the burst from the release
to the last answer; every answer must be 201 or 200 with a sandboxID, and
the sandboxes are deleted before the next round. The host's CPU idle share
meanwhile (/proc/stat, every CPU, whatever else runs) says whether the rate
is bound by CPU or by waiting. Prints per round: rate, first and median
answer, idle share; then the median rate of the rounds.
"""
import json
import socket
import statistics
import sys
import threading
import time

from http_rtt import read_answer


def request(path, method, target, body=b""):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    sock.sendall((f"{method} {target} HTTP/1.1\r\nHost: k\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                  ).encode() + body)
    answer = read_answer(sock)
    sock.close()
    return answer


def cpu_times():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(v), v[3] + v[4]  # all, idle + iowait


def burst(path, count, body):
    answers, ends = [None] * count, [0.0] * count
    go = threading.Event()

    def one(i):
        go.wait()
        answers[i] = request(path, "POST", "/sandboxes", body)
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    time.sleep(0.2)  # every thread waits on go
    all0, idle0 = cpu_times()
    t0 = time.perf_counter()
    go.set()
    for t in threads:
        t.join()
    all1, idle1 = cpu_times()
    ids = []
    for a in answers:
        head, _, rest = a.partition(b"\r\n\r\n")
        if not (head.startswith(b"HTTP/1.1 201") or head.startswith(b"HTTP/1.1 200")):
            sys.exit(f"kilnd_burst: create failed: {a[:300]!r}")
        ids.append(json.loads(rest)["sandboxID"])
    for i in ids:
        request(path, "DELETE", "/sandboxes/" + i)
    lat = sorted(e - t0 for e in ends)
    idle = (idle1 - idle0) / max(1, all1 - all0)
    return count / lat[-1], lat[0], statistics.median(lat), idle


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, count, body, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), int(sys.argv[4])
    rates = []
    for _ in range(rounds):
        rate, first, med, idle = burst(path, count, body)
        rates.append(rate)
        print(f"  {count} creates: {rate:6.1f}/s, first answer {first * 1000:6.0f} ms, "
              f"median {med * 1000:6.0f} ms, CPUs idle {idle * 100:3.0f}%")
    print(f"median rate {statistics.median(rates):.1f}/s (goal >= 500/s)")


if __name__ == "__main__":
    main()
