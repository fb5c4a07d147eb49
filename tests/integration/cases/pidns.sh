# PID namespaces (include/kiln/pidns.h, guest-kernel/libos/proc/pidns.c),
# one per app container of a pod: numbers, /proc, kill, wait and the
# init's end inside one, as a Linux PID namespace has them (guest only:
# the namespaces are set by kiln's prctl). Sourced by run.sh.
guest_case pidns 0 --out '^pidnstest ok$' --no-out 'FAIL' \
	--out '^init pid 1: ok$' --out '^fork returns 2: ok$' --out '^/proc lists the namespace: ok$' \
	--out '^kill outside: ESRCH: ok$' --out '^NSpid global and local: ok$' \
	--out '^joined: pid of the namespace, ppid 0: ok$' --out '^orphan killed with the init: ok$' \
	-- /bin/pidnstest
