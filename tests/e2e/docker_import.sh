#!/bin/bash
# kiln image import --docker against Debian's Docker daemon (docker.io): a
# dockerd of the test's own (data, exec root and socket in a temporary
# directory; no bridge, no iptables, no registry), an image the test builds
# (tests/e2e/images/mkarchive.py) put in its store with docker load, then
# exported by kiln image import --docker into an image that boots on a real
# VM with the layer's files and whose NAME.json has the config's defaults.
#
#   make e2e-docker-import
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
for c in dockerd docker mkfs.erofs; do
	command -v $c >/dev/null || { echo "e2e-docker-import: $c is missing (mk/deps.sh installs docker.io)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "e2e-docker-import: dockerd needs root"; exit 1; }
T=$(mktemp -d /tmp/kiln-dock.XXXXXX)
export DOCKER_HOST=unix://$T/docker.sock
PASS=0
FAIL=0
DPID=
cleanup() {
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	fi
	grep -o " $T/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$T"
}
trap cleanup EXIT
check() { if [ "$1" = 0 ]; then PASS=$((PASS + 1)); echo "ok - $2"; else FAIL=$((FAIL + 1)); echo "not ok - $2"; fi; }

dockerd --data-root "$T/data" --exec-root "$T/exec" --host "$DOCKER_HOST" --pidfile "$T/docker.pid" \
	--iptables=false --ip6tables=false --bridge=none --ip-forward=false --ip-masq=false \
	--userland-proxy=false >"$T/dockerd.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do docker version >/dev/null 2>&1 && break; sleep 0.1; done
docker version >/dev/null 2>&1
check $? "a dockerd of the test's own answers"

python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag kiln-dock:1 --workdir /srv \
	--cmd '["/bin/sh","-c","cat motd"]' --dir /srv --file /srv/motd=from-docker &&
	docker load -i "$T/img.tar" >/dev/null && docker image inspect kiln-dock:1 >/dev/null
check $? "docker load of an archive the test built"

KILN_CACHE=$T/cache "$ROOT/build/bin/kiln" image import --out "$T/images" --docker kiln-dock:1 \
	>"$T/import.log" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "docker save kiln-dock:1" "$T/import.log" &&
	grep -q "\[4/4\] manifest" "$T/import.log" && [ -s "$T/images/kiln-dock.erofs" ] &&
	grep -q '"source": "docker:kiln-dock:1"' "$T/images/kiln-dock.json" &&
	grep -q '"workingDir": "/srv"' "$T/images/kiln-dock.json"
check $? "kiln image import --docker exports, reports its steps and records the defaults (rc $rc)"

out=$(timeout 60 "$ROOT/build/bin/kiln-vmm" --kernel "$ROOT/build/guest/kiln-kernel" \
	--image "$T/images/kiln-dock.erofs" -- /bin/busybox cat /srv/motd </dev/null 2>&1 | tr -d '\r')
grep -qx from-docker <<<"$out"
check $? "the imported image boots with the layer's files ($out)"

KILN_CACHE=$T/cache "$ROOT/build/bin/kiln" image import --out "$T/images" --docker nosuch:1 \
	>"$T/bad.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "is the image in the local Docker store" "$T/bad.log" &&
	[ -z "$(ls -A "$T/cache/images" 2>/dev/null | grep -v '\.erofs$\|\.json$')" ] &&
	[ -z "$(ls "$T/cache" | grep docker-save)" ]
check $? "an image Docker does not have is refused, leaving nothing behind (rc $rc)"
echo
echo "$PASS passed, $FAIL failed"
[ $FAIL = 0 ]
