# inotify on the tmpfs (guest-kernel/libos/fs/inotify.c): the test program
# must print what it prints on the host. Sourced by run.sh.

expect_same inotifytest -- /bin/inotifytest
