#!/bin/sh
# AF_VSOCK end to end: kiln-vmm --vsock with the guest's virtio-vsock driver
# and sockets, driven from the host over the VM's unix socket.
#
#   sh tests/integration/vsock_test.sh [--bench MIB]
#
# 1. `vsocktest selftest`: socket calls that need no peer; `vsocktest nodev`:
#    without --vsock, socket(AF_VSOCK) fails with EAFNOSUPPORT.
# 2. `vsocktest serve 1024`, driven by vsock_test.py: echo, bulk transfers
#    both ways with sha256 checks, guest-to-host connections, RSTs, 50
#    concurrent connections, half close, an aborted stream; then the guest
#    server must end cleanly (status 0) and kiln-vmm must not have logged a
#    protocol complaint about the guest.
# With --bench, step 2 measures throughput both ways instead.
# Environment as run.sh: KILN_VMM, KILN_KERNEL, KILN_INITRD, KILN_KVM_DEV.
# Prints ok/FAIL per case; exits non-zero if any failed.
set -u
cd "$(dirname "$0")/../.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/test.cpio}
KVM_DEV=${KILN_KVM_DEV:-/dev/kvm}

if [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
	echo "vsock: skipped: $KVM_DEV not available"
	exit 0
fi
if ! command -v python3 >/dev/null; then
	echo "vsock: skipped: no python3"
	exit 0
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-vsock.XXXXXX") || exit 1
vmm_pid=
cleanup() {
	[ -n "$vmm_pid" ] && kill "$vmm_pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' HUP TERM

status=0
fail() {
	echo "FAIL vsock-$1: $2"
	for f in "$T/console" "$T/vmm.err"; do
		[ -s "$f" ] && sed 's/^/    | /' "$f" | tail -n 20
	done
	status=1
}

# ---------------------------------------------------------------- selftest

timeout --foreground -k 5 30 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" \
	--vsock "3,$T/s.sock" -- /bin/vsocktest selftest </dev/null >"$T/console" 2>"$T/vmm.err"
rc=$?
if [ $rc -eq 0 ] && grep -q '^selftest ok' "$T/console"; then
	echo "ok   vsock-selftest"
else
	fail selftest "status $rc"
fi

timeout --foreground -k 5 30 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- \
	/bin/vsocktest nodev </dev/null >"$T/console" 2>"$T/vmm.err"
rc=$?
if [ $rc -eq 0 ] && grep -q '^nodev ok' "$T/console"; then
	echo "ok   vsock-no-device"
else
	fail no-device "status $rc"
fi

# ---------------------------------------------------------------- server

"$VMM" --kernel "$KERNEL" --initrd "$INITRD" --vsock "3,$T/v.sock" -- \
	/bin/vsocktest serve 1024 </dev/null >"$T/console" 2>"$T/vmm.err" &
vmm_pid=$!
i=0
until grep -q '^listening 1024' "$T/console" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$vmm_pid" 2>/dev/null; then
		fail boot "the guest server did not start listening"
		exit 1
	fi
	sleep 0.1
done

python3 tests/integration/vsock_test.py "$T/v.sock" "$@" || status=1

# QUIT (the last case) ends the guest server and with it the VM.
i=0
while kill -0 "$vmm_pid" 2>/dev/null && [ $i -lt 200 ]; do
	i=$((i + 1))
	sleep 0.1
done
if kill -0 "$vmm_pid" 2>/dev/null; then
	fail exit "the VM is still running after QUIT"
else
	wait "$vmm_pid"
	rc=$?
	vmm_pid=
	if [ $rc -ne 0 ] || ! grep -q '^server done' "$T/console"; then
		fail exit "the VM ended with status $rc"
	elif [ $# -eq 0 ] && ! grep -q '^sigpipe ok' "$T/console"; then
		fail sigpipe "no EPIPE with SIGPIPE (and none with MSG_NOSIGNAL) in the guest"
	elif grep -q 'vsock' "$T/vmm.err"; then
		fail vmm-log "kiln-vmm complained about the guest's vsock packets"
	else
		echo "ok   vsock-clean-exit"
	fi
fi
exit $status
