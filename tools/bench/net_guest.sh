# Sourced by the image-less net benches (net_connect_events.sh,
# net_connect_hops.sh, net_tput_events.sh): kilnd, kiln-vmm, the kernel and
# the initramfs of KILN_BENCH_BUILD (DIR/{bin,guest,initramfs}; default
# build/, for an A/B of two builds), started by kilnd_start.sh on an empty
# image directory $IMG; kiln() talks to that kilnd; accept_server NAME
# starts a host server on 127.0.0.1 that accepts and closes, and sets PORT
# and SPID.
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
