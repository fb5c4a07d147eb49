#!/bin/bash
# Egress throughput on this host, without images: a sandbox of the
# initramfs alone (agent.cpio) runs tools/bench/net_tput.c against the
# server of tools/bench/net_bench.py through host.kiln.internal (10.0.2.2),
# beside the same client on the host against 127.0.0.1, RUNS times
# alternated; then perf counts, per MiB each way, the KVM events on the
# VMM's threads (kicks kvm_mmio, MSIs, wake-ups from halt, supervisor calls
# as injected exceptions) and the context switches and CPU time of the VMM
# and kilnd: (MIB MiB - 0 MiB) / MIB, both directions together.
#
#   bash tools/bench/net_tput_events.sh [MIB] [RUNS]  (after make all; 256, 3)
#
# KILN_BENCH_BUILD=DIR takes kilnd, kiln-vmm, the kernel and the initramfs
# from DIR/{bin,guest,initramfs} instead of build/ (A/B of two builds).
set -u
cd "$(dirname "$0")/../.." || exit 1
MIB=${1:-256}
RUNS=${2:-3}
# shellcheck source=tools/bench/net_guest.sh
. tools/bench/net_guest.sh
${CC:-gcc} -O2 -static -o "$T/net_tput" tools/bench/net_tput.c || exit 1
PORT=$((30000 + $$ % 10000))
python3 tools/bench/net_bench.py server "$PORT" &
SPID=$!
trap 'kill $SPID 2>/dev/null; cleanup; rm -rf "$IMG"' EXIT
id=$(kiln create --allow-out host.kiln.internal:"$PORT" \
	--allow-out host.kiln.internal:$((PORT + 1)) | tail -1)
kiln cp "$T/net_tput" "$id:/tmp/net_tput" >/dev/null || exit 1
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $((PORT + 1))))" \
		2>/dev/null && break
	sleep 0.1
done
for _ in $(seq "$RUNS"); do
	echo "host  (127.0.0.1):          $("$T/net_tput" 127.0.0.1 "$PORT" "$MIB")"
	echo "guest (host.kiln.internal): $(kiln exec "$id" -- /tmp/net_tput 10.0.2.2 "$PORT" "$MIB")"
done
per_op "$MIB" "per MiB each way" build/bin/kiln --socket "$SOCK" exec "$id" -- \
	/tmp/net_tput 10.0.2.2 "$PORT" @N@
