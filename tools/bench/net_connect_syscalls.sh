#!/bin/bash
# The host system calls of an egress connect, without images: a sandbox of
# the initramfs alone runs tools/bench/net_connect.c through
# host.kiln.internal while strace -c -f counts the calls of kilnd and of the
# sandbox's kiln-vmm; each count is (N connects - 0 connects) / N, so what
# the exec around them costs cancels out. strace slows every call: these
# are counts, not times.
#
#   bash tools/bench/net_connect_syscalls.sh [N]   (after make all; default N 500)
#
# KILN_BENCH_BUILD=DIR takes kilnd, kiln-vmm, the kernel and the initramfs
# from DIR/{bin,guest,initramfs} instead of build/ (A/B of two builds).
set -u
cd "$(dirname "$0")/../.." || exit 1
N=${1:-500}
command -v strace >/dev/null || { echo "net_connect_syscalls: no strace (apt-get install strace)"; exit 1; }
# shellcheck source=tools/bench/net_guest.sh
. tools/bench/net_guest.sh
connect_guest net_connect_syscalls
vpid=$(cut -d' ' -f1 "$T"/sandboxes/*/run/vmm.pid)
for k in 0 "$N"; do
	strace -qq -c -f -U name,calls -o "$T/kilnd.$k" -p "$KPID" &
	S1=$!
	strace -qq -c -f -U name,calls -o "$T/vmm.$k" -p "$vpid" &
	S2=$!
	sleep 1 # both attached
	kiln exec "$id" -- /tmp/net_connect 10.0.2.2 "$PORT" "$k" >/dev/null
	kill -INT $S1 $S2
	wait $S1 $S2
done
for w in kilnd vmm; do
	echo "per connect, $w (system calls; N=$N):"
	awk -v n="$N" 'FNR == NR && $2 ~ /^[0-9]+$/ { z[$1] = $2; next }
		$2 ~ /^[0-9]+$/ { d = ($2 - z[$1]) / n; if ($1 != "total" && d >= 0.05) printf "  %-20s %6.2f\n", $1, d
			if ($1 == "total") t = d }
		END { printf "  %-20s %6.2f\n", "total", t }' "$T/$w.0" "$T/$w.$N"
done
