#!/bin/bash
# Playwright (playwright-core's chromium.connectOverCDP, no browser download)
# against a sandbox of the browser image through kilnd's /sandboxes/ID/cdp
# (see playwright.test.mjs): with the host's chromium-headless-shell as a
# stand-in sandbox browser (fake VMM), then with the browser image on real
# VMs. A part that cannot run says NOT RUN (and passes nothing).
#
#   bash tests/e2e/browser/run.sh            (make e2e-browser)
#
# KILN_E2E_VMM, KILN_E2E_KERNEL, KILN_E2E_INITRD, KILN_E2E_IMAGES as for
# tests/e2e/run.sh (default: build/bin/kiln-vmm, build/images).
set -eu
cd "$(dirname "$0")"
ROOT=$(cd ../../.. && pwd)
IMAGES=${KILN_E2E_IMAGES:-$ROOT/build/images}
command -v node >/dev/null || { echo "e2e-browser: node is required"; exit 1; }
install() {
	want=$(node -p 'const d = require("./package.json").dependencies; d["playwright-core"] + " " + d["puppeteer-core"]')
	have=$(node -p 'const v = (m) => { try { return require("./node_modules/" + m + "/package.json").version } catch { return "" } }; v("playwright-core") + " " + v("puppeteer-core")')
	if [ "$have" != "$want" ]; then
		echo "e2e-browser: installing playwright-core and puppeteer-core ($want) into $(pwd)/node_modules"
		npm ci --no-audit --no-fund --loglevel=error >/dev/null
	fi
}
status=0
# The host's Chromium as a stand-in sandbox browser (fake VMM): the relay
# and the launcher against a real Chromium.
if command -v chromium-headless-shell >/dev/null && [ -x "$ROOT/build/tests/e2e/fake-vmm" ]; then
	install
	echo "e2e-browser: the host's chromium-headless-shell through kilnd and the fake VMM"
	KILN_BROWSER_MODE=host node playwright.test.mjs || status=1
else
	echo "e2e-browser: host mode NOT RUN: no chromium-headless-shell on this host (or no fake VMM: make e2e-build)"
fi
if [ ! -f "$IMAGES/browser.erofs" ]; then
	echo "e2e-browser: browser image NOT RUN: no $IMAGES/browser.erofs (make images builds it once browser-image/ exists)"
	exit $status
fi
if [ ! -r /dev/kvm ]; then
	echo "e2e-browser: browser image NOT RUN: /dev/kvm is not available"
	exit $status
fi
install
echo "e2e-browser: the browser image on real VMs"
node playwright.test.mjs || status=1
exit $status
