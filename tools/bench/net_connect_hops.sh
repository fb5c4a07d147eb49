#!/bin/bash
# Where an egress connect's time goes, without images: a sandbox of the
# initramfs alone runs tools/bench/net_connect.c through host.kiln.internal
# while kilnd and kiln-vmm write hop timestamps (KILN_TRACE,
# include/kiln/trace.h); tools/bench/net_connect_hops.py places them inside
# each connect and prints the median of each hop. The host's own connect is
# measured in the same run. Each timestamp is a write(2) of its process, so
# the traced connect is a few us slower than the untraced one of
# net_connect_events.sh.
#
#   bash tools/bench/net_connect_hops.sh [N]     (after make all; default N 1000)
#
# KILN_BENCH_BUILD=DIR takes kilnd, kiln-vmm, the kernel and the initramfs
# from DIR/{bin,guest,initramfs} instead of build/ (A/B of two builds).
set -u
cd "$(dirname "$0")/../.." || exit 1
N=${1:-1000}
TRACE_FILE=$(mktemp "${TMPDIR:-/tmp}"/kiln-trace.XXXXXX)
# kilnd and the VMMs it starts (which inherit its environment) write it.
export KILN_TRACE=$TRACE_FILE
# shellcheck source=tools/bench/net_guest.sh
. tools/bench/net_guest.sh
unset KILN_TRACE
connect_guest net_connect_hops "$TRACE_FILE"
echo "host  (127.0.0.1):          $("$T/net_connect" 127.0.0.1 "$PORT" "$N")"
kiln exec "$id" -- /tmp/net_connect 10.0.2.2 "$PORT" "$N" stamps >"$T/stamps"
echo "guest (host.kiln.internal): $(grep -m1 '^connect' "$T/stamps") (traced)"
python3 tools/bench/net_connect_hops.py "$T/stamps" "$TRACE_FILE"
