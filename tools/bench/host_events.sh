#!/bin/sh
# Host events per guest operation (make bench runs this from bench.sh): what
# a fork+exec+wait and a python3 start-up cost the host, counted with perf
# on the VMM's threads: KVM's shadow-page faults (kvmmmu:kvm_mmu_spte_requested),
# instructions it emulated (kvm:kvm_emulate_insn: guest CPL0 code on PVM
# hosts, and CPUIDs where they exit), page faults it handled, exceptions and
# interrupts it injected, port I/O and exits to the VMM, CPUID exits (on the
# Intel PVM hosts every guest CPUID is one: glibc's start-up runs ~74, most
# for its cache sizes from leaves 2 and 4; on the AMD EPYC ones a CPUID at
# CPL3 runs without an exit and this counts 0) and, where the host counts
# them, all exits. Each
# figure is the difference between two runs that differ only in the
# operation, divided by its count, so boot and exit cancel out. Counts hold
# on any kind of host; what each costs differs (../shared/probes/RESULTS.md,
# "Hosts differ").
#
#   sh tools/bench/host_events.sh
#   sh tools/bench/host_events.sh --attach PID N LABEL -- COMMAND...
#
# With --attach, counts the events of the running VMM PID (all its threads)
# while COMMAND performs N operations on it (kilnd_bench.sh: N execs), less
# its events over as long a time with nothing asked of it (timer ticks and
# the agent's idle work), divided by N.
# Environment: KILN_VMM, KILN_KERNEL, KILN_INITRD, KILN_BENCH_IMAGE (python3
# from it; its line is left out without it), KILN_BENCH_EVENT_N (operations
# per run, default 200).
set -u
cd "$(dirname "$0")/../.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/test.cpio}
IMAGE=${KILN_BENCH_IMAGE:-build/images/base.erofs}
N=${KILN_BENCH_EVENT_N:-200}
EVENTS="kvmmmu:kvm_mmu_spte_requested kvm:kvm_emulate_insn kvm:kvm_page_fault"
EVENTS="$EVENTS kvm:kvm_inj_exception kvm:kvm_inj_virq kvm:kvm_pio kvm:kvm_userspace_exit"
EVENTS="$EVENTS kvm:kvm_cpuid kvm:kvm_exit"
NAMES="shadow-faults emulated page-faults exceptions interrupts pio vmm-exits cpuid exits"

if ! command -v perf >/dev/null || ! perf list 2>/dev/null | grep -q 'kvm:kvm_emulate_insn'; then
	echo "  host events: skipped: perf or KVM's tracepoints are not available"
	exit 0
fi
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT

# count NAME VMM-ARGS...: perf's counts of EVENTS for one VMM run, one line.
count() {
	name=$1
	shift
	ev=$(echo $EVENTS | tr ' ' ',')
	if ! timeout --foreground -k 5 120 perf stat -x, -e "$ev" -o "$T/$name.perf" -- \
		"$VMM" "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err"; then
		echo "  host events: the guest run '$name' failed:"
		sed 's/^/    | /' "$T/$name.out" "$T/$name.err" | head -n 10
		return 1
	fi
	counts_of "$name"
}

# counts_of NAME: $T/NAME.perf's counts in the order of EVENTS, one line.
counts_of() {
	for e in $EVENTS; do
		awk -F, -v e="$e" '$3 == e { print $1 }' "$T/$1.perf"
	done | tr '\n' ' ' >"$T/$1.counts"
}

# per LABEL BASE OPS N: (OPS - BASE) / N for each event, one line.
per() {
	printf '  %-44s' "$1"
	set -- "$(cat "$T/$2.counts")" "$(cat "$T/$3.counts")" "$4"
	echo "$1|$2|$3|$NAMES" | awk -F'|' '{
		split($1, a, " "); split($2, b, " "); split($4, nm, " ")
		for (i = 1; i <= length(nm); i++)
			if (b[i] > 0)
				printf " %s %.1f", nm[i], (b[i] - a[i]) / $3
		print ""
	}'
}

if [ "${1:-}" = --attach ]; then
	[ $# -ge 6 ] && [ "$5" = -- ] || { echo "usage: host_events.sh --attach PID N LABEL -- COMMAND..." >&2; exit 2; }
	pid=$2 n=$3 label=$4
	shift 5
	ev=$(echo $EVENTS | tr ' ' ',')
	t0=$(date +%s.%N)
	if ! perf stat -x, -e "$ev" -p "$pid" -o "$T/opsN.perf" -- "$@" >"$T/opsN.out" 2>"$T/opsN.err"; then
		echo "  host events: '$*' failed:"
		sed 's/^/    | /' "$T/opsN.out" "$T/opsN.err" | head -n 10
		exit 1
	fi
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
	perf stat -x, -e "$ev" -p "$pid" -o "$T/ops0.perf" -- sleep "$secs" 2>/dev/null || exit 1
	counts_of ops0
	counts_of opsN
	per "$label" ops0 opsN "$n"
	exit 0
fi

echo "  host events per operation (perf on the VMM; ($N ops - 0 ops) / $N; events that"
echo "  never fired on this host are left out):"
loop='i=0; while [ $i -lt $0 ]; do /bin/true; i=$((i + 1)); done'
if count fork0 --kernel "$KERNEL" --initrd "$INITRD" -- /bin/busybox sh -c "$loop" 0 &&
	count forkN --kernel "$KERNEL" --initrd "$INITRD" -- /bin/busybox sh -c "$loop" "$N"; then
	per "fork+exec+wait of /bin/true (busybox sh)" fork0 forkN "$N"
fi
if [ -f "$IMAGE" ]; then
	pyloop='i=0; while [ $i -lt $0 ]; do python3 -c pass; i=$((i + 1)); done'
	n=$((N / 10))
	if count py0 --mem 1G --kernel "$KERNEL" --image "$IMAGE" -- /bin/sh -c "$pyloop" 0 &&
		count pyN --mem 1G --kernel "$KERNEL" --image "$IMAGE" -- /bin/sh -c "$pyloop" "$n"; then
		per "python3 -c pass, started by sh" py0 pyN "$n"
	fi
fi
