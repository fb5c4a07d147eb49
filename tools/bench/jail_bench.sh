#!/bin/bash
# What the VMM's jail costs at start-up, on real VMs: create -> end of the
# first exec of a cold boot and of a template clone, and a clone's create
# alone, with two kilnds side by side (one starting VMMs jailed, the
# default; one with --no-jail), their runs interleaved so that both see the
# same host. Medians of JAIL_BENCH_RUNS (default 15), timed by curl.
# JAIL_BENCH_VMM: the kiln-vmm to start (default build/bin/kiln-vmm), e.g. an
# older build to compare with.
#
#   bash tools/bench/jail_bench.sh      (as root: the jail needs it)
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=build/bin/kilnd
VMM=${JAIL_BENCH_VMM:-build/bin/kiln-vmm}
KERNEL=${KILND_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-build/initramfs/agent.cpio}
RUNS=${JAIL_BENCH_RUNS:-15}
[ "$RUNS" -ge 3 ] || RUNS=3
for f in "$KILND" "$VMM" "$KERNEL" "$INITRD"; do
	[ -e "$f" ] || { echo "jail_bench: missing $f (make)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "jail_bench: skipped: /dev/kvm not available"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "jail_bench: skipped: the jail needs root"; exit 0; }

T=$(mktemp -d /tmp/jail-bench.XXXXXX)
BODY=$T/body
PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in "$T"/*/sandboxes/*/run/vmm.pid; do
		[ -f "$p" ] && kill -9 -- "-$(cut -d' ' -f1 "$p")" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

# start NAME [FLAGS]: a kilnd on $T/NAME
start() {
	local d=$T/$1
	shift
	"$KILND" --data-dir "$d" --vmm "$VMM" --kernel "$KERNEL" --initrd "$INITRD" \
		--max-sandboxes 100 --dns-server 127.0.0.1:53 "$@" >"$T/$(basename "$d").log" 2>&1 &
	PIDS="$PIDS $!"
	for _ in $(seq 100); do
		curl -s --unix-socket "$d/kilnd.sock" http://k/health >/dev/null && return 0
		sleep 0.05
	done
	echo "jail_bench: kilnd $d did not start: $(tail -3 "$T/$(basename "$d").log")"
	exit 1
}
post() { # NAME PATH BODY: seconds
	curl -s --unix-socket "$T/$1/kilnd.sock" -o "$BODY" -w '%{time_total}\n' -d "$3" "http://k$2"
}
del() { curl -s --unix-socket "$T/$1/kilnd.sock" -X DELETE -o /dev/null "http://k/sandboxes/$2"; }
fail() {
	echo "jail_bench: $*: $(head -c 400 "$BODY")"
	exit 1
}
# once NAME CREATE_BODY: create, first exec; appends to $T/NAME.create, .exec
once() {
	local t1 t2 id
	t1=$(post "$1" /sandboxes "$2")
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$BODY")
	[ -n "$id" ] || fail "create in $1"
	t2=$(post "$1" "/sandboxes/$id/exec" '{"cmd":["true"]}')
	grep -q '"exitCode":0' "$BODY" || fail "exec in $1"
	del "$1" "$id"
	echo "$t1" >>"$T/$1.$3.create"
	awk -v a="$t1" -v b="$t2" 'BEGIN { print a + b }' >>"$T/$1.$3.exec"
}
median() {
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		printf "%.1f", ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) * 1000 }'
}

start jail
start nojail --no-jail
for k in jail nojail; do
	post $k /templates '{"name":"bb","image":"busybox","warmup":null}' >/dev/null
	grep -q '"snapshotBytes"' "$BODY" || fail "template in $k"
done
for _ in $(seq "$RUNS"); do
	for k in jail nojail; do
		once $k '{}' boot
		once $k '{"templateID":"bb"}' clone
	done
done
echo "jail_bench: kilnd on real VMs, jailed VMMs against --no-jail, medians of $RUNS (ms)"
printf '  %-36s %8s %8s %8s\n' "" jail no-jail extra
for w in "boot exec:create -> first exec, cold boot" "clone exec:create -> first exec, template clone" \
	"clone create:create of a template clone"; do
	set -- ${w%%:*}
	a=$(median "$T/jail.$1.$2")
	b=$(median "$T/nojail.$1.$2")
	printf '  %-36s %8s %8s %8s\n' "${w#*:}" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.1f", a - b }')"
done
