#!/usr/bin/env python3
"""Sends the shim's task service an Update, as containerd forwards
Kubernetes' UpdateContainerResources (ctr 1.6 has no command for it), over
ttrpc on the shim's socket; stdlib only (tests/e2e/containerd.sh).

  containerd_update.py SOCKET ID RESOURCES_JSON

Prints "ok" or "error CODE MESSAGE" (the ttrpc status); exit 0 if the shim
answered at all, 1 if not.
"""
import socket
import struct
import sys

TYPE_URL = "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources"


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, data):
    """A length-delimited protobuf field."""
    return varint(num << 3 | 2) + varint(len(data)) + data


def fields(buf):
    """The fields of a protobuf message: (number, wire type, value)."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = read_varint(buf, i)
        elif wt == 2:
            n, i = read_varint(buf, i)
            val, i = buf[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, val


def read_varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def main():
    path, cid, res = sys.argv[1], sys.argv[2], sys.argv[3]
    any_ = field(1, TYPE_URL.encode()) + field(2, res.encode())
    upd = field(1, cid.encode()) + field(2, any_)
    req = (field(1, b"containerd.task.v2.Task") + field(2, b"Update") + field(3, upd))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path.removeprefix("unix://"))
    s.sendall(struct.pack(">IIBB", len(req), 1, 1, 0) + req)
    hdr = b""
    while len(hdr) < 10:
        chunk = s.recv(10 - len(hdr))
        if not chunk:
            print("error: the shim closed the connection")
            return 1
        hdr += chunk
    length, _stream, _type, _flags = struct.unpack(">IIBB", hdr)
    body = b""
    while len(body) < length:
        chunk = s.recv(length - len(body))
        if not chunk:
            print("error: the shim closed the connection")
            return 1
        body += chunk
    code, message = 0, ""
    for num, _wt, val in fields(body):
        if num == 1:  # Status
            for n2, _w2, v2 in fields(val):
                if n2 == 1:
                    code = v2
                elif n2 == 2:
                    message = v2.decode(errors="replace")
    print("ok" if code == 0 else "error %d %s" % (code, message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
