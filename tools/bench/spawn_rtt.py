#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The host's own peer for kilnd's exec round trip: start a host program
and wait for it (posix_spawn + waitpid), with the same warm-ups, count and
gaps as http_rtt.py. On a host whose CPUs run colder after idle, this shows
how much of a gapped exec's extra time any process start pays there.

  spawn_rtt.py PROGRAM COUNT GAP_MS

Every run must exit 0. Prints "median M ms, p90 M ms, min M ms (n=N)".
"""
import os
import sys

from http_rtt import timed_rounds


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    prog, count, gap_ms = sys.argv[1:]

    def spawn_wait():
        pid = os.posix_spawn(prog, [prog], os.environ)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            sys.exit(f"spawn_rtt: {prog} ended with wait status {status}")

    print(timed_rounds(count, gap_ms, spawn_wait))


if __name__ == "__main__":
    main()
