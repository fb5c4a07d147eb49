#!/bin/sh
# Snapshot benchmarks (make bench runs this from tools/bench/bench.sh):
# pause to a file, file size, eager/lazy/template restores, clones of a
# template (memory, rate). See tools/bench/snapshot_bench.py.
#
#   sh tools/bench/snapshot_bench.sh
#
# Environment: KILN_VMM, KILN_KERNEL, KILN_INITRD, KILN_KVM_DEV,
# KILN_BENCH_SNAP_RUNS (runs per median, default 10), KILN_BENCH_CLONES
# (idle clones, default 100), KILN_BENCH_IMAGE (the base image for the Python
# template, default build/images/base.erofs; skipped if it is not there).
set -u
cd "$(dirname "$0")/../.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/test.cpio}
KVM_DEV=${KILN_KVM_DEV:-/dev/kvm}
IMAGE=${KILN_BENCH_IMAGE:-build/images/base.erofs}

if [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
	echo "snapshot bench: skipped: $KVM_DEV not available"
	exit 0
fi
if ! command -v python3 >/dev/null; then
	echo "snapshot bench: skipped: no python3"
	exit 0
fi
# Templates live on tmpfs, as they would for kilnd.
T=$(mktemp -d /dev/shm/kiln-snapbench.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' HUP TERM
# Own copies: a rebuild during the run must not change what is restored.
cp "$KERNEL" "$T/kernel" && cp "$INITRD" "$T/initrd" || exit 1
set -- --runs "${KILN_BENCH_SNAP_RUNS:-10}" --clones "${KILN_BENCH_CLONES:-100}"
[ -f "$IMAGE" ] && set -- "$@" --python "$IMAGE"
echo "  snapshots (tools/bench/snapshot_bench.py)"
python3 tools/bench/snapshot_bench.py "$VMM" "$T/kernel" "$T/initrd" "$T" "$@"
