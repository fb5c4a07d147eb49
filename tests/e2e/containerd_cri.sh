#!/bin/bash
# Kubernetes' path to kiln, short of the kubelet: containerd's CRI plugin
# (Debian's containerd) with a runtime handler "kiln" (what a RuntimeClass
# names, runtime_type io.containerd.kiln.v2), driven over its gRPC socket
# with the calls the kubelet makes (tests/e2e/cri/cri.test.mjs, a CRI v1
# client on @grpc/grpc-js). A containerd of the test's own
# (tests/e2e/containerd_env.sh) with the CRI plugin on, its sandbox image a
# pause-like image built here and imported into the CRI's namespace
# (k8s.io); host-network pods (no CNI).
#
#   make e2e-containerd   (runs tests/e2e/containerd.sh, ..., then this)
#
# Prints "ok"/"not ok" per check and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v node >/dev/null || { echo "e2e-containerd-cri: node is missing (mk/deps.sh installs it)"; exit 1; }
PAUSE=docker.io/library/kiln-pause:1
APP=docker.io/library/kiln-cri-app:1
# (@T@: containerd_env.sh's temporary directory)
CTRD_CRI='[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "'$PAUSE'"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "@T@/cni/bin"
    conf_dir = "@T@/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kiln]
    runtime_type = "io.containerd.kiln.v2"'
extra_cleanup() {
	local p
	for p in $($C -n k8s.io task ls -q 2>/dev/null); do $C -n k8s.io task kill -s SIGKILL "$p" 2>/dev/null; done
	for p in "$STATE"/io.containerd.runtime.v2.task/k8s.io/*/vmm.pid; do
		[ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
}
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh e2e-containerd-cri

if ! $C plugins ls | grep -q '^io.containerd.grpc.v1 *cri .* ok *$'; then
	echo "not ok - containerd's CRI plugin did not start:"
	grep 'io.containerd.grpc.v1.cri' "$T/containerd.log" | grep -v 'level=info' | sed 's/^/# /'
	exit 1
fi
bash tests/e2e/npm_pinned.sh tests/e2e/cri e2e-containerd-cri || exit 1
K="$C -n k8s.io"
python3 tests/e2e/images/mkarchive.py "$T/pause.tar" --tag "$PAUSE" \
	--entrypoint '["/bin/sleep", "2147483647"]' &&
	$K image import "$T/pause.tar" >/dev/null &&
	python3 tests/e2e/images/mkarchive.py "$T/app.tar" --tag "$APP" --dir /srv \
		--file /srv/app-only='the app image' --env ROLE=app --cmd '["/bin/sh"]' &&
	$K image import "$T/app.tar" >/dev/null
rc=$?
[ $rc = 0 ] || { echo "not ok - importing the test's images into namespace k8s.io"; exit 1; }

CRI_SOCK=$SOCK CRI_TASKS=$STATE/io.containerd.runtime.v2.task/k8s.io CRI_LOGS=$T/logs \
	CRI_PAUSE=$PAUSE CRI_APP=$APP CRI_SHIM_ADDRESS=$SOCK node tests/e2e/cri/cri.test.mjs
rc=$?
grep -q "level=error" "$T/containerd.log" && grep "level=error" "$T/containerd.log" | head -8 | sed 's/^/# /'
exit $rc
