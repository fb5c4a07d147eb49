# Resource exhaustion inside the guest ends in an error for the offender;
# the guest (and its init shell) carry on. Sourced by run.sh.
guest_case stress-memhog 0 --vmm '--mem 128M' --out '^memhog: mmap failed with ENOMEM after more than 10 MiB$' \
	--out '^alive$' -- /bin/busybox sh -c '/bin/stress memhog; /bin/stress memhog; echo alive'
guest_case stress-forkbomb 0 --vmm '--mem 128M' \
	--out '^forkbomb: fork failed with EAGAIN/ENOMEM after more than 10 processes$' \
	--out '^forkbomb: reaped all$' --out '^alive$' \
	-- /bin/busybox sh -c '/bin/stress forkbomb; /bin/stress forkbomb; echo alive'
