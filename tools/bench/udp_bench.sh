#!/bin/bash
# UDP egress figures: round-trip latency of one datagram at a time and an
# echo rate with 32 in flight, from a sandbox of the base image through
# host.kiln.internal to an echo server on the host's loopback, beside the
# same client on the host against 127.0.0.1, interleaved (tools/bench/udp_bench.py).
#
#   bash tools/bench/udp_bench.sh        (after make all images)
#
# Environment: UDP_BENCH_N (default 2000), UDP_BENCH_RUNS (default 3).
set -u
cd "$(dirname "$0")/../.." || exit 1
KILND=${UDP_BENCH_KILND:-build/bin/kilnd}
VMM=build/bin/kiln-vmm
KERNEL=${UDP_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=build/initramfs/agent.cpio
N=${UDP_BENCH_N:-2000}
RUNS=${UDP_BENCH_RUNS:-3}
[ -e build/images/base.erofs ] || { echo "udp_bench: no base image (make images)"; exit 1; }
# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images build/images --image-initrd build/initramfs/agent-image.cpio
PORT=$((30000 + $$ % 10000))
python3 tools/bench/udp_bench.py server $PORT >"$T/udp_server.out" &
SPID=$!
for _ in $(seq 100); do grep -q ready "$T/udp_server.out" 2>/dev/null && break; sleep 0.05; done
trap 'kill $SPID 2>/dev/null; cleanup' EXIT
kiln() { build/bin/kiln --socket "$SOCK" "$@"; }
id=$(kiln create --image base --allow-out host.kiln.internal:$PORT | tail -1)
kiln cp tools/bench/udp_bench.py "$id:/tmp/udp_bench.py" >/dev/null
for r in $(seq "$RUNS"); do
	echo "udp egress (guest, host.kiln.internal): $(kiln exec "$id" -- python3 /tmp/udp_bench.py client host.kiln.internal $PORT "$N")"
	echo "udp host peer (127.0.0.1):             $(python3 tools/bench/udp_bench.py client 127.0.0.1 $PORT "$N")"
done
