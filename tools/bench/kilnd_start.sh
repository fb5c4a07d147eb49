# Sourced by the kilnd benchmarks: starts $KILND on a fresh data directory $T
# with the socket $SOCK, kills it and every VMM it spawned on exit, and
# waits for its health check. Arguments: extra kilnd flags.
# shellcheck shell=bash
T=$(mktemp -d "${KILND_BENCH_TMP:-/tmp}"/kilnd-bench.XXXXXX)
SOCK=$T/kilnd.sock
# Where the benchmarks' curl writes answer bodies: on tmpfs when there is one.
# Creating and truncating a file on the data disk (ext4 here) costs curl ~0.5
# ms inside its own %{time_total}, which is not kilnd's time.
BODY=$(mktemp -p /dev/shm kiln-bench-body.XXXXXX 2>/dev/null) || BODY=$T/body
# The sandboxes' DNS stays on loopback (host.kiln.internal is kilnd's own
# answer): no benchmark sends a lookup off the machine.
"$KILND" --data-dir "$T" --vmm "$VMM" --kernel "$KERNEL" --initrd "$INITRD" \
	--max-sandboxes 1000 --dns-server 127.0.0.1:53 "$@" >"$T/kilnd.log" 2>&1 &
KPID=$!
cleanup() {
	kill $KPID 2>/dev/null
	wait $KPID 2>/dev/null
	for p in "$T"/sandboxes/*/run/vmm.pid; do
		[ -f "$p" ] && kill -9 -- "-$(cut -d' ' -f1 "$p")" 2>/dev/null
	done
	rm -rf "$T"
	rm -f "$BODY"
}
trap cleanup EXIT
for _ in $(seq 100); do
	curl -s --unix-socket "$SOCK" http://k/health >/dev/null && break
	sleep 0.05
done

# median, p90 and min of the seconds on stdin, in ms
stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "median %7.1f ms, p90 %7.1f ms, min %7.1f ms (n=%d)", m * 1000,
			v[int(NR * 0.9 + 0.5)] * 1000, v[1] * 1000, NR }'
}
line() {
	printf '%-44s %s\n' "$1" "$(stats <"$2")"
}

# per_op N LABEL CMD...: the host's cost of N operations of CMD on the one
# sandbox's VMM ($T/sandboxes/*/run/vmm.pid) and on kilnd, counted with perf:
# CMD runs once with 0 and once with N in place of its argument @N@, and
# each count is (N - 0) / N, so what CMD costs anyway cancels out.
per_op() {
	local n=$1 label=$2 k w vpid
	shift 2
	command -v perf >/dev/null || { echo "no perf: no counts"; return 0; }
	vpid=$(cut -d' ' -f1 "$T"/sandboxes/*/run/vmm.pid)
	for k in 0 "$n"; do
		perf stat -x, -e 'kvm:*,context-switches,task-clock' -p "$vpid" -o "$T/vmm.$k" -- \
			perf stat -x, -e context-switches,task-clock -p "$KPID" -o "$T/kilnd.$k" -- \
			"${@//@N@/$k}" >/dev/null
	done
	for w in vmm kilnd; do
		echo "$label, $w (task-clock in ms):"
		paste -d, "$T/$w.0" "$T/$w.$n" | awk -F, -v n="$n" '$1 ~ /^[0-9.]+$/ {
			d = ($(NF / 2 + 1) - $1) / n; if (d > 0.01) printf "  %-30s %8.2f\n", $3, d }'
	done
}
