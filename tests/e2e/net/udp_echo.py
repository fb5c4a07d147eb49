"""A UDP echo server for tests/e2e/net.sh: udp_echo.py ADDR PORT...
Answers every datagram with b"echo:" + the datagram, from the port it came
to. A datagram b"stray" is first answered from another port (a source the
sender never sent to), then echoed. Prints "ready" once bound, then one
line per datagram received: "got PORT PAYLOAD" (the payload's first 40
bytes), so the test can tell what arrived."""
import select
import socket
import sys

addr, ports = sys.argv[1], [int(p) for p in sys.argv[2:]]
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
socks = []
for p in ports:
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, p))
    socks.append(s)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [])[0]:
        data, peer = s.recvfrom(65535)
        print("got", s.getsockname()[1], data[:40].decode("latin-1"), flush=True)
        if data == b"stray":
            o = socket.socket(fam, socket.SOCK_DGRAM)
            o.sendto(b"stray", peer)
            o.close()
        s.sendto(b"echo:" + data, peer)
