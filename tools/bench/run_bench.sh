#!/bin/bash
# `kiln run -- true` (create, exec, delete through the CLI, timed from the
# kiln command's start to its end) beside bubblewrap's
# `bwrap --unshare-all ... true` on the same host, in the same run: the runs
# alternate, so both see the same load. kiln's sandbox is a cold boot of the
# default image (`--image busybox`), a clone of a template of it
# (`--template`), and plain `kiln run -- true` against a kilnd started with
# --run-template naming a template of it with a warm pool (a clone taken
# from the pool). Medians of KILN_RUN_RUNS
# (default 20); ratios to bubblewrap's median.
#
#   bash tools/bench/run_bench.sh       (installs bubblewrap from Debian if missing)
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=build/bin/kilnd
KILN=build/bin/kiln
VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILND_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-build/initramfs/agent.cpio}
RUNS=${KILN_RUN_RUNS:-20}
GOAL_RATIO=1.5
[ "$RUNS" -ge 3 ] || RUNS=3

for f in "$KILND" "$KILN" "$VMM" "$KERNEL" "$INITRD"; do
	[ -e "$f" ] || { echo "run_bench: missing $f (make)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "run_bench: skipped: /dev/kvm not available"; exit 0; }
# shellcheck source=tools/bench/apt_need.sh
. tools/bench/apt_need.sh
apt_need run_bench bwrap:bubblewrap
BWRAP=$(command -v bwrap) || { echo "run_bench: skipped: no bwrap (apt-get install bubblewrap)"; exit 0; }

# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --run-template rbpool
export KILN_SOCKET=$SOCK

# ms CMD...: CMD's wall time in ms on stdout (its own output dropped); fails with CMD
ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$T/cmd.err" || return 1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
# med FILE: median of the microseconds in FILE, in ms
med() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { if (!NR) exit 1;
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f\n", m / 1000 }'
}
fail() {
	echo "run_bench: $*: $(head -c 400 "$T/cmd.err")"
	exit 1
}
wait_pool() { # NAME: until its pool has 2 clones ready
	for _ in $(seq 400); do
		"$KILN" template ls 2>/dev/null | awk -v n="$1" '$1 == n' | grep -q '2/2' && return 0
		sleep 0.025
	done
	fail "the pool of $1 did not refill"
}

"$KILN" template create rb >/dev/null 2>"$T/cmd.err" || fail "template rb"
"$KILN" template create rbpool --pool 2 >/dev/null 2>"$T/cmd.err" || fail "template rbpool"
BW=("$BWRAP" --unshare-all --die-with-parent --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp
	/bin/true)
"${BW[@]}" 2>"$T/cmd.err" || fail "bwrap"
"$KILN" run -- true 2>"$T/cmd.err" || fail "kiln run"
: >"$T/bw" && : >"$T/cold" && : >"$T/clone" && : >"$T/pool"
for _ in $(seq "$RUNS"); do
	ms "${BW[@]}" >>"$T/bw" || fail "bwrap"
	ms "$KILN" run --image busybox -- true >>"$T/cold" || fail "kiln run --image busybox"
	ms "$KILN" run --template rb -- true >>"$T/clone" || fail "kiln run --template rb"
	wait_pool rbpool
	ms "$KILN" run -- true >>"$T/pool" || fail "kiln run (--run-template rbpool)"
done
b=$(med "$T/bw")
echo "kiln run -- true beside bubblewrap (medians of $RUNS, alternating; ms from the command's start to its end)"
printf '  %-46s %8s ms\n' "bwrap --unshare-all true" "$b"
for k in cold clone pool; do
	case $k in
	cold) what="kiln run --image busybox -- true (boot)" ;;
	clone) what="kiln run --template T -- true (clone)" ;;
	pool) what="kiln run -- true (kilnd --run-template P)" ;;
	esac
	m=$(med "$T/$k")
	awk -v w="$what" -v m="$m" -v b="$b" -v g="$GOAL_RATIO" 'BEGIN {
		r = m / b; printf "  %-46s %8s ms  %.2fx bubblewrap   goal <= %.1fx: %s\n", w, m, r, g,
			(r <= g) ? "meets goal" : "MISSES goal" }'
done
