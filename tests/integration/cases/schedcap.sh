# What Chromium asks of the process calls before it forks its zygote and
# starts its GPU and renderer processes (proc/sys_cred.c, proc/sys_sched.c,
# /proc/self/task): the test program must print what it prints on the host.
# Sourced by run.sh.

expect_same schedcap -- /bin/schedcap
