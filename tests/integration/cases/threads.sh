# Threads: clone, futex, thread-local storage, join. Sourced by run.sh.
expect_same threads -- /bin/threads
