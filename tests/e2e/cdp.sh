# shellcheck shell=bash
# kilnd end-to-end tests of browser sessions (control/browser/cdp.h) against
# a stand-in for Chromium's DevTools (tests/e2e/fake_devtools.py) that a
# launcher script starts, as the browser image's kiln-browser starts
# Chromium: kilnd runs with --browser-launcher $G/kiln-browser and
# --browser-port $CDP_PORT (run.sh). Playwright against the real browser
# image is tests/e2e/browser/. Sourced by run.sh.

# shellcheck disable=SC2034 # run.sh runs them
CDP_TESTS="t_cdp_no_browser t_cdp t_cdp_cli t_cdp_bad_clients t_cdp_browser_dies"

CDP_SB=

cdp_version() { # ID: GET .../cdp/json/version/ over TCP, status; body in $T/body
	curl -s -o "$T/body" -w '%{http_code}' -H "X-API-Key: $(key)" \
		"http://127.0.0.1:$PORT/sandboxes/$1/cdp/json/version/"
}

t_cdp_no_browser() {
	local id st
	id=$("$KILN" create --image base) || { not_ok "create for the CDP test"; return; }
	st=$(cdp_version "$id")
	[ "$st" = 409 ] && grep -q "has no browser: $G/kiln-browser is not in its image 'base'" "$T/body"
	check $? "an image without the launcher: 409 naming the image ($st: $(cat "$T/body"))"
	st=$(curl -s -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/sandboxes/$id/cdp/json/version")
	[ "$st" = 401 ]
	check $? "CDP without the API key is refused ($st)"
	st=$(api GET "/sandboxes/$id/cdp")
	[ "$st" = 426 ] && grep -q "is a WebSocket" "$T/body"
	check $? "GET /cdp without an upgrade: 426 that says what it is ($st)"
	"$KILN" rm "$id" >/dev/null
}

t_cdp() {
	local id st t0 t1 out pid1 pid2
	id=$("$KILN" create --image base --timeout 600) || { not_ok "create for the CDP test"; return; }
	"$KILN" exec "$id" -- mkdir -p "$G" &&
		"$KILN" cp tests/e2e/fake_devtools.py "$id:$G/fake_devtools.py" &&
		printf '#!/bin/sh\nexec python3 %s/fake_devtools.py "$KILN_BROWSER_PORT"\n' "$G" >"$T/kiln-browser" &&
		"$KILN" cp "$T/kiln-browser" "$id:$G/kiln-browser" &&
		"$KILN" exec "$id" -- chmod 755 "$G/kiln-browser" ||
		{ not_ok "the fake browser in the sandbox"; return; }
	CDP_SB=$id
	t0=$(date +%s%N)
	st=$(cdp_version "$id")
	t1=$(date +%s%N)
	[ "$st" = 200 ] && grep -q "\"webSocketDebuggerUrl\": *\"ws://127.0.0.1:$PORT/sandboxes/$id/cdp\"" "$T/body" &&
		grep -q '"Browser": *"FakeChrome/1.0"' "$T/body"
	check $? "a cold start: /json/version through kilnd, its URL pointing back ($st, $(((t1 - t0) / 1000000)) ms: $(cat "$T/body"))"
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$id" "$(key)" 2>&1)
	check $? "a CDP session through /sandboxes/ID/cdp: $out"
	pid1=${out##* }
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$id" "$(key)" 2>&1)
	pid2=${out##* }
	[ -n "$pid1" ] && [ "$pid1" = "$pid2" ]
	check $? "a second client finds the same browser (pid $pid1, then $pid2)"
}

t_cdp_cli() {
	[ -n "$CDP_SB" ] || { not_ok "t_cdp's sandbox"; return; }
	local out
	out=$("$KILN" --url "http://127.0.0.1:$PORT" --api-key "$(key)" browser "$CDP_SB" 2>"$T/err")
	[ "$out" = "ws://127.0.0.1:$PORT/sandboxes/$CDP_SB/cdp
http://127.0.0.1:$PORT/sandboxes/$CDP_SB/cdp" ] && grep -q "FakeChrome/1.0 answered" "$T/err"
	check $? "kiln browser ID prints the endpoint ($out; $(cat "$T/err"))"
	rm -f "$T/shot.png"
	"$KILN" browser "$CDP_SB" screenshot http://example.test/ "$T/shot.png" 2>"$T/err"
	[ $? = 0 ] && [ "$(head -c 8 "$T/shot.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] &&
		grep -q "navigating to http://example.test/" "$T/err" && grep -q "wrote $T/shot.png" "$T/err"
	check $? "kiln browser ID screenshot URL FILE writes the PNG, with progress ($(tr '\n' '|' <"$T/err"))"
	"$KILN" browser "$CDP_SB" screenshot http://fail.test/ "$T/shot2.png" 2>"$T/err"
	[ $? = 125 ] && grep -q "cannot load http://fail.test/: net::ERR_NAME_NOT_RESOLVED" "$T/err"
	check $? "a page that does not load is reported ($(tail -1 "$T/err"))"
}

t_cdp_bad_clients() {
	[ -n "$CDP_SB" ] || { not_ok "t_cdp's sandbox"; return; }
	local out t0 t1
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" garbage 2>&1)
	check $? "a client that sends garbage is closed: $out"
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" huge 2>&1)
	check $? "a client that announces a 1 GiB frame is closed: $out"
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" \
		"stall:$KILND_PID" 2>&1)
	check $? "a client that never reads a flood is cut off, kilnd unstalled: $out"
	t0=$(date +%s%N)
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" 2>&1)
	t1=$(date +%s%N)
	check $? "the browser serves the next client ($(((t1 - t0) / 1000000)) ms): $out"
}

t_cdp_browser_dies() {
	[ -n "$CDP_SB" ] || { not_ok "t_cdp's sandbox"; return; }
	local out pid1 pid2
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" 2>&1)
	pid1=${out##* }
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" crash 2>&1)
	grep -q "ended the connection" <<<"$out"
	check $? "a browser that dies under a client is reported to it: $out"
	out=$(python3 tests/e2e/port_client.py cdp "127.0.0.1:$PORT" "$CDP_SB" "$(key)" 2>&1)
	pid2=${out##* }
	[ -n "$pid2" ] && [ "$pid2" != "$pid1" ]
	check $? "the next connection starts a new browser (pid $pid1, then $pid2): $out"
	"$KILN" rm "$CDP_SB" >/dev/null
	# with the fake VMM the "guest" is the host: do not leave the browser running
	[ $FAKE = 1 ] && [ -n "$pid2" ] && kill "$pid2" 2>/dev/null
	true
}
