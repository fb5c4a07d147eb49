# shellcheck shell=bash
# A containerd of our own for the shim's tests and benchmarks (sourced by
# tests/e2e/containerd.sh and tools/bench/shim_bench.sh): its root, state,
# sockets and config in a temporary directory $T, not the system's; the
# shim found on its PATH (build/bin), its rootfs images cached in $T. On
# exit everything it started goes: shims, VMMs, containerd, mounts, $T.
# Sets ROOT, BIN, T, SOCK, STATE, TASKS, C (ctr with our socket), RT (the
# --runtime option), CTRD, JAIL_BASE; ctrd_stop and ctrd_start restart
# containerd, ctrd_leftovers says what the run left behind; calls
# extra_cleanup first if the caller defines it. $1 names the caller in
# messages. With CTRD_CRI set (TOML of the CRI plugin's section, @T@
# standing for $T), containerd's CRI plugin runs too, so configured.
WHO=$1
ROOT=$PWD
BIN=$ROOT/build/bin
for f in "$BIN/containerd-shim-kiln-v2" "$BIN/kiln-vmm" "$ROOT/build/guest/kiln-kernel" \
	"$ROOT/build/initramfs/agent-image.cpio"; do
	[ -e "$f" ] || { echo "$WHO: missing $f (build with: make)"; exit 1; }
done
for c in containerd ctr mkfs.erofs; do
	command -v $c >/dev/null || { echo "$WHO: $c is missing (mk/deps.sh installs it)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "$WHO: needs /dev/kvm"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "$WHO: containerd needs root"; exit 1; }

T=$(mktemp -d /tmp/kiln-ctr.XXXXXX)
SOCK=$T/containerd.sock
STATE=$T/state
TASKS=$STATE/io.containerd.runtime.v2.task/default
C="ctr -a $SOCK"
RT="--runtime io.containerd.kiln.v2"
CTRD=

ctrd_cleanup() {
	local p
	declare -F extra_cleanup >/dev/null && extra_cleanup
	# every task still there, kiln's or runc's, by containerd while it runs
	for p in $($C task ls -q 2>/dev/null); do $C task kill -s SIGKILL "$p" 2>/dev/null; done
	for p in "$TASKS"/*/vmm.pid; do
		[ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	# runc's shims too: a task killed but not deleted keeps its shim after containerd
	for p in $(pgrep -f "containerd-shim-(kiln|runc)-v2 .*-address $SOCK"); do kill -9 "$p"; done
	[ -n "$CTRD" ] && kill "$CTRD" 2>/dev/null && wait "$CTRD" 2>/dev/null
	# containerd's snapshots and any rootfs a dead shim left mounted
	grep -o " $T/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
	rm -rf "$T"
}
trap ctrd_cleanup EXIT

# What this run's containers left behind (their shims' jail uids are
# JAIL_BASE + 1...65535): jail lock files, cgroup leaves, rootfs mounts,
# bundles, one "kind: what" line each; nothing when nothing is left.
ctrd_leftovers() {
	local l
	ours() { awk -F'vmm-' -v b="$JAIL_BASE" '{ n = $NF + 0; if (n > b && n < b + 65536) print }'; }
	l=$(ls /run/kiln-shim/jail 2>/dev/null | sed 's/^/vmm-/' | ours | tr '\n' ' ')
	[ -n "$l" ] && echo "jail lock files: $l"
	l=$(find /sys/fs/cgroup -maxdepth 8 -type d -name 'vmm-*' 2>/dev/null | ours | tr '\n' ' ')
	[ -n "$l" ] && echo "cgroup leaves: $l"
	l=$(grep -o " $TASKS/[^ ]*" /proc/mounts | tr '\n' ' ')
	[ -n "$l" ] && echo "rootfs mounts:$l"
	l=$(ls "$TASKS" 2>/dev/null | tr '\n' ' ')
	[ -n "$l" ] && echo "bundles: $l"
	return 0
}

cat >"$T/config.toml" <<EOF
version = 2
root = "$T/root"
state = "$STATE"
disabled_plugins = [$([ -n "${CTRD_CRI:-}" ] || echo '"io.containerd.grpc.v1.cri",') "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing",
  "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  level = "info"
${CTRD_CRI:+${CTRD_CRI//@T@/$T}}
EOF
# the shim finds kiln-vmm, the kernel and the initramfs beside itself; its
# VMMs' jail uids are a range of this run's own (JAIL_BASE + 1...65535), so
# that what they leave behind (lock files, cgroup leaves) can be told apart
JAIL_BASE=$((1000000 + ($$ % 1000) * 65536))
export KILN_SHIM_JAIL_UID_BASE=$JAIL_BASE
# containerd started (again: on the same root, state and sockets), answering
# within 10 s; stopped as systemd stops it (SIGTERM), its shims left running
ctrd_start() {
	PATH=$BIN:$PATH KILN_CACHE=$T/cache containerd -c "$T/config.toml" >>"$T/containerd.log" 2>&1 &
	CTRD=$!
	for _ in $(seq 100); do $C version >/dev/null 2>&1 && break; sleep 0.1; done
}
ctrd_stop() { kill "$CTRD" && wait "$CTRD"; }
ctrd_start
