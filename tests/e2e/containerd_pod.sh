#!/bin/bash
# A pod of several containers in one kiln VM, against Debian's containerd
# (a containerd of the test's own, tests/e2e/containerd_env.sh): a
# sandbox container and app containers marked as the CRI marks them
# (`ctr run --annotation io.kubernetes.cri.sandbox-id=POD`); one shim and
# one VMM serve them all, each app container has its own root (its image,
# copied into the VM), exit status, kill, exec and delete; the VM ends
# after the pod's last container, or dies under all of them at once.
#
#   make e2e-containerd   (runs tests/e2e/containerd.sh, then this)
#
# Prints "ok"/"not ok" per check and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v script >/dev/null || { echo "e2e-containerd-pod: script is missing (bsdutils)"; exit 1; }
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh e2e-containerd-pod
IMG=docker.io/library/kiln-test:1
APPIMG=docker.io/library/kiln-app:1
PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $1"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi; }
ms() { date +%s%3N; }
state() { $C task ls | awk -v id="$1" '$1 == id {print $3}'; }
tpid() { $C task ls | awk -v id="$1" '$1 == id {print $2}'; }
shims() { pgrep -f "containerd-shim-kiln-v2 .*-address $SOCK" | wc -l; }
sandbox() { $C run -d $RT --annotation io.kubernetes.cri.container-type=sandbox \
	--annotation "io.kubernetes.cri.sandbox-id=$1" "$IMG" "$1" sleep 600 >/dev/null; }
member() { echo --annotation io.kubernetes.cri.container-type=container \
	--annotation "io.kubernetes.cri.sandbox-id=$1"; }

python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag "$IMG" --cmd '["/bin/sh"]' &&
	$C image import "$T/img.tar" >/dev/null &&
	python3 tests/e2e/images/mkarchive.py "$T/app.tar" --tag "$APPIMG" --dir /srv \
		--file /srv/app-only='the app image' --env ROLE=app --cmd '["/bin/sh"]' &&
	$C image import "$T/app.tar" >/dev/null
check $? "two images built here and imported (the sandbox's and the app's)"

# ---- one VM, one shim, a root of its own
t0=$(ms)
sandbox pod1
t1=$(ms)
[ "$(state pod1)" = RUNNING ]
check $? "the pod's sandbox container runs ($((t1 - t0)) ms, VM booted)"
vmm=$(cat "$TASKS/pod1/vmm.pid")
n_shims=$(shims)
t0=$(ms)
out=$($C run --rm $RT $(member pod1) --env WHO=a1 "$APPIMG" a1 \
	sh -c 'echo $WHO $ROLE; cat /srv/app-only; echo; ls /;
	echo x >/dev/null && echo urandom $(head -c 4 /dev/urandom | wc -c); exit 7' 2>&1)
rc=$?
t1=$(ms)
a1_ms=$((t1 - t0))
[ $rc = 7 ] && [ "$(sed -n 1,2p <<<"$out")" = "$(printf 'a1 app\nthe app image')" ] &&
	! grep -qx run <<<"$out" && grep -qx srv <<<"$out" && grep -qx 'urandom 4' <<<"$out"
check $? "an app container of the pod: its own image as its root (with /dev/null and /dev/urandom), its env, exit status 7 ($rc; $a1_ms ms ctr run to exit: $(tr '\n' ' ' <<<"$out"))"
[ "$(state pod1)" = RUNNING ] && [ "$(shims)" = "$n_shims" ] && kill -0 "$vmm" &&
	[ ! -e "$TASKS/a1/vmm.pid" ]
check $? "it ran in the sandbox's VM: no second shim ($(shims) for $n_shims) and no VMM of its own; the sandbox runs on"
out=$($C run --rm $RT $(member pod1) "$APPIMG" a1 sh -c 'echo again' 2>&1)
[ "$out" = again ]
check $? "the same container id again in the pod, after its delete ($out)"
# (a terminal's output may start with a NUL, echoed as "^@": lone containers' too)
out=$(script -qec "$C run --rm -t $RT $(member pod1) $APPIMG a0 sh -c 'tty; exit 5'" /dev/null </dev/null)
rc=$?
out=$(tr -d '\000\r' <<<"$out" | sed 's/\^@//g')
[ $rc = 5 ] && grep -q '^/dev/pts/[0-9]' <<<"$out"
check $? "an app container with a terminal (ctr run -t): its tty is named in its root ($(head -1 <<<"$out"), rc $rc)"

# a long-running app container: same VMM pid, its own pids, exec, kill
$C run -d $RT $(member pod1) "$APPIMG" a2 sh -c 'echo up >/tmp/up; exec sleep 600' >/dev/null
[ "$(state a2)" = RUNNING ] && [ "$(tpid a2)" = "$(tpid pod1)" ] && [ "$(tpid a2)" = "$vmm" ]
check $? "a second app container runs; containerd sees the pod's VMM as the task of both ($(tpid a2), $(tpid pod1))"
# the app's root is a directory of the pod's VM, seen from the sandbox
$C task exec --exec-id e0 pod1 sh -c 'for i in $(seq 50); do [ -e /run/kiln/containers/a2/tmp/up ] && break; sleep 0.1; done'
out=$($C task exec --exec-id e1 pod1 sh -c 'cat /run/kiln/containers/a2/tmp/up; [ -e /srv/app-only ] || echo not-in-sandbox' 2>&1)
[ "$out" = "$(printf 'up\nnot-in-sandbox')" ]
check $? "the app's file is in the pod's VM, under its root (seen by an exec in the sandbox: $(tr '\n' ' ' <<<"$out")); the app image's files are not the sandbox's"
out=$($C task exec --exec-id e2 a2 sh -c 'cat /tmp/up /srv/app-only' 2>&1)
[ "$out" = "$(printf 'up\nthe app image')" ]
check $? "ctr task exec into the app container runs in its root ($(tr '\n' ' ' <<<"$out"))"
out=$($C task exec --exec-id e2p a2 ps 2>&1)
grep -q 'sleep 600' <<<"$out" && grep -q ' ps$' <<<"$out"
check $? "the app container has a /proc of its own: ps lists its processes ($(grep -c . <<<"$out") lines)"
# a PID namespace per container: the app's init (sleep) is its pid 1, an
# exec's parent (the agent) is outside (0), ps in either container lists
# its own processes only (both inits are a `sleep 600`)
out=$($C task exec --exec-id e2n a2 sh -c 'echo $$ $PPID; cat /proc/1/comm; ps' 2>&1)
own=$($C task exec --exec-id e2s pod1 ps 2>&1)
[ "$(sed -n 1p <<<"$out" | awk '$1 > 1 && $2 == 0 {print "ok"}')" = ok ] &&
	[ "$(sed -n 2p <<<"$out")" = sleep ] && [ "$(grep -c 'sleep 600' <<<"$out")" = 1 ] &&
	grep -q '^ *1 .*sleep 600' <<<"$out" && [ "$(grep -c 'sleep 600' <<<"$own")" = 1 ] &&
	grep -q '^ *1 .*sleep 600' <<<"$own"
check $? "each container has a PID namespace of its own: its init is pid 1, ps lists its processes only ($(tr '\n' ' ' <<<"$out"); the sandbox's: $(grep -c . <<<"$own") lines)"
# kill(-1) in the sandbox reaches its own namespace only (its init is spared
# as Linux spares a namespace's init)
$C task exec --exec-id e2k pod1 sh -c 'kill -9 -1; true' >/dev/null 2>&1
sleep 0.5
[ "$(state a2)" = RUNNING ] && [ "$(state pod1)" = RUNNING ] &&
	[ "$($C task exec --exec-id e2m a2 cat /proc/1/comm 2>&1)" = sleep ]
check $? "kill -9 -1 in the sandbox does not reach the app container (a2 $(state a2), pod1 $(state pod1))"
# shareProcessNamespace: the CRI gives an app container the sandbox task's
# /proc/PID/ns/pid (the pod's VMM here): it joins the sandbox's namespace
# (whose init is pid 1), the other app container keeps its own
$C run -d $RT $(member pod1) --with-ns "pid:/proc/$vmm/ns/pid" "$APPIMG" a3 sleep 601 >/dev/null
out=$($C task exec --exec-id e3a a3 sh -c 'cat /proc/1/comm; ps' 2>&1)
own=$($C task exec --exec-id e3b pod1 ps 2>&1)
other=$($C task exec --exec-id e3c a2 ps 2>&1)
[ "$(state a3)" = RUNNING ] && [ "$(sed -n 1p <<<"$out")" = sleep ] &&
	grep -q '^ *1 .*sleep 600' <<<"$out" && grep -q 'sleep 601' <<<"$out" &&
	grep -q 'sleep 601' <<<"$own" && ! grep -q 'sleep 601' <<<"$other" &&
	[ "$(grep -c 'sleep 600' <<<"$other")" = 1 ]
check $? "an app container given the sandbox's PID namespace (--with-ns pid:/proc/$vmm/ns/pid) shares it: the sandbox's init is its pid 1, ps in either lists both, the other app container sees neither ($(tr '\n' ' ' <<<"$out"))"
out=$($C task pause a3 2>&1)
[ $? != 0 ] && grep -q "shares the pod's PID namespace" <<<"$out" && [ "$(state a3)" = RUNNING ]
check $? "its pause is refused (it has no namespace of its own to freeze): $out"
$C task kill -s SIGKILL a3
for _ in $(seq 100); do [ "$(state a3)" = STOPPED ] && break; sleep 0.05; done
[ "$(state a3)" = STOPPED ] && $C task delete a3 >/dev/null && $C container rm a3 &&
	[ "$(state pod1)" = RUNNING ]
check $? "the sharing container ends and deletes, the sandbox runs on ($(state pod1))"
out=$($C run --rm $RT $(member pod1) --with-ns pid:/proc/1/ns/pid "$APPIMG" a3 true 2>&1)
[ $? != 0 ] && grep -q "names no PID namespace of this pod" <<<"$out"
check $? "a PID namespace outside the pod (/proc/1/ns/pid) is refused ($(tail -1 <<<"$out"))"
$C container rm a3 >/dev/null 2>&1
# pause of one app container: its processes frozen in the guest (its PID
# namespace), the sandbox running on; resume; SIGKILL ends it paused
$C run -d $RT $(member pod1) "$APPIMG" a4 sh -c 'i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.05; done' >/dev/null
count() { $C task exec --exec-id "$1" pod1 cat /run/kiln/containers/a4/tmp/n 2>/dev/null; }
sleep 0.5
$C task pause a4
n1=$(count e4a); sleep 0.5; n2=$(count e4b)
[ "$(state a4)" = PAUSED ] && [ -n "$n1" ] && [ "$n1" = "$n2" ] && [ "$(state pod1)" = RUNNING ] &&
	[ "$(state a2)" = RUNNING ]
check $? "ctr task pause of an app container: PAUSED, its loop stands still ($n1, $n2), the pod's others run on"
out=$($C task exec --exec-id e4c a4 true 2>&1)
[ $? != 0 ] && grep -q "paused" <<<"$out"
check $? "an exec into the paused container is refused ($out)"
$C task resume a4
sleep 0.5
n3=$(count e4d)
[ "$(state a4)" = RUNNING ] && [ -n "$n3" ] && [ "$n3" -gt "$n2" ]
check $? "ctr task resume: RUNNING, the loop goes on ($n2 -> $n3)"
$C task pause a4 && $C task kill -s SIGKILL a4
for _ in $(seq 100); do [ "$(state a4)" = STOPPED ] && break; sleep 0.05; done
[ "$(state a4)" = STOPPED ] && $C task delete a4 >/dev/null && $C container rm a4
check $? "SIGKILL ends the paused app container, which deletes"
# an app container's own memory limit: its PID namespace's bound in the
# guest (dd's buffer is its block size, touched as it reads); Update moves it
$C run -d $RT $(member pod1) --memory-limit $((64 << 20)) "$APPIMG" a5 sleep 600 >/dev/null
dd() { $C task exec --exec-id "$1" a5 busybox dd if=/dev/zero of=/dev/null bs="$2" count=1 >/dev/null 2>&1; echo $?; }
r_small=$(dd e5a 16M)
r_big=$(dd e5b 80M)
[ "$r_small" = 0 ] && [ "$r_big" != 0 ] && [ "$(state a5)" = RUNNING ] && [ "$(state pod1)" = RUNNING ]
check $? "an app container's memory limit (64 MiB) holds in the guest: 16 MiB fits ($r_small), 80 MiB is killed ($r_big), the container and the pod run on"
upd=$(python3 tests/e2e/containerd_update.py "$(cat "$TASKS/a5/address")" a5 '{"memory":{"limit":201326592}}' 2>&1)
r_big2=$(dd e5c 80M)
[ "$upd" = ok ] && [ "$r_big2" = 0 ]
check $? "Update of the app container's memory limit to 192 MiB: 80 MiB fits now ($upd, $r_big2)"
# its metrics are its own: its namespace's processes and pages, its limit
$C task metrics a5 >"$T/m5" 2>&1
$C task metrics pod1 >"$T/m1" 2>&1
metric() { awk -v k="$2" '$1 == k {print $2}' "$1"; }
lim5=$(metric "$T/m5" memory.limit_in_bytes)
use5=$(metric "$T/m5" memory.usage_in_bytes)
p5=$(metric "$T/m5" pids.current)
p1=$(metric "$T/m1" pids.current)
[ "$lim5" = $((192 << 20)) ] && [ "$p5" = 1 ] && [ "${use5:-0}" -gt 0 ] && [ "${p1:-0}" -gt 1 ]
check $? "ctr task metrics of an app container gives its own figures: limit $lim5, $p5 process, $use5 bytes mapped (the pod's first container: the VM's, $p1 processes)"
out=$(timeout 20 $C task checkpoint a5 2>&1)
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "does not checkpoint" <<<"$out" && [ "$(state a5)" = RUNNING ]
check $? "ctr task checkpoint answers a clear unimplemented error, the container runs on (rc $rc: $(tail -1 <<<"$out"))"
$C task kill -s SIGKILL a5 >/dev/null 2>&1
for _ in $(seq 100); do [ "$(state a5)" = STOPPED ] && break; sleep 0.05; done
$C task delete a5 >/dev/null 2>&1; $C container rm a5 >/dev/null 2>&1
# an app container's CPU quota: its namespace's share of the vCPU in the
# guest (a busy loop's CPU time, from its /proc, against the wall time)
t0=$(ms)
$C run -d $RT $(member pod1) --cpu-quota 20000 --cpu-period 100000 "$APPIMG" a6 sh -c 'while :; do :; done' >/dev/null
sleep 1.5
cpu6=$($C task exec --exec-id e6a a6 cat /proc/1/stat 2>/dev/null | awk '{print ($14 + $15) * 10}')
t1=$(ms)
[ -n "$cpu6" ] && [ "$cpu6" -le $(((t1 - t0) * 35 / 100)) ] && [ "$(state pod1)" = RUNNING ]
check $? "an app container's CPU quota (20% of a CPU) holds in the guest: a busy loop had $cpu6 ms of CPU in $((t1 - t0)) ms"
$C task kill -s SIGKILL a6 >/dev/null 2>&1
for _ in $(seq 100); do [ "$(state a6)" = STOPPED ] && break; sleep 0.05; done
$C task delete a6 >/dev/null 2>&1; $C container rm a6 >/dev/null 2>&1
# CPU shares between the pod's containers: their PID namespaces' weights
# in the guest's scheduler. Two busy loops at 512 and 1536 get the vCPU
# about 1:3 (each one's CPU time from its /proc over the same 3 s; within
# 2.25 to 3.75: a loaded host steals from either), after an Update to
# equal shares about 1:1 (0.75 to 1.33); one alone gets most of the vCPU
# (over 70% of the wall time).
busy() { $C run -d $RT $(member pod1) --cpu-shares "$2" "$APPIMG" "$1" sh -c 'while :; do :; done' >/dev/null; }
cpu_ms() { $C task exec --exec-id "$1" "$2" cat /proc/1/stat 2>/dev/null | awk '{print ($14 + $15) * 10}'; }
# CPU ms each of a7 and a8 had over 3 s: "A7 A8 WALL"
window() {
	local a0 b0 a1 b1 t0 t1
	a0=$(cpu_ms "${1}a" a7); b0=$(cpu_ms "${1}b" a8); t0=$(ms)
	sleep 3
	a1=$(cpu_ms "${1}c" a7); b1=$(cpu_ms "${1}d" a8); t1=$(ms)
	echo "$((${a1:-0} - ${a0:-0})) $((${b1:-0} - ${b0:-0})) $((t1 - t0))"
}
# 100 * b / a, or 0
pct() { [ "${1:-0}" -gt 0 ] && echo $((100 * $2 / $1)) || echo 0; }
busy a7 512 && busy a8 1536
sleep 0.5
read -r c7 c8 w <<<"$(window e7)"
r=$(pct "$c7" "$c8")
[ "$(state a7)" = RUNNING ] && [ "$(state a8)" = RUNNING ] && [ "$r" -ge 225 ] && [ "$r" -le 375 ]
check $? "cpu shares 512 and 1536 of two busy app containers: CPU $c7 and $c8 ms in $w ms, ratio $((r / 100)).$(printf %02d $((r % 100))) (2.25 to 3.75)"
echo "# shares 512:1536: $c7 vs $c8 ms of CPU in $w ms, ratio $r/100"
upd=$(python3 tests/e2e/containerd_update.py "$(cat "$TASKS/a8/address")" a8 '{"cpu":{"shares":512}}' 2>&1)
read -r c7 c8 w <<<"$(window e8)"
r=$(pct "$c7" "$c8")
[ "$upd" = ok ] && [ "$r" -ge 75 ] && [ "$r" -le 133 ]
check $? "Update of the second one's shares to 512: now $c7 and $c8 ms in $w ms, ratio $((r / 100)).$(printf %02d $((r % 100))) (0.75 to 1.33; $upd)"
echo "# shares 512:512 after Update: $c7 vs $c8 ms of CPU in $w ms, ratio $r/100"
upd=$(python3 tests/e2e/containerd_update.py "$(cat "$TASKS/a8/address")" a8 '{"cpu":{"shares":1}}' 2>&1)
grep -q "^error" <<<"$upd"
check $? "an Update to shares 1 is refused ($upd)"
$C task kill -s SIGKILL a7 >/dev/null 2>&1
for _ in $(seq 100); do [ "$(state a7)" = STOPPED ] && break; sleep 0.05; done
$C task delete a7 >/dev/null 2>&1; $C container rm a7 >/dev/null 2>&1
c0=$(cpu_ms e9a a8); t0=$(ms)
sleep 2
c1=$(cpu_ms e9b a8); t1=$(ms)
c8=$((${c1:-0} - ${c0:-0}))
[ "$c8" -ge $(((t1 - t0) * 70 / 100)) ]
check $? "the other one alone (shares 512) gets most of the vCPU: $c8 ms of CPU in $((t1 - t0)) ms"
$C task kill -s SIGKILL a8 >/dev/null 2>&1
for _ in $(seq 100); do [ "$(state a8)" = STOPPED ] && break; sleep 0.05; done
$C task delete a8 >/dev/null 2>&1; $C container rm a8 >/dev/null 2>&1
p_app=$($C task ps a2 | awk 'NR > 1 {print $1}' | sort | tr '\n' ' ')
p_pod=$($C task ps pod1 | awk 'NR > 1 {print $1}' | sort | tr '\n' ' ')
[ -n "$p_app" ] && [ -n "$p_pod" ] && [ "$p_app" != "$p_pod" ]
check $? "ctr task ps lists each container's own processes (a2: $p_app, pod1: $p_pod)"
$C task kill -s SIGKILL a2
for _ in $(seq 100); do [ "$(state a2)" = STOPPED ] && break; sleep 0.05; done
[ "$(state a2)" = STOPPED ] && [ "$(state pod1)" = RUNNING ] &&
	[ "$($C task exec --exec-id e3 pod1 echo alive 2>&1)" = alive ]
check $? "killing the app container stops it, the sandbox runs on and takes execs"
$C task delete a2 >/dev/null && $C container rm a2 &&
	[ "$($C task exec --exec-id e4 pod1 sh -c 'ls /run/kiln/containers' 2>&1)" = "" ]
check $? "its delete removes its root from the VM"

# ---- delete order: the sandbox last; the VM after the last container
$C run -d $RT $(member pod1) "$APPIMG" a3 sleep 600 >/dev/null
$C task kill -s SIGKILL pod1
for _ in $(seq 100); do [ "$(state pod1)" = STOPPED ] && break; sleep 0.05; done
[ "$(state pod1)" = STOPPED ] && [ "$(state a3)" = RUNNING ] && kill -0 "$vmm" &&
	[ "$($C task exec --exec-id e5 a3 echo still 2>&1)" = still ]
check $? "the sandbox's init killed: the app container runs on in the VM"
out=$($C task delete pod1 2>&1)
[ $? != 0 ] && grep -q "a3" <<<"$out" && kill -0 "$vmm"
check $? "the sandbox's delete is refused while a container of the pod is there ($out)"
$C task kill -s SIGKILL a3
for _ in $(seq 100); do ! kill -0 "$vmm" 2>/dev/null && break; sleep 0.05; done
! ps -o stat= -p "$vmm" | grep -qv Z && [ "$(state a3)" = STOPPED ]
check $? "the pod's last init gone: its VMM is gone"
$C task delete a3 >/dev/null && $C container rm a3 && $C task delete pod1 >/dev/null &&
	$C container rm pod1
for _ in $(seq 100); do [ "$(shims)" = 0 ] && break; sleep 0.05; done
[ "$(shims)" = 0 ]
check $? "the app, then the sandbox delete; the pod's shim exits after the last"

# ---- a pod whose VM dies: every task fails, nothing hangs
sandbox pod2
$C run -d $RT $(member pod2) "$APPIMG" b1 sleep 600 >/dev/null
vmm=$(cat "$TASKS/pod2/vmm.pid")
kill -9 "$vmm"
for _ in $(seq 100); do
	[ "$(state b1)" = STOPPED ] && [ "$(state pod2)" = STOPPED ] && break
	sleep 0.05
done
[ "$(state b1)" = STOPPED ] && [ "$(state pod2)" = STOPPED ]
check $? "the pod's VM killed: both its tasks are STOPPED"
out=$(timeout 20 $C run --rm $RT $(member pod2) "$APPIMG" b2 true 2>&1)
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "VM is gone\|cannot reach the pod's agent" <<<"$out"
check $? "a new container of that pod fails at once, saying why (rc $rc: $out)"
$C container rm b2 >/dev/null 2>&1
timeout 10 $C task delete b1 >/dev/null && $C container rm b1 &&
	timeout 10 $C task delete pod2 >/dev/null && $C container rm pod2
check $? "and both delete"

sleep 0.5
mnts=$(grep -c " $TASKS/" /proc/mounts)
left=$(ls "$TASKS" 2>/dev/null | wc -l)
[ "$mnts" = 0 ] && [ "$left" = 0 ] && [ "$(shims)" = 0 ]
check $? "nothing is left behind: rootfs mounts ($mnts), bundles ($left), shims ($(shims))"
echo "# pod container start (ctr run --rm to exit, a 2 MiB busybox root copied in): $a1_ms ms"
grep -o 'container [a-z0-9]*: its root copied into the pod.s VM at [^ ]* in [0-9]* ms' "$T/containerd.log" |
	sed 's/^/# /'

grep -q "level=error" "$T/containerd.log" && grep "level=error" "$T/containerd.log" | head -5 | sed 's/^/# /'
echo
echo "$PASS passed, $FAIL failed"
[ $FAIL = 0 ]
