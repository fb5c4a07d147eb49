# chroot(2) (guest-kernel/libos/fs/sys_fs.c): a process's root, where "/"
# and ".." stop, passed on to its children, the working directory kept.
# (The root-only check is not tested here: the test image has no way to
# become another user before exec.) Sourced by run.sh.

guest_case chroot 0 --out '^in: bin cwd-ok$' --out '^dotdot: bin$' --out '^after: outer$' -- \
	/bin/sh -c \
	'mkdir -p /r/bin && cp /bin/busybox /r/bin/ && cd /r &&
	 chroot /r /bin/busybox sh -c "echo in: \$(/bin/busybox ls /) \$([ -x bin/busybox ] && echo cwd-ok)" &&
	 echo dotdot: $(chroot /r /bin/busybox ls /../..) &&
	 echo after: $([ -d /r/bin ] && [ -d /dev ] && echo outer)'
