# AF_VSOCK over virtio-vsock, end to end (tests/integration/vsock_test.sh,
# which boots its own VMs and prints its own ok/FAIL lines). Sourced by
# run.sh: one case, "vsock", that fails if any of them does.

if want_case vsock; then
	KILN_VMM=$VMM KILN_KERNEL=$KERNEL KILN_INITRD=$INITRD KILN_KVM_DEV=$KVM_DEV \
		sh tests/integration/vsock_test.sh >"$T/vsock.out" 2>&1
	vsock_rc=$?
	if [ $vsock_rc -eq 0 ]; then
		pass vsock
	else
		fail vsock "vsock_test.sh exited with status $vsock_rc"
		show "vsock_test.sh" "$T/vsock.out" 60
	fi
fi
