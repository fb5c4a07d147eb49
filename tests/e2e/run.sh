#!/bin/bash
# kilnd end-to-end tests: the kiln CLI and raw HTTP clients against a real
# kilnd, which runs one VMM per sandbox. By default the VMM is the test
# double tests/e2e/fake-vmm (it serves the agent protocol itself, or relays
# to a host build of the real agent when one exists); set KILN_E2E_VMM (and
# KILN_E2E_KERNEL, KILN_E2E_INITRD) to run the same tests on real VMs.
#
#   make e2e                      (builds everything, then runs this)
#   bash tests/e2e/run.sh [NAME...] (only the named tests)
#   KILN_AGENT_HOST= bash tests/e2e/run.sh     (fake VMM's built-in agent)
#
# KILN_E2E_KILND and KILN_E2E_KILN pick other builds (e.g. with ASan).
# Images: with the fake VMM, empty stand-ins in a temporary directory; on
# real VMs KILN_E2E_IMAGES (default build/images, from make images) and
# KILN_E2E_IMAGE_INITRD (default agent-image.cpio next to the initrd).
# Pause, resume, templates and fork: tests/e2e/snapshots.sh.
#
# Prints "ok"/"not ok" per test and "N passed, N failed" at the end.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
KILND=${KILN_E2E_KILND:-$ROOT/build/bin/kilnd}
KILN=${KILN_E2E_KILN:-$ROOT/build/bin/kiln}
MAX_RSS_KB=${KILN_E2E_MAX_RSS_KB:-65536} # kilnd's peak; sanitizer builds need more
HOSTILE=$ROOT/build/tests/e2e/kiln-hostile
VMM=${KILN_E2E_VMM:-$ROOT/build/tests/e2e/fake-vmm}
KERNEL=${KILN_E2E_KERNEL:-$ROOT/build/guest/kiln-kernel}
INITRD=${KILN_E2E_INITRD:-$ROOT/build/initramfs/agent.cpio}
IMAGE_INITRD=${KILN_E2E_IMAGE_INITRD:-$(dirname "$INITRD")/agent-image.cpio}
FAKE=0
case $VMM in */fake-vmm) FAKE=1 ;; esac
# The fake VMM relays to the real agent when one is built (see fake_vmm.c).
AGENT=
if [ $FAKE = 1 ]; then
	if [ -n "${KILN_AGENT_HOST+set}" ]; then
		AGENT=$KILN_AGENT_HOST
	else
		for a in initramfs/kiln-agent-host tests/agent/kiln-agent-host initramfs/kiln-agent; do
			[ -x "$ROOT/build/$a" ] && { AGENT=$ROOT/build/$a; break; }
		done
	fi
fi

for f in "$KILND" "$KILN" "$HOSTILE" "$VMM"; do
	[ -x "$f" ] || { echo "e2e: missing $f (build with: make e2e)"; exit 1; }
done
command -v curl >/dev/null || { echo "e2e: curl is required"; exit 1; }

T=$(mktemp -d /tmp/kiln-e2e.XXXXXX)
DATA=$T/data
if [ $FAKE = 1 ]; then
	IMAGES=$T/images
	mkdir -p "$IMAGES"
	echo "a stand-in for an erofs image" >"$IMAGES/base.erofs"
	echo "another one" >"$IMAGES/minimal.erofs"
else
	IMAGES=${KILN_E2E_IMAGES:-$ROOT/build/images}
fi
SOCK=$DATA/kilnd.sock
PORT=$((20000 + RANDOM % 20000))
CDP_PORT=$((PORT + 2)) # the stand-in browser's DevTools port (cdp.sh)
# Paths inside the guest (with the fake VMM the guest's file system is the
# host's, so keep them unique).
G=/tmp/kiln-e2e-guest-$$
export KILN_DATA_DIR=$DATA
unset KILN_SOCKET KILN_URL KILN_API_KEY

PASS=0
FAIL=0
KILND_PID=
cleanup() {
	[ -n "$KILND_PID" ] && kill "$KILND_PID" 2>/dev/null
	# the VMMs outlive kilnd by design: end them by their recorded pids
	for p in "$T"/data*/sandboxes/*/run/vmm.pid; do
		[ -f "$p" ] && kill -9 -- "-$(cut -d' ' -f1 "$p")" 2>/dev/null
	done
	rm -rf "$T" "$G"
}
trap cleanup EXIT

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
not_ok() {
	FAIL=$((FAIL + 1))
	echo "not ok - $1"
	shift
	for line in "$@"; do echo "#   $line"; done
}
# CONDITION; check $? NAME: passes if the condition (any compound command)
# held. ($? goes first: expansions in NAME would overwrite it.)
check() {
	if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi
}

# kilnd's options for the VMM and its files (also for other kilnds). The
# sandboxes' DNS goes to a loopback port where nothing answers: a lookup a
# test triggers by accident fails here instead of leaving the machine
# (make e2e-net tests real lookups, inside a namespace of its own).
# The fake VMM's "guest" is its own processes on the host: it runs without
# the jail (whose pid namespace would end them with it at every pause;
# tests/e2e/jail.sh starts it jailed on purpose).
vmm_opts() {
	echo --vmm "$VMM" --kernel "$KERNEL" --initrd "$INITRD" --images "$IMAGES" \
		--image-initrd "$IMAGE_INITRD" --dns-server 127.0.0.1:53 \
		"$([ $FAKE = 1 ] && echo --no-jail)"
}

start_kilnd() {
	# shellcheck disable=SC2046 # vmm_opts' words are split on purpose
	"$KILND" --data-dir "$DATA" $(vmm_opts) --listen-tcp "127.0.0.1:$PORT" --domain "localhost:$PORT" \
		--browser-launcher "$G/kiln-browser" --browser-port "$CDP_PORT" \
		--header-timeout 2 --write-timeout 3 --body-timeout 5 --max-conns 200 "$@" \
		>>"$T/kilnd.log" 2>&1 &
	KILND_PID=$!
	for _ in $(seq 100); do
		curl -s --unix-socket "$SOCK" http://k/health >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "e2e: kilnd did not start; log:"
	cat "$T/kilnd.log"
	exit 1
}

wait_socket() {
	for _ in $(seq 200); do
		curl -s --unix-socket "$1" http://k/health >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# api METHOD PATH [curl args...]: body in $T/body, prints the status
api() {
	local m=$1 p=$2
	shift 2
	curl -sS --unix-socket "$SOCK" -X "$m" -o "$T/body" -w '%{http_code}' "$@" "http://k$p"
}

kilnd_rss_kb() { awk '/VmHWM/ {print $2}' "/proc/$KILND_PID/status"; }

# ---------------------------------------------------------------- tests

t_echo() {
	local out
	out=$("$KILN" run -- echo hi)
	[ "$out" = hi ]
	check $? "kiln run -- echo hi prints hi"
}

t_streams() {
	"$KILN" run -- sh -c 'for i in 1 2 3; do echo out$i; echo err$i >&2; done' \
		>"$T/o" 2>"$T/e"
	[ "$(cat "$T/o")" = "$(printf 'out1\nout2\nout3')" -a "$(cat "$T/e")" = "$(printf 'err1\nerr2\nerr3')" ]
	check $? "stdout and stderr arrive separately"
	"$KILN" run -- sh -c 'echo a; sleep 0.1; echo b >&2; sleep 0.1; echo c; sleep 0.1; echo d >&2' \
		>"$T/oe" 2>&1
	[ "$(tr -d '\n' <"$T/oe")" = abcd ]
	check $? "stdout and stderr keep their order"
	head -c 300000 /dev/urandom | base64 -w 100 >"$T/lines"
	"$KILN" run -i -- cat <"$T/lines" >"$T/lines.out"
	cmp -s "$T/lines" "$T/lines.out"
	check $? "300 KB through stdin and stdout byte-exact"
}

t_exit_codes() {
	local rc
	"$KILN" run -- sh -c 'exit 3'
	rc=$?
	[ $rc = 3 ]
	check $? "exit status propagates (3)"
	"$KILN" run -- true
	[ $? = 0 ]
	check $? "exit status 0"
	"$KILN" run -- sh -c 'kill -TERM $$'
	rc=$?
	[ $rc = 143 ]
	check $? "death by SIGTERM gives 143"
	"$KILN" run -- sh -c 'kill -KILL $$'
	rc=$?
	[ $rc = 137 ]
	check $? "death by SIGKILL gives 137"
	"$KILN" run -- /no/such/program 2>"$T/err"
	rc=$?
	[ $rc = 127 ] && grep -q "No such file" "$T/err"
	check $? "a missing program gives 127 and says why"
	local before
	before=$("$KILN" ls -q | wc -l)
	"$KILN" run -- yes | head -1 >/dev/null
	[ "${PIPESTATUS[0]}" = 141 ] && [ "$("$KILN" ls -q | wc -l)" = "$before" ]
	check $? "a closed stdout ends the command (141) and still deletes the sandbox"
	"$KILN" run -- sleep 30 &
	local rp=$!
	sleep 0.5
	kill -INT $rp
	wait $rp
	rc=$?
	sleep 0.2
	[ $rc = 130 ] && [ "$("$KILN" ls -q | wc -l)" = "$before" ]
	check $? "Ctrl-C on kiln run gives 130 and deletes the sandbox"
	"$KILN" run --cmd-timeout 1 -- sleep 10 2>/dev/null
	rc=$?
	[ $rc = 124 ]
	check $? "--cmd-timeout kills the command (124)"
}

t_files() {
	local id
	id=$("$KILN" create) || { not_ok "create for files"; return; }
	"$KILN" exec "$id" -- mkdir -p "$G" >/dev/null
	printf 'x' >"$T/one"
	: >"$T/zero"
	head -c 100000000 /dev/urandom >"$T/big"
	"$KILN" cp "$T/one" "$id:$G/one" && "$KILN" cp "$id:$G/one" "$T/one.back"
	cmp -s "$T/one" "$T/one.back"
	check $? "1-byte file round trip"
	"$KILN" cp "$T/zero" "$id:$G/zero" && "$KILN" cp "$id:$G/zero" "$T/zero.back"
	cmp -s "$T/zero" "$T/zero.back"
	check $? "empty file round trip"
	"$KILN" cp "$T/big" "$id:$G/big" && "$KILN" cp "$id:$G/big" "$T/big.back"
	cmp -s "$T/big" "$T/big.back"
	check $? "100 MB file round trip byte-exact"
	[ "$(kilnd_rss_kb)" -lt $MAX_RSS_KB ]
	check $? "kilnd did not buffer the 100 MB (peak RSS $(kilnd_rss_kb) KiB < 64 MiB)"

	mkdir -p "$T/tree/a/b c/d" "$T/tree/empty dir"
	echo one >"$T/tree/a/1.txt"
	head -c 70000 /dev/urandom >"$T/tree/a/b c/bin"
	: >"$T/tree/a/b c/d/empty"
	chmod 0751 "$T/tree/a/1.txt"
	"$KILN" cp "$T/tree" "$id:$G/tree" && "$KILN" cp "$id:$G/tree" "$T/tree.back"
	diff -r "$T/tree" "$T/tree.back"
	check $? "directory tree round trip"
	[ "$(stat -c %a "$T/tree.back/a/1.txt")" = 751 ]
	check $? "file modes survive the round trip"

	"$KILN" exec "$id" -- sh -c "echo hello >$G/in-guest"
	[ "$("$KILN" cp "$id:$G/in-guest" -)" = hello ]
	check $? "a file written by a command is readable"
	local st
	st=$(api GET "/sandboxes/$id/files/list?path=$G/tree/a")
	[ "$st" = 200 ] && grep -q '"name":"1.txt"' "$T/body"
	check $? "files/list answers 200 with entries"
	st=$(api GET "/sandboxes/$id/files?path=$G/nope")
	[ "$st" = 404 ] && [ "$(grep -o "$G/nope" "$T/body" | wc -l)" = 1 ]
	check $? "reading a missing file is 404, the path named once"
	"$KILN" cp "$T/one" "$id:$G/no/such/one" 2>"$T/err"
	[ $? = 1 ] && grep -q "the directory $G/no/such does not exist in the sandbox" "$T/err"
	check $? "kiln cp into a missing directory says so"
	"$KILN" cp "$id:$G/in-guest" "$T/no/such/file" 2>"$T/err"
	[ $? = 1 ] && grep -q "cannot create a file in $T/no/such" "$T/err" && [ ! -e "$T/no" ]
	check $? "kiln cp out to a missing local directory says so"
	st=$(api POST "/sandboxes/$id/files/rename" -d "{\"from\":\"$G/one\",\"to\":\"$G/two\"}")
	[ "$st" = 204 ] && [ "$("$KILN" cp "$id:$G/two" -)" = x ]
	check $? "files/rename"
	st=$(api POST "/sandboxes/$id/files/remove" -d "{\"path\":\"$G/tree\",\"recursive\":true}")
	[ "$st" = 204 ] && [ "$(api GET "/sandboxes/$id/files/stat?path=$G/tree")" = 404 ]
	check $? "files/remove recursive"
	st=$(api POST "/sandboxes/$id/files/mkdir" -d "{\"path\":\"$G/m/n/o\"}")
	[ "$st" = 204 ] && grep -q '"type":"dir"' <(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$id/files/stat?path=$G/m/n/o")
	check $? "files/mkdir makes parents"

	# Atomic uploads: while a slow upload runs and after it breaks, readers
	# see the old content, never a partial file.
	printf 'old content' >"$T/old"
	"$KILN" cp "$T/old" "$id:$G/atomic"
	curl -sS --unix-socket "$SOCK" -T "$T/big" --limit-rate 4M \
		"http://k/sandboxes/$id/files?path=$G/atomic" >/dev/null 2>&1 &
	local cpid=$!
	sleep 1.5
	"$KILN" cp "$id:$G/atomic" "$T/during"
	kill $cpid
	wait $cpid 2>/dev/null
	sleep 0.5
	"$KILN" cp "$id:$G/atomic" "$T/after"
	cmp -s "$T/old" "$T/during"
	check $? "during a slow upload the old content is served"
	cmp -s "$T/old" "$T/after"
	check $? "a broken upload leaves the old content"
	"$KILN" rm "$id"
}

t_concurrent() {
	local n=20 i pids=() ids
	: >"$T/ids"
	for i in $(seq $n); do
		("$KILN" create >>"$T/ids") &
		pids+=($!)
	done
	wait "${pids[@]}"
	[ "$(wc -l <"$T/ids")" = $n ]
	check $? "$n sandboxes created concurrently"
	pids=()
	i=0
	for id in $(cat "$T/ids"); do
		i=$((i + 1))
		(
			for j in $(seq 10); do
				out=$("$KILN" exec "$id" -- sh -c "echo $i-\$((j=$j*2))")
				[ "$out" = "$i-$((j * 2))" ] || { echo "bad: $id $j '$out'"; exit 1; }
			done
		) >"$T/conc.$i" 2>&1 &
		pids+=($!)
	done
	local bad=0
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
	[ $bad = 0 ]
	check $? "$n sandboxes x 10 commands concurrently, all right"
	[ "$("$KILN" ls -q --state running | grep -cFf "$T/ids")" = $n ]
	check $? "all $n are listed as running"
	"$KILN" rm $(cat "$T/ids")
	[ "$("$KILN" ls -q | grep -cFf "$T/ids")" = 0 ]
	check $? "all $n deleted"
}

# The agent keeps a stream's connection for the next one (KILN_FRAME_REUSE):
# requests that end in every way follow each other in one sandbox.
t_reuse() {
	local id st i bad=0 big
	id=$("$KILN" create)
	big=$(head -c 2000000 /dev/zero | tr '\0' a)
	printf '{"cmd":["true"],"stdin":"%s"}' "$big" >"$T/big.json"
	for i in 1 2 3; do
		st=$(api POST "/sandboxes/$id/exec" -d @"$T/big.json")
		[ "$st" = 200 ] && grep -q '"exitCode":0' "$T/body" || bad=1
		st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":["echo","ok"]}')
		[ "$st" = 200 ] && grep -q '"data":"b2sK"' "$T/body" || bad=2
		st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":["/nonexistent/cmd"]}')
		[ "$st" = 404 ] || bad=3
		st=$(api GET "/sandboxes/$id/metrics")
		[ "$st" = 200 ] && grep -q '"memTotal"' "$T/body" || bad=4
		st=$(api GET "/sandboxes/$id/files/stat?path=/")
		[ "$st" = 200 ] && grep -q '"type":"dir"' "$T/body" || bad=5
		st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":["sh","-c","exit 7"]}')
		[ "$st" = 200 ] && grep -q '"exitCode":7' "$T/body" || bad=6
	done
	[ $bad = 0 ]
	check $? "exec with unread input, output, a failed start, metrics, stat, exit 7, three times over (failed at step $bad)"
	"$KILN" rm "$id"
}

t_bad_requests() {
	local st id
	id=$("$KILN" create)
	st=$(api POST /sandboxes -d '{"templateID": "base",')
	[ "$st" = 400 ] && grep -q '"code":400' "$T/body"
	check $? "malformed JSON is 400"
	st=$(api POST /sandboxes -d '[1,2]')
	[ "$st" = 400 ]
	check $? "a JSON array is 400"
	st=$(api POST /sandboxes -d '{"memoryMB": 1}')
	[ "$st" = 400 ]
	check $? "memoryMB out of range is 400"
	st=$(api POST /sandboxes -d '{"templateID": "nope"}')
	[ "$st" = 400 ]
	check $? "unknown template is 400"
	st=$(api POST /sandboxes -d "{\"metadata\":{\"k\":\"$(head -c 100000 /dev/zero | tr '\0' a)\"}}")
	[ "$st" = 413 ]
	check $? "a 100 KB create body is 413"
	st=$(api GET /sandboxes/doesnotexist)
	[ "$st" = 404 ] && grep -q '"code":404' "$T/body"
	check $? "unknown sandbox is 404 with an E2B error body"
	st=$(api DELETE /sandboxes/doesnotexist)
	[ "$st" = 404 ]
	check $? "DELETE of an unknown sandbox is 404"
	st=$(api POST /sandboxes/doesnotexist/exec -d '{"cmd":["true"]}')
	[ "$st" = 404 ]
	check $? "exec in an unknown sandbox is 404"
	st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":[]}')
	[ "$st" = 400 ]
	check $? "exec without a command is 400"
	st=$(api POST "/sandboxes/$id/exec" -d '{"cmd":["true"],"timeoutMs":-5}')
	[ "$st" = 400 ]
	check $? "exec with a negative timeout is 400"
	st=$(api PATCH /sandboxes)
	[ "$st" = 405 ]
	check $? "a wrong method is 405"
	st=$(api GET /nothing/here)
	[ "$st" = 404 ]
	check $? "an unknown path is 404"
	[ "$("$HOSTILE" headers "$SOCK" 4 8000)" = "HTTP/1.1 431 Request Header Fields Too Large" ]
	check $? "huge headers are 431"
	[ "$("$HOSTILE" headers "$SOCK" 150 4)" = "HTTP/1.1 431 Request Header Fields Too Large" ]
	check $? "too many headers are 431"
	[ "$(printf 'HELLO\r\n\r\n' | "$HOSTILE" raw "$SOCK")" = "HTTP/1.1 400 Bad Request" ]
	check $? "garbage is 400"
	[ "$(printf 'POST /sandboxes HTTP/1.1\r\nContent-Length: x\r\n\r\n' | "$HOSTILE" raw "$SOCK")" = "HTTP/1.1 400 Bad Request" ]
	check $? "a bad Content-Length is 400"
	st=$(api GET "/sandboxes/$id/pty")
	[ "$st" = 426 ]
	check $? "pty without an upgrade is 426"
	[ "$("$HOSTILE" ws-unmasked "$SOCK" "/sandboxes/$id/pty")" = "close 1002" ]
	check $? "an unmasked WebSocket frame gets close 1002"

	# Slow and stuck clients are cut off while others are served.
	"$HOSTILE" slowloris "$SOCK" 8 >"$T/slow" &
	local sp=$!
	"$HOSTILE" ws-noread "$SOCK" "/sandboxes/$id/pty?cmd=yes%20kiln-e2e-flood" 15 >"$T/noread" &
	local wp=$!
	sleep 0.5
	local t0 t1
	t0=$(date +%s%N)
	"$KILN" exec "$id" -- echo still-here >"$T/alive"
	t1=$(date +%s%N)
	[ "$(cat "$T/alive")" = still-here -a $(((t1 - t0) / 1000000)) -lt 1000 ]
	check $? "kilnd answers others while hostile clients hang on ($(((t1 - t0) / 1000000)) ms)"
	wait $sp
	[ $? = 0 ]
	check $? "slowloris is cut off at the header deadline ($(cat "$T/slow"))"
	wait $wp
	[ $? = 0 ]
	check $? "a WebSocket that never reads is cut off ($(cat "$T/noread"))"
	[ "$(kilnd_rss_kb)" -lt $MAX_RSS_KB ]
	check $? "kilnd's memory stayed bounded (peak RSS $(kilnd_rss_kb) KiB)"
	[ "$(api GET /health)" = 200 ]
	check $? "kilnd is still responsive"
	"$KILN" rm "$id"
}

t_max_conns() {
	# --max-conns is 200 here
	[ "$("$HOSTILE" hold "$SOCK" 200)" = "HTTP/1.1 503 Service Unavailable" ]
	check $? "past --max-conns a client gets 503"
	sleep 0.3
	[ "$(api GET /health)" = 200 ]
	check $? "and kilnd recovers when they leave"
}

t_pty() {
	local id out rc
	id=$("$KILN" create)
	out=$(printf 'stty size\necho pty-$((6*7))\nexit 7\n' | "$KILN" shell "$id" 2>&1)
	rc=$?
	grep -q pty-42 <<<"$out"
	check $? "kiln shell runs commands on a terminal"
	grep -q '24 80' <<<"$out"
	check $? "the terminal has the default size 24x80"
	[ $rc = 7 ]
	check $? "kiln shell exits with the shell's status"
	out=$("$HOSTILE" ws-script "$SOCK" "/sandboxes/$id/pty?cols=90&rows=20" | tr -d '\r')
	grep -q '30 100' <<<"$out"
	check $? "resize messages reach the terminal; fragmented input is joined"
	grep -q '"exitCode":5' <<<"$out" && grep -q '\[close 1000\]' <<<"$out"
	check $? "the pty ends with an exit message and a normal close"
	"$KILN" rm "$id"
}

t_e2b_api() {
	local st id
	st=$(api POST /sandboxes -H 'Content-Type: application/json' \
		-d '{"templateID":"base","timeout":60,"metadata":{"owner":"e2e"},"envVars":{"GREETING":"hej"}}')
	[ "$st" = 201 ]
	check $? "POST /sandboxes is 201"
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
	grep -q '"clientID":' "$T/body" && grep -q '"envdVersion":"0' "$T/body" && grep -q '"templateID":"base"' "$T/body"
	check $? "the answer has E2B's fields"
	[ "$("$KILN" exec "$id" -- sh -c 'echo $GREETING')" = hej ]
	check $? "envVars reach commands"
	st=$(api GET "/v2/sandboxes?metadata=owner%3De2e")
	[ "$st" = 200 ] && grep -q "$id" "$T/body"
	check $? "GET /v2/sandboxes filters by metadata"
	st=$(api GET "/sandboxes/$id")
	[ "$st" = 200 ] && grep -q '"state":"running"' "$T/body" && grep -q '"endAt":' "$T/body"
	check $? "GET /sandboxes/{id} has state and endAt"
	st=$(api POST "/sandboxes/$id/timeout" -d '{"timeout":120}')
	[ "$st" = 204 ]
	check $? "POST /sandboxes/{id}/timeout is 204"
	st=$(curl -s -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/sandboxes")
	[ "$st" = 401 ]
	check $? "TCP without an API key is 401"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-API-KEY: $(cat "$DATA/api-key")" \
		"http://127.0.0.1:$PORT/sandboxes/$id")
	[ "$st" = 200 ]
	check $? "TCP with X-API-Key is 200"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $(cat "$DATA/api-key")" \
		"http://127.0.0.1:$PORT/sandboxes/$id")
	[ "$st" = 200 ]
	check $? "TCP with a bearer token is 200"
	[ "$(KILN_URL=http://127.0.0.1:$PORT "$KILN" exec "$id" -- echo via-tcp)" = via-tcp ]
	check $? "the CLI works over TCP"
	st=$(api GET "/sandboxes/$id/logs")
	[ "$st" = 200 ]
	check $? "GET logs is 200"
	st=$(api DELETE "/sandboxes/$id")
	[ "$st" = 204 ]
	check $? "DELETE is 204"
	st=$(api DELETE "/sandboxes/$id")
	[ "$st" = 404 ]
	check $? "a second DELETE is 404"
}

t_lifecycle() {
	local id st pid
	id=$("$KILN" create --timeout 1)
	sleep 2
	st=$(api GET "/sandboxes/$id")
	grep -q '"state":"killed"' "$T/body"
	check $? "a sandbox past its timeout is killed"
	"$KILN" exec "$id" -- true 2>"$T/err"
	grep -q "killed, not running" "$T/err"
	check $? "exec in a killed sandbox is refused (409)"
	"$KILN" rm "$id"

	id=$("$KILN" create)
	api GET "/sandboxes/$id" >/dev/null
	pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/body")
	kill -9 "$pid"
	sleep 0.5
	api GET "/sandboxes/$id" >/dev/null
	 grep -q '"state":"error"' "$T/body" && grep -q 'killed by signal 9' "$T/body"
	check $? "a crashed VMM is reaped and the sandbox marked error"
	"$KILN" rm "$id"

	if [ $FAKE = 1 ] && [ -z "$AGENT" ]; then
		id=$("$KILN" create)
		"$KILN" exec "$id" -- kiln-fake-exit 3 2>/dev/null
		sleep 0.3
		api GET "/sandboxes/$id" >/dev/null
		 grep -q 'exited with status 3' "$T/body" && grep -q 'powered off' "$T/body"
		check $? "a guest that powers off: error with exit status and console"
		"$KILN" rm "$id"
	fi
}

t_restart() {
	local a b c pa out
	a=$("$KILN" create)
	b=$("$KILN" create)
	c=$("$KILN" create)
	"$KILN" exec "$a" -- sh -c "mkdir -p $G && echo survived >$G/restart"
	kill -9 "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
	# one VM dies while kilnd is away
	pa=$(cut -d' ' -f1 "$DATA/sandboxes/$c/run/vmm.pid")
	kill -9 "$pa"
	sleep 0.2
	"$KILN" ls >/dev/null 2>"$T/err"
	grep -q "try 'kiln up'" "$T/err"
	check $? "with kilnd down the CLI says how to fix it"
	start_kilnd
	out=$("$KILN" ls --state running)
	 grep -q "$a" <<<"$out" && grep -q "$b" <<<"$out"
	check $? "after SIGKILL and restart, running sandboxes are listed"
	[ "$("$KILN" exec "$b" -- echo back)" = back ]
	check $? "and usable"
	[ "$("$KILN" exec "$a" -- cat $G/restart)" = survived ]
	check $? "with their files"
	api GET "/sandboxes/$c" >/dev/null
	 grep -q '"state":"error"' "$T/body" && grep -q 'while kilnd was not running' "$T/body"
	check $? "a VM that died meanwhile is reported as error, not lost"
	# an adopted VM (no longer kilnd's child) is still watched
	pa=$(cut -d' ' -f1 "$DATA/sandboxes/$b/run/vmm.pid")
	kill -9 "$pa"
	sleep 0.5
	api GET "/sandboxes/$b" >/dev/null
	grep -q '"state":"error"' "$T/body"
	check $? "an adopted VM that dies is noticed"
	"$KILN" rm "$a" "$b" "$c"
}

# A data directory given relative to kilnd's cwd: VMMs run in their sandbox's
# directory, so every path kilnd hands them must be absolute.
t_relative_data_dir() {
	local st p3 id
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$(realpath --relative-to=. "$T")/data-rel" $(vmm_opts) >"$T/kilnd3.log" 2>&1 &
	p3=$!
	wait_socket "$T/data-rel/kilnd.sock"
	st=$(curl -sS --unix-socket "$T/data-rel/kilnd.sock" -o "$T/body" -w '%{http_code}' \
		-d '{}' http://k/sandboxes)
	id=$(sed -n 's/.*"sandboxID":"\([^"]*\)".*/\1/p' "$T/body")
	[ "$st" = 201 ] && [ -n "$id" ] &&
		[ "$(curl -sS --unix-socket "$T/data-rel/kilnd.sock" -o /dev/null -w '%{http_code}' \
			-X DELETE "http://k/sandboxes/$id")" = 204 ]
	check $? "a kilnd whose --data-dir is relative starts sandboxes ($st $(head -c 200 "$T/body"))"
	kill $p3
	wait $p3
}

t_boot_failures() {
	[ $FAKE = 1 ] || return 0
	local d2=$T/data2 st
	# shellcheck disable=SC2046
	FAKE_VMM_EXIT=3 "$KILND" --data-dir "$d2" $(vmm_opts) >"$T/kilnd2.log" 2>&1 &
	local p2=$!
	wait_socket "$d2/kilnd.sock"
	st=$(curl -sS --unix-socket "$d2/kilnd.sock" -o "$T/body" -w '%{http_code}' -d '{}' http://k/sandboxes)
	[ "$st" = 500 ] && grep -q 'status 3' "$T/body" && grep -q 'simulated boot failure' "$T/body"
	check $? "a VMM that fails to boot: 500 with its status and console"
	kill $p2
	wait $p2
	# shellcheck disable=SC2046
	FAKE_VMM_BOOT_DELAY_MS=3000 "$KILND" --data-dir "$d2" $(vmm_opts) --boot-timeout 0.5 \
		>>"$T/kilnd2.log" 2>&1 &
	p2=$!
	wait_socket "$d2/kilnd.sock"
	st=$(curl -sS --unix-socket "$d2/kilnd.sock" -o "$T/body" -w '%{http_code}' -d '{}' http://k/sandboxes)
	[ "$st" = 500 ] && grep -q 'did not answer within 0.5 s' "$T/body"
	check $? "an agent that never answers: 500 after --boot-timeout"
	kill $p2
	wait $p2
}

t_cli() {
	local d3=$T/data3 out
	out=$("$KILN" --data-dir "$d3" up -- --vmm "$VMM" --kernel "$KERNEL" --initrd "$INITRD")
	grep -q "kilnd is running" <<<"$out"
	check $? "kiln up starts kilnd"
	out=$("$KILN" --data-dir "$d3" up)
	grep -q "kilnd is running" <<<"$out"
	check $? "kiln up is idempotent"
	[ "$("$KILN" --data-dir "$d3" run -- echo up-ok)" = up-ok ]
	check $? "and it works"
	out=$("$KILN" --data-dir "$d3" down)
	grep -q "stopped" <<<"$out"
	check $? "kiln down stops it"
	grep -q "shell" <<<"$("$KILN" --help)"
	check $? "kiln --help lists the commands"
	grep -q "usage: kiln cp" <<<"$("$KILN" cp --help)"
	check $? "per-command help"
	"$KILN" create --bogus 2>/dev/null
	[ $? = 2 ]
	check $? "a bad option is exit status 2"
	local t0=$SECONDS err
	err=$("$KILN" --data-dir "$T/data-up" up -- --bogus 2>&1)
	[ $? = 1 ] && [ $((SECONDS - t0)) -lt 5 ] && grep -q "kilnd exited at start" <<<"$err" &&
		grep -q "unrecognized option '--bogus'" <<<"$err"
	check $? "kiln up of a kilnd that exits says why at once"
	err=$(KILND=/nonexistent/kilnd "$KILN" --data-dir "$T/data-up" up 2>&1)
	[ $? = 1 ] && grep -q "cannot run /nonexistent/kilnd" <<<"$err"
	check $? "kiln up without a kilnd to run"
}

# The mistakes a user makes get a message that says what is wrong, on
# stderr, and a non-zero exit status.
t_cli_errors() {
	local out err rc id
	[[ "$("$KILN" --version)" =~ ^kiln\ [0-9] && "$("$KILND" --version)" =~ ^kilnd\ [0-9] ]]
	check $? "kiln --version and kilnd --version"
	err=$("$KILN" --bogus ls 2>&1 >/dev/null)
	rc=$?
	[ $rc = 2 ] && grep -q "unknown option --bogus" <<<"$err"
	check $? "an unknown global option is named"
	for c in "exec nosuch -- true" "resume nosuch" "fork nosuch" "logs nosuch" "rm nosuch"; do
		# shellcheck disable=SC2086 # the words of $c are the arguments
		err=$("$KILN" $c 2>&1 >/dev/null)
		rc=$?
		[ $rc != 0 ] && [ "$err" = "kiln: sandbox nosuch not found" ]
		check $? "kiln $c: the sandbox is not found (status $rc: $err)"
	done
	out=$("$KILN" rm 2>"$T/err")
	rc=$?
	[ $rc = 2 ] && [ -z "$out" ] && grep -q "usage: kiln rm" "$T/err"
	check $? "a usage error goes to stderr"
	err=$("$KILN" ls --state bogus 2>&1 >/dev/null)
	rc=$?
	[ $rc = 1 ] && grep -q "state must be" <<<"$err"
	check $? "kiln ls --state with an unknown state"
	[ "$(api GET '/sandboxes?state=running,bogus')" = 400 ] &&
		[ "$(api GET '/sandboxes?state=running,paused')" = 200 ]
	check $? "GET /sandboxes?state= checks the states"
	"$KILN" ls --state 2>/dev/null
	[ $? = 2 ]
	check $? "kiln ls --state without a value"
	err=$("$KILN" fork -n 33 nosuch 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q "\-n must be between 1 and 32" <<<"$err"
	check $? "kiln fork -n out of range names -n"
	err=$("$KILN" run --mem 12Q -- true 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q "\-\-mem wants a positive number, got '12Q'" <<<"$err"
	check $? "a malformed --mem is refused before asking kilnd"
	err=$("$KILN" run --mem 100000 -- true 2>&1)
	rc=$?
	[ $rc = 125 ] && [ "$err" = "kiln: --mem must be between 64 and 65536" ]
	check $? "kilnd's range for --mem is given under the option's name ($err)"
	err=$("$KILN" run --image nosuch -- true 2>&1)
	rc=$?
	[ $rc = 125 ] && grep -q "unknown image 'nosuch' (images: busybox" <<<"$err"
	check $? "an unknown image lists the images there are"
	err=$("$KILN" run --timeout 1 -- sleep 5 2>&1 >/dev/null)
	rc=$?
	[ $rc = 125 ] && grep -q "is killed: the sandbox's timeout expired" <<<"$err"
	check $? "a command cut by the sandbox's timeout says so (status $rc: $err)"
	id=$("$KILN" create --timeout 1) && sleep 2.5
	err=$("$KILN" exec "$id" -- true 2>&1)
	rc=$?
	[ $rc = 125 ] && grep -q "is killed, not running: the sandbox's timeout expired" <<<"$err"
	check $? "exec in a sandbox whose timeout expired says why"
	"$KILN" rm "$id"
	err=$("$KILN" template create t -- 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q "no warm-up command" <<<"$err"
	check $? "template create with nothing after --"
	err=$("$KILN" template create t --warm 'echo hi' 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q "goes after --" <<<"$err"
	check $? "template create says where the warm-up command goes"
}

# shellcheck source=tests/e2e/snapshots.sh
. tests/e2e/snapshots.sh
# shellcheck source=tests/e2e/metrics.sh
. tests/e2e/metrics.sh
# shellcheck source=tests/e2e/ports.sh
. tests/e2e/ports.sh
# shellcheck source=tests/e2e/cdp.sh
. tests/e2e/cdp.sh
# shellcheck source=tests/e2e/attach.sh
. tests/e2e/attach.sh
# shellcheck source=tests/e2e/oom.sh
. tests/e2e/oom.sh
# shellcheck source=tests/e2e/hardening.sh
. tests/e2e/hardening.sh
# shellcheck source=tests/e2e/tenants.sh
. tests/e2e/tenants.sh
# shellcheck source=tests/e2e/image_defaults.sh
. tests/e2e/image_defaults.sh
# shellcheck source=tests/e2e/jail.sh
. tests/e2e/jail.sh
# shellcheck source=tests/e2e/events.sh
. tests/e2e/events.sh
# shellcheck source=tests/e2e/users.sh
. tests/e2e/users.sh
# shellcheck source=tests/e2e/host_cpuid.sh
. tests/e2e/host_cpuid.sh
# shellcheck source=tests/e2e/dir_pool.sh
. tests/e2e/dir_pool.sh

ALL="t_echo t_streams t_exit_codes t_files t_concurrent t_reuse t_bad_requests t_max_conns t_pty
t_e2b_api t_lifecycle t_restart t_boot_failures t_relative_data_dir t_cli t_cli_errors $SNAPSHOT_TESTS $PORT_TESTS
$CDP_TESTS $METRICS_TESTS $HARDENING_TESTS $TENANT_TESTS $ATTACH_TESTS $OOM_TESTS $IMAGE_DEFAULT_TESTS $JAIL_TESTS
$EVENTS_TESTS $USERS_TESTS $HOST_CPUID_TESTS $DIR_POOL_TESTS"
echo "e2e: kilnd with VMM $VMM${AGENT:+ relaying to the agent $AGENT} (data in $T)"
start_kilnd
for t in ${*:-$ALL}; do
	case $t in t_*) ;; *) t=t_$t ;; esac
	$t
done
# A sanitizer build (KILN_E2E_KILND) reports memory errors in its log, and
# leaks only at exit: stop kilnd first, then read the whole log.
if [ -n "$KILND_PID" ]; then
	kill "$KILND_PID" 2>/dev/null
	wait "$KILND_PID" 2>/dev/null
	KILND_PID=
fi
if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/kilnd.log"; then
	not_ok "kilnd's log has no sanitizer report (memory error, leak, undefined behaviour)"
	grep -E -A 40 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/kilnd.log" | head -n 80 | sed 's/^/#   /'
else
	ok "kilnd's log has no sanitizer report (memory error, leak, undefined behaviour)"
fi
echo
echo "$PASS passed, $FAIL failed"
[ $FAIL = 0 ]
