#!/bin/bash
# Kubernetes' path to kiln, short of the kubelet: containerd's CRI plugin
# (Debian's containerd) with a runtime handler "kiln" (what a RuntimeClass
# names, runtime_type io.containerd.kiln.v2), driven over its gRPC socket
# with the calls the kubelet makes (tests/e2e/cri/cri.test.mjs, a CRI v1
# client on @grpc/grpc-js). A containerd of the test's own with the CRI
# plugin on (tests/e2e/cri/cri_env.sh), its sandbox image a pause-like
# image built here; host-network pods (no CNI). Then, on the same
# containerd, the streams of Exec, Attach and PortForward that kubectl
# exec, attach and port-forward use (tests/e2e/cri/streams.test.mjs), and a
# kiln pod across containerd's restart (tests/e2e/cri/restart.test.mjs).
#
#   make e2e-containerd   (runs tests/e2e/containerd.sh, ..., then this)
#
# Prints "ok"/"not ok" per check and "N passed, N failed" per test file.
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/e2e/cri/cri_env.sh
. tests/e2e/cri/cri_env.sh e2e-containerd-cri
node tests/e2e/cri/cri.test.mjs
rc=$?
node tests/e2e/cri/streams.test.mjs || rc=1
# a kiln pod across containerd's restart (SIGTERM, started again)
node tests/e2e/cri/restart.test.mjs before "$T/restart.json" || rc=1
ctrd_stop
sleep 1 # (some 5 lines of its output while nobody reads them)
ctrd_start
node tests/e2e/cri/restart.test.mjs after "$T/restart.json" || rc=1
grep -q "level=error" "$T/containerd.log" && grep "level=error" "$T/containerd.log" | head -8 | sed 's/^/# /'
exit $rc
