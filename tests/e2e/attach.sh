# shellcheck shell=bash
# kilnd end-to-end tests of kiln's own processes across a pause: kiln exec
# and kiln shell still attached when their sandbox pauses are detached, not
# ended, and kiln attach takes them up again (sourced by run.sh, whose
# helpers and variables they use). With the fake VMM a restored "VM" starts
# its agent afresh, so the processes are gone after a resume and the tests
# check that this is said clearly; on real VMs they check that the
# processes go on.

# shellcheck disable=SC2034 # run.sh runs them
ATTACH_TESTS="t_attach_exec t_attach_run t_attach_pty t_attach_refused t_attach_hangup t_attach_restart
	t_envd_restart t_starting_pause t_starting_restart t_envd_starting_pause t_envd_starting_restart"

# attach_raw ID PID [curl args]: the attach route's status, body in $T/body
attach_raw() {
	local id=$1 pid=$2
	shift 2
	curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -H 'Upgrade: websocket' \
		-H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
		-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$@" \
		"http://k/sandboxes/$id/processes/$pid/attach"
}

# the pid that kiln's "detached" line in FILE names
detached_pid() {
	sed -n 's/.*kiln attach [a-z0-9]* \([0-9]*\).*/\1/p' "$1" | head -1
}

# the pid of the (first) process GET .../processes lists, once there is one
listed_pid() {
	local pid
	for _ in $(seq 50); do
		api GET "/sandboxes/$1/processes" >/dev/null
		pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/body")
		[ -n "$pid" ] && { echo "$pid"; return; }
		sleep 0.1
	done
}

# A counter started by kiln exec outlives a pause: the exec says where it
# went, the listing has it detached, kiln attach replays its output and
# gets its exit status.
t_attach_exec() {
	local id rc pid st
	id=$("$KILN" create) || { not_ok "create for attach"; return; }
	# shellcheck disable=SC2016 # the guest's shell expands these
	"$KILN" exec "$id" -- sh -c 'i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo tick$i;
		echo err$i >&2; sleep 0.1; done; exit 7' >"$T/ao" 2>"$T/ae" &
	local ep=$!
	for _ in $(seq 50); do grep -q tick3 "$T/ao" && break; sleep 0.1; done
	st=$(api GET "/sandboxes/$id/processes")
	[ "$st" = 200 ] && grep -q '"api":"kiln","kind":"exec","cmd":"sh -c i=0;' "$T/body" &&
		grep -q '"attached":true' "$T/body"
	check $? "GET .../processes lists the running exec, attached ($(cat "$T/body"))"
	"$KILN" pause "$id" >/dev/null
	wait $ep
	rc=$?
	pid=$(detached_pid "$T/ae")
	[ $rc = 125 ] && [ -n "$pid" ] && grep -q "sandbox $id was paused: the command (pid $pid) goes on detached" "$T/ae"
	check $? "kiln exec still attached at a pause says the command goes on, and how to attach (rc $rc: $(tail -1 "$T/ae"))"
	st=$(api GET "/sandboxes/$id/processes")
	[ "$st" = 200 ] && grep -q "\"pid\":$pid,\"api\":\"kiln\",\"kind\":\"exec\"" "$T/body" &&
		grep -q '"attached":false' "$T/body" && [ "$(sb_field "$id" state)" = paused ]
	check $? "the paused sandbox lists it detached (and the listing does not resume it)"
	if [ $FAKE = 0 ]; then
		timeout --preserve-status -s INT 1.5 "$KILN" attach "$id" "$pid" >"$T/ao1" 2>"$T/ae1"
		rc=$?
		st=$(api GET "/sandboxes/$id/processes")
		[ $rc = 125 ] && grep -q "left process $pid; it goes on (kiln attach $id $pid)" "$T/ae1" &&
			grep -q "\"pid\":$pid,.*\"attached\":false" "$T/body"
		check $? "Ctrl-C on kiln attach leaves the command detached again (rc $rc: $(tail -1 "$T/ae1"))"
	fi
	"$KILN" attach "$id" "$pid" >"$T/ao2" 2>"$T/ae2"
	rc=$?
	if [ $FAKE = 1 ]; then
		[ $rc = 125 ] && grep -q "process $pid of sandbox $id is gone" "$T/ae2"
		check $? "fake VMM: the process did not survive, and kiln attach says so ($(cat "$T/ae2"))"
		st=$(api GET "/sandboxes/$id/processes")
		! grep -q "\"pid\":$pid" "$T/body"
		check $? "fake VMM: and it leaves the listing"
		"$KILN" rm "$id"
		return
	fi
	[ $rc = 7 ] && grep -q '^tick40$' "$T/ao2" && grep -q '^err40$' "$T/ae2" && ! grep -q err "$T/ao2"
	check $? "kiln attach gets the rest of its output, stdout and stderr apart, and its exit status 7 (rc $rc)"
	local last first
	last=$(grep -o 'tick[0-9]*' "$T/ao" | tail -1 | tr -d tick)
	first=$(grep -o 'tick[0-9]*' "$T/ao1" | head -1 | tr -d tick)
	[ -n "$first" ] && [ -n "$last" ] && [ "$first" -le $((last + 1)) ]
	check $? "the output kept while detached is replayed: attach begins at tick$first, the exec ended at tick$last"
	st=$(api GET "/sandboxes/$id/processes")
	[ "$st" = 200 ] && ! grep -q "\"pid\":$pid" "$T/body"
	check $? "once its exit was reported it leaves the listing"
	# a finished process that nobody attached to reports its exit later
	"$KILN" exec "$id" -- sh -c 'sleep 1; echo done-late; exit 4' >/dev/null 2>"$T/ae" &
	ep=$!
	sleep 0.5
	"$KILN" pause "$id" >/dev/null
	wait $ep
	pid=$(detached_pid "$T/ae")
	"$KILN" resume "$id" >/dev/null
	sleep 1.5
	out=$("$KILN" attach "$id" "$pid" 2>&1)
	rc=$?
	[ $rc = 4 ] && grep -q done-late <<<"$out"
	check $? "a detached process that ended meanwhile gives its output and status 4 to attach (rc $rc)"
	"$KILN" rm "$id"
}

# kiln run whose sandbox someone pauses keeps the sandbox for the command.
t_attach_run() {
	local id rc before
	before=$("$KILN" ls -q)
	"$KILN" run -- sh -c 'sleep 2; echo late' >/dev/null 2>"$T/re" &
	local rp=$!
	for _ in $(seq 50); do
		id=$(comm -13 <(sort <<<"$before") <("$KILN" ls -q | sort) | head -1)
		[ -n "$id" ] && [ "$(sb_field "$id" state)" = running ] &&
			grep -q '"pid"' <(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$id/processes") && break
		sleep 0.1
	done
	"$KILN" pause "$id" >/dev/null
	wait $rp
	rc=$?
	[ $rc = 125 ] && grep -q "sandbox $id is kept for it (kiln rm $id when done)" "$T/re" &&
		[ "$(sb_field "$id" state)" = paused ]
	check $? "kiln run whose sandbox is paused keeps it, and says so (rc $rc)"
	"$KILN" rm "$id"
}

# A shell on a terminal survives a pause with its state; attach gives it
# our input and its exit status.
t_attach_pty() {
	local id rc pid out
	id=$("$KILN" create) || { not_ok "create for pty attach"; return; }
	rm -f "$T/fifo"
	mkfifo "$T/fifo"
	"$KILN" shell "$id" <"$T/fifo" >"$T/so" 2>&1 &
	local sp=$!
	exec 7>"$T/fifo"
	# shellcheck disable=SC2016 # the guest's shell expands these
	echo 'X=before-$((6*7)); echo ready' >&7
	for _ in $(seq 50); do grep -q '^ready' "$T/so" && break; sleep 0.1; done
	"$KILN" pause "$id" >/dev/null
	wait $sp
	rc=$?
	exec 7>&-
	pid=$(detached_pid "$T/so")
	[ $rc = 125 ] && [ -n "$pid" ] && grep -q "was paused: the command (pid $pid) goes on detached" "$T/so"
	check $? "kiln shell at a pause says the shell goes on detached (rc $rc)"
	# shellcheck disable=SC2016
	printf 'echo got-$X\nexit 3\n' | "$KILN" attach "$id" "$pid" >"$T/so2" 2>&1
	rc=${PIPESTATUS[1]}
	out=$(tr -d '\r' <"$T/so2")
	if [ $FAKE = 1 ]; then
		[ "$rc" = 125 ] && grep -q "is gone" <<<"$out"
		check $? "fake VMM: the shell did not survive, and kiln attach says so"
		"$KILN" rm "$id"
		return
	fi
	[ "$rc" = 3 ] && grep -q '^got-before-42' <<<"$out"
	check $? "kiln attach reaches the same shell (its variable is there), with our input, exit 3 (rc $rc)"
	"$KILN" rm "$id"
}

# What the attach route refuses, and why.
t_attach_refused() {
	local id id2 st pid
	id=$("$KILN" create) || { not_ok "create for attach errors"; return; }
	id2=$("$KILN" create) || { not_ok "create for attach errors"; return; }
	"$KILN" attach "$id" 4242 2>"$T/err"
	[ $? = 125 ] && grep -q "no process 4242 of kiln's exec or pty in sandbox $id" "$T/err"
	check $? "kiln attach to an unknown pid: a clear error ($(cat "$T/err"))"
	st=$(attach_raw "$id" 4242)
	[ "$st" = 404 ] && grep -q "GET /sandboxes/$id/processes lists them" "$T/body"
	check $? "the route answers 404 for an unknown pid"
	for p in 99999999999999999999 2147483648 0 -1 007 1e3 abc; do
		st=$(attach_raw "$id" "$p")
		[ "$st" = 400 ] && grep -q "is not a process id" "$T/body" || break
	done
	check $? "a pid that is not 1..2^31-1 in decimal is 400 (last: $p, $st)"
	st=$(attach_raw "$id" "$(printf '9%.0s' $(seq 3000))")
	[ "$st" = 400 ] || [ "$st" = 414 ]
	check $? "a 3000-digit pid is refused ($st)"
	"$KILN" exec "$id" -- sleep 20 >/dev/null 2>&1 &
	local ep=$!
	pid=$(listed_pid "$id")
	st=$(attach_raw "$id2" "$pid")
	[ -n "$pid" ] && [ "$st" = 404 ] && grep -q "no process $pid of kiln's exec or pty in sandbox $id2" "$T/body"
	check $? "another sandbox's pid is unknown here (404)"
	st=$(attach_raw "$id" "$pid")
	[ "$st" = 409 ] && grep -q "attached to another client" "$T/body"
	check $? "a process a client holds cannot be attached by another (409)"
	mkdir -p "$T/envd"
	(T=$T/envd envd_start "$id" 'sleep 20' >/dev/null) &
	local envd_curl=$! epid=
	for _ in $(seq 50); do
		api GET "/sandboxes/$id/processes" >/dev/null
		epid=$(sed -n 's/.*"pid":\([0-9]*\),"api":"envd".*/\1/p' "$T/body")
		[ -n "$epid" ] && break
		sleep 0.1
	done
	st=$(attach_raw "$id" "$epid")
	[ -n "$epid" ] && [ "$st" = 409 ] && grep -q "was started through envd: attach to it with the SDK's commands.connect($epid)" "$T/body"
	check $? "the listing has envd's process too, and attach to it says how to reach it (409)"
	kill $envd_curl 2>/dev/null
	wait $envd_curl 2>/dev/null
	st=$(api GET "/sandboxes/$id/processes/$pid/attach")
	[ "$st" = 426 ]
	check $? "attach without a WebSocket upgrade is 426"
	st=$(api POST "/sandboxes/$id/processes/$pid/attach")
	[ "$st" = 405 ]
	check $? "POST to attach is 405"
	st=$(api GET "/sandboxes/nosuchsandbox/processes")
	[ "$st" = 404 ]
	check $? "processes of an unknown sandbox: 404"
	kill $ep 2>/dev/null
	wait $ep 2>/dev/null
	"$KILN" rm "$id" "$id2"
}

# A client that goes away without a pause ends its command (as Ctrl-C on
# a terminal's command would); one attached later leaves it detached.
t_attach_hangup() {
	local id pid st
	id=$("$KILN" create) || { not_ok "create for hangup"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G; echo \$\$ >$G/hup.pid; exec sleep 30" >/dev/null 2>&1 &
	local ep=$!
	pid=$(listed_pid "$id")
	for _ in $(seq 50); do
		"$KILN" exec "$id" -- test -s "$G/hup.pid" && break
		sleep 0.1
	done
	kill -INT $ep
	wait $ep
	sleep 0.5
	st=$(api GET "/sandboxes/$id/processes")
	! grep -q "\"pid\":$pid" "$T/body" &&
		! "$KILN" exec "$id" -- sh -c "kill -0 \$(cat $G/hup.pid)" 2>/dev/null
	check $? "Ctrl-C on kiln exec ends the command in the sandbox, and it leaves the listing"
	"$KILN" rm "$id"
}

# kilnd killed (SIGKILL) and started again under a running command: the
# command goes on in the sandbox, the new kilnd lists it detached, and
# kiln attach takes it up with its output and exit status; a clean stop
# (SIGTERM) keeps the listing as well.
t_attach_restart() {
	local id pid rc st sig
	id=$("$KILN" create) || { not_ok "create for restart attach"; return; }
	for sig in KILL TERM; do
		# shellcheck disable=SC2016 # the guest's shell expands these
		"$KILN" exec "$id" -- sh -c 'i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo tick$i;
			sleep 0.1; done; exit 5' >"$T/ro" 2>"$T/re" &
		local ep=$!
		for _ in $(seq 50); do grep -q tick3 "$T/ro" && break; sleep 0.1; done
		pid=$(listed_pid "$id")
		kill -$sig "$KILND_PID"
		wait "$KILND_PID" 2>/dev/null
		KILND_PID=
		wait $ep
		rc=$?
		[ $rc = 125 ] && grep -q "the command (pid $pid) goes on in sandbox $id; once kilnd is back, take it up again with: kiln attach $id $pid" "$T/re"
		check $? "kiln exec whose kilnd goes away (SIG$sig) says the command goes on, and how to attach (rc $rc: $(tail -1 "$T/re"))"
		start_kilnd
		st=$(api GET "/sandboxes/$id/processes")
		[ "$st" = 200 ] && [ -n "$pid" ] &&
			grep -q "\"pid\":$pid,\"api\":\"kiln\",\"kind\":\"exec\",\"cmd\":\"sh -c i=0;" "$T/body" &&
			grep -q '"attached":false' "$T/body"
		check $? "after SIG$sig and a restart of kilnd, the running exec is listed, detached ($(head -c 300 "$T/body"))"
		"$KILN" attach "$id" "$pid" >"$T/ro2" 2>"$T/re2"
		rc=$?
		[ $rc = 5 ] && grep -q '^tick30$' "$T/ro2"
		check $? "kiln attach after the restart gets the rest of its output and its exit status 5 (rc $rc: $(tail -1 "$T/re2"))"
	done
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	printf '{"kiln":[{"pid":0,"pty":false,"cmd":"x","startedMs":1},{"pid":7,"pty":"no","cmd":"y","startedMs":1},' >"$DATA/sandboxes/$id/procs.json"
	printf '{"pid":4242,"pty":false,"cmd":"kept","startedMs":1}],"envd":[{"pid":9,"pty":false,"stdin":true,"config":{"cmd":7}}]}' >>"$DATA/sandboxes/$id/procs.json"
	start_kilnd
	st=$(api GET "/sandboxes/$id/processes")
	[ "$st" = 200 ] && grep -q '"pid":4242' "$T/body" && ! grep -q '"pid":7,' "$T/body" &&
		grep -q "sandbox $id: 3 entries of .*procs.json skipped" "$T/kilnd.log"
	check $? "bad entries of a process table are skipped with a warning, good ones kept"
	"$KILN" attach "$id" 4242 >/dev/null 2>"$T/re2"
	rc=$?
	st=$(api GET "/sandboxes/$id/processes")
	[ $rc = 125 ] && grep -q "is gone" "$T/re2" && ! grep -q '"pid":4242' "$T/body"
	check $? "a listed process the agent no longer has: attach says it is gone, and it leaves the listing"
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	printf 'not json' >"$DATA/sandboxes/$id/procs.json"
	start_kilnd
	[ "$("$KILN" exec "$id" -- echo fine)" = fine ] &&
		grep -q "sandbox $id: .*procs.json is not a process table" "$T/kilnd.log"
	check $? "a process table that is not JSON is reported and the sandbox works on"
	"$KILN" rm "$id"
}

# An envd process (the SDK's background command) across a kilnd restart:
# listed by the new kilnd's process.List, reached by Connect, ended by
# SendSignal. (Its tag comes back; its environment is not kept on disk.)
t_envd_restart() {
	local id pid st msg
	id=$("$KILN" create) || { not_ok "create for envd restart"; return; }
	msg='{"process":{"cmd":"/bin/sh","args":["-c","while :; do echo tick; sleep 0.05; done"]},"tag":"kept-tag"}'
	envd_envelope "$msg"
	curl -sS --unix-socket "$SOCK" -o /dev/null -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $(sb_token "$id")" -H 'Content-Type: application/connect+json' \
		--data-binary @"$T/envelope" http://k/process.Process/Start 2>/dev/null &
	local sp=$!
	for _ in $(seq 100); do
		envd_unary "$id" process.Process/List '{}' >/dev/null
		pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/body")
		[ -n "$pid" ] && break
		sleep 0.05
	done
	sleep 0.2 # past the table's write
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
	wait $sp 2>/dev/null
	start_kilnd
	st=$(envd_unary "$id" process.Process/List '{}')
	[ "$st" = 200 ] && [ -n "$pid" ] && grep -q "\"pid\":$pid" "$T/body" && grep -q '"tag":"kept-tag"' "$T/body"
	check $? "after kilnd's SIGKILL and restart, process.List has the envd process $pid with its tag ($(head -c 300 "$T/body"))"
	envd_connect_kill "$id" "$pid" "reaches it again and gets its output"
	"$KILN" rm "$id"
}

# ---------------------------------------------------------------- starting
# A pause or a kilnd restart between kilnd's START and the agent's STARTED
# (the agent's test hook KILN_TEST_STARTED_DELAY_MS holds STARTED, the
# command runs meanwhile): the command is listed as starting under its
# START's tag, and once the sandbox runs again (or the new kilnd has it)
# the agent's procs stream turns it into a detached process that kiln
# attach and process.Connect reach. With the fake VMM a resumed "VM" starts
# its agent afresh: then it never started, and leaves the listing.

# the state and pid of the (only) kiln process of sandbox ID, as "STATE PID"
kiln_proc() {
	api GET "/sandboxes/$1/processes" >/dev/null
	python3 -c 'import json,sys
ps=[p for p in json.load(open(sys.argv[1])) if p.get("api")=="kiln"]
print(" ".join("%s %s %s" % (p.get("state","started"), p["pid"], p.get("attached")) for p in ps) or "none")' "$T/body"
}

# wait until kiln_proc ID matches the pattern PAT (5 s at most)
wait_kiln_proc() {
	for _ in $(seq 50); do
		case $(kiln_proc "$1") in $2) return 0 ;; esac
		sleep 0.1
	done
	return 1
}

t_starting_pause() {
	local id rc pid
	id=$("$KILN" create) || { not_ok "create for starting"; return; }
	"$KILN" exec -e KILN_TEST_STARTED_DELAY_MS=4000 "$id" -- sh -c 'sleep 1.5; echo late-out; exit 6' \
		>"$T/so" 2>"$T/se" &
	local ep=$!
	wait_kiln_proc "$id" 'starting None True'
	check $? "an exec whose STARTED is held is listed as starting, with no pid yet ($(kiln_proc "$id"))"
	sleep 0.3
	"$KILN" pause "$id" >/dev/null
	wait $ep
	rc=$?
	[ $rc != 0 ] && grep -q "sandbox $id was paused while the command was starting: if it started, it goes on detached" "$T/se"
	check $? "kiln exec caught starting by a pause says so, and where to find it (rc $rc: $(tail -1 "$T/se"))"
	[ "$(kiln_proc "$id")" = "starting None False" ] && [ "$(sb_field "$id" state)" = paused ]
	check $? "the paused sandbox lists it as starting, detached ($(kiln_proc "$id"))"
	"$KILN" resume "$id" >/dev/null
	if [ $FAKE = 1 ]; then
		[ "$(kiln_proc "$id")" = none ]
		check $? "fake VMM: the resumed agent never ran it, and it leaves the listing"
		"$KILN" rm "$id"
		return
	fi
	read -r _ pid _ <<<"$(kiln_proc "$id")"
	[[ $pid =~ ^[0-9]+$ ]] && [ "$(kiln_proc "$id")" = "started $pid False" ]
	check $? "after the resume it is listed with its pid, detached ($(kiln_proc "$id"))"
	"$KILN" attach "$id" "$pid" >"$T/so2" 2>"$T/se2"
	rc=$?
	[ $rc = 6 ] && grep -q '^late-out$' "$T/so2"
	check $? "kiln attach takes it up: its output and exit status 6 (rc $rc: $(tail -1 "$T/se2"))"
	[ "$(kiln_proc "$id")" = none ]
	check $? "and then it leaves the listing"
	"$KILN" rm "$id"
}

t_starting_restart() {
	local id rc pid
	id=$("$KILN" create) || { not_ok "create for starting restart"; return; }
	"$KILN" exec -e KILN_TEST_STARTED_DELAY_MS=4000 "$id" -- sh -c 'sleep 1.5; echo late-out; exit 6' \
		>/dev/null 2>&1 &
	local ep=$!
	wait_kiln_proc "$id" 'starting None True'
	sleep 0.3 # past the table's write
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
	wait $ep
	start_kilnd
	wait_kiln_proc "$id" 'started * False'
	check $? "after kilnd's SIGKILL inside the window, the new kilnd lists the exec with its pid, detached ($(kiln_proc "$id"))"
	read -r _ pid _ <<<"$(kiln_proc "$id")"
	"$KILN" attach "$id" "$pid" >"$T/so2" 2>"$T/se2"
	rc=$?
	[ $rc = 6 ] && grep -q '^late-out$' "$T/so2"
	check $? "kiln attach after the restart gets its output and exit status 6 (rc $rc: $(tail -1 "$T/se2"))"
	"$KILN" rm "$id"
}

# envd_start_held ID TAG: process.Process/Start of a counter whose STARTED
# the agent holds 4 s, in the background (its stream in $T/held)
envd_start_held() {
	local msg
	msg='{"process":{"cmd":"/bin/sh","args":["-c","while :; do echo tick; sleep 0.05; done"],"envs":{"KILN_TEST_STARTED_DELAY_MS":"4000"}},"tag":"'$2'"}'
	envd_envelope "$msg"
	curl -sS --unix-socket "$SOCK" -o "$T/held" -H "E2b-Sandbox-Id: $1" \
		-H "X-Access-Token: $(sb_token "$1")" -H 'Content-Type: application/connect+json' \
		--data-binary @"$T/envelope" http://k/process.Process/Start 2>/dev/null &
}

# the pid process.List has for TAG in sandbox ID, waiting up to 8 s
envd_tag_pid() {
	local pid
	for _ in $(seq 80); do
		envd_unary "$1" process.Process/List '{}' >/dev/null
		pid=$(python3 -c 'import json,sys
for p in json.load(open(sys.argv[1])).get("processes", []):
    if p.get("tag") == sys.argv[2]: print(p["pid"])' "$T/body" "$2" 2>/dev/null)
		[ -n "$pid" ] && { echo "$pid"; return; }
		sleep 0.1
	done
}

t_envd_starting_pause() {
	local id st pid
	id=$("$KILN" create) || { not_ok "create for envd starting"; return; }
	envd_start_held "$id" held-tag
	local sp=$!
	sleep 1
	envd_unary "$id" process.Process/List '{}' >/dev/null
	! grep -q held-tag "$T/body"
	check $? "an envd process whose STARTED is held is not in process.List yet"
	"$KILN" pause "$id" >/dev/null
	wait $sp
	grep -q "paused while the process was starting" "$T/held"
	check $? "its Start stream ends saying the pause caught it starting ($(tr -c '[:print:]' . <"$T/held" | head -c 200))"
	"$KILN" resume "$id" >/dev/null
	if [ $FAKE = 1 ]; then
		st=$(envd_unary "$id" process.Process/List '{}')
		[ "$st" = 200 ] && ! grep -q held-tag "$T/body"
		check $? "fake VMM: the resumed agent never ran it, and process.List does not have it"
		"$KILN" rm "$id"
		return
	fi
	pid=$(envd_tag_pid "$id" held-tag)
	[ -n "$pid" ]
	check $? "after the resume process.List has it with its tag and pid $pid"
	envd_connect_kill "$id" "$pid" "reaches the process caught starting by the pause"
	"$KILN" rm "$id"
}

t_envd_starting_restart() {
	local id pid
	id=$("$KILN" create) || { not_ok "create for envd starting restart"; return; }
	envd_start_held "$id" held-tag2
	local sp=$!
	sleep 1
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
	wait $sp
	start_kilnd
	pid=$(envd_tag_pid "$id" held-tag2)
	[ -n "$pid" ]
	check $? "after kilnd's SIGKILL inside the window, process.List of the new kilnd has it (pid $pid)"
	envd_connect_kill "$id" "$pid" "reaches the process caught starting by the restart"
	"$KILN" rm "$id"
}
