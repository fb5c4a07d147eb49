#!/bin/bash
# kilnd e2e tests of the holes a hostile probe found (issue 16), sourced by
# tests/e2e/run.sh: names that become paths, authentication of every
# route, kernel pinning across restarts, connection budgets, console caps.
# shellcheck disable=SC2154 # T, DATA, SOCK, PORT ... come from run.sh

HARDENING_TESTS="t_names"

# Names that become paths: one rule for templates, images and sandboxes,
# and nothing outside DATA_DIR/templates/NAME is ever removed.
t_names() {
	local n st bad=0 long
	long=$(head -c 65 /dev/zero | tr '\0' a)
	for n in .. . .hidden -rf "a/b" "../x" "$long"; do
		st=$(api POST /templates -d "{\"name\":\"$n\",\"warmup\":[\"true\"]}")
		if [ "$st" != 400 ] || [ ! -f "$DATA/api-key" ] || [ ! -f "$DATA/kilnd.db" ] ||
			[ ! -d "$DATA/sandboxes" ]; then
			bad=1
			echo "# template name '$n': status $st"
			break
		fi
	done
	[ $bad = 0 ] && [ "$(api GET /health)" = 200 ]
	check $? "template names '..', '.', '.hidden', '-rf', 'a/b', 65 bytes are 400; the data dir stays"
	for n in .. . "a/b"; do
		st=$(api POST /sandboxes -d "{\"templateID\":\"$n\"}")
		[ "$st" = 400 ] || bad=1
		st=$(api POST /sandboxes -d "{\"image\":\"$n\"}")
		[ "$st" = 400 ] || bad=1
	done
	[ $bad = 0 ] && [ -f "$DATA/api-key" ]
	check $? "sandboxes of template or image '..', '.', 'a/b' are 400"
	st=$(api DELETE /templates/.. --path-as-is)
	[ "$st" = 404 ] && [ -f "$DATA/kilnd.db" ]
	check $? "DELETE /templates/.. is 404 and removes nothing"
}

