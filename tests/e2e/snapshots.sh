# shellcheck shell=bash
# kilnd end-to-end tests of images, pause and resume, templates and forks
# (sourced by run.sh, whose helpers and variables they use). With the fake
# VMM the guest's files are the host's and a restored "VM" starts its agent
# afresh, so what survives a pause is checked for files only; on real VMs
# also for running processes and a Python interpreter's memory.

# shellcheck disable=SC2034 # run.sh runs them
SNAPSHOT_TESTS="t_images t_pause t_pause_races t_pause_restart t_pause_kill t_pause_python t_auto_resume
t_auto_resume_races t_auto_resume_errors t_envd_keep t_snapshot_inspect t_templates t_pool t_run_template t_fork t_snap_errors t_auto_pause
t_store_upgrade"

# Real VMs: kilnd's images are links to KILN_E2E_IMAGES plus a copy of
# minimal that a test changes under a paused sandbox.
if [ $FAKE = 1 ]; then
	echo "a third one" >"$IMAGES/changing.erofs"
else
	REAL_IMAGES=$IMAGES
	IMAGES=$T/images
	mkdir -p "$IMAGES"
	for f in "$REAL_IMAGES"/*.erofs; do
		[ -e "$f" ] && ln -s "$(readlink -f "$f")" "$IMAGES/$(basename "$f")"
	done
	[ -f "$REAL_IMAGES/minimal.erofs" ] && cp "$REAL_IMAGES/minimal.erofs" "$IMAGES/changing.erofs"
fi

# The base image (python3) on real VMs.
have_base() {
	[ $FAKE = 0 ] && [ -f "$IMAGES/base.erofs" ]
}

sb_field() { # ID FIELD: a number or string field of GET /sandboxes/ID
	curl -s --unix-socket "$SOCK" "http://k/sandboxes/$1" |
		sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

vmm_alive() { # ID: is a VMM working in the sandbox's directory (removed or not)?
	local c
	for c in /proc/[0-9]*/cwd; do
		case $(readlink "$c" 2>/dev/null) in
		"$DATA/sandboxes/$1" | "$DATA/sandboxes/$1 (deleted)") return 0 ;;
		esac
	done
	return 1
}

# median of the numbers on stdin
median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

t_images() {
	local out id st pid
	out=$("$KILN" images)
	grep -q '^busybox ' <<<"$out" && grep -q '^base ' <<<"$out"
	check $? "kiln images lists the built-in image and base"
	id=$("$KILN" create)
	[ "$(sb_field "$id" templateID)" = busybox ]
	check $? "without an image a sandbox boots the built-in busybox"
	"$KILN" rm "$id"
	"$KILN" create --image nope >/dev/null 2>"$T/err"
	[ $? = 1 ] && grep -q "unknown image 'nope'" "$T/err" &&
		grep -q 'busybox (built in), base' "$T/err"
	check $? "an unknown image is refused, naming the known ones ($(cat "$T/err"))"
	# The image's environment (/etc/kiln-env, from its recipe) is every
	# command's; a request's own envVars still win. (A real image's: the
	# fake VMM's agent runs on the host, where pip would install for real.)
	if [ $FAKE = 0 ]; then
		id=$("$KILN" create --image base | tail -n 1)
		[ "$("$KILN" exec "$id" -- sh -c 'echo $MPLBACKEND')" = Agg ] &&
			[ "$("$KILN" exec -e MPLBACKEND=svg "$id" -- sh -c 'echo $MPLBACKEND')" = svg ]
		check $? "commands get the image's environment (MPLBACKEND=Agg in base), below their own"
		# pip installs into the image's Python (no PEP 668 refusal): a package
		# made here, installed without an index.
		"$KILN" exec "$id" -- sh -c 'mkdir -p /tmp/kp/kilnpkg && echo "VALUE = 42" >/tmp/kp/kilnpkg/__init__.py &&
			printf "from setuptools import setup\nsetup(name=\"kilnpkg\", version=\"1.0\", packages=[\"kilnpkg\"])\n" >/tmp/kp/setup.py &&
			cd / && pip install -q --no-index --no-build-isolation /tmp/kp' >"$T/pip" 2>&1
		[ $? = 0 ] && [ "$("$KILN" exec "$id" -- python3 -c 'import kilnpkg; print(kilnpkg.VALUE)')" = 42 ]
		check $? "pip install works in the base image ($(tail -c 300 "$T/pip"))"
		"$KILN" rm "$id"
	fi
	st=$(api POST /sandboxes -d '{"templateID":"nope"}')
	[ "$st" = 400 ] && grep -q "unknown template or image 'nope'" "$T/body"
	check $? "an unknown templateID is 400"
	st=$(api POST /sandboxes -d '{"templateID":"base","image":"base"}')
	[ "$st" = 400 ]
	check $? "templateID and image together are 400"
	st=$(api POST /sandboxes -d '{"image":"../etc"}')
	[ "$st" = 400 ]
	check $? "an image name with a path in it is 400"
	st=$(api GET /images)
	[ "$st" = 200 ] && grep -q '"name":"busybox","builtin":true' "$T/body"
	check $? "GET /images"
	id=$("$KILN" create --image base) || { not_ok "create --image base"; return; }
	pid=$(sb_field "$id" pid)
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--initrd [^ ]*/boot/agent-image.cpio-[0-9a-f]* --image [^ ]*base"
	check $? "a sandbox of an image boots the agent's image initramfs over the image"
	[ "$(sb_field "$id" templateID)" = base ]
	check $? "and reports the image as its template"
	if have_base; then
		[ "$("$KILN" exec "$id" -- python3 -c 'print(6*7)')" = 42 ]
		check $? "python3 of the base image runs (prints 42)"
		[ "$("$KILN" exec "$id" -- sh -c 'test -x /bin/bash && readlink -f /bin/sh')" = /usr/bin/dash ]
		check $? "the image's own /bin shows (bash, dash), not busybox"
	fi
	"$KILN" rm "$id"
}

t_pause() {
	local id pid st c1 c2 i cycles=3
	[ $FAKE = 0 ] && cycles=10
	id=$("$KILN" create) || { not_ok "create for pause"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo before-pause >$G/p1"
	if [ $FAKE = 0 ]; then
		# shellcheck disable=SC2016 # the guest's shell expands these
		"$KILN" exec "$id" -- sh -c '(i=0; while :; do i=$((i+1)); echo $i >/tmp/count;
			sleep 0.05; done) </dev/null >/dev/null 2>&1 & echo $! >/tmp/loop.pid'
		sleep 0.2
	fi
	pid=$(sb_field "$id" pid)
	st=$(api POST "/sandboxes/$id/pause")
	[ "$st" = 204 ] && [ "$(sb_field "$id" state)" = paused ]
	check $? "pause answers 204 and the sandbox is paused"
	! kill -0 "$pid" 2>/dev/null && [ -s "$DATA/sandboxes/$id/snapshot" ]
	check $? "a paused sandbox is a snapshot file and no process"
	"$KILN" ls | grep "$id" | grep -q ' paused '
	check $? "kiln ls shows it paused"
	st=$(api GET /v2/sandboxes)
	grep -q "$id" "$T/body"
	check $? "E2B's list (running and paused by default) has it"
	st=$(api POST "/sandboxes/$id/pause")
	[ "$st" = 409 ]
	check $? "pausing a paused sandbox is 409"
	st=$(api POST "/sandboxes/$id/connect" -d '{"timeout":60}')
	[ "$st" = 201 ] && grep -q '"state":"running"' "$T/body" && grep -q envdAccessToken "$T/body"
	check $? "connect resumes a paused sandbox: 201 with the sandbox"
	# kept for the next pause to append to, where the VMM writes (jailed:
	# its vmm-out, as its own uid's)
	if [ $FAKE = 1 ]; then
		[ -s "$DATA/sandboxes/$id/snapshot" ]
	else
		[ ! -e "$DATA/sandboxes/$id/snapshot" ] && [ -s "$DATA/sandboxes/$id/vmm-out/snapshot" ] &&
			[ "$(stat -c %u "$DATA/sandboxes/$id/vmm-out/snapshot")" = \
				"$(cut -d' ' -f3 "$DATA/sandboxes/$id/run/vmm.pid")" ]
	fi
	check $? "the snapshot is the VMM's once it runs again, for its next pause"
	[ "$("$KILN" exec "$id" -- cat "$G/p1")" = before-pause ]
	check $? "its files survive"
	if [ $FAKE = 0 ]; then
		c1=$("$KILN" exec "$id" -- cat /tmp/count)
		sleep 0.3
		c2=$("$KILN" exec "$id" -- cat /tmp/count)
		# shellcheck disable=SC2016
		[ "$c2" -gt "$c1" ] && "$KILN" exec "$id" -- sh -c 'kill -0 $(cat /tmp/loop.pid)'
		check $? "a running process goes on after the resume (counter $c1 -> $c2)"
	fi
	st=$(api POST "/sandboxes/$id/connect")
	[ "$st" = 200 ]
	check $? "connect to a running sandbox is 200"
	st=$(api POST "/sandboxes/$id/resume")
	[ "$st" = 409 ]
	check $? "resume of a running sandbox is 409"
	for i in $(seq $cycles); do
		"$KILN" exec "$id" -- sh -c "echo $i >>$G/cycles" &&
			"$KILN" pause "$id" >/dev/null && "$KILN" resume "$id" >/dev/null || break
	done
	[ "$("$KILN" exec "$id" -- cat "$G/cycles" | tr '\n' ' ')" = "$(seq -s ' ' $cycles) " ]
	check $? "$cycles pause/resume cycles in a row, files intact"
	if [ $FAKE = 0 ]; then
		grep -q "sandbox $id: snapshot written (.*generation [2-9][0-9]* appended" "$T/kilnd.log"
		check $? "a later pause appends a generation to the file it was resumed from"
	fi
	if [ $FAKE = 0 ]; then
		c2=$("$KILN" exec "$id" -- cat /tmp/count)
		[ "$c2" -gt "$c1" ]
		check $? "and the process still counts ($c1 -> $c2)"
	fi
	"$KILN" pause "$id" >/dev/null
	"$KILN" rm "$id"
	[ ! -e "$DATA/sandboxes/$id" ] && [ "$(api GET "/sandboxes/$id")" = 404 ]
	check $? "rm of a paused sandbox deletes it and its snapshot"
}

# (A bare `wait` would wait for kilnd too: each waits for its own pids.)
t_pause_races() {
	local id i pids=()
	id=$("$KILN" create) || { not_ok "create for races"; return; }
	vmm_alive "$id"
	check $? "a running sandbox's VMM is seen working in its directory (what the checks below rule out)"
	for i in 1 2 3; do
		curl -s --unix-socket "$SOCK" -X POST -o /dev/null -w '%{http_code}\n' \
			"http://k/sandboxes/$id/pause" >"$T/race.$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	pids=()
	[ "$(sort "$T"/race.* | tr '\n' ' ')" = "204 409 409 " ]
	check $? "three pauses at once: one pauses, two hear it is paused ($(cat "$T"/race.* | tr '\n' ' '))"
	rm -f "$T"/race.*
	curl -s --unix-socket "$SOCK" -X POST -o /dev/null -w '%{http_code}\n' \
		"http://k/sandboxes/$id/resume" >"$T/race.1" &
	pids+=($!)
	sleep 0.05
	curl -s --unix-socket "$SOCK" -X POST -o /dev/null -w '%{http_code}\n' \
		"http://k/sandboxes/$id/pause" >"$T/race.2" &
	pids+=($!)
	wait "${pids[@]}"
	pids=()
	[ "$(cat "$T/race.1" "$T/race.2" | tr '\n' ' ')" = "201 204 " ] &&
		[ "$(sb_field "$id" state)" = paused ]
	check $? "a pause right after a resume waits for it ($(cat "$T"/race.* | tr '\n' ' '))"
	curl -s --unix-socket "$SOCK" -X POST -o /dev/null -w '%{http_code}\n' \
		"http://k/sandboxes/$id/resume" >"$T/race.1" &
	pids+=($!)
	sleep 0.01
	"$KILN" rm "$id"
	wait "${pids[@]}"
	sleep 0.3
	[ "$(api GET "/sandboxes/$id")" = 404 ] && [ ! -e "$DATA/sandboxes/$id" ] && ! vmm_alive "$id"
	check $? "rm during a resume leaves nothing behind (resume answered $(cat "$T/race.1"))"
	rm -f "$T"/race.*
}

t_pause_restart() {
	local id
	id=$("$KILN" create) || { not_ok "create for restart"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo across-restart >$G/r1"
	"$KILN" pause "$id" >/dev/null
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
	start_kilnd
	[ "$(sb_field "$id" state)" = paused ]
	check $? "a paused sandbox survives a kilnd restart"
	"$KILN" resume "$id" >/dev/null && [ "$("$KILN" exec "$id" -- cat "$G/r1")" = across-restart ]
	check $? "and resumes after it, files intact"
	"$KILN" rm "$id"
}

# kill -9 of kilnd, of the VMM or of both while a later pause writes to
# the file the sandbox was resumed from (pause_base.h): a restarted kilnd
# never takes that file's older generation for the pause. With the fake
# VMM a pause takes 1.5 s (unjailed, then jailed); on real VMs it takes a
# few ms, so kilnd is killed at points of it.
start_kilnd_mode() { # plain (run.sh's) or jailed (the fake VMM jailed, jail.sh)
	if [ "$1" = jailed ]; then start_kilnd_jailed_fake; else start_kilnd; fi
}

pause_kill_case() { # WHAT (kilnd, vmm, both) MODE: kill it mid-pause of a resumed sandbox
	local id pid st want=error
	id=$("$KILN" create) || { not_ok "create for pause-kill $1"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo k-$1 >$G/k-$1"
	"$KILN" pause "$id" >/dev/null && "$KILN" resume "$id" >/dev/null
	pid=$(sb_field "$id" pid)
	api POST "/sandboxes/$id/pause" >"$T/pk.st" &
	sleep 0.5
	case $1 in
	vmm) kill -9 "$pid" ;;
	kilnd) kill -9 "$KILND_PID" ;;
	both) kill -9 "$KILND_PID" "$pid" ;;
	esac
	wait $! 2>/dev/null
	if [ "$1" != vmm ]; then
		wait "$KILND_PID" 2>/dev/null
		start_kilnd_mode "$2" 2>/dev/null # (jailed: its kill of the old one fails)
	fi
	for _ in $(seq 40); do
		st=$(sb_field "$id" state)
		[ "$st" != pausing ] && break
		sleep 0.1
	done
	[ "$1" = kilnd ] && want=running
	[ "$st" = $want ]
	check $? "kill -9 of $1 mid-pause of a resumed sandbox ($2): $want, not paused at the resume's state ($st; $(sb_field "$id" reason | head -c 100))"
	if [ $want = running ]; then
		"$KILN" pause "$id" >/dev/null && "$KILN" resume "$id" >/dev/null &&
			[ "$("$KILN" exec "$id" -- cat "$G/k-$1")" = "k-$1" ]
		check $? "and it pauses and resumes after ($2), files intact"
	fi
	"$KILN" rm "$id" >/dev/null
}

t_pause_kill() {
	local mode what i id st=
	if [ $FAKE = 1 ]; then
		export FAKE_VMM_SNAPSHOT_DELAY_MS=1500
		for mode in plain jailed; do
			[ $mode = jailed ] && [ "$(id -u)" != 0 ] && continue
			kill "$KILND_PID"
			wait "$KILND_PID" 2>/dev/null
			start_kilnd_mode $mode
			for what in kilnd vmm both; do
				pause_kill_case $what $mode
			done
		done
		unset FAKE_VMM_SNAPSHOT_DELAY_MS
		kill "$KILND_PID"
		wait "$KILND_PID" 2>/dev/null
		start_kilnd
		return
	fi
	# real VMs: kilnd killed 5-50 ms into a later pause: paused (it was
	# complete) or running (it was not), and either way whole
	id=$("$KILN" create) || { not_ok "create for pause-kill"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo k-real >$G/k-real"
	for i in 1 2 3 4 5 6; do
		[ "$st" = paused ] || "$KILN" pause "$id" >/dev/null || break
		"$KILN" resume "$id" >/dev/null || break
		"$KILN" exec "$id" -- sh -c "echo $i >>$G/k-real-n"
		api POST "/sandboxes/$id/pause" >/dev/null &
		sleep "0.0$((i * 5))"
		kill -9 "$KILND_PID"
		wait "$KILND_PID" $! 2>/dev/null
		start_kilnd
		st=$(sb_field "$id" state)
		echo "# pause-kill $i: $st"
		[ "$st" = running ] || [ "$st" = paused ] || break
	done
	[ "$st" = running ] || "$KILN" resume "$id" >/dev/null
	[ "$("$KILN" exec "$id" -- cat "$G/k-real-n" | tr '\n' ' ')" = "1 2 3 4 5 6 " ]
	check $? "kill -9 of kilnd at points of six later pauses: paused or running, files intact ($st)"
	"$KILN" rm "$id" >/dev/null
}

t_pause_python() {
	have_base || return 0
	local id i x1 x2
	id=$("$KILN" create --image base) || { not_ok "create --image base for python"; return; }
	# an interpreter that runs what appears in /tmp/cmd (the guest has no FIFOs)
	cat >"$T/repl.py" <<'PY'
import os, random, time
x = random.random()
with open("/tmp/x1", "w") as f:
    f.write(repr(x))
while True:
    if os.path.exists("/tmp/cmd"):
        exec(open("/tmp/cmd").read())
        os.unlink("/tmp/cmd")
    time.sleep(0.02)
PY
	"$KILN" cp "$T/repl.py" "$id:/tmp/repl.py"
	"$KILN" exec "$id" -- sh -c 'python3 /tmp/repl.py </dev/null >/dev/null 2>&1 &'
	for i in $(seq 50); do
		"$KILN" exec "$id" -- test -s /tmp/x1 && break
		sleep 0.1
	done
	"$KILN" pause "$id" >/dev/null && "$KILN" resume "$id" >/dev/null &&
		"$KILN" pause "$id" >/dev/null && "$KILN" resume "$id" >/dev/null
	"$KILN" exec "$id" -- sh -c \
		'echo "open(\"/tmp/x2\", \"w\").write(repr(x))" >/tmp/cmd.new && mv /tmp/cmd.new /tmp/cmd'
	for i in $(seq 50); do
		"$KILN" exec "$id" -- test -s /tmp/x2 && break
		sleep 0.1
	done
	x1=$("$KILN" exec "$id" -- cat /tmp/x1)
	x2=$("$KILN" exec "$id" -- cat /tmp/x2)
	[ -n "$x1" ] && [ "$x1" = "$x2" ]
	check $? "a Python interpreter keeps its variables across two pauses ($x1 = $x2)"
	"$KILN" rm "$id"
}

# ---------------------------------------------------------------- auto-resume

sb_token() { # ID: its envd access token
	curl -s --unix-socket "$SOCK" "http://k/sandboxes/$1" |
		sed -n 's/.*"envdAccessToken":"\([0-9a-f]*\)".*/\1/p'
}

# envd_unary ID METHOD JSON: a unary envd RPC on the control socket; the
# answer in $T/body, prints the status
envd_unary() {
	curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $1" \
		-H "X-Access-Token: $(sb_token "$1")" -H 'Content-Type: application/json' \
		-d "$3" "http://k/$2"
}

# envd_start ID SHELL-COMMAND: process.Process/Start (one envelope in, a
# stream of envelopes out, in $T/body); prints the status
# envd_envelope MSG: a Connect envelope of the JSON MSG (under 256 bytes)
# into $T/envelope
envd_envelope() {
	{
		printf '\0\0\0\0'
		# shellcheck disable=SC2059 # the length byte, as an escape
		printf "\\x$(printf %02x "${#1}")"
		printf '%s' "$1"
	} >"$T/envelope"
}

# envd_connect ID PID: a second of process.Connect's stream into $T/body
envd_connect() {
	envd_envelope "{\"process\":{\"pid\":$2}}"
	curl -sS --unix-socket "$SOCK" -m 1 -o "$T/body" -H "E2b-Sandbox-Id: $1" \
		-H "X-Access-Token: $(sb_token "$1")" -H 'Content-Type: application/connect+json' \
		--data-binary @"$T/envelope" http://k/process.Process/Connect 2>/dev/null
}

# envd_connect_kill ID PID WHAT: process.Connect gets PID's output (checked
# as "process.Connect WHAT"), then SendSignal SIGKILL ends it and List
# drops it.
envd_connect_kill() {
	local st
	envd_connect "$1" "$2"
	grep -q '"start":{"pid":'"$2" "$T/body" && grep -q '"stdout":"' "$T/body"
	check $? "process.Connect $3"
	st=$(envd_unary "$1" process.Process/SendSignal "{\"process\":{\"pid\":$2},\"signal\":\"SIGNAL_SIGKILL\"}")
	sleep 0.3
	envd_unary "$1" process.Process/List '{}' >/dev/null
	[ "$st" = 200 ] && ! grep -q "\"pid\":$2" "$T/body"
	check $? "SendSignal ends it; it leaves the list"
}

envd_start() {
	local msg
	msg=$(printf '{"process":{"cmd":"/bin/sh","args":["-c","%s"]}}' "$2")
	envd_envelope "$msg"
	curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $1" \
		-H "X-Access-Token: $(sb_token "$1")" -H 'Content-Type: application/connect+json' \
		--data-binary @"$T/envelope" http://k/process.Process/Start
}

# seconds from now to the sandbox's endAt
sb_left() {
	echo $(($(date -d "$(sb_field "$1" endAt)" +%s) - $(date +%s)))
}

# Whatever needs the agent resumes a paused sandbox first (exec, files, pty,
# envd): once, its timeout re-armed, files and processes intact.
t_auto_resume() {
	local id st c1 c2 n left out
	st=$(api POST /sandboxes -d '{"timeout":40}')
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
	[ "$st" = 201 ] || { not_ok "create for auto-resume"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo before >$G/a1"
	if [ $FAKE = 0 ]; then
		# shellcheck disable=SC2016 # the guest's shell expands these
		"$KILN" exec "$id" -- sh -c '(i=0; while :; do i=$((i+1)); echo $i >/tmp/count;
			sleep 0.05; done) </dev/null >/dev/null 2>&1 & echo $! >/tmp/loop.pid'
		sleep 0.2
		c1=$("$KILN" exec "$id" -- cat /tmp/count)
	fi
	"$KILN" pause "$id" >/dev/null
	[ "$(sb_field "$id" state)" = paused ] && [ "$(sb_field "$id" resumeCount)" = 0 ]
	check $? "paused, never resumed (resumeCount 0)"
	[ "$("$KILN" exec "$id" -- cat "$G/a1")" = before ] &&
		[ "$(sb_field "$id" state)" = running ] && [ "$(sb_field "$id" resumeCount)" = 1 ]
	check $? "exec on a paused sandbox resumes it (once) and returns the output"
	left=$(sb_left "$id")
	[ "$left" -ge 35 ] && [ "$left" -le 40 ]
	check $? "its lifetime starts again, as long as at creation (40 s; ${left} s left)"
	grep -q "sandbox $id: exec finds it paused: resuming it" "$T/kilnd.log"
	check $? "kilnd's log says why it resumed"
	if [ $FAKE = 0 ]; then
		sleep 0.2
		c2=$("$KILN" exec "$id" -- cat /tmp/count)
		# shellcheck disable=SC2016
		[ "$c2" -gt "$c1" ] && "$KILN" exec "$id" -- sh -c 'kill -0 $(cat /tmp/loop.pid)'
		check $? "a process started before the pause goes on (counter $c1 -> $c2)"
	fi

	"$KILN" pause "$id" >/dev/null
	st=$(api GET "/sandboxes/$id/files?path=$G/a1")
	[ "$st" = 200 ] && [ "$(cat "$T/body")" = before ] && [ "$(sb_field "$id" state)" = running ]
	check $? "GET /files on a paused sandbox resumes it"
	head -c $((3 << 20)) /dev/urandom >"$T/big"
	"$KILN" pause "$id" >/dev/null
	st=$(api PUT "/sandboxes/$id/files?path=$G/big" --data-binary @"$T/big")
	[ "$st" = 200 ] && grep -q "\"size\":$((3 << 20))" "$T/body"
	check $? "PUT /files of 3 MiB on a paused sandbox resumes it, then takes the body ($st)"
	"$KILN" pause "$id" >/dev/null
	"$KILN" cp "$id:$G/big" "$T/big.back" && cmp -s "$T/big" "$T/big.back"
	check $? "and the file is whole (read back through a resume by kiln cp)"
	"$KILN" pause "$id" >/dev/null
	st=$(api GET "/sandboxes/$id/files/list?path=$G")
	[ "$st" = 200 ] && grep -q '"name":"a1"' "$T/body"
	check $? "GET /files/list on a paused sandbox resumes it"
	"$KILN" pause "$id" >/dev/null
	st=$(api POST "/sandboxes/$id/files/mkdir" -d "{\"path\":\"$G/d1\"}")
	[ "$st" = 204 ] && [ "$("$KILN" exec "$id" -- sh -c "test -d $G/d1 && echo yes")" = yes ]
	check $? "POST /files/mkdir on a paused sandbox resumes it"
	"$KILN" pause "$id" >/dev/null
	out=$(printf "echo pty-\$((6*7))\nexit 0\n" | "$KILN" shell "$id" 2>&1)
	grep -q pty-42 <<<"$out"
	check $? "a terminal (kiln shell) on a paused sandbox resumes it"

	"$KILN" pause "$id" >/dev/null
	st=$(envd_unary "$id" filesystem.Filesystem/Stat "{\"path\":\"$G/a1\"}")
	[ "$st" = 200 ] && grep -q '"name":"a1"' "$T/body"
	check $? "envd's Filesystem/Stat on a paused sandbox resumes it ($st)"
	"$KILN" pause "$id" >/dev/null
	st=$(envd_start "$id" "echo envd-woke")
	[ "$st" = 200 ] && grep -q "$(printf 'envd-woke\n' | base64)" "$T/body"
	check $? "envd's Process/Start on a paused sandbox resumes it and runs the command"
	"$KILN" pause "$id" >/dev/null
	st=$(curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $(sb_token "$id")" "http://k/files?path=$G/a1")
	[ "$st" = 200 ] && [ "$(cat "$T/body")" = before ]
	check $? "envd's GET /files on a paused sandbox resumes it"
	"$KILN" pause "$id" >/dev/null
	st=$(curl -sS --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -H "E2b-Sandbox-Id: $id" \
		http://k/health)
	[ "$st" = 502 ] && [ "$(sb_field "$id" state)" = paused ]
	check $? "envd's /health does not resume it (isRunning() is false while paused)"
	n=$(sb_field "$id" resumeCount)
	[ "$n" = 10 ]
	check $? "one resume per pause: resumeCount $n"
	"$KILN" rm "$id"
	rm -f "$T/big" "$T/big.back"
}

# A kilnd of its own whose VMM is slow to pause and resume (fake VMM), so
# that requests meet the transitions under way: runs "$@" against it.
with_slow_kilnd() {
	local d6=$T/data6 p6 rc
	# shellcheck disable=SC2046
	FAKE_VMM_BOOT_DELAY_MS=400 FAKE_VMM_SNAPSHOT_DELAY_MS=400 "$KILND" --data-dir "$d6" \
		$(vmm_opts) >"$T/kilnd6.log" 2>&1 &
	p6=$!
	wait_socket "$d6/kilnd.sock"
	SOCK=$d6/kilnd.sock KILN_DATA_DIR=$d6 KLOG=$T/kilnd6.log "$@"
	rc=$?
	kill $p6
	wait $p6
	return $rc
}

t_auto_resume_races() {
	if [ $FAKE = 1 ]; then
		with_slow_kilnd auto_resume_races
	else
		KLOG=$T/kilnd.log auto_resume_races
	fi
}

auto_resume_races() {
	local id i n0 l0 pids=() ok=1 st
	id=$("$KILN" create) || { not_ok "create for auto-resume races"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo raced >$G/r1"
	"$KILN" pause "$id" >/dev/null
	n0=$(sb_field "$id" resumeCount)
	l0=$(grep -c "sandbox $id: resuming (" "$KLOG")
	for i in 1 2 3 4 5; do
		"$KILN" exec "$id" -- sh -c "cat $G/r1; echo $i" >"$T/ar.$i" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3 4 5; do
		wait "${pids[$((i - 1))]}" && [ "$(tr '\n' ' ' <"$T/ar.$i")" = "raced $i " ] || ok=0
	done
	pids=()
	[ $ok = 1 ] && [ "$(sb_field "$id" state)" = running ]
	check $? "5 execs at once on a paused sandbox all run ($(cat "$T"/ar.* | tr '\n' ' '))"
	[ "$(sb_field "$id" resumeCount)" = $((n0 + 1)) ] &&
		[ "$(grep -c "sandbox $id: resuming (" "$KLOG")" = $((l0 + 1)) ]
	check $? "and cause exactly one resume (resumeCount $n0 -> $(sb_field "$id" resumeCount))"
	echo "# $(grep -c "sandbox $id: exec finds it resuming: waiting" "$KLOG") of the 5 waited for the resume another had started"
	rm -f "$T"/ar.*
	# a request that meets a pause under way waits for it, then resumes
	if [ $FAKE = 0 ]; then
		# incompressible memory: the snapshot takes a while
		"$KILN" exec "$id" -- sh -c 'head -c 100000000 /dev/urandom >/tmp/fill'
	fi
	curl -s --unix-socket "$SOCK" -X POST -o /dev/null -w '%{http_code}' \
		"http://k/sandboxes/$id/pause" >"$T/ar.pause" &
	pids+=($!)
	for i in $(seq 200); do
		[ "$(sb_field "$id" state)" = pausing ] && break
		sleep 0.005
	done
	[ "$(sb_field "$id" state)" = pausing ]
	st=$?
	[ "$("$KILN" exec "$id" -- cat "$G/r1")" = raced ] && wait "${pids[@]}" &&
		[ "$(cat "$T/ar.pause")" = 204 ] && [ "$(sb_field "$id" state)" = running ] &&
		grep -q "sandbox $id: exec finds it pausing: waiting" "$KLOG"
	[ $? = 0 ] && [ $st = 0 ]
	check $? "an exec that meets a pause waits for it (204), then resumes the sandbox"
	pids=()
	rm -f "$T"/ar.*
	# clients that hang up while they wait: the resume goes on without them
	"$KILN" pause "$id" >/dev/null
	n0=$(sb_field "$id" resumeCount)
	curl -s --unix-socket "$SOCK" -m 0.2 -o /dev/null -X PUT --data-binary never-written \
		-H 'Expect: 100-continue' "http://k/sandboxes/$id/files?path=$G/gone"
	curl -s --unix-socket "$SOCK" -m 0.2 -o /dev/null -d '{"cmd":["sleep","1"]}' \
		"http://k/sandboxes/$id/exec"
	[ "$("$KILN" exec "$id" -- echo after)" = after ] &&
		[ "$(sb_field "$id" resumeCount)" = $((n0 + 1)) ]
	check $? "clients that hang up while waiting leave the resume to the others"
	"$KILN" rm "$id"
}

t_auto_resume_errors() {
	local id id2 st d7=$T/data7 p7
	# a snapshot that cannot be restored: the exec says why, the sandbox stays paused
	id=$("$KILN" create) || { not_ok "create for auto-resume errors"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo kept >$G/e2"
	"$KILN" pause "$id" >/dev/null
	cp "$DATA/sandboxes/$id/snapshot" "$T/snap.orig"
	printf '\377' | dd of="$DATA/sandboxes/$id/snapshot" bs=1 seek=30 conv=notrunc 2>/dev/null
	st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":["true"]}')
	[ "$st" = 500 ] && grep -q "cannot resume sandbox $id" "$T/body" &&
		grep -qi checksum "$T/body" && [ "$(sb_field "$id" state)" = paused ]
	check $? "exec on a paused sandbox that cannot resume: 500 with the reason, still paused"
	"$KILN" exec "$id" -- true 2>"$T/err"
	[ $? != 0 ] && grep -q "cannot resume sandbox $id" "$T/err"
	check $? "kiln exec prints it ($(head -c 200 "$T/err"))"
	cp "$T/snap.orig" "$DATA/sandboxes/$id/snapshot"
	[ "$("$KILN" exec "$id" -- cat "$G/e2")" = kept ]
	check $? "once repaired, exec resumes it"
	"$KILN" rm "$id"
	# at --max-sandboxes: 429, and the sandbox stays paused
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d7" $(vmm_opts) --max-sandboxes 1 >"$T/kilnd7.log" 2>&1 &
	p7=$!
	wait_socket "$d7/kilnd.sock"
	id=$(KILN_DATA_DIR=$d7 "$KILN" create) && KILN_DATA_DIR=$d7 "$KILN" pause "$id" >/dev/null &&
		id2=$(KILN_DATA_DIR=$d7 "$KILN" create)
	st=$(curl -sS --unix-socket "$d7/kilnd.sock" -o "$T/body" -D "$T/hdrs" -w '%{http_code}' \
		-d '{"cmd":["true"]}' "http://k/sandboxes/$id/exec")
	[ "$st" = 429 ] && grep -q 'too many sandboxes running (limit 1)' "$T/body" &&
		grep -qi '^Retry-After: 1' "$T/hdrs" &&
		[ "$(SOCK=$d7/kilnd.sock sb_field "$id" state)" = paused ]
	check $? "exec on a paused sandbox at --max-sandboxes: 429, still paused"
	st=$(SOCK=$d7/kilnd.sock envd_unary "$id" filesystem.Filesystem/Stat '{"path":"/"}')
	[ "$st" = 429 ] && grep -q '"code":"resource_exhausted"' "$T/body"
	check $? "and envd's calls answer resource_exhausted ($st)"
	KILN_DATA_DIR=$d7 "$KILN" rm "$id2"
	[ "$(KILN_DATA_DIR=$d7 "$KILN" exec "$id" -- echo room)" = room ]
	check $? "with room again, exec resumes it"
	KILN_DATA_DIR=$d7 "$KILN" rm "$id"
	kill $p7
	wait $p7
	# a dead sandbox is not resumed
	id=$("$KILN" create)
	kill -9 "$(sb_field "$id" pid)"
	for i in $(seq 50); do
		[ "$(sb_field "$id" state)" = error ] && break
		sleep 0.05
	done
	st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":["true"]}')
	[ "$st" = 409 ]
	check $? "exec on a dead sandbox is still 409 ($(sb_field "$id" state))"
	"$KILN" rm "$id"
}

# An envd process (E2B's background command) outlives a pause: the agent
# keeps it when its stream ends with the VMM, kilnd attaches it again after
# the resume. (The fake VMM's resume starts a fresh agent: there it is gone.)
t_envd_keep() {
	local id pid pids=() st
	id=$("$KILN" create) || { not_ok "create for envd keep"; return; }
	envd_start "$id" 'while :; do echo tick; sleep 0.05; done' >/dev/null &
	pids+=($!)
	for _ in $(seq 100); do
		envd_unary "$id" process.Process/List '{}' >/dev/null
		pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/body")
		[ -n "$pid" ] && break
		sleep 0.05
	done
	"$KILN" pause "$id" >/dev/null
	wait "${pids[@]}"
	st=$(envd_unary "$id" process.Process/List '{}')
	if [ $FAKE = 1 ]; then
		[ "$st" = 200 ] && [ -n "$pid" ] && ! grep -q "\"pid\":$pid" "$T/body"
		check $? "fake VMM: the process is gone after the resume, and not listed"
		"$KILN" rm "$id"
		return
	fi
	[ "$st" = 200 ] && [ -n "$pid" ] && grep -q "\"pid\":$pid" "$T/body" &&
		grep -q "sandbox $id: attaching its 1 envd process(es) again" "$T/kilnd.log"
	check $? "an envd process outlives pause and resume: List (which resumed it) has pid $pid"
	"$KILN" exec "$id" -- sh -c "kill -0 $pid"
	check $? "and it runs in the guest"
	envd_connect_kill "$id" "$pid" "attaches to it and gets its output"
	"$KILN" rm "$id"
}

# kiln snapshot inspect: the snapshot library's inspector in the CLI.
t_snapshot_inspect() {
	local id f sz out
	grep -q '^  snapshot ' <<<"$("$KILN" --help)"
	check $? "kiln --help lists snapshot"
	"$KILN" snapshot >/dev/null 2>&1
	[ $? = 2 ] && "$KILN" snapshot --help | grep -q 'usage: kiln snapshot inspect'
	check $? "kiln snapshot without a file is a usage error (2); --help explains it"
	"$KILN" snapshot inspect "$T/no-such-snapshot" 2>"$T/err"
	[ $? = 1 ] && grep -q "kiln snapshot: .*no-such-snapshot.*No such file" "$T/err"
	check $? "a missing file: exit 1, saying so"
	id=$("$KILN" create) || { not_ok "create for snapshot inspect"; return; }
	"$KILN" pause "$id" >/dev/null
	f=$DATA/sandboxes/$id/snapshot
	if [ $FAKE = 1 ]; then
		# the fake VMM's snapshots are not kiln-vmm's format
		"$KILN" snapshot inspect "$f" >/dev/null 2>"$T/err"
		[ $? = 1 ] && grep -q "kiln snapshot: snapshot '$f': " "$T/err"
		check $? "a file that is not a snapshot: exit 1 with the reason ($(cat "$T/err"))"
		"$KILN" rm "$id"
		return
	fi
	out=$("$KILN" snapshot inspect "$f")
	[ $? = 0 ] && grep -q "^snapshot '$f'" <<<"$out" && grep -q '^  format *version' <<<"$out" &&
		grep -q '^VM config:' <<<"$out" && grep -q '^  memory *256 MiB' <<<"$out" &&
		grep -q '^  devices .*vsock' <<<"$out" && grep -q '^sections: ' <<<"$out" &&
		grep -q 'memory data' <<<"$out" && grep -q '^memory: [0-9]* chunks of' <<<"$out" &&
		grep -q '^  zero ' <<<"$out" && grep -q '^  compressed ' <<<"$out" &&
		grep -q '^verify: header, sections and every chunk OK' <<<"$out"
	check $? "kiln snapshot inspect of a paused sandbox: header, config, sections, chunks, verified"
	sz=$(stat -c %s "$f")
	cp "$f" "$T/snap.bad"
	# every bit of 8 KiB flipped in the middle of the memory data (more than
	# any padding between chunks), so some chunk surely changes
	mid=$(awk '$2 == "memory" && $3 == "data" { print $6 + int($7 / 2) }' <<<"$out")
	python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(8192); f.seek(int(sys.argv[2]))
    f.write(bytes(x ^ 0xff for x in b))' "$T/snap.bad" "${mid:-$((sz / 2))}"
	"$KILN" snapshot inspect "$T/snap.bad" >/dev/null 2>"$T/err"
	[ $? = 1 ] && grep -q 'chunk [0-9]*: checksum mismatch' "$T/err"
	check $? "a damaged chunk: exit 1, naming the chunk ($(cat "$T/err"))"
	cp "$f" "$T/snap.bad"
	printf '\377' | dd of="$T/snap.bad" bs=1 seek=30 conv=notrunc 2>/dev/null
	"$KILN" snapshot inspect "$T/snap.bad" >/dev/null 2>"$T/err"
	[ $? = 1 ] && grep -q 'header checksum mismatch' "$T/err"
	check $? "a damaged header: exit 1 ($(cat "$T/err"))"
	head -c $((sz / 2)) "$f" >"$T/snap.bad"
	"$KILN" snapshot inspect "$T/snap.bad" >/dev/null 2>"$T/err"
	[ $? = 1 ] && grep -q 'truncated' "$T/err"
	check $? "a truncated file: exit 1 ($(cat "$T/err"))"
	"$KILN" snapshot inspect --no-verify "$T/snap.bad" >/dev/null 2>&1
	[ $? = 1 ]
	check $? "--no-verify still refuses a truncated file"
	"$KILN" resume "$id" >/dev/null && "$KILN" rm "$id"
	rm -f "$T/snap.bad"
}

# create -> first exec of true through the API, in seconds (curl's own times)
create_exec() { # JSON body of the create
	local t1 t2 id
	t1=$(curl -s --unix-socket "$SOCK" -o "$T/ce" -w '%{time_total}' -d "$1" http://k/sandboxes)
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/ce")
	t2=$(curl -s --unix-socket "$SOCK" -o "$T/ce" -w '%{time_total}' -d '{"cmd":["true"]}' \
		"http://k/sandboxes/$id/exec")
	grep -q '"exitCode":0' "$T/ce" || echo "# create_exec: $1 failed" >&2
	curl -s --unix-socket "$SOCK" -X DELETE "http://k/sandboxes/$id" >/dev/null
	awk -v a="$t1" -v b="$t2" 'BEGIN { print (a + b) * 1000 }'
}

t_templates() {
	local out id ids=() i st cold clone
	out=$("$KILN" template create e2e-t -- sh -c "mkdir -p $G && echo warmed >$G/warm")
	grep -q "template e2e-t: built in" <<<"$out"
	check $? "kiln template create builds a template ($out)"
	"$KILN" template ls | grep -q '^e2e-t  *busybox'
	check $? "kiln template ls lists it"
	for i in 1 2 3; do
		ids+=("$("$KILN" create --template e2e-t)")
	done
	[ "${#ids[@]}" = 3 ] && [ "$("$KILN" exec "${ids[0]}" -- cat "$G/warm")" = warmed ]
	check $? "clones of a template start with its warm-up done"
	: >"$T/rnd"
	for id in "${ids[@]}"; do
		"$KILN" exec "$id" -- sh -c 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"' \
			>>"$T/rnd"
		echo >>"$T/rnd"
	done
	[ "$(sort -u "$T/rnd" | grep -c .)" = 3 ]
	check $? "three clones read three different random numbers"
	[ "$(sb_field "${ids[0]}" templateID)" = e2e-t ]
	check $? "a clone reports its template"
	"$KILN" rm "${ids[@]}"
	st=$(api POST /sandboxes -d '{"templateID":"e2e-t","memoryMB":512}')
	[ "$st" = 400 ] && grep -q "template's memory (256 MiB)" "$T/body"
	check $? "a clone with other memory than its template's is 400"
	for i in 1 2 3 4 5; do create_exec '{}'; done | median >"$T/cold"
	for i in 1 2 3 4 5; do create_exec '{"templateID":"e2e-t"}'; done | median >"$T/clone"
	cold=$(cat "$T/cold") clone=$(cat "$T/clone")
	echo "# create -> first exec (medians of 5): cold boot ${cold} ms, template clone ${clone} ms"
	st=$(api POST /templates -d '{"name":"e2e-t"}')
	[ "$st" = 409 ] && grep -q 'exists already' "$T/body"
	check $? "a second template of the same name is 409"
	st=$(api POST /templates -d '{"name":"base"}')
	[ "$st" = 409 ]
	check $? "a template named like an image is 409"
	st=$(api POST /templates -d '{"name":"x/y"}')
	[ "$st" = 400 ]
	check $? "a template name with a slash is 400"
	st=$(api POST /templates -d '{}')
	[ "$st" = 400 ]
	check $? "a template without a name is 400"
	st=$(api POST /templates -d '{"name":"e2e-u","image":"nope"}')
	[ "$st" = 400 ] && grep -q "unknown image 'nope'" "$T/body"
	check $? "a template of an unknown image is 400"
	"$KILN" template create e2e-bad -- sh -c 'echo warm-up-broke >&2; exit 3' 2>"$T/err"
	[ $? = 1 ] && grep -q 'exited with status 3' "$T/err" && grep -q warm-up-broke "$T/err" &&
		[ ! -e "$DATA/templates/e2e-bad" ]
	check $? "a failing warm-up: its status and output, and no template ($(tr '\n' ' ' <"$T/err" | head -c 400))"
	! "$KILN" ls | grep -q 'e2e-bad'
	check $? "its build sandbox is gone"
	id=$("$KILN" create --template e2e-t)
	"$KILN" template rm e2e-t
	[ ! -e "$DATA/templates/e2e-t" ] && ! "$KILN" template ls -q | grep -q e2e-t
	check $? "kiln template rm removes the template and its files"
	[ "$("$KILN" exec "$id" -- echo still-here)" = still-here ]
	check $? "a clone outlives its template"
	"$KILN" create --template e2e-t >/dev/null 2>"$T/err"
	[ $? = 1 ] && grep -q "unknown template or image 'e2e-t'" "$T/err"
	check $? "a removed template cannot be cloned"
	[ "$(api DELETE /templates/e2e-t)" = 404 ] && [ "$(api GET /templates/e2e-t)" = 404 ]
	check $? "DELETE and GET of an unknown template are 404"
	"$KILN" rm "$id"
	if have_base; then
		out=$("$KILN" template create e2e-py --image base -- python3 -c 'import numpy, pandas')
		grep -q "built in" <<<"$out" &&
			[ "$("$KILN" run --template e2e-py -- python3 -c 'import numpy; print(numpy.arange(4).sum())')" = 6 ]
		check $? "a python template (numpy, pandas warmed up) clones and runs numpy ($out)"
		for i in 1 2 3 4 5; do create_exec '{"image":"base"}'; done | median >"$T/cold"
		for i in 1 2 3 4 5; do create_exec '{"templateID":"e2e-py"}'; done | median >"$T/clone"
		echo "# base image: create -> first exec (medians of 5): cold boot $(cat "$T/cold") ms, clone of e2e-py $(cat "$T/clone") ms"
		"$KILN" template rm e2e-py
	fi
}

# pool_ready NAME [SOCK]: the template's running pool clones
pool_ready() {
	curl -s --unix-socket "${2:-$SOCK}" "http://k/templates/$1" |
		sed -n 's/.*"poolReady":\([0-9]*\).*/\1/p'
}

wait_pool() { # NAME N [SOCK]: until N pool clones run (10 s at most)
	for _ in $(seq 200); do
		[ "$(pool_ready "$1" "${3:-}")" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

vmms() { # DATA_DIR: how many VMMs run there (process groups: the fake VMM
	# forks a process per connection, and kilnd keeps some open); a VMM
	# works in its sandbox's directory
	local p
	for p in $(pgrep -f -- "--vsock [0-9]+,"); do
		case $(readlink "/proc/$p/cwd" 2>/dev/null) in
		"$1"/sandboxes/*) ps -o pgid= -p "$p" ;;
		esac
	done | sort -u | wc -l
}

t_pool() {
	local out n0 v0 id st left pool plain d8=$T/data8 p8 a
	n0=$("$KILN" ls -q | wc -l)
	v0=$(vmms "$DATA")
	out=$("$KILN" template create e2e-pool --pool 2 -- sh -c "mkdir -p $G && echo pooled >$G/pool")
	grep -q "a pool of 2 clones started ahead" <<<"$out"
	check $? "kiln template create --pool 2 ($out)"
	wait_pool e2e-pool 2 && [ "$(vmms "$DATA")" = $((v0 + 2)) ]
	check $? "two clones are started ahead"
	api GET /sandboxes >/dev/null
	[ "$("$KILN" ls -q | wc -l)" = "$n0" ] && ! grep -q '"templateID":"e2e-pool"' "$T/body"
	check $? "pool clones are not listed as sandboxes"
	"$KILN" template ls | grep '^e2e-pool ' | grep -q ' 2/2 '
	check $? "kiln template ls shows the pool (2/2)"
	st=$(api POST /sandboxes -d '{"templateID":"e2e-pool","timeout":50,"envVars":{"WHO":"pool"},"metadata":{"m":"p"}}')
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
	[ "$st" = 201 ] && grep -q "sandbox $id: taken from the pool of e2e-pool" "$T/kilnd.log"
	check $? "a create from the template takes a clone from the pool"
	left=$(sb_left "$id")
	[ "$("$KILN" exec "$id" -- sh -c "cat $G/pool; echo \$WHO")" = "pooled
pool" ] && [ "$left" -ge 45 ] && [ "$left" -le 50 ] && [ "$(sb_field "$id" templateID)" = e2e-pool ] &&
		"$KILN" ls | grep "$id" | grep -q running && api GET "/sandboxes/$id" >/dev/null &&
		grep -q '"m":"p"' "$T/body"
	check $? "it is the user's now: warm-up done, its envVars, metadata, timeout (${left} s), listed"
	wait_pool e2e-pool 2 && [ "$(vmms "$DATA")" = $((v0 + 3)) ]
	check $? "the pool is refilled in the background"
	for _ in 1 2 3 4 5; do create_exec '{"templateID":"e2e-pool"}'; wait_pool e2e-pool 2; done |
		median >"$T/pool"
	"$KILN" template create e2e-nopool -- sh -c "mkdir -p $G && echo pooled >$G/pool" >/dev/null
	for _ in 1 2 3 4 5; do create_exec '{"templateID":"e2e-nopool"}'; done | median >"$T/plain"
	"$KILN" template rm e2e-nopool
	"$KILN" rm "$id"
	# a restarted kilnd finds its pools again (no clone lost or leaked)
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
	start_kilnd
	wait_pool e2e-pool 2 && sleep 0.3 && [ "$(vmms "$DATA")" = $((v0 + 2)) ]
	check $? "after a kilnd restart the pool is re-adopted, not doubled"
	"$KILN" template rm e2e-pool
	sleep 0.3
	[ "$(vmms "$DATA")" = "$v0" ]
	check $? "removing the template stops its pool's clones"
	# bounded by --max-sandboxes; a sandbox asked for evicts a pool clone
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d8" $(vmm_opts) --max-sandboxes 2 >"$T/kilnd8.log" 2>&1 &
	p8=$!
	wait_socket "$d8/kilnd.sock"
	KILN_DATA_DIR=$d8 "$KILN" template create e2e-p3 --pool 3 >/dev/null
	wait_pool e2e-p3 2 "$d8/kilnd.sock" && sleep 0.3 && [ "$(pool_ready e2e-p3 "$d8/kilnd.sock")" = 2 ] &&
		[ "$(vmms "$d8")" = 2 ]
	check $? "a pool of 3 under --max-sandboxes 2 stops at 2"
	a=$(KILN_DATA_DIR=$d8 "$KILN" create) && [ "$(KILN_DATA_DIR=$d8 "$KILN" exec "$a" -- echo room)" = room ] &&
		[ "$(vmms "$d8")" = 2 ] && grep -q 'leaves the pool of e2e-p3 to make room' "$T/kilnd8.log"
	check $? "a sandbox asked for at the limit evicts a pool clone instead of a 429"
	KILN_DATA_DIR=$d8 "$KILN" rm "$a"
	KILN_DATA_DIR=$d8 "$KILN" template rm e2e-p3
	kill $p8
	wait $p8
	pool=$(cat "$T/pool") plain=$(cat "$T/plain")
	echo "# create -> first exec (medians of 5): from the pool ${pool} ms, plain template clone ${plain} ms"
}

# kilnd --run-template: a create naming no image or template (kiln run's)
# clones the template, from its pool, only when that gives what a boot
# would (no warm-up, no egress rules) and the request fixes nothing else.
t_run_template() {
	local d=$T/data-run p tid sid out
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d" $(vmm_opts) --run-template e2e-run >"$T/kilnd-run.log" 2>&1 &
	p=$!
	wait_socket "$d/kilnd.sock"
	run_tid() { # BODY: the templateID of a sandbox created with BODY (then deleted)
		curl -s --unix-socket "$d/kilnd.sock" -o "$T/body" -d "$1" http://k/sandboxes
		tid=$(sed -n 's/.*"templateID":"\([^"]*\)".*/\1/p' "$T/body")
		sid=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
		[ -z "$sid" ] || KILN_DATA_DIR=$d "$KILN" rm "$sid"
		echo "$tid"
	}
	[ "$(run_tid '{}')" = busybox ]
	check $? "--run-template naming no template yet: a create boots the built-in image"
	KILN_DATA_DIR=$d "$KILN" template create e2e-run --pool 1 >/dev/null &&
		wait_pool e2e-run 1 "$d/kilnd.sock" &&
		out=$(KILN_DATA_DIR=$d "$KILN" run -- sh -c 'echo hi; exit 3')
	[ $? = 3 ] && [ "$out" = hi ] && grep -q 'taken from the pool of e2e-run' "$T/kilnd-run.log"
	check $? "kiln run -- CMD is a clone from the run template's pool (rc, output)"
	wait_pool e2e-run 1 "$d/kilnd.sock"
	[ "$(run_tid '{}')" = e2e-run ] && [ "$(run_tid '{"image":"busybox"}')" = busybox ] &&
		[ "$(run_tid '{"memoryMB":512}')" = busybox ] && [ "$(run_tid '{"cpuCount":2}')" != e2e-run ]
	# (real VMs: a 2-vCPU boot fails, one kernel vCPU; not a clone either way)
	check $? "only a create asking for nothing else clones it (image, memory, CPUs: boot)"
	KILN_DATA_DIR=$d "$KILN" template rm e2e-run
	KILN_DATA_DIR=$d "$KILN" template create e2e-run -- sh -c "echo warm >/tmp/w" >/dev/null &&
		[ "$(run_tid '{}')" = busybox ]
	check $? "a run template with a warm-up is not used (a boot instead)"
	KILN_DATA_DIR=$d "$KILN" template rm e2e-run
	KILN_DATA_DIR=$d "$KILN" template create e2e-run --no-internet >/dev/null &&
		[ "$(run_tid '{}')" = busybox ]
	check $? "a run template with egress rules is not used (a boot instead)"
	kill $p
	wait $p
}

t_fork() {
	local id out a b st
	id=$("$KILN" create) || { not_ok "create for fork"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo before-fork >$G/f1"
	out=$("$KILN" fork -n 2 "$id")
	a=$(sed -n 1p <<<"$out") b=$(sed -n 2p <<<"$out")
	[ -n "$a" ] && [ -n "$b" ] && [ "$("$KILN" exec "$a" -- cat "$G/f1")" = before-fork ] &&
		[ "$("$KILN" exec "$b" -- cat "$G/f1")" = before-fork ]
	check $? "kiln fork -n 2 makes two clones with the sandbox's files"
	[ "$(sb_field "$id" state)" = running ] && [ "$("$KILN" exec "$id" -- echo on)" = on ]
	check $? "the forked sandbox goes on running"
	[ ! -e "$DATA/forks" ] || [ -z "$(ls "$DATA/forks")" ]
	check $? "the fork's snapshot is gone once its clones run"
	if [ $FAKE = 0 ]; then
		[ "$("$KILN" exec "$a" -- head -c 16 /dev/urandom | od -An -tx1)" != \
			"$("$KILN" exec "$b" -- head -c 16 /dev/urandom | od -An -tx1)" ]
		check $? "forks read different random numbers"
	fi
	st=$(api POST "/sandboxes/$id/fork" -d '{"count":0}')
	[ "$st" = 400 ]
	check $? "fork of 0 clones is 400"
	"$KILN" pause "$id" >/dev/null
	"$KILN" fork "$id" 2>"$T/err"
	[ $? = 1 ] && grep -q 'is paused' "$T/err"
	check $? "a paused sandbox cannot be forked (resume it first)"
	"$KILN" rm "$id" "$a" "$b"
}

t_snap_errors() {
	local id st n0 size d4 p4
	# a damaged snapshot: refused, and the sandbox stays paused
	id=$("$KILN" create) || { not_ok "create for errors"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G && echo kept >$G/e1"
	"$KILN" pause "$id" >/dev/null
	cp "$DATA/sandboxes/$id/snapshot" "$T/snap.orig"
	printf '\377' | dd of="$DATA/sandboxes/$id/snapshot" bs=1 seek=30 conv=notrunc 2>/dev/null
	"$KILN" resume "$id" 2>"$T/err"
	[ $? = 1 ] && grep -q "cannot resume sandbox $id" "$T/err" && grep -qi 'checksum' "$T/err" &&
		[ "$(sb_field "$id" state)" = paused ] && ! vmm_alive "$id"
	check $? "a damaged snapshot: a clear error, still paused, no VMM left ($(head -c 300 "$T/err"))"
	cp "$T/snap.orig" "$DATA/sandboxes/$id/snapshot"
	"$KILN" resume "$id" >/dev/null && [ "$("$KILN" exec "$id" -- cat "$G/e1")" = kept ]
	check $? "once repaired it resumes"
	"$KILN" rm "$id"
	# the image changed under a paused sandbox
	if [ -f "$IMAGES/changing.erofs" ]; then
		id=$("$KILN" create --image changing)
		"$KILN" pause "$id" >/dev/null
		size=$(stat -c %s "$IMAGES/changing.erofs")
		truncate -s +4096 "$IMAGES/changing.erofs"
		"$KILN" resume "$id" 2>"$T/err"
		[ $? = 1 ] && grep -q 'image' "$T/err" && [ "$(sb_field "$id" state)" = paused ]
		check $? "an image that changed: refused, still paused ($(head -c 300 "$T/err"))"
		truncate -s "$size" "$IMAGES/changing.erofs"
		"$KILN" resume "$id" >/dev/null && [ "$("$KILN" exec "$id" -- busybox echo back)" = back ]
		check $? "with the image as it was it resumes"
		"$KILN" rm "$id"
	fi
	# a clone that cannot start leaves nothing
	"$KILN" template create e2e-broken >/dev/null
	printf '\377' | dd of="$DATA/templates/e2e-broken/template.snap" bs=1 seek=30 \
		conv=notrunc 2>/dev/null
	n0=$("$KILN" ls -q | wc -l)
	st=$(api POST /sandboxes -d '{"templateID":"e2e-broken"}')
	[ "$st" = 500 ] && grep -q 'checksum' "$T/body" && [ "$("$KILN" ls -q | wc -l)" = "$n0" ]
	check $? "a clone of a damaged template: 500 with the reason, no sandbox left"
	"$KILN" template rm e2e-broken
	# no space for a snapshot (the fake VMM only can run out on demand)
	if [ $FAKE = 1 ]; then
		d4=$T/data4
		# shellcheck disable=SC2046
		FAKE_VMM_SNAPSHOT_ENOSPC=1 "$KILND" --data-dir "$d4" $(vmm_opts) >"$T/kilnd4.log" 2>&1 &
		p4=$!
		wait_socket "$d4/kilnd.sock"
		id=$(KILN_DATA_DIR=$d4 "$KILN" create)
		st=$(curl -sS --unix-socket "$d4/kilnd.sock" -o "$T/body" -w '%{http_code}' -X POST \
			"http://k/sandboxes/$id/pause")
		[ "$st" = 507 ] && grep -q 'No space left' "$T/body" && grep -q 'MiB free of' "$T/body" &&
			[ "$(KILN_DATA_DIR=$d4 "$KILN" exec "$id" -- echo alive)" = alive ]
		check $? "no space for the snapshot: 507 with the free space, the sandbox runs on"
		KILN_DATA_DIR=$d4 "$KILN" rm "$id"
		kill $p4
		wait $p4
	fi
	st=$(api POST /sandboxes/nosuchsandbox/pause)
	[ "$st" = 404 ]
	check $? "pause of an unknown sandbox is 404"
}

t_auto_pause() {
	local id st
	st=$(api POST /sandboxes -d '{"timeout":1,"autoPause":true}')
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
	[ "$st" = 201 ] && grep -q '"onTimeout":"pause"' "$T/body"
	check $? "create with autoPause"
	sleep 2
	[ "$(sb_field "$id" state)" = paused ]
	check $? "at the end of its lifetime it is paused, not killed"
	st=$(api POST "/sandboxes/$id/connect")
	[ "$st" = 201 ]
	check $? "and connect brings it back"
	"$KILN" rm "$id"
}

# A data directory of a kilnd before snapshots (schema 1) is upgraded.
t_store_upgrade() {
	command -v sqlite3 >/dev/null || { echo "skip t_store_upgrade: no sqlite3"; return 0; }
	local d5=$T/data5 p5 id st
	mkdir -p "$d5"
	sqlite3 "$d5/kilnd.db" "CREATE TABLE sandboxes (id TEXT PRIMARY KEY, template TEXT NOT NULL,
		state TEXT NOT NULL, reason TEXT, pid INTEGER NOT NULL DEFAULT 0,
		pid_start INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL,
		end_ms INTEGER NOT NULL, died_ms INTEGER NOT NULL DEFAULT 0,
		memory_mb INTEGER NOT NULL, cpu_count INTEGER NOT NULL, env TEXT, metadata TEXT);
		INSERT INTO sandboxes VALUES ('oldsandbox0000000000', 'base', 'killed', 'old', 0, 0,
		$(date +%s)000, $(date +%s)000, $(date +%s)000, 256, 1, '{}', '{}');
		PRAGMA user_version = 1;"
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d5" $(vmm_opts) >"$T/kilnd5.log" 2>&1 &
	p5=$!
	wait_socket "$d5/kilnd.sock"
	st=$(curl -sS --unix-socket "$d5/kilnd.sock" -o "$T/body" -w '%{http_code}' \
		http://k/sandboxes/oldsandbox0000000000)
	[ "$st" = 200 ] && grep -q '"state":"killed"' "$T/body" &&
		[ "$(sqlite3 "$d5/kilnd.db" 'PRAGMA user_version')" = 9 ] &&
		[ "$(sqlite3 "$d5/kilnd.db" 'SELECT count(pause_base) FROM sandboxes')" = 0 ] &&
		[ "$(sqlite3 "$d5/kilnd.db" 'SELECT count(*) >= 0 FROM events')" = 1 ] &&
		[ "$(sqlite3 "$d5/kilnd.db" 'SELECT count(*) FROM net_pins')" = 0 ]
	check $? "a schema 1 store is upgraded, its sandboxes kept"
	id=$(KILN_DATA_DIR=$d5 "$KILN" create) && KILN_DATA_DIR=$d5 "$KILN" pause "$id" >/dev/null &&
		KILN_DATA_DIR=$d5 "$KILN" resume "$id" >/dev/null
	check $? "and sandboxes pause and resume there"
	KILN_DATA_DIR=$d5 "$KILN" rm "$id"
	kill $p5
	wait $p5
}
