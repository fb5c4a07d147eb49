#!/usr/bin/env python3
# Write a damaged copy of an erofs image, for the bad-image cases of
# tests/integration/cases/image.sh:
#
#   erofs_damage.py IN OUT KIND [PATH]
#
# KIND: magic (superblock magic), rootdir (the root directory's dirents),
# dir (PATH's directory block: a bad name offset), loop (PATH, a directory,
# made to name the root directory as its first subdirectory), truncate (the
# first half of the image). The superblock checksum is made to match, so
# that the damage is found where it is, not by the checksum.
import struct
import sys


def crc32c(data, crc=0xFFFFFFFF):
    # Linux's crc32c() (no final inversion), as erofs uses it.
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def fix_checksum(img, blkbits):
    if struct.unpack_from("<I", img, 1024 + 8)[0] & 1 and blkbits > 10:
        struct.pack_into("<I", img, 1024 + 4, 0)
        crc = crc32c(bytes(img[1024:1 << blkbits]))
        struct.pack_into("<I", img, 1024 + 4, crc)


def inode(img, meta, nid):
    off = meta + nid * 32
    fmt, icount, mode = struct.unpack_from("<HHH", img, off)
    ext = fmt & 1
    size = struct.unpack_from("<Q" if ext else "<I", img, off + 8)[0]
    blkaddr = struct.unpack_from("<I", img, off + 16)[0]
    isize = 64 if ext else 32
    xsize = 12 + 4 * (icount - 1) if icount else 0
    return {"layout": (fmt >> 1) & 7, "mode": mode, "size": size, "blkaddr": blkaddr,
            "tail": off + isize + xsize}


def dir_data(img, blkbits, ino):
    # Offset of the directory's first block (or inline tail).
    if ino["layout"] == 2 and ino["size"] <= (1 << blkbits):
        return ino["tail"]
    return ino["blkaddr"] << blkbits


def entries(img, off, size):
    first = struct.unpack_from("<H", img, off + 8)[0]
    n = first // 12
    out = []
    for k in range(n):
        nid, nameoff, ftype = struct.unpack_from("<QHB", img, off + 12 * k)
        end = struct.unpack_from("<H", img, off + 12 * (k + 1) + 8)[0] if k + 1 < n else size
        name = bytes(img[off + nameoff:off + end]).split(b"\0")[0].decode()
        out.append((name, nid, ftype, off + 12 * k))
    return out


def lookup(img, sb, path):
    blkbits, root, meta = sb
    nid = root
    for part in [p for p in path.split("/") if p]:
        ino = inode(img, meta, nid)
        off = dir_data(img, blkbits, ino)
        nid = {e[0]: e[1] for e in entries(img, off, min(ino["size"], 1 << blkbits))}[part]
    return nid


def main():
    src, dst, kind = sys.argv[1:4]
    path = sys.argv[4] if len(sys.argv) > 4 else "/"
    img = bytearray(open(src, "rb").read())
    blkbits = img[1024 + 12]
    root = struct.unpack_from("<H", img, 1024 + 14)[0]
    meta = struct.unpack_from("<I", img, 1024 + 40)[0] << blkbits
    sb = (blkbits, root, meta)
    if kind == "magic":
        img[1024] ^= 0xFF
    elif kind == "truncate":
        del img[len(img) // 2:]
    else:
        nid = lookup(img, sb, path)
        ino = inode(img, meta, nid)
        off = dir_data(img, blkbits, ino)
        ents = entries(img, off, min(ino["size"], 1 << blkbits))
        if kind in ("rootdir", "dir"):
            # The second name's offset before the first's: no valid block.
            struct.pack_into("<H", img, ents[1][3] + 8, 5)
        elif kind == "loop":
            sub = [e for e in ents if e[2] == 2 and e[0] not in (".", "..")][0]
            struct.pack_into("<Q", img, sub[3], root)
        else:
            sys.exit("erofs_damage.py: unknown kind " + kind)
        fix_checksum(img, blkbits)
    open(dst, "wb").write(img)


if __name__ == "__main__":
    main()
