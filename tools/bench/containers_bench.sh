#!/bin/bash
# kiln beside Docker (runc and crun) and bubblewrap on this machine, in the
# same run (tools/bench/containers_bench.py says what each line is). Starts
# a kilnd and a dockerd of its own: the dockerd's state is kept in the image
# cache (KILN_CACHE, default ~/.cache/kiln/bench-docker) so that the base
# image's root is imported into it once, under a tag named by its content.
#
#   bash tools/bench/containers_bench.sh
#
# Installs docker.io, crun and bubblewrap from Debian if they are missing.
# Environment: KILN_CONTAINERS_RUNS (default 10), KILN_CONTAINERS_IDLE
# (idle sandboxes for the memory line, default 10).
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=build/bin/kilnd
VMM=build/bin/kiln-vmm
KERNEL=build/guest/kiln-kernel
INITRD=build/initramfs/agent.cpio
IMAGES=build/images
CACHE=${KILN_CACHE:-${HOME:-/root}/.cache/kiln}

for f in "$KILND" "$VMM" "$KERNEL" "$INITRD" "$IMAGES/base.erofs"; do
	[ -e "$f" ] || { echo "containers bench: missing $f (make all images)"; exit 1; }
done
[ -w /dev/kvm ] || { echo "containers bench: skipped: /dev/kvm not available"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "containers bench: skipped: dockerd and bubblewrap's chroot need root"; exit 0; }
# shellcheck source=tools/bench/apt_need.sh
. tools/bench/apt_need.sh
apt_need "containers bench" dockerd:docker.io crun:crun bwrap:bubblewrap
command -v dockerd >/dev/null || { echo "containers bench: skipped: no dockerd (apt-get install docker.io)"; exit 0; }
ROOT=$(tools/mkimage/extract-root "$IMAGES/base.erofs") || exit 1
TAG=kiln-bench-base:$(basename "$ROOT" | tr -c 'a-zA-Z0-9_.\n-' _)

# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images "$IMAGES" --image-initrd build/initramfs/agent-image.cpio

DT=$(mktemp -d /tmp/kiln-dockerd.XXXXXX)
DSOCK=$DT/docker.sock
mkdir -p "$CACHE/bench-docker"
rt_flag=
command -v crun >/dev/null && rt_flag="--add-runtime crun=$(command -v crun)"
# shellcheck disable=SC2086 # rt_flag is two words or none
dockerd --data-root "$CACHE/bench-docker" --exec-root "$DT/exec" --pidfile "$DT/dockerd.pid" \
	-H "unix://$DSOCK" --bridge=none --iptables=false --ip6tables=false $rt_flag \
	>"$DT/dockerd.log" 2>&1 &
DPID=$!
stop_dockerd() {
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	rm -rf "$DT"
}
trap 'stop_dockerd; cleanup' EXIT
for _ in $(seq 200); do
	docker -H "unix://$DSOCK" info >/dev/null 2>&1 && break
	sleep 0.1
done
docker -H "unix://$DSOCK" info >/dev/null 2>&1 ||
	{ echo "containers bench: dockerd did not start:"; tail -5 "$DT/dockerd.log"; exit 1; }
if ! docker -H "unix://$DSOCK" image inspect "$TAG" >/dev/null 2>&1; then
	echo "containers bench: importing $ROOT into docker as $TAG (once)"
	tar -C "$ROOT" -c . | docker -H "unix://$DSOCK" import - "$TAG" >/dev/null ||
		{ echo "containers bench: docker import failed"; exit 1; }
fi
runtimes=runc
command -v crun >/dev/null && runtimes=runc,crun
python3 tools/bench/containers_bench.py --kilnd "$SOCK" --kilnd-data "$T" --docker "$DSOCK" \
	--image "$TAG" --root "$ROOT" --runtimes "$runtimes" --runs "${KILN_CONTAINERS_RUNS:-10}" \
	--idle "${KILN_CONTAINERS_IDLE:-10}"
