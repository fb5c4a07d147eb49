#!/bin/bash
# kilnd e2e tests of tenants' API keys (control/auth/), sourced by
# tests/e2e/run.sh: a key sees and controls only its tenant's sandboxes and
# templates, keys are kept hashed, revocation is immediate and survives a
# restart.
# shellcheck disable=SC2154 # T, DATA, SOCK, PORT ... come from run.sh

TENANT_TESTS="t_tenants t_tenant_templates t_key_input"

# tapi KEY METHOD PATH [curl args]: over TCP with KEY; body in $T/body,
# prints the status
tapi() {
	local key=$1 m=$2 p=$3
	shift 3
	curl -sS -X "$m" -o "$T/body" -w '%{http_code}' -H "X-API-Key: $key" "$@" \
		"http://127.0.0.1:$PORT$p"
}

# tcreate KEY [JSON]: a sandbox made with KEY; prints its id
tcreate() {
	local st
	st=$(tapi "$1" POST /sandboxes -H 'Content-Type: application/json' -d "${2:-{\}}")
	[ "$st" = 201 ] && sed -n 's/.*"sandboxID":"\([^"]*\)".*/\1/p' "$T/body"
}

t_tenants() {
	local ka kb a b c st out ida
	ka=$("$KILN" key create --tenant acme --name ci 2>"$T/err")
	kb=$("$KILN" key create --tenant beta 2>/dev/null)
	[[ $ka == e2b_* ]] && [[ $kb == e2b_* ]] && [ "$ka" != "$kb" ] && grep -q "shown only now" "$T/err"
	check $? "kiln key create prints a new key for each tenant"
	out=$("$KILN" key ls)
	ida=$(awk '$2 == "acme" {print $1}' <<<"$out")
	grep -q beta <<<"$out" && [ -n "$ida" ] && ! grep -q -- "${ka#e2b_}" <<<"$out"
	check $? "kiln key ls lists them without their secrets"
	! grep -a -q -- "${ka#e2b_}" "$DATA"/kilnd.db* && ! grep -a -q -- "${kb#e2b_}" "$DATA"/kilnd.db*
	check $? "the store keeps no key in the clear"

	a=$(tcreate "$ka") && b=$(tcreate "$kb") || { not_ok "create with tenants' keys"; return; }
	[ "$(sb_field "$a" tenant)" = acme ] && [ "$(sb_field "$b" tenant)" = beta ]
	check $? "a sandbox belongs to the tenant of the key that made it"
	tapi "$kb" GET /sandboxes >/dev/null
	grep -q "$b" "$T/body" && ! grep -q "$a" "$T/body"
	check $? "a tenant's list has its own sandboxes only"
	[ "$(tapi "$kb" GET "/sandboxes/$a")" = 404 ] &&
		[ "$(tapi "$kb" POST "/sandboxes/$a/exec" -d '{"cmd":["true"]}')" = 404 ] &&
		[ "$(tapi "$kb" POST "/sandboxes/$a/pause")" = 404 ] &&
		[ "$(tapi "$kb" POST "/sandboxes/$a/fork" -d '{}')" = 404 ] &&
		[ "$(tapi "$kb" GET "/sandboxes/$a/files?path=/etc/hostname")" = 404 ] &&
		[ "$(tapi "$kb" GET "/sandboxes/$a/cdp/json/version")" = 404 ] &&
		[ "$(tapi "$kb" DELETE "/sandboxes/$a")" = 404 ]
	check $? "another tenant's sandbox is 404 for get, exec, pause, fork, files, cdp, delete"
	st=$(curl -s -o /dev/null -w '%{http_code}' -H "E2b-Sandbox-Id: $a" -H 'E2b-Sandbox-Port: 49999' \
		-H "X-API-Key: $kb" "http://127.0.0.1:$PORT/contexts")
	[ "$st" = 401 ] && [ "$(curl -s -o /dev/null -w '%{http_code}' -H "E2b-Sandbox-Id: $a" \
		-H 'E2b-Sandbox-Port: 49999' -H "X-API-Key: $ka" "http://127.0.0.1:$PORT/contexts")" = 200 ]
	check $? "the code interpreter's port takes the owner's key, not another tenant's ($st)"
	[ "$(tapi "$kb" GET "/sandboxes/$a/ports/8080/")" = 401 ]
	check $? "another tenant's key does not open a sandbox's ports"
	[ "$(tapi "$ka" POST "/sandboxes/$a/exec" -H 'Content-Type: application/json' \
		-d '{"cmd":["echo","mine"]}')" = 200 ] && grep -q "$(echo mine | base64)" "$T/body"
	check $? "the owner's key runs commands in it"
	st=$(tapi "$ka" POST "/sandboxes/$a/fork" -H 'Content-Type: application/json' -d '{}')
	c=$(sed -n 's/.*"sandboxID":"\([^"]*\)".*/\1/p' "$T/body" | head -n1)
	[ "$st" = 200 ] || [ "$st" = 201 ]
	[ $? = 0 ] && [ -n "$c" ] && [ "$(sb_field "$c" tenant)" = acme ] &&
		[ "$(tapi "$kb" GET "/sandboxes/$c")" = 404 ]
	check $? "a fork belongs to its parent's tenant ($st)"
	out=$("$KILN" ls -q)
	grep -q "$a" <<<"$out" && grep -q "$b" <<<"$out"
	check $? "the operator sees every tenant's sandboxes"
	[ "$(tapi "$kb" GET /keys)" = 403 ] && [ "$(tapi "$kb" GET /metrics)" = 403 ] &&
		[ "$(tapi "$kb" POST /keys -d '{"tenant":"beta"}')" = 403 ]
	check $? "a tenant's key cannot list or make keys, nor read /metrics"

	"$KILN" key revoke "$ida"
	[ "$(tapi "$ka" GET /sandboxes)" = 401 ] && [ "$(tapi "$kb" GET /sandboxes)" = 200 ]
	check $? "a revoked key is refused at once; the others work on"
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	start_kilnd
	[ "$(tapi "$ka" GET /sandboxes)" = 401 ] && [ "$(tapi "$kb" GET "/sandboxes/$b")" = 200 ] &&
		[ "$(tapi "$kb" GET "/sandboxes/$a")" = 404 ] && [ "$(sb_field "$a" tenant)" = acme ]
	check $? "after a restart: the revocation, the keys and the owners hold"
	"$KILN" key revoke --purge "$ida" && ! "$KILN" key ls | grep -q "$ida"
	check $? "kiln key revoke --purge removes a revoked key from the list"
	"$KILN" rm "$a" "$b" "$c" >/dev/null
}

t_tenant_templates() {
	local ka kb st b
	ka=$("$KILN" key create --tenant tplacme 2>/dev/null)
	kb=$("$KILN" key create --tenant tplbeta 2>/dev/null)
	st=$(api POST /templates -H 'Content-Type: application/json' -d '{"name":"opshared","warmup":["true"]}')
	[ "$st" = 201 ] || { not_ok "operator's template ($st: $(cat "$T/body"))"; return; }
	st=$(tapi "$ka" POST /templates -H 'Content-Type: application/json' \
		-d '{"name":"acmeonly","warmup":["true"]}')
	[ "$st" = 201 ]
	check $? "a tenant builds a template of its own ($st)"
	tapi "$kb" GET /templates >/dev/null
	grep -q opshared "$T/body" && ! grep -q acmeonly "$T/body"
	check $? "a tenant lists the operator's templates and its own, not others'"
	[ "$(tapi "$kb" GET /templates/acmeonly)" = 404 ] &&
		[ "$(tapi "$kb" POST /sandboxes -d '{"templateID":"acmeonly"}')" = 400 ] &&
		! grep -q acmeonly <(tapi "$kb" POST /sandboxes -d '{"templateID":"nosuch"}' >/dev/null; cat "$T/body")
	check $? "another tenant's template is unknown to it, and not named in errors"
	[ "$(tapi "$kb" DELETE /templates/acmeonly)" = 404 ] && [ "$(tapi "$kb" DELETE /templates/opshared)" = 403 ]
	check $? "nor can it remove it, or the operator's"
	st=$(tapi "$kb" POST /templates -d '{"name":"acmeonly","warmup":["true"]}')
	[ "$st" = 409 ] && grep -q "another tenant" "$T/body"
	check $? "a name another tenant took is 409 ($st)"
	b=$(tcreate "$kb" '{"templateID":"opshared"}')
	[ -n "$b" ] && [ "$(sb_field "$b" tenant)" = tplbeta ]
	check $? "a tenant starts clones of the operator's template, owned by it"
	[ "$(tapi "$ka" DELETE /templates/acmeonly)" = 204 ]
	check $? "the owner removes its template"
	"$KILN" rm "$b" >/dev/null
	"$KILN" template rm opshared
}

t_key_input() {
	local n bad=0 long
	long=$(head -c 33 /dev/zero | tr '\0' a)
	for n in '' '..' 'A' '-x' 'a/b' "$long" 'é'; do
		[ "$(api POST /keys -d "{\"tenant\":\"$n\"}")" = 400 ] || { bad=1; echo "# tenant '$n'"; }
	done
	[ "$(api POST /keys -d '{}')" = 400 ] && [ "$(api POST /keys -d '[1]')" = 400 ] &&
		[ "$(api POST /keys -d "{\"tenant\":\"ok\",\"name\":\"$(head -c 200 /dev/zero | tr '\0' n)\"}")" = 400 ] || bad=1
	[ "$(api POST /keys -d "$(head -c 10000 /dev/zero | tr '\0' ' ')")" = 413 ] || bad=1
	[ "$(api DELETE /keys/key_nosuch)" = 404 ] && [ "$(api PUT /keys)" = 405 ] || bad=1
	[ $bad = 0 ] && [ "$(api GET /health)" = 200 ]
	check $? "bad tenant names, bodies and key ids are 400, 413, 404, 405"
	[ "$(tapi "e2b_0000000000000000000000000000000000000000" GET /sandboxes)" = 401 ]
	check $? "an unknown key is 401"
}
