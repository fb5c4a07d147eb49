#!/bin/sh
# make bench: boot latency, VMM memory and guest system call cost, next to
# the goals kiln is held to. Measures with kiln-bench-boot (boot_latency.c),
# getpid_bench (tests/integration/progs), which also runs natively on the
# host in the same bench run for comparison, and firstsys bench.
#
#   sh tools/bench/bench.sh
#
# Environment: KILN_VMM, KILN_KERNEL, KILN_INITRD, KILN_PROGS, KILN_BENCH_RUNS
# (boots per measurement, default 20), KILN_BENCH_GETPID_RUNS (VMs for the
# getpid and first-touch medians, default 5), KILN_KVM_DEV.
set -u

cd "$(dirname "$0")/../.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/test.cpio}
PROGS=${KILN_PROGS:-build/tests/progs}
BOOT=build/bin/kiln-bench-boot
RUNS=${KILN_BENCH_RUNS:-20}
GETPID_RUNS=${KILN_BENCH_GETPID_RUNS:-5}
KVM_DEV=${KILN_KVM_DEV:-/dev/kvm}

# Goals (from the issue).
GOAL_BOOT_MS=5
GOAL_GETPID_NS=50
GOAL_RSS_KIB=1024
GOAL_FORK_RATIO=2 # fork+exec+wait in the guest, against the host's own

if [ ! -e "$KVM_DEV" ] || [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
	echo "bench: skipped: /dev/kvm not available"
	exit 0
fi
for f in "$VMM" "$KERNEL" "$INITRD" "$BOOT" "$PROGS/getpid_bench" "$PROGS/firsttouch" "$PROGS/firstsys"; do
	if [ ! -f "$f" ]; then
		echo "bench: missing $f (build it with: make bench)"
		exit 1
	fi
done

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' HUP TERM
failed=0

# field FILE KEY WORD: the value after WORD on FILE's line starting with KEY.
field() {
	awk -v k="$2" -v w="$3" '$1 == k { for (i = 2; i < NF; i++) if ($i == w) { print $(i + 1); exit } }' "$1"
}

# verdict VALUE GOAL: whether VALUE <= GOAL.
verdict() {
	awk -v v="$1" -v g="$2" 'BEGIN { if (v !~ /^[0-9.]+$/) print "not measured";
		else print (v + 0 <= g + 0) ? "meets goal" : "MISSES goal" }'
}

# ratio A B: A / B to two places, "?" when either is missing.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f\n", a / b; else print "?" }'
}

# median: of the numbers on stdin, one per line.
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1;
		if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# boot NAME [kiln-bench-boot options] -- ARGV: timed boots of test.cpio into $T/NAME.
boot() {
	name=$1
	shift
	opts=
	while [ "$1" != -- ]; do
		opts="$opts $1"
		shift
	done
	shift
	# shellcheck disable=SC2086 # opts is a list of words
	if ! "$BOOT" -n "$RUNS" $opts -- "$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- "$@" \
		>"$T/$name" 2>"$T/$name.err"; then
		echo "bench: $name failed:"
		sed 's/^/    | /' "$T/$name.err" | head -n 20
		failed=1
		return 1
	fi
}

# getpid_runs WHERE N: N runs of getpid_bench (guest or host); medians.
getpid_runs() {
	: >"$T/$1.getpid"
	: >"$T/$1.clock"
	i=0
	while [ $i -lt "$2" ]; do
		if [ "$1" = guest ]; then
			timeout --foreground -k 5 60 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- /bin/getpid_bench \
				</dev/null >"$T/out" 2>"$T/err"
		else
			env -i PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/ TERM=linux \
				timeout --foreground -k 5 60 "$PROGS/getpid_bench" </dev/null >"$T/out" 2>"$T/err"
		fi
		st=$?
		tr -d '\r' <"$T/out" >"$T/out.lf"
		if [ $st -ne 0 ] || ! grep -q '^getpid_ns ' "$T/out.lf"; then
			echo "bench: getpid_bench on the $1 failed (status $st):"
			cat "$T/out.lf" "$T/err" | sed 's/^/    | /' | head -n 20
			failed=1
			return 1
		fi
		awk '$1 == "getpid_ns" { print $2 }' "$T/out.lf" >>"$T/$1.getpid"
		awk '$1 == "clock_gettime_ns" { print $2 }' "$T/out.lf" >>"$T/$1.clock"
		i=$((i + 1))
	done
}

echo "kiln bench: $(date -u '+%Y-%m-%d %H:%M UTC'), host $(uname -r), $(nproc) CPUs," \
	"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "  $RUNS boots per line, times in ms: median (min, p90)"
echo

if boot hello -s -- /bin/hello-musl; then
	m=$(field "$T/hello" first_byte_ms median)
	printf '  %-44s %8s ms  (%s, %s)   goal <= %s ms: %s\n' "start -> first console byte (hello-musl)" \
		"$m" "$(field "$T/hello" first_byte_ms min)" "$(field "$T/hello" first_byte_ms p90)" \
		"$GOAL_BOOT_MS" "$(verdict "$m" "$GOAL_BOOT_MS")"
	printf '  %-44s %8s ms  (%s, %s)\n' "whole run (hello-musl)" "$(field "$T/hello" whole_run_ms median)" \
		"$(field "$T/hello" whole_run_ms min)" "$(field "$T/hello" whole_run_ms p90)"
fi
if boot echo -- /bin/busybox echo hi; then
	printf '  %-44s %8s ms  (%s, %s)\n' "whole run (busybox echo hi)" \
		"$(field "$T/echo" whole_run_ms median)" "$(field "$T/echo" whole_run_ms min)" \
		"$(field "$T/echo" whole_run_ms p90)"
fi
echo
if [ -s "$T/hello" ]; then
	printf '  %-44s %8s KiB (max %s; includes guest pages touched)\n' "VMM peak RSS, hello-musl (ru_maxrss)" \
		"$(field "$T/hello" peak_rss_kib median)" "$(field "$T/hello" peak_rss_kib max)"
	ng=$(awk '$1 == "private_rss_kib" { print $2 }' "$T/hello")
	if [ -n "$ng" ]; then
		printf '  %-44s %8s KiB (RssAnon)   goal <= %s KiB: %s\n' \
			"VMM memory beyond guest RAM (--stats)" "$ng" "$GOAL_RSS_KIB" "$(verdict "$ng" "$GOAL_RSS_KIB")"
		printf '  %-44s %8s KiB (libraries, binary, %s KiB of initramfs page cache)\n' \
			"  + shared file pages, one copy for all VMs" \
			"$(awk '$1 == "stats_RssFile_kib" { print $2 }' "$T/hello")" \
			"$(awk '$1 == "stats_RssInitramfs_kib" { print $2 }' "$T/hello")"
		printf '  %-44s %8s KiB (RssShmem)\n' "  guest RAM touched" \
			"$(awk '$1 == "stats_RssShmem_kib" { print $2 }' "$T/hello")"
	fi
fi
echo
if getpid_runs guest "$GETPID_RUNS" && getpid_runs host "$GETPID_RUNS"; then
	g=$(median <"$T/guest.getpid")
	h=$(median <"$T/host.getpid")
	gc=$(median <"$T/guest.clock")
	hc=$(median <"$T/host.clock")
	printf '  %-44s %8s ns  (median of %s VMs)   goal <= %s ns: %s\n' "getpid in the guest" "$g" \
		"$GETPID_RUNS" "$GOAL_GETPID_NS" "$(verdict "$g" "$GOAL_GETPID_NS")"
	printf '  %-44s %8s ns  (guest/host %s)\n' "getpid natively on this host" "$h" \
		"$(awk -v g="$g" -v h="$h" 'BEGIN { if (h > 0) printf "%.2f", g / h; else printf "n/a" }')"
	printf '  %-44s %8s ns  (host %s ns)\n' "clock_gettime in the guest" "$gc" "$hc"
fi
# The first run of a syscall site, before it is rewritten into a call.
: >"$T/first"
i=0
while [ $i -lt "$GETPID_RUNS" ]; do
	timeout --foreground -k 5 60 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- /bin/firstsys bench 1000 \
		</dev/null 2>&1 | tr -d '\r' | awk '$1 == "first_run_ns" { print $2 }' >>"$T/first"
	i=$((i + 1))
done
if [ "$(wc -l <"$T/first")" -eq "$GETPID_RUNS" ]; then
	printf '  %-44s %8s ns  (1000 fresh sites per VM, median of %s VMs)\n' \
		"first run of a syscall site in the guest" "$(median <"$T/first")" "$GETPID_RUNS"
else
	echo "bench: firstsys bench failed"
	failed=1
fi


# ---- first touch of memory (issue 4): one write per 4 KiB page of 64 MiB of
# fresh anonymous memory, in a fresh VM (its RAM never touched) with each
# guest RAM backing, and natively on the host.
# firsttouch_runs WHERE: N runs (WHERE: memfd, thp or host); medians of the
# us/page and MB/s figures in $T/ft.WHERE.us and $T/ft.WHERE.mbps.
firsttouch_runs() {
	: >"$T/ft.$1.us"
	: >"$T/ft.$1.mbps"
	i=0
	while [ $i -lt "$GETPID_RUNS" ]; do
		if [ "$1" = host ]; then
			timeout --foreground -k 5 60 "$PROGS/firsttouch" 64 </dev/null >"$T/out" 2>"$T/err"
		else
			timeout --foreground -k 5 60 "$VMM" --mem-backing "$1" --mem 512M --kernel "$KERNEL" \
				--initrd "$INITRD" -- /bin/firsttouch 64 </dev/null >"$T/out" 2>"$T/err"
		fi
		st=$?
		tr -d '\r' <"$T/out" >"$T/out.lf"
		if [ $st -ne 0 ] || ! grep -q '^first_touch_us_per_page ' "$T/out.lf"; then
			echo "bench: firsttouch ($1) failed (status $st):"
			cat "$T/out.lf" "$T/err" | sed 's/^/    | /' | head -n 20
			failed=1
			return 1
		fi
		awk '$1 == "first_touch_us_per_page" { print $2 }' "$T/out.lf" >>"$T/ft.$1.us"
		awk '$1 == "first_touch_mbps" { print $2 }' "$T/out.lf" >>"$T/ft.$1.mbps"
		i=$((i + 1))
	done
}
echo
if firsttouch_runs host; then
	hu=$(median <"$T/ft.host.us")
	hm=$(median <"$T/ft.host.mbps")
	for b in memfd thp; do
		firsttouch_runs "$b" || continue
		printf '  %-44s %8s us/page (%s MB/s; host %s us/page, %s MB/s)\n' \
			"first touch of memory (--mem-backing $b)" "$(median <"$T/ft.$b.us")" \
			"$(median <"$T/ft.$b.mbps")" "$hu" "$hm"
	done
	echo "  (64 MiB, one write per page, median of $GETPID_RUNS fresh VMs; default backing memfd)"
fi

# ---- processes and pipes (issue 3): guest vs host, same programs.
# /bin/true in the guest is busybox; the host runs the same busybox binary.
ln -sf "$(command -v busybox || echo /bin/busybox)" "$T/true"
guest_prog() { # PROGRAM ARGS...: run in a guest, output in $T/out.lf
	timeout --foreground -k 5 300 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- "$@" \
		</dev/null >"$T/out" 2>"$T/err"
	tr -d '\r' <"$T/out" >"$T/out.lf"
}
host_prog() {
	prog=$1
	shift
	timeout --foreground -k 5 300 "$PROGS/$prog" "$@" </dev/null >"$T/out.lf" 2>"$T/err"
}
echo
guest_prog /bin/forkbench 20 /bin/true
gf=$(awk '$1 == "fork_exec_wait_us" { print $3 }' "$T/out.lf")
gfw=$(awk '$1 == "fork_wait_us" { print $3 }' "$T/out.lf")
host_prog forkbench 20 "$T/true"
hf=$(awk '$1 == "fork_exec_wait_us" { print $3 }' "$T/out.lf")
hfw=$(awk '$1 == "fork_wait_us" { print $3 }' "$T/out.lf")
fr=$(ratio "${gf:-}" "${hf:-}")
printf '  %-44s %8s us  (host %s us: %sx; busybox true, median of 20)   goal <= %sx host: %s\n' \
	"fork+exec+wait of /bin/true in the guest" "${gf:-?}" "${hf:-?}" "$fr" "$GOAL_FORK_RATIO" \
	"$(verdict "$fr" "$GOAL_FORK_RATIO")"
printf '  %-44s %8s us  (host %s us)\n' "fork+exit+wait in the guest" "${gfw:-?}" "${hfw:-?}"
sh tools/bench/host_events.sh
guest_prog /bin/pipebench 64
gp=$(awk '$1 == "pipe_mbps" { print $2 }' "$T/out.lf")
host_prog pipebench 64
hp=$(awk '$1 == "pipe_mbps" { print $2 }' "$T/out.lf")
printf '  %-44s %8s MB/s (host %s MB/s; 64 MiB, median of 5)\n' "pipe throughput between two processes" \
	"${gp:-?}" "${hp:-?}"

# ---- kilnd and vsock (issue 5).
echo
if [ -x build/bin/kilnd ] && [ -f build/initramfs/agent.cpio ]; then
	bash tools/bench/kilnd_bench.sh 2>&1 | grep -v "^kilnd_bench: VMM " | sed "s/^/  /"
	echo
	bash tools/bench/kilnd_snap_bench.sh 2>&1 | sed 's/^/  /'
	echo
	[ -f build/images/base.erofs ] && bash tools/bench/kilnd_burst.sh 2>&1 | sed 's/^/  /' && echo
	bash tools/bench/run_bench.sh 2>&1 | sed 's/^/  /'
	echo
	bash tools/bench/kilnd_ports_bench.sh 2>&1 | sed 's/^/  /'
	bash tools/bench/e2b_sdk_bench.sh 2>&1 | sed 's/^/  /'
	echo
	bash tools/bench/browser_bench.sh 2>&1 | sed 's/^/  /'
fi
if [ -x tests/integration/vsock_test.sh ] || [ -f tests/integration/vsock_test.sh ]; then
	sh tests/integration/vsock_test.sh --bench 256 2>&1 | grep -i 'MB/s' | sed 's/^/  vsock /' | head -n 2
fi
# The containerd shim (issue 19) beside runc, through the same containerd.
if [ -x build/bin/containerd-shim-kiln-v2 ] && command -v containerd >/dev/null &&
	[ "$(id -u)" = 0 ]; then
	echo
	bash tools/bench/shim_bench.sh 2>&1 | sed 's/^/  /'
	command -v node >/dev/null && bash tools/bench/cri_bench.sh 2>&1 | sed 's/^/  /'
fi
# Egress (issue 20): guest -> host.kiln.internal beside the host's own loopback.
if [ -x build/bin/kilnd ] && [ -e build/images/base.erofs ]; then
	bash tools/bench/net_bench.sh 2>&1 | sed 's/^/  /'
	bash tools/bench/udp_bench.sh 2>&1 | sed 's/^/  /'
fi

echo
sh tools/bench/snapshot_bench.sh || failed=1

# ---- Python's data stack from the base image, against a chroot of the same
# root on the host (issue 4).
echo
IMAGE=${KILN_BENCH_IMAGE:-build/images/base.erofs}
if [ "$(id -u)" -ne 0 ] || [ ! -f "$IMAGE" ]; then
	echo "  python bench: skipped: needs root (for the host's chroot) and $IMAGE (make images)"
elif root=$(tools/mkimage/extract-root "$IMAGE"); then
	python3 tools/bench/python_bench.py "$VMM" "$KERNEL" "$IMAGE" "$root" || failed=1
else
	failed=1
fi

# ---- Beside Docker (runc, crun) and bubblewrap on the same root (issue 19).
echo
bash tools/bench/containers_bench.sh 2>&1 | sed 's/^/  /' || failed=1

echo
echo "  The boot goal is for boot to init; the first console byte also includes the VMM's"
echo "  own start-up and hello-musl's, so it is an upper bound on boot to init."

if [ $failed -ne 0 ]; then
	echo
	echo "bench: some measurements failed"
	exit 1
fi
