# procfs: the test program's checks, and busybox applets that read /proc.
# The values differ from the host's (pids, memory, time): only the shape of
# the output is checked. Sourced by run.sh.
# What another user's process shows (and one's own), run as uid 1000
# against root's and the user's processes: the same as on the host.
expect_same procperm -- /bin/procperm
# capget's and /proc/self/status's capability sets through set*id,
# capset and exec, as root and as uid 1000: the same as on the host.
expect_same capsets -- /bin/capsets
# a procfs of its own on an empty directory (a pod container's /proc): the
# only mount the guest takes; the rest refused, root only (guest only)
guest_case mount-proc 0 --out '^mount: ok$' --out '^comm: mounttest$' --out '^again: EBUSY$' \
	--out '^non-empty: EBUSY$' --out '^on a file: ENOTDIR$' --out '^tmpfs: ENODEV$' \
	--out '^bind: EINVAL$' --out '^umount /proc: EINVAL$' --out '^umount a dir: EINVAL$' \
	--out '^as a user: EPERM$' --out '^umount as a user: EPERM$' --out '^umount: ok$' \
	--out '^self after: ENOENT$' --out '^rmdir: ok$' --out '^boot /proc: ok$' -- /bin/mounttest
guest_case proctest 0 --out '^proctest ok$' --no-out 'FAIL' -- /bin/proctest one 'two words'
guest_case procfs-ls 0 --out '^1$' --out '^self$' --out '^cpuinfo$' --out '^sys$' \
	-- /bin/busybox ls -1 /proc
guest_case procfs-status 0 --out '^Name:[[:space:]]+busybox$' --out '^Pid:[[:space:]]+1$' \
	--out '^PPid:[[:space:]]+0$' --out '^State:[[:space:]]+R \(running\)$' \
	--out '^VmRSS:[[:space:]]+[1-9][0-9]* kB$' --out '^Threads:[[:space:]]+1$' \
	-- /bin/busybox cat /proc/self/status
# sh runs the applets through /proc/self/exe; ps shows init and itself.
guest_case procfs-ps 0 --out '^ *PID +USER +(TIME +)?COMMAND$' \
	--out '^ +1 +[^ ]+ +(0:00 +)?/bin/busybox sh -c busybox ps; true$' \
	--out '^ +[0-9]+ +[^ ]+ +(0:00 +)?busybox ps$' \
	-- /bin/busybox sh -c 'busybox ps; true'
guest_case procfs-exe 0 --out '^/bin/busybox$' --out '^cat$' \
	-- /bin/busybox sh -c 'readlink /proc/self/exe; cat /proc/self/comm; true'
guest_case procfs-free 0 --out '^ +total +used +free +shared +buff/cache +available$' \
	--out '^Mem: +[1-9][0-9]* +[0-9]+ +[1-9][0-9]* +[0-9]+ +[0-9]+ +[1-9][0-9]*$' \
	--out '^Swap: +0 +0 +0$' -- /bin/busybox free
guest_case procfs-uptime 0 \
	--out '^ *[0-9]{2}:[0-9]{2}:[0-9]{2} up .*load average: [0-9]+\.[0-9]{2}, [0-9]+\.[0-9]{2}, [0-9]+\.[0-9]{2}$' \
	-- /bin/busybox uptime
guest_case procfs-top 0 --out '^Mem: [0-9]+K used, [0-9]+K free' --out '^Load average: ' \
	--out '^ +1 +0 +[^ ]+ +R ' -- /bin/busybox top -b -n 1
