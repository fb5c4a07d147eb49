#!/bin/bash
# Egress connect set-up on this host, without images: a sandbox of the
# initramfs alone (agent.cpio) runs tools/bench/net_connect.c against a host
# server through host.kiln.internal (10.0.2.2), beside the same client on
# the host against 127.0.0.1 in the same run; then perf counts, per connect,
# the KVM events on the VMM's threads (kicks kvm_mmio, emulated CPL0
# instructions, MSIs, wake-ups from halt, supervisor calls as injected
# exceptions) and the context switches and CPU time of the VMM and kilnd:
# (N connects - 0 connects) / N.
#
#   bash tools/bench/net_connect_events.sh [N]     (after make all; default N 1000)
#
# KILN_BENCH_BUILD=DIR takes kilnd, kiln-vmm, the kernel and the initramfs
# from DIR/{bin,guest,initramfs} instead of build/ (A/B of two builds).
set -u
cd "$(dirname "$0")/../.." || exit 1
N=${1:-1000}
# shellcheck source=tools/bench/net_guest.sh
. tools/bench/net_guest.sh
connect_guest net_connect_events
for _ in 1 2 3; do
	echo "host  (127.0.0.1):          $("$T/net_connect" 127.0.0.1 "$PORT" "$N")"
	echo "guest (host.kiln.internal): $(kiln exec "$id" -- /tmp/net_connect 10.0.2.2 "$PORT" "$N")"
done
per_op "$N" "per connect" "$B"/bin/kiln --socket "$SOCK" exec "$id" -- \
	/tmp/net_connect 10.0.2.2 "$PORT" @N@
