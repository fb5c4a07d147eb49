#!/bin/sh
# Host-side test of kiln-agent (no VM): runs each given agent binary on this
# machine in unix-socket mode and drives it with agent_host_test.py, as kilnd
# would. Then, as root with unshare(1), the static guest binary once more as
# PID 1 of new PID/mount/UTS namespaces, so its boot setup and the reaping
# of orphans run too (mounts and hostname stay inside the namespaces).
#
#   sh tests/integration/agent_host_test.sh [AGENT...] [-- CASE-SUBSTRING...]
#
# Default agents: the ASan+UBSan host build and the static musl guest binary
# (make agent-test builds both). Exits non-zero if any case fails.
set -u
cd "$(dirname "$0")/../.." || exit 1

agents=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	agents="$agents $1"
	shift
done
[ "${1:-}" = "--" ] && shift
[ -n "$agents" ] || agents="build/tests/agent/kiln-agent-host build/initramfs/kiln-agent"

status=0
run() {
	echo "agent-test: $*"
	python3 tests/integration/agent_host_test.py "$@" || status=1
}
last=
for agent in $agents; do
	if [ ! -x "$agent" ]; then
		echo "agent-test: missing $agent (build it with: make agent-test)"
		status=1
		continue
	fi
	run "$agent" "$@"
	last=$agent
done
if [ -n "$last" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
	KILN_AGENT_PID1=1 run "$last" "$@"
else
	echo "agent-test: PID 1 mode skipped (needs root and unshare)"
fi
exit $status
