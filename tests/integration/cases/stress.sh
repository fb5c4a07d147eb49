# Resource exhaustion inside the guest ends in an error for the offender;
# the guest (and its init shell) carry on. Sourced by run.sh.
# Small blocks are mapped at once: mmap itself fails. Large ones are mapped
# on first touch: the toucher is killed, as by Linux's OOM killer.
guest_case stress-memhog 0 --vmm '--mem 128M' --out '^memhog: mmap failed with ENOMEM after more than 10 MiB$' \
	--out '^alive$' -- /bin/busybox sh -c '/bin/stress memhog 128; /bin/stress memhog 128; echo alive'
guest_case stress-memhog-lazy 0 --vmm '--mem 128M' --out '^kiln: out of memory: killed pid [0-9]+ \(stress\)$' \
	--out '^Killed$' --out '^alive$' -- /bin/busybox sh -c '/bin/stress memhog 4096; /bin/stress memhog 4096; echo alive'
guest_case stress-forkbomb 0 --vmm '--mem 128M' \
	--out '^forkbomb: fork failed with EAGAIN/ENOMEM after more than 10 processes$' \
	--out '^forkbomb: reaped all$' --out '^alive$' \
	-- /bin/busybox sh -c '/bin/stress forkbomb; /bin/stress forkbomb; echo alive'
