# The event log, GET /events (SSE), webhooks and secrets (control/events/,
# control/API.md "Events" and "Secrets"). Sourced by run.sh; its cases are
# EVENTS_TESTS. The cases that need other kilnd options start a kilnd of
# their own (its data in $T/ev-*).
# shellcheck shell=bash

EVENTS_TESTS="t_events_log t_events_lifecycle t_events_paging t_events_sse t_events_tenants t_events_sse_slow
t_events_webhook t_events_bounds t_secrets"
EVC="python3 $ROOT/tests/e2e/events_client.py"

# ev_json EXPR: EXPR in Python over the JSON in $T/body (as j).
ev_json() {
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$T/body"
}

# ev_kilnd DIR PORT [options]: another kilnd (pid in EV_PID), on TCP PORT.
ev_kilnd() {
	local d=$1 port=$2
	shift 2
	mkdir -p "$d"
	# shellcheck disable=SC2046
	"$KILND" --data-dir "$d" $(vmm_opts) --listen-tcp "127.0.0.1:$port" "$@" >>"$d.log" 2>&1 &
	EV_PID=$!
	EV_LOG=$d.log
	for _ in $(seq 200); do
		curl -s --unix-socket "$d/kilnd.sock" http://k/health >/dev/null 2>&1 && return 0
		kill -0 "$EV_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# Stop it; a sanitizer build's report in its log fails the case.
ev_stop() {
	kill "$EV_PID" 2>/dev/null
	wait "$EV_PID" 2>/dev/null
	EV_PID=
	if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$EV_LOG"; then
		not_ok "$(basename "$EV_LOG" .log) has no sanitizer report" \
			"$(grep -E -A 20 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$EV_LOG" | head -n 30)"
	fi
}

# metric_of FILE NAME: the value of NAME in a /metrics answer.
metric_of() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

t_events_log() {
	local id key st
	id=$("$KILN" create | tail -n 1)
	"$KILN" exec "$id" -- echo hi >/dev/null
	"$KILN" exec "$id" -- sh -c 'echo oops >&2; exit 3' >/dev/null 2>&1
	echo "some bytes" >"$T/ev-up"
	"$KILN" cp "$T/ev-up" "$id:$G-ev"
	api POST "/sandboxes/$id/files/remove" -d "{\"path\":\"$G-ev\"}" >/dev/null
	"$KILN" pause "$id" >/dev/null
	"$KILN" resume "$id" >/dev/null
	key=$(cat "$DATA/api-key")
	curl -s -o /dev/null -H "X-API-Key: $key" "http://127.0.0.1:$PORT/sandboxes/$id/exec" \
		-d '{"cmd":["true"]}'
	"$KILN" rm "$id"
	st=$(api GET "/sandboxes/$id/events")
	[ "$st" = 200 ] && [ "$(ev_json '" ".join(e["type"] for e in reversed(j["events"]))')" = \
		"sandbox.created exec.finished exec.finished file.written file.removed sandbox.paused sandbox.resumed exec.finished sandbox.killed" ]
	check $? "a session's events, oldest last, also after the sandbox is gone ($st: $(head -c 300 "$T/body"))"
	ev_json '[e for e in j["events"] if e["type"] == "exec.finished"][-1]' >"$T/ev-x"
	grep -q "'cmd': 'echo hi'" "$T/ev-x" && grep -q "'exitCode': 0" "$T/ev-x" &&
		grep -q "'stdoutBytes': 3" "$T/ev-x" && grep -q "'key': 'admin'" "$T/ev-x"
	check $? "exec.finished has the command line, exit status, bytes and who ($(cat "$T/ev-x"))"
	ev_json '[e for e in j["events"] if e["type"] == "exec.finished"][-2]' >"$T/ev-x"
	grep -q "'exitCode': 3" "$T/ev-x" && grep -q "'stderrBytes': 5" "$T/ev-x" &&
		grep -q "durationMs" "$T/ev-x"
	check $? "a failing command's status and stderr bytes ($(cat "$T/ev-x"))"
	ev_json '[e for e in j["events"] if e["type"] == "file.written"][0]' >"$T/ev-x"
	grep -q "'path': '$G-ev'" "$T/ev-x" && grep -q "'bytes': 11" "$T/ev-x"
	check $? "file.written has the path and size ($(cat "$T/ev-x"))"
	[ "$(ev_json '[e["key"] for e in j["events"] if e["type"] == "exec.finished"][0]')" = admin ] &&
		! grep -q "$key" "$T/body"
	check $? "the operator's key is recorded as admin, never itself"
	ev_json '[e for e in j["events"] if e["type"] == "sandbox.paused"][0]' >"$T/ev-x"
	grep -q "snapshotBytes" "$T/ev-x" && grep -q "'time': '20" "$T/ev-x"
	check $? "sandbox.paused has its snapshot size and an RFC 3339 time ($(cat "$T/ev-x"))"
	st=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/sandboxes/$id/events")
	[ "$st" = 401 ]
	check $? "without the API key over TCP it is 401 ($st)"
	st=$(api GET "/sandboxes/nosuchsandbox/events")
	[ "$st" = 404 ] && grep -q "no events of it are kept" "$T/body"
	check $? "a sandbox without events is 404 with why ($st $(cat "$T/body"))"
}

# What kilnd does on its own is kilnd's: a lifetime's end, a VMM that dies;
# a fork is on its source and each clone has its own created.
t_events_lifecycle() {
	local a b c clone pid
	a=$("$KILN" create --timeout 1 | tail -n 1)
	b=$("$KILN" create | tail -n 1)
	c=$("$KILN" create | tail -n 1)
	clone=$("$KILN" fork "$c" | tail -n 1)
	pid=$(cut -d' ' -f1 "$DATA/sandboxes/$b/run/vmm.pid")
	kill -9 "$pid"
	sleep 2
	api GET "/sandboxes/$a/events" >/dev/null
	ev_json '[e for e in j["events"] if e["type"] == "sandbox.timeout"]' >"$T/ev-x"
	grep -q "'action': 'kill'" "$T/ev-x" && grep -q "'key': 'kilnd'" "$T/ev-x"
	check $? "a lifetime that ends is sandbox.timeout, by kilnd ($(cat "$T/ev-x"))"
	api GET "/sandboxes/$b/events" >/dev/null
	ev_json '[e for e in j["events"] if e["type"] == "sandbox.error"]' >"$T/ev-x"
	grep -q "'key': 'kilnd'" "$T/ev-x" && grep -q "kiln-vmm (pid $pid)" "$T/ev-x"
	check $? "a VMM that dies is sandbox.error with the reason ($(head -c 300 "$T/ev-x"))"
	api GET "/sandboxes/$c/events" >/dev/null
	[ "$(ev_json '[e["clones"] for e in j["events"] if e["type"] == "sandbox.forked"]')" = "[['$clone']]" ]
	check $? "a fork is sandbox.forked on its source, with the clone's id"
	api GET "/sandboxes/$clone/events" >/dev/null
	[ "$(ev_json '[e["type"] for e in j["events"]]')" = "['sandbox.created']" ]
	check $? "and the clone's own log starts with sandbox.created"
	"$KILN" rm "$a" "$b" "$c" "$clone"
}

t_events_paging() {
	local id st all n cur ids
	id=$("$KILN" create | tail -n 1)
	for i in $(seq 24); do
		api POST "/sandboxes/$id/exec" -d "{\"cmd\":[\"echo\",\"$i\"]}" >/dev/null
	done
	api GET "/sandboxes/$id/events?limit=1000" >/dev/null
	all=$(ev_json '" ".join(str(e["id"]) for e in j["events"])')
	n=$(wc -w <<<"$all")
	ids=
	cur=
	for _ in 1 2 3 4 5; do
		api GET "/sandboxes/$id/events?limit=10${cur:+&before=$cur}" >/dev/null
		ids="$ids $(ev_json '" ".join(str(e["id"]) for e in j["events"])')"
		cur=$(ev_json 'j["next"] or ""')
		[ -z "$cur" ] && break
	done
	[ "$n" = 25 ] && [ "$(echo $ids)" = "$all" ] && [ -z "$cur" ]
	check $? "pages of 10 give the 25 events once each, newest first, then next is null ($n)"
	api GET "/sandboxes/$id/events?limit=10" >/dev/null
	[ "$(ev_json 'len(j["events"])')" = 10 ] && [ -n "$(ev_json 'j["next"]')" ]
	check $? "a full page has a next cursor"
	api GET "/sandboxes/$id/events?type=sandbox.created" >/dev/null
	[ "$(ev_json '[e["type"] for e in j["events"]]')" = "['sandbox.created']" ]
	check $? "?type= keeps one type"
	for q in limit=0 limit=1001 limit=x before=-1 before=1x 'type=<x>'; do
		st=$(api GET "/sandboxes/$id/events?$q")
		[ "$st" = 400 ] || break
	done
	[ "$st" = 400 ]
	check $? "bad limit, before or type are 400 ($q: $st $(cat "$T/body"))"
	api POST "/sandboxes/$id/events" >/dev/null
	st=$(api POST "/sandboxes/$id/events")
	[ "$st" = 405 ]
	check $? "POST is 405 ($st)"
	"$KILN" rm "$id"
}

t_events_sse() {
	local id key first rc
	key=$(cat "$DATA/api-key")
	rm -f "$T/ev-sse" "$T/ev-sse2"
	rm -f "$T/ev-ready"
	$EVC sse "127.0.0.1:$PORT" "$key" "$T/ev-sse" --ready "$T/ev-ready" \
		--until sandbox.created,sandbox.paused,sandbox.resumed,exec.finished --timeout 30 &
	local pid=$!
	for _ in $(seq 100); do [ -f "$T/ev-ready" ] && break; sleep 0.05; done
	id=$("$KILN" create | tail -n 1)
	"$KILN" pause "$id" >/dev/null
	"$KILN" resume "$id" >/dev/null
	"$KILN" exec "$id" -- true
	wait $pid
	rc=$?
	[ $rc = 0 ] && [ "$(python3 -c 'import json,sys
print(" ".join(json.loads(l)["type"] for l in open(sys.argv[1]) if l[0] == "{" and json.loads(l)["sandbox"] == sys.argv[2]))' "$T/ev-sse" "$id")" = \
		"sandbox.created sandbox.paused sandbox.resumed exec.finished" ]
	check $? "GET /events streams created, paused, resumed and exec.finished live ($rc: $(head -c 400 "$T/ev-sse"))"
	first=$(python3 -c 'import json,sys
print([json.loads(l)["id"] for l in open(sys.argv[1]) if l[0] == "{" and json.loads(l)["sandbox"] == sys.argv[2]][0])' "$T/ev-sse" "$id")
	$EVC sse "127.0.0.1:$PORT" "$key" "$T/ev-sse2" --last-event-id "$first" --sandbox "$id" \
		--until sandbox.paused,sandbox.resumed,exec.finished --timeout 10
	rc=$?
	[ $rc = 0 ] && [ "$(python3 -c 'import json,sys
print(" ".join(json.loads(l)["type"] for l in open(sys.argv[1]) if l[0] == "{"))' "$T/ev-sse2")" = \
		"sandbox.paused sandbox.resumed exec.finished" ]
	check $? "with Last-Event-ID it resumes from the store after that event ($rc: $(head -c 300 "$T/ev-sse2"))"
	st=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/events")
	[ "$st" = 401 ]
	check $? "GET /events without the API key is 401 ($st)"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-API-Key: $key" -H 'Last-Event-ID: x' \
		"http://127.0.0.1:$PORT/events")
	[ "$st" = 400 ]
	check $? "a bad Last-Event-ID is 400 ($st)"
	"$KILN" rm "$id"
}

# A tenant's events are its own: in the log, in GET /events, and who.
t_events_tenants() {
	local ka kb ida idb kid st
	ka=$("$KILN" key create --tenant evacme 2>/dev/null)
	kb=$("$KILN" key create --tenant evbeta 2>/dev/null)
	api GET /keys >/dev/null
	kid=$(ev_json '[k["id"] for k in j if k["tenant"] == "evacme"][0]')
	ida=$(KILN_API_KEY=$ka "$KILN" --url "http://127.0.0.1:$PORT" create | tail -n 1)
	idb=$(KILN_API_KEY=$kb "$KILN" --url "http://127.0.0.1:$PORT" create | tail -n 1)
	rm -f "$T/ev-b" "$T/ev-ready"
	$EVC sse "127.0.0.1:$PORT" "$kb" "$T/ev-b" --ready "$T/ev-ready" --until exec.finished \
		--timeout 20 &
	local pid=$!
	for _ in $(seq 100); do [ -f "$T/ev-ready" ] && break; sleep 0.05; done
	KILN_API_KEY=$ka "$KILN" --url "http://127.0.0.1:$PORT" exec "$ida" -- true
	KILN_API_KEY=$kb "$KILN" --url "http://127.0.0.1:$PORT" exec "$idb" -- true
	wait $pid
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-API-Key: $ka" \
		"http://127.0.0.1:$PORT/sandboxes/$ida/events")
	[ "$st" = 200 ] && [ "$(ev_json '{e["key"] for e in j["events"]}')" = "{'$kid'}" ]
	check $? "a tenant reads its sandbox's events, its key's id as who ($st $kid $(head -c 200 "$T/body"))"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-API-Key: $kb" \
		"http://127.0.0.1:$PORT/sandboxes/$ida/events")
	[ "$st" = 404 ]
	check $? "another tenant's are 404 ($st)"
	grep -q "\"$idb\"" "$T/ev-b" && ! grep -q "$ida" "$T/ev-b"
	check $? "GET /events of a tenant streams its own events only ($(grep -c . "$T/ev-b") lines)"
	"$KILN" rm "$ida" "$idb"
}

# A client that reads nothing is dropped once --sse-max-buffer is passed,
# while one that reads goes on; heartbeats come at --sse-heartbeat.
t_events_sse_slow() {
	local d=$T/data-ev-slow port=$((PORT + 7)) key id long out rc
	ev_kilnd "$d" "$port" --sse-max-buffer 16K --sse-heartbeat 0.3 || {
		not_ok "a kilnd with --sse-max-buffer starts"
		return
	}
	key=$(cat "$d/api-key")
	rm -f "$T/ev-ready" "$T/ev-ready2" "$T/ev-hb"
	$EVC slow "127.0.0.1:$port" "$key" "$T/ev-ready" 8 >"$T/ev-slow.out" &
	local pid=$!
	$EVC sse "127.0.0.1:$port" "$key" "$T/ev-hb" --until none --timeout 6 \
		--ready "$T/ev-ready2" &
	local hb=$!
	for _ in $(seq 50); do [ -f "$T/ev-ready" ] && [ -f "$T/ev-ready2" ] && break; sleep 0.1; done
	id=$(KILN_DATA_DIR=$d "$KILN" create | tail -n 1)
	long=$(printf 'x%.0s' $(seq 1000))
	for _ in $(seq 300); do
		curl -s --unix-socket "$d/kilnd.sock" -o /dev/null "http://k/sandboxes/$id/exec" \
			-d "{\"cmd\":[\"true\",\"$long\"]}"
		grep -q "dropping a GET /events client" "$d.log" && break
	done
	wait $pid
	out=$(cat "$T/ev-slow.out")
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-m" http://k/metrics
	[ "$out" = dropped ] && [ "$(metric_of "$T/ev-m" kiln_sse_dropped_total)" -ge 1 ] &&
		grep -q "dropping a GET /events client" "$d.log"
	check $? "a client that does not read is dropped past --sse-max-buffer ($out, $(grep -m1 dropping "$d.log"))"
	wait $hb
	grep -q '^#keepalive' "$T/ev-hb" && [ "$(grep -c exec.finished "$T/ev-hb")" -ge 10 ]
	check $? "a client that reads got every event and heartbeats ($(grep -c exec.finished "$T/ev-hb") execs)"
	[ "$(KILN_DATA_DIR=$d "$KILN" exec "$id" -- echo still)" = still ]
	check $? "kilnd serves on"
	KILN_DATA_DIR=$d "$KILN" rm "$id"
	ev_stop
}

t_events_webhook() {
	local d=$T/data-ev-wh port=$((PORT + 8)) wport=$((PORT + 9)) id n
	head -c 32 /dev/urandom | base64 >"$T/ev-secret"
	chmod 600 "$T/ev-secret"
	rm -f "$T/ev-wh.log"
	$EVC webhook "$wport" "$T/ev-secret" "$T/ev-wh.log" --fail-first 2 \
		--fail-type sandbox.killed &
	local srv=$!
	for _ in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$wport/" && break
		sleep 0.1
	done
	ev_kilnd "$d" "$port" --webhook "http://127.0.0.1:$wport/hook" --webhook-secret "$T/ev-secret" \
		--webhook-backoff 0.2 --webhook-retries 3 || {
		not_ok "a kilnd with --webhook starts"
		kill $srv
		return
	}
	id=$(KILN_DATA_DIR=$d "$KILN" create | tail -n 1)
	KILN_DATA_DIR=$d "$KILN" exec "$id" -- true
	KILN_DATA_DIR=$d "$KILN" rm "$id"
	# created: 2 x 500 then 200; exec.finished: 200; killed: 1 + 3 retries, all 500
	for _ in $(seq 100); do
		n=$(grep -c . "$T/ev-wh.log" 2>/dev/null)
		[ "${n:-0}" -ge 8 ] && break
		sleep 0.1
	done
	sleep 0.5
	python3 - "$T/ev-wh.log" "$id" >"$T/ev-wh.sum" <<'PY'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
print(all(r["sig_ok"] for r in rs), len(rs))
for t in ("sandbox.created", "exec.finished", "sandbox.killed"):
    a = [r["answer"] for r in rs if r["type"] == t and r["body"]["sandbox"] == sys.argv[2]]
    print(t, a, len({r["id"] for r in rs if r["type"] == t}))
PY
	grep -q "^True 8$" "$T/ev-wh.sum"
	check $? "every delivery carries a Kiln-Signature that checks out ($(head -1 "$T/ev-wh.sum"))"
	# (both may be under way at once: the two 500s fall on either)
	grep -q "^sandbox.created \[\(500, \)*200\] 1$" "$T/ev-wh.sum" &&
		grep -q "^exec.finished \[\(500, \)*200\] 1$" "$T/ev-wh.sum" &&
		[ "$(grep -E '^(sandbox.created|exec.finished)' "$T/ev-wh.sum" | grep -o 500 | wc -l)" = 2 ]
	check $? "a 500 is retried until it is delivered, the same event each time ($(tr '\n' ';' <"$T/ev-wh.sum"))"
	grep -q "^sandbox.killed \[500, 500, 500, 500\] 1$" "$T/ev-wh.sum"
	check $? "and given up after --webhook-retries"
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-m" http://k/metrics
	[ "$(metric_of "$T/ev-m" 'kiln_webhook_deliveries_total{result="ok"}')" = 2 ] &&
		[ "$(metric_of "$T/ev-m" 'kiln_webhook_deliveries_total{result="failed"}')" = 1 ] &&
		[ "$(metric_of "$T/ev-m" 'kiln_webhook_attempts_total{result="error"}')" = 6 ]
	check $? "/metrics counts deliveries and failed attempts ($(grep '^kiln_webhook' "$T/ev-m" | tr '\n' ' '))"
	grep -q "gave up event" "$d.log" && ! grep -q "$(cat "$T/ev-secret")" "$d.log"
	check $? "the give-up is logged, the secret is not"
	ev_stop
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	ev_kilnd "$T/ev-wh2" $((PORT + 10)) --webhook "https://127.0.0.1:$wport/" \
		--webhook-secret "$T/ev-secret"
	rc=$?
	wait "$EV_PID" 2>/dev/null
	EV_PID=
	[ $rc != 0 ] && grep -q "only http:// URLs" "$T/ev-wh2.log"
	check $? "an https:// webhook is refused at start with why ($(tail -1 "$T/ev-wh2.log"))"
}

# --events-max drops the oldest (counted), events outlive the sandbox and
# kilnd's restart, and --events-keep ends them.
t_events_bounds() {
	local d=$T/data-ev-bound port=$((PORT + 11)) id first n
	ev_kilnd "$d" "$port" --events-max 20 || {
		not_ok "a kilnd with --events-max starts"
		return
	}
	id=$(KILN_DATA_DIR=$d "$KILN" create | tail -n 1)
	for i in $(seq 30); do
		curl -s --unix-socket "$d/kilnd.sock" -o /dev/null "http://k/sandboxes/$id/exec" \
			-d '{"cmd":["true"]}'
	done
	KILN_DATA_DIR=$d "$KILN" rm "$id"
	sleep 0.2
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/body" "http://k/sandboxes/$id/events?limit=1000"
	n=$(ev_json 'len(j["events"])')
	first=$(ev_json 'j["events"][-1]["id"]')
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-m" http://k/metrics
	[ "$n" = 20 ] && [ "$first" = 13 ] && [ "$(metric_of "$T/ev-m" kiln_events_dropped_total)" = 12 ]
	check $? "--events-max 20 keeps the newest 20 and counts the 12 dropped ($n, oldest $first, $(grep '^kiln_events_dropped' "$T/ev-m"))"
	ev_stop
	ev_kilnd "$d" "$port" --events-max 20
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/body" "http://k/sandboxes/$id/events?limit=1000"
	[ "$(ev_json 'len(j["events"])')" = 20 ]
	check $? "they are there after a restart"
	ev_stop
	sleep 1.1
	ev_kilnd "$d" "$port" --events-keep 1s
	st=$(curl -s --unix-socket "$d/kilnd.sock" -o "$T/body" -w '%{http_code}' \
		"http://k/sandboxes/$id/events")
	[ "$st" = 404 ]
	check $? "--events-keep 1s lets them go ($st)"
	ev_stop
}

t_secrets() {
	local d=$T/data-ev-sec port=$((PORT + 12)) id val out st clone
	val="s3cr3t-$RANDOM$RANDOM-value"
	printf '%s\n' "file-$val" >"$T/ev-secfile"
	ev_kilnd "$d" "$port" || {
		not_ok "a kilnd for secrets starts"
		return
	}
	id=$(KILN_DATA_DIR=$d "$KILN" create --secret "API_TOKEN=$val" --secret-file "FROM_FILE=$T/ev-secfile" \
		-e PLAIN=visible | tail -n 1)
	out=$(KILN_DATA_DIR=$d "$KILN" exec "$id" -- sh -c 'echo "$API_TOKEN $FROM_FILE $PLAIN"')
	[ "$out" = "$val file-$val visible" ]
	check $? "secrets reach a command's environment, like env ($out)"
	KILN_DATA_DIR=$d "$KILN" exec "$id" -- echo "$val" >/dev/null
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-sb" "http://k/sandboxes/$id"
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-ls" "http://k/sandboxes"
	curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-evs" "http://k/sandboxes/$id/events"
	! grep -q "$val" "$T/ev-sb" "$T/ev-ls" "$T/ev-evs" && grep -q 'echo \[secret\]' "$T/ev-evs"
	check $? "they are not in GET /sandboxes[/{id}] or the events (an echo of one reads [secret])"
	clone=$(KILN_DATA_DIR=$d "$KILN" fork "$id" | tail -n 1)
	out=$(KILN_DATA_DIR=$d "$KILN" exec "$clone" -- sh -c 'echo $API_TOKEN')
	[ "$out" = "$val" ]
	check $? "a fork has them ($out)"
	ev_stop
	ev_kilnd "$d" "$port"
	out=$(KILN_DATA_DIR=$d "$KILN" exec "$id" -- sh -c 'echo $API_TOKEN')
	[ "$out" = "$val" ] && [ "$(stat -c %a "$d/kilnd.db")" = 600 ]
	check $? "after a kilnd restart too (kept in kilnd.db, mode $(stat -c %a "$d/kilnd.db"))"
	st=$(curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-err" -w '%{http_code}' \
		http://k/sandboxes -d "{\"secrets\":{\"=bad\":\"$val\"}}")
	[ "$st" = 400 ] && ! grep -q "$val" "$T/ev-err"
	check $? "a bad secret's error names it without its value ($st $(cat "$T/ev-err"))"
	st=$(curl -s --unix-socket "$d/kilnd.sock" -o "$T/ev-err" -w '%{http_code}' \
		http://k/sandboxes -d "{\"secrets\":{\"BIG\":\"$val$(head -c 20000 /dev/zero | tr '\0' x)\"}}")
	[ "$st" = 400 ] && ! grep -q "$val" "$T/ev-err"
	check $? "and one too long ($st $(head -c 200 "$T/ev-err"))"
	out=$(KILN_DATA_DIR=$d "$KILN" create --secret "=x$val" 2>&1)
	! grep -q "$val" <<<"$out"
	check $? "the CLI's refusal does not print it ($out)"
	KILN_DATA_DIR=$d "$KILN" rm "$id" "$clone"
	ev_stop
	! grep -q "$val" "$d.log" "$T/kilnd.log"
	check $? "kilnd's log never has them"
}
