#!/usr/bin/env python3
# pagealign.py IN OUT: copy the cpio (newc) archive IN to OUT so that the
# data of every regular file of a page or more starts on a 4 KiB boundary.
#
# The guest maps such a file's pages into programs in place (an executable's
# code is then shared by every process that runs it, never copied) only when
# they are page-aligned in memory, and the VMM loads the archive at a page
# boundary. newc aligns data to 4 bytes only; to move a file's data we end
# the archive before its entry (TRAILER!!!), pad with zeros, and start a new
# archive: concatenated archives, as Linux's initramfs accepts them too.
import sys

PAGE = 4096
HDR = 110


def align(n, a):
    return (n + a - 1) // a * a


def trailer():
    """The end-of-archive entry, as GNU cpio writes it (nlink 1)."""
    name = b"TRAILER!!!\0"
    fields = [0] * 13
    fields[4] = 1
    fields[11] = len(name)
    h = b"070701" + b"".join(b"%08X" % v for v in fields) + name
    return h + b"\0" * (align(len(h), 4) - len(h))


def main(inp, out):
    data = open(inp, "rb").read()
    res = bytearray()
    off = 0
    while True:
        magic = data[off : off + 6]
        if magic not in (b"070701", b"070702"):
            sys.exit("pagealign: %s: no newc header at offset %d" % (inp, off))
        f = [int(data[off + 6 + 8 * i : off + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name = data[off + HDR : off + HDR + namesize - 1]
        head_len = align(HDR + namesize, 4)
        end = off + align(head_len + size, 4)
        if name == b"TRAILER!!!":
            break
        if (mode & 0o170000) == 0o100000 and size >= PAGE and (len(res) + head_len) % PAGE:
            res += trailer()
            start = align(len(res) + head_len, PAGE) - head_len
            res += b"\0" * (start - len(res))
        res += data[off:end]
        off = end
    res += trailer()
    res += b"\0" * (align(len(res), 512) - len(res))
    with open(out, "wb") as o:
        o.write(res)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: pagealign.py IN OUT")
    main(sys.argv[1], sys.argv[2])
