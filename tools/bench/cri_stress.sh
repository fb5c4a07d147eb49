#!/bin/bash
# Pods through containerd's CRI plugin (handler kiln) on a loaded host:
# tests/e2e/cri/cri_stress.mjs beside CRI_STRESS_HOGS busy loops (default
# 28: a load average past 25 on a 2-CPU host), on a containerd of its own
# (tests/e2e/cri/cri_env.sh). Prints the failed calls and the load average.
# Bounded: the busy loops and everything cri_env.sh started go at exit.
#
#   bash tools/bench/cri_stress.sh     (after make; CRI_STRESS_PODS, _ROUNDS, _EXECS)
set -u
cd "$(dirname "$0")/../.." || exit 1
HOGS=${CRI_STRESS_HOGS:-28}
# shellcheck source=tests/e2e/cri/cri_env.sh
. tests/e2e/cri/cri_env.sh cri_stress
hogs=()
stress_cleanup() {
	local p
	for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
	ctrd_cleanup
}
trap stress_cleanup EXIT
for _ in $(seq "$HOGS"); do
	sh -c 'while :; do :; done' &
	hogs+=($!)
done
sleep 5
node tests/e2e/cri/cri_stress.mjs
rc=$?
echo "cri_stress: $HOGS host busy loops; load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
