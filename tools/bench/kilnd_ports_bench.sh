#!/bin/bash
# Inbound ports through kilnd, on real VMs: the same HTTP server
# (tests/e2e/port_server.py) in a base sandbox, reached through
# /sandboxes/ID/ports/PORT/ and the Host form PORT-ID.localhost, against
# it running on the host reached straight. Request latency (a 100-byte
# answer, a fresh connection each: curl's connect to last byte) as median,
# p90 and min of KILND_PORTS_RUNS (default 30), and the throughput of one
# 256 MiB answer.
#
#   bash tools/bench/kilnd_ports_bench.sh
#
# KILN_BENCH_BUILD=DIR takes kilnd, kiln-vmm, the kernel and the initramfs
# from DIR/{bin,guest,initramfs} instead of build/ (A/B of two builds).
set -u
cd "$(dirname "$0")/../.." || exit 1

B=${KILN_BENCH_BUILD:-build}
KILND=$B/bin/kilnd
VMM=$B/bin/kiln-vmm
KERNEL=${KILND_BENCH_KERNEL:-$B/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-$B/initramfs/agent.cpio}
IMAGES=${KILND_BENCH_IMAGES:-build/images}
RUNS=${KILND_PORTS_RUNS:-30}

for f in "$KILND" "$VMM" "$KERNEL" "$INITRD" "$IMAGES/base.erofs"; do
	[ -e "$f" ] || { echo "kilnd_ports_bench: missing $f (make; make images)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "kilnd_ports_bench: skipped: /dev/kvm not available"; exit 0; }

TCP=$((20000 + RANDOM % 10000))
KEY=e2b_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images "$IMAGES" --image-initrd "$(dirname "$INITRD")/agent-image.cpio" \
	--listen-tcp "127.0.0.1:$TCP" --api-key "$KEY" --domain "localhost:$TCP"

GP=$((30000 + RANDOM % 5000))
HP=$((GP + 2))
id=$(curl -s --unix-socket "$SOCK" -d '{"image":"base","timeout":600}' http://k/sandboxes |
	sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p')
[ -n "$id" ] || { echo "kilnd_ports_bench: create failed"; exit 1; }
curl -s --unix-socket "$SOCK" -X PUT --data-binary @tests/e2e/port_server.py \
	"http://k/sandboxes/$id/files?path=/tmp/port_server.py" >/dev/null
curl -s --unix-socket "$SOCK" -d "{\"cmd\":\"python3 /tmp/port_server.py $GP $((GP + 1)) >/dev/null 2>&1 &\"}" \
	"http://k/sandboxes/$id/exec" >/dev/null
python3 tests/e2e/port_server.py "$HP" $((HP + 1)) >/dev/null 2>&1 &
HOSTPID=$!
trap 'kill $HOSTPID 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do
	curl -sf --unix-socket "$SOCK" "http://k/sandboxes/$id/ports/$GP/bytes?n=1" >/dev/null &&
		curl -sf "http://127.0.0.1:$HP/bytes?n=1" >/dev/null && break
	sleep 0.1
done

# times CURL-ARGS...: RUNS times curl's total time of one request, into $T/t
times() {
	: >"$T/t"
	for _ in $(seq "$RUNS"); do
		curl -s -o /dev/null -w '%{time_total}\n' "$@" >>"$T/t"
	done
}
times "http://127.0.0.1:$HP/bytes?n=100"
line "GET, the host's own server (straight)" "$T/t"
times --unix-socket "$SOCK" "http://k/sandboxes/$id/ports/$GP/bytes?n=100"
line "GET through /sandboxes/ID/ports/PORT (unix)" "$T/t"
times -H "X-API-Key: $KEY" "http://$GP-$id.localhost:$TCP/bytes?n=100"
line "GET through PORT-ID.localhost (getHost, tcp)" "$T/t"

mbps() { # URL-ARGS...: MB/s of one 256 MiB answer
	curl -s -o /dev/null -w '%{size_download} %{time_total}\n' "$@" |
		awk '{ printf "%.0f", $1 / $2 / 1e6 }'
}
n=$((256 << 20))
printf '%-44s %s MB/s (host server straight: %s MB/s; 256 MiB)\n' \
	"one answer through /sandboxes/ID/ports/PORT" \
	"$(mbps --unix-socket "$SOCK" "http://k/sandboxes/$id/ports/$GP/bytes?n=$n")" \
	"$(mbps "http://127.0.0.1:$HP/bytes?n=$n")"
