#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where an egress connect's time goes, hop by hop.

    net_connect_hops.py STAMPS TRACE

STAMPS is the output of `net_connect ADDR PORT N stamps` run in the guest
(an "F <TSC ticks per us>" line, then "T <tsc before> <tsc after>" per
connect); TRACE is the KILN_TRACE file kiln-vmm and kilnd wrote
(include/kiln/trace.h: records of u64 TSC, u32 point, u32 pid). The guest's
TSC is the host's, so each connect's window holds the host's points of that
connect. Prints the median of each hop over the connects that have all of
them, and the median whole connect.
"""
import bisect
import statistics
import struct
import sys

KICK, FORWARD, ACCEPT, HELLO, REPLY, READ, IRQ, KICKED = range(1, 9)
HOPS = [
    ("guest: connect() to the kick served by the VMM", None, KICK),
    ("VMM: the kick to the hello written to kilnd", KICK, FORWARD),
    ("VMM: the hello written to done with the kick", FORWARD, KICKED),
    ("kilnd wakes: the VMM done to the hello read", KICKED, HELLO),
    ("kilnd: policy, host connect, reply sent", HELLO, REPLY),
    ("VMM wakes: kilnd's reply to the VMM's read", REPLY, READ),
    ("VMM: the read to the guest's interrupt", READ, IRQ),
    ("guest: the interrupt (or the read) to connect() back", IRQ, None),
]


def load_stamps(path):
    freq, wins = None, []
    with open(path) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "F":
                freq = float(w[1])
            elif w and w[0] == "T" and len(w) == 3:
                wins.append((int(w[1]), int(w[2])))
    return freq, wins


def load_trace(path):
    recs = {}
    with open(path, "rb") as f:
        data = f.read()
    for tsc, point, _pid in struct.iter_unpack("<QII", data[: len(data) // 16 * 16]):
        recs.setdefault(point, []).append(tsc)
    for v in recs.values():
        v.sort()
    return recs


def first_in(recs, point, lo, hi):
    """The first record of point in [lo, hi], or None."""
    v = recs.get(point, [])
    i = bisect.bisect_left(v, lo)
    return v[i] if i < len(v) and v[i] <= hi else None


def last_in(recs, point, lo, hi):
    v = recs.get(point, [])
    i = bisect.bisect_right(v, hi)
    return v[i - 1] if i and v[i - 1] >= lo else None


def points_of(recs, a, b):
    """The host's points of the connect in [a, b], in the order of its
    chain, or None when one is missing. The kick is the last one before
    the hello's forward (a close's kick may be served inside the window
    too); there is no interrupt when the guest was polling for the answer
    (then that hop is none)."""
    fwd = first_in(recs, FORWARD, a, b)
    if fwd is None:
        return None
    kick = last_in(recs, KICK, a, fwd)
    kicked = first_in(recs, KICKED, fwd, b)
    hello = first_in(recs, HELLO, fwd, b)
    reply = first_in(recs, REPLY, hello, b) if hello else None
    read = first_in(recs, READ, reply, b) if reply else None
    if None in (kick, kicked, hello, reply, read):
        return None
    return {KICK: kick, FORWARD: fwd, KICKED: kicked, HELLO: hello, REPLY: reply, READ: read,
            IRQ: first_in(recs, IRQ, read, b)}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: net_connect_hops.py STAMPS TRACE")
    freq, wins = load_stamps(sys.argv[1])
    if not freq or not wins:
        sys.exit("net_connect_hops: no stamps from the guest")
    recs = load_trace(sys.argv[2])
    hops = [[] for _ in HOPS]
    totals, early_accepts, irqs = [], 0, 0
    for a, b in wins:
        p = points_of(recs, a, b)
        if not p:
            continue
        totals.append((b - a) / freq)
        if first_in(recs, ACCEPT, p[KICK], p[FORWARD]):
            early_accepts += 1
        if p[IRQ]:
            irqs += 1
        for i, (_, frm, to) in enumerate(HOPS):
            if to == IRQ and not p[IRQ]:
                continue
            t0 = a if frm is None else p[IRQ] or p[READ] if frm == IRQ else p[frm]
            t1 = b if to is None else p[to]
            hops[i].append((t1 - t0) / freq)
    if not totals:
        sys.exit("net_connect_hops: no connect has all its points (was KILN_TRACE set?)")
    print(f"per-hop medians over {len(totals)} of {len(wins)} connects (traced run):")
    for (label, _, _), v in zip(HOPS, hops):
        if v:
            print(f"  {label:48s} {statistics.median(v):7.1f} us  (n={len(v)})")
        else:
            print(f"  {label:48s}    none  (the guest polled; no interrupt)")
    print(f"  {'whole connect (median)':48s} {statistics.median(totals):7.1f} us")
    print(f"  kilnd accepted before the hello was written in {early_accepts}, "
          f"the guest was interrupted in {irqs}")


if __name__ == "__main__":
    main()
