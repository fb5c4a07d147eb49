#!/bin/bash
# kilnd with snapshots, on real VMs: create -> first exec of a cold boot
# against a clone of a template and against a clone taken from the
# template's warm pool (started and primed ahead); the first pandas result of a cold boot
# against a clone of a template whose warm-up left an interpreter with
# pandas imported; the code interpreter's runCode, first and warm; pause
# and resume through kilnd; fork. Medians of
# KILND_SNAP_RUNS (default 10) runs, times measured by curl (connect to
# last byte), so the client's own start-up is not counted.
#
#   bash tools/bench/kilnd_snap_bench.sh
#
# Environment: KILND_SNAP_RUNS, KILND_BENCH_KERNEL, KILND_BENCH_INITRD,
# KILND_BENCH_IMAGES (default build/images; the python figures need
# base.erofs from make images), KILND_BENCH_KILND (default build/bin/kilnd:
# another build to compare), KILND_SNAP_ONLY=pause (only pause, resume and
# fork of an idle busybox and base sandbox: A/B runs of kilnd's pause).
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=${KILND_BENCH_KILND:-build/bin/kilnd}
ONLY=${KILND_SNAP_ONLY:-}
VMM=build/bin/kiln-vmm
KERNEL=${KILND_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-build/initramfs/agent.cpio}
IMAGES=${KILND_BENCH_IMAGES:-build/images}
RUNS=${KILND_SNAP_RUNS:-10}
[ "$RUNS" -ge 3 ] || RUNS=3

for f in "$KILND" "$VMM" "$KERNEL" "$INITRD"; do
	[ -e "$f" ] || { echo "kilnd_snap_bench: missing $f (make)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "kilnd_snap_bench: skipped: /dev/kvm not available"; exit 0; }

# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images "$IMAGES"

# post PATH BODY: seconds (curl's %{time_total}); the answer in $BODY
post() {
	curl -s --unix-socket "$SOCK" -o "$BODY" -w '%{time_total}\n' -d "$2" "http://k$1"
}
del() {
	curl -s --unix-socket "$SOCK" -X DELETE -o /dev/null "http://k/sandboxes/$1"
}
new_id() {
	sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$BODY"
}
fail() {
	echo "kilnd_snap_bench: $*: $(head -c 500 "$BODY")"
	exit 1
}
# wait_pool NAME N: until the template's pool has N clones ready again
wait_pool() {
	for _ in $(seq 400); do
		curl -s --unix-socket "$SOCK" "http://k/templates/$1" | grep -q "\"poolReady\":$2[,}]" &&
			return 0
		sleep 0.025
	done
	fail "the pool of $1 did not refill"
}

# create_exec BODY EXEC_BODY N [POOL_TEMPLATE]: create -> end of the first
# exec, N times (with a pool: each once the pool is full again, as a
# steady trickle of creates finds it)
create_exec() {
	local t1 t2 id
	: >"$T/times"
	for _ in $(seq "$3"); do
		[ -n "${4:-}" ] && wait_pool "$4" 2
		t1=$(post /sandboxes "$1")
		id=$(new_id)
		[ -n "$id" ] || fail "create $1"
		t2=$(post "/sandboxes/$id/exec" "$2")
		grep -q '"exitCode":0' "$BODY" || fail "exec $2 in a sandbox of $1"
		del "$id"
		awk -v a="$t1" -v b="$t2" 'BEGIN { print a + b }' >>"$T/times"
	done
}

template() { # NAME IMAGE WARMUP_JSON [POOL]
	post /templates "{\"name\":\"$1\",\"image\":\"$2\",\"warmup\":$3,\"pool\":${4:-0}}" >/dev/null
	grep -q '"snapshotBytes"' "$BODY" || fail "template $1"
}

TRUE='{"cmd":["true"]}'
echo "kilnd_snap_bench: VMM $VMM (kilnd, real VMs; medians of $RUNS)"
have_base=0
[ -f "$IMAGES/base.erofs" ] && have_base=1
[ "$ONLY" = pause ] && have_base=0
[ "$ONLY" = pause ] || {
template bb busybox null
create_exec '{}' "$TRUE" "$RUNS"
line "create -> first exec, busybox, cold boot" "$T/times"
create_exec '{"templateID":"bb"}' "$TRUE" "$RUNS"
line "create -> first exec, busybox, template clone" "$T/times"
template bbpool busybox null 2
create_exec '{"templateID":"bbpool"}' "$TRUE" "$RUNS" bbpool
line "create -> first exec, busybox, warm pool" "$T/times"
curl -s --unix-socket "$SOCK" -X DELETE -o /dev/null http://k/templates/bbpool
}

if [ $have_base = 1 ]; then
	template py base '["python3","-c","import numpy, pandas"]'
	create_exec '{"image":"base"}' "$TRUE" "$RUNS"
	line "create -> first exec, base, cold boot" "$T/times"
	create_exec '{"templateID":"py"}' "$TRUE" "$RUNS"
	line "create -> first exec, base, template clone" "$T/times"
	template pypool base '["python3","-c","import numpy, pandas"]' 2
	create_exec '{"templateID":"pypool"}' "$TRUE" "$RUNS" pypool
	line "create -> first exec, base, warm pool" "$T/times"
	curl -s --unix-socket "$SOCK" -X DELETE -o /dev/null http://k/templates/pypool

	# A warm interpreter: the template's warm-up leaves python3 running with
	# pandas imported; it runs what appears in /tmp/cmd (a code interpreter).
	repl='import os, time, numpy, pandas
open("/tmp/ready", "w").close()
while True:
    if os.path.exists("/tmp/cmd"):
        exec(open("/tmp/cmd").read())
        os.unlink("/tmp/cmd")
    time.sleep(0.001)'
	warm=$(python3 -c 'import json, sys; print(json.dumps(["sh", "-c",
		"python3 -c \"$0\" </dev/null >/dev/null 2>&1 & while [ ! -e /tmp/ready ]; do sleep 0.02; done",
		sys.argv[1]]))' "$repl")
	template pyrepl base "$warm"
	code='print(pandas.DataFrame({"a": [1, 2, 3]}).a.sum())'
	cold=$(python3 -c 'import json, sys; print(json.dumps({"cmd": ["python3", "-c",
		"import numpy, pandas; " + sys.argv[1]]}))' "$code")
	ask=$(python3 -c 'import json, sys; print(json.dumps({"cmd": ["sh", "-c",
		"echo \"$0\" >/tmp/cmd.n && mv /tmp/cmd.n /tmp/cmd; while [ ! -s /tmp/out ]; do sleep 0.002; done"
		, "import sys; sys.stdout = open(\"/tmp/out.n\", \"w\"); " + sys.argv[1]
		+ "; sys.stdout.close(); os.rename(\"/tmp/out.n\", \"/tmp/out\")"]}))' "$code")
	create_exec '{"image":"base"}' "$cold" 3
	line "first pandas result, base, cold boot" "$T/times"
	create_exec '{"templateID":"pyrepl"}' "$ask" "$RUNS"
	line "first pandas result, warm interpreter clone" "$T/times"

	# The code interpreter (E2B's port 49999, control/envd/codeint.c): a fresh
	# sandbox's first runCode starts its Python process; later ones reuse it.
	run_code() { # ID CODE_JSON
		curl -s --unix-socket "$SOCK" -o "$BODY" -w '%{time_total}\n' \
			-H "E2b-Sandbox-Id: $1" -H 'E2b-Sandbox-Port: 49999' -d "$2" http://k/execute
	}
	: >"$T/times"
	for i in $(seq "$RUNS"); do
		t1=$(post /sandboxes '{"image":"base"}')
		id=$(new_id)
		[ -n "$id" ] || fail "create base"
		t2=$(run_code "$id" '{"code":"1 + 1"}')
		grep -q '"text": *"2"' "$BODY" || fail "runCode in $id"
		awk -v a="$t1" -v b="$t2" 'BEGIN { print a + b }' >>"$T/times"
		[ "$i" = "$RUNS" ] || del "$id" # the last one stays for the next figure
	done
	line "create -> first runCode (1 + 1), base" "$T/times"
	: >"$T/times"
	for _ in $(seq $((RUNS * 5))); do
		run_code "$id" '{"code":"1 + 1"}' >>"$T/times"
		grep -q '"text": *"2"' "$BODY" || fail "runCode in $id"
	done
	line "runCode (1 + 1) round trip, warm context" "$T/times"
	del "$id"
fi

# pause_resume NAME CREATE_BODY [EXEC_BODY [GAP_S]]: pause and resume one
# sandbox RUNS times (EXEC first; GAP_S between a resume and the pause)
pause_resume() {
	local id t
	post /sandboxes "$2" >/dev/null
	id=$(new_id)
	[ -n "$id" ] || fail "create $2"
	post "/sandboxes/$id/exec" "${3:-$TRUE}" >/dev/null
	grep -q '"exitCode":0' "$BODY" || fail "exec ${3:-$TRUE}"
	: >"$T/pause"
	: >"$T/resume"
	for _ in $(seq "$RUNS"); do
		t=$(curl -s --unix-socket "$SOCK" -o "$BODY" -w '%{http_code} %{time_total}' -X POST \
			"http://k/sandboxes/$id/pause")
		[ "${t% *}" = 204 ] || fail "pause"
		echo "${t#* }" >>"$T/pause"
		bytes=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$id" |
			sed -n 's/.*"snapshotBytes":\([0-9]*\).*/\1/p')
		post "/sandboxes/$id/resume" '{}' >>"$T/resume"
		grep -q '"state":"running"' "$BODY" || fail "resume"
		sleep "${4:-0}"
	done
	line "pause, $1" "$T/pause"
	# the VMM's own time for the snapshot (kilnd logs it), the first pause
	# (a new file) left out: the later ones append to the file resumed from
	sed -n "s/.*sandbox $id: snapshot written (.* in \([0-9.]*\) ms), stopping.*/\1/p" \
		"$T/kilnd.log" | tail -n +2 | awk '{ print $1 / 1000 }' >"$T/snapms"
	printf '%-44s %s (%s appended)\n' "  its snapshot (the VMM's, later pauses)" \
		"$(stats <"$T/snapms")" "$(grep -c "sandbox $id: snapshot written (.* appended" "$T/kilnd.log")"
	printf '%-44s %s (snapshot %.1f MiB)\n' "resume, $1" "$(stats <"$T/resume")" \
		"$(awk -v b="${bytes:-0}" 'BEGIN { print b / 1048576 }')"
	: >"$T/fork"
	for _ in $(seq "$RUNS"); do
		post "/sandboxes/$id/fork" '{"count":1}' >>"$T/fork"
		fid=$(new_id)
		[ -n "$fid" ] || fail "fork"
		del "$fid"
	done
	line "fork (1 clone), $1" "$T/fork"
	del "$id"
}
pause_resume "busybox, idle" '{}'
[ $have_base = 1 ] && pause_resume "pandas interpreter" '{"templateID":"pyrepl"}'
[ "$ONLY" = pause ] && [ -f "$IMAGES/base.erofs" ] && pause_resume "base image, idle" '{"image":"base"}'
# 40 MiB of random bytes in the guest's tmpfs, paused 0.3 s after each resume
[ "$ONLY" = pause ] && pause_resume "busybox, 40 MiB used" '{}' \
	'{"cmd":["sh","-c","head -c 41943040 /dev/urandom >/tmp/fill"]}' 0.3
echo "(pause: snapshot written and VMM gone; resume: $(sed -n 's/.*, \([a-z]*\) resumes).*/\1/p' "$T/kilnd.log" | head -1) restore until the agent answers)"
