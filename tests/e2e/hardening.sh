#!/bin/bash
# kilnd e2e tests of the holes a hostile probe found (issue 16), sourced by
# tests/e2e/run.sh: names that become paths, authentication of every
# route, kernel pinning across restarts, connection budgets, console caps.
# shellcheck disable=SC2154 # T, DATA, SOCK, PORT ... come from run.sh

HARDENING_TESTS="t_names t_auth t_pin_pause t_unauth_flood t_console_cap t_unsaved
t_unknown_vmm t_odd_input t_timeout_session"

# Names that become paths: one rule for templates, images and sandboxes,
# and nothing outside DATA_DIR/templates/NAME is ever removed.
t_names() {
	local n st bad=0 long
	long=$(head -c 65 /dev/zero | tr '\0' a)
	for n in .. . .hidden -rf "a/b" "../x" "$long"; do
		st=$(api POST /templates -d "{\"name\":\"$n\",\"warmup\":[\"true\"]}")
		if [ "$st" != 400 ] || [ ! -f "$DATA/api-key" ] || [ ! -f "$DATA/kilnd.db" ] ||
			[ ! -d "$DATA/sandboxes" ]; then
			bad=1
			echo "# template name '$n': status $st"
			break
		fi
	done
	[ $bad = 0 ] && [ "$(api GET /health)" = 200 ]
	check $? "template names '..', '.', '.hidden', '-rf', 'a/b', 65 bytes are 400; the data dir stays"
	for n in .. . "a/b"; do
		st=$(api POST /sandboxes -d "{\"templateID\":\"$n\"}")
		[ "$st" = 400 ] || bad=1
		st=$(api POST /sandboxes -d "{\"image\":\"$n\"}")
		[ "$st" = 400 ] || bad=1
	done
	[ $bad = 0 ] && [ -f "$DATA/api-key" ]
	check $? "sandboxes of template or image '..', '.', 'a/b' are 400"
	st=$(api DELETE /templates/.. --path-as-is)
	[ "$st" = 404 ] && [ -f "$DATA/kilnd.db" ]
	check $? "DELETE /templates/.. is 404 and removes nothing"
}

# tcp_ci ID PATH [curl args]: a code interpreter request over TCP; prints
# the status
tcp_ci() {
	local id=$1 p=$2
	shift 2
	curl -s -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 49999' \
		"$@" "http://127.0.0.1:$PORT$p"
}

# Every route wants the API key or the sandbox's token; ids stay out of
# the command lines every local user can read.
t_auth() {
	local id st traffic pid
	id=$("$KILN" create) || { not_ok "create for auth"; return; }
	traffic=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$id" |
		sed -n 's/.*"trafficAccessToken":"\([0-9a-f]*\)".*/\1/p')
	st=$(tcp_ci "$id" /contexts)
	[ "$st" = 401 ]
	check $? "the code interpreter's port without a token is 401 ($st)"
	st=$(tcp_ci "$id" /execute -H 'Content-Type: application/json' -d '{"code":"1"}')
	[ "$st" = 401 ]
	check $? "runCode without a token is 401 ($st)"
	st=$(tcp_ci "$id" /contexts -H "X-Access-Token: $(sb_token "$id")x")
	[ "$st" = 401 ]
	check $? "and with a wrong one ($st)"
	[ -n "$traffic" ] && [ "$(tcp_ci "$id" /contexts -H "E2B-Traffic-Access-Token: $traffic")" = 200 ] &&
		[ "$(tcp_ci "$id" /contexts -H "X-Access-Token: $(sb_token "$id")")" = 200 ] &&
		[ "$(tcp_ci "$id" /contexts -H "X-API-Key: $(cat "$DATA/api-key")")" = 200 ]
	check $? "with the traffic token, the envd token or the API key it is 200"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $id" \
		"http://127.0.0.1:$PORT/health")
	[ "$st" = 401 ]
	check $? "envd's /health without a token is 401 ($st)"
	"$KILN" pause "$id" >/dev/null
	st=$(tcp_ci "$id" /execute -H 'Content-Type: application/json' -d '{"code":"1"}')
	sleep 0.3
	[ "$st" = 401 ] && [ "$(sb_field "$id" state)" = paused ]
	check $? "an unauthenticated runCode does not resume a paused sandbox ($st)"
	"$KILN" resume "$id" >/dev/null
	pid=$(cut -d' ' -f1 "$DATA/sandboxes/$id/run/vmm.pid")
	[ -n "$pid" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$id" &&
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--vsock'
	check $? "the VMM's command line does not name the sandbox ($(tr '\0' ' ' <"/proc/$pid/cmdline"))"
	"$KILN" rm "$id"
}

# Kernel pinning is idempotent across kilnd restarts, and a pause that
# cannot snapshot never kills.
t_pin_pause() {
	local a b st d=$T/data-pin p
	a=$("$KILN" create) || { not_ok "create for pinning"; return; }
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	start_kilnd
	b=$("$KILN" create) # pins the kernel again
	st=$(api POST "/sandboxes/$a/pause")
	[ "$st" = 204 ] && [ "$(sb_field "$a" state)" = paused ]
	check $? "a sandbox from before a kilnd restart can still be paused ($st: $(cat "$T/body"))"
	"$KILN" rm "$a" "$b"

	[ $FAKE = 1 ] || return 0 # (the fake VMM fails snapshots on request)
	# shellcheck disable=SC2046
	FAKE_VMM_SNAPSHOT_ENOSPC=1 "$KILND" --data-dir "$d" $(vmm_opts) >"$T/kilnd-pin.log" 2>&1 &
	p=$!
	wait_socket "$d/kilnd.sock"
	st=$(curl -sS --unix-socket "$d/kilnd.sock" -o "$T/body" -w '%{http_code}' \
		-d '{"timeout":1,"autoPause":true}' http://k/sandboxes)
	a=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
	sleep 2.5
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/body" "http://k/sandboxes/$a"
	[ "$st" = 201 ] && grep -q '"state":"running"' "$T/body" &&
		grep -q 'pausing it failed (tried again every 60 s' "$T/body" &&
		[ "$(KILN_DATA_DIR=$d "$KILN" exec "$a" -- echo alive)" = alive ]
	check $? "an auto-pause that cannot snapshot leaves the sandbox running, saying why ($st: $(cat "$T/body"))"
	KILN_DATA_DIR=$d "$KILN" rm "$a"
	kill "$p"
	wait "$p" 2>/dev/null
}

# 1,030 TCP connections that send nothing: /health still answers on TCP
# and on the unix socket, an authenticated client gets in, and the idle
# ones are closed after --unauth-timeout (default 5 s).
t_unauth_flood() {
	local d=$T/data-flood p port=$((PORT + 1)) hp st t0 key up tcp_h unix_h authed
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d" $(vmm_opts) --listen-tcp "127.0.0.1:$port" \
		>"$T/kilnd-flood.log" 2>&1 &
	p=$!
	wait_socket "$d/kilnd.sock"
	key=$(cat "$d/api-key")
	"$HOSTILE" idle "tcp:$port" 1030 12 >"$T/flood" &
	hp=$!
	for _ in $(seq 100); do
		grep -q "open 1030" "$T/flood" && break
		sleep 0.05
	done
	up=$(cat "$T/flood")
	tcp_h=$(curl -s -m 3 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")
	unix_h=$(curl -s -m 3 -o /dev/null -w '%{http_code}' --unix-socket "$d/kilnd.sock" http://k/health)
	authed=$(curl -s -m 3 -o /dev/null -w '%{http_code}' -H "X-API-Key: $key" \
		"http://127.0.0.1:$port/sandboxes")
	[ "$up" = "open 1030" ] && [ "$tcp_h" = 200 ] && [ "$unix_h" = 200 ] && [ "$authed" = 200 ]
	check $? "under 1,030 idle TCP connections /health answers on TCP ($tcp_h) and unix ($unix_h), a key gets in ($authed)"
	t0=$SECONDS
	for _ in $(seq 100); do
		[ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -lt 5 ] && break
		sleep 0.1
	done
	[ $((SECONDS - t0)) -lt 10 ] && [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -lt 5 ]
	check $? "kilnd closes unauthenticated idle connections after --unauth-timeout ($((SECONDS - t0)) s)"
	kill "$hp" 2>/dev/null
	wait "$hp" 2>/dev/null
	kill "$p"
	wait "$p" 2>/dev/null
}

# A guest that prints without end: console.log is capped (--console-max,
# default 4 MiB) and rotated to console.log.1; GET /logs serves both.
t_console_cap() {
	[ $FAKE = 1 ] || return 0 # (the fake VMM's guest floods on request)
	local d=$T/data-console p id dir max=0 size i done_=0
	# shellcheck disable=SC2046
	FAKE_VMM_CONSOLE_FLOOD_MB=300 "$KILND" --data-dir "$d" $(vmm_opts) >"$T/kilnd-console.log" 2>&1 &
	p=$!
	wait_socket "$d/kilnd.sock"
	id=$(KILN_DATA_DIR=$d "$KILN" create) || { not_ok "create for the console"; kill "$p"; return; }
	dir=$d/sandboxes/$id/run/ # its console.log: on the run root (kilnd --run-dir)
	for i in $(seq 150); do # 15 s at most; the flood takes about 2
		size=$(du -sk "$dir" | cut -f1)
		[ "$size" -gt $max ] && max=$size
		grep -q "console flood done" "$dir/console.log" 2>/dev/null && { done_=1; break; }
		sleep 0.1
	done
	[ $done_ = 1 ] && [ $max -lt 32768 ] && [ "$(du -sk "$dir" | cut -f1)" -lt 12288 ] &&
		[ -f "$dir/console.log.1" ]
	check $? "300 MiB of console output leave at most $max KiB on disk (cap 4 MiB, rotated)"
	curl -s --unix-socket "$d/kilnd.sock" "http://k/sandboxes/$id/logs" >"$T/logs"
	[ "$(tail -1 "$T/logs")" = "console flood done" ] && [ "$(wc -c <"$T/logs")" -le 9437184 ]
	check $? "GET logs serves the rotated log and the current one ($(wc -c <"$T/logs") bytes)"
	KILN_DATA_DIR=$d "$KILN" rm "$id"
	kill "$p"
	wait "$p" 2>/dev/null
}

# vmms_in DATA_DIR: the pids of fake VMMs working under DATA_DIR/sandboxes
vmm_pids_in() {
	local p
	for p in $(pgrep -f -- "--vsock [0-9]+,"); do
		case $(readlink "/proc/$p/cwd" 2>/dev/null) in "$1"/sandboxes/*) echo "$p" ;; esac
	done
}

# A create that cannot be recorded (the disk is full) fails and leaves
# nothing running; a VMM the store does not know is stopped at start.
t_unsaved() {
	[ $FAKE = 1 ] || return 0 # kilnd's own behaviour: the fake VMM suffices
	local d=$T/data-full p st n0
	command -v unshare >/dev/null && command -v nsenter >/dev/null ||
		{ echo "skip t_unsaved: no unshare or nsenter"; return 0; }
	mkdir -p "$d"
	# kilnd in a mount namespace of its own, its data on a 16 MiB tmpfs
	# shellcheck disable=SC2016,SC2046
	unshare -m --propagation private sh -c 'mount -t tmpfs -o size=16m kiln-e2e "$1" &&
		shift && exec "$@"' sh "$d" "$KILND" --data-dir "$d" --socket "$T/full.sock" \
		$(vmm_opts) >"$T/kilnd-full.log" 2>&1 &
	p=$!
	wait_socket "$T/full.sock" || { not_ok "kilnd on a tmpfs ($(tail -3 "$T/kilnd-full.log"))"; return; }
	st=$(curl -sS --unix-socket "$T/full.sock" -o "$T/body" -w '%{http_code}' -d '{}' http://k/sandboxes)
	[ "$st" = 201 ]
	check $? "a create on the small disk works while there is room"
	n0=$(vmm_pids_in "$d" | wc -l)
	nsenter -t "$p" -m sh -c "cat /dev/zero >'$d/fill'" 2>/dev/null
	st=$(curl -sS --unix-socket "$T/full.sock" -o "$T/body" -w '%{http_code}' -d '{}' http://k/sandboxes)
	sleep 0.3
	[ "$st" = 507 ] && grep -q "cannot record the sandbox in the state store" "$T/body" &&
		[ "$(vmm_pids_in "$d" | wc -l)" = "$n0" ]
	check $? "with the disk full a create fails (507) and starts nothing ($st: $(cat "$T/body"))"
	kill "$p"
	wait "$p" 2>/dev/null
	vmm_pids_in "$d" | xargs -r kill -9
}

t_unknown_vmm() {
	[ $FAKE = 1 ] || return 0 # (a fake VMM started by hand)
	local id=orphan0000000000000 dir vp
	dir=$DATA/sandboxes/$id
	mkdir -p "$dir"
	(cd "$dir" && exec "$VMM" --kernel "$KERNEL" --initrd "$INITRD" --vsock 3,vsock.sock \
		--api-sock api.sock >console.log 2>&1) &
	vp=$!
	echo "$vp" >"$dir/vmm.pid"
	sleep 0.3
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	start_kilnd
	sleep 0.3
	! kill -0 "$vp" 2>/dev/null && [ ! -e "$dir" ] &&
		grep -q "sandbox $id: stopping its VMM (pid $vp): the state store has no record of it" "$T/kilnd.log"
	check $? "at start kilnd stops a VMM it has no record of, and removes its directory"
	kill -9 "$vp" 2>/dev/null
	wait "$vp" 2>/dev/null
}

# The smaller holes: names and paths that are not UTF-8, a body that never
# completes, a data directory others can read.
t_odd_input() {
	local id st d=$T/data-perm p
	id=$("$KILN" create) || { not_ok "create for odd input"; return; }
	"$KILN" exec "$id" -- sh -c "mkdir -p $G/nu && : >$G/nu/\$(printf 'bad\\377name')"
	st=$(api GET "/sandboxes/$id/files/list?path=$G/nu")
	[ "$st" = 200 ] && grep -q "$(printf '"name":"bad\357\277\275name"')" "$T/body"
	check $? "files/list with a name that is not UTF-8 is 200, U+FFFD in its place ($st)"
	st=$(curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $(sb_token "$id")" -H 'Content-Type: application/json' \
		-d "{\"path\":\"$G/nu\"}" http://k/filesystem.Filesystem/ListDir)
	[ "$st" = 200 ] && grep -q "$(printf 'bad\357\277\275name')" "$T/body"
	check $? "envd ListDir with such a name is 200 ($st)"
	st=$(curl -s --path-as-is -o "$T/body" -w '%{http_code} %{content_type}' --unix-socket "$SOCK" \
		"http://k/sandboxes/%FF%FEx")
	[ "$st" = "404 application/json" ] && grep -q '"code":404' "$T/body"
	check $? "a request path that is not UTF-8 gets a JSON 404 ($st)"
	st=$(printf 'POST /sandboxes HTTP/1.1\r\nHost: k\r\nContent-Length: 100\r\n\r\n{"time' |
		"$HOSTILE" raw "$SOCK")
	[ "$st" = "HTTP/1.1 408 Request Timeout" ]
	check $? "a body that stops short gets 408 at --body-timeout ($st)"
	"$KILN" rm "$id"
	mkdir -m 0755 "$d"
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d" $(vmm_opts) >"$T/kilnd-perm.log" 2>&1 &
	p=$!
	wait_socket "$d/kilnd.sock"
	[ "$(stat -c %a "$d")" = 700 ]
	check $? "an existing data directory is made 0700 ($(stat -c %a "$d"))"
	kill "$p"
	wait "$p" 2>/dev/null
}

# An exec timeout ends the whole command, children that called setsid()
# included (they are in a session and group of their own).
t_timeout_session() {
	local id rc t0 n p m=kiln-e2e-spin-$$
	id=$("$KILN" create) || { not_ok "create for the timeout"; return; }
	t0=$SECONDS
	"$KILN" exec --cmd-timeout 1 "$id" -- sh -c "setsid sh -c 'while :; do :; done' $m & wait" \
		>/dev/null 2>&1
	rc=$?
	sleep 0.5
	n=$("$KILN" exec "$id" -- sh -c 'for p in /proc/[0-9]*; do { tr "\0" " " <$p/cmdline; } 2>/dev/null; echo; done' |
		grep -c "[k]${m#k}")
	[ $rc = 124 ] && [ $((SECONDS - t0)) -lt 8 ] && [ "$n" = 0 ]
	check $? "--cmd-timeout kills a setsid child too (status $rc, $n left)"
	"$KILN" rm "$id"
	[ $FAKE = 1 ] && for p in /proc/[0-9]*; do # (with the fake VMM the guest is the host)
		grep -qa -- "$m" "$p/cmdline" 2>/dev/null && kill -9 "${p#/proc/}"
	done
}
