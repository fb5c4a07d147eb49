# AF_UNIX and loopback AF_INET/AF_INET6 sockets: the test programs must
# print what they print on the host; busybox's nc, httpd and wget talk over
# 127.0.0.1; Python's socket users run from the base image. Sourced by
# run.sh.

expect_same unixsock -- /bin/unixsock
expect_same inetsock -- /bin/inetsock
# Only loopback exists in the guest (the host may route anywhere).
guest_case inetsock-unreach 0 --out '^inetsock unreach: all ok$' --no-out 'FAIL' \
	-- /bin/inetsock unreach
# The peer a connection the agent forwards shows its server (kiln only).
guest_case inetpeer 0 --out '^inetpeer: all ok$' --no-out 'FAIL' -- /bin/inetpeer

# Ports below the ephemeral range, so as not to meet the host's own sockets,
# picked by the shell's pid so that test runs side by side do not share one.
# The client retries until the listener is up (a loaded host can take longer
# than any fixed sleep). The listener's input stays open for 2 s: busybox nc
# ends at the end of its stdin, and an empty one could win the race against
# the client's bytes (the host run printed nothing 2 times in 30).
# shellcheck disable=SC2016 # the shell in the guest (or on the host) expands these
expect_same sock-busybox-nc -- /bin/sh -c \
	'p=$((20000 + $$ % 10000)); sleep 2 | busybox nc -l -p $p >tmp/nc.out & i=0;
	until echo hello over nc | busybox nc 127.0.0.1 $p 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 50 ] || break; sleep 0.1; done;
	wait; cat tmp/nc.out'
# shellcheck disable=SC2016
expect_same sock-busybox-httpd -- /bin/sh -c \
	'p=$((20000 + $$ % 10000)); busybox httpd -f -p 127.0.0.1:$p -h data & pid=$!; i=0;
	until busybox wget -q -O - http://127.0.0.1:$p/table.txt 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 50 ] || break; sleep 0.1; done;
	busybox wget -q -O - http://127.0.0.1:$p/missing 2>&1; echo "wget status $?";
	kill $pid; wait'

if [ ! -f build/images/base.erofs ]; then
	echo "skip sock-python: build/images/base.erofs missing — run make images"
elif want_case sock-python; then
	cat >"$T/sock-python.expected" <<'EOF'
send_fds: b'fd' b'through the passed fd'
unix server: UNIX LINE
http: 200 path=/x0
http: 200 path=/x1
http: 200 path=/x2
asyncio: 1:: revo oicnysa
udp: b'udp datagram' 127.0.0.1 True
refused: 111
selectors: 20 190
manager: [(0, 0), (1, 1), (2, 4), (3, 9)]
listener AF_INET: 42
listener AF_UNIX: 42
done
EOF
	vmm_case sock-python 0 --out-is "$T/sock-python.expected" -- --kernel "$KERNEL" \
		--image build/images/base.erofs --mem 1G -- /usr/bin/python3 -c "$(cat "$DATA/sockets.py")"
fi
