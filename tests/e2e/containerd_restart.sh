#!/bin/bash
# kiln's tasks across containerd's restart, and a VMM or a shim that dies
# (issue 19), against Debian's containerd (a containerd of the test's own,
# tests/e2e/containerd_env.sh). As with runc's shim, kiln's outlives
# containerd: restarted (SIGTERM, then started again on the same root and
# state) containerd finds the shim again through the bundle's address file,
# and a lone task and a pod's two tasks are still RUNNING, take execs, their
# output goes on to the fifo ctr task attach opens again (what came while
# nobody read it waited there; a task writing without end to an unread
# fifo holds up nothing), and they are killed and deleted as before. A VMM
# killed (SIGKILL) under a task, with
# containerd up or down: the task is STOPPED with a non-zero status, its
# exit event comes at once, it deletes and its shim ends. A shim killed
# (SIGKILL), with containerd up or down: containerd forgets the task and
# the shim's delete leaves no VMM. Every wait is bounded; at the end
# nothing of the run is left (VMMs, shims, jail locks, cgroup leaves,
# mounts, bundles).
#
#   make e2e-containerd   (runs tests/e2e/containerd.sh, ..., and this)
#
# Prints "ok"/"not ok" per check and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh e2e-containerd-restart
IMG=docker.io/library/kiln-test:1
PASS=0
FAIL=0
EVENTS=
ATTACH=
extra_cleanup() {
	[ -n "$EVENTS" ] && kill "$EVENTS" 2>/dev/null
	[ -n "$ATTACH" ] && kill -9 "$ATTACH" 2>/dev/null
}

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $1"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi; }
ms() { date +%s%3N; }
state() { $C task ls | awk -v id="$1" '$1 == id {print $3}'; }
shims() { pgrep -f "containerd-shim-kiln-v2 .*-address $SOCK" | wc -l; }
shim_of() { pgrep -f "containerd-shim-kiln-v2 .*-address $SOCK.* -id $1 "; }
alive() { ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; } # running, not a zombie
# until STATE or 5 s
wait_state() { for _ in $(seq 100); do [ "$(state "$1")" = "$2" ] && break; sleep 0.05; done; }
# ctr events into $T/events (a new stream after each restart: the old one ended)
events() {
	[ -n "$EVENTS" ] && kill "$EVENTS" 2>/dev/null
	$C events >>"$T/events" 2>&1 &
	EVENTS=$!
}
ctrd_restart_start() {
	ctrd_start
	events
}
# the last number task $1's output has reached in its attach file $2
last_n() { grep -o '^n[0-9]*' "$2" 2>/dev/null | tail -1 | tr -d n; }

python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag "$IMG" --cmd '["/bin/sh"]' &&
	$C image import "$T/img.tar" >/dev/null
check $? "an image built here and imported"
events

# ---- containerd restarts under a lone task and a pod
# the lone task counts on its stdout (ctr run -d leaves its fifos to ctr task attach)
$C run -d $RT "$IMG" r1 sh -c 'i=0; while :; do i=$((i+1)); echo n$i; sleep 0.2; done' >/dev/null
$C run -d $RT --annotation io.kubernetes.cri.container-type=sandbox \
	--annotation io.kubernetes.cri.sandbox-id=pod1 "$IMG" pod1 sleep 600 >/dev/null
$C run -d $RT --annotation io.kubernetes.cri.container-type=container \
	--annotation io.kubernetes.cri.sandbox-id=pod1 "$IMG" a1 sleep 601 >/dev/null
r1_vmm=$(cat "$TASKS/r1/vmm.pid" 2>/dev/null)
pod_vmm=$(cat "$TASKS/pod1/vmm.pid" 2>/dev/null)
r1_shim=$(shim_of r1)
pod_shim=$(shim_of pod1)
[ "$(state r1)" = RUNNING ] && [ "$(state pod1)" = RUNNING ] && [ "$(state a1)" = RUNNING ] &&
	[ -n "$r1_vmm" ] && [ -n "$pod_vmm" ] && [ "$(shims)" = 2 ]
check $? "a lone task and a pod of two run (2 shims, VMMs $r1_vmm and $pod_vmm)"
t0=$(ms)
ctrd_stop
# the shims and VMMs go on without containerd
alive "$r1_shim" && alive "$pod_shim" && alive "$r1_vmm" && alive "$pod_vmm"
check $? "containerd stopped (SIGTERM): the shims and the VMMs run on"
sleep 1 # output the task writes while nobody reads it
ctrd_restart_start
t1=$(ms)
[ "$(state r1)" = RUNNING ] && [ "$(state pod1)" = RUNNING ] && [ "$(state a1)" = RUNNING ] &&
	[ "$($C task ls | awk '$1 == "r1" {print $2}')" = "$r1_vmm" ] &&
	[ "$(shim_of r1)" = "$r1_shim" ] && [ "$(shim_of pod1)" = "$pod_shim" ]
check $? "containerd started again ($((t1 - t0)) ms down): the three tasks are RUNNING, served by the same shims, the VMM the task's pid"
out=$($C task exec --exec-id e1 r1 echo lone 2>&1)$($C task exec --exec-id e1 a1 echo app 2>&1)
out2=$($C task exec --exec-id e2 pod1 cat /proc/1/cmdline 2>&1 | tr '\0' ' ')
[ "$out" = loneapp ] && [ "$out2" = "sleep 600 " ]
check $? "ctr task exec into the lone task, the pod's sandbox and its app container ($out, $out2)"
: >"$T/r1.out"
# (no timeout(1) in between: ctr, killed below, must not outlive it, nor get a signal it passes on)
$C task attach r1 >"$T/r1.out" 2>&1 </dev/null &
ATTACH=$!
n1=
for _ in $(seq 100); do n1=$(last_n r1 "$T/r1.out"); [ -n "$n1" ] && break; sleep 0.05; done
sleep 1
n2=$(last_n r1 "$T/r1.out")
[ -n "$n1" ] && [ -n "$n2" ] && [ "$n2" -gt "$n1" ]
check $? "the lone task's output goes on to its fifo, opened again by ctr task attach (n$n1, then n$n2)"
# what it wrote while nobody read (since ctr run -d left, containerd's
# restart included) waited in the fifo, the shim holding it open: attach
# gets all of it, from the line after the first ones ctr run -d read itself
first=$(grep -o '^n[0-9]*' "$T/r1.out" | head -1 | tr -d n)
gaps=$(grep -o '^n[0-9]*' "$T/r1.out" | tr -d n | awk -v f="$first" '$1 != f + NR - 1 {n++} END {print n + 0}')
[ -n "$first" ] && [ "$first" -le 3 ] && [ "$gaps" = 0 ]
check $? "and nothing it wrote while nobody read is lost: ctr task attach gets n$first to n$n2 in order, $gaps out of place"
kill -9 "$ATTACH" 2>/dev/null
wait "$ATTACH" 2>/dev/null
ATTACH=
# kill and delete, with the exit events containerd now gets over the shim's new connection
$C task kill -s SIGKILL a1
wait_state a1 STOPPED
[ "$(state a1)" = STOPPED ] && $C task delete a1 >/dev/null && $C container rm a1 &&
	[ "$(state pod1)" = RUNNING ] && alive "$pod_vmm"
check $? "the app container is killed and deleted, the sandbox runs on"
$C task kill -s SIGKILL pod1
$C task kill -s SIGKILL r1
wait_state pod1 STOPPED
wait_state r1 STOPPED
for _ in $(seq 50); do
	grep -q '/tasks/exit.*"container_id":"r1"' "$T/events" &&
		grep -q '/tasks/exit.*"container_id":"pod1"' "$T/events" && break
	sleep 0.1
done
grep -q '/tasks/exit.*"container_id":"r1","id":"r1".*"exit_status":137' "$T/events" &&
	grep -q '/tasks/exit.*"container_id":"pod1","id":"pod1".*"exit_status":137' "$T/events" &&
	grep -q '/tasks/exit.*"container_id":"a1","id":"a1".*"exit_status":137' "$T/events"
check $? "after the restart the shims' exit events (137) reach containerd"
$C task delete pod1 >/dev/null && $C container rm pod1 && $C task delete r1 >/dev/null &&
	$C container rm r1
deleted=$?
for _ in $(seq 100); do [ "$(shims)" = 0 ] && ! alive "$r1_vmm" && ! alive "$pod_vmm" && break; sleep 0.05; done
[ $deleted = 0 ] && [ "$(shims)" = 0 ] && ! alive "$r1_vmm" && ! alive "$pod_vmm"
check $? "and deleted: their VMMs and shims are gone ($(shims) shims)"

# a task that writes without end while nobody reads: the fifo holds what
# it can, the rest is dropped, nothing waits for a reader (exec, kill)
$C run -d $RT "$IMG" f1 sh -c 'while :; do echo 0123456789abcdef0123456789abcdef; done' >/dev/null
sleep 2
t0=$(ms)
out=$(timeout 10 $C task exec --exec-id e1 f1 echo still 2>&1)
timeout 10 $C task kill -s SIGKILL f1
wait_state f1 STOPPED
t1=$(ms)
[ "$out" = still ] && [ "$(state f1)" = STOPPED ] && timeout 10 $C task delete f1 >/dev/null &&
	$C container rm f1
check $? "a task writing without end to a fifo nobody reads takes an exec and is killed and deleted ($((t1 - t0)) ms exec to STOPPED)"

# ---- a VMM killed under a running task
$C run -d $RT "$IMG" v1 sleep 600 >/dev/null
vmm=$(cat "$TASKS/v1/vmm.pid")
shim=$(shim_of v1)
t0=$(ms)
kill -9 "$vmm"
for _ in $(seq 100); do grep -q '/tasks/exit.*"container_id":"v1"' "$T/events" && break; sleep 0.05; done
t1=$(ms)
st=$(grep -o '/tasks/exit.*"container_id":"v1".*"exit_status":[0-9]*' "$T/events" | grep -o '[0-9]*$')
[ -n "$st" ] && [ "$st" != 0 ] && [ "$(state v1)" = STOPPED ] &&
	timeout 10 $C task delete v1 >/dev/null && $C container rm v1
check $? "a VMM killed (SIGKILL): containerd's exit event within $((t1 - t0)) ms, status $st; STOPPED; it deletes"
for _ in $(seq 100); do ! alive "$shim" && break; sleep 0.05; done
! alive "$shim"
check $? "and its shim ends after the delete"
# the same while containerd is down: it finds the task STOPPED when it comes back
$C run -d $RT "$IMG" v2 sleep 600 >/dev/null
vmm=$(cat "$TASKS/v2/vmm.pid")
shim=$(shim_of v2)
ctrd_stop
kill -9 "$vmm"
sleep 0.5
ctrd_restart_start
wait_state v2 STOPPED
# its exit event waited in the shim for containerd (the shim's log says when it went)
for _ in $(seq 100); do grep -q '\[v2\]: event /tasks/exit: containerd took it after' "$T/containerd.log" && break; sleep 0.1; done
took=$(grep -o '\[v2\]: event /tasks/exit: containerd took it after [0-9]* ms' "$T/containerd.log" | grep -o '[0-9]* ms')
[ "$(state v2)" = STOPPED ] && [ -n "$took" ]
check $? "a VMM killed while containerd is down: STOPPED when it is back, its exit event kept by the shim until containerd took it (after $took)"
[ -z "$took" ] && grep -a '\[v2\]' "$T/containerd.log" | sed 's/^/# /'
st=$($C task delete v2 2>&1)
rc=$?
[ $rc = 0 ] && ! alive "$vmm" && $C container rm v2
check $? "and it deletes ($st)"
for _ in $(seq 100); do ! alive "$shim" && break; sleep 0.05; done
! alive "$shim"
check $? "and its shim ends after the delete"

# ---- a shim killed: a pod's (two tasks, one VMM), then a lone one while containerd is down
$C run -d $RT --annotation io.kubernetes.cri.container-type=sandbox \
	--annotation io.kubernetes.cri.sandbox-id=pod2 "$IMG" pod2 sleep 600 >/dev/null
$C run -d $RT --annotation io.kubernetes.cri.container-type=container \
	--annotation io.kubernetes.cri.sandbox-id=pod2 "$IMG" a2 sleep 601 >/dev/null
vmm=$(cat "$TASKS/pod2/vmm.pid")
t0=$(ms)
kill -9 "$(shim_of pod2)"
forgot() { [ -z "$($C task ls -q | grep -x 'pod2\|a2')" ] && ! alive "$vmm" && [ ! -e "$TASKS/pod2" ] && [ ! -e "$TASKS/a2" ]; }
for _ in $(seq 100); do forgot && break; sleep 0.05; done
t1=$(ms)
forgot
check $? "a pod's shim killed (SIGKILL): within $((t1 - t0)) ms containerd has forgotten both tasks, its VMM and bundles are gone ($($C task ls -q | tr '\n' ' '); $(ls "$TASKS" | tr '\n' ' '))"
$C container rm pod2 a2 >/dev/null 2>&1
$C run -d $RT "$IMG" s1 sleep 600 >/dev/null
vmm=$(cat "$TASKS/s1/vmm.pid")
ctrd_stop
kill -9 "$(shim_of s1)"
ctrd_restart_start
for _ in $(seq 100); do ! alive "$vmm" && break; sleep 0.05; done
[ -z "$($C task ls -q | grep -x s1)" ] && ! alive "$vmm" && [ ! -e "$TASKS/s1" ]
check $? "a shim killed while containerd is down: containerd, back, runs its delete; no task, VMM or bundle is left"
$C container rm s1 >/dev/null 2>&1

# ---- nothing left behind
sleep 0.5
left=$(ctrd_leftovers)
[ -z "$left" ] && [ "$(shims)" = 0 ]
check $? "nothing is left behind: ${left:-no jail lock file, cgroup leaf, rootfs mount or bundle}, $(shims) shims"

grep -q "level=error" "$T/containerd.log" && grep "level=error" "$T/containerd.log" | head -5 | sed 's/^/# /'
echo
echo "$PASS passed, $FAIL failed"
[ $FAIL = 0 ]
