"""Hostile hellos straight at a sandbox's egress listener (the unix socket
the VMM connects guest streams to), as a guest could craft them: print the
status kilnd answers each with ("closed" if it just closes)."""
import socket
import struct
import sys

path = sys.argv[1]
port = int(sys.argv[2])


def hello(family, addr, dport, magic=0x6E6B, version=1, flags=0, reserved=0, cut=None):
    h = struct.pack("<HBBHH16sI", magic, version, family, socket.htons(dport), flags,
                    addr.ljust(16, b"\0"), reserved)
    return h[:cut] if cut is not None else h


def ask(name, data, wait=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(wait)
    s.connect(path)
    s.sendall(data)
    try:
        r = s.recv(8)
        print(name, "status=%d" % struct.unpack("<HBBI", r)[3] if len(r) == 8 else "closed")
    except socket.timeout:
        print(name, "no answer")
    s.close()


v4 = lambda a: socket.inet_aton(a)
v6 = lambda a: socket.inet_pton(socket.AF_INET6, a)
ask("v4-loopback", hello(4, v4("127.0.0.1"), port))
ask("v6-mapped-loopback", hello(6, v6("::ffff:127.0.0.1"), port))
ask("v6-loopback", hello(6, v6("::1"), port))
ask("v4-host-standin", hello(4, v4("10.0.2.2"), port))
ask("bad-magic", hello(4, v4("127.0.0.1"), port, magic=0x1234))
ask("bad-version", hello(4, v4("127.0.0.1"), port, version=9))
ask("bad-family", hello(5, v4("127.0.0.1"), port))
ask("port-zero", hello(4, v4("8.8.8.8"), 0))
ask("bad-flags", hello(4, v4("8.8.8.8"), 80, flags=0x80))
ask("datagram-elsewhere", hello(4, v4("8.8.8.8"), 53, flags=1))
ask("reserved-set", hello(4, v4("8.8.8.8"), 80, reserved=7))
# A guest's listener announcement: kilnd has no inbound ports of its own
# (the containerd shim does), so it refuses the hello.
ask("listen-kilnd", hello(4, v4("0.0.0.0"), 8000, flags=4))
ask("listen-with-udp", hello(4, v4("0.0.0.0"), 8000, flags=6))
ask("dns-garbage", hello(4, v4("10.0.2.3"), 53) + b"\x00\x00junk")
ask("short-hello", hello(4, v4("8.8.8.8"), 80, cut=10), wait=15)


def frame(family, addr, dport, payload=b"", status=0, reserved=0, length=None):
    return struct.pack("<HBB", len(payload) if length is None else length, family, status) + \
        struct.pack("!H", dport) + struct.pack("<H", reserved) + addr.ljust(16, b"\0") + payload


def ask_udp(name, frames):
    """A UDP stream (flags 2): the reply's status, then the first frame
    kilnd sends back ("frame=STATUS") or "closed" or "quiet"."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(hello(4, v4("203.0.113.1"), 7, flags=2) + frames)
    r = s.recv(8)
    out = "status=%d" % struct.unpack("<HBBI", r)[3] if len(r) == 8 else "closed"
    try:
        f = s.recv(24)
        out += " frame=%d" % f[3] if len(f) == 24 else " closed"
    except socket.timeout:
        out += " quiet"
    print(name, out)
    s.close()


ask("udp-both-flags", hello(4, v4("203.0.113.1"), 7, flags=3))
ask_udp("udp-refused-loopback", frame(4, v4("127.0.0.1"), port, b"x"))
ask_udp("udp-refused-mapped", frame(6, v6("::ffff:127.0.0.1"), port, b"x"))
ask_udp("udp-bad-family", frame(9, v4("203.0.113.1"), 7, b"x"))
ask_udp("udp-too-long", frame(4, v4("203.0.113.1"), 7, length=65535))
ask_udp("udp-v4-junk-addr", frame(4, v4("203.0.113.1") + b"\1", 7, b"x"))
ask_udp("udp-status-set", frame(4, v4("203.0.113.1"), 7, b"", status=13))
ask_udp("udp-port-zero", frame(4, v4("203.0.113.1"), 0, b"x"))
