#!/bin/bash
# The E2B SDK's own round trips over TCP against kilnd (part of make bench):
# commands.run('true'), runCode('1+1'), files.write of 1 KiB and
# Sandbox.create(), medians of >= 20 (tools/bench/e2b_sdk_bench.mjs), beside
# kilnd's own exec on the same TCP listener, of true and of what the SDK
# runs (/bin/bash -l -c true as the default user): a Nagle stall (~40 ms on
# streamed answers) shows as a gap between the second and third lines.
#
#   bash tools/bench/e2b_sdk_bench.sh
#
# Needs node and the SDK in tests/e2e/e2b/node_modules (installed on first
# use, as make e2e-e2b does). Environment: KILND_BENCH_VMM (default: the real
# VMM with make images' base image when built, else the fake VMM).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
KILND=build/bin/kilnd
KERNEL=${KILND_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-build/initramfs/agent.cpio}
IMAGES=build/images
if [ -n "${KILND_BENCH_VMM:-}" ]; then
	VMM=$KILND_BENCH_VMM
elif [ -x build/bin/kiln-vmm ] && [ -f "$IMAGES/base.erofs" ]; then
	VMM=build/bin/kiln-vmm
else
	VMM=build/tests/e2e/fake-vmm
fi
command -v node >/dev/null || { echo "e2b_sdk_bench: skipped: no node"; exit 0; }
for f in "$KILND" "$VMM"; do
	[ -x "$f" ] || { echo "e2b_sdk_bench: missing $f (make build/bin/kilnd e2e-build)"; exit 1; }
done
SDK=$ROOT/tests/e2e/e2b
if [ ! -d "$SDK/node_modules/e2b" ] || [ ! -d "$SDK/node_modules/@e2b/code-interpreter" ]; then
	(cd "$SDK" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
		{ echo "e2b_sdk_bench: cannot install the SDK (npm ci in $SDK)"; exit 1; }
fi
PORT=$((20000 + RANDOM % 12000))
extra=()
home=
if [ "$VMM" = build/tests/e2e/fake-vmm ]; then
	# the fake VMM's guest is the host: stand-in images, a HOME of its own
	FAKE_T=$(mktemp -d /tmp/kiln-sdk-bench.XXXXXX)
	echo "a stand-in" >"$FAKE_T/base.erofs"
	IMAGES=$FAKE_T
	home=$FAKE_T
fi
extra+=(--images "$IMAGES" --image-initrd "$(dirname "$INITRD")/agent-image.cpio")
# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --listen-tcp "127.0.0.1:$PORT" "${extra[@]}"
[ -n "${FAKE_T:-}" ] && trap 'cleanup; rm -rf "$FAKE_T"' EXIT
echo "e2b_sdk_bench: VMM $VMM, SDK e2b $(node -p "require('$SDK/node_modules/e2b/package.json').version")"
E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT \
	E2B_API_KEY=$(cat "$T/api-key") KILN_SDK_BENCH_HOME=$home \
	node tools/bench/e2b_sdk_bench.mjs "$SDK"
