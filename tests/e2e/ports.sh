# shellcheck shell=bash
# kilnd end-to-end tests of inbound ports (control/net/ports.h): a server in
# the sandbox (tests/e2e/port_server.py, in the base image on real VMs; on
# the host with the fake VMM, whose guest is the host) reached through the
# path form, the Host form (getHost), kiln port-forward and the raw TCP
# WebSocket, checked with curl and tests/e2e/port_client.py. Sourced by
# run.sh, whose helpers and variables they use.

# shellcheck disable=SC2034 # run.sh runs them
PORT_TESTS="t_ports_http t_ports_ws t_ports_errors t_ports_forward t_ports_peer
t_ports_backpressure t_ports_resume t_ports_old_agent"

PORTS_SB=
PORTS_HTTP=
PORTS_TCP=

# A sandbox running port_server.py (made once, shared by the port tests).
ports_sandbox() {
	[ -n "$PORTS_SB" ] && return 0
	local id i
	id=$("$KILN" create --image base --timeout 600) || return 1
	PORTS_HTTP=$((41000 + RANDOM % 10000))
	PORTS_TCP=$((PORTS_HTTP + 1))
	"$KILN" exec "$id" -- mkdir -p "$G/ports" &&
		"$KILN" cp tests/e2e/port_server.py "$id:$G/ports/port_server.py" &&
		"$KILN" exec "$id" -- sh -c "python3 $G/ports/port_server.py $PORTS_HTTP $PORTS_TCP \
			>$G/ports/server.log 2>&1 &" || return 1
	for i in $(seq 100); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
			"http://k/sandboxes/$id/ports/$PORTS_HTTP/headers")" = 200 ] && break
		sleep 0.1
	done
	PORTS_SB=$id
}

key() { cat "$DATA/api-key"; }

t_ports_http() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	local id=$PORTS_SB p=$PORTS_HTTP st out
	# the path form, over the unix socket (no key) and over TCP (the key)
	out=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$id/ports/$p/bytes?n=5")
	[ "$out" = xxxxx ]
	check $? "GET through /sandboxes/ID/ports/PORT/... ($out)"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-API-Key: $(key)" \
		"http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/headers")
	[ "$st" = 200 ] && grep -q '"X-Forwarded-Prefix": "/sandboxes/'"$id/ports/$p"'"' "$T/body" &&
		! grep -qi 'x-api-key' "$T/body" && grep -q '"Connection": "close"' "$T/body"
	check $? "the guest sees X-Forwarded-Prefix, Connection: close and no API key ($st)"
	# the Host form that getHost() answers (curl resolves *.localhost to loopback)
	out=$(curl -s -H "X-API-Key: $(key)" "http://$p-$id.localhost:$PORT/bytes?n=3")
	[ "$out" = xxx ]
	check $? "GET through the host name $p-$id.localhost:$PORT ($out)"
	st=$(curl -s -o "$T/body" -w '%{http_code}' "http://$p-$id.localhost:$PORT/bytes?n=3")
	[ "$st" = 401 ] && grep -q "not public" "$T/body"
	check $? "the Host form without the API key is refused ($st)"
	[ "$(sb_field "$id" domain)" = "localhost:$PORT" ]
	check $? "the sandbox's domain is kilnd's --domain ($(sb_field "$id" domain))"
	# request bodies, streamed both ways: with a length and chunked
	head -c $((24 << 20)) /dev/urandom >"$T/up"
	want="$(stat -c %s "$T/up") $(sha256sum "$T/up" | cut -d' ' -f1)"
	out=$(curl -s --unix-socket "$SOCK" --data-binary @"$T/up" "http://k/sandboxes/$id/ports/$p/sum")
	[ "$out" = "$want" ]
	check $? "a 24 MiB POST body with Content-Length arrives whole ($out)"
	out=$(curl -s --unix-socket "$SOCK" -H 'Transfer-Encoding: chunked' --data-binary @"$T/up" \
		"http://k/sandboxes/$id/ports/$p/sum")
	[ "$out" = "$want" ]
	check $? "a chunked 24 MiB POST body arrives whole ($out)"
	out=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$id/ports/$p/bytes?n=$((32 << 20))" |
		wc -c)
	[ "$out" = $((32 << 20)) ]
	check $? "a 32 MiB answer arrives whole ($out bytes)"
	st=$(curl -s -o /dev/null -w '%{http_code}' -I --unix-socket "$SOCK" \
		"http://k/sandboxes/$id/ports/$p/bytes?n=5")
	[ "$st" = 501 ]
	check $? "HEAD is relayed (http.server answers 501 to it: $st)"
}

t_ports_ws() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	out=$(python3 tests/e2e/port_client.py ws "127.0.0.1:$PORT" \
		"/sandboxes/$PORTS_SB/ports/$PORTS_HTTP/ws" "$(key)" 2>&1)
	check $? "a WebSocket echo through the path form: $out"
}

t_ports_errors() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	local id=$PORTS_SB st closed=$((PORTS_HTTP + 2))
	st=$(api GET "/sandboxes/$id/ports/$closed/")
	[ "$st" = 502 ] && grep -q "port $closed of sandbox $id is closed" "$T/body"
	check $? "a closed port answers 502 naming the port ($st: $(cat "$T/body"))"
	st=$(curl -s -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/sandboxes/$id/ports/$PORTS_HTTP/")
	[ "$st" = 401 ]
	check $? "the path form over TCP without the API key is refused ($st)"
	st=$(api GET "/sandboxes/$id/ports/0/")
	[ "$st" = 400 ] && grep -q "bad port" "$T/body"
	check $? "port 0 is refused ($st)"
	st=$(api GET "/sandboxes/$id/ports/99999/")
	[ "$st" = 400 ]
	check $? "port 99999 is refused ($st)"
	st=$(api GET "/sandboxes/nosuch/ports/80/")
	[ "$st" = 404 ]
	check $? "an unknown sandbox's port is 404 ($st)"
	# public ports: no key needed
	st=$(api POST /sandboxes -H 'Content-Type: application/json' -d '{"publicPorts":true}')
	local pub
	pub=$(sed -n 's/.*"sandboxID":"\([^"]*\)".*/\1/p' "$T/body")
	st=$(curl -s -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/sandboxes/$pub/ports/$closed/")
	[ "$st" = 502 ] && [ "$(sb_field "$pub" publicPorts)" = true ]
	check $? "a sandbox created with publicPorts answers without the key ($st)"
	"$KILN" rm "$pub" >/dev/null
}

# kiln port-forward of PORTS_SB's two ports to free local ones, in the
# background: PF_HTTP and PF_TCP (local ports), PF_PID and PF2_PID (the
# processes; pf.out and pf2.out their output).
forward_both() {
	local i
	"$KILN" port-forward "$PORTS_SB" "$PORTS_HTTP" 0 >"$T/pf.out" 2>&1 &
	PF_PID=$!
	"$KILN" port-forward "$PORTS_SB" "$PORTS_TCP" 0 >"$T/pf2.out" 2>&1 &
	PF2_PID=$!
	for i in $(seq 50); do
		grep -q Forwarding "$T/pf.out" && grep -q Forwarding "$T/pf2.out" && break
		sleep 0.1
	done
	PF_HTTP=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$T/pf.out")
	PF_TCP=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$T/pf2.out")
}

t_ports_forward() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	local lp lt pf pf2 out
	# LOCAL 0: a free port, printed
	forward_both
	lp=$PF_HTTP lt=$PF_TCP pf=$PF_PID pf2=$PF2_PID
	out=$(curl -s "http://127.0.0.1:$lp/bytes?n=4")
	[ "$out" = xxxx ]
	check $? "kiln port-forward: GET through 127.0.0.1:$lp ($out; $(cat "$T/pf.out"))"
	out=$(python3 tests/e2e/port_client.py reverse "127.0.0.1:$lt" 2>&1)
	check $? "kiln port-forward carries a half-close to a server on [::1]: $out ($(cat "$T/pf2.out"))"
	out=$(python3 tests/e2e/port_client.py ws "127.0.0.1:$lp" /ws "" 2>&1)
	check $? "kiln port-forward carries a WebSocket: $out"
	kill "$pf" "$pf2"
	wait "$pf" "$pf2" 2>/dev/null
	out=$("$KILN" port-forward "$PORTS_SB" 70000 2>&1)
	[ $? = 2 ] && grep -q "1 to 65535" <<<"$out"
	check $? "kiln port-forward refuses a bad port ($out)"
	out=$("$KILN" port-forward nosuch 80 2>&1)
	[ $? = 125 ] && grep -q "not found" <<<"$out"
	check $? "kiln port-forward to an unknown sandbox ($out)"
}

# The guest's server's view of a client at ADDR PORT (port_server.py's
# /peer: accept's, then getpeername's): exactly that on real VMs; the fake
# VMM's guest is Linux, where the agent cannot pass the address on and the
# server sees the agent's own 127.0.0.1.
peer_is() { # SEEN ADDR PORT
	if [ $FAKE = 1 ]; then
		[[ $1 =~ ^127\.0\.0\.1\ ([0-9]+)\ 127\.0\.0\.1\ ([0-9]+)$ ]] &&
			[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
	else
		[ "$1" = "$2 $3 $2 $3" ]
	fi
}

# The client's own address reaches the guest (accept, getpeername and
# X-Forwarded-For): clients bound to 127.0.0.N other than 1, so that the
# agent's own 127.0.0.1 cannot pass for them.
t_ports_peer() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	local id=$PORTS_SB p=$PORTS_HTTP lp lt pf pf2 out lport tok st
	lport=$(curl -s -o "$T/peer" -w '%{local_port}' --interface 127.0.0.2 -H "X-API-Key: $(key)" \
		"http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/peer")
	out=$(cat "$T/peer")
	peer_is "$out" 127.0.0.2 "$lport"
	check $? "the path form: the guest's server sees the client 127.0.0.2:$lport ($out)"
	lport=$(curl -s -o "$T/peer" -w '%{local_port}' --interface 127.0.0.3 -H "X-API-Key: $(key)" \
		"http://$p-$id.localhost:$PORT/peer")
	out=$(cat "$T/peer")
	peer_is "$out" 127.0.0.3 "$lport"
	check $? "the Host form (getHost): the guest's server sees 127.0.0.3:$lport ($out)"
	curl -s -o "$T/body" --interface 127.0.0.2 -H "X-API-Key: $(key)" \
		-H 'X-Forwarded-For: 10.9.9.9' "http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/headers"
	grep -q '"X-Forwarded-For": "127.0.0.2"' "$T/body" && ! grep -q 10.9.9.9 "$T/body"
	check $? "X-Forwarded-For is the client's, not what it claimed ($(cat "$T/body"))"
	curl -s -o "$T/body" --unix-socket "$SOCK" "http://k/sandboxes/$id/ports/$p/headers"
	! grep -q 'X-Forwarded-For' "$T/body"
	check $? "over the unix socket (no address): no X-Forwarded-For"
	# Kiln-Peer: believed from a client with the API key ...
	curl -s -o "$T/peer" -H "X-API-Key: $(key)" -H 'Kiln-Peer: 198.51.100.7:4242' \
		"http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/peer"
	out=$(cat "$T/peer")
	curl -s -o "$T/body" -H "X-API-Key: $(key)" -H 'Kiln-Peer: [2001:db8::7]:4243' \
		"http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/headers"
	peer_is "$out" 198.51.100.7 4242 && grep -q '"X-Forwarded-For": "2001:db8::7"' "$T/body" &&
		! grep -qi '"Kiln-Peer"' "$T/body"
	check $? "Kiln-Peer from a client with the API key names the peer ($out; $(cat "$T/body"))"
	# ... not from one with the sandbox's traffic token only
	tok=$(sb_field "$id" trafficAccessToken)
	lport=$(curl -s -o "$T/peer" -w '%{local_port}' --interface 127.0.0.2 \
		-H "E2B-Traffic-Access-Token: $tok" -H 'Kiln-Peer: 198.51.100.7:4242' \
		"http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/peer")
	out=$(cat "$T/peer")
	[ -n "$tok" ] && peer_is "$out" 127.0.0.2 "$lport"
	check $? "Kiln-Peer without the API key is ignored ($out)"
	st=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-API-Key: $(key)" -H 'Kiln-Peer: 1.2.3.4' \
		"http://127.0.0.1:$PORT/sandboxes/$id/ports/$p/peer")
	[ "$st" = 400 ] && grep -q "Kiln-Peer" "$T/body"
	check $? "a Kiln-Peer without a port is refused ($st: $(cat "$T/body"))"
	# kiln port-forward names its own client
	forward_both
	lp=$PF_HTTP lt=$PF_TCP pf=$PF_PID pf2=$PF2_PID
	lport=$(curl -s -o "$T/peer" -w '%{local_port}' --interface 127.0.0.4 "http://127.0.0.1:$lp/peer")
	out=$(cat "$T/peer")
	peer_is "$out" 127.0.0.4 "$lport"
	check $? "kiln port-forward: the guest's server sees 127.0.0.4:$lport ($out)"
	# an IPv6 server ([::1]) sees an IPv4 client v4-mapped
	out=$(python3 -c 'import socket, sys
s = socket.socket()
s.bind(("127.0.0.5", 0))
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"peer?")
s.shutdown(socket.SHUT_WR)
print(s.recv(200).decode(), s.getsockname()[1])' "$lt" 2>&1)
	if [ $FAKE = 1 ]; then
		[[ $out =~ ^::1\ [0-9]+\ [0-9]+$ ]]
	else
		[[ $out =~ ^::ffff:127\.0\.0\.5\ ([0-9]+)\ ([0-9]+)$ ]] &&
			[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
	fi
	check $? "kiln port-forward to a server on [::1]: it sees its client v4-mapped ($out)"
	kill "$pf" "$pf2"
	wait "$pf" "$pf2" 2>/dev/null
	# the guest's own connections are from loopback as ever
	out=$("$KILN" exec "$id" -- python3 -c "import urllib.request
print(urllib.request.urlopen('http://127.0.0.1:$p/peer').read().decode())" 2>&1)
	[[ $out =~ ^127\.0\.0\.1\ ([0-9]+)\ 127\.0\.0\.1\ ([0-9]+)$ ]]
	check $? "a connection inside the sandbox is from 127.0.0.1 ($out)"
}

t_ports_backpressure() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	out=$(python3 tests/e2e/port_client.py stall "127.0.0.1:$PORT" \
		"/sandboxes/$PORTS_SB/ports/$PORTS_HTTP/bytes" "$(key)" "$KILND_PID" 2>&1)
	check $? "a client that stops reading gets backpressure: $out"
}

t_ports_resume() {
	ports_sandbox || { not_ok "a sandbox with port_server.py"; return; }
	local st out
	st=$(api POST "/sandboxes/$PORTS_SB/pause")
	[ "$st" = 204 ] || { not_ok "pause for the port test ($st: $(cat "$T/body"))"; return; }
	out=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$PORTS_SB/ports/$PORTS_HTTP/bytes?n=2")
	[ "$out" = xx ] && [ "$(sb_field "$PORTS_SB" state)" = running ]
	check $? "a request to a port of a paused sandbox resumes it ($out)"
}

# An agent from before port streams (the fake VMM's built-in one): a clear 501.
t_ports_old_agent() {
	[ $FAKE = 1 ] || return 0
	local d=$T/data-old st p id
	# shellcheck disable=SC2046
	KILN_AGENT_HOST= "$KILND" --data-dir "$d" $(vmm_opts) >"$T/kilnd-old.log" 2>&1 &
	p=$!
	wait_socket "$d/kilnd.sock"
	curl -sS --unix-socket "$d/kilnd.sock" -o "$T/body" -d '{}' http://k/sandboxes
	id=$(sed -n 's/.*"sandboxID":"\([^"]*\)".*/\1/p' "$T/body")
	st=$(curl -sS --unix-socket "$d/kilnd.sock" -o "$T/body" -w '%{http_code}' \
		"http://k/sandboxes/$id/ports/8080/")
	[ "$st" = 501 ] && grep -q "predates port forwarding" "$T/body"
	check $? "an agent without port streams: 501 that says so ($st: $(cat "$T/body"))"
	kill $p
	wait $p
}
