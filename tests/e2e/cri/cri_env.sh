# shellcheck shell=bash
# A containerd of our own with its CRI plugin on (tests/e2e/containerd_env.sh
# with CTRD_CRI; sourced by tests/e2e/containerd_cri.sh and
# tools/bench/cri_bench.sh): runtime handlers runc and kiln, a pause-like
# sandbox image and an app image built here and imported into the CRI's
# namespace (k8s.io), no CNI (host-network pods only), the pinned gRPC
# client installed. Exports what tests/e2e/cri/cri_client.mjs reads
# (CRI_SOCK, CRI_TASKS, CRI_LOGS, CRI_PAUSE, CRI_APP). $1 names the caller.
command -v node >/dev/null || { echo "$1: node is missing (mk/deps.sh installs it)"; exit 1; }
CRI_PAUSE=docker.io/library/kiln-pause:1
CRI_APP=docker.io/library/kiln-cri-app:1
# (@T@: containerd_env.sh's temporary directory. restrict_oom_score_adj:
# the CRI gives a sandbox oom_score_adj -998, which runc's create fails on
# where root may not lower it, as in some containers; kiln's shim sets none)
CTRD_CRI='[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "'$CRI_PAUSE'"
  restrict_oom_score_adj = true
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
. tests/e2e/containerd_env.sh "$1"

if ! $C plugins ls | grep -q '^io.containerd.grpc.v1 *cri .* ok *$'; then
	echo "not ok - containerd's CRI plugin did not start:"
	grep 'io.containerd.grpc.v1.cri' "$T/containerd.log" | grep -v 'level=info' | sed 's/^/# /'
	exit 1
fi
bash tests/e2e/npm_pinned.sh tests/e2e/cri "$1" || exit 1
python3 tests/e2e/images/mkarchive.py "$T/pause.tar" --tag "$CRI_PAUSE" \
	--entrypoint '["/bin/sleep", "2147483647"]' &&
	$C -n k8s.io image import "$T/pause.tar" >/dev/null &&
	python3 tests/e2e/images/mkarchive.py "$T/app.tar" --tag "$CRI_APP" --dir /srv \
		--file /srv/app-only='the app image' --env ROLE=app --cmd '["/bin/sh"]' &&
	$C -n k8s.io image import "$T/app.tar" >/dev/null ||
	{ echo "not ok - importing the test's images into namespace k8s.io"; exit 1; }
CRI_SOCK=$SOCK
CRI_TASKS=$STATE/io.containerd.runtime.v2.task/k8s.io
CRI_LOGS=$T/logs
export CRI_SOCK CRI_TASKS CRI_LOGS CRI_PAUSE CRI_APP
