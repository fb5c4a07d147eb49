#!/bin/bash
# The web console in a real browser (console.test.mjs): Playwright
# (playwright-core, no browser download) drives the host's
# chromium-headless-shell against kilnd on real VMs. A part that cannot
# run says NOT RUN (and passes nothing).
#
#   bash tests/e2e/console/run.sh            (make e2e-console)
#
# KILN_E2E_VMM, KILN_E2E_KERNEL, KILN_E2E_INITRD, KILN_E2E_IMAGES,
# KILN_E2E_KILND as for tests/e2e/run.sh; KILN_CONSOLE_CHROMIUM, the
# browser (default /usr/bin/chromium-headless-shell). Screenshots go to
# build/tests/console/ (FAILED-*.png for a case that failed).
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "e2e-console: node is required"; exit 1; }
CHROMIUM=${KILN_CONSOLE_CHROMIUM:-/usr/bin/chromium-headless-shell}
if [ ! -x "$CHROMIUM" ]; then
	echo "e2e-console: NOT RUN: no $CHROMIUM (mk/deps.sh installs chromium-headless-shell)"
	exit 0
fi
if [ ! -r /dev/kvm ]; then
	echo "e2e-console: NOT RUN: /dev/kvm is not available"
	exit 0
fi
want=$(node -p 'require("./package.json").dependencies["playwright-core"]')
have=$(node -p 'try { require("./node_modules/playwright-core/package.json").version } catch { "" }')
if [ "$have" != "$want" ]; then
	echo "e2e-console: installing playwright-core $want into $(pwd)/node_modules"
	npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
echo "e2e-console: the web console in $CHROMIUM, against kilnd on real VMs"
exec node console.test.mjs
