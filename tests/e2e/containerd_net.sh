#!/bin/bash
# A kiln task's network is its pod's network namespace, as a runc
# container's is (shim/net.c), against Debian's containerd (a containerd of
# the test's own, tests/e2e/containerd_env.sh). A pod namespace with a veth
# pair to a "server" namespace at 203.0.113.1 (TEST-NET-3, only here): an
# HTTP server and a DNS server there. `ctr run --with-ns network:PATH`
# fetches from it by address and by a name the pod's resolv.conf server
# answers (the bind copied into the guest, and the resolver stand-in the
# shim answers from that file); a task without a path has loopback only;
# --net-host (no network entry) is the shim's namespace, reaching the
# host's address; a path that is no network namespace is refused.
# DEBUG_NET=1 prints the shims' lines of containerd's log at the end.
#
#   make e2e-containerd   (runs this after containerd.sh and containerd_pod.sh)
#
# Prints "ok"/"not ok" per check and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v ip >/dev/null || { echo "e2e-containerd-net: ip is missing (iproute2)"; exit 1; }
POD=kilnpod$$
SRV=kilnsrv$$
extra_cleanup() {
	[ -n "${DEBUG_NET:-}" ] && grep -i "shim\|kiln" "$T/containerd.log" | tail -30
	[ -n "${HTTPD:-}" ] && kill "$HTTPD" 2>/dev/null
	[ -n "${DNSD:-}" ] && kill "$DNSD" 2>/dev/null
	[ -n "${HOSTD:-}" ] && kill "$HOSTD" 2>/dev/null
	ip netns del "$POD" 2>/dev/null
	ip netns del "$SRV" 2>/dev/null
}
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh e2e-containerd-net
IMG=docker.io/library/kiln-test:1
PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $1"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi; }

python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag "$IMG" --cmd '["/bin/sh"]' &&
	$C image import "$T/img.tar" >/dev/null
check $? "an image built here and imported"

# ---- the pod's namespace and the server's, a veth pair between them
ip netns add "$POD" && ip netns add "$SRV" &&
	ip link add "kp$$" type veth peer name "ks$$" &&
	ip link set "kp$$" netns "$POD" && ip link set "ks$$" netns "$SRV" &&
	ip -n "$POD" addr add 203.0.113.2/24 dev "kp$$" && ip -n "$POD" link set "kp$$" up &&
	ip -n "$POD" link set lo up &&
	ip -n "$SRV" addr add 203.0.113.1/24 dev "ks$$" && ip -n "$SRV" link set "ks$$" up &&
	ip -n "$SRV" link set lo up
check $? "network namespaces $POD (203.0.113.2) and $SRV (203.0.113.1), a veth pair between"
mkdir -p "$T/www"
echo "served in $SRV" >"$T/www/hello.txt"
ip netns exec "$SRV" python3 -m http.server 8080 --bind 203.0.113.1 --directory "$T/www" \
	>"$T/httpd.log" 2>&1 &
HTTPD=$!
DNS_BIND=203.0.113.1 ip netns exec "$SRV" python3 tests/e2e/net/dns_server.py 53 \
	web.kiln.test=203.0.113.1 >"$T/dns.log" 2>&1 &
DNSD=$!
echo "nameserver 203.0.113.1" >"$T/resolv.conf"
for _ in $(seq 50); do
	grep -q ready "$T/dns.log" && ip netns exec "$SRV" \
		python3 -c 'import socket; socket.create_connection(("203.0.113.1", 8080), 1)' \
		2>/dev/null && break
	sleep 0.1
done
NS="--with-ns network:/var/run/netns/$POD"
RESOLV="--mount type=bind,src=$T/resolv.conf,dst=/etc/resolv.conf,options=rbind:ro"

# ---- egress from the pod's namespace
out=$($C run --rm $RT $NS "$IMG" n1 wget -O - http://203.0.113.1:8080/hello.txt 2>/dev/null)
rc=$?
[ $rc = 0 ] && [ "$out" = "served in $SRV" ]
check $? "a task in the pod's namespace fetches from 203.0.113.1 ($rc: $out)"

# ---- DNS: the pod's resolv.conf in the guest, and the resolver stand-in
out=$($C run --rm $RT $NS $RESOLV "$IMG" n2 sh -c 'cat /etc/resolv.conf; nslookup web.kiln.test;
	wget -O - http://web.kiln.test:8080/hello.txt 2>/dev/null' 2>&1)
rc=$?
[ $rc = 0 ] && grep -q "^nameserver 203.0.113.1" <<<"$out" &&
	grep -A2 "^Name:.*web.kiln.test" <<<"$out" | grep -q "203.0.113.1" &&
	[ "$(tail -1 <<<"$out")" = "served in $SRV" ] && grep -q "query web.kiln.test 1" "$T/dns.log"
check $? "a name the pod's resolv.conf server answers resolves and is fetched ($rc: $(tr '\n' ' ' <<<"$out"))"
before=$(grep -c "query web.kiln.test" "$T/dns.log")
out=$($C run --rm $RT $NS $RESOLV "$IMG" n3 nslookup web.kiln.test 10.0.2.3 2>&1)
rc=$?
[ $rc = 0 ] && grep -A2 "^Name:.*web.kiln.test" <<<"$out" | grep -q "203.0.113.1" &&
	[ "$(grep -c "query web.kiln.test" "$T/dns.log")" -gt "$before" ]
check $? "the resolver stand-in 10.0.2.3 answers from the pod's resolv.conf, through the namespace ($rc: $(tr '\n' ' ' <<<"$out"))"
out=$($C run --rm $RT $NS "$IMG" n4 sh -c 'wget -O - http://203.0.113.1:8081/ 2>&1;
	echo rc=$?' 2>&1)
grep -q "Connection refused" <<<"$out" && grep -q "rc=1" <<<"$out"
check $? "a closed port in the pod's network is refused in the guest ($(tr '\n' ' ' <<<"$out"))"

# ---- no path: a namespace of its own, loopback only (ctr's default spec)
t0=$(date +%s)
out=$($C run --rm $RT "$IMG" n5 sh -c 'wget -O - http://203.0.113.1:8080/hello.txt 2>&1;
	echo rc=$?' 2>&1)
t1=$(date +%s)
grep -q "rc=1" <<<"$out" && grep -q "unreachable" <<<"$out" && ! grep -q "served in" <<<"$out"
check $? "a task without a namespace path cannot reach 203.0.113.1 ($((t1 - t0)) s: $(tr '\n' ' ' <<<"$out"))"

# ---- no network entry (--net-host): the shim's own namespace, as runc
HOSTIP=$(hostname -I | awk '{print $1}')
HPORT=$((20000 + $$ % 20000))
python3 -m http.server "$HPORT" --bind "$HOSTIP" --directory "$T/www" >"$T/hostd.log" 2>&1 &
HOSTD=$!
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('$HOSTIP', $HPORT), 1)" 2>/dev/null && break
	sleep 0.1
done
out=$($C run --rm $RT --net-host "$IMG" n7 wget -O - "http://$HOSTIP:$HPORT/hello.txt" 2>/dev/null)
rc=$?
out2=$($C run --rm $RT "$IMG" n8 sh -c "wget -O - http://$HOSTIP:$HPORT/hello.txt 2>&1; echo rc=\$?" 2>&1)
[ $rc = 0 ] && [ "$out" = "served in $SRV" ] && grep -q "rc=1" <<<"$out2"
check $? "--net-host: the shim's own namespace reaches the host's $HOSTIP:$HPORT ($rc: $out), a task of its own namespace does not ($(tr '\n' ' ' <<<"$out2"))"

# ---- inbound: a guest's wildcard listener is at the pod's address, as
# with runc; one on the guest's loopback is not; closed with its socket
reach() {
	ip netns exec "$SRV" python3 -c "import socket, sys
s = socket.create_connection(('203.0.113.2', $1), 2)
s.sendall(b'GET /i.html HTTP/1.0\r\n\r\n')
sys.stdout.write(s.makefile('rb').read().decode(errors='replace'))" 2>&1
}
refused() { grep -q "ConnectionRefusedError" <<<"$1"; }
$C run -d $RT $NS "$IMG" n9 sh -c 'echo served in the guest >/tmp/i.html
	httpd -f -p 127.0.0.1:8091 -h /tmp & httpd -f -p 8092 -h /tmp & echo $! >/tmp/p8092
	nc -l -p 8093 >/tmp/up &
	mkdir -p /tmp/w/cgi-bin && printf "#!/bin/sh\necho Content-Type: text/plain\necho\n%s\n" \
		"echo \$REMOTE_ADDR \$REMOTE_PORT" >/tmp/w/cgi-bin/peer && chmod 755 /tmp/w/cgi-bin/peer &&
	httpd -f -p 8094 -h /tmp/w &
	exec httpd -f -p 8090 -h /tmp' >/dev/null
out=
for _ in $(seq 100); do
	out=$(reach 8090) && grep -q "served in the guest" <<<"$out" && break
	sleep 0.2
done
grep -q "served in the guest" <<<"$out" && grep -q "served in the guest" <<<"$(reach 8092)"
check $? "guest servers on 0.0.0.0:8090 and :8092 answer at the pod's 203.0.113.2 from $SRV ($(tail -1 <<<"$out"))"
# The guest's server sees each client's own address and port (a CGI's
# REMOTE_ADDR and REMOTE_PORT: busybox httpd's accepted peer, on a
# dual-stack :: so IPv4 is [::ffff:a.b.c.d]), the first connection (the
# shim learns whether the agent takes the peer) and the next.
peer_seen() {
	ip netns exec "$SRV" python3 -c "import socket
s = socket.create_connection(('203.0.113.2', 8094), 5)
s.sendall(b'GET /cgi-bin/peer HTTP/1.0\r\n\r\n')
body = s.makefile('rb').read().decode(errors='replace').strip().splitlines()[-1]
print(body, '/', s.getsockname()[0], s.getsockname()[1])" 2>&1
}
for _ in $(seq 50); do
	out=$(peer_seen) && [[ $out == *" / "* ]] && [[ $out != *Error* ]] && break
	sleep 0.1
done
out2=$(peer_seen)
same_peer() { [[ $1 =~ ^\[::ffff:([0-9.]+)\]\ ([0-9]+)\ /\ ([0-9.]+)\ ([0-9]+)$ ]] &&
	[ "${BASH_REMATCH[1]}" = 203.0.113.1 ] && [ "${BASH_REMATCH[3]}" = 203.0.113.1 ] &&
	[ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[4]}" ]; }
same_peer "$out" && same_peer "$out2"
check $? "a guest server at the pod's address sees its client 203.0.113.1 and its port (seen / client: $out; $out2)"
out=$($C task exec --exec-id p0 n9 wget -q -O - http://127.0.0.1:8094/cgi-bin/peer 2>&1)
[[ $out =~ ^\[::ffff:127\.0\.0\.1\]\ [0-9]+$ ]]
check $? "a client in the guest is 127.0.0.1 to it ($out)"
$C task exec --exec-id i0 n9 sh -c 'yes 0123456789abcdef | head -c 8388608 >/tmp/big'
t0=$(date +%s%N)
n=$(ip netns exec "$SRV" python3 -c "import socket
s = socket.create_connection(('203.0.113.2', 8090), 5)
s.sendall(b'GET /big HTTP/1.0\r\n\r\n')
print(len(s.makefile('rb').read().split(b'\r\n\r\n', 1)[1]))" 2>&1)
t1=$(date +%s%N)
[ "$n" = 8388608 ]
check $? "8 MiB from the guest's server through the pod's port, whole ($n bytes, $(((t1 - t0) / 1000000)) ms)"
ip netns exec "$SRV" python3 -c "import socket
s = socket.create_connection(('203.0.113.2', 8093), 5)
s.sendall(b'u' * 4194304)
s.shutdown(socket.SHUT_WR)
s.recv(1)"
for _ in $(seq 50); do
	n=$($C task exec --exec-id "u$_" n9 sh -c 'wc -c </tmp/up')
	[ "$n" = 4194304 ] && break
	sleep 0.1
done
[ "$n" = 4194304 ]
check $? "4 MiB to a guest's nc -l through the pod's port, whole ($n bytes)"
out=$($C task exec --exec-id i1 n9 wget -q -O - http://127.0.0.1:8091/i.html 2>&1)
out2=$(reach 8091)
[ "$out" = "served in the guest" ] && refused "$out2"
check $? "a guest server on 127.0.0.1:8091 answers in the guest ($out), not at the pod's address ($(tail -1 <<<"$out2"))"
$C task exec --exec-id i2 n9 sh -c 'kill $(cat /tmp/p8092)'
for _ in $(seq 50); do refused "$(reach 8092)" && break; sleep 0.1; done
out=$(reach 8092)
refused "$out" && grep -q "served in the guest" <<<"$(reach 8090)"
check $? "the guest's server on 8092 ends: the pod's port closes, 8090 stays ($(tail -1 <<<"$out"))"
$C task kill -s SIGKILL n9
for _ in $(seq 50); do
	[ "$($C task ls | awk '$1 == "n9" {print $3}')" = STOPPED ] && break
	sleep 0.1
done
for _ in $(seq 50); do refused "$(reach 8090)" && break; sleep 0.1; done
out=$(reach 8090)
refused "$out"
check $? "the task ended: the pod's port 8090 is closed ($(tail -1 <<<"$out"))"
$C task delete n9 >/dev/null 2>&1
$C container rm n9 >/dev/null 2>&1

# ---- a path that is no network namespace
out=$($C run --rm $RT --with-ns "network:$T/resolv.conf" "$IMG" n6 true 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "is not a network namespace" <<<"$out"
check $? "a network path that is no namespace is refused ($rc: $(tail -1 <<<"$out"))"
for _ in $(seq 50); do
	[ -z "$($C task ls -q)" ] && [ -z "$(pgrep -f "containerd-shim-kiln-v2 .*-address $SOCK")" ] &&
		break
	sleep 0.1
done
[ -z "$($C task ls -q)" ] && [ -z "$(pgrep -f "containerd-shim-kiln-v2 .*-address $SOCK")" ]
check $? "no task or shim left behind"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
