#!/bin/bash
# containerd-shim-kiln-v2 beside runc, through the same containerd (one of
# the bench's own, tests/e2e/containerd_env.sh) and the same busybox image
# (built here): `ctr run --rm IMAGE true` (create to exit, the rootfs image
# cached after the first), the first run of a new image (mkfs.erofs of its
# rootfs), a container started in a running pod, `ctr task exec` into a
# running task, and pause/resume. Medians of
# SHIM_BENCH_RUNS (default 7), wall time of the ctr command in ms (ctr's
# own start-up, ~10 ms, included for both).
#
#   bash tools/bench/shim_bench.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
RUNS=${SHIM_BENCH_RUNS:-7}
[ "$RUNS" -ge 3 ] || RUNS=3
[ -w /dev/kvm ] || { echo "shim_bench: skipped: /dev/kvm not available"; exit 0; }
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh shim_bench
$C version >/dev/null 2>&1 || { echo "shim_bench: containerd did not start: $(tail -3 "$T/containerd.log")"; exit 1; }
IMG=docker.io/library/kiln-bench:1
python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag "$IMG" --cmd '["/bin/sh"]' &&
	$C image import "$T/img.tar" >/dev/null || { echo "shim_bench: image import failed"; exit 1; }

ms() { date +%s%3N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
# timed CMD...: ms of one run (failures abort)
timed() {
	local t0 t1
	t0=$(ms)
	"$@" >/dev/null 2>&1 || { echo "shim_bench: failed: $*" >&2; echo failed; return; }
	t1=$(ms)
	echo $((t1 - t0))
}

# the first container of an image packs its rootfs; later ones find it
first=$(timed $C run --rm $RT "$IMG" first true)
k=$(for i in $(seq "$RUNS"); do timed $C run --rm $RT "$IMG" k$i true; done | median)
r=$(for i in $(seq "$RUNS"); do timed $C run --rm --runtime io.containerd.runc.v2 "$IMG" r$i true; done | median)
echo "ctr run --rm IMAGE true:   kiln $k ms, runc $r ms (ratio $(awk "BEGIN{printf \"%.2f\", $k/$r}"))"
echo "  first kiln run of the image (mkfs.erofs of a 2 MiB rootfs): $first ms"
# the four files the kubelet binds into every container, copied into the
# guest by kiln (shim/binds.c), bind-mounted by runc; interleaved with the
# same runs without them
mkdir -p "$T/pod"
printf '127.0.0.1 localhost\n10.0.0.5 pod\n' >"$T/pod/hosts"
echo pod >"$T/pod/hostname"
echo "nameserver 10.0.0.10" >"$T/pod/resolv.conf"
: >"$T/pod/termination-log"
B=""
for f in hosts hostname resolv.conf; do B="$B --mount type=bind,src=$T/pod/$f,dst=/etc/$f,options=rbind:rw"; done
B="$B --mount type=bind,src=$T/pod/termination-log,dst=/dev/termination-log,options=rbind:rw"
for i in $(seq "$RUNS"); do
	# shellcheck disable=SC2086 # one option per word
	echo "$(timed $C run --rm $RT "$IMG" kn$i true) $(timed $C run --rm $RT $B "$IMG" kb$i true) $(timed $C run --rm --runtime io.containerd.runc.v2 $B "$IMG" rb$i true)"
done >"$T/binds"
kn=$(awk '{print $1}' "$T/binds" | median)
kb=$(awk '{print $2}' "$T/binds" | median)
rb=$(awk '{print $3}' "$T/binds" | median)
echo "ctr run --rm with the kubelet's 4 file binds: kiln $kb ms (without them, interleaved: $kn ms), runc $rb ms"

# a container of a pod (tests/e2e/containerd_pod.sh): started in the pod's
# running VM, its 2 MiB root copied in (shim/ctr_root.c), beside a lone
# container (a VM of its own) and runc, interleaved
$C run -d $RT --annotation io.kubernetes.cri.container-type=sandbox \
	--annotation io.kubernetes.cri.sandbox-id=bpod "$IMG" bpod sleep 600 >/dev/null || exit 1
for i in $(seq "$RUNS"); do
	echo "$(timed $C run --rm $RT "$IMG" pl$i true) $(timed $C run --rm $RT \
		--annotation io.kubernetes.cri.container-type=container \
		--annotation io.kubernetes.cri.sandbox-id=bpod "$IMG" pm$i true) $(timed $C run --rm \
		--runtime io.containerd.runc.v2 "$IMG" pr$i true)"
done >"$T/pod.txt"
pl=$(awk '{print $1}' "$T/pod.txt" | median)
pm=$(awk '{print $2}' "$T/pod.txt" | median)
pr=$(awk '{print $3}' "$T/pod.txt" | median)
pc=$(grep -o 'container pm[0-9]*: its root copied into the pod.s VM at [^ ]* in [0-9]* ms' \
	"$T/containerd.log" | awk '{print $(NF - 1)}' | median)
echo "ctr run --rm in a running pod: kiln $pm ms (its root copied into the VM: $pc ms), a lone kiln container $pl ms, runc $pr ms (interleaved)"
$C task kill -s SIGKILL bpod >/dev/null 2>&1

$C run -d $RT "$IMG" kx sleep 600 >/dev/null || exit 1
$C run -d --runtime io.containerd.runc.v2 "$IMG" rx sleep 600 >/dev/null || exit 1
k=$(for i in $(seq "$RUNS"); do timed $C task exec --exec-id e$i kx true; done | median)
r=$(for i in $(seq "$RUNS"); do timed $C task exec --exec-id e$i rx true; done | median)
echo "ctr task exec TASK true:   kiln $k ms, runc $r ms (ratio $(awk "BEGIN{printf \"%.2f\", $k/$r}"))"
kp=$(for i in $(seq "$RUNS"); do timed $C task pause kx; $C task resume kx; done | median)
kr=$(for i in $(seq "$RUNS"); do $C task pause kx; timed $C task resume kx; done | median)
rp=$(for i in $(seq "$RUNS"); do timed $C task pause rx; $C task resume rx; done | median)
rr=$(for i in $(seq "$RUNS"); do $C task pause rx; timed $C task resume rx; done | median)
echo "ctr task pause / resume:   kiln $kp / $kr ms (a snapshot of the 256 MiB VM to disk, then paused), runc $rp / $rr ms (cgroup freezer, memory only)"
