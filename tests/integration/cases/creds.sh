# User and group ids and Unix permissions between users
# (guest-kernel/libos/proc/sys_uid.c, fs/perm.c): the test program, run as
# root, makes files in /tmp, becomes uid 1000 in a child and must get the
# same answers as on the host. Sourced by run.sh.

expect_same credtest -- /bin/credtest
