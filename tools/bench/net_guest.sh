# Sourced by the image-less net benches (net_connect_events.sh,
# net_connect_hops.sh, net_tput_events.sh): kilnd, kiln-vmm, the kernel and
# the initramfs of KILN_BENCH_BUILD (DIR/{bin,guest,initramfs}; default
# build/, for an A/B of two builds), started by kilnd_start.sh on an empty
# image directory $IMG; kiln() talks to that kilnd; accept_server NAME
# starts a host server on 127.0.0.1 that accepts and closes, and sets PORT
# and SPID; connect_guest NAME [FILE] does that, creates the sandbox $id
# allowed to reach it, copies tools/bench/net_connect.c built static to its
# /tmp/net_connect, and removes FILE too on exit.
B=${KILN_BENCH_BUILD:-build}
KILND=$B/bin/kilnd
VMM=$B/bin/kiln-vmm
KERNEL=$B/guest/kiln-kernel
INITRD=$B/initramfs/agent.cpio
IMG=$(mktemp -d)
# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images "$IMG"
kiln() { "$B"/bin/kiln --socket "$SOCK" "$@"; }

accept_server() {
	# The server binds a free port and names it first.
	exec 3< <(exec python3 -u -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(128)
print(s.getsockname()[1])
while True: s.accept()[0].close()')
	SPID=$!
	read -r PORT <&3 || { echo "$1: the host server did not start"; exit 1; }
}

connect_guest() {
	NET_GUEST_RM=${2:-}
	${CC:-gcc} -O2 -static -o "$T/net_connect" tools/bench/net_connect.c || exit 1
	accept_server "$1"
	trap 'kill $SPID 2>/dev/null; cleanup; rm -rf "$IMG" $NET_GUEST_RM' EXIT
	id=$(kiln create --allow-out host.kiln.internal:"$PORT" | tail -1)
	kiln cp "$T/net_connect" "$id:/tmp/net_connect" >/dev/null || exit 1
}
