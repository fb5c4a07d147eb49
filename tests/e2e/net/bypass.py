"""Run inside a sandbox by tests/e2e/net.sh: connect to each destination
given as FAMILY,ADDR,PORT (or NAME,PORT through getaddrinfo) and print
"ADDR PORT RESULT", RESULT being "connected" or the errno's name; then a
raw DNS query with a NUL inside a label. Nothing here decides what is
right: the test compares the lines with what it expects."""
import errno
import socket
import struct
import sys


def try_connect(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect((addr, port))
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()


def by_name(name, port):
    try:
        infos = socket.getaddrinfo(name, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except socket.gaierror as e:
        return "gaierror"
    results = [try_connect(f, a[0], port) for f, _, _, _, a in infos]
    return results[0] if len(set(results)) == 1 else ",".join(results)


def dns_raw(labels, qtype=1, tcp=False):
    q = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for l in labels:
        q += bytes([len(l)]) + l
    q += b"\x00" + struct.pack("!HH", qtype, 1)
    if tcp:
        s = socket.create_connection(("10.0.2.3", 53), timeout=5)
        s.sendall(struct.pack("!H", len(q)) + q)
        n, = struct.unpack("!H", s.recv(2))
        a = b""
        while len(a) < n:
            a += s.recv(n - len(a))
        s.close()
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.sendto(q, ("10.0.2.3", 53))
        a, _ = s.recvfrom(4096)
    rcode = a[3] & 0xF
    ancount, = struct.unpack("!H", a[6:8])
    return "rcode=%d answers=%d" % (rcode, ancount)


for arg in sys.argv[1:]:
    parts = arg.split(",")
    if parts[0] == "dns-nul":
        print(arg, dns_raw([b"host\x00", b"kiln", b"internal"]))
        print(arg, dns_raw([b"host", b"kiln", b"internal\x00", b"evil", b"test"]))
    elif parts[0] == "dns-tcp":
        print(arg, dns_raw([p.encode() for p in parts[1].split(".")], tcp=True))
    elif parts[0] == "dns-txt":
        print(arg, dns_raw([p.encode() for p in parts[1].split(".")], qtype=16))
    elif parts[0] in ("4", "6"):
        fam = socket.AF_INET if parts[0] == "4" else socket.AF_INET6
        print(arg, try_connect(fam, parts[1], int(parts[2])))
    else:
        print(arg, by_name(parts[0], int(parts[1])))
    sys.stdout.flush()
