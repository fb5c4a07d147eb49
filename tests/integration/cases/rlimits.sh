# shellcheck shell=sh
# Resource limits (guest-kernel/libos/proc/sys_proc.c): each process has its
# own, a child inherits them, lowering needs nothing, root may raise the hard
# limit, and RLIMIT_NOFILE bounds new descriptors (dup2 past it fails), all
# as on the host (the shell runs as root on both); RLIMIT_NPROC bounds the
# threads of a non-root user (nproctest), RLIMIT_AS the mappings'
# total (astest). Sourced by run.sh.

expect_same rlimit-nofile -- /bin/busybox sh -c 'ulimit -n 100; ulimit -n; sh -c "ulimit -n"; (exec 99</dev/null) && echo fd99; (exec 100</dev/null) 2>/dev/null || echo no-fd100; ulimit -Sn 50; ulimit -Sn; ulimit -Hn; ulimit -Sn 80; ulimit -Sn; ulimit -Sn 200 2>/dev/null || echo soft-above-hard; ulimit -Hn 60; ulimit -Hn 90 && ulimit -Hn'
expect_same rlimit-core-stack -- /bin/busybox sh -c 'ulimit -c 0; ulimit -c; ulimit -s 4096; ulimit -s; sh -c "ulimit -s"'
expect_same rlimit-nproc -- /bin/nproctest
expect_same rlimit-as -- /bin/astest
