#!/bin/bash
# Installs a test's pinned npm packages (DIR/package-lock.json) into
# DIR/node_modules when one of DIR/package.json's dependencies is missing
# there or at another version; quiet when all are in place.
#
#   bash tests/e2e/npm_pinned.sh DIR WHO     (WHO names the caller in messages)
set -eu
cd "$1"
want=$(node -p 'JSON.stringify(require("./package.json").dependencies)')
have=$(node -p 'const d = require("./package.json").dependencies; JSON.stringify(Object.fromEntries(
	Object.keys(d).map((k) => { try { return [k, require(`./node_modules/${k}/package.json`).version] }
	                           catch { return [k, ""] } })))')
if [ "$have" != "$want" ]; then
	echo "$2: installing $want into $(pwd)/node_modules"
	npm ci --no-audit --no-fund --loglevel=error >/dev/null ||
		npm install --no-audit --no-fund --loglevel=error >/dev/null ||
		{ echo "$2: npm could not install $want (it needs the npm registry)"; exit 1; }
fi
