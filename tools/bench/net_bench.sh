#!/bin/bash
# Egress figures: TCP throughput guest -> host server and back, connection
# set-up and getaddrinfo() latency (medians), from a sandbox of the base
# image through host.kiln.internal, beside the same client on the host
# against 127.0.0.1 in the same run (tools/bench/net_bench.py). The guest's
# getaddrinfo() is a DNS lookup answered by kilnd (host.kiln.internal); the
# host's is of the literal 127.0.0.1, the floor of the call.
#
#   bash tools/bench/net_bench.sh        (after make all images)
#
# Environment: NET_BENCH_MIB (default 512), NET_BENCH_N (default 200);
# KILN_BENCH_BUILD=DIR takes kilnd, kiln-vmm, the kernel and the initramfs
# from DIR/{bin,guest,initramfs} instead of build/ (A/B of two builds).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${KILN_BENCH_BUILD:-build}
KILND=$B/bin/kilnd
VMM=$B/bin/kiln-vmm
KERNEL=$B/guest/kiln-kernel
INITRD=$B/initramfs/agent.cpio
MIB=${NET_BENCH_MIB:-512}
N=${NET_BENCH_N:-200}
[ -e build/images/base.erofs ] || { echo "net_bench: no base image (make images)"; exit 1; }
# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images build/images --image-initrd "$B/initramfs/agent-image.cpio"
# The host server, on three free ports (another program may hold some).
SPID=
trap 'kill $SPID 2>/dev/null; cleanup' EXIT
for _ in 1 2 3 4 5; do
	PORT=$((30000 + RANDOM % 10000))
	python3 tools/bench/net_bench.py server "$PORT" >"$T/server.out" 2>&1 &
	SPID=$!
	for _ in $(seq 100); do
		grep -qx ready "$T/server.out" && break 2
		kill -0 $SPID 2>/dev/null || break
		sleep 0.05
	done
	kill $SPID 2>/dev/null
	SPID=
done
[ -n "$SPID" ] || { echo "net_bench: the host server did not start: $(tail -1 "$T/server.out")"; exit 1; }
kiln() { build/bin/kiln --socket "$SOCK" "$@"; }
id=$(kiln create --image base --allow-out host.kiln.internal:"$PORT" \
	--allow-out host.kiln.internal:$((PORT + 1)) --allow-out host.kiln.internal:$((PORT + 2)) | tail -1)
kiln cp tools/bench/net_bench.py "$id:/tmp/net_bench.py" >/dev/null
echo "net egress (guest, host.kiln.internal): $(kiln exec "$id" -- python3 /tmp/net_bench.py client host.kiln.internal "$PORT" "$MIB" "$N")"
echo "net host peer (127.0.0.1):             $(python3 tools/bench/net_bench.py client 127.0.0.1 "$PORT" "$MIB" "$N")"
