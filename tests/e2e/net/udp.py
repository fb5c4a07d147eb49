"""Run inside a sandbox by tests/e2e/net.sh: UDP cases, each an argument
CASE,ARGS..., printing "CASE RESULT" lines that the test compares with
what it expects (nothing here decides what is right):

  echo,HOST,PORT,N      N datagrams from one socket, their echoes
  two,H1,P1,H2,P2,...   one socket, every destination in turn: the sources
  connected,HOST,PORT   connect(), send/recv, getpeername
  peek,HOST,PORT        MSG_PEEK then a short recvmsg (MSG_TRUNC), epoll
  big,HOST,PORT         a 60000-byte datagram, and one past UDP's limit
  stray,HOST,PORT       every datagram that comes back to one sent "stray"
  dns,HOST,PORT         one socket: a DNS query to the resolver and a datagram
  refused,HOST,PORT     sendto, then what the next recv and send say
  flood,HOST,PORT,N,SZ  N datagrams of SZ bytes, as fast as they go
  wait,HOST,PORT,FILE   echo, wait for FILE, echo again on the same socket
"""
import errno
import os
import select
import socket
import struct
import sys
import time


def sock_for(host, port):
    want = socket.AF_INET6 if ":" in host else socket.AF_INET  # names: IPv4
    fam, _, _, _, sa = socket.getaddrinfo(host, port, want, socket.SOCK_DGRAM)[0]
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(5)
    return s, sa


def err(e):
    return errno.errorcode.get(e.errno, str(e)) if e.errno else "timeout"


def run(case, a):
    if case == "echo":
        s, sa = sock_for(a[0], int(a[1]))
        n = int(a[2])
        for i in range(n):
            s.sendto(b"d%d" % i, sa)
        got = set()
        for i in range(n):
            data, src = s.recvfrom(65535)
            got.add(data)
        want = {b"echo:d%d" % i for i in range(n)}
        return "ok %d" % len(got & want)
    if case == "two":
        s, _ = sock_for(a[0], int(a[1]))
        out = []
        for h, p in zip(a[0::2], a[1::2]):
            sa = socket.getaddrinfo(h, int(p), s.family, socket.SOCK_DGRAM)[0][4]
            s.sendto(b"to-" + p.encode(), sa)
            data, src = s.recvfrom(65535)
            out.append("%s:%d=%s" % (src[0], src[1], data.decode()))
        return " ".join(out)
    if case == "connected":
        s, sa = sock_for(a[0], int(a[1]))
        s.connect(sa)
        s.send(b"conn")
        data = s.recv(65535)
        return "%s peer=%s:%d" % (data.decode(), *s.getpeername()[:2])
    if case == "peek":
        s, sa = sock_for(a[0], int(a[1]))
        s.sendto(b"0123456789", sa)
        ep = select.epoll()
        ep.register(s.fileno(), select.EPOLLIN)
        ready = ep.poll(5)
        p, _ = s.recvfrom(4, socket.MSG_PEEK)
        data, _, flags, _ = s.recvmsg(4)
        trunc = bool(flags & socket.MSG_TRUNC)
        s.setblocking(False)
        try:
            s.recv(100)
            left = "more"
        except BlockingIOError:
            left = "empty"
        return "epoll=%d peek=%s got=%s trunc=%s then=%s" % (
            len(ready), p.decode(), data.decode(), trunc, left)
    if case == "big":
        s, sa = sock_for(a[0], int(a[1]))
        s.sendto(b"B" * 60000, sa)
        data, _ = s.recvfrom(65535)
        try:
            s.sendto(b"B" * 65508, sa)
            over = "sent"
        except OSError as e:
            over = err(e)
        return "len=%d over=%s" % (len(data), over)
    if case == "stray":
        s, sa = sock_for(a[0], int(a[1]))
        s.sendto(b"stray", sa)
        s.settimeout(2)
        got = []
        try:
            while True:
                data, src = s.recvfrom(65535)
                got.append("%s:%s" % (data.decode(), src[1] == int(a[1])))
        except OSError:
            pass
        return " ".join(got)
    if case == "dns":
        s, sa = sock_for(a[0], int(a[1]))
        q = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
        q += b"\x04host\x04kiln\x08internal\x00" + struct.pack("!HH", 1, 1)
        s.sendto(q, ("10.0.2.3", 53))
        s.sendto(b"beside-dns", sa)
        got = []
        for _ in range(2):
            data, src = s.recvfrom(65535)
            if src[1] == 53:
                got.append("dns-answers=%d" % struct.unpack("!H", data[6:8])[0])
            else:
                got.append(data.decode())
        return " ".join(sorted(got))
    if case == "refused":
        s, sa = sock_for(a[0], int(a[1]))
        s.settimeout(2)
        try:
            s.sendto(b"refused:" + a[0].encode(), sa)
        except OSError as e:
            return "sendto " + err(e)
        try:
            s.recvfrom(65535)
            r = "answered"
        except OSError as e:
            r = err(e)
        try:
            s.sendto(b"again", sa)
            again = "sent"
        except OSError as e:
            again = err(e)
        return "%s then-send=%s" % (r, again)
    if case == "flood":
        s, sa = sock_for(a[0], int(a[1]))
        n, size = int(a[2]), int(a[3])
        for i in range(n):
            s.sendto(b"F" * size, sa)
        return "sent %d" % n
    if case == "wait":
        s, sa = sock_for(a[0], int(a[1]))
        s.sendto(b"before", sa)
        first = s.recvfrom(65535)[0].decode()
        open(a[2] + ".ready", "w").close()
        while not os.path.exists(a[2]):
            time.sleep(0.1)
        s.sendto(b"after", sa)
        try:
            second = s.recvfrom(65535)[0].decode()
        except OSError as e:
            second = err(e)
        return first + " " + second
    return "unknown case"


for arg in sys.argv[1:]:
    parts = arg.split(",")
    try:
        res = run(parts[0], parts[1:])
    except OSError as e:
        res = "error " + err(e)
    print(arg, res)
    sys.stdout.flush()
