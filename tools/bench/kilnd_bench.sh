#!/bin/bash
# kilnd latency: the round trip of `true` through POST /sandboxes/{id}/exec
# (median over KILND_BENCH_EXECS, default 100, after 5 warm-ups), the round
# trip of an agent request that starts no process (GET .../metrics: the
# agent's info stream) over as many, and the time from POST /sandboxes to
# the end of the first exec in the new sandbox (median over
# KILND_BENCH_CREATES, default 20). Times are curl's own (connect to last
# byte), so process start-up of the client is not counted; then the exec
# round trip again on one kept-alive connection (tools/bench/http_rtt.py),
# back to back (judged against the goals, <= 1 ms and <= 1.5x the host spawn
# peer) and with 10 ms gaps, each
# beside two peers without a VM measured in the same minutes: GET /health
# (kilnd alone) and a host posix_spawn + wait of /bin/true (spawn_rtt.py);
# and the host events (shadow faults, emulated instructions, ...) per exec.
#
#   bash tools/bench/kilnd_bench.sh
#
# Environment: KILND_BENCH_VMM (default: build/bin/kiln-vmm when
# build/initramfs/agent.cpio exists, else the test double
# build/tests/e2e/fake-vmm), KILND_BENCH_KERNEL, KILND_BENCH_INITRD.
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=build/bin/kilnd
KERNEL=${KILND_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-build/initramfs/agent.cpio}
if [ -n "${KILND_BENCH_VMM:-}" ]; then
	VMM=$KILND_BENCH_VMM
elif [ -f "$INITRD" ] && [ -x build/bin/kiln-vmm ]; then
	VMM=build/bin/kiln-vmm
else
	VMM=build/tests/e2e/fake-vmm
fi
EXECS=${KILND_BENCH_EXECS:-100}
CREATES=${KILND_BENCH_CREATES:-20}
[ "$EXECS" -ge 50 ] || EXECS=50
[ "$CREATES" -ge 10 ] || CREATES=10

for f in "$KILND" "$VMM"; do
	[ -x "$f" ] || { echo "kilnd_bench: missing $f (make build/bin/kilnd e2e-build)"; exit 1; }
done

# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh

# seconds (curl's %{time_total}) of one request; body in $BODY
timed() {
	curl -s --unix-socket "$SOCK" -o "$BODY" -w '%{time_total}\n' "$@"
}

# median and p90 of the numbers on stdin (seconds), printed in ms
stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		p = v[int(NR * 0.9 + 0.5)]
		printf "median %.2f ms, p90 %.2f ms, min %.2f ms (n=%d)", m * 1000, p * 1000, v[1] * 1000, NR }'
}

create() {
	# the built-in image (busybox); kilnd_snap_bench.sh has images and templates
	timed -X POST -d '{"timeout":600}' http://k/sandboxes >"$T/t.create"
	sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$BODY"
}

echo "kilnd_bench: VMM $VMM$(case $VMM in */fake-vmm) echo " (a test double: see tests/e2e/fake-vmm)";; esac)"
ID=$(create)
[ -n "$ID" ] || { echo "kilnd_bench: create failed: $(cat "$BODY")"; exit 1; }
for _ in $(seq 5); do
	timed -d '{"cmd":["true"]}' "http://k/sandboxes/$ID/exec" >/dev/null
done
: >"$T/exec"
for _ in $(seq "$EXECS"); do
	timed -d '{"cmd":["true"]}' "http://k/sandboxes/$ID/exec" >>"$T/exec"
	grep -q '"exitCode":0' "$BODY" || { echo "kilnd_bench: exec failed: $(cat "$BODY")"; exit 1; }
done
echo "exec, curl per request:    $(stats <"$T/exec")"
# the same on one kept-alive connection (as the SDKs), back to back and with
# the client idle for 10 ms between requests. Peers measured in the same
# minutes, with no VM: a request kilnd answers itself (GET /health) and a host
# process start (posix_spawn + wait of /bin/true). This host runs all work
# colder after idle; the peers show how much.
median() { sed -n 's/^median \([0-9.]*\) ms.*/\1/p'; }
declare -A med
for gap in 0 10; do
	r=$(python3 tools/bench/http_rtt.py "$SOCK" POST "/sandboxes/$ID/exec" '{"cmd":["true"]}' \
		"$EXECS" $gap '"exitCode":0') || { echo "kilnd_bench: $r"; exit 1; }
	h=$(python3 tools/bench/http_rtt.py "$SOCK" GET /health '' "$EXECS" $gap '"ok"') ||
		{ echo "kilnd_bench: $h"; exit 1; }
	s=$(python3 tools/bench/spawn_rtt.py /bin/true "$EXECS" $gap) || { echo "kilnd_bench: $s"; exit 1; }
	med[exec$gap]=$(median <<<"$r") med[health$gap]=$(median <<<"$h") med[spawn$gap]=$(median <<<"$s")
	verdict=
	# Both goals: at most 1 ms, and at most 1.5x the host's spawn of the
	# same program measured in the same minutes (a ratio holds on any host).
	[ "$gap" = 0 ] && verdict=$(awk -v v="${med[exec0]}" -v s="${med[spawn0]}" 'BEGIN {
		r = (s > 0) ? v / s : -1
		printf "   goal <= 1 ms: %s; %s x host spawn, goal <= 1.5x: %s",
			(v <= 1) ? "meets goal" : "MISSES goal", (r < 0) ? "?" : sprintf("%.2f", r),
			(r < 0) ? "not measured" : (r <= 1.5) ? "meets goal" : "MISSES goal" }')
	echo "exec, kept-alive, gap ${gap} ms: $r$verdict"
	echo "  peer, kilnd GET /health:   $h"
	echo "  peer, host spawn of true:  $s"
done
awk -v e0="${med[exec0]}" -v e1="${med[exec10]}" -v h0="${med[health0]}" -v h1="${med[health10]}" \
	-v s0="${med[spawn0]}" -v s1="${med[spawn10]}" \
	'BEGIN { printf "gap 10 ms / back to back:  exec %.2fx, GET /health %.2fx, host spawn %.2fx\n",
		e1 / e0, h1 / h0, s1 / s0 }'
# What a kept-alive exec costs the host (tools/bench/host_events.sh): the
# events of the sandbox's VMM during $EXECS execs, less those of as long idle.
vmm_pid=$(cut -d' ' -f1 "$T/sandboxes/$ID/run/vmm.pid" 2>/dev/null)
if [ -n "$vmm_pid" ]; then
	sh tools/bench/host_events.sh --attach "$vmm_pid" "$EXECS" "host events per kept-alive exec:" -- \
		python3 tools/bench/http_rtt.py "$SOCK" POST "/sandboxes/$ID/exec" '{"cmd":["true"]}' \
		"$EXECS" 0 '"exitCode":0' | sed 's/^  //'
fi
: >"$T/info"
for _ in $(seq "$EXECS"); do
	timed "http://k/sandboxes/$ID/metrics" >>"$T/info"
	grep -q '"memTotal"' "$BODY" || { echo "kilnd_bench: metrics failed: $(cat "$BODY")"; exit 1; }
done
echo "agent info round trip:     $(stats <"$T/info")"
curl -s --unix-socket "$SOCK" -X DELETE "http://k/sandboxes/$ID" >/dev/null

: >"$T/first"
for _ in $(seq "$CREATES"); do
	ID=$(create)
	[ -n "$ID" ] || { echo "kilnd_bench: create failed: $(cat "$BODY")"; exit 1; }
	t_exec=$(timed -d '{"cmd":["true"]}' "http://k/sandboxes/$ID/exec")
	grep -q '"exitCode":0' "$BODY" || { echo "kilnd_bench: first exec failed"; exit 1; }
	awk -v a="$(cat "$T/t.create")" -v b="$t_exec" 'BEGIN { print a + b }' >>"$T/first"
	curl -s --unix-socket "$SOCK" -X DELETE "http://k/sandboxes/$ID" >/dev/null
done
echo "create -> first exec done: $(stats <"$T/first")"
