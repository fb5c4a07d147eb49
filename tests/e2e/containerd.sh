#!/bin/bash
# containerd-shim-kiln-v2 against Debian's containerd, on real VMs: a
# containerd of the test's own (its root, state, sockets and config in a
# temporary directory; not the system's), an image archive built here
# (tests/e2e/images/mkarchive.py; no registry is reachable) and imported
# with `ctr image import`, then `ctr run --runtime io.containerd.kiln.v2`,
# `ctr task exec/kill/pause/resume/metrics/ps`, a terminal, bind mounts, a
# VMM that dies under a running task (attached or detached) or hangs, a shim
# that dies, and containerd restarting. Everything it started is gone
# at the end (containerd, shims, VMMs, mounts).
#
#   make e2e-containerd
#
# Prints "ok"/"not ok" per check and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v script >/dev/null || { echo "e2e-containerd: script is missing (bsdutils)"; exit 1; }
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh e2e-containerd
IMG=docker.io/library/kiln-test:1
PASS=0
FAIL=0
EVENTS=
extra_cleanup() { [ -n "$EVENTS" ] && kill "$EVENTS" 2>/dev/null; }

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $1"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi; }
ms() { date +%s%3N; }

$C version >/dev/null 2>&1
check $? "containerd of the test's own answers on $SOCK"
$C events >"$T/events" 2>&1 &
EVENTS=$!

python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag "$IMG" --env GREETING=hi \
	--dir /srv/data --file /srv/data/motd='from the image' --cmd '["/bin/sh"]' &&
	$C image import "$T/img.tar" >/dev/null && $C image ls -q | grep -qx "$IMG"
check $? "ctr image import of an archive the test built"
python3 tests/e2e/images/mkarchive.py "$T/noc.tar" --tag docker.io/library/kiln-nocmd:1 &&
	$C image import "$T/noc.tar" >/dev/null
python3 tests/e2e/images/mkarchive.py "$T/usr.tar" --tag docker.io/library/kiln-user:1 \
	--user app --cmd '["id","-u"]' && $C image import "$T/usr.tar" >/dev/null

# ---- ctr run: output, stderr, exit status, the spec's process
t0=$(ms)
out=$($C run --rm $RT "$IMG" r1 sh -c 'echo out; echo err >&2; exit 3' 2>"$T/err")
rc=$?
t1=$(ms)
[ $rc = 3 ] && [ "$out" = out ] && grep -qx err "$T/err"
check $? "ctr run returns the exit status (3), stdout and stderr apart ($rc, $out; $((t1 - t0)) ms, rootfs packed)"
t0=$(ms)
out=$($C run --rm $RT "$IMG" r2 true 2>&1)
rc=$?
t1=$(ms)
[ $rc = 0 ] && [ "$(ls "$T/cache/shim" | wc -l)" = 1 ]
check $? "a second container of the image boots from the cached rootfs image ($((t1 - t0)) ms run to exit)"
kiln_ms=$((t1 - t0))
if command -v runc >/dev/null; then
	t0=$(ms)
	$C run --rm --runtime io.containerd.runc.v2 "$IMG" rc1 true >/dev/null 2>&1
	runc_rc=$?
	t1=$(ms)
	[ $runc_rc = 0 ] && echo "# ctr run --rm IMAGE true: kiln $kiln_ms ms (rootfs cached), runc $((t1 - t0)) ms, same containerd"
fi
out=$($C run --rm $RT --env K=v --cwd /srv/data "$IMG" r3 sh -c 'echo $K $GREETING; pwd; cat motd' 2>&1)
[ "$out" = "$(printf 'v hi\n/srv/data\nfrom the image')" ]
check $? "the spec's env (ctr's and the image's), cwd and the image's files ($out)"
out=$($C run --rm $RT --memory-limit $((512 << 20)) "$IMG" r4 sh -c 'head -1 /proc/meminfo' 2>&1)
kb=$(awk '{print $2}' <<<"$out")
[ -n "$kb" ] && [ "$kb" -gt $((400 << 10)) ] && [ "$kb" -le $((512 << 10)) ]
check $? "linux.resources.memory.limit sizes the VM ($out)"
out=$($C run --rm $RT --memory-limit $((16 << 20)) "$IMG" r4b true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "a kiln VM has 64 to 65536 MiB" <<<"$out"
check $? "a memory limit below what a VM needs is refused, saying why ($out)"
# linux.resources.cpu: the CFS quota and shares of the VMM's cgroup leaf
$C run -d $RT --cpus 0.25 --cpu-shares 512 "$IMG" q1 sh -c 'while :; do :; done' >/dev/null
vmm=$(cat "$TASKS/q1/vmm.pid" 2>/dev/null)
leaf=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print "/sys/fs/cgroup/" $2 $3}' "/proc/$vmm/cgroup" 2>/dev/null)
ticks() { awk '{print $14 + $15}' "/proc/$vmm/stat"; }
c0=$(ticks); sleep 2; c1=$(ticks)
hz=$(getconf CLK_TCK)
[ -n "$leaf" ] && [ "$(cat "$leaf/cpu.cfs_quota_us")" = 25000 ] &&
	[ "$(cat "$leaf/cpu.cfs_period_us")" = 100000 ] && [ "$(cat "$leaf/cpu.shares")" = 512 ] &&
	[ $(((c1 - c0) * 1000 / hz)) -le 700 ]
check $? "ctr run --cpus 0.25 --cpu-shares 512: the VMM's leaf has that quota and shares, and a guest spinning for 2 s got $(((c1 - c0) * 1000 / hz)) ms of CPU"
# Update (Kubernetes' UpdateContainerResources; ctr 1.6 has no command for
# it): sent to the shim over ttrpc as containerd forwards it
upd() { python3 tests/e2e/containerd_update.py "$(cat "$TASKS/q1/address")" q1 "$1" 2>&1; }
out=$(upd '{"cpu":{"quota":50000,"period":100000,"shares":1024},"memory":{"limit":268435456}}')
[ "$out" = ok ] && [ "$(cat "$leaf/cpu.cfs_quota_us")" = 50000 ] && [ "$(cat "$leaf/cpu.shares")" = 1024 ]
check $? "Update of a running task: the VMM's leaf gets the new quota and shares ($out; $(cat "$leaf/cpu.cfs_quota_us" "$leaf/cpu.shares" | tr '\n' ' '))"
out=$(upd '{"cpu":{"quota":-1}}')
[ "$out" = ok ] && [ "$(cat "$leaf/cpu.cfs_quota_us")" = 200000 ]
check $? "Update with quota -1 gives the leaf back the jail's own bound, 2 CPUs ($out; $(cat "$leaf/cpu.cfs_quota_us"))"
out=$(upd '{"memory":{"limit":536870912}}')
grep -q "^error 9 .*memory is fixed at boot (256 MiB)" <<<"$out" && [ "$(cat "$leaf/cpu.cfs_quota_us")" = 200000 ]
check $? "Update of the memory limit is refused, saying why, and changes nothing ($out)"
out=$(upd '{"cpu":{"quota":500}}')
grep -q "^error 3 .*the kernel takes 1000 or more" <<<"$out"
check $? "Update with a quota the kernel cannot take is refused ($out)"
# the cached rootfs image q1 booted from is held (a shared flock): the
# cache's pruning (shim/cache.c) cannot take it until q1 is deleted
img=$(ls "$T"/cache/shim/rootfs-*.erofs 2>/dev/null | head -1)
[ -n "$img" ] && ! flock -xn "$img" true
held=$?
$C task kill -s SIGKILL q1 >/dev/null 2>&1; sleep 0.3; $C task delete q1 >/dev/null 2>&1; $C container rm q1 >/dev/null 2>&1
[ $held = 0 ] && flock -xn "$img" true
check $? "a running task holds its cached rootfs image against pruning, and lets go at delete ($img)"
out=$($C run --rm $RT --cpu-quota 500 --cpu-period 100000 "$IMG" q2 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "cpu.quota is 500 us: the kernel takes 1000 or more" <<<"$out"
check $? "a CPU quota the kernel cannot take is refused, saying why ($out)"
# process.rlimits reach the guest's process, and NOFILE bounds its
# descriptors (ctr has no rlimit option: a spec of the test's own, with
# root.path a directory containerd does not manage, as ctr run --rootfs)
mkdir -p "$T/rootdir" && $C image mount "$IMG" "$T/rootdir" >/dev/null
$C oci spec | python3 -c "
import json, sys
d = json.load(sys.stdin)
d['root'] = {'path': '$T/rootdir', 'readonly': True}
d['process']['args'] = ['sh', '-c', 'ulimit -n; ulimit -Hn; ulimit -c; ulimit -s; sh -c \"ulimit -n\"; ulimit -n 100; (exec 99</dev/null) && echo fd99; (exec 100</dev/null) 2>/dev/null || echo no-fd100']
d['process']['rlimits'] = [{'type': 'RLIMIT_NOFILE', 'soft': 512, 'hard': 900},
    {'type': 'RLIMIT_CORE', 'soft': 0, 'hard': 0}, {'type': 'RLIMIT_STACK', 'soft': 4194304, 'hard': 8388608}]
json.dump(d, open('$T/rl.json', 'w'))
d['process']['rlimits'] = [{'type': 'RLIMIT_NOPE', 'soft': 1, 'hard': 1}]
json.dump(d, open('$T/rl-bad.json', 'w'))
d['process']['user'] = {'uid': 1000, 'gid': 1000}
d['process']['args'] = ['sh', '-c', 'ulimit -u; ulimit -v; sleep 3 & echo one; sleep 3 & echo two']
d['process']['rlimits'] = [{'type': 'RLIMIT_NPROC', 'soft': 2, 'hard': 2},
    {'type': 'RLIMIT_AS', 'soft': 1 << 30, 'hard': 1 << 30}]
json.dump(d, open('$T/rl-nproc.json', 'w'))"
out=$($C run --rm $RT --config "$T/rl.json" rl1 2>&1 | tr '\n' ' ')
[ "$out" = "512 900 0 4096 512 fd99 no-fd100 " ]
check $? "process.rlimits: ulimit in the guest reports the spec's (NOFILE 512/900, CORE 0, STACK 4 MiB), a child inherits them, and NOFILE bounds descriptors ($out)"
out=$($C run --rm $RT --config "$T/rl-nproc.json" rl3 2>&1 | tr '\n' ' ')
grep -q "2 1048576 one" <<<"$out" && grep -q "can't fork" <<<"$out" && ! grep -q two <<<"$out"
check $? "process.rlimits NPROC 2 holds a non-root user's processes in the guest (its shell's second fork fails) and AS 1 GiB is its ulimit -v ($out)"
out=$($C run --rm $RT --config "$T/rl-bad.json" rl2 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "RLIMIT_NOPE' is not a Linux rlimit" <<<"$out"
check $? "an unknown rlimit is refused, saying why ($out)"
# ---- the VMM on the host: linux.cgroupsPath (issue 19) and process.oomScoreAdj
# (one that is not a number ctr itself refuses; tests/e2e/unit/test_shim_podcg.c
# has the shim's refusal, and those of hostile paths)
CG=kiln-e2e-$$
cgmounts() { awk '$4 == "/" { for (i = 7; $i != "-"; i++); if ($(i + 1) ~ /^cgroup2?$/) print $5 }' /proc/self/mountinfo | sort -u; }
in_all() { # pid path: the pid is in path's cgroup.procs in every hierarchy
	local m
	for m in $(cgmounts); do grep -qx "$1" "$m$2/cgroup.procs" 2>/dev/null || return 1; done
}
none_left() { local m; for m in $(cgmounts); do [ -e "$m$1" ] && return 1; done; return 0; }
python3 -c "
import json
d = json.load(open('$T/rl.json'))
del d['process']['rlimits']
d['process']['args'] = ['sleep', '600']
d['process']['oomScoreAdj'] = 321
d['linux']['cgroupsPath'] = '/$CG/oom1'
json.dump(d, open('$T/oom.json', 'w'))
d['process']['oomScoreAdj'] = -500
d['process']['args'] = ['true']
json.dump(d, open('$T/oom-neg.json', 'w'))
d['process']['oomScoreAdj'] = 0
d['linux']['cgroupsPath'] = '/$CG/../../etc'
json.dump(d, open('$T/cg-bad.json', 'w'))"
$C run -d $RT --config "$T/oom.json" oom1 >/dev/null 2>&1
vmm=$(cat "$TASKS/oom1/vmm.pid" 2>/dev/null)
oom=$(cat "/proc/$vmm/oom_score_adj" 2>/dev/null)
nh=$(cgmounts | wc -l)
[ -n "$vmm" ] && [ "$oom" = 321 ] && in_all "$vmm" "/$CG/oom1" && [ "$nh" -gt 0 ] &&
	[ -z "$(find /sys/fs/cgroup -maxdepth 4 -path "*/$CG/oom1/kiln.slice" 2>/dev/null)" ]
check $? "linux.cgroupsPath /$CG/oom1: the VMM is in its cgroup.procs in all $nh hierarchies (its jail's leaf, none of its own); process.oomScoreAdj 321 is its oom_score_adj ($oom)"
$C task kill -s SIGKILL oom1 >/dev/null 2>&1; sleep 0.3; $C task delete oom1 >/dev/null 2>&1; $C container rm oom1 >/dev/null 2>&1
none_left "/$CG"
check $? "the cgroups the shim made for it (/$CG/oom1 and /$CG) are gone with the task"
out=$($C run --rm $RT --config "$T/oom-neg.json" oom2 2>&1)
rc=$?
if sh -c 'echo -1 >/proc/self/oom_score_adj' 2>/dev/null; then
	[ $rc = 0 ]
	check $? "process.oomScoreAdj -500 is applied where root may lower it ($rc $out)"
else
	[ $rc != 0 ] && grep -q "oomScoreAdj -500: the kernel refused it .*needs CAP_SYS_RESOURCE" <<<"$out" && none_left "/$CG"
	check $? "process.oomScoreAdj -500, which root may not set here, is refused, saying why, and leaves no cgroup ($out)"
fi
out=$($C run --rm $RT --config "$T/cg-bad.json" cg1 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "component 2 ('..') is not a cgroup name" <<<"$out" && none_left "/$CG"
check $? "a linux.cgroupsPath with '..' is refused, saying why ($out)"
$C run -d $RT --cgroup "kilne2e$$.slice:kiln:sd1" "$IMG" sd1 sleep 600 >/dev/null 2>&1
vmm=$(cat "$TASKS/sd1/vmm.pid" 2>/dev/null)
sd=$(awk -F: '$2 == "memory" {print $3}' "/proc/$vmm/cgroup" 2>/dev/null)
[ -n "$vmm" ] && [ "$sd" = "/kilne2e$$.slice/kiln-sd1.scope" ] && in_all "$vmm" "$sd"
check $? "linux.cgroupsPath in systemd's form (ctr run --cgroup kilne2e$$.slice:kiln:sd1): the VMM is in $sd in every hierarchy"
$C task kill -s SIGKILL sd1 >/dev/null 2>&1; sleep 0.3; $C task delete sd1 >/dev/null 2>&1; $C container rm sd1 >/dev/null 2>&1
none_left "/kilne2e$$.slice"
check $? "and that slice and scope are gone with the task"
# a cgroup in use (another VMM in it, or cgroups below it) is not taken: the
# jail's limits would land on what holds them
$C run -d $RT --cgroup "/$CG/busy1" "$IMG" busy1 sleep 600 >/dev/null 2>&1
out=$($C run --rm $RT --cgroup "/$CG/busy1" "$IMG" busy2 true 2>&1)
rc=$?
out2=$($C run --rm $RT --cgroup "/$CG" "$IMG" busy3 true 2>&1)
rc2=$?
[ $rc != 0 ] && [ $rc2 != 0 ] && grep -q "busy1 is in use (it has processes" <<<"$out" &&
	grep -q "$CG is in use (it has processes or cgroups of its own)" <<<"$out2" &&
	in_all "$(cat "$TASKS/busy1/vmm.pid")" "/$CG/busy1"
check $? "a linux.cgroupsPath in use (another VMM's, or a parent of one) is refused, saying why, and the running VMM stays in its own ($out2)"
$C task kill -s SIGKILL busy1 >/dev/null 2>&1; sleep 0.3; $C task delete busy1 >/dev/null 2>&1; $C container rm busy1 >/dev/null 2>&1
none_left "/$CG"
check $? "and /$CG is gone with busy1"
$C image unmount "$T/rootdir" >/dev/null
# ---- bind mounts: copied into the guest before the process starts
V=$T/vol
mkdir -p "$V/sub"
echo alpha >"$V/a"
echo beta >"$V/sub/b"
chmod 640 "$V/a"
ln -s sub/b "$V/link"
mkdir -p "$V/..data" && echo cm >"$V/..data/key" && ln -s ..data/key "$V/key"
printf '127.0.0.1 localhost\n10.9.8.7 kiln-bind-test\n' >"$T/hosts"
echo tl >"$T/tlog"
t0=$(ms)
out=$($C run --rm $RT --mount type=bind,src="$V",dst=/data,options=rbind:ro \
	--mount type=bind,src="$T/hosts",dst=/etc/hosts,options=rbind:rw \
	--mount type=bind,src="$T/tlog",dst=/dev/termination-log,options=rbind:rw "$IMG" bm1 \
	sh -c 'cat /data/a /data/sub/b /data/link /data/key; stat -c %a /data/a; grep kiln-bind-test /etc/hosts; cat /dev/termination-log; echo new >/data/new; echo x >>/etc/hosts' 2>&1 | tr '\n' ' ')
t1=$(ms)
[ "$out" = "alpha beta beta cm 440 10.9.8.7 kiln-bind-test tl " ] && [ ! -e "$V/new" ] &&
	[ "$(wc -l <"$T/hosts")" = 2 ]
check $? "ctr run --mount rbind:ro of a directory (links inside it followed, files read-only) and file binds at /etc/hosts and /dev/termination-log; guest writes stay in the guest ($out; $((t1 - t0)) ms)"
t0=$(ms)
$C run --rm $RT --mount type=bind,src="$V",dst=/data,options=rbind:ro \
	--mount type=bind,src="$T/hosts",dst=/etc/hosts,options=rbind:rw "$IMG" bm1b true >/dev/null 2>&1
echo "# ctr run --rm IMAGE true with a 7-entry directory bind and an /etc/hosts bind: $(($(ms) - t0)) ms (without: $kiln_ms ms)"
mkdir -p "$T/out1" && ln -s /etc "$T/out1/etc"
out=$($C run --rm $RT --mount type=bind,src="$T/out1",dst=/data,options=rbind "$IMG" bm2 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "leads out of the bind's source" <<<"$out"
check $? "a bind whose tree links out of its source is refused, saying why ($out)"
out=$($C run --rm $RT --mount type=bind,src=/dev/null,dst=/data/null,options=rbind "$IMG" bm3 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "is a device node, fifo or socket" <<<"$out"
check $? "a bind of a device node is refused ($out)"
out=$($C run --rm $RT --mount type=bind,src="$V",dst=/data,options=rbind:rshared "$IMG" bm4 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "option 'rshared', which kiln's shim cannot give" <<<"$out"
check $? "a propagation option is refused ($out)"
out=$($C run --rm $RT --mount type=bind,src="$V",dst=/proc/x,options=rbind "$IMG" bm5 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "inside the guest kernel's own /proc" <<<"$out"
check $? "a bind into the guest's /proc is refused ($out)"
mkdir -p "$T/big" && (cd "$T/big" && seq 4200 | xargs touch)
out=$($C run --rm $RT --mount type=bind,src="$T/big",dst=/big,options=rbind "$IMG" bm6 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "more than 4096 entries" <<<"$out"
check $? "a bind of a tree beyond the bound is refused ($(head -c 200 <<<"$out"))"
out=$($C run --rm $RT docker.io/library/kiln-nocmd:1 r5 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "process.args is empty" <<<"$out"
check $? "an image without a command and none given is refused, saying why ($out)"
out=$($C run --rm $RT docker.io/library/kiln-user:1 r6 2>&1)
[ "$out" = 1000 ]
check $? "the image's User (resolved by containerd) is process.user.uid ($out)"

# ---- containers at once, each its own VM
pids=
for i in 1 2 3 4; do
	($C run --rm $RT "$IMG" p$i sh -c "echo p$i; exit $i" >"$T/p$i.out" 2>&1; echo $? >"$T/p$i.rc") &
	pids="$pids $!"
done
# shellcheck disable=SC2086 # one pid per word
wait $pids
good=0
for i in 1 2 3 4; do
	[ "$(cat "$T/p$i.rc")" = $i ] && [ "$(cat "$T/p$i.out")" = p$i ] && good=$((good + 1))
done
[ $good = 4 ]
check $? "4 containers run at once, each with its own output and status ($good of 4)"

# ---- a detached task: exec, ps, pause/resume, metrics, kill
$C run -d $RT "$IMG" d1 sh -c 'echo $$ >/tmp/init.pid; exec sleep 600' >/dev/null
check $? "ctr run -d starts a task"
[ "$($C task ls | awk '$1 == "d1" {print $3}')" = RUNNING ]
check $? "ctr task ls: RUNNING"
# the VMM in kiln-vmm's jail, started as kilnd starts it
vmm=$(cat "$TASKS/d1/vmm.pid")
st=$(cat "/proc/$vmm/status" 2>/dev/null)
uid=$(awk '$1 == "Uid:" {print $2}' <<<"$st")
[ -n "$uid" ] && [ "$uid" != 0 ] && [ "$(awk '$1 == "Gid:" {print $2}' <<<"$st")" = "$uid" ] &&
	grep -q "^Seccomp:[[:space:]]*2$" <<<"$st" &&
	[ "$(awk '$1 == "NSpid:" {print $NF}' <<<"$st")" = 1 ] &&
	[ "$(readlink "/proc/$vmm/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] &&
	[ "$(stat -c %u "$TASKS/d1/vmm-out")" = "$uid" ] && [ "$(stat -c %u "$TASKS/d1")" = 0 ]
check $? "the task's VMM is jailed: uid $uid, seccomp filter on, pid 1 of its own pid namespace, vmm-out its only directory ($(grep -E '^(Uid|Seccomp|NSpid):' <<<"$st" | tr -s '\t\n' '  '))"
t0=$(ms)
out=$($C task exec --exec-id e1 d1 sh -c 'echo in exec; cat /tmp/init.pid; exit 7' 2>&1)
rc=$?
t1=$(ms)
[ $rc = 7 ] && grep -q "in exec" <<<"$out"
check $? "ctr task exec runs in the same VM and returns its status (7; $((t1 - t0)) ms)"
echo "# ctr task exec round trip: $((t1 - t0)) ms"
out=$(echo piped | $C task exec --exec-id e2 d1 cat 2>&1)
[ "$out" = piped ]
check $? "ctr task exec passes stdin ($out)"
init=$($C task exec --exec-id e5 d1 cat /tmp/init.pid)
# (the container has a PID namespace of its own in the guest, as under
# runc: its init is pid 1 there; ctr task ps gives the VM's numbers, which
# are NS * 32768 + the namespace's, include/kiln/pidns.h)
[ "$init" = 1 ] && $C task ps d1 | awk 'NR > 1 && $1 % 32768 == 1 && $1 > 32768' | grep -q .
check $? "the init is pid 1 of the container's own PID namespace, and ctr task ps lists it by the VM's number ($init; $($C task ps d1 | awk 'NR > 1 {print $1}' | tr '\n' ' '))"
$C task metrics d1 >"$T/metrics" 2>&1 && grep -q "memory.usage_in_bytes" "$T/metrics" &&
	[ "$(awk '$1 == "pids.current" {print $2}' "$T/metrics")" -ge 2 ]
check $? "ctr task metrics reads the VM's memory and processes"
t0=$(ms)
$C task pause d1 && [ "$($C task ls | awk '$1 == "d1" {print $3}')" = PAUSED ] &&
	[ -s "$TASKS/d1/pause.snap" ] && [ ! -e "$TASKS/d1/vmm-out/pause.snap" ]
check $? "ctr task pause: PAUSED, with a kiln snapshot of the VM moved out of the jail's vmm-out ($(($(ms) - t0)) ms)"
timeout 5 $C task exec --exec-id e3 d1 true >"$T/out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "paused" "$T/out"
check $? "an exec into a paused task is refused at once ($(cat "$T/out"))"
t0=$(ms)
$C task resume d1 && [ "$($C task ls | awk '$1 == "d1" {print $3}')" = RUNNING ] &&
	[ "$($C task exec --exec-id e4 d1 echo after)" = after ]
check $? "ctr task resume: RUNNING, and execs work ($(($(ms) - t0)) ms)"
$C task kill d1
for _ in $(seq 50); do
	[ "$($C task ls | awk '$1 == "d1" {print $3}')" = STOPPED ] && break
	sleep 0.1
done
[ "$($C task ls | awk '$1 == "d1" {print $3}')" = STOPPED ]
check $? "ctr task kill (SIGTERM) stops the task"
# the shim's events, as the CRI would see them (ctr events prints them)
for _ in $(seq 50); do grep -q '/tasks/exit.*"container_id":"d1"' "$T/events" && break; sleep 0.1; done
grep -q '/tasks/start.*"container_id":"d1"' "$T/events" &&
	grep -q '/tasks/exec-started.*"container_id":"d1".*"exec_id":"e1"' "$T/events" &&
	grep -q '/tasks/paused.*"container_id":"d1"' "$T/events" &&
	grep -q '/tasks/resumed.*"container_id":"d1"' "$T/events" &&
	grep -q '/tasks/exit.*"container_id":"d1","id":"d1".*"exit_status":143' "$T/events"
check $? "the shim publishes start, exec-started, paused, resumed and exit (143) events"
$C task delete d1 >/dev/null && $C container rm d1 && [ ! -e "$TASKS/d1" ] &&
	! grep -q " $TASKS/d1/rootfs " /proc/mounts
check $? "ctr task delete and container rm leave no bundle or mount"

# ---- a paused task: signals wait for resume, SIGKILL ends it at once
$C run -d $RT "$IMG" k1 sleep 600 >/dev/null && $C task pause k1
$C task kill k1 >"$T/out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "paused: resume it first" "$T/out"
check $? "SIGTERM to a paused task is refused, saying why ($(cat "$T/out"))"
$C task kill -s SIGKILL k1
for _ in $(seq 50); do
	[ "$($C task ls | awk '$1 == "k1" {print $3}')" = STOPPED ] && break
	sleep 0.1
done
st=$($C task delete k1 2>&1)
[ "$($C task ls | awk '$1 == "k1"')" = "" ] && grep -q "exit.*137\|137" <<<"$st$(grep '/tasks/exit.*"k1".*137' "$T/events")"
check $? "SIGKILL to a paused task ends it (137) and its VM"
$C container rm k1 >/dev/null 2>&1

# ---- a terminal
out=$(timeout 30 script -qec "$C run -t --rm $RT $IMG t1 sh -c 'tty; echo TTY-OK; exit 4'" /dev/null </dev/null)
rc=$?
[ $rc = 4 ] && grep -q "/dev/pts/" <<<"$out" && grep -q TTY-OK <<<"$out"
check $? "ctr run -t gives the process a terminal (rc $rc)"

# ---- failures: the VM dies, the shim dies
($C run --rm $RT "$IMG" c1 sh -c 'echo up; exec sleep 600' >"$T/c1.out" 2>&1; echo $? >"$T/c1.rc") &
for _ in $(seq 100); do grep -q up "$T/c1.out" 2>/dev/null && break; sleep 0.05; done
kill -9 "$(cat "$TASKS/c1/vmm.pid")"
for _ in $(seq 100); do [ -s "$T/c1.rc" ] && break; sleep 0.05; done
[ "$(cat "$T/c1.rc" 2>/dev/null)" = 255 ]
check $? "a VM that dies under a running task: ctr run returns 255 at once ($(cat "$T/c1.rc" 2>/dev/null))"

# a VMM killed under a detached task: containerd sees it STOPPED, status 255
$C run -d $RT "$IMG" c3 sleep 600 >/dev/null
t0=$(ms)
kill -9 "$(cat "$TASKS/c3/vmm.pid")"
for _ in $(seq 100); do
	[ "$($C task ls | awk '$1 == "c3" {print $3}')" = STOPPED ] && break
	sleep 0.05
done
t1=$(ms)
for _ in $(seq 50); do grep -q '/tasks/exit.*"container_id":"c3"' "$T/events" && break; sleep 0.1; done
[ "$($C task ls | awk '$1 == "c3" {print $3}')" = STOPPED ] &&
	grep -q '/tasks/exit.*"container_id":"c3","id":"c3".*"exit_status":255' "$T/events" &&
	timeout 10 $C task delete c3 >/dev/null && $C container rm c3
check $? "a VMM killed under a detached task: ctr task ls shows STOPPED within $((t1 - t0)) ms, its exit event says 255, and it deletes"
# a VMM that hangs (stopped): State still answers, SIGKILL still ends the task
$C run -d $RT "$IMG" c4 sleep 600 >/dev/null
vmm=$(cat "$TASKS/c4/vmm.pid")
kill -STOP "$vmm"
t0=$(ms)
st=$(timeout 5 $C task ls | awk '$1 == "c4" {print $3}')
timeout 5 $C task kill -s SIGKILL c4
for _ in $(seq 100); do
	[ "$($C task ls | awk '$1 == "c4" {print $3}')" = STOPPED ] && break
	sleep 0.05
done
t1=$(ms)
[ "$st" = RUNNING ] && [ "$($C task ls | awk '$1 == "c4" {print $3}')" = STOPPED ] &&
	! ps -o stat= -p "$vmm" | grep -qv Z && timeout 10 $C task delete c4 >/dev/null &&
	$C container rm c4
check $? "a hung VMM (SIGSTOP): ctr task ls answers, and SIGKILL ends the task and its VMM within $((t1 - t0)) ms"

$C run -d $RT "$IMG" c2 sleep 600 >/dev/null
vmm=$(cat "$TASKS/c2/vmm.pid")
c2_id=$(cat "$TASKS/c2/jail.id")
c2_cg=$(python3 -c "import json; print(json.load(open('$TASKS/c2/config.json'))['linux']['cgroupsPath'])")
kill -9 "$(pgrep -f "containerd-shim-kiln-v2 .*-address $SOCK.* -id c2 ")"
for _ in $(seq 100); do
	[ -z "$($C task ls -q | grep -x c2)" ] && break
	sleep 0.05
done
[ -z "$($C task ls -q | grep -x c2)" ] && ! ps -o stat= -p "$vmm" | grep -qv Z
# containerd runs the shim's delete as it forgets the task: give it 5 s
for _ in $(seq 100); do
	[ ! -e "/run/kiln-shim/jail/$c2_id" ] && break
	sleep 0.05
done
[ -z "$($C task ls -q | grep -x c2)" ] && ! ps -o stat= -p "$vmm" | grep -qv Z &&
	[ -n "$c2_id" ] && [ ! -e "/run/kiln-shim/jail/$c2_id" ] &&
	[ -z "$(find /sys/fs/cgroup -maxdepth 8 -type d -name "vmm-$c2_id" 2>/dev/null)" ] &&
	[ -n "$c2_cg" ] && none_left "$c2_cg"
check $? "a shim that dies: containerd cleans up with the shim's delete: its VM, its jail lock file and cgroup leaves (vmm-$c2_id), its cgroup ($c2_cg) are gone"
$C container rm c2 >/dev/null 2>&1

# ---- containerd restarts under a running task: it finds the shim again
$C run -d $RT "$IMG" rs1 sleep 600 >/dev/null
ctrd_stop
ctrd_start
[ "$($C task ls | awk '$1 == "rs1" {print $3}')" = RUNNING ] &&
	[ "$($C task exec --exec-id e1 rs1 echo again 2>&1)" = again ]
check $? "after containerd restarts, the running task is there and takes execs"
$C task kill -s SIGKILL rs1 && sleep 0.3 && $C task delete rs1 >/dev/null && $C container rm rs1
check $? "and it is killed and deleted as before"

# ---- nothing left behind by this run's shims
sleep 0.5
left=$(ctrd_leftovers)
[ -z "$left" ]
check $? "nothing is left behind: ${left:-no jail lock file, cgroup leaf, rootfs mount or bundle} of this run's containers"

grep -q "level=error" "$T/containerd.log" && grep "level=error" "$T/containerd.log" | head -5 | sed 's/^/# /'
echo
echo "$PASS passed, $FAIL failed"
[ $FAIL = 0 ]
