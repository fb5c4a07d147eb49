#!/bin/bash
# Sandbox networking end to end on real VMs: egress under policies, DNS,
# host.kiln.internal, the refusals and their log lines, the known bypass
# forms, bulk bytes both ways checked end to end, pip install from an index on the host (a wheel the test builds),
# npm install from a registry on the host (a package the test packs),
# templates' policies, counters, and policies and DNS pins across a kilnd
# restart; UDP to echo servers (public and on the host), refused, the
# bypass forms, answers from elsewhere dropped, the rate limit, across a
# pause and a policy change.
#
#   make e2e-net                  (builds everything and the images first)
#   bash tests/e2e/net.sh [NAME...]   only the named cases
#
# Everything runs inside a network namespace of the test's own (unshare -n:
# only loopback and a veth pair the test makes), so even a policy bug cannot
# send a packet off this machine. The veth's far end is a second namespace
# holding a "public" server on 203.0.113.1 (TEST-NET-3); the cases that need
# it check with `ip route get` that the route goes into that veth, and are
# skipped with a message otherwise. kilnd resolves through a test DNS server
# on 127.0.0.1 (tests/e2e/net/dns_server.py, --dns-server).
#
# Prints "ok"/"not ok"/"skip" per case and "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD

if [ "${KILN_NET_IN_NS:-}" != 1 ]; then
	for c in unshare ip nsenter python3 curl; do
		command -v $c >/dev/null || { echo "net: $c is needed (apt-get install iproute2 util-linux)"; exit 1; }
	done
	if [ "$(id -u)" = 0 ]; then NS="unshare -n"; else NS="unshare -r -n"; fi
	KILN_NET_IN_NS=1 exec $NS -- bash "$0" "$@"
fi

KILND=${KILN_E2E_KILND:-$ROOT/build/bin/kilnd}
KILN=${KILN_E2E_KILN:-$ROOT/build/bin/kiln}
VMM=${KILN_E2E_VMM:-$ROOT/build/bin/kiln-vmm}
KERNEL=${KILN_E2E_KERNEL:-$ROOT/build/guest/kiln-kernel}
INITRD=${KILN_E2E_INITRD:-$ROOT/build/initramfs/agent.cpio}
IMAGE_INITRD=${KILN_E2E_IMAGE_INITRD:-$(dirname "$INITRD")/agent-image.cpio}
IMAGES=${KILN_E2E_IMAGES:-$ROOT/build/images}
for f in "$KILND" "$KILN" "$VMM" "$KERNEL" "$INITRD" "$IMAGE_INITRD" "$IMAGES/base.erofs"; do
	[ -e "$f" ] || { echo "net: missing $f (make all images)"; exit 1; }
done

T=$(mktemp -d /tmp/kiln-net.XXXXXX)
DATA=$T/data
SOCK=$DATA/kilnd.sock
PIDS=""
PASS=0 FAIL=0 SKIP=0
KPID=

cleanup() {
	[ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
	for p in "$DATA"/sandboxes/*/run/vmm.pid; do
		[ -f "$p" ] && kill -9 -- "-$(cut -d' ' -f1 "$p")" 2>/dev/null
	done
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

ok() { echo "ok   $1"; PASS=$((PASS + 1)); }
notok() {
	echo "not ok $1: $2"
	FAIL=$((FAIL + 1))
}
skip() { echo "skip $1: $2"; SKIP=$((SKIP + 1)); }
want() { # NAME: is the case selected?
	[ $# -eq 1 ] || return 0
	[ -z "$SELECT" ] && return 0
	for s in $SELECT; do [ "$s" = "$1" ] && return 0; done
	return 1
}
SELECT="$*"

ip link set lo up || { echo "net: cannot bring up lo in the test's namespace"; exit 1; }

# ---------------------------------------------------------------- the world
P4=$((20000 + $$ % 10000))
P6=$((P4 + 1))
DNSP=$((P4 + 2))
U1=$((P4 + 6)) # UDP echo ports: public (two), the host's loopback
U2=$((P4 + 7))
HU=$((P4 + 8))
mkdir -p "$T/host4" "$T/host6" "$T/pub" "$T/guest"
echo from-host-v4 >"$T/host4/f.txt"
echo from-host-v6 >"$T/host6/f.txt"
echo from-public >"$T/pub/f.txt"
python3 -m http.server "$P4" --bind 127.0.0.1 --directory "$T/host4" >"$T/http4.log" 2>&1 &
PIDS="$PIDS $!"
python3 -m http.server "$P6" --bind ::1 --directory "$T/host6" >"$T/http6.log" 2>&1 &
PIDS="$PIDS $!"
python3 "$ROOT/tests/e2e/net/udp_echo.py" 127.0.0.1 "$HU" >"$T/udp4.log" 2>&1 &
PIDS="$PIDS $!"
python3 "$ROOT/tests/e2e/net/udp_echo.py" ::1 "$HU" >"$T/udp6.log" 2>&1 &
PIDS="$PIDS $!"
python3 "$ROOT/tests/e2e/net/dns_server.py" "$DNSP" public.test=203.0.113.1 \
	private.test=10.9.9.9 meta.test=169.254.169.254 hostaddr.test=203.0.113.2 \
	>"$T/dns.log" 2>&1 &
PIDS="$PIDS $!"

# The "public" side: a namespace behind a veth, 203.0.113.1 in it.
PUBLIC=0
unshare -n sleep 3600 &
PUBNS=$!
PIDS="$PIDS $PUBNS"
sleep 0.1
if ip link add veth-k type veth peer name veth-p 2>/dev/null &&
	ip link set veth-p netns "$PUBNS" &&
	ip addr add 203.0.113.2/24 dev veth-k && ip link set veth-k up &&
	nsenter -t "$PUBNS" -n sh -c 'ip link set lo up && ip addr add 203.0.113.1/24 dev veth-p &&
		ip link set veth-p up'; then
	nsenter -t "$PUBNS" -n python3 -m http.server 80 --bind 203.0.113.1 --directory "$T/pub" \
		>"$T/httppub.log" 2>&1 &
	PIDS="$PIDS $!"
	nsenter -t "$PUBNS" -n python3 "$ROOT/tests/e2e/net/udp_echo.py" 203.0.113.1 "$U1" "$U2" \
		>"$T/udppub.log" 2>&1 &
	PIDS="$PIDS $!"
	if ip route get 203.0.113.1 | grep -q 'dev veth-k'; then
		PUBLIC=1
	fi
fi
for _ in $(seq 100); do
	curl -s -o /dev/null http://127.0.0.1:$P4/f.txt && curl -s -o /dev/null "http://[::1]:$P6/f.txt" &&
		grep -q ready "$T/dns.log" && grep -q ready "$T/udp4.log" && grep -q ready "$T/udp6.log" && break
	sleep 0.05
done
if [ $PUBLIC = 1 ]; then
	for _ in $(seq 100); do
		curl -s -o /dev/null http://203.0.113.1/f.txt && break
		sleep 0.05
	done
fi

start_kilnd() {
	"$KILND" --data-dir "$DATA" --socket "$SOCK" --vmm "$VMM" --kernel "$KERNEL" \
		--initrd "$INITRD" --images "$IMAGES" --image-initrd "$IMAGE_INITRD" \
		--dns-server 127.0.0.1:$DNSP -v >>"$T/kilnd.log" 2>&1 &
	KPID=$!
	for _ in $(seq 100); do
		curl -s --unix-socket "$SOCK" http://k/health >/dev/null && return 0
		sleep 0.05
	done
	echo "net: kilnd did not start:"
	tail -20 "$T/kilnd.log"
	exit 1
}
start_kilnd
kiln() { "$KILN" --socket "$SOCK" "$@"; }
sbx() { kiln exec "$@" 2>&1; } # sbx ID -- CMD...: its output
console() { cat "$DATA/sandboxes/$1/run/console.log" 2>/dev/null; }
new() { kiln create "$@" | tail -1; }

# Sandboxes: busybox ones and base (python3) ones, under four policies.
HOSTRULES="--allow-out host.kiln.internal:$P4 --allow-out host.kiln.internal:$P6"
S_HOST=$(new $HOSTRULES)
S_HOSTPY=$(new --image base $HOSTRULES)
S_DEF=$(new)
S_DEFPY=$(new --image base)
S_NONET=$(new --no-internet)
S_DOM=$(new --image base --no-internet --allow-out public.test --allow-out private.test \
	--allow-out meta.test --allow-out hostaddr.test)
S_UDP=$(new --image base --allow-out "host.kiln.internal:$HU")
S_UDPDENY=$(new --image base --deny-out "203.0.113.0/24:$U1")
S_UDPOFF=$(new --image base --no-internet)
for s in S_HOST S_HOSTPY S_DEF S_DEFPY S_NONET S_DOM S_UDP S_UDPDENY S_UDPOFF; do
	[ -n "${!s}" ] || { echo "net: creating $s failed"; tail -20 "$T/kilnd.log"; exit 1; }
done
for s in "$S_UDP" "$S_UDPDENY" "$S_UDPOFF" "$S_DEFPY"; do
	kiln cp "$ROOT/tests/e2e/net/udp.py" "$s:/tmp/udp.py" >/dev/null
done
kiln cp "$ROOT/tests/e2e/net/bypass.py" "$S_DEFPY:/tmp/bypass.py" >/dev/null
kiln cp "$ROOT/tests/e2e/net/bypass.py" "$S_DOM:/tmp/bypass.py" >/dev/null
kiln cp "$ROOT/tests/e2e/net/bypass.py" "$S_HOSTPY:/tmp/bypass.py" >/dev/null

expect_eq() { # NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1"; else notok "$1" "got '$2', want '$3'"; fi
}
expect_in() { # NAME TEXT RE: TEXT has a line matching RE
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then ok "$1"; else notok "$1" "no '$3' in: $2"; fi
}

# ---------------------------------------------------------------- cases
if want host-wget; then
	expect_eq host-wget-v4 "$(sbx "$S_HOST" -- busybox wget -q -O - "http://host.kiln.internal:$P4/f.txt")" from-host-v4
	expect_eq host-wget-v6 "$(sbx "$S_HOST" -- busybox wget -q -O - "http://host.kiln.internal:$P6/f.txt")" from-host-v6
	expect_eq host-wget-trailing-dot \
		"$(sbx "$S_HOST" -- busybox wget -q -O - "http://host.kiln.internal.:$P4/f.txt")" from-host-v4
fi
if want host-python; then
	for p in $P4 $P6; do
		got=$(sbx "$S_HOSTPY" -- python3 -c "import urllib.request as u; print(u.urlopen('http://host.kiln.internal:$p/f.txt', timeout=20).read().decode().strip())")
		[ $p = $P4 ] && w=from-host-v4 || w=from-host-v6
		expect_eq "host-python-$p" "$got" "$w"
	done
fi
if want host-musl; then
	if command -v musl-gcc >/dev/null; then
		musl-gcc -static -O2 -o "$T/resolve" "$ROOT/tests/e2e/net/resolve.c" &&
			kiln cp "$T/resolve" "$S_HOST:/tmp/resolve" >/dev/null
		sbx "$S_HOST" -- chmod +x /tmp/resolve >/dev/null
		expect_eq host-musl "$(sbx "$S_HOST" -- /tmp/resolve host.kiln.internal $P4 /f.txt)" from-host-v4
	else
		skip host-musl "musl-gcc is not installed (apt-get install musl-tools)"
	fi
fi
if want guest-loopback; then
	# The guest's own 127.0.0.1 is the guest's, whatever listens on the host.
	got=$(sbx "$S_HOST" -- sh -c "mkdir -p /tmp/www && echo from-guest >/tmp/www/f.txt &&
		(busybox httpd -f -p 127.0.0.1:$P4 -h /tmp/www & i=0; while [ \$i -lt 100 ]; do
		wget -q -O - http://127.0.0.1:$P4/f.txt 2>/dev/null && break; i=\$((i+1)); sleep 0.05; done; kill %1)")
	expect_eq guest-loopback "$got" from-guest
fi
if want refused; then
	out=$(sbx "$S_DEF" -- busybox wget -q -O - "http://10.0.2.2:$P4/f.txt")
	expect_in refused-host-by-ip "$out" "Permission denied"
	out=$(sbx "$S_DEF" -- busybox wget -q -O - "http://host.kiln.internal:$P4/f.txt")
	expect_in refused-host-name "$out" "bad address|resolve"
	expect_in refused-host-logged "$(console "$S_DEF")" \
		"kiln-net: connection to 10.0.2.2:$P4 refused \(EACCES\): host.kiln.internal"
	expect_in refused-host-dns-logged "$(console "$S_DEF")" \
		"kiln-net: DNS: host.kiln.internal: not resolved"
	out=$(sbx "$S_HOST" -- busybox wget -q -O - "http://host.kiln.internal:$((P4 + 3))/f.txt")
	expect_in refused-host-other-port "$out" "Permission denied"
fi
if want bypass; then
	out=$(sbx "$S_DEFPY" -- python3 /tmp/bypass.py \
		"6,::ffff:127.0.0.1,$P4" "6,::ffff:10.0.2.2,$P4" "4,169.254.169.254,80" \
		"6,::ffff:169.254.169.254,80" "4,10.9.9.9,80" "4,192.168.1.1,80" "4,172.16.0.1,80" \
		"4,100.64.0.1,80" "4,0.0.0.0,$P4" "4,224.0.0.1,80" "4,203.0.113.2,80" "6,fe80::1,80" \
		"6,fd00::1,80" "6,fd00:ec2::254,80" "6,64:ff9b::7f00:1,$P4" "6,64:ff9b::a9fe:a9fe,80" \
		"6,2002:7f00:1::,$P4" "6,::127.0.0.1,$P4" "6,fec0::9,80" "6,ff02::1,80" \
		"2130706433,$P4" "0177.0.0.1,$P4" "127.1,$P4" "0x7f.0.0.1,$P4" "4,127.0.0.1,$P4" \
		"6,::1,$P6" "private.test,80" "dns-nul" "dns-txt,public.test")
	for l in "::ffff:10.0.2.2,$P4 EACCES" \
		"169.254.169.254,80 EACCES" "::ffff:169.254.169.254,80 EACCES" "10.9.9.9,80 EACCES" \
		"192.168.1.1,80 EACCES" "172.16.0.1,80 EACCES" "100.64.0.1,80 EACCES" \
		"224.0.0.1,80 EACCES" "203.0.113.2,80 EACCES" "fe80::1,80 EACCES" "fd00::1,80 EACCES" \
		"fd00:ec2::254,80 EACCES" "64:ff9b::7f00:1,$P4 EACCES" "64:ff9b::a9fe:a9fe,80 EACCES" \
		"2002:7f00:1::,$P4 EACCES" "::127.0.0.1,$P4 EACCES" "fec0::9,80 EACCES" \
		"ff02::1,80 EACCES"; do
		expect_in "bypass ${l% *}" "$out" "^[46],${l% *} ${l#* }\$"
	done
	# Numeric forms are the guest's own loopback (nobody listens there):
	# never the host's server.
	for n in 2130706433 0177.0.0.1 127.1 0x7f.0.0.1 4,127.0.0.1 4,0.0.0.0 6,::1 \
		6,::ffff:127.0.0.1; do
		expect_in "bypass-loopback $n" "$out" "^$n,[0-9]+ ECONNREFUSED\$"
	done
	expect_in bypass-private-name "$out" "^private.test,80 EACCES\$"
	expect_in bypass-dns-nul "$out" "^dns-nul rcode=3 answers=0\$"
	expect_eq bypass-dns-nul-both "$(printf '%s\n' "$out" | grep -c '^dns-nul rcode=3')" 2
	expect_in bypass-dns-txt-empty "$out" "^dns-txt,public.test rcode=0 answers=0\$"
	expect_in bypass-logged "$(console "$S_DEFPY")" \
		"kiln-net: connection to 169.254.169.254:80 refused \(EACCES\): 169.254.169.254 is a link-local"
	expect_in bypass-nul-logged "$(console "$S_DEFPY")" "kiln-net: DNS: lookup refused: the name has bytes"
fi
if want hostile-hello; then
	out=$(python3 "$ROOT/tests/e2e/net/hello.py" "$DATA/sandboxes/$S_HOST/run/vsock.sock_1025" "$P4")
	for l in "v4-loopback status=13" "v6-mapped-loopback status=13" "v6-loopback status=13" \
		"v4-host-standin status=0" "bad-magic status=71" "bad-version status=71" \
		"bad-family status=71" "port-zero status=71" "bad-flags status=71" \
		"datagram-elsewhere status=71" "reserved-set status=71" "short-hello closed" \
		"listen-kilnd status=71" "listen-with-udp status=71" \
		"udp-both-flags status=71" "udp-refused-loopback status=0 frame=13" \
		"udp-refused-mapped status=0 frame=13" "udp-bad-family status=0 closed" \
		"udp-too-long status=0 closed" "udp-v4-junk-addr status=0 closed" \
		"udp-status-set status=0 closed" "udp-port-zero status=0 closed"; do
		expect_in "hostile-hello ${l% *}" "$out" "^$l\$"
	done
	# DNS garbage: answered OK, then the stream closes.
	expect_in "hostile-hello dns-garbage" "$out" "^dns-garbage status=0\$"
	expect_in hostile-hello-kilnd-alive "$(curl -s --unix-socket "$SOCK" http://k/health)" .
fi
if want rebinding; then
	# Allowed names that resolve to private, metadata or host addresses
	# open nothing; the refusal names the name.
	out=$(sbx "$S_DOM" -- python3 /tmp/bypass.py private.test,80 meta.test,80 hostaddr.test,80 \
		"evil.test,80")
	expect_in rebinding-private "$out" "^private.test,80 EACCES\$"
	expect_in rebinding-metadata "$out" "^meta.test,80 EACCES\$"
	expect_in rebinding-host-address "$out" "^hostaddr.test,80 EACCES\$"
	expect_in rebinding-unlisted-name "$out" "^evil.test,80 gaierror\$"
	expect_in rebinding-logged "$(console "$S_DOM")" \
		"refused \(EACCES\): private.test resolved to 10.9.9.9, which is a private address"
	if grep -q "query evil.test" "$T/dns.log"; then
		notok rebinding-unlisted-not-asked "evil.test reached the DNS server with internet off"
	else
		ok rebinding-unlisted-not-asked
	fi
fi
if want public; then
	if [ $PUBLIC = 1 ]; then
		expect_eq public-default "$(sbx "$S_DEF" -- busybox wget -q -O - http://203.0.113.1/f.txt)" from-public
		expect_in public-no-internet "$(sbx "$S_NONET" -- busybox wget -q -O - http://203.0.113.1/f.txt)" \
			"Permission denied"
		expect_in public-no-internet-logged "$(console "$S_NONET")" \
			"connection to 203.0.113.1:80 refused \(EACCES\): internet access is off"
		# A domain rule: the literal address is refused until the
		# sandbox's own lookup of the name returned it.
		out=$(sbx "$S_DOM" -- python3 /tmp/bypass.py 4,203.0.113.1,80 public.test,80 4,203.0.113.1,80)
		expect_eq public-domain-pinned "$(printf '%s\n' "$out" | cut -d' ' -f2 | tr '\n' ' ')" \
			"EACCES connected connected "
	else
		skip public "the route to 203.0.113.1 does not go into the test's veth"
	fi
fi
if want dns; then
	expect_in dns-glibc "$(sbx "$S_HOSTPY" -- getent ahostsv4 host.kiln.internal)" "^10.0.2.2 +STREAM"
	out=$(sbx "$S_HOSTPY" -- python3 /tmp/bypass.py dns-tcp,host.kiln.internal)
	expect_eq dns-tcp "$out" "dns-tcp,host.kiln.internal rcode=0 answers=1"
	expect_in dns-busybox "$(sbx "$S_HOST" -- busybox nslookup host.kiln.internal 2>&1)" "10.0.2.2"
	# A burst past the limit is refused, and that is logged. The guest
	# sends in batches until an answer says REFUSED (rcode 5), at most 50
	# batches: on a loaded host 300 queries in a row can take longer than
	# the burst lasts at 50 a second.
	out=$(sbx "$S_DEFPY" -- python3 -c "
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
q = struct.pack('!HHHHHH', 7, 0x100, 1, 0, 0, 0) + b'\x06public\x04test\x00' + struct.pack('!HH', 1, 1)
codes = set()
for batch in range(50):
    for i in range(100): s.sendto(q, ('10.0.2.3', 53))
    s.settimeout(0.5)
    try:
        while True: codes.add(s.recv(512)[3] & 15)
    except OSError: pass
    if 5 in codes: break
print('refused' if 5 in codes else 'not refused: %s' % sorted(codes))")
	expect_eq dns-rate-refused "$out" refused
	expect_in dns-rate-logged "$(console "$S_DEFPY")" "kiln-net: DNS: lookup refused: more than"
fi
if want pip; then
	# pip from a package index on the host's loopback, internet off.
	PP=$((P4 + 4))
	python3 "$ROOT/tests/e2e/net/mkwheel.py" "$T/pypi"
	python3 -m http.server "$PP" --bind 127.0.0.1 --directory "$T/pypi" >"$T/httppip.log" 2>&1 &
	PIDS="$PIDS $!"
	S_PIP=$(new --image base --no-internet --allow-out "host.kiln.internal:$PP")
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$PP/simple/" && break
		sleep 0.05
	done
	out=$(sbx "$S_PIP" -- sh -c "pip install --no-cache-dir --disable-pip-version-check \
		--break-system-packages --target /tmp/pkgs --trusted-host host.kiln.internal --index-url http://host.kiln.internal:$PP/simple \
		kilnpkg >/tmp/pip.log 2>&1 || cat /tmp/pip.log; PYTHONPATH=/tmp/pkgs python3 -c \
		'import kilnpkg; print(kilnpkg.VALUE)'")
	expect_eq pip-install "$(printf '%s\n' "$out" | tail -1)" from-the-wheel
fi
if want npm; then
	# npm from a registry on the host's loopback, internet off: a package
	# the test packs itself, its packument and tarball served by
	# tests/e2e/net/npm_registry.py.
	if command -v npm >/dev/null; then
		NP=$((P4 + 5))
		mkdir -p "$T/npmpkg" "$T/npmreg"
		printf '{"name":"kilnnpm","version":"1.0.0","main":"index.js","license":"MIT"}\n' \
			>"$T/npmpkg/package.json"
		echo 'module.exports = "from-the-tarball";' >"$T/npmpkg/index.js"
		(cd "$T/npmpkg" && npm pack --pack-destination "$T/npmreg" >"$T/npmpack.log" 2>&1) ||
			cat "$T/npmpack.log"
		python3 "$ROOT/tests/e2e/net/npm_registry.py" "$NP" "$T/npmreg" >"$T/npmreg.out" 2>"$T/npmreg.log" &
		PIDS="$PIDS $!"
		S_NPM=$(new --image base --no-internet --allow-out "host.kiln.internal:$NP")
		for _ in $(seq 100); do
			grep -q ready "$T/npmreg.out" 2>/dev/null && break
			sleep 0.05
		done
		out=$(sbx "$S_NPM" -- sh -c "mkdir -p /tmp/app && cd /tmp/app &&
			{ npm install --registry http://host.kiln.internal:$NP/ kilnnpm >/tmp/npm.log 2>&1 ||
			cat /tmp/npm.log; }; node -e \"console.log(require('kilnnpm'))\"")
		expect_eq npm-install "$(printf '%s\n' "$out" | tail -1)" from-the-tarball
		expect_in npm-install-fetched "$(cat "$T/npmreg.log")" '"GET /kilnnpm/-/kilnnpm-1.0.0.tgz HTTP/1.1" 200'
	else
		skip npm "npm is not installed on the host (apt-get install nodejs npm)"
	fi
fi
if want template; then
	# A template's policy holds for its warm-up and its clones.
	out=$(kiln template create nettpl --allow-out "host.kiln.internal:$P4" -- \
		sh -c "busybox wget -q -O /tmp/warm.txt http://host.kiln.internal:$P4/f.txt" 2>&1)
	S_TPL=$(new --template nettpl)
	expect_eq template-warmup "$(sbx "$S_TPL" -- cat /tmp/warm.txt)" from-host-v4
	expect_eq template-clone "$(sbx "$S_TPL" -- busybox wget -q -O - "http://host.kiln.internal:$P4/f.txt")" \
		from-host-v4
	S_TPL2=$(new --template nettpl --allow-out "host.kiln.internal:$P6")
	expect_in template-clone-own-rules \
		"$(sbx "$S_TPL2" -- busybox wget -q -O - "http://10.0.2.2:$P4/f.txt")" "Permission denied"
fi
if want bulk; then
	# 48 MiB up and 32 MiB down through one egress connection (spliced in
	# kilnd, past the VMM's small window), every byte checked, and the
	# sandbox's byte counters.
	PB=$((P4 + 7))
	python3 "$ROOT/tests/e2e/net/bulk.py" serve $PB >"$T/bulk.log" 2>&1 &
	PIDS="$PIDS $!"
	for _ in $(seq 100); do grep -qx ready "$T/bulk.log" && break; sleep 0.05; done
	S_BULK=$(new --image base --allow-out "host.kiln.internal:$PB")
	kiln cp "$ROOT/tests/e2e/net/bulk.py" "$S_BULK:/tmp/bulk.py" >/dev/null
	expect_eq bulk-bytes "$(sbx "$S_BULK" -- python3 /tmp/bulk.py send host.kiln.internal $PB 48 32)" "ok 48 32"
	m=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_BULK/metrics")
	got=$(printf '%s' "$m" | python3 -c 'import json,sys; n=json.load(sys.stdin)[0]["network"]; print(n["bytesOut"] >= 48 << 20, n["bytesIn"] >= 32 << 20)')
	expect_eq bulk-counters "$got" "True True"
fi
if want metrics; then
	m=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_HOST/metrics")
	got=$(printf '%s' "$m" | python3 -c 'import json,sys; n=json.load(sys.stdin)[0]["network"]; print(n["connections"] >= 2, n["bytesIn"] > 0, n["bytesOut"] > 0, n["refused"] >= 1)')
	expect_eq metrics-host "$got" "True True True True"
	m=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_DEFPY/metrics")
	got=$(printf '%s' "$m" | python3 -c 'import json,sys; n=json.load(sys.stdin)[0]["network"]; print(n["refused"] >= 19, n["dnsRefused"] >= 1, n["dnsLookups"] >= 1)')
	expect_eq metrics-refusals "$got" "True True True"
fi
if want api; then
	j=$(curl -s --unix-socket "$SOCK" http://k/sandboxes -d '{"network":{"allowOut":["127.1"]}}')
	expect_in api-bad-rule "$j" '"code": ?400.*network.allowOut\[0\]: .127.1. is neither an IP address'
	j=$(curl -s --unix-socket "$SOCK" http://k/sandboxes -d '{"network":{"egressProxy":{"address":"p:1080"}}}')
	expect_in api-egress-proxy-refused "$j" "network.egressProxy' is not supported"
	j=$(curl -s --unix-socket "$SOCK" http://k/sandboxes -d '{"allow_internet_access":"no"}')
	expect_in api-bad-flag "$j" '"code": ?400'
	out=$(kiln create --allow-out 'exa mple.com' 2>&1)
	expect_in cli-bad-rule "$out" "^kiln: --allow-out"
fi
if want update; then
	# PUT /sandboxes/ID/network (E2B's updateNetwork): the new policy
	# replaces the old at once, and open connections it refuses end.
	S_UPD=$(new --image base)
	expect_in update-before "$(sbx "$S_UPD" -- python3 -c "import socket; socket.create_connection(('10.0.2.2', $P4))" 2>&1)" \
		"Permission denied"
	out=$(kiln network "$S_UPD" --allow-out "host.kiln.internal:$P4")
	expect_in update-cli-shows "$out" "^allow-out: host.kiln.internal:$P4\$"
	expect_eq update-allows "$(sbx "$S_UPD" -- busybox wget -q -O - "http://host.kiln.internal:$P4/f.txt")" from-host-v4
	# an idle connection open across the next change
	sbx "$S_UPD" -- python3 -c "
import socket, time
s = socket.create_connection(('10.0.2.2', $P4))
open('/tmp/up', 'w').close()
s.settimeout(30)
t = time.time()
try:
    print('closed' if not s.recv(1) else 'data', int(time.time() - t))
except OSError as e:
    print('closed', int(time.time() - t), type(e).__name__)
" >"$T/upd.out" &
	upd=$!
	for _ in $(seq 100); do sbx "$S_UPD" -- test -e /tmp/up >/dev/null && break; sleep 0.1; done
	kiln network "$S_UPD" --clear >/dev/null
	wait $upd
	expect_in update-closes-refused "$(cat "$T/upd.out")" "^closed [0-9]( |\$)"
	expect_in update-close-logged "$(console "$S_UPD")" \
		"kiln-net: connection to 10.0.2.2:$P4 closed: the new policy refuses it"
	expect_in update-refuses-new "$(sbx "$S_UPD" -- busybox wget -q -O - "http://10.0.2.2:$P4/f.txt")" \
		"Permission denied"
	j=$(curl -s --unix-socket "$SOCK" -X PUT "http://k/sandboxes/$S_UPD/network" \
		-d '{"denyOut":["0.0.0.0/0"],"allowOut":["public.test"],"allow_internet_access":true}')
	expect_in update-e2b-body "$j" '"denyOut": ?\["0.0.0.0/0"\]'
	j=$(curl -s --unix-socket "$SOCK" -X PUT "http://k/sandboxes/$S_UPD/network" -d '{"allowOut":["127.1"]}')
	expect_in update-bad-rule "$j" '"code": ?400.*127.1'
	j=$(curl -s --unix-socket "$SOCK" -X PUT "http://k/sandboxes/$S_UPD/network" -d '{"allow":["x"]}')
	expect_in update-unknown-field "$j" "\"code\": ?400.*unknown field 'allow'"
	j=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_UPD/network")
	expect_in update-bad-kept-old "$j" '"allowOut": ?\["public.test"\]'
	kiln pause "$S_UPD" >/dev/null
	kiln network "$S_UPD" --no-internet >/dev/null
	j=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_UPD")
	expect_in update-while-paused "$j" '"allowInternetAccess": ?false'
	expect_in update-after-resume "$(sbx "$S_UPD" -- python3 -c "import socket; socket.create_connection(('10.0.2.2', $P4))" 2>&1)" \
		"Permission denied"
	kiln rm "$S_UPD" >/dev/null
fi
if want udp; then
	# UDP off the guest: python's sendto/recvfrom to echo servers on the
	# host's loopback (host.kiln.internal, a rule names its port) and, if
	# the route goes into the test's veth, on the "public" 203.0.113.1.
	out=$(sbx "$S_UDP" -- python3 /tmp/udp.py "echo,host.kiln.internal,$HU,20" \
		"connected,host.kiln.internal,$HU" "peek,host.kiln.internal,$HU" \
		"big,host.kiln.internal,$HU" "dns,host.kiln.internal,$HU" "stray,host.kiln.internal,$HU" \
		"two,fec0::2,$HU,::ffff:10.0.2.2,$HU")
	expect_in udp-host-echo "$out" "^echo,host.kiln.internal,$HU,20 ok 20\$"
	expect_in udp-host-connected "$out" "^connected,host.kiln.internal,$HU echo:conn peer=10.0.2.2:$HU\$"
	expect_in udp-host-peek-trunc "$out" \
		"^peek,host.kiln.internal,$HU epoll=1 peek=echo got=echo trunc=True then=empty\$"
	expect_in udp-host-big "$out" "^big,host.kiln.internal,$HU len=60005 over=EMSGSIZE\$"
	expect_in udp-dns-beside "$out" "^dns,host.kiln.internal,$HU dns-answers=1 echo:beside-dns\$"
	# the answer from a port the guest never sent to is dropped
	expect_in udp-stray-dropped "$out" "^stray,host.kiln.internal,$HU echo:stray:True\$"
	expect_in udp-host-v6 "$out" \
		"^two,fec0::2,$HU,::ffff:10.0.2.2,$HU fec0::2:$HU=echo:to-$HU ::ffff:10.0.2.2:$HU=echo:to-$HU\$"
	expect_in udp-host-v6-server "$(cat "$T/udp6.log")" "^got $HU to-$HU\$"
	if [ $PUBLIC = 1 ]; then
		out=$(sbx "$S_UDP" -- python3 /tmp/udp.py "echo,203.0.113.1,$U1,10" \
			"two,203.0.113.1,$U1,203.0.113.1,$U2,host.kiln.internal,$HU" \
			"connected,203.0.113.1,$U2" "big,203.0.113.1,$U1" "stray,203.0.113.1,$U1")
		expect_in udp-public-echo "$out" "^echo,203.0.113.1,$U1,10 ok 10\$"
		expect_in udp-public-two "$out" \
			"^two,[^ ]* 203.0.113.1:$U1=echo:to-$U1 203.0.113.1:$U2=echo:to-$U2 10.0.2.2:$HU=echo:to-$HU\$"
		expect_in udp-public-connected "$out" "^connected,203.0.113.1,$U2 echo:conn peer=203.0.113.1:$U2\$"
		expect_in udp-public-big "$out" "^big,203.0.113.1,$U1 len=60005 over=EMSGSIZE\$"
		expect_in udp-public-stray-dropped "$out" "^stray,203.0.113.1,$U1 echo:stray:True\$"
		# A deny rule for one port: refused there (EACCES on the next
		# call, a log line, nothing sent), the other port still open.
		out=$(sbx "$S_UDPDENY" -- python3 /tmp/udp.py "refused,203.0.113.1,$U1" "echo,203.0.113.1,$U2,3")
		expect_in udp-deny-refused "$out" "^refused,203.0.113.1,$U1 EACCES then-send=sent\$"
		expect_in udp-deny-other-port "$out" "^echo,203.0.113.1,$U2,3 ok 3\$"
		expect_in udp-deny-logged "$(console "$S_UDPDENY")" \
			"kiln-net: UDP datagram to 203.0.113.1:$U1 refused \(EACCES\): denied by the rule '203.0.113.0/24:$U1'"
		out=$(sbx "$S_UDPOFF" -- python3 /tmp/udp.py "refused,203.0.113.1,$U1")
		expect_in udp-no-internet "$out" "^refused,203.0.113.1,$U1 EACCES then-send=sent\$"
		expect_in udp-no-internet-logged "$(console "$S_UDPOFF")" \
			"kiln-net: UDP datagram to 203.0.113.1:$U1 refused \(EACCES\): internet access is off"
		if grep -q "^got $U1 refused:" "$T/udppub.log"; then
			notok udp-refused-not-sent "a refused datagram reached 203.0.113.1:$U1"
		else
			ok udp-refused-not-sent
		fi
	else
		skip udp-public "the route to 203.0.113.1 does not go into the test's veth"
	fi
	# The bypass forms, from a sandbox of the default policy: refused, or
	# (the guest's own loopback forms) kept in the guest; none reaches the
	# host's server on port HU.
	args=""
	for a in 10.0.2.2 ::ffff:10.0.2.2 fec0::2 169.254.169.254 ::ffff:169.254.169.254 10.9.9.9 \
		192.168.1.1 172.16.0.1 100.64.0.1 203.0.113.2 224.0.0.1 fe80::1 fd00::1 fd00:ec2::254 \
		64:ff9b::7f00:1 2002:7f00:1:: ::127.0.0.1 fec0::9 ff02::1 private.test \
		127.0.0.1 ::1 ::ffff:127.0.0.1 0.0.0.0; do
		args="$args refused,$a,$HU"
	done
	out=$(sbx "$S_DEFPY" -- python3 /tmp/udp.py $args)
	for a in 10.0.2.2 ::ffff:10.0.2.2 fec0::2 169.254.169.254 ::ffff:169.254.169.254 10.9.9.9 \
		192.168.1.1 172.16.0.1 100.64.0.1 203.0.113.2 224.0.0.1 fe80::1 fd00::1 fd00:ec2::254 \
		64:ff9b::7f00:1 2002:7f00:1:: ::127.0.0.1 fec0::9 ff02::1 private.test; do
		expect_in "udp-bypass $a" "$out" "^refused,$a,$HU EACCES then-send=sent\$"
	done
	for a in 127.0.0.1 ::1 ::ffff:127.0.0.1 0.0.0.0; do
		expect_in "udp-bypass-loopback $a" "$out" "^refused,$a,$HU timeout then-send=sent\$"
	done
	if grep -q "refused:" "$T/udp4.log" "$T/udp6.log"; then
		notok udp-bypass-not-sent "a bypass datagram reached the host: $(grep refused: "$T/udp4.log" "$T/udp6.log")"
	else
		ok udp-bypass-not-sent
	fi
	expect_in udp-bypass-logged "$(console "$S_DEFPY")" \
		"kiln-net: UDP datagram to 169.254.169.254:$HU refused \(EACCES\): 169.254.169.254 is a link-local"
	# Counters.
	m=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_UDP/metrics")
	got=$(printf '%s' "$m" | python3 -c 'import json,sys; n=json.load(sys.stdin)[0]["network"]; print(n["udpDatagramsOut"] >= 25, n["udpDatagramsIn"] >= 25, n["udpBytesOut"] >= 60000, n["udpBytesIn"] >= 60005, n["udpDropped"] >= 1)')
	expect_eq udp-metrics "$got" "True True True True True"
	m=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_DEFPY/metrics")
	got=$(printf '%s' "$m" | python3 -c 'import json,sys; n=json.load(sys.stdin)[0]["network"]; print(n["udpRefused"] >= 20)')
	expect_eq udp-metrics-refused "$got" "True"
	prom=$(curl -s --unix-socket "$SOCK" http://k/metrics)
	expect_in udp-prometheus-out "$prom" "^kiln_sandbox_udp_datagrams_total\{sandbox=\"$S_UDP\",direction=\"out\"\} [1-9][0-9]+\$"
	expect_in udp-prometheus-refused "$prom" "^kiln_sandbox_udp_refused_total\{sandbox=\"$S_DEFPY\"\} [1-9][0-9]+\$"
	if command -v promtool >/dev/null; then
		if printf '%s\n' "$prom" | promtool check metrics >"$T/promtool.out" 2>&1; then ok udp-prometheus-promtool; else
			notok udp-prometheus-promtool "$(cat "$T/promtool.out")"; fi
	fi
fi
if want udp-rate; then
	# 24 MB in a burst, past the sandbox's 16 MiB a second: the rest is
	# dropped in kilnd (not sent from the host), counted and logged.
	udp_out() {
		curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_UDP/metrics" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["network"]["udpDatagramsOut"])'
	}
	# On a loaded host the guest may send slower than the limit: flood again,
	# at most 5 times, until kilnd logs the drop.
	before=$(udp_out) sent=0
	for _ in 1 2 3 4 5; do
		out=$(sbx "$S_UDP" -- python3 /tmp/udp.py "flood,host.kiln.internal,$HU,400,60000")
		[ "$out" = "flood,host.kiln.internal,$HU,400,60000 sent 400" ] || break
		sent=$((sent + 400))
		console "$S_UDP" | grep -q "kiln-net: UDP: datagrams dropped" && break
	done
	expect_eq udp-rate-sent "$out" "flood,host.kiln.internal,$HU,400,60000 sent 400"
	expect_in udp-rate-logged "$(console "$S_UDP")" \
		"kiln-net: UDP: datagrams dropped: more than 5000 a second or 16 MiB a second"
	got=$(($(udp_out) - before))
	if [ "$got" -gt 0 ] && [ "$got" -lt "$sent" ]; then ok "udp-rate-limited ($got of $sent sent)"; else
		notok udp-rate-limited "kilnd sent $got of $sent datagrams"; fi
fi
if want udp-update; then
	# A new policy holds for the next datagram of a socket open across it.
	S_UUPD=$(new --image base --allow-out "host.kiln.internal:$HU")
	kiln cp "$ROOT/tests/e2e/net/udp.py" "$S_UUPD:/tmp/udp.py" >/dev/null
	sbx "$S_UUPD" -- sh -c "python3 /tmp/udp.py wait,host.kiln.internal,$HU,/tmp/udpgo \
		</dev/null >/tmp/udpwait.out 2>&1 &" >/dev/null
	for _ in $(seq 100); do sbx "$S_UUPD" -- test -e /tmp/udpgo.ready >/dev/null && break; sleep 0.1; done
	kiln network "$S_UUPD" --clear >/dev/null
	sbx "$S_UUPD" -- touch /tmp/udpgo >/dev/null
	for _ in $(seq 100); do sbx "$S_UUPD" -- test -s /tmp/udpwait.out >/dev/null && break; sleep 0.1; done
	expect_in udp-update-refuses "$(sbx "$S_UUPD" -- cat /tmp/udpwait.out)" \
		"^wait,host.kiln.internal,$HU,/tmp/udpgo echo:before EACCES\$"
	expect_in udp-update-logged "$(console "$S_UUPD")" "kiln-net: UDP datagram to 10.0.2.2:$HU refused \(EACCES\)"
	kiln rm "$S_UUPD" >/dev/null
fi
if want udp-pause; then
	# A socket open across a pause and resume: the stream broke with the
	# snapshot's restore, the next datagram opens another.
	sbx "$S_UDP" -- sh -c "python3 /tmp/udp.py wait,host.kiln.internal,$HU,/tmp/udpgo \
		</dev/null >/tmp/udpwait.out 2>&1 &" >/dev/null
	for _ in $(seq 100); do sbx "$S_UDP" -- test -e /tmp/udpgo.ready >/dev/null && break; sleep 0.1; done
	kiln pause "$S_UDP" >/dev/null
	kiln resume "$S_UDP" >/dev/null
	sbx "$S_UDP" -- touch /tmp/udpgo >/dev/null
	for _ in $(seq 100); do sbx "$S_UDP" -- test -s /tmp/udpwait.out >/dev/null && break; sleep 0.1; done
	sbx "$S_UDP" -- cat /tmp/udpwait.out >"$T/udpwait.out"
	expect_in udp-pause-resume "$(cat "$T/udpwait.out")" "^wait,host.kiln.internal,$HU,/tmp/udpgo echo:before echo:after\$"
fi
if want restart-pins; then
	# DNS pins are kept with the sandbox: kilnd is SIGKILLed and started
	# again, and the address the sandbox's own lookup returned before is
	# still open by IP, without a new lookup; a sandbox with the same
	# policy that never looked the name up is still refused.
	if [ $PUBLIC = 1 ]; then
		S_PIN=$(new --image base --no-internet --allow-out public.test)
		S_PIN0=$(new --image base --no-internet --allow-out public.test)
		for s in "$S_PIN" "$S_PIN0"; do
			kiln cp "$ROOT/tests/e2e/net/bypass.py" "$s:/tmp/bypass.py" >/dev/null
		done
		expect_eq restart-pins-resolved "$(sbx "$S_PIN" -- python3 -c \
			"import socket; print(socket.getaddrinfo('public.test', 80, socket.AF_INET)[0][4][0])")" \
			203.0.113.1
		asked=$(grep -c "query public.test" "$T/dns.log")
		kill -9 "$KPID"
		wait "$KPID" 2>/dev/null
		KPID=
		start_kilnd
		expect_eq restart-pins-kept "$(sbx "$S_PIN" -- python3 /tmp/bypass.py 4,203.0.113.1,80)" \
			"4,203.0.113.1,80 connected"
		expect_eq restart-pins-not-shared "$(sbx "$S_PIN0" -- python3 /tmp/bypass.py 4,203.0.113.1,80)" \
			"4,203.0.113.1,80 EACCES"
		expect_eq restart-pins-no-new-lookup "$(grep -c "query public.test" "$T/dns.log")" "$asked"
		expect_in restart-pins-restored "$(cat "$T/kilnd.log")" "sandbox $S_PIN: [0-9]+ DNS pins restored"
		kiln rm "$S_PIN" >/dev/null
		kiln rm "$S_PIN0" >/dev/null
	else
		skip restart-pins "the route to 203.0.113.1 does not go into the test's veth"
	fi
fi
if want restart; then
	# kilnd goes; the VMs and their policies stay, and are enforced again.
	kill "$KPID"
	wait "$KPID" 2>/dev/null
	KPID=
	start_kilnd
	j=$(curl -s --unix-socket "$SOCK" "http://k/sandboxes/$S_DOM")
	got=$(printf '%s' "$j" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["allowInternetAccess"], j["network"]["allowOut"])')
	expect_eq restart-policy-kept "$got" "False ['public.test', 'private.test', 'meta.test', 'hostaddr.test']"
	expect_eq restart-host-works "$(sbx "$S_HOST" -- busybox wget -q -O - "http://host.kiln.internal:$P4/f.txt")" from-host-v4
	expect_in restart-still-refused "$(sbx "$S_DEF" -- busybox wget -q -O - "http://10.0.2.2:$P4/f.txt")" \
		"Permission denied"
fi

echo "net: $PASS passed, $FAIL failed, $SKIP skipped"
if [ $FAIL -gt 0 ]; then
	echo "--- kilnd log (last 30 lines)"
	tail -30 "$T/kilnd.log"
fi
[ $FAIL = 0 ]
