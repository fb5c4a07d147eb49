# A library one python3 process mapped must not be readable in the next
# one, which runs the same program but does not map it (vm_keep.c keeps
# the dead process's entries for the image pages as stale entries, which
# no access may reach). `stale_map.py map` loads _bz2 and prints the
# address of its code; `stale_map.py ADDR` then reads there, through the
# kernel (write: EFAULT) and directly (SIGSEGV).
import ctypes
import sys

if sys.argv[1] == "map":
    import _bz2

    lib = ctypes.CDLL(_bz2.__file__)
    print(ctypes.cast(lib.PyInit__bz2, ctypes.c_void_p).value)
    sys.exit(0)
addr = int(sys.argv[1])
for line in open("/proc/self/maps"):
    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
    if lo <= addr < hi:
        print("mapped again: the test proves nothing")
        sys.exit(1)
libc = ctypes.CDLL(None, use_errno=True)
n = libc.write(1, ctypes.c_void_p(addr), 1)
print("write:", n, ctypes.get_errno(), flush=True)
ctypes.string_at(addr, 1)
print("read an unmapped page")
