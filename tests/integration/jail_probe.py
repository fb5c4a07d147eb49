#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""jail_probe.py PID UID PATH...: open each PATH as a jailed kiln-vmm would:
in the mount namespace of process PID (whose root is the jail's), as uid
and gid UID, with no capabilities. Prints one line per path, "PATH ok" or
"PATH ERRNO-NAME"; "w:PATH" opens it for writing, "c:PATH" creates it. Run as root (tests/integration/jail_test.sh)."""
import ctypes
import errno
import os
import sys

CLONE_NEWNS = 0x00020000


def main():
    pid, uid, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/proc/%d/ns/mnt" % pid, os.O_RDONLY)
    if libc.setns(fd, CLONE_NEWNS) != 0:
        print("setns: %s" % os.strerror(ctypes.get_errno()))
        return 1
    os.close(fd)
    os.chdir("/")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    for p in paths:
        mode = os.O_RDONLY
        if p.startswith("w:"):
            p, mode = p[2:], os.O_WRONLY | os.O_APPEND
        elif p.startswith("c:"):
            p, mode = p[2:], os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            os.close(os.open(p, mode))
            print("%s ok" % p)
        except OSError as e:
            print("%s %s" % (p, errno.errorcode.get(e.errno, str(e.errno))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
