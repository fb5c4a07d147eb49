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
bash ../npm_pinned.sh . e2b
exec node sdk.test.mjs "$@"
