# Mappings of a file from the image (kiln maps its pages in place): reads
# see the file, writes to a private mapping (by the program, by the kernel,
# after fork) change only that mapping, never the file. Prints "mmap ok".
import mmap
import os

p = "/usr/lib/x86_64-linux-gnu/libc.so.6"
data = open(p, "rb").read()
with open(p, "rb") as f:
    ro = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    cp = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
assert ro[:] == data and cp[:] == data, "mapped bytes differ from read bytes"
cp[0:4] = b"KILN"  # a write by the program
cp[len(data) - 1] = 0x5A  # in the last, partial page
with open("/etc/hostname", "rb") as g:  # a write by the kernel
    n = g.readinto(memoryview(cp)[8192 : 8192 + 64])
assert cp[:4] == b"KILN" and ro[:4] == data[:4], "a private write showed elsewhere"
assert cp[4:8192] == data[4:8192] and cp[8192 + n : 12288] == data[8192 + n : 12288]
assert open(p, "rb").read() == data, "the file changed"
pid = os.fork()
if pid == 0:
    cp[5] = 0x41  # the child's copy only
    os._exit(0 if ro[:] == data and cp[:4] == b"KILN" else 1)
_, st = os.waitpid(pid, 0)
assert st == 0 and cp[5] == data[5], "fork shared a private page"
print("mmap ok")
