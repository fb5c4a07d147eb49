#!/bin/bash
# kilnd with snapshots, on real VMs: KILND_BURST_N (default 100) creates at
# once from a warm Python template (numpy and pandas imported), the answers'
# rate (issue 21's clones started per second), KILND_BURST_ROUNDS (default 5)
# rounds after one of 10 to warm up (tools/bench/kilnd_burst.py).
#
#   bash tools/bench/kilnd_burst.sh
#
# Environment: KILND_BENCH_KILND (default build/bin/kilnd: another build to
# compare), KILND_BENCH_TMP (default /tmp: where kilnd's data directory is
# made; /dev/shm puts it on tmpfs), KILND_BENCH_IMAGES (default build/images,
# needs base.erofs from make images).
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=${KILND_BENCH_KILND:-build/bin/kilnd}
VMM=build/bin/kiln-vmm
KERNEL=build/guest/kiln-kernel
INITRD=build/initramfs/agent.cpio
IMAGES=${KILND_BENCH_IMAGES:-build/images}
N=${KILND_BURST_N:-100}
ROUNDS=${KILND_BURST_ROUNDS:-5}

for f in "$KILND" "$VMM" "$KERNEL" "$INITRD" "$IMAGES/base.erofs"; do
	[ -e "$f" ] || { echo "kilnd_burst: missing $f (make, make images)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "kilnd_burst: skipped: /dev/kvm not available"; exit 0; }

# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images "$IMAGES"

curl -s --unix-socket "$SOCK" -o "$BODY" -d \
	'{"name":"py","image":"base","warmup":["python3","-c","import numpy, pandas"]}' \
	http://k/templates
grep -q '"snapshotBytes"' "$BODY" || { echo "kilnd_burst: template: $(head -c 300 "$BODY")"; exit 1; }
echo "kilnd_burst: $KILND, data in $T, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 tools/bench/kilnd_burst.py "$SOCK" 10 '{"templateID":"py"}' 1 >/dev/null || exit 1
# kilnd's CPU time and its reaped children's (the clones' VMMs, all their
# threads), in clock ticks: what the rounds cost per clone, whatever else
# runs on the host.
cpu() { awk '{ sub(/.*\) /, ""); print $12 + $13, $14 + $15 }' "/proc/$KPID/stat"; }
read -r k0 c0 < <(cpu)
python3 tools/bench/kilnd_burst.py "$SOCK" "$N" '{"templateID":"py"}' "$ROUNDS"
# the last round's VMMs are reaped once they are gone
for _ in $(seq 50); do
	[ -z "$(ls "$T"/sandboxes 2>/dev/null)" ] && break
	sleep 0.1
done
read -r k1 c1 < <(cpu)
awk -v k=$((k1 - k0)) -v c=$((c1 - c0)) -v n=$((N * ROUNDS)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
	printf "CPU per clone: kilnd %.1f ms, its VMMs %.1f ms (%d clones)\n", k * 1000 / hz / n,
		c * 1000 / hz / n, n }'
