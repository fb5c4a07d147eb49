#!/bin/bash
# A pod's start through containerd's CRI plugin, kiln beside runc
# (tests/e2e/cri/cri_bench.mjs) on a containerd of the bench's own with the
# CRI plugin on (tests/e2e/cri/cri_env.sh). CRI_BENCH_RUNS rounds (default 7).
#
#   bash tools/bench/cri_bench.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
[ -w /dev/kvm ] || { echo "cri_bench: skipped: /dev/kvm not available"; exit 0; }
command -v runc >/dev/null || { echo "cri_bench: skipped: no runc (the peer) on this host"; exit 0; }
# shellcheck source=tests/e2e/cri/cri_env.sh
. tests/e2e/cri/cri_env.sh cri_bench
node tests/e2e/cri/cri_bench.mjs
