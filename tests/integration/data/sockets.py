# Python's socket users in the guest (tests/integration/cases/sockets.sh):
# send_fds/recv_fds, a threaded AF_UNIX socketserver, http.server with
# urllib, asyncio over ::1, UDP, ECONNREFUSED, selectors with 20
# connections, multiprocessing's Manager (AF_UNIX) and Listener/Client.
# Prints the same on any Linux.
import asyncio, os, socket, socketserver, threading, http.server, urllib.request, selectors, array, tempfile, sys

# socketpair + send_fds/recv_fds (SCM_RIGHTS)
a, b = socket.socketpair()
r, w = os.pipe()
socket.send_fds(a, [b"fd"], [r])
msg, fds, flags, addr = socket.recv_fds(b, 10, 4)
os.write(w, b"through the passed fd")
print("send_fds:", msg, os.read(fds[0], 100))
a.close(); b.close()

# AF_UNIX path server with socketserver + threads
d = tempfile.mkdtemp()
path = os.path.join(d, "srv.sock")
class H(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(self.rfile.readline().upper())
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    pass
srv = S(path, H)
t = threading.Thread(target=srv.serve_forever, daemon=True); t.start()
c = socket.socket(socket.AF_UNIX); c.connect(path); c.sendall(b"unix line\n")
print("unix server:", c.makefile().readline().strip())
c.close(); srv.shutdown(); srv.server_close()

# http.server + urllib over 127.0.0.1
class Q(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("path=" + self.path).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
hs = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Q)
threading.Thread(target=hs.serve_forever, daemon=True).start()
for i in range(3):
    with urllib.request.urlopen("http://127.0.0.1:%d/x%d" % (hs.server_address[1], i)) as resp:
        print("http:", resp.status, resp.read().decode())
hs.shutdown(); hs.server_close()

# asyncio echo over ::1
async def main():
    async def echo(reader, writer):
        data = await reader.read(100)
        writer.write(data[::-1]); await writer.drain(); writer.close()
    server = await asyncio.start_server(echo, "::1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("::1", port)
    writer.write(b"asyncio over ::1"); await writer.drain()
    print("asyncio:", (await reader.read(100)).decode())
    writer.close(); server.close(); await server.wait_closed()
asyncio.run(main())

# UDP
u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u1.bind(("127.0.0.1", 0))
u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u2.sendto(b"udp datagram", u1.getsockname())
data, frm = u1.recvfrom(100)
print("udp:", data, frm[0], frm[1] == u2.getsockname()[1])

# errors
s = socket.socket()
try:
    s.connect(("127.0.0.1", u1.getsockname()[1]))
except ConnectionRefusedError as e:
    print("refused:", e.errno)
# selectors with many connections
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(64); ls.setblocking(False)
sel = selectors.DefaultSelector(); sel.register(ls, selectors.EVENT_READ)
clients = [socket.create_connection(ls.getsockname()) for _ in range(20)]
for i, c in enumerate(clients): c.sendall(b"%d" % i)
total = 0; conns = []
while len(conns) < 20 or total < sum(range(20)):
    for key, ev in sel.select(timeout=2):
        if key.fileobj is ls:
            cn, _ = ls.accept(); cn.setblocking(False); conns.append(cn); sel.register(cn, selectors.EVENT_READ)
        else:
            d = key.fileobj.recv(100)
            if d: total += int(d)
            else: sel.unregister(key.fileobj)
print("selectors:", len(conns), total)

# multiprocessing: a Manager (a server process on an AF_UNIX socket) and
# Listener/Client with an authkey over TCP and AF_UNIX.
import multiprocessing as mp
from multiprocessing.connection import Listener, Client
def worker(dd, i):
    dd[i] = i * i
mp.set_start_method("fork")
with mp.Manager() as m:
    dd = m.dict()
    ps = [mp.Process(target=worker, args=(dd, i)) for i in range(4)]
    for p in ps: p.start()
    for p in ps: p.join()
    print("manager:", sorted(dd.items()))
for fam, addr in (("AF_INET", ("127.0.0.1", 0)), ("AF_UNIX", None)):
    l = Listener(addr, family=fam, authkey=b"k")
    def serve():
        cn = l.accept(); cn.send(cn.recv() * 2); cn.close()
    t = threading.Thread(target=serve); t.start()
    cl = Client(l.address, family=fam, authkey=b"k"); cl.send(21)
    print("listener", fam + ":", cl.recv()); t.join(); cl.close(); l.close()
print("done")
