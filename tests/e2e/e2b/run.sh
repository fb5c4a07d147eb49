#!/bin/bash
# The E2B JS SDK against kilnd (see sdk.test.mjs). Installs the pinned SDK
# (package-lock.json) into node_modules on first use, then runs the tests.
#
#   bash tests/e2e/e2b/run.sh [FILTER]
#   KILN_E2E_VMM=build/bin/kiln-vmm bash tests/e2e/e2b/run.sh   (real VMs)
#
# Needs Node.js >= 18 and npm (with registry access for the first install).
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "e2b: node is required"; exit 1; }
# every pinned package at its version, else npm ci
want=$(node -p 'JSON.stringify(require("./package.json").dependencies)')
have=$(node -p 'const d = require("./package.json").dependencies; JSON.stringify(Object.fromEntries(
	Object.keys(d).map((k) => { try { return [k, require(`./node_modules/${k}/package.json`).version] }
	                           catch { return [k, ""] } })))')
if [ "$have" != "$want" ]; then
	echo "e2b: installing $want into $(pwd)/node_modules"
	npm ci --no-audit --no-fund --loglevel=error >/dev/null ||
		npm install --no-audit --no-fund --loglevel=error >/dev/null
fi
exec node sdk.test.mjs "$@"
