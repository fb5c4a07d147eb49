# The jailed VMM (tests/integration/jail_test.sh, which boots its own VMs
# and prints its own ok/FAIL lines). Sourced by run.sh: one case, "jail",
# that fails if any of them does.

if want_case jail; then
	KILN_VMM=$VMM KILN_KERNEL=$KERNEL KILN_INITRD=$INITRD \
		sh tests/integration/jail_test.sh >"$T/jail.out" 2>&1
	jail_rc=$?
	if [ $jail_rc -eq 0 ]; then
		pass jail
	else
		fail jail "jail_test.sh exited with status $jail_rc"
	fi
	show "jail_test.sh" "$T/jail.out" 40
fi
